"""The StackExchange family: a site's `Posts.xml` (or its `.7z`) to one record per question.

RedPajama-1T's StackExchange recipe (`data_prep/stack_exchange`, spec §3) has three scripts and
no filter: `count.py` ranks the sites by rows (lines - 3) and `filter.py` takes the 28 largest;
`filter.py` groups answers under their question (`ParentId`, file order) and keeps every
question with a title, answered or not; `post_processing.py` orders the answers by score,
turns the HTML into text (`stackexchange_text`) and labels the language with LID-176
(`lid176`). A unit is one site; a record is `{id: "<site>/<question id>", text: "Q: ...\\nA:
...", meta: {language, url, timestamp, source, question_score}}` (the reference's meta).

`--reference rp_v1` is all of that, quirks included (line-based parsing, answers ordered by
the score as a string, the title parsed as HTML, only the 28 largest sites). The default mode
reads every site, finds rows wherever lines break, and fixes the text (see
`stackexchange_text`). Posts that make no record are counted by reason: title-less posts (tag
wikis), answers whose question is not in the file, damaged rows (`--on-error skip`). Where the
reference stops with a `KeyError` (an answer without `Body` or `Score`, a question with
answers but no `Title`), both modes stop with the located row, or skip and count it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import fsspec

from textsieve.dumps import lid176
from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.dumps.stackexchange_posts import (
    ARCHIVE_SUFFIX,
    BadRow,
    Row,
    archive_member,
    count_lines,
    open_posts,
    reference_rows,
    scan_rows,
    site_of,
)
from textsieve.dumps.stackexchange_text import default_text, language_input, reference_text
from textsieve.io.errors import InputError

#: how many sites `filter.py` processes: the largest by `count.py`'s count
REFERENCE_SITES = 28
#: `post_processing.py`'s constant `meta.timestamp` (the dump RedPajama-1T used)
TIMESTAMP = "2023-03-29"
SOURCE = "stackexchange"


@dataclass
class Question:
    """A question row and its answers as `filter.py` keeps them (strings, as the dump has them)."""

    line: int
    id: str
    title: str
    body: str
    score: str | int  # the dump's string, or the integer 0 when the row has none (the reference's)
    answers: list[dict[str, str]] | None = None  # {"id", "text", "score"} in file order; None: unanswered

    def qa_pair(self) -> dict[str, Any]:
        """The object `filter.py` writes to `qa_pairs/<site>.jsonl`."""
        pair: dict[str, Any] = {"question": {"id": self.id, "text": f"{self.title} {self.body}", "score": self.score}}
        if self.answers is not None:
            pair["answers"] = self.answers
        return pair


@dataclass
class _Grouping:
    """What one pass over the rows collects: answers by parent, questions in file order."""

    parents: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    answer_lines: dict[str, list[int]] = field(default_factory=dict)
    questions: list[tuple[int, dict[str, str]]] = field(default_factory=list)


_QUESTION_FIELDS = ("Id", "Title", "Body", "Score", "PostTypeId")


def group_posts(rows: Iterator[Row | BadRow], where: str, rp_v1: bool, on_error: str) -> Iterator[Question | Skip]:
    """`filter.py`'s grouping over `rows`: every titled question with its answers, in file order,
    and a `Skip` for each post that makes none. `where` names the file in locations."""
    g = _Grouping()
    for row in rows:
        if isinstance(row, BadRow):
            yield _damaged(where, row.line, "bad_row", row.error, on_error)
            continue
        a = row.attrib
        if "ParentId" not in a:  # a question (or a tag wiki...): what pass 2 reads of it
            g.questions.append((row.line, {k: a[k] for k in _QUESTION_FIELDS if k in a}))
            continue
        missing = [k for k in ("Id", "Body", "Score") if k not in a] if rp_v1 else []
        if missing:
            yield _damaged(where, row.line, "missing_field", f"answer without {', '.join(missing)}", on_error)
            continue
        score = a.get("Score", "0")
        if not rp_v1 and not _is_int(score):
            yield _damaged(where, row.line, "bad_row", f"answer Score {score!r} is not a number", on_error)
            continue
        g.parents.setdefault(a["ParentId"], []).append({"id": a.get("Id", ""), "text": a.get("Body", ""),
                                                        "score": score})
        g.answer_lines.setdefault(a["ParentId"], []).append(row.line)
    used: set[str] = set()
    for line, a in g.questions:
        post_id = a.get("Id")
        if post_id is None:
            yield _damaged(where, line, "missing_field", "post without Id", on_error)
            continue
        answers = g.parents.get(post_id)
        if answers is not None:
            missing = [k for k in ("Title", "Body", "Score") if k not in a] if rp_v1 else \
                [k for k in ("Title",) if k not in a]
            if missing:
                yield _damaged(where, line, "missing_field", f"question {post_id} has answers but no "
                               f"{', '.join(missing)} (the reference stops here with a KeyError)", on_error)
                continue
            used.add(post_id)
        elif "Title" not in a:
            yield Skip("untitled_post", f"{where}:{line}", f"post {post_id} (PostTypeId {a.get('PostTypeId', '?')})")
            continue
        yield Question(line, post_id, a["Title"], a.get("Body", ""), a.get("Score", 0), answers)
    for parent, lines in g.answer_lines.items():
        if parent not in used:
            for n in lines:
                yield Skip("orphan_answer", f"{where}:{n}", f"answer to post {parent}, not a titled question here")


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def _damaged(where: str, line: int, reason: str, detail: str, on_error: str) -> Skip:
    if on_error == "fail":
        raise InputError.at(f"{where}:{line}", detail)
    return Skip(reason, f"{where}:{line}", detail)


def reference_qa_pairs(binary: IO[bytes], where: str = "Posts.xml") -> Iterator[dict[str, Any]]:
    """What `filter.py` writes for one site, pair by pair (the golden `qa_pair` objects)."""
    for item in group_posts(reference_rows(binary), where, rp_v1=True, on_error="fail"):
        if isinstance(item, Question):
            yield item.qa_pair()


def question_text(q: Question, rp_v1: bool) -> str:
    """The record text of a question: `post_processing.py`'s, or the default mode's."""
    if rp_v1:
        return reference_text(f"{q.title} {q.body}", q.answers)
    return default_text(q.title, q.body, q.answers)


def record_meta(site: str, q: Question, text: str) -> dict[str, Any]:
    """The reference's meta, in its order."""
    return {"language": lid176.top_label(language_input(text)), "url": f"https://{site}/questions/{q.id}",
            "timestamp": TIMESTAMP, "source": SOURCE, "question_score": q.score}


class StackExchangeFamily(SourceFamily):
    name = "stackexchange"
    help = "StackExchange sites: Posts.xml (named <site>.xml, or in a folder named after the site) or <site>.7z"
    reasons = ("untitled_post", "orphan_answer", "bad_row", "missing_field")
    reference_reasons = ("site_not_selected",)
    _ranked = False  # set by `units`: whether this run ranks the sites against each other

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        lid176.check_available()
        units = [unit for raw in inputs for unit in _units_of(raw)]
        self._ranked = opts.rp_v1 and len(units) > REFERENCE_SITES
        if self._ranked:
            _select_largest(units)
        return units

    @property
    def global_decisions(self) -> bool:
        """Whether a site's output depends on the other inputs: only when rp_v1 picks the 28
        largest of more sites (then a re-run redoes every site when any input changed)."""
        return self._ranked

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        where = unit.info["where"]
        if not unit.info.get("selected", True):
            detail = f"rp_v1 reads the {REFERENCE_SITES} largest sites (count.py); this one ranks lower"
            for _ in range(unit.info["count"]):
                yield Skip("site_not_selected", where, detail)
            return
        site = unit.info["site"]
        seen: dict[str, int] = {}
        with open_posts(unit.path, unit.info.get("member")) as binary:
            rows = reference_rows(binary) if opts.rp_v1 else scan_rows(binary)
            for item in group_posts(rows, where, opts.rp_v1, opts.on_error):
                if isinstance(item, Skip):
                    yield item
                    continue
                text = question_text(item, opts.rp_v1)
                n = seen[item.id] = seen.get(item.id, 0) + 1  # a repeated row Id (damaged dump): unique ids still
                rid = f"{site}/{item.id}" if n == 1 else f"{site}/{item.id}#{n}"
                yield SourceRecord(rid, text, record_meta(site, item, text))

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        return {"lid176_sha256": lid176.model_sha256()}


def _units_of(raw: str) -> list[Unit]:
    fs, path = fsspec.core.url_to_fs(raw)
    if any(ch in path for ch in "*?["):
        paths = sorted(fs.glob(path))
    elif fs.isdir(path):
        root = path.rstrip("/")
        if fs.isfile(f"{root}/Posts.xml"):  # an extracted site archive: its posts, not its other tables
            paths = [f"{root}/Posts.xml"]
        else:  # sites (<site>.xml, <site>.7z, <site>/Posts.xml), not the dump's other tables
            patterns = (f"{root}/*.xml", f"{root}/*{ARCHIVE_SUFFIX}", f"{root}/*/Posts.xml")
            paths = sorted({p for pattern in patterns for p in fs.glob(pattern) if not _other_table(p)})
    elif fs.exists(path):
        paths = [path]
    else:
        raise SourceError(f"{raw}: no such file or folder")
    out = []
    for p in paths:
        name = p.rstrip("/").rsplit("/", 1)[-1]
        archive = name.lower().endswith(ARCHIVE_SUFFIX)
        if not archive and not name.lower().endswith(".xml"):
            raise SourceError(f"{p}: not a StackExchange dump (Posts.xml, <site>.xml or <site>.7z)")
        site = site_of(p)
        url = fs.unstrip_protocol(p)
        member = archive_member(url) if archive else None
        rel = f"{site}.xml" if name.lower() == "posts.xml" else name
        out.append(Unit(url, rel, int(fs.size(p)), {"site": site, "member": member,
                                                    "where": f"{p}/{member}" if member else p}))
    return out


#: the dump's tables besides Posts (`Users.xml`, `stackoverflow.com-Votes.7z`): a folder's are passed over
_OTHER_TABLES = frozenset({"badges", "comments", "posthistory", "postlinks", "tags", "users", "votes"})


def _other_table(path: str) -> bool:
    stem = path.rsplit("/", 1)[-1].lower().removesuffix(ARCHIVE_SUFFIX).removesuffix(".xml")
    return stem.rsplit("-", 1)[-1] in _OTHER_TABLES


def _select_largest(units: list[Unit]) -> None:
    """`count.py` then `filter.py`'s `[:28]`: rows = lines - 3; the largest sites, ties in input order."""
    for unit in units:
        with open_posts(unit.path, unit.info["member"]) as binary:
            unit.info["count"] = max(count_lines(binary) - 3, 0)
    ranked = sorted(range(len(units)), key=lambda i: -units[i].info["count"])  # stable: ties keep input order
    chosen = set(ranked[:REFERENCE_SITES])
    for i, unit in enumerate(units):
        unit.info["selected"] = i in chosen


register_family(StackExchangeFamily())
