"""`round8` equals Python's `round(x, 8)` bit for bit: its vectorised path (rint of x * 1e8, then
/ 1e8) and the values it leaves to `round` (near a half, large, not finite)."""

from __future__ import annotations

import math

import numpy as np

from textsieve.signals.registry import round8


def _same(got: np.ndarray, values: np.ndarray) -> bool:
    ref = np.array([round(x, 8) for x in values.tolist()], dtype=np.float64)
    return bool(((got.view(np.uint64) == ref.view(np.uint64)) | (np.isnan(got) & np.isnan(ref))).all())


def test_random_ratios_and_scores_round_as_python_does():
    rng = np.random.default_rng(28)
    for values in (rng.random(200_000), rng.random(100_000) * 20 - 10,
                   rng.integers(0, 10**6, 100_000) / rng.integers(1, 10**6, 100_000),
                   (rng.integers(0, 10**9, 100_000) + 0.5) / 1e8, np.arange(2**16) / 2**16):
        assert _same(round8(values), values)


def test_halves_extremes_and_non_finite_values():
    values = np.array([1 / 512, -1 / 512, 3 / 1024, 0.5e-8, 1.5e-8, 2.5e-8, 0.0, -0.0, 1e-9, -1e-9, 7.99999999,
                       8.0, 123456.123456789, 1e300, -1e300, math.inf, -math.inf, math.nan, 5e-324])
    assert _same(round8(values), values)
    assert np.signbit(round8(np.array([-1e-9])))[0]  # -0.0, as round gives
    assert round8(np.zeros((2, 0))).shape == (2, 0)
