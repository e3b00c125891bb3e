"""The bundled sample corpus, assembled at run time from text that ships with Python and Debian.

We may not commit third-party corpora, yet a first-time user needs a few hundred *real*
documents to see what the quality signals and filters do. Every Python installation and every
Debian system already carries such text under licences that allow reading it: the interactive
help topics (``pydoc_data.topics``), the docstrings of the standard library, Python's
``LICENSE.txt``, ``/usr/share/common-licenses/*`` and ``/usr/share/doc/*/copyright``. We mix
well-written prose (help topics, docstrings, licences) with realistic low-quality material
(machine-formatted ``copyright`` files full of file lists and e-mail addresses, raw Python
source), so that signals and filters visibly disagree on the sample.

Nothing is downloaded and nothing is imported for its docstrings: standard-library modules are
*parsed* with :mod:`ast`, so no module code runs (no ``this``, ``antigravity`` surprises).

Determinism: all sources are listed in sorted order, selection is by evenly spaced indices (no
randomness), and the gzip header carries no timestamp or file name, so two builds on the same
machine are byte-identical.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import sysconfig
import tempfile
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MIN_EXPECTED_DOCS",
    "SOURCES",
    "SampleInfo",
    "SampleSources",
    "SampleWarning",
    "build_sample",
]

#: Source labels, in dedup priority order: when two sources yield the same text, the earlier
#: one keeps it (e.g. a licence shipped both by Debian and as a package's copyright file).
SOURCES: tuple[str, ...] = (
    "python-docs",
    "python-license",
    "debian-license",
    "python-docstring",
    "python-source",
    "debian-copyright",
)

#: Share of ``max_docs`` each source aims for. A source with fewer documents than its share
#: hands the rest to the others in proportion to their weights.
_WEIGHTS: dict[str, float] = {
    "python-docs": 0.20,
    "python-license": 0.01,
    "debian-license": 0.04,
    "python-docstring": 0.35,
    "python-source": 0.12,
    "debian-copyright": 0.28,
}

#: Fewer documents than this (when more were asked for) triggers a :class:`SampleWarning`.
MIN_EXPECTED_DOCS = 200

#: Documents longer than this are skipped: they would dominate the sample's size and slow the
#: first-run experience (a few Debian copyright files exceed 1 MB).
MAX_CHARS = 100_000
#: Docstrings shorter than this are mostly one-liners ("Return self."), not prose.
MIN_DOCSTRING_CHARS = 200
#: Source files shorter than this are mostly ``__init__.py`` stubs.
MIN_SOURCE_CHARS = 1_000

#: Standard-library directories we never read: test suites (huge, full of deliberately odd
#: strings), GUI and demo packages, vendored wheels, build configuration and third-party installs.
_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "__pycache__",
        "site-packages",
        "dist-packages",
        "idlelib",
        "tkinter",
        "turtledemo",
        "lib2to3",
        "ensurepip",
        "__phello__",
    }
)
#: Modules whose *purpose* is a side effect or a joke; not representative prose or code.
_SKIP_MODULES = frozenset({"this", "antigravity", "__hello__", "turtle"})


class SampleWarning(UserWarning):
    """Raised (as a warning) when the machine offers too little text for a useful sample."""


@dataclass(frozen=True)
class SampleSources:
    """Where to look for text. The defaults are this interpreter's standard library and the
    usual Debian locations; tests point them elsewhere to simulate a bare machine. ``None``
    disables a source."""

    stdlib_dir: Path | None = field(default_factory=lambda: Path(sysconfig.get_paths()["stdlib"]))
    common_licenses_dir: Path | None = Path("/usr/share/common-licenses")
    doc_dir: Path | None = Path("/usr/share/doc")
    help_topics: bool = True


@dataclass(frozen=True)
class SampleInfo:
    """What :func:`build_sample` wrote: the file, how many documents, and the mix."""

    path: Path
    n_docs: int
    counts: dict[str, int]
    n_chars: int


@dataclass(frozen=True)
class _Candidate:
    id: str
    text: str
    source: str
    origin: str

    def record(self) -> dict[str, object]:
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "meta": {"origin": self.origin, "lang": "en"},
        }


# --------------------------------------------------------------------------- reading helpers


def _usable(text: str | None) -> bool:
    """A document must be non-blank, bounded in size, and encodable as UTF-8 (no lone
    surrogates), because it is written as UTF-8 JSON."""
    if not text or not text.strip() or len(text) > MAX_CHARS:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_text(path: Path) -> str | None:
    """Read a UTF-8 file, or return None if it is missing, huge, binary or not UTF-8: a sample
    source must never break the build."""
    try:
        if not path.is_file() or path.stat().st_size > 4 * MAX_CHARS:
            return None
        data = path.read_bytes()
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _sorted_entries(directory: Path) -> list[Path]:
    """Entries sorted with real files before symlinks, then by name, so that text reachable
    under two names (``GPL`` -> ``GPL-3``, ``cpp-12`` -> ``gcc-12-base``) keeps its own name."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    return sorted(entries, key=lambda p: (p.is_symlink(), p.name))


# --------------------------------------------------------------------------- the sources


def _help_topics() -> Iterator[_Candidate]:
    """The interactive ``help()`` topics: long, well-edited English prose about Python."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions split pydoc_data out
        return
    for name in sorted(topics):
        yield _Candidate(f"python-docs/{name}", topics[name], "python-docs", f"pydoc_data.topics:{name}")


def _python_license(stdlib_dir: Path) -> Iterator[_Candidate]:
    """Python's own licence text (absent on Debian's python3, which moves it to /usr/share/doc)."""
    path = stdlib_dir / "LICENSE.txt"
    text = _read_text(path)
    if text is not None:
        yield _Candidate("python-license/LICENSE.txt", text, "python-license", str(path))


def _common_licenses(directory: Path) -> Iterator[_Candidate]:
    """Debian's canonical licence texts: formal legal English, some with all-caps sections."""
    for path in _sorted_entries(directory):
        text = _read_text(path)
        if text is not None:
            yield _Candidate(f"debian-license/{path.name}", text, "debian-license", str(path))


def _copyright_files(directory: Path) -> Iterator[_Candidate]:
    """Per-package ``copyright`` files: machine-readable stanzas, file globs, name and e-mail
    lists. This is the sample's deliberately low-quality, list-like material."""
    for pkg in _sorted_entries(directory):
        path = pkg / "copyright"
        text = _read_text(path)
        if text is not None:
            yield _Candidate(f"debian-copyright/{pkg.name}", text, "debian-copyright", str(path))


def _stdlib_files(stdlib_dir: Path) -> list[tuple[str, Path]]:
    """Pure-Python standard-library files as (relative posix path, path), sorted. Private
    modules (``_pyio``), tests, GUI/demo packages and joke modules are left out."""
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(stdlib_dir):
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(("config-", "."))
        )
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            if name.startswith("_") and name != "__init__.py":
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(stdlib_dir).as_posix()
            if rel[:-3] in _SKIP_MODULES:
                continue
            found.append((rel, path))
    return sorted(found)


def _module_name(rel: str) -> str:
    """``json/decoder.py`` -> ``json.decoder``; ``json/__init__.py`` -> ``json``."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _read_source(path: Path) -> str | None:
    """Decode Python source honouring its coding cookie (PEP 263), as the interpreter would."""
    try:
        if path.stat().st_size > 4 * MAX_CHARS:
            return None
        with tokenize.open(path) as fh:
            return fh.read()
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _docstrings(module: str, tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(qualified name, raw docstring) for the module and its public classes, functions and
    methods. Raw means not dedented: we normalize nothing, the signals see what ships."""
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        yield module, doc

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, str]]:
        for node in body:
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name.startswith("_") and not (node.name.startswith("__") and node.name.endswith("__")):
                continue
            qual = f"{prefix}.{node.name}"
            node_doc = ast.get_docstring(node, clean=False)
            if node_doc is not None:
                yield qual, node_doc
            if isinstance(node, ast.ClassDef):  # methods, nested classes; not closures
                yield from walk(node.body, qual)

    yield from walk(tree.body, module)


def _stdlib_sources(stdlib_dir: Path) -> tuple[list[_Candidate], list[_Candidate]]:
    """Docstring documents and whole-source-file documents from one pass over the stdlib."""
    docstrings: list[_Candidate] = []
    sources: list[_Candidate] = []
    seen_ids: set[str] = set()
    for rel, path in _stdlib_files(stdlib_dir):
        text = _read_source(path)
        if text is None:
            continue
        if len(text) >= MIN_SOURCE_CHARS:
            sources.append(_Candidate(f"python-source/{rel}", text, "python-source", str(path)))
        try:
            tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError):
            continue
        module = _module_name(rel)
        for qual, doc in _docstrings(module, tree):
            doc_id = f"python-docstring/{qual}"
            # A name defined twice (if/else platform branches) keeps its first definition.
            if len(doc) < MIN_DOCSTRING_CHARS or doc_id in seen_ids:
                continue
            seen_ids.add(doc_id)
            origin = module if qual == module else f"{module}:{qual[len(module) + 1:]}"
            docstrings.append(_Candidate(doc_id, doc, "python-docstring", origin))
    return docstrings, sources


def _collect_candidates(sources: SampleSources | None = None) -> dict[str, list[_Candidate]]:
    """Every usable document per source, exact-duplicate texts removed across sources in
    :data:`SOURCES` priority order. Missing sources simply contribute nothing."""
    src = sources or SampleSources()
    raw: dict[str, list[_Candidate]] = {name: [] for name in SOURCES}
    if src.help_topics:
        raw["python-docs"] = list(_help_topics())
    if src.stdlib_dir is not None and src.stdlib_dir.is_dir():
        raw["python-license"] = list(_python_license(src.stdlib_dir))
        raw["python-docstring"], raw["python-source"] = _stdlib_sources(src.stdlib_dir)
    if src.common_licenses_dir is not None and src.common_licenses_dir.is_dir():
        raw["debian-license"] = list(_common_licenses(src.common_licenses_dir))
    if src.doc_dir is not None and src.doc_dir.is_dir():
        raw["debian-copyright"] = list(_copyright_files(src.doc_dir))

    seen_texts: set[str] = set()
    out: dict[str, list[_Candidate]] = {}
    for name in SOURCES:
        kept: list[_Candidate] = []
        # Dedup in discovery order (real files before symlinks), then sort by id.
        for cand in raw[name]:
            if _usable(cand.text) and cand.text not in seen_texts:
                seen_texts.add(cand.text)
                kept.append(cand)
        out[name] = sorted(kept, key=lambda c: c.id)
    return out


# --------------------------------------------------------------------------- selection


def _allocate(available: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over sources by :data:`_WEIGHTS`, capped by what each source has;
    whatever a small source cannot use is redistributed to the others. Deterministic:
    leftovers from rounding go to sources in :data:`SOURCES` order."""
    quota = {name: 0 for name in SOURCES}
    remaining = min(total, sum(available.values()))
    while remaining > 0:
        open_ = [n for n in SOURCES if quota[n] < available.get(n, 0)]
        weight_sum = sum(_WEIGHTS[n] for n in open_)
        given = 0
        for n in open_:
            share = int(remaining * _WEIGHTS[n] / weight_sum)
            take = min(share, available[n] - quota[n])
            quota[n] += take
            given += take
        left = remaining - given
        if given == 0:  # shares all rounded to 0: hand out one at a time
            for n in open_:
                if left == 0:
                    break
                quota[n] += 1
                left -= 1
        remaining = left
    return quota


def _evenly(items: list[_Candidate], k: int) -> list[_Candidate]:
    """Pick ``k`` items spread evenly over a sorted list, so that a source is not represented
    only by names starting with 'a'."""
    n = len(items)
    if k >= n:
        return list(items)
    return [items[(2 * i + 1) * n // (2 * k)] for i in range(k)]


# --------------------------------------------------------------------------- writing


def _write_jsonl_gz(records: list[dict[str, object]], output: Path) -> None:
    """Write atomically: a temp file in the target directory, then rename over the target, so
    readers never see a half-written sample. The gzip header has mtime 0 and no file name so
    the bytes depend only on the content."""
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6
        ) as gz:
            for rec in records:
                gz.write(json.dumps(rec, ensure_ascii=False).encode("utf-8"))
                gz.write(b"\n")
        os.replace(tmp_name, output)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise


def build_sample(
    output: str | Path,
    max_docs: int = 500,
    *,
    sources: SampleSources | None = None,
) -> SampleInfo:
    """Assemble the sample corpus and write it to ``output`` (``.jsonl.gz``).

    One JSON object per line: ``{"id", "text", "source", "meta": {"origin", "lang"}}``,
    ordered by id. Up to ``max_docs`` documents, mixed across sources by fixed weights.
    Warns with :class:`SampleWarning` if fewer than ``min(max_docs, 200)`` could be assembled
    (a stripped-down machine), but still writes what it found.
    """
    if max_docs < 1:
        raise ValueError(f"max_docs must be >= 1, got {max_docs}")
    out = Path(output)
    candidates = _collect_candidates(sources)
    quota = _allocate({n: len(c) for n, c in candidates.items()}, max_docs)
    chosen: list[_Candidate] = []
    for name in SOURCES:
        chosen.extend(_evenly(candidates[name], quota[name]))
    chosen.sort(key=lambda c: c.id)

    if len(chosen) < min(max_docs, MIN_EXPECTED_DOCS):
        found = ", ".join(f"{n}={quota[n]}" for n in SOURCES if quota[n]) or "nothing"
        warnings.warn(
            f"sample corpus has only {len(chosen)} documents ({found}); this machine lacks "
            "most sources (Python's stdlib sources, /usr/share/common-licenses, "
            "/usr/share/doc/*/copyright). Signals will still run, but statistics on so few "
            "documents are noisy.",
            SampleWarning,
            stacklevel=2,
        )

    _write_jsonl_gz([c.record() for c in chosen], out)
    counts = {n: quota[n] for n in SOURCES if quota[n]}
    return SampleInfo(path=out, n_docs=len(chosen), counts=counts, n_chars=sum(len(c.text) for c in chosen))
