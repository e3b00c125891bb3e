"""A sample of each source dump RedPajama-1T started from, in its native format, from text on
this machine: for `textsieve source` and the README's RedPajama-1T walk-through.

The five source families read dumps nobody has at hand on a fresh machine (a BigQuery export of
GitHub, arXiv's bulk tars, a Wikipedia XML dump, a StackExchange site's Posts.xml, PG-19 and
Books3). So `textsieve sample --sources DIR` writes small ones, in exactly the layouts the
reference scripts read, from what ships with Python and Debian:

* `github/github_000.jsonl.gz`: BigQuery-export rows of real code: the standard library's
  packages (each a repository, PSF licence) and pip's own sources (MIT), with each repository's
  licence file, a `.crt` file and files copied across repositories (what the reference skips
  and deduplicates); `github-repos/`: two of them as plain repository folders.
* `arxiv/arXiv_src_2401_001.tar`: `2401/<id>.gz` members, gzipped tars of LaTeX projects and
  single gzipped `.tex` files, written from Python's help topics (real prose) with the LaTeX
  that the cleaning handles: preamble macros, comments, an appendix, a bibliography; plus a
  project without a section (cleaned to nothing) and one in Latin-1 (undecodable).
* `wikipedia/samplewiki-20240101-pages-articles.xml.bz2`: a MediaWiki export of help topics as
  wikitext (headings, links, templates, references, a table, a category, a file link), a
  redirect and a talk page.
* `stackexchange/python.stackexchange.com.xml`: a Posts.xml of questions about standard-library
  functions, answered with their docstrings as HTML, scores from -1 to 12.
* `books/pg19_000.jsonl.gz`, `books/books3_000.jsonl.gz`: long licence texts as books, one of
  them in both files with CRLF line ends (a near-duplicate at SimHash distance 0).

Deterministic: sorted sources, no randomness, fixed dates, gzip/bz2/tar headers without times
of this run, so two builds on one machine are byte-identical.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import html
import io
import json
import sysconfig
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from textsieve.sample import SampleSources

MTIME = 1704067200  # 2024-01-01T00:00:00Z: every archive member's time
STDLIB_REPOS = ("json", "email", "http", "urllib", "xml", "importlib", "logging", "sqlite3")
PIP_FILES = 60  # pip's own source files taken as one more repository


@dataclass
class SourcesInfo:
    folder: Path
    files: dict[str, list[Path]] = field(default_factory=dict)  # family -> files written
    counts: dict[str, int] = field(default_factory=dict)  # family -> records/pages/posts/books


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def _jsonl_gz(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_gz("".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")))


def _help_topics() -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    return [(name, text) for name, text in sorted(topics.items()) if len(text) > 800]


# ---------------------------------------------------------------- GitHub


def _stdlib(src: SampleSources) -> Path:
    return src.stdlib_dir or Path(sysconfig.get_paths()["stdlib"])


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _row(repo: str, path: str, content: str, license_key: str, language: list[dict]) -> dict:
    data = content.encode("utf-8")
    return {"repo_name": repo, "id": _git_blob_id(data), "size": str(len(data)), "content": content,
            "binary": False, "copies": "1", "ref": "refs/heads/main", "path": path, "mode": "33188",
            "license": license_key, "language": language}


def _repos(src: SampleSources) -> list[tuple[str, str, dict[str, str]]]:
    """(repo name, licence key, {path: content}) of the sample's repositories."""
    stdlib = _stdlib(src)
    licence = (stdlib / "LICENSE.txt").read_text("utf-8", errors="replace") if (stdlib / "LICENSE.txt").is_file() \
        else ""
    out = []
    for pkg in STDLIB_REPOS:
        folder = stdlib / pkg
        if not folder.is_dir():
            continue
        files = {p.relative_to(folder).as_posix(): p.read_text("utf-8", errors="replace")
                 for p in sorted(folder.rglob("*.py")) if "__pycache__" not in p.parts and "test" not in p.parts}
        if licence:
            files["LICENSE"] = licence
        out.append((f"python-stdlib/{pkg}", "psf-2.0", files))
    import pip as pip_module  # textsieve is installed with pip: its sources are on every machine that has it

    pip = Path(str(pip_module.__file__)).parent
    sources = [p for p in sorted(pip.rglob("*.py")) if "_vendor" not in p.parts][:PIP_FILES]
    files = {p.relative_to(pip.parent).as_posix(): p.read_text("utf-8", errors="replace") for p in sources}
    lic = next((p for p in sorted(pip.parent.glob("pip-*.dist-info/**/LICENSE*")) if p.is_file()), None)
    if lic is not None:
        files["LICENSE.txt"] = lic.read_text("utf-8", errors="replace")
    out.append(("pypa/pip", "mit", files))
    return out


def _github(folder: Path, src: SampleSources) -> tuple[list[Path], int]:
    rows = []
    for repo, key, files in _repos(src):
        language = [{"name": "Python", "bytes": str(sum(len(c) for p, c in files.items() if p.endswith(".py")))}]
        rows += [_row(repo, path, content, key, language) for path, content in sorted(files.items())]
    cert = "-----BEGIN CERTIFICATE-----\nMIIBsample\n-----END CERTIFICATE-----\n"
    rows.append(_row("python-stdlib/json", "tests/fixture.crt", cert, "psf-2.0", rows[0]["language"]))
    out = []
    half = (len(rows) + 1) // 2  # two export files, the rows in export order
    for k, part in enumerate((rows[:half], rows[half:])):
        path = folder / "github" / f"github_{k:03d}.jsonl.gz"
        _jsonl_gz(path, part)
        out.append(path)
    for repo, _key, files in _repos(src)[:2]:  # plain repository folders (what users have)
        base = folder / "github-repos" / repo.rsplit("/", 1)[1]
        for rel, content in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(content, "utf-8")
    return out, len(rows)


# ---------------------------------------------------------------- arXiv


def _latex_escape(text: str) -> str:
    table = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
             "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(table.get(c, c) for c in text)


def _paper(title: str, text: str, n: int) -> dict[str, str]:
    """A LaTeX project (file name -> source) of one help topic, in the shapes arXiv sources take."""
    paras = [_latex_escape(p.strip()) for p in text.split("\n\n") if p.strip()]
    half = max(1, len(paras) // 2)
    main = "\n".join([
        r"\documentclass{article}", r"\newcommand{\py}{Python}", r"\def\ts{textsieve}",
        r"% the preamble is cut by the cleaning, comments too", r"\begin{document}",
        rf"\title{{{_latex_escape(title)}}}", r"\maketitle",
        rf"\section{{{_latex_escape(title)}}}", "\n\n".join(paras[:half]), "",
        r"As the \py{} reference says% a comment the cleaning removes", r"\input{part2}",
        r"\appendix", r"\section{Details}", "Appendices are cut with the bibliography.",
        r"\begin{thebibliography}{9}", rf"\bibitem{{ref{n}}} The Python Language Reference.",
        r"\end{thebibliography}", r"\end{document}", ""])
    part2 = "\n".join([rf"\subsection{{More on {_latex_escape(title)}}}", "\n\n".join(paras[half:]), ""])
    return {"main.tex": main, "sections/part2.tex": part2, "refs.bib": f"@misc{{ref{n}, title={{Python}}}}\n"}


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            tf.addfile(info, io.BytesIO(data))
    return _gz(buf.getvalue())


def _arxiv(folder: Path) -> tuple[list[Path], int]:
    topics = _help_topics()[:12]
    members: dict[str, bytes] = {}
    for n, (name, text) in enumerate(topics, 1):
        aid = f"2401.{n:05d}"
        files = {k: v.encode("utf-8") for k, v in _paper(name, text, n).items()}
        if n % 3 == 0:  # a single-file submission: a gzipped .tex
            members[f"2401/{aid}.gz"] = _gz(files["main.tex"].replace(rb"\input{part2}", b""))
        else:
            members[f"2401/{aid}.gz"] = _tar_gz(files)
    members["2401/2401.90001.gz"] = _tar_gz({"notes.tex": b"A note without any section: cleaned to nothing.\n"})
    latin1 = _paper("Latin-1 sources", "Stra\u00dfe and caf\u00e9, written in Latin-1.", 90)["main.tex"]
    members["2401/2401.90002.gz"] = _tar_gz({"main.tex": latin1.encode("latin-1")})  # undecodable: dropped
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            tf.addfile(info, io.BytesIO(data))
    path = folder / "arxiv" / "arXiv_src_2401_001.tar"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return [path], len(members)


# ---------------------------------------------------------------- Wikipedia


def _wikitext(title: str, text: str, others: list[str]) -> str:
    paras = [p.strip() for p in text.split("\n\n") if p.strip()]
    link = others[0] if others else "Python"
    lines = [f"{{{{Infobox topic|name={title}}}}}", f"'''{title}''' is a topic of the [[Python (language)|Python]] "
             f"reference, related to [[{link}]].<ref>The Python Language Reference.</ref>", ""]
    for k, para in enumerate(paras):
        if k and k % 3 == 0:
            lines += [f"== Part {k // 3} ==", ""]
        lines += [para.replace("[", "(").replace("]", ")").replace("{", "(").replace("}", ")"), ""]
    lines += ["{| class=\"wikitable\"", "! Term !! Meaning", "|-", f"| {title} || a topic", "|}", "",
              f"[[File:{title}.png|thumb|A figure about {title}]]", "== See also ==", f"* [[{link}]]", "",
              "__NOTOC__", "[[Category:Python reference]]"]
    return "\n".join(lines)


def _page(title: str, ns: int, pid: int, text: str, redirect: str | None = None) -> str:
    red = f"\n    <redirect title={quoteattr(redirect)} />" if redirect else ""
    return (f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{pid}</id>{red}\n"
            f"    <revision>\n      <id>{pid + 100000}</id>\n      <timestamp>2024-01-01T00:00:00Z</timestamp>\n"
            f"      <text bytes=\"{len(text.encode())}\" xml:space=\"preserve\">{escape(text)}</text>\n"
            "    </revision>\n  </page>\n")


def _wikipedia(folder: Path) -> tuple[list[Path], int]:
    topics = _help_topics()[:20]
    names = [name.replace("-", " ").capitalize() for name, _ in topics]
    pages = [_page(n, 0, 10 + k, _wikitext(n, t, names[k + 1:k + 2])) for k, (n, (_, t)) in
             enumerate(zip(names, topics))]
    pages.append(_page("Python language", 0, 5, f"#REDIRECT [[{names[0]}]]", redirect=names[0]))
    pages.append(_page(f"Talk:{names[0]}", 1, 6, "A discussion page: not an article."))
    head = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
            "  <siteinfo>\n    <sitename>Sample Wiki</sitename>\n    <dbname>samplewiki</dbname>\n"
            "    <base>https://en.wikipedia.org/wiki/Main_Page</base>\n    <generator>MediaWiki 1.41</generator>\n"
            "    <case>first-letter</case>\n    <namespaces>\n"
            '      <namespace key="-2" case="first-letter">Media</namespace>\n'
            '      <namespace key="0" case="first-letter" />\n'
            '      <namespace key="1" case="first-letter">Talk</namespace>\n'
            '      <namespace key="6" case="first-letter">File</namespace>\n'
            '      <namespace key="14" case="first-letter">Category</namespace>\n'
            "    </namespaces>\n  </siteinfo>\n")
    xml = head + "".join(pages) + "</mediawiki>\n"
    path = folder / "wikipedia" / "samplewiki-20240101-pages-articles.xml.bz2"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress(xml.encode("utf-8")))
    return [path], len(pages)


# ---------------------------------------------------------------- StackExchange


def _functions(src: SampleSources) -> list[tuple[str, str]]:
    """(qualified name, docstring) of documented standard-library functions, sorted."""
    import ast

    out = []
    for pkg in ("json", "textwrap", "shlex", "fnmatch", "glob", "difflib", "heapq", "bisect"):
        path = _stdlib(src) / f"{pkg}.py"
        if not path.is_file():
            path = _stdlib(src) / pkg / "__init__.py"
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text("utf-8", errors="replace"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    out.append((f"{pkg}.{node.name}", doc))
    return out


def _html_doc(doc: str) -> str:
    paras = [p.strip() for p in doc.split("\n\n") if p.strip()]
    body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paras[:2])
    items = [line.strip() for p in paras[2:] for line in p.splitlines() if line.strip()][:4]
    if items:
        body += "<ul>\n" + "".join(f"<li><code>{html.escape(i)}</code></li>\n" for i in items) + "</ul>\n"
    return body


def _stackexchange(folder: Path, src: SampleSources) -> tuple[list[Path], int]:
    rows, pid = [], 1
    for k, (name, doc) in enumerate(_functions(src)[:60]):
        qid = pid
        title = f"What does {name}() do, and when should I use it?"
        body = f"<p>I found <code>{html.escape(name)}</code> in the standard library. What does it do?</p>\n"
        rows.append({"Id": qid, "PostTypeId": 1, "Score": (k * 7) % 13 - 1, "Title": title, "Body": body})
        pid += 1
        for a in range(k % 3):  # some questions unanswered, some with one or two answers
            score = (k + 5 * a) % 13 - 1
            rows.append({"Id": pid, "PostTypeId": 2, "ParentId": qid, "Score": score, "Body": _html_doc(doc)})
            pid += 1
    rows.append({"Id": pid, "PostTypeId": 4, "Score": 0, "Body": "<p>A tag wiki: no title, not a question.</p>"})
    lines = ['\ufeff<?xml version="1.0" encoding="utf-8"?>', "<posts>"]
    for r in rows:
        attrs = " ".join(f"{k}={quoteattr(str(v))}" for k, v in r.items())
        lines.append(f"  <row {attrs} />".replace("\n", "&#xA;"))
    lines.append("</posts>")
    path = folder / "stackexchange" / "python.stackexchange.com.xml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return [path], len(rows)


# ---------------------------------------------------------------- books


def _books(folder: Path, src: SampleSources) -> tuple[list[Path], int]:
    common = src.common_licenses_dir
    licences = [p for p in sorted(common.glob("*")) if p.is_file() and p.stat().st_size > 8000] \
        if common is not None and common.is_dir() else []
    texts = [(p.name, p.read_text("utf-8", errors="replace")) for p in licences[:8]]
    py_licence = _stdlib(src) / "LICENSE.txt"
    if py_licence.is_file():
        texts.append(("Python-LICENSE", py_licence.read_text("utf-8", errors="replace")))
    topics = "\n\n".join(t for _, t in _help_topics()[:30])  # a long book of the help topics
    texts.append(("The Python help topics", topics))
    half = max(1, len(texts) // 2)
    pg = [{"short_book_title": name, "publication_date": 2024, "url": f"https://example.org/books/{k}",
           "text": text} for k, (name, text) in enumerate(texts[:half])]
    b3 = [{"title": name, "text": text} for name, text in texts[half:]]
    first_name, first_text = texts[0]  # again, with CRLF line ends: a near-duplicate at distance 0
    b3.append({"title": f"{first_name} (another edition)", "text": first_text.replace("\n", "\r\n")})
    out = []
    for name, rows in (("pg19_000", pg), ("books3_000", b3)):
        path = folder / "books" / f"{name}.jsonl.gz"
        _jsonl_gz(path, rows)
        out.append(path)
    return out, len(pg) + len(b3)


def build_sample_sources(folder: str | Path, sources: SampleSources | None = None) -> SourcesInfo:
    """Write the sample dumps under `folder` (see the module doc); returns what was written."""
    src = sources or SampleSources()
    root = Path(folder)
    info = SourcesInfo(root)
    for family, build in (("github", lambda: _github(root, src)), ("arxiv", lambda: _arxiv(root)),
                          ("wikipedia", lambda: _wikipedia(root)),
                          ("stackexchange", lambda: _stackexchange(root, src)), ("books", lambda: _books(root, src))):
        files, n = build()
        info.files[family], info.counts[family] = files, n
    return info
