"""Stop-word and LDNOOBW bad-word lists: where to find them, how to install and load them.

``rps_doc_stop_word_fraction`` and ``rps_doc_ldnoobw_words`` need the lists RPv2 used. Their
licences (Apache-2.0, CC BY 4.0) allow redistribution with attribution, so RPv2's five languages
ship inside the package (`BUNDLED_DIR`, with ``NOTICE.md``): a default install computes every
signal, offline. A user folder may replace a bundled list or add languages; it is found in a
fixed order (explicit ``--resources DIR``, then ``$TEXTSIEVE_RESOURCES``, then the per-user
cache) and laid over the bundled lists, language by language. Only a damaged install can lack
one of the five: then `annotate` skips the signal and prints :func:`missing_message` once. A
document whose own language has no list gets null for them (``textsieve.stages.annotate.lang``),
where RPv2 would give 0.0.

Folder layout (the same as the golden ``rpv2_resources`` folder)::

    stopwords/{lang}.json   a JSON list of words   (6/stopwords-json, dist/{lang}.json)
    ldnoobw/{lang}          one entry per line     (LDNOOBW list, file {lang})

Lists for languages beyond RPv2's five (any lower-case code such as ``pt`` or ``pt-br``) are
loaded and installed too, so a user can give those languages word-list signals; RPv2's own
five are the ones whose absence is reported as missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BUNDLED_DIR",
    "ENV_VAR",
    "RPV2_LANGS",
    "ResourceError",
    "WordLists",
    "add_resources",
    "bad_words_relpath",
    "load_word_lists",
    "missing_message",
    "resolve_resources_dir",
    "stop_words_relpath",
    "user_resources_dir",
]

#: The languages RPv2 computes word-list signals for.
RPV2_LANGS: tuple[str, ...] = ("en", "de", "fr", "es", "it")

#: RPv2's own lists, shipped in the package (see its NOTICE.md for their sources and licences).
BUNDLED_DIR = Path(__file__).with_name("wordlists")

#: Environment variable naming a resources folder.
ENV_VAR = "TEXTSIEVE_RESOURCES"

STOPWORDS_REPO = "6/stopwords-json"
STOPWORDS_COMMIT = "fca10ee6724fdfae58b9e72e43ac7d4a6ae9cd45"
LDNOOBW_REPO = "LDNOOBW/List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words"
LDNOOBW_COMMIT = "5faf2ba42d7b1c0977169ec3611df25a3c08eb13"

#: A file name that is a language code (``pt``, ``fil``, ``pt-br``): only such files in
#: ``stopwords/`` and ``ldnoobw/`` are lists, so a whole LDNOOBW checkout (README.md, LICENSE)
#: can be copied in as it is.
LANG_CODE = re.compile(r"[a-z]{2,3}(-[a-z0-9]+)*")


class ResourceError(ValueError):
    """A resources folder is unusable (absent, or with no known or malformed lists)."""


def stop_words_relpath(lang: str) -> str:
    """Path of a stop-word list inside a resources folder."""
    return f"stopwords/{lang}.json"


def bad_words_relpath(lang: str) -> str:
    """Path of an LDNOOBW list inside a resources folder."""
    return f"ldnoobw/{lang}"


def _all_relpaths() -> list[str]:
    return [stop_words_relpath(lang) for lang in RPV2_LANGS] + [bad_words_relpath(lang) for lang in RPV2_LANGS]


def _extra_relpaths(root: Path) -> list[str]:
    """The lists under ``root`` for languages other than RPv2's five, sorted."""
    found: list[str] = []
    for sub, suffix in (("stopwords", ".json"), ("ldnoobw", "")):
        folder = root / sub
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if not path.name.endswith(suffix):
                continue
            name = path.name[: len(path.name) - len(suffix)]
            if path.is_file() and LANG_CODE.fullmatch(name) and name not in RPV2_LANGS:
                found.append(f"{sub}/{path.name}")
    return found


def user_resources_dir() -> Path:
    """The per-user install location: ``($XDG_CACHE_HOME or ~/.cache)/textsieve/resources``.
    A cache, not config, because the lists can always be re-added from their source."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says relative values are invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "textsieve" / "resources"


def resolve_resources_dir(explicit: str | None = None) -> Path | None:
    """Find the resources folder: ``explicit`` > ``$TEXTSIEVE_RESOURCES`` > the user cache.

    A folder the user named (argument or environment) that does not exist raises
    :class:`ResourceError`: silently computing signals without the lists they asked for would
    be worse than stopping. The user cache is optional, so its absence gives ``None``.
    """
    for value, what in ((explicit, "--resources"), (os.environ.get(ENV_VAR), f"${ENV_VAR}")):
        if value:
            path = Path(value).expanduser()
            if not path.is_dir():
                raise ResourceError(f"{what} names {path}, which is not a directory")
            return path
    cache = user_resources_dir()
    return cache if cache.is_dir() else None


# --------------------------------------------------------------------------- parsing


def _parse_stop_words(path: Path) -> frozenset[str]:
    """A JSON list of strings, as in 6/stopwords-json ``dist/{lang}.json``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResourceError(f"{path}: not a readable UTF-8 JSON file ({exc})") from exc
    if not isinstance(data, list) or not all(isinstance(w, str) for w in data):
        raise ResourceError(f"{path}: expected a JSON list of strings")
    return frozenset(data)


def _parse_bad_words(path: Path) -> frozenset[str]:
    """RPv2's rule (spec §5.3): split the file into lines, deduplicate as a set, strip each
    entry. Entries are *not* normalized further. An empty entry (blank line) is dropped: no
    document word is ever empty, so it could not match, and RPv2's 403 English entries do not
    count it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResourceError(f"{path}: not a readable UTF-8 text file ({exc})") from exc
    # read_text() already turned \r\n and \r into \n, as iterating the file would.
    entries = {line.strip() for line in set(text.split("\n"))}
    entries.discard("")
    return frozenset(entries)


def _parse(root: Path, rel: str) -> frozenset[str]:
    path = root / rel
    return _parse_stop_words(path) if rel.startswith("stopwords/") else _parse_bad_words(path)


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class WordLists:
    """Loaded lists by language. A language without a list maps to nothing (the reference
    uses an empty set, which makes the signal 0.0 as RPv2 does; `annotate` writes null
    instead). ``missing`` lists the relative paths of RPv2's five that were not found, for
    :func:`missing_message`."""

    stop_words: dict[str, frozenset[str]] = field(default_factory=dict)
    bad_words: dict[str, frozenset[str]] = field(default_factory=dict)
    source: Path | None = None
    missing: list[str] = field(default_factory=list)

    def stop_words_for(self, lang: str | None) -> frozenset[str]:
        """The stop words for ``lang``, or an empty set."""
        return self.stop_words.get(lang or "", frozenset())

    def bad_words_for(self, lang: str | None) -> frozenset[str]:
        """The LDNOOBW entries for ``lang``, or an empty set."""
        return self.bad_words.get(lang or "", frozenset())

    @property
    def extra_langs(self) -> tuple[str, ...]:
        """Languages beyond RPv2's five that have at least one list, sorted."""
        return tuple(sorted((set(self.stop_words) | set(self.bad_words)) - set(RPV2_LANGS)))


def load_word_lists(resources_dir: Path | None) -> WordLists:
    """The bundled lists with every list under ``resources_dir`` laid over them (a user list
    replaces the bundled one of its language); RPv2's five that neither has go in ``missing``.

    A list that is present but malformed raises :class:`ResourceError`, because that is a
    broken install. ``source`` is the user folder, or the bundled one when none is given.
    """
    stop: dict[str, frozenset[str]] = {}
    bad: dict[str, frozenset[str]] = {}
    for root in (BUNDLED_DIR, resources_dir):
        if root is None or not Path(root).is_dir():
            continue
        root = Path(root)
        for rel in [*(r for r in _all_relpaths() if (root / r).is_file()), *_extra_relpaths(root)]:
            lang = rel.split("/", 1)[1].removesuffix(".json")
            (stop if rel.startswith("stopwords/") else bad)[lang] = _parse(root, rel)
    missing = [rel for rel in _all_relpaths()
               if rel.split("/", 1)[1].removesuffix(".json") not in (stop if rel.startswith("stopwords/") else bad)]
    source = Path(resources_dir) if resources_dir is not None else (BUNDLED_DIR if BUNDLED_DIR.is_dir() else None)
    return WordLists(stop_words=stop, bad_words=bad, source=source, missing=missing)


def missing_message(missing: list[str]) -> str:
    """One warning text for the user: what is missing, what to provide, where it comes from,
    and how to install it. Empty string when nothing is missing."""
    if not missing:
        return ""
    stop_langs = [rel.split("/")[1].removesuffix(".json") for rel in missing if rel.startswith("stopwords/")]
    bad_langs = [rel.split("/")[1] for rel in missing if rel.startswith("ldnoobw/")]
    lines = [f"textsieve: word lists are missing (the ones bundled in {BUNDLED_DIR} were removed from this "
             "install); the signals that need them are skipped:"]
    if stop_langs:
        lines.append(f"  - stop words ({', '.join(stop_langs)}): rps_doc_stop_word_fraction")
    if bad_langs:
        lines.append(f"  - LDNOOBW bad words ({', '.join(bad_langs)}): rps_doc_ldnoobw_words")
    lines += [
        "Provide a folder laid out as:",
        "  DIR/stopwords/{lang}.json   a JSON list of words",
        "  DIR/ldnoobw/{lang}          one entry per line",
        f"for lang in {', '.join(RPV2_LANGS)} (lists for other languages, same layout, are used too). "
        "The files are the ones RPv2 used:",
        f"  stopwords: GitHub {STOPWORDS_REPO} at commit {STOPWORDS_COMMIT}, file dist/{{lang}}.json",
        f"  ldnoobw:   GitHub {LDNOOBW_REPO} at commit {LDNOOBW_COMMIT}, file {{lang}}",
        "Then install it once with `textsieve resources add DIR`, or pass `--resources DIR`,",
        f"or set {ENV_VAR}=DIR.",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- installing


def add_resources(src: str | Path) -> Path:
    """Validate ``src`` and copy its lists into the user cache; return the cache folder.

    Only list files are copied (RPv2's languages and others, not whatever else the folder
    holds). Lists already in the cache that ``src`` lacks are kept, so languages can be added
    one at a time. The new folder is assembled next to the destination and then swapped in, so
    a concurrent reader sees either the old or the new set, never a half-copied one.
    """
    root = Path(src).expanduser()
    if not root.is_dir():
        raise ResourceError(f"resources folder {root} does not exist or is not a directory")
    present = [rel for rel in _all_relpaths() if (root / rel).is_file()] + _extra_relpaths(root)
    if not present:
        expected = ", ".join(_all_relpaths())
        raise ResourceError(
            f"{root} contains no known word list. Expected at least one of: {expected}.\n"
            + missing_message(_all_relpaths())
        )
    for rel in present:  # fail before touching the cache
        _parse(root, rel)

    dest = user_resources_dir()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".resources.", suffix=".tmp", dir=dest.parent))
    try:
        if dest.is_dir():
            for rel in _all_relpaths() + _extra_relpaths(dest):
                if (dest / rel).is_file():
                    (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(dest / rel, staging / rel)
        for rel in present:
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, staging / rel)
        os.chmod(staging, 0o755)  # mkdtemp makes it 0700
        _swap_in(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest


def _swap_in(staging: Path, dest: Path) -> None:
    """Replace ``dest`` by ``staging``. POSIX cannot rename over a non-empty directory, so the
    old folder is first moved aside, then removed once the new one is in place."""
    old: Path | None = None
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=".resources.", suffix=".old", dir=dest.parent))
        os.rmdir(old)
        os.replace(dest, old)
    try:
        os.replace(staging, dest)
    except BaseException:
        if old is not None:
            os.replace(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
