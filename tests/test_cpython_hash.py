"""CPython 3.11 `hash()` of str and 2-tuples of str, reproduced independently of this process's seed.

The truth is CPython itself, run as a subprocess under a fixed PYTHONHASHSEED, on strings of all
three PEP 393 kinds (latin-1, UCS-2, UCS-4), lone surrogates, and every length around SipHash's
8-byte block boundary.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from textsieve.models import cpython_hash as ch

needs_311 = pytest.mark.skipif(sys.version_info[:2] != (3, 11) or sys.hash_info.algorithm != "siphash13"
                               or sys.hash_info.width != 64,
                               reason="the truth is a CPython 3.11 (64-bit, siphash13) subprocess")

_PROBE = ("import json, sys; s = json.load(sys.stdin); "
          "print(json.dumps([[hash(x) for x in s], [hash((a, b)) for a, b in zip(s, s[1:])]]))")


def cpython_hashes(strings: list[str], seed: int) -> tuple[list[int], list[int]]:
    out = subprocess.run([sys.executable, "-c", _PROBE], input=json.dumps(strings), capture_output=True,
                         text=True, env={"PYTHONHASHSEED": str(seed)}, check=True)
    uni, bi = json.loads(out.stdout)
    return uni, bi


def sample_strings(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0xA0, 0xFF), (0x100, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF)]
    out = ["", "a", "the", "Wikipedia", "naïve", "日本語", "😀", "a😀", "\u00ff" * 9, "\u0100" * 4, "x" * 8,
           "\ud800", "ab\udfff", "İstanbul", "ς", "_", "..."]
    for kind_chars in ((1, "é"), (2, "ā"), (4, "𝔸")):  # each kind, lengths 1..17 (block edges)
        out += [kind_chars[1] * n_ for n_ in range(1, 18)]
    for _ in range(n):
        k = rng.randint(1, 24)
        lo, hi = rng.choice(ranges)
        # mostly one script, sometimes mixed with ASCII: the kind is set by the largest code point
        out.append("".join(chr(rng.randint(lo, hi)) if rng.random() < 0.7 else chr(rng.randint(0x20, 0x7E))
                           for _ in range(k)))
    return out


@needs_311
@pytest.mark.parametrize("seed", [42, 1, 4294967295])
def test_str_and_tuple_hash_equal_cpython_subprocess(seed):
    strings = sample_strings(400, seed=seed)
    uni, bi = cpython_hashes(strings, seed)
    mine = [ch.str_hash(s, seed) for s in strings]
    assert mine == uni
    assert [ch.tuple_hash([a, b]) for a, b in zip(mine, mine[1:])] == bi
    assert {len(ch.pep393_bytes(s)) // max(len(s), 1) for s in strings if s} == {1, 2, 4}


@needs_311
def test_numba_kernels_equal_cpython_subprocess():
    strings = [s for s in sample_strings(400, seed=7) if s]
    uni, bi = cpython_hashes(strings, 42)
    cps = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lens = np.array([len(s) for s in strings], dtype=np.int64)
    end = np.cumsum(lens)
    k0, k1 = ch.hash_secret(42)
    got = ch.token_hashes(cps, end - lens, end, np.uint64(k0), np.uint64(k1))
    assert [int(x) - (1 << 64) if int(x) >= 1 << 63 else int(x) for x in got] == uni
    tup = [int(ch.tuple2_hash_u(got[i], got[i + 1])) for i in range(len(got) - 1)]
    assert [x - (1 << 64) if x >= 1 << 63 else x for x in tup] == bi
    for buckets in (10000, 7, 1 << 20):
        assert [int(ch.abs_mod_u(h, buckets)) for h in got] == [abs(h) % buckets for h in uni]


def test_hash_secret_is_the_lcg_of_the_seed():
    # seed 0 disables randomization: CPython then uses an all-zero secret
    assert ch.hash_secret(0) == (0, 0)
    k0, k1 = ch.hash_secret(42)
    assert k0 != k1 and k0 < 1 << 64
    with pytest.raises(ValueError, match="PYTHONHASHSEED"):
        ch.hash_secret(1 << 32)


def test_edge_values():
    assert ch.str_hash("") == 0
    assert ch.tuple_hash([]) == hash(())  # not seeded: the same in every 64-bit CPython >= 3.8
    assert ch.bucket(-(1 << 63), 10000) == (1 << 63) % 10000  # abs() of the most negative hash
    assert ch.abs_mod_u(np.uint64(1 << 63), 10000) == (1 << 63) % 10000
