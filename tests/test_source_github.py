"""The `github` source family (issue 30): RedPajama-1T's GitHub steps exactly in reference mode (every
golden record and per-row decision), the default mode's one fix with both behaviours, the
`rpv1_code` signals and the `rpv1-github` recipe, and repositories as users have them (git
checkouts, folders, tarballs) with their licence detected, on real files of this machine."""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sysconfig
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.dumps import github_rules as rules
from textsieve.dumps.family import Skip, SourceError, SourceOptions, SourceRecord, get_family
from textsieve.dumps.licenses import detect_license, is_license_file, repo_license
from textsieve.io.errors import InputError
from textsieve.stages.sources.source import SourceConfig, run_source

STDLIB = Path(sysconfig.get_paths()["stdlib"])
GITHUB_FILES = [f"github_00000000000{i}.jsonl.gz" for i in range(4)]


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _golden(shared: Path, name: str) -> list[dict]:
    return _read(shared / "golden" / "rpv1" / name)


def _chunk_lists(shared: Path, tmp: Path) -> list[str]:
    """The goldens' two chunks (files 0-1, 2-3) as the reference's partition files."""
    src = shared / "corpora" / "sources" / "github"
    out = []
    for name, files in (("chunk_aa.txt", GITHUB_FILES[:2]), ("chunk_ab.txt", GITHUB_FILES[2:])):
        (tmp / name).write_text("".join(f"{src / f}\n" for f in files))
        out.append(str(tmp / name))
    return out


def _tokenizer(shared: Path) -> str:
    return str(shared / "golden" / "rpv1" / "tokenizer")


# ---------------------------------------------------------------------- the goldens


@pytest.mark.slow
def test_reference_mode_writes_the_reference_records_in_order_and_counts_every_reason(shared_dir: Path,
                                                                                       tmp_path: Path) -> None:
    out = tmp_path / "ref"
    res = run_source(SourceConfig("github", _chunk_lists(shared_dir, tmp_path), str(out), reference="rp_v1",
                                  tokenizer=_tokenizer(shared_dir), workers=2, progress=False))
    got = [r for f in GITHUB_FILES for r in _read(out / f)]  # one shard per export file, in input order
    want = _golden(shared_dir, "github_dev.jsonl.gz")
    assert len(got) == len(want) == 1198
    for g, w in zip(got, want):  # same text and meta, meta keys in the reference's order
        assert (g["text"], g["meta"], list(g["meta"])) == (w["text"], w["meta"], list(w["meta"]))
        assert g["id"] == f"{w['meta']['repo_name']}/{w['meta']['path']}"
    outcomes = json.loads((shared_dir / "golden" / "rpv1" / "manifest.json").read_text())["results"]["github"]
    assert res.left_out == {k.removeprefix("dropped:"): v for k, v in outcomes["outcomes"].items() if k != "kept"}
    assert res.records == outcomes["step1_records"] + outcomes["outcomes"]["duplicate_in_chunk"]


@pytest.mark.slow
def test_every_golden_row_gets_the_reference_decision_and_values(shared_dir: Path, tmp_path: Path) -> None:
    """Per input row: step 1's label, the MD5, the cleaned text's hash and statistics, step 2's
    label, and the filter's alpha, tokens and first failing test (github_dev_steps)."""
    family = get_family("github")
    opts = SourceOptions(reference="rp_v1", tokenizer=_tokenizer(shared_dir))
    units = family.units(_chunk_lists(shared_dir, tmp_path), opts)
    assert [(u.rel, u.info["chunk"]) for u in units] == list(zip(GITHUB_FILES, (0, 0, 1, 1)))
    items = [list(family.read(u, opts)) for u in units]
    keys = [[i.key for i in unit if isinstance(i, SourceRecord)] for unit in items]
    decided = family.decide(keys, units, opts)
    tok = family.prepare(opts)
    steps = _golden(shared_dir, "github_dev_steps.jsonl.gz")
    rows = [(u, item) for u, unit in enumerate(items) for item in unit]
    assert len(rows) == len(steps) == 2262
    src = shared_dir / "corpora" / "sources" / "github"
    contents = [r["content"] for f in GITHUB_FILES for r in _read(src / f)]
    index = [0] * len(units)
    for (u, item), step, content in zip(rows, steps, contents):
        assert units[u].rel == step["input_file"]
        if isinstance(item, Skip):
            assert step["step1"] == item.reason and item.location == f"{step['input_file']}:{step['input_line'] + 1}"
            continue
        r = index[u]
        index[u] += 1
        assert item.key == step["content_hash"] == item.meta["content_hash"]
        label = decided.get((u, r))
        if label == "duplicate_in_chunk":
            assert step["step1"] == label
            continue
        assert step["step1"] == "kept"
        stats = {k: item.meta[k] for k in ("line_count", "max_line_length", "avg_line_length", "alnum_prop")}
        assert stats == step["stats"] and hashlib.sha256(item.text.encode()).hexdigest() == step["cleaned_text_sha256"]
        assert (item.text != content) == step["copyright_strip_changed"] and len(item.text) == step["cleaned_chars"]
        assert step["step2"] == (label or "kept")
        if label:
            continue
        assert rules.count_alpha(item.text) == step["num_alpha"]
        if step["num_tokens"] is not None:
            assert int(tok.count_batch([item.text])[0]) == step["num_tokens"]
        assert step["filter"] == ("kept" if (why := family.keep(item, opts, tok)) is None else f"dropped:{why}")


@pytest.mark.slow
def test_default_mode_then_the_rpv1_github_recipe_selects_the_reference_set(shared_dir: Path, tmp_path: Path) -> None:
    """source (default mode) -> annotate --signals rpv1_code -> tokens --name pythia -> select
    --recipe rpv1-github: exactly the reference's 1,198 files, in its order."""
    docs, attrs, sel = tmp_path / "docs", tmp_path / "attrs", tmp_path / "sel"
    assert main(["source", "github", str(shared_dir / "corpora" / "sources" / "github"), "-o", str(docs), "-q"]) == 0
    assert main(["annotate", str(docs), "-o", str(attrs), "--signals", "rpv1_code", "-q"]) == 0
    assert main(["tokens", str(attrs), "--tokenizer", _tokenizer(shared_dir), "--name", "pythia", "-q"]) == 0
    assert main(["select", str(attrs), "--recipe", "rpv1-github", "-o", str(sel), "-q"]) == 0
    got = [r for f in GITHUB_FILES for r in _read(sel / f)]
    want = _golden(shared_dir, "github_dev.jsonl.gz")
    assert [r["id"] for r in got] == [f"{w['meta']['repo_name']}/{w['meta']['path']}" for w in want]
    # the default mode's block-comment fix changes 4 of these texts (a `/*` inside a string or a
    # line comment); the reference's statistics are those of its own text
    src = shared_dir / "corpora" / "sources" / "github"
    content = {(r["repo_name"], r["path"]): r["content"] for f in GITHUB_FILES for r in _read(src / f)}
    changed = [g for g, w in zip(got, want) if g["text"] != w["text"]]
    assert len(changed) == 4
    for g in changed:
        original = content[g["meta"]["repo_name"], g["meta"]["path"]]
        assert g["text"] == rules.clean_copyright(original, fix_block=True) != rules.clean_copyright(original)
    table = pq.read_table(attrs / "docs", columns=["id", "rpv1_code_avg_line_length__score"])
    by_id = dict(zip(table.column("id").to_pylist(), table.column("rpv1_code_avg_line_length__score").to_pylist()))
    same = [w for g, w in zip(got, want) if g["text"] == w["text"]]
    assert all(by_id[f"{w['meta']['repo_name']}/{w['meta']['path']}"] == w["meta"]["avg_line_length"] for w in same)


# ---------------------------------------------------------------------- cleaning and statistics

GLOB_SCRIPT = ('#!/usr/bin/env python\n# Copyright 2021 The Authors\n\nimport glob\n\n'
               'FILES = glob.glob("src/**/*.js")\nprint(FILES)  # lists */ nothing else\n')
C_FILE = ("/*\n * Copyright (c) 2009-2017 Dave Gamble and cJSON contributors\n */\n\n#include <stdio.h>\n"
          "int main(void) { return 0; }\n")
LINE_COMMENT_FIRST = '// the parser, see /* below */\n/* Copyright 2020 X */\nint x;\n'


def test_block_rule_reference_takes_a_slash_star_in_a_string_default_needs_it_to_begin_a_line() -> None:
    # the reference: `/*` in the glob string opens a "comment" ending at `*/` of "/**/": no
    # copyright there, so the file is final as it is, shebang and copyright line kept
    assert rules.clean_copyright(GLOB_SCRIPT) == GLOB_SCRIPT
    # the default mode: no block comment begins a line, so the line rule drops the leading comments
    assert rules.clean_copyright(GLOB_SCRIPT, fix_block=True) == GLOB_SCRIPT.split("\n\n", 1)[1]
    # a licence header that begins the file: both the same
    assert rules.clean_copyright(C_FILE) == rules.clean_copyright(C_FILE, fix_block=True) == \
        "\n\n#include <stdio.h>\nint main(void) { return 0; }\n"
    bom = "\ufeff" + C_FILE.replace("Copyright", "COPYR\u0130GHT")  # re.IGNORECASE's match, not str.lower()'s
    assert rules.clean_copyright(bom) == rules.clean_copyright(bom, fix_block=True) == "\ufeff" + \
        rules.clean_copyright(C_FILE)
    # a `/*` inside a line comment: the reference keeps the real copyright comment after it
    assert rules.clean_copyright(LINE_COMMENT_FIRST) == LINE_COMMENT_FIRST
    assert rules.clean_copyright(LINE_COMMENT_FIRST, fix_block=True) == "// the parser, see /* below */\n\nint x;\n"


@pytest.mark.parametrize("fix_block", [False, True])
def test_line_rule_is_the_references_in_both_modes(fix_block: bool) -> None:
    """Not fixed in the default mode (docs/sources.md: on the goldens it changes 8 of the
    reference's keep decisions): shebangs, Markdown titles, `#include` lines all go."""
    clean = lambda s: rules.clean_copyright(s, fix_block=fix_block)  # noqa: E731
    assert clean("#!/bin/sh\n# -*- coding: utf-8 -*-\n\necho hi\n") == "echo hi\n"
    assert clean("# Title\n\nSome text.\n") == "Some text.\n"
    assert clean("#include <stdio.h>\nint x;\n") == "int x;\n"
    assert clean("-- SQL comment\nSELECT 1;\n") == "SELECT 1;\n"
    assert clean("  # indented\nx = 1\n") == "  # indented\nx = 1\n"  # an indented first line stops it
    assert clean(" \n# x\n") == " \n# x\n"  # a line of spaces is not empty
    assert clean("# only\n// comments\n\n") == ""


def test_statistics_are_pythons_splitlines_and_float_division() -> None:
    assert rules.code_stats("") == {"line_count": 0, "max_line_length": 0, "avg_line_length": 0, "alnum_prop": 0}
    assert all(type(v) is int for v in rules.code_stats("").values())
    text = "ab\r\ncd\u2028é½\x0cx\n"  # \r\n, U+2028 and \f end lines too; ½ is alnum, not alpha
    assert rules.code_stats(text) == {"line_count": 4, "max_line_length": 2, "avg_line_length": len(text) / 4,
                                      "alnum_prop": 7 / len(text)}
    assert rules.count_alpha(text) == 6
    real = (STDLIB / "json" / "decoder.py").read_text("utf-8")
    assert rules.count_alnum(real) == sum(c.isalnum() for c in real)  # the ASCII fast path
    assert rules.count_alpha(real + "日本") == sum(c.isalpha() for c in real) + 2


def test_whitelist_is_plain_case_sensitive_endswith() -> None:
    ok = ["a/b.py", "foo/Makefile", "Dockerfile", "x.C", "lib.h", "doc.md", "a.smali"]
    not_ok = ["GNUmakefile", "makefile", "x.PY", "README.Md", "a.F90", "b.hxx", "c.txt", "h.y"]
    assert all(rules.whitelisted(p) for p in ok) and not any(rules.whitelisted(p) for p in not_ok)
    assert len(rules.WHITELIST) == 66
    assert [rules.permissive(k) for k in ("mit", "bsd-3-clause", "apache-2.0", "apache-2.0,mit", "gpl-3.0",
                                          "0bsd", "apache-2.0,gpl-3.0", None, "")] == \
        [True, True, True, True, False, False, False, False, False]


# ---------------------------------------------------------------------- licences


def _dist_license(name: str) -> Path:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{name} is not installed")
    files = [f for f in dist.files or [] if is_license_file(f.name) and "dist-info" in str(f)]
    if not files:
        pytest.skip(f"{name} has no licence file in its metadata")
    return Path(str(files[0].locate()))


@pytest.mark.parametrize("dist, key", [("iniconfig", "mit"), ("fsspec", "bsd-3-clause"), ("xxhash", "bsd-2-clause"),
                                       ("trafilatura", "apache-2.0"), ("warcio", "apache-2.0"),
                                       ("tqdm", "mpl-2.0"), ("numpy", "bsd-3-clause")])
def test_licence_files_of_installed_packages(dist: str, key: str) -> None:
    """Real licence files: warcio's Apache text has no title line; numpy's BSD text is followed
    by the licences of what it bundles (a GPL runtime exception among them)."""
    assert detect_license(_dist_license(dist).read_text("utf-8", errors="replace")) == key


def test_pythons_own_licence_and_the_file_names() -> None:
    lic = STDLIB / "LICENSE.txt"
    if not lic.is_file():
        pytest.skip(f"no {lic}")
    assert detect_license(lic.read_text("utf-8")) == "psf-2.0"  # it names the GPL too, later
    assert [is_license_file(n) for n in ("LICENSE", "LICENCE.md", "COPYING.LESSER", "MIT-LICENSE", "license.txt",
                                         "UNLICENSE", "licenses.py", "README.md")] == [True] * 6 + [False] * 2
    assert repo_license([]) is None and repo_license(["no licence here"]) == "other"
    assert repo_license([lic.read_text("utf-8"), "whatever", _MIT]) == "mit,psf-2.0"


_MIT = ("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\nof this "
        "software and associated documentation files (the \"Software\"), to deal\n")


# ---------------------------------------------------------------------- repositories


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of a small pure-Python package (iniconfig) with its real licence, a shell script, a
    certificate, a binary file and a symbolic link, committed to a git repository."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    lic = _dist_license("iniconfig")
    import iniconfig

    pkg = Path(iniconfig.__file__).parent
    repo = tmp_path / "iniconfig"
    shutil.copytree(pkg, repo / "src" / "iniconfig", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(lic, repo / "LICENSE")
    (repo / "tools").mkdir()
    (repo / "tools" / "run.sh").write_text("#!/bin/sh\n# run the tests\n\npython -m pytest \"$@\"\n")
    (repo / "tools" / "run.sh").chmod(0o755)
    (repo / "tests.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    os.symlink("src/iniconfig/__init__.py", repo / "init_link.py")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "remote", "add", "origin", "git@github.com:pytest-dev/iniconfig.git")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "import")
    return repo


def test_a_git_checkout_reads_like_an_export(checkout: Path, tmp_path: Path) -> None:
    res = run_source(SourceConfig("github", [str(checkout)], str(tmp_path / "out"), workers=1, progress=False))
    docs = _read(tmp_path / "out" / "iniconfig.jsonl.gz")
    paths = [d["meta"]["path"] for d in docs]
    assert paths == sorted(paths) and not any(".git" in p.split("/") for p in paths)
    assert "tools/run.sh" in paths and "LICENSE" not in paths
    assert res.left_out == {"binary": 1, "skip_LICENSE": 1, "skip_crt": 1, "symlink": 1}
    init = next(d for d in docs if d["meta"]["path"] == "src/iniconfig/__init__.py")
    meta = init["meta"]
    assert list(meta) == ["content_hash", "timestamp", "source", "line_count", "max_line_length", "avg_line_length",
                          "alnum_prop", "repo_name", "id", "size", "binary", "ref", "path", "mode", "license",
                          "language"]
    assert (meta["repo_name"], meta["ref"], meta["license"], meta["mode"]) == ("pytest-dev/iniconfig",
                                                                              "refs/heads/main", "mit", "33188")
    original = (checkout / "src" / "iniconfig" / "__init__.py").read_bytes()
    assert meta["id"] == _git(checkout, "hash-object", "src/iniconfig/__init__.py").strip()  # the git blob id
    assert meta["size"] == str(len(original)) and meta["content_hash"] == hashlib.md5(original).hexdigest()
    assert init["id"] == "pytest-dev/iniconfig/src/iniconfig/__init__.py"
    assert meta["language"][0]["name"] == "Python" and meta["language"][-1] == {"name": "Shell", "bytes": str(
        (checkout / "tools" / "run.sh").stat().st_size)}
    run = next(d for d in docs if d["meta"]["path"] == "tools/run.sh")
    assert run["meta"]["mode"] == "33261" and run["text"] == 'python -m pytest "$@"\n'  # the reference's line rule


def test_a_tarball_and_a_plain_folder_give_the_same_files(checkout: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "iniconfig-2.0"
    shutil.copytree(checkout, plain, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    tar = tmp_path / "tars" / "iniconfig-2.0.tar.gz"
    tar.parent.mkdir()
    with tarfile.open(tar, "w:gz") as tf:  # GitHub's archive layout: one top folder
        tf.add(plain, arcname="iniconfig-2.0")
    runs = {}
    for name, src in (("git", checkout), ("plain", plain), ("tar", tar)):
        out = tmp_path / f"out-{name}"
        runs[name] = run_source(SourceConfig("github", [str(src)], str(out), workers=1, progress=False))
        shard = next(out.glob("*.jsonl.gz"))
        runs[name] = (shard.name, [(d["meta"]["path"], d["text"], d["meta"]["license"], d["meta"]["mode"],
                                    d["meta"]["repo_name"], d["meta"].get("ref")) for d in _read(shard)],
                      runs[name].left_out)
    assert runs["plain"][0] == runs["tar"][0] == "iniconfig-2.0.jsonl.gz"
    git_files = [row[:4] for row in runs["git"][1]]
    assert [row[:4] for row in runs["plain"][1]] == [row[:4] for row in runs["tar"][1]] == git_files
    assert {row[4:] for row in runs["tar"][1]} == {("iniconfig-2.0", None)} == {row[4:] for row in runs["plain"][1]}
    assert runs["tar"][2] == runs["plain"][2] == runs["git"][2]


def test_a_folder_of_repositories_is_one_unit_each_and_a_changed_file_rereads(checkout: Path, tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    shutil.move(str(checkout), repos / "iniconfig")
    with tarfile.open(repos / "json.tar", "w") as tf:
        tf.add(STDLIB / "json", arcname="json", filter=lambda m: None if "__pycache__" in m.name else m)
    cfg = SourceConfig("github", [str(repos)], str(tmp_path / "out"), workers=1, progress=False)
    res = run_source(cfg)
    assert res.shards_written == ["iniconfig.repo", "json.tar"]
    assert {d["meta"]["repo_name"] for d in _read(tmp_path / "out" / "json.jsonl.gz")} == {"json"}
    assert run_source(cfg).shards_written == []  # unchanged: nothing to do
    (repos / "iniconfig" / "src" / "iniconfig" / "_version.py").write_text("__version__ = '9'\n")
    assert run_source(cfg).shards_written == ["iniconfig.repo", "json.tar"]  # a file deep inside changed


# ---------------------------------------------------------------------- export files and chunks


def _export(path: Path, files: list[str], repo: str = "python/cpython") -> Path:
    """An export file of real rows: standard-library files, BigQuery's columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for rel in files:
            content = (STDLIB / rel).read_text("utf-8")
            fh.write(json.dumps({"repo_name": repo, "id": "0", "size": str(len(content)), "content": content,
                                 "binary": False, "copies": "1", "ref": "refs/heads/main", "path": f"Lib/{rel}",
                                 "mode": "33188", "license": "psf-2.0", "language": [{"name": "Python",
                                                                                      "bytes": "1"}]}) + "\n")
    return path


def test_chunk_lists_decide_in_chunk_or_across_chunks(tmp_path: Path) -> None:
    a = _export(tmp_path / "src" / "github_000.gz", ["json/decoder.py", "json/scanner.py", "json/decoder.py"])
    b = _export(tmp_path / "src" / "github_001.gz", ["json/scanner.py", "json/tool.py"], repo="fork/cpython")
    _export(tmp_path / "src" / "github_002.gz", ["json/tool.py", "json/encoder.py"], repo="other/cpython")
    (tmp_path / "chunk_aa.txt").write_text(f"{a}\n\n{b}\nnot-a-gz-entry.json\n")
    (tmp_path / "chunk_ab.txt").write_text("src/github_002.gz\n")  # relative to the list's folder
    res = run_source(SourceConfig("github", [str(tmp_path / "chunk_aa.txt"), str(tmp_path / "chunk_ab.txt")],
                                  str(tmp_path / "out"), workers=1, progress=False))
    assert res.left_out == {"duplicate_in_chunk": 2, "duplicate_across_chunks": 1}
    assert [d["meta"]["path"] for d in _read(tmp_path / "out" / "github_002.jsonl.gz")] == ["Lib/json/encoder.py"]
    one = run_source(SourceConfig("github", [str(tmp_path / "src")], str(tmp_path / "one"), workers=1,
                                  progress=False))
    assert one.left_out == {"duplicate_in_chunk": 3} and one.documents == res.documents == 4  # one chunk


def test_settings_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    a = _export(tmp_path / "src" / "github_000.gz", ["json/tool.py"])
    (tmp_path / "chunk.txt").write_text(f"{a}\n")
    with pytest.raises(SourceError, match="needs --tokenizer"):
        run_source(SourceConfig("github", [str(a)], str(tmp_path / "o1"), reference="rp_v1"))
    with pytest.raises(SourceError, match="--tokenizer is for --reference rp_v1"):
        run_source(SourceConfig("github", [str(a)], str(tmp_path / "o2"), tokenizer=str(tmp_path)))
    with pytest.raises(SourceError, match="not both"):
        run_source(SourceConfig("github", [str(tmp_path / "chunk.txt"), str(a)], str(tmp_path / "o3")))
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(SourceError, match="is not a GitHub dump"):
        run_source(SourceConfig("github", [str(tmp_path / "x.parquet")], str(tmp_path / "o4")))


def test_a_bad_row_fails_located_or_is_skipped_and_counted(tmp_path: Path) -> None:
    a = _export(tmp_path / "src" / "github_000.gz", ["json/tool.py"])
    with gzip.open(a, "rt") as fh:
        rows = fh.read()
    with gzip.open(a, "wt") as fh:
        fh.write(rows + '{"repo_name": "x", "path": "a.py"}\n{broken\n' + rows)
    with pytest.raises(InputError, match=r"github_000\.gz:2: bad GitHub export row"):
        run_source(SourceConfig("github", [str(a)], str(tmp_path / "fail"), workers=1, progress=False))
    res = run_source(SourceConfig("github", [str(a)], str(tmp_path / "skip"), on_error="skip", workers=1,
                                  progress=False))
    assert res.left_out == {"bad_record": 2, "duplicate_in_chunk": 1} and res.documents == 1


# ---------------------------------------------------------------------- signals


def test_signals_read_the_meta_only_when_shipped_and_parquet_sources_carry_it(tmp_path: Path) -> None:
    from textsieve.signals import REGISTRY
    from textsieve.signals.selection import select_signals
    from textsieve.text.views import BatchViews

    assert not set(select_signals(None)[0]) & set(select_signals("rpv1_code")[0])  # not in `all`
    assert [n for n in REGISTRY if REGISTRY[n].needs_meta] == ["rpv1_code_extension_ok", "rpv1_code_license_ok"]
    texts = ["int x;\n", "print(1)\n", "x\n"]
    metas = [{"id": "a", "meta": {"path": "a.c", "license": "mit"}}, {"path": "b.txt", "license": "gpl-3.0"}, {}]
    views = BatchViews(texts, ["en"] * 3, metas=metas)
    ext, lic = REGISTRY["rpv1_code_extension_ok"].fn(views), REGISTRY["rpv1_code_license_ok"].fn(views)
    assert ext.values.tolist()[:2] == [1, 0] and lic.values.tolist()[:2] == [1, 0]
    assert ext.valid.tolist() == lic.valid.tolist() == [True, True, False]  # no path: null
    assert REGISTRY["rpv1_code_extension_ok"].fn(BatchViews(texts, ["en"] * 3)).valid.tolist() == [False] * 3
    # a Parquet source shard (meta as a struct) read by annotate: the meta travels because it is needed
    a = _export(tmp_path / "src" / "github_000.gz", ["json/tool.py", "json/__init__.py"])
    assert main(["source", "github", str(a), "-o", str(tmp_path / "docs"), "--format", "parquet", "-q",
                 "--workers", "1"]) == 0
    assert main(["annotate", str(tmp_path / "docs"), "-o", str(tmp_path / "attrs"), "--signals",
                 "rpv1_code_extension_ok,rpv1_code_license_ok,rpv1_code_line_count", "-q", "--workers", "1"]) == 0
    table = pq.read_table(tmp_path / "attrs" / "docs" / "github_000.parquet")
    assert table.column("rpv1_code_extension_ok__score").to_pylist() == [1, 1]
    assert table.column("rpv1_code_license_ok__score").to_pylist() == [0, 0]  # psf-2.0: not MIT/BSD/Apache


def test_annotate_ships_meta_to_workers_only_for_a_signal_that_needs_it(tmp_path: Path) -> None:
    from textsieve.io.paths import expand_inputs
    from textsieve.io.readers import ReadOptions, ShardReader
    from textsieve.stages.annotate.annotate import AnnotateConfig
    from textsieve.stages.annotate.shards import batches as _batches

    a = _export(tmp_path / "src" / "github_000.gz", ["json/tool.py"])
    assert main(["source", "github", str(a), "-o", str(tmp_path / "docs"), "-q", "--workers", "1"]) == 0
    shard = expand_inputs([str(tmp_path / "docs")])[0]
    cfg = AnnotateConfig(inputs=[str(tmp_path / "docs")], output=str(tmp_path / "attrs"))
    plain = next(_batches(shard, ShardReader(shard, ReadOptions()), cfg))
    with_meta = next(_batches(shard, ShardReader(shard, ReadOptions()), cfg, with_meta=True))
    assert plain.metas == [] and with_meta.metas[0]["meta"]["path"] == "Lib/json/tool.py"


def test_the_filters_tokenizer_reads_special_token_strings_as_tokens(shared_dir: Path) -> None:
    from textsieve.tokenization.tokenizer import load_tokenizer

    text = "x = '<|endoftext|>'\n"
    as_text, as_token = load_tokenizer(_tokenizer(shared_dir)), load_tokenizer(_tokenizer(shared_dir),
                                                                              special_as_text=False)
    assert as_text.count_batch([text])[0] > as_token.count_batch([text])[0] == 6
