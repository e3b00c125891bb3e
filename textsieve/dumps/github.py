"""The `github` source family: RedPajama-1T's GitHub code (spec rpv1-sources §1), from the BigQuery
export it read, or from repositories as users have them (`dumps.repos`).

Inputs, and the units they make (one output shard each):

* export files: JSON Lines (`github_*.gz`, `.jsonl`, `.jsonl.gz`, `.jsonl.zst`) of the export's
  rows; a folder holding `github_*.gz` files (else `*.jsonl*` files) is those files, by name;
* a repository: a git checkout (a folder with `.git`), a tarball (`.tar`, `.tar.gz`, `.tgz`) or
  a plain folder; a folder with no files of its own whose entries are all folders or tarballs is
  a folder of repositories, one unit each;
* chunk lists (`.txt`, one export file per line, as the reference's `partitions/chunk_*.txt`):
  each list is one chunk. Without lists the whole input is one chunk.

Steps 1-3 of the reference (§1.2-§1.6), in both modes: a `.crt` file and the top-level `LICENSE`
are skipped, the MD5 of the *original* content is the dedup key (phase 1), the first copy in
(chunk, file, line) order is kept and a later one is a `duplicate_in_chunk` or a
`duplicate_across_chunks` (phase 2, `decide`), the copyright comment is cleaned (§1.3) and the
statistics of the cleaned text go in `meta` (§1.4). `--reference rp_v1` adds step 4, the filter
(§1.7, `keep`), with the tokenizer of `--tokenizer` loaded once per worker. The default mode
applies no filter (the `rpv1_code` signals and the `rpv1-github` recipe do, docs/sources.md) and
fixes one reference bug: a block comment must begin a line (`github_rules.clean_copyright`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import fsspec
import pyarrow as pa

from textsieve.dumps import repos
from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.dumps.github_rules import (
    FILTER_REASONS,
    MIN_ALPHA_PER_TOKEN,
    clean_copyright,
    code_stats,
    count_alpha,
    filter_reason,
)
from textsieve.io.compression import CorruptStream, compression_of, iter_chunks
from textsieve.io.errors import InputError
from textsieve.tokenization.tokenizer import load_tokenizer

#: export file names the reference reads from its data folder (`ls $DATA_DIR/github_*.gz`)
EXPORT_PREFIX, EXPORT_SUFFIX = "github_", ".gz"
#: other names a file of export rows may have
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".json.gz")
CHUNK_LIST = ".txt"
KINDS = ("export", "folder", "tar")

_LANGUAGE = pa.list_(pa.struct([("name", pa.string()), ("bytes", pa.string())]))
#: `--format parquet`: the export's columns (a column not listed here is kept in JSON Lines only)
META_SCHEMA = pa.struct([
    ("content_hash", pa.string()), ("timestamp", pa.string()), ("source", pa.string()),
    ("line_count", pa.int64()), ("max_line_length", pa.int64()), ("avg_line_length", pa.float64()),
    ("alnum_prop", pa.float64()), ("repo_name", pa.string()), ("id", pa.string()), ("size", pa.string()),
    ("binary", pa.bool_()), ("copies", pa.string()), ("ref", pa.string()), ("path", pa.string()),
    ("mode", pa.string()), ("symlink_target", pa.string()), ("license", pa.string()), ("language", _LANGUAGE),
])


class GithubFamily(SourceFamily):
    name = "github"
    help = ("GitHub code: RedPajama-1T's BigQuery export (github_*.gz JSON Lines), git checkouts, repository "
            "folders and tarballs")
    reasons = ("skip_crt", "skip_LICENSE", "duplicate_in_chunk", "duplicate_across_chunks", "bad_record", "binary",
               "symlink", "too_large")
    reference_reasons = FILTER_REASONS
    meta_schema = META_SCHEMA
    version = "1"

    # ------------------------------------------------------------------ units

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        if opts.rp_v1 and not opts.tokenizer:
            raise SourceError("source github --reference rp_v1 needs --tokenizer PATH: the alpha-per-token filter "
                              "counts tokens (the reference used Pythia-6.9B's tokenizer, the GPT-NeoX-20B BPE)")
        if opts.tokenizer and not opts.rp_v1:
            raise SourceError("source github: --tokenizer is for --reference rp_v1; the default mode applies no "
                              "filter (count tokens with `textsieve tokens ATTRS --tokenizer PATH --name pythia` "
                              "for the rpv1-github recipe)")
        lists = [raw for raw in inputs if raw.lower().endswith(CHUNK_LIST)]
        if lists and len(lists) != len(inputs):
            raise SourceError("source github: give either chunk lists (.txt, one chunk each) or dumps, not both")
        chunks = [_chunk_list(raw) for raw in lists] if lists else [[p for raw in inputs for p in _expand(raw)]]
        units: list[Unit] = []
        for c, items in enumerate(chunks):
            units += [Unit(path, rel, size, {**info, "chunk": c}) for path, rel, size, info in items]
        return units

    # ------------------------------------------------------------------ phase 1

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        kind = unit.info.get("kind")
        if kind == "export":
            yield from self._export(unit, opts)
            return
        if kind == "folder":
            repo = repos.open_folder(unit.path)
            rows = repos.folder_rows(repo)
        else:
            with fsspec.open(unit.path, "rb") as fh:
                repo = repos.open_tarball(unit.path, fh)
            rows = _tar_rows(unit.path, repo)
        for row in rows:
            if isinstance(row, repos.RepoSkip):
                yield Skip(row.reason, f"{unit.rel}:{row.path}", row.detail)
                continue
            yield self._record(row, f"{unit.rel}:{row['path']}", opts)

    def _export(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        for n, line in _lines(unit.path, unit.rel, opts):
            if isinstance(line, Skip):
                yield line
                continue
            where = f"{unit.rel}:{n}"
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("content"), str):
                    raise ValueError("not an export row with a string `content`")
                item: SourceRecord | Skip = self._record(row, where, opts)
            except (ValueError, UnicodeError) as exc:
                if opts.on_error == "fail":
                    raise InputError.at(f"{unit.path}:{n}", f"bad GitHub export row ({exc})") from None
                item = Skip("bad_record", where, str(exc)[:200])
            yield item

    def _record(self, row: dict[str, Any], where: str, opts: SourceOptions) -> SourceRecord | Skip:
        """Step 1 of one row (§1.2): skips, the MD5 key, the cleaning and the statistics."""
        path = row.get("path")
        if isinstance(path, str) and path.endswith(".crt"):
            return Skip("skip_crt", where, path)
        if path == "LICENSE":
            return Skip("skip_LICENSE", where, path)
        content: str = row["content"]
        digest = hashlib.md5(content.encode("utf-8")).hexdigest()
        text = clean_copyright(content, fix_block=not opts.rp_v1)
        meta: dict[str, Any] = {"content_hash": digest, "timestamp": "", "source": "github", **code_stats(text)}
        for key, value in row.items():
            if key != "content":
                meta[key] = value
        return SourceRecord(f"{row.get('repo_name')}/{path}", text, meta, key=digest)

    # ------------------------------------------------------------------ phase 2

    def decide(self, keys: list[list[Any]], units: list[Unit], opts: SourceOptions) -> dict[tuple[int, int], str]:
        """Steps 1-3's dedup: the first copy of a content hash in (chunk, unit, record) order is
        kept; a later one in the same chunk is a step-1 duplicate, one in a later chunk step 2's."""
        out: dict[tuple[int, int], str] = {}
        seen: set[str] = set()
        local: set[str] = set()
        chunk = None
        for u, (unit, unit_keys) in enumerate(zip(units, keys)):
            if unit.info.get("chunk") != chunk:
                chunk, local = unit.info.get("chunk"), set()
            for r, key in enumerate(unit_keys):
                if key in local:
                    out[(u, r)] = "duplicate_in_chunk"
                elif key in seen:
                    out[(u, r)] = "duplicate_across_chunks"
                    local.add(key)
                else:
                    seen.add(key)
                    local.add(key)
        return out

    def prepare(self, opts: SourceOptions) -> Any:
        if not opts.rp_v1 or not opts.tokenizer:
            return None
        # the reference's `tokenize()` reads a special token's string as that token
        return load_tokenizer(opts.tokenizer, special_as_text=False)

    def keep(self, record: SourceRecord, opts: SourceOptions, state: Any) -> str | None:
        """Step 4 (§1.7), rp_v1 only: the first failing test, the tokens counted last."""
        if not opts.rp_v1:
            return None
        why = filter_reason(record.text, record.meta.get("path"), record.meta, None)
        if why is not None:
            return why
        tokens = int(state.count_batch([record.text])[0])
        if tokens and count_alpha(record.text) / tokens < MIN_ALPHA_PER_TOKEN:
            return "alpha_per_token<1.5"
        return None

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        if not opts.rp_v1 or not opts.tokenizer:
            return {}
        return {"tokenizer": load_tokenizer(opts.tokenizer).fingerprint}


# ---------------------------------------------------------------------- inputs


def _expand(raw: str) -> list[tuple[str, str, int, dict[str, Any]]]:
    """(path, rel, size, info) of every unit one input names (a glob: each match in name order)."""
    fs, path = fsspec.core.url_to_fs(raw)
    if any(ch in path for ch in "*?["):
        matches = sorted(fs.glob(path))
        if not matches:
            raise SourceError(f"source github: nothing matches {raw}")
        return [u for m in matches for u in _expand(fs.unstrip_protocol(m) if "://" in raw else m)]
    if not fs.exists(path):
        raise SourceError(f"source github: {raw} does not exist")
    if fs.isdir(path):
        return _folder(fs, path, raw)
    return [_file_unit(fs, path, raw)]


def _file_unit(fs: Any, path: str, raw: str) -> tuple[str, str, int, dict[str, Any]]:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    url = fs.unstrip_protocol(path) if "://" in raw else path
    if repos.is_tarball(name):
        return url, name, int(fs.size(path)), {"kind": "tar"}
    if _is_export(name):
        return url, name, int(fs.size(path)), {"kind": "export"}
    raise SourceError(f"source github: {raw} is not a GitHub dump: give export files (github_*.gz, *.jsonl[.gz]), "
                      "repository folders, git checkouts or tarballs (.tar, .tar.gz), or chunk lists (.txt)")


def _is_export(name: str) -> bool:
    lower = name.lower()
    return (name.startswith(EXPORT_PREFIX) and lower.endswith(EXPORT_SUFFIX)) or lower.endswith(JSONL_SUFFIXES)


def _folder(fs: Any, path: str, raw: str) -> list[tuple[str, str, int, dict[str, Any]]]:
    """An export folder's files, a repository, or a folder of repositories (module doc)."""
    local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
    if local and repos.is_checkout(path):
        return [_repo_unit(path)]
    entries = sorted(fs.ls(path, detail=True), key=lambda e: e["name"])
    files = [e for e in entries if e["type"] == "file"]
    names = [e["name"].rstrip("/").rsplit("/", 1)[-1] for e in files]
    exports = [e for e, n in zip(files, names) if n.startswith(EXPORT_PREFIX) and n.endswith(EXPORT_SUFFIX)] or \
        [e for e, n in zip(files, names) if n.lower().endswith(JSONL_SUFFIXES)]
    if exports:
        return [_file_unit(fs, e["name"], raw) for e in exports]
    if not local:
        raise SourceError(f"source github: {raw}: repository folders are read from local disk only (give a "
                          "tarball or export files at a URL)")
    visible = [e for e in entries if not e["name"].rstrip("/").rsplit("/", 1)[-1].startswith(".")]
    if visible and all(e["type"] == "directory" or repos.is_tarball(e["name"]) for e in visible):
        return [_repo_unit(e["name"]) if e["type"] == "directory" else _file_unit(fs, e["name"], raw)
                for e in visible]
    return [_repo_unit(path)]


def _repo_unit(folder: str) -> tuple[str, str, int, dict[str, Any]]:
    """A folder repository's unit; `members` (its files) make its identity, so a changed file
    re-reads it (`stages.sources.source`)."""
    files = repos.walk_folder(folder)
    name = os.path.basename(os.path.abspath(folder))
    members = [f.source for f in files if not f.symlink]
    return folder, f"{name}.repo", sum(f.size for f in files), {"kind": "folder", "members": members}


def _chunk_list(raw: str) -> list[tuple[str, str, int, dict[str, Any]]]:
    """The export files a chunk list names (the reference skips entries that are empty or do not
    end in `.gz`); a relative entry is taken from the working folder, else from the list's."""
    fs, path = fsspec.core.url_to_fs(raw)
    try:
        with fs.open(path, "rt", encoding="utf-8") as fh:
            entries = [line.strip() for line in fh]
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"source github: cannot read the chunk list {raw} ({exc})") from None
    base = path.rsplit("/", 1)[0] if "/" in path else "."
    out = []
    for entry in entries:
        if not entry or not entry.endswith(".gz"):
            continue
        where = entry if fs.exists(entry) or entry.startswith("/") or "://" in entry else f"{base}/{entry}"
        efs, epath = fsspec.core.url_to_fs(where)
        if not efs.exists(epath):
            raise SourceError(f"source github: chunk list {raw} names {entry}, which does not exist")
        out.append(_file_unit(efs, epath, where))
    return out


# ---------------------------------------------------------------------- reading


def _lines(path: str, rel: str, opts: SourceOptions) -> Iterator[tuple[int, bytes | Skip]]:
    """(1-based line number, bytes) of a JSON Lines file, blank lines left out; a damaged
    compressed stream fails, or in skip mode ends the file with one `bad_record`."""
    n = 0
    with fsspec.open(path, "rb") as raw:
        rest = b""
        try:
            for chunk, _ in iter_chunks(raw, compression_of(path)):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    n += 1
                    if line.strip():
                        yield n, line
        except CorruptStream as exc:
            if opts.on_error == "fail":
                raise InputError.at(path, str(exc)) from None
            yield n + 1, Skip("bad_record", f"{rel}:{n + 1}", f"the rest of the file is unreadable ({exc})")
            return
        if rest.strip():
            yield n + 1, rest


def _tar_rows(path: str, repo: repos.Repository) -> Iterator[dict[str, Any] | repos.RepoSkip]:
    with fsspec.open(path, "rb") as fh:
        yield from repos.tar_rows(repo, fh)


register_family(GithubFamily())
