"""RPv2-exact MinHash (spec rpv2-signals.md §7): kernels against hashlib/Python ints and goldens."""

from __future__ import annotations

import gzip
import hashlib
import json
import string
import unicodedata
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import pytest
from _shared import SHARED

from textsieve.dedup import minhash as mh
from textsieve.dedup.sha1_kernel import LANES, sha1_digests
from textsieve.text.batch_encoding import encode_batch

P61 = (1 << 61) - 1
M32 = (1 << 32) - 1

GOLDEN = SHARED / "golden"
needs_golden = pytest.mark.skipif(
    not (GOLDEN / "rpv2_signals_dev.jsonl.gz").exists(),
    reason=f"RPv2 golden files not found under {GOLDEN} (set TEXTSIEVE_SHARED)",
)

_PUNCT = str.maketrans("", "", string.punctuation)


@pytest.fixture(params=["native", "numba"])
def backend(request, monkeypatch):
    """Run a test on both signature kernels: the C library (textsieve.native) and numba."""
    if request.param == "numba":
        monkeypatch.setattr(mh, "rpv2_signatures", lambda: None)
    else:
        assert mh.rpv2_signatures() is not None, "the native MinHash kernel was not built at install time"
    return request.param


def normalize(text: str) -> str:
    """§3.2: drop ASCII punctuation, lower, collapse whitespace, NFD."""
    return unicodedata.normalize("NFD", " ".join(text.translate(_PUNCT).lower().split()))


def reference_signature(words: list[str], ngram: int, a: list[int], b: list[int]) -> list[int] | None:
    """§7 in plain Python: hashlib and Python ints with an explicit 2**64 wrap."""
    if len(words) < ngram:
        return None
    shingles = {" ".join(words[i : i + ngram]) for i in range(len(words) - ngram + 1)}
    mins = [M32] * len(a)
    for s in shingles:
        h = int.from_bytes(hashlib.sha1(s.encode("utf-8")).digest()[:4], "little")
        for k in range(len(a)):
            v = (((h * a[k] + b[k]) % 2**64) % P61) & M32
            if v < mins[k]:
                mins[k] = v
    return mins


# ---------------------------------------------------------------------------------------------
# permutations, banding parameters, ids
# ---------------------------------------------------------------------------------------------


def test_permutation_checksum():
    a, b = mh.permutations()
    assert a.dtype == np.uint64 and b.dtype == np.uint64 and a.shape == b.shape == (128,)
    digest = hashlib.sha256(np.stack([a, b]).astype("<u8").tobytes()).hexdigest()
    assert digest == mh.PERM_CHECKSUM == "6a5665743fa1884640a8eb3543348255a90b4dbd55b093f39e3d61ac90eac9e1"
    assert int(a.min()) >= 1 and int(a.max()) < P61 and int(b.max()) < P61
    # the draws interleave: a_0, b_0, a_1, b_1, ...
    rs = np.random.RandomState(42)
    assert int(a[0]) == int(rs.randint(1, P61, dtype=np.uint64))
    assert int(b[0]) == int(rs.randint(0, P61, dtype=np.uint64))
    assert int(a[1]) == int(rs.randint(1, P61, dtype=np.uint64))
    # callers get copies: mutating them must not leak into the cache
    a[0] = 0
    assert int(mh.permutations()[0][0]) != 0


def test_optimal_param_table():
    table = {1.0: (1, 128), 0.9: (5, 25), 0.8: (9, 13), 0.7: (14, 9)}  # §7.3
    for threshold, expected in table.items():
        assert mh.optimal_param(threshold, 128) == expected
        bands, rows = expected
        assert [len(x) for x in mh.band_bytes(np.zeros(128, np.uint32), threshold)] == [4 * rows] * bands


def _exact_optimal_param(t: Fraction, n: int) -> tuple[int, int]:
    """Brute force with exact rational integrals of the expanded polynomials."""

    def integral(lo: Fraction, hi: Fraction, b: int, r: int) -> Fraction:
        # integral of (1 - s**r)**b = sum_j C(b, j) (-1)**j s**(r*j)
        return sum(
            Fraction(comb(b, j) * (-1) ** j, r * j + 1) * (hi ** (r * j + 1) - lo ** (r * j + 1))
            for j in range(b + 1)
        )

    best, opt = None, (0, 0)
    for b in range(1, n + 1):
        for r in range(1, n // b + 1):
            fp = t - integral(Fraction(0), t, b, r)  # integral_0^t 1 - (1 - s^r)^b
            fn = integral(t, Fraction(1), b, r)  # integral_t^1 (1 - s^r)^b
            err = (fp + fn) / 2
            if best is None or err < best:
                best, opt = err, (b, r)
    return opt


@pytest.mark.parametrize("num_perm", [8, 24])
def test_optimal_param_matches_exact_integration(num_perm):
    for t in ("0.5", "0.65", "0.75", "0.85", "0.95"):
        assert mh.optimal_param(float(t), num_perm) == _exact_optimal_param(Fraction(t), num_perm)


def _matrix_product_optimal_param(t: float, n: int) -> tuple[int, int]:
    """`optimal_param` as it was written before it stopped calling LAPACK and BLAS (NumPy's
    ``leggauss`` nodes, ``p @ w``)."""
    bs = np.array([b for b in range(1, n + 1) for _ in range(1, n // b + 1)], dtype=np.float64)
    rs = np.array([r for b in range(1, n + 1) for r in range(1, n // b + 1)], dtype=np.float64)
    x, w = np.polynomial.legendre.leggauss(n // 2 + 8)

    def area(lo: float, hi: float, false_negative: bool) -> np.ndarray:
        s = (hi - lo) / 2.0 * x + (hi + lo) / 2.0
        p = 1.0 - (1.0 - s[None, :] ** rs[:, None]) ** bs[:, None]
        return (hi - lo) / 2.0 * ((1.0 - p if false_negative else p) @ w)

    k = int(np.argmin(0.5 * area(0.0, t, False) + 0.5 * area(t, 1.0, True)))
    return int(bs[k]), int(rs[k])


@pytest.mark.parametrize("num_perm", [64, 128])
def test_optimal_param_equals_the_matrix_product_form(num_perm):
    """The band/row choice is the one NumPy's nodes and the BLAS product gave, on a grid of
    thresholds; and the nodes and weights are NumPy's to a few ulps."""
    x, w = mh.gauss_legendre(num_perm // 2 + 8)
    nx, nw = np.polynomial.legendre.leggauss(num_perm // 2 + 8)
    assert np.allclose(x, nx, rtol=0, atol=1e-15) and np.allclose(w, nw, rtol=0, atol=1e-14)
    for t in np.round(np.arange(0.0, 1.0001, 0.02), 2):
        assert mh.optimal_param(float(t), num_perm) == _matrix_product_optimal_param(float(t), num_perm), t


def test_signature_key():
    assert [mh.signature_key(t) for t in mh.THRESHOLDS] == [
        "signature_sim1.0",
        "signature_sim0.9",
        "signature_sim0.8",
        "signature_sim0.7",
    ]


def test_id_int():
    doc_id = "2023-06/0000/en_head.json.gz/17"
    assert mh.id_int(doc_id) == int.from_bytes(hashlib.sha1(doc_id.encode()).digest()[:8], "little")
    assert 0 <= mh.id_int("é") < 2**64


@needs_golden
def test_id_int_golden():
    lsh = json.loads((GOLDEN / "rpv2_lsh_clusters_dev.json").read_text())
    members = [m for th in lsh["thresholds"].values() for m in th["members"]]
    assert members
    for m in members:
        assert mh.id_int(m["id"]) == m["id_int"]


# ---------------------------------------------------------------------------------------------
# SHA-1 kernel
# ---------------------------------------------------------------------------------------------


def _check_digests(msgs: list[bytes]) -> None:
    buf = np.frombuffer(b"".join(msgs), dtype=np.uint8)
    offsets = np.zeros(len(msgs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(m) for m in msgs])
    want = [hashlib.sha1(m).digest() for m in msgs]
    for multilane in (True, False):
        got = sha1_digests(buf, offsets, multilane)
        assert got.shape == (len(msgs), 20)
        for i, m in enumerate(msgs):
            assert got[i].tobytes() == want[i], (multilane, len(m))


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_sha1_random_lengths():
    rng = np.random.default_rng(1)
    lengths = list(range(301)) * 2 + [55, 56, 63, 64, 65, 119, 120, 127, 128, 183, 184, 1000, 4097]
    rng.shuffle(lengths)  # mixes block counts inside each lane group
    msgs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    _check_digests(msgs)


def test_sha1_block_boundaries_and_buffer_end():
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 3, 4, 5, 55, 56, 57, 63, 64, 65, 119, 120, 121):
        m = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        _check_digests([m])  # the message is the whole buffer: the padding reads hit its end
        _check_digests([b"x" * 7, m])
        _check_digests([m] * (LANES + 3))
    assert sha1_digests(np.zeros(0, np.uint8), np.array([0, 0])).tobytes() == hashlib.sha1(b"").digest()


# ---------------------------------------------------------------------------------------------
# signatures
# ---------------------------------------------------------------------------------------------

_VOCAB = [
    "a", "the", "of", "and", "é", "straße", "naïve", "中文", "日本語", "🙂", "x1", "42",
    "résumé", "ω", "ﬁ", "—", "“quoted”", "word", "lorem", "ipsum",
]  # fmt: skip


def _random_docs(rng: np.random.Generator, n: int) -> list[list[str]]:
    docs = []
    for _ in range(n):
        n_words = int(rng.choice([0, 1, 5, 12, 13, 14, 20, 40, 80]))
        words = []
        for _ in range(n_words):
            u = rng.random()
            if u < 0.8:
                words.append(_VOCAB[int(rng.integers(len(_VOCAB)))])
            else:  # long words give shingles of 3, 4 and more SHA-1 blocks
                words.append("".join(rng.choice(list("abcdefé中"), size=int(rng.integers(5, 60)))))
        if rng.random() < 0.2 and words:  # repeated shingles
            words = (words[:15] * 4)[: len(words) + 10]
        docs.append(words)
    return docs


@pytest.mark.parametrize(
    "ngram, num_perm, seed, n_docs",
    [(13, 128, 42, 40), (1, 16, 7, 25), (3, 64, 1, 25), (13, 200, 42, 10)],
)
def test_signatures_match_python_reference(ngram, num_perm, seed, n_docs, backend):
    rng = np.random.default_rng(ngram * 1000 + num_perm)
    docs = _random_docs(rng, n_docs)
    content, offsets = encode_batch([" ".join(w) for w in docs])
    sig, valid = mh.signatures(content, offsets, ngram=ngram, num_perm=num_perm, seed=seed)
    assert sig.shape == (n_docs, num_perm) and sig.dtype == np.uint32
    assert valid.shape == (n_docs,) and valid.dtype == np.bool_
    a, b = (x.tolist() for x in mh.permutations(num_perm, seed))
    for i, words in enumerate(docs):
        want = reference_signature(words, ngram, a, b)
        assert bool(valid[i]) == (want is not None) == (len(words) >= ngram)
        if want is None:
            assert (sig[i] == M32).all()
        else:
            assert sig[i].tolist() == want, i


def test_signatures_edge_inputs(backend):
    sig, valid = mh.signatures(np.zeros(0, np.uint8), np.array([0], np.int64))
    assert sig.shape == (0, 128) and valid.shape == (0,)
    sig, valid = mh.signatures(np.zeros(0, np.uint8), np.array([0, 0, 0]))
    assert not valid.any() and (sig == M32).all()
    # bytes input, a writeable array, and docs that do not start at 0 all work the same
    text = " ".join(str(i) for i in range(20))
    s1, v1 = mh.signatures(text.encode(), [0, len(text)])
    s2, v2 = mh.signatures(np.frombuffer(("junk" + text).encode(), np.uint8).copy(), [4, 4 + len(text)])
    assert v1[0] and v2[0] and (s1 == s2).all()
    for bad in (" a b", "a b ", "a  b"):
        with pytest.raises(ValueError, match="space"):
            mh.signatures(bad.encode(), [0, len(bad)])
    # a 20-word shingle of 2,000-byte words (32 SHA-1 blocks each) beside short ones
    long_doc = " ".join(["x" * 2000] * 2 + [str(i) for i in range(20)])
    sl, vl = mh.signatures(long_doc.encode(), [0, len(long_doc)], ngram=3)
    a, b = (x.tolist() for x in mh.permutations())
    assert vl[0] and sl[0].tolist() == reference_signature(long_doc.split(), 3, a, b)
    with pytest.raises(ValueError):
        mh.signatures(b"abc", [0, 4])
    with pytest.raises(ValueError):
        mh.signatures(b"abc", [2, 1])


def test_bands_arrow_matches_band_bytes():
    rng = np.random.default_rng(3)
    sig = rng.integers(0, 2**32, size=(7, 128), dtype=np.uint64).astype(np.uint32)
    valid = np.array([True, False, True, True, False, True, True])
    for t in mh.THRESHOLDS:
        arr = mh.bands_arrow(sig, valid, t).to_pylist()
        for i in range(len(valid)):
            assert arr[i] == (mh.band_bytes(sig[i], t) if valid[i] else None)
        assert mh.bands_hex(sig[0], t) == [x.hex() for x in mh.band_bytes(sig[0], t)]
    # big-endian uint32 per value (§7.3)
    assert mh.band_bytes(np.arange(128, dtype=np.uint32), 0.7)[1][:8] == bytes.fromhex("000000090000000a")


# ---------------------------------------------------------------------------------------------
# goldens (original RPv2 code)
# ---------------------------------------------------------------------------------------------


@cache
def _golden(name: str) -> list[dict]:
    with gzip.open(GOLDEN / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@needs_golden
@pytest.mark.parametrize("name", ["rpv2_signals_dev.jsonl.gz", "rpv2_signals_edgecases.jsonl.gz"])
def test_golden_bands(name, backend):
    records = _golden(name)
    norm = [normalize(r["text"]) for r in records]
    content, offsets = encode_batch(norm)
    sig, valid = mh.signatures(content, offsets)
    n_null = 0
    for i, rec in enumerate(records):
        n_words = len(norm[i].split())
        assert bool(valid[i]) == (n_words >= 13), (i, rec["id"])
        for t in mh.THRESHOLDS:
            want = rec["minhash"][mh.signature_key(t)]
            got = mh.bands_hex(sig[i], t) if valid[i] else None
            assert got == want, (i, rec["id"], t)
        n_null += not valid[i]
    if name == "rpv2_signals_dev.jsonl.gz":
        assert len(records) == 2000 and n_null == 10  # golden README §1
