"""KenLM models given by the user: routed by their magic bytes, scored through the `kenlm`
package, equal to textsieve's own ARPA scorer on the same model."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from textsieve.models.kenlm_binary import MAGIC, load_kenlm
from textsieve.models.perplexity import LMTrainConfig, load_arpa, train_lm
from textsieve.models.registry import model_kind_of
from textsieve.text.normalize import normalize


def _topics() -> list[str]:
    from pydoc_data.topics import topics

    return [v for _, v in sorted(topics.items())]


@pytest.fixture(scope="module")
def arpa(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("lm")
    corpus = d / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in _topics()[::2]), encoding="utf-8")
    out = d / "docs.arpa"
    train_lm(LMTrainConfig([str(corpus)], str(d / "docs.tsm"), folds=0, arpa=str(out), progress=False))
    return str(out)


def test_kenlm_binary_files_are_recognised_by_magic(tmp_path):
    path = tmp_path / "en.bin"  # .bin is also fastText's extension: the magic bytes decide
    path.write_bytes(MAGIC + b"\0" * 64)
    assert model_kind_of(str(path)) == "kenlm"
    assert model_kind_of(str(tmp_path / "en.arpa.bin")) == "kenlm"


def test_kenlm_scores_equal_the_arpa_scorer(arpa):
    pytest.importorskip("kenlm", reason="the kenlm package is not installed (pip install 'textsieve[kenlm]')")
    texts = [normalize(t) for t in _topics()[1::2][:40]] + [""]
    ours, ok_ours = load_arpa(arpa).perplexities(texts)
    theirs, ok_theirs = load_kenlm(arpa).perplexities(texts)
    assert (ok_ours == ok_theirs).all() and not ok_theirs[-1]
    # KenLM sums in float32: allow one unit of the last (rounded) digit
    assert abs(ours[ok_ours] - theirs[ok_theirs]).max() <= 0.1 + 1e-4 * ours[ok_ours].max()


def test_annotate_with_a_kenlm_model(arpa, tmp_path):
    pytest.importorskip("kenlm", reason="the kenlm package is not installed (pip install 'textsieve[kenlm]')")
    from textsieve.cli import main

    klm = tmp_path / "docs.klm"  # kenlm reads ARPA text too; .klm routes it to the kenlm kind
    with open(arpa, "rb") as fh:
        klm.write_bytes(fh.read())
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(_topics()[1:20:2])),
                   encoding="utf-8")
    assert main(["annotate", str(src), "-o", str(tmp_path / "o"), "--signals", "rps_doc_word_count",
                 "--models", f"docs={klm}", "--workers", "1", "-q"]) == 0
    table = pq.read_table(tmp_path / "o" / "docs" / "in.parquet")
    got = [s[0]["score"] for s in table.column("ts_perplexity_docs").to_pylist()]
    want, _ = load_kenlm(str(klm)).perplexities([normalize(t) for t in _topics()[1:20:2]])
    assert got == want.tolist() and all(p > 1 for p in got)
    meta = json.loads(pq.read_metadata(tmp_path / "o" / "docs" / "in.parquet").metadata[b"textsieve"])
    assert meta["models"]["docs"]["kind"] == "kenlm"


def test_a_truncated_kenlm_binary_is_one_line_naming_the_file(tmp_path, capsys):
    pytest.importorskip("kenlm", reason="the kenlm package is not installed (pip install 'textsieve[kenlm]')")
    from textsieve.cli import main

    bad = tmp_path / "lm.bin"
    bad.write_bytes(MAGIC + b"\0" + b"cut off here")  # the header, then nothing a loader can read
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "0", "text": _topics()[0]}) + "\n", encoding="utf-8")
    assert main(["annotate", str(src), "-o", str(tmp_path / "o"), "--signals", "rps_doc_word_count",
                 "--models", f"lm={bad}", "-q"]) != 0
    err = capsys.readouterr().err
    assert f"{bad}: kenlm cannot read this KenLM binary model" in err and "Traceback" not in err


def test_without_the_kenlm_module_the_error_says_which_wheel(monkeypatch):
    import sys

    from textsieve.models.kenlm_binary import KenLMLoadError

    monkeypatch.setitem(sys.modules, "kenlm", None)  # `import kenlm` raises ImportError
    with pytest.raises(KenLMLoadError, match=r"textsieve\[kenlm\].*kenlm-ex wheel"):
        load_kenlm("any.bin")
