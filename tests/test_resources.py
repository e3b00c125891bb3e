"""Word-list resources: lookup order, installing into the user cache, loading, the warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _shared import SHARED

from textsieve.signals import resources as res
from textsieve.signals.resources import (
    RPV2_LANGS,
    ResourceError,
    add_resources,
    load_word_lists,
    missing_message,
    resolve_resources_dir,
    user_resources_dir,
)

STOP_SIZES = {"en": 570, "de": 596, "fr": 606, "es": 577, "it": 619}
BAD_SIZES = {"en": 403, "de": 66, "fr": 91, "es": 68, "it": 168}

GOLDEN = SHARED / "golden" / "rpv2_resources"
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"golden resources not found at {GOLDEN}")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the real user cache or inherit the caller's TEXTSIEVE_RESOURCES."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(res.ENV_VAR, raising=False)
    return home


def _make(root: Path, stop: dict[str, list[str]] | None = None, bad: dict[str, str] | None = None) -> Path:
    for lang, words in (stop or {}).items():
        (root / "stopwords").mkdir(parents=True, exist_ok=True)
        (root / "stopwords" / f"{lang}.json").write_text(json.dumps(words), encoding="utf-8")
    for lang, text in (bad or {}).items():
        (root / "ldnoobw").mkdir(parents=True, exist_ok=True)
        (root / "ldnoobw" / lang).write_text(text, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


# ----------------------------------------------------------------------------- golden sizes


@needs_golden
def test_golden_sizes_match_spec() -> None:
    lists = load_word_lists(GOLDEN)
    assert lists.missing == []
    assert lists.source == GOLDEN
    assert {k: len(v) for k, v in lists.stop_words.items()} == STOP_SIZES
    assert {k: len(v) for k, v in lists.bad_words.items()} == BAD_SIZES
    assert "the" in lists.stop_words["en"] and "The" not in lists.stop_words["en"]
    assert all(isinstance(s, frozenset) for s in (*lists.stop_words.values(), *lists.bad_words.values()))
    # 124 English entries are multi-word (spec §5.3); entries keep their case (es `Follar`).
    assert sum(" " in e for e in lists.bad_words["en"]) == 124
    assert any(e != e.lower() for e in lists.bad_words["es"])


@needs_golden
def test_add_golden_then_resolve_from_cache(isolated_cache: Path) -> None:
    dest = add_resources(GOLDEN)
    assert dest == isolated_cache / ".cache" / "textsieve" / "resources"
    assert resolve_resources_dir() == dest
    lists = load_word_lists(dest)
    assert {k: len(v) for k, v in lists.bad_words.items()} == BAD_SIZES
    # Only the word lists are copied, not the folder's other files.
    assert not (dest / "ut1_category_index.json.gz").exists()


# ----------------------------------------------------------------------------- bad-word rule


def test_bad_words_rule(tmp_path: Path) -> None:
    root = _make(tmp_path / "r", bad={"en": "foo\n  bar \nfoo\nfoo \n\ntwo words\r\nMiXed\n"})
    bad = load_word_lists(root).bad_words["en"]
    assert bad == frozenset({"foo", "bar", "two words", "MiXed"})


def test_stop_words_must_be_json_list_of_strings(tmp_path: Path) -> None:
    root = _make(tmp_path / "r")
    (root / "stopwords").mkdir()
    (root / "stopwords" / "en.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ResourceError, match="list of strings"):
        load_word_lists(root)
    with pytest.raises(ResourceError, match="en.json"):
        add_resources(root)


# ----------------------------------------------------------------------------- missing lists


def test_user_lists_replace_the_bundled_ones_of_their_language(tmp_path: Path) -> None:
    root = _make(tmp_path / "r", stop={"en": ["a", "the", "the"]}, bad={"de": "x\n"})
    lists = load_word_lists(root)
    assert lists.stop_words["en"] == frozenset({"a", "the"}) and lists.bad_words["de"] == frozenset({"x"})
    bundled = load_word_lists(None)
    assert lists.stop_words["de"] == bundled.stop_words["de"] and lists.bad_words["en"] == bundled.bad_words["en"]
    assert lists.missing == [] and lists.source == root
    assert lists.stop_words_for("ja") == frozenset() and lists.bad_words_for(None) == frozenset()


def test_no_dir_gives_the_bundled_lists() -> None:
    """A default install computes every RPv2 signal: the lists ship in the package."""
    lists = load_word_lists(None)
    assert lists.source == res.BUNDLED_DIR and lists.missing == []
    assert {k: len(v) for k, v in lists.stop_words.items()} == STOP_SIZES
    assert {k: len(v) for k, v in lists.bad_words.items()} == BAD_SIZES
    notice = (res.BUNDLED_DIR / "NOTICE.md").read_text(encoding="utf-8")
    for needle in ("Apache License 2.0", "CC BY 4.0", res.STOPWORDS_COMMIT, res.LDNOOBW_COMMIT):
        assert needle in notice
    assert "Apache License" in (res.BUNDLED_DIR / "stopwords" / "LICENSE").read_text(encoding="utf-8")


@needs_golden
def test_bundled_lists_are_the_golden_files_unchanged() -> None:
    for rel in [*(f"stopwords/{g}.json" for g in RPV2_LANGS), *(f"ldnoobw/{g}" for g in RPV2_LANGS)]:
        assert (res.BUNDLED_DIR / rel).read_bytes() == (GOLDEN / rel).read_bytes(), rel


def test_an_install_without_the_bundled_lists_reports_all_missing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(res, "BUNDLED_DIR", tmp_path / "gone")
    lists = load_word_lists(None)
    assert lists.source is None and lists.stop_words == {} and lists.bad_words == {}
    assert lists.missing == (
        [f"stopwords/{lang}.json" for lang in RPV2_LANGS] + [f"ldnoobw/{lang}" for lang in RPV2_LANGS]
    )
    partial = load_word_lists(_make(tmp_path / "r", stop={"en": ["the"]}))
    assert "stopwords/en.json" not in partial.missing and len(partial.missing) == 2 * len(RPV2_LANGS) - 1


def test_missing_message_says_what_where_how() -> None:
    assert missing_message([]) == ""
    msg = missing_message(["stopwords/de.json", "ldnoobw/it"])
    for needle in (
        "stop words (de)",
        "bad words (it)",
        "stopwords/{lang}.json",
        "ldnoobw/{lang}",
        "6/stopwords-json",
        "fca10ee6724fdfae58b9e72e43ac7d4a6ae9cd45",
        "dist/{lang}.json",
        "LDNOOBW/List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words",
        "5faf2ba42d7b1c0977169ec3611df25a3c08eb13",
        "textsieve resources add DIR",
        "--resources DIR",
        "TEXTSIEVE_RESOURCES",
    ):
        assert needle in msg, needle
    assert "stop words (" not in missing_message(["ldnoobw/en"])


# ----------------------------------------------------------------------------- resolution order


def test_resolution_precedence(tmp_path: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_resources_dir() is None  # nothing anywhere

    cache = isolated_cache / ".cache" / "textsieve" / "resources"
    cache.mkdir(parents=True)
    assert resolve_resources_dir() == cache

    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert user_resources_dir() == xdg / "textsieve" / "resources"
    assert resolve_resources_dir() is None  # XDG wins over ~/.cache, and is empty
    (xdg / "textsieve" / "resources").mkdir(parents=True)
    assert resolve_resources_dir() == xdg / "textsieve" / "resources"

    env_dir = _make(tmp_path / "env")
    monkeypatch.setenv(res.ENV_VAR, str(env_dir))
    assert resolve_resources_dir() == env_dir

    explicit = _make(tmp_path / "explicit")
    assert resolve_resources_dir(str(explicit)) == explicit


def test_relative_xdg_is_ignored(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert user_resources_dir() == isolated_cache / ".cache" / "textsieve" / "resources"


def test_named_but_absent_dir_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ResourceError, match="--resources"):
        resolve_resources_dir(str(tmp_path / "nope"))
    monkeypatch.setenv(res.ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(ResourceError, match="TEXTSIEVE_RESOURCES"):
        resolve_resources_dir()


# ----------------------------------------------------------------------------- add_resources


def test_add_rejects_folder_without_lists(tmp_path: Path) -> None:
    empty = _make(tmp_path / "empty")
    (empty / "README").write_text("nothing here")
    with pytest.raises(ResourceError) as exc:
        add_resources(empty)
    assert "stopwords/en.json" in str(exc.value) and "ldnoobw/en" in str(exc.value)
    with pytest.raises(ResourceError, match="does not exist"):
        add_resources(tmp_path / "absent")
    assert not user_resources_dir().exists()  # nothing was half-installed


def test_add_merges_and_overwrites(tmp_path: Path) -> None:
    first = _make(tmp_path / "a", stop={"en": ["old"]}, bad={"en": "bad\n"})
    second = _make(tmp_path / "b", stop={"en": ["new"], "de": ["der"]})
    dest = add_resources(first)
    assert add_resources(second) == dest
    lists = load_word_lists(dest)
    assert lists.stop_words["en"] == frozenset({"new"}) and lists.stop_words["de"] == frozenset({"der"})
    assert lists.bad_words["en"] == frozenset({"bad"})  # kept from the first add
    assert {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()} == {
        "stopwords/en.json", "stopwords/de.json", "ldnoobw/en"}
    leftovers = [p.name for p in dest.parent.iterdir() if p.name != "resources"]
    assert leftovers == [], "staging folders must be cleaned up"
    assert oct(dest.stat().st_mode & 0o777) == oct(0o755)
