"""Fast (RPv2-incompatible) MinHash: kernel == its plain-Python definition, determinism, and
Jaccard estimates on real near-duplicates from the dev corpus."""

from __future__ import annotations

import gzip
import json
import random
from itertools import islice

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from _shared import SHARED

from textsieve.dedup import fast_minhash as fm
from textsieve.dedup import minhash as mh
from textsieve.text.normalize import normalize


@pytest.fixture(params=["native", "numba"])
def backend(request, monkeypatch):
    """Run a test on both kernels: the C library (textsieve.native) and the numba twin."""
    if request.param == "numba":
        monkeypatch.setattr(fm, "native_fast_signatures", lambda: None)
    else:
        assert fm.native_fast_signatures() is not None, "the native kernels were not built at install time"
    return request.param


def _pack(docs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(docs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(d) for d in docs])
    return np.frombuffer(b"".join(docs), dtype=np.uint8), off


def _enc(text: str) -> bytes:
    return normalize(text).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def dev_texts() -> list[str]:
    path = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not path.exists():
        pytest.skip(f"dev corpus not found at {path} (set TEXTSIEVE_SHARED)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in islice(fh, 600)]


def _pydoc_texts() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def test_xxh64_equals_xxhash_package():
    rng = random.Random(7)
    samples = [b"", b"a", b"word", "naïve".encode(), "日本語のテキスト".encode()]
    samples += [bytes(rng.randrange(256) for _ in range(n)) for n in range(0, 100)]
    for s in samples:
        assert fm.xxh64(s) == xxhash.xxh64_intdigest(s), s
    assert fm.xxh64(b"seeded", seed=12345) == xxhash.xxh64_intdigest(b"seeded", seed=12345)


def test_kernel_equals_reference_definition(dev_texts, backend):
    docs = [_enc(t) for t in dev_texts[:120]] + [_enc(t) for t in _pydoc_texts()[:40]]
    docs += [b"", b"too short to sign", b"  leading and   double spaces " + b"w " * 20]
    sig, valid = fm.signatures(*_pack(docs))
    assert (~valid).any() and valid.sum() > 100
    for i, d in enumerate(docs):
        ref = fm.reference_signatures(d)
        if ref is None:
            assert not valid[i] and (sig[i] == 0xFFFFFFFF).all()
        else:
            assert valid[i] and sig[i].tolist() == ref, i


def test_deterministic_and_batch_independent(dev_texts, backend):
    docs = [_enc(t) for t in dev_texts[:200]]
    a, va = fm.signatures(*_pack(docs))
    b, vb = fm.signatures(*_pack(docs))
    assert np.array_equal(a, b) and np.array_equal(va, vb)
    rev, vrev = fm.signatures(*_pack(docs[::-1]))  # other neighbours in the batch
    assert np.array_equal(rev[::-1], a) and np.array_equal(vrev[::-1], va)
    one, _ = fm.signatures(*_pack(docs[5:6]))
    assert np.array_equal(one[0], a[5])
    # the seed is part of the definition
    other, _ = fm.signatures(*_pack(docs[:3]), seed=1)
    assert not np.array_equal(other[va[:3]], a[:3][va[:3]])


def _shingles(doc: bytes) -> set[tuple[bytes, ...]]:
    w = [x for x in doc.split(b" ") if x]
    return {tuple(w[i : i + mh.NGRAM]) for i in range(len(w) - mh.NGRAM + 1)}


def test_jaccard_estimates_on_real_near_duplicates(dev_texts):
    """Edited copies of real documents: the fraction of equal signature values estimates the
    true 13-gram Jaccard without bias and within MinHash's sampling error, like the exact mode."""
    rng = random.Random(3)
    pairs = []
    for text in dev_texts:
        words = normalize(text).split()
        if not 300 <= len(words) <= 3000:
            continue
        edited = list(words)
        for _ in range(rng.randrange(1, max(2, len(words) // 40))):
            j = rng.randrange(len(edited))
            op = rng.random()
            if op < 0.4:
                edited[j] = rng.choice(words)
            elif op < 0.7:
                del edited[j]
            else:
                edited.insert(j, rng.choice(words))
        pairs.append((" ".join(words).encode(), " ".join(edited).encode()))
        if len(pairs) == 120:
            break
    assert len(pairs) >= 60
    docs = [d for p in pairs for d in p]
    true = np.array([len(_shingles(a) & _shingles(b)) / len(_shingles(a) | _shingles(b)) for a, b in pairs])
    assert true.min() < 0.7 and (true < 1.0).mean() > 0.9  # a spread of real similarities
    errors = {}
    for name, fn in (("fast", fm.signatures), ("rpv2", mh.signatures)):
        sig, valid = fn(*_pack(docs))
        assert valid.all()
        est = (sig[0::2] == sig[1::2]).mean(axis=1)
        err = est - true
        sd = np.sqrt(true * (1 - true) / mh.NUM_PERM)
        assert abs(err.mean()) < 0.02, (name, err.mean())  # unbiased
        assert (np.abs(err) <= 4.5 * sd + 1e-9).mean() >= 0.98, name  # binomial-sized errors
        errors[name] = float(np.abs(err).mean())
    assert errors["fast"] < 1.5 * errors["rpv2"] + 0.005, errors


def test_unrelated_documents_do_not_collide(dev_texts):
    docs = [_enc(t) for t in dev_texts[:300]]
    sig, valid = fm.signatures(*_pack(docs))
    s = sig[valid]
    # pairs of different documents share almost no signature values (RPv2 bands need 9+ in a row)
    eq = (s[:100, None, :] == s[None, 100:200, :]).mean(axis=2)
    assert eq.mean() < 0.01


def test_columns_and_incompatibility(dev_texts):
    docs = [_enc(t) for t in dev_texts[:50]] + [b"short doc"]
    buf, off = _pack(docs)
    cols = fm.fast_minhash_columns(buf, off)
    assert list(cols) == ["ts_fastsig_sim1.0", "ts_fastsig_sim0.9", "ts_fastsig_sim0.8", "ts_fastsig_sim0.7"]
    sig, valid = fm.signatures(buf, off)
    rsig, rvalid = mh.signatures(buf, off)
    assert np.array_equal(valid, rvalid)
    for t in mh.THRESHOLDS:
        col = cols[fm.fast_signature_key(t)]
        assert col.type == pa.list_(pa.binary()) and len(col) == len(docs)
        bands, rows = mh.optimal_param(t)
        assert col[len(docs) - 1].as_py() is None
        first = col[0].as_py()
        assert len(first) == bands and all(len(x) == 4 * rows for x in first)
        assert first == mh.band_bytes(sig[0], t)
        assert not set(first) & set(mh.band_bytes(rsig[0], t))  # never comparable to RPv2 bands


def test_bad_input():
    with pytest.raises(ValueError, match="offsets"):
        fm.signatures(np.zeros(4, dtype=np.uint8), np.array([0, 9]))
    with pytest.raises(TypeError, match="uint8"):
        fm.signatures(np.zeros(4, dtype=np.int32), np.array([0, 4]))
