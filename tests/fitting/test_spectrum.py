"""Periodogram peaks used to start frequency slots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.fitting.spectrum import periodogram_peaks


@pytest.mark.parametrize("period", [0.05, 0.2, 0.45])
def test_strongest_peak_at_the_true_frequency(period):
    """A noisy sinusoid (irregular x, linear trend) peaks at ω = 2π/period, within one grid step."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(1, 2, 150))
    y = np.sin(2 * math.pi * x / period) + 0.8 * x + 0.1 * rng.standard_normal(150)
    omegas, weights = periodogram_peaks(x, y)
    step = 2 * math.pi / (np.ptp(x) * 5)
    assert abs(omegas[0] - 2 * math.pi / period) <= step
    assert weights[0] == weights.max()
    assert weights.sum() == pytest.approx(1.0)
    assert 1 <= len(omegas) <= 8 and np.all(weights > 0)


def test_two_components_both_found():
    """Two sinusoids give the two strongest peaks, the larger amplitude first."""
    x = np.linspace(1, 2, 200)
    y = 2 * np.sin(2 * math.pi * x / 0.1) + np.sin(2 * math.pi * x / 0.3)
    omegas, _ = periodogram_peaks(x, y, n_peaks=2)
    step = 2 * math.pi / 5
    assert abs(omegas[0] - 2 * math.pi / 0.1) <= step
    assert abs(omegas[1] - 2 * math.pi / 0.3) <= step


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.arange(5.0), np.arange(5.0)),  # fewer than 8 points
        (np.ones(20), np.arange(20.0)),  # no x range
        pytest.param(np.arange(20.0), 3 * np.arange(20.0) + 1, id="linear"),  # nothing left after detrending
        (np.array([]), np.array([])),
    ],
)
def test_no_peaks(x, y):
    """Degenerate inputs give empty arrays, not errors."""
    omegas, weights = periodogram_peaks(x, y)
    assert omegas.size == 0 and weights.size == 0


@pytest.mark.parametrize("n", [3_000, 30_000])
def test_fft_path_finds_a_daily_and_a_weekly_cycle(n):
    """Half-hourly data with a daily (48-step) and a weekly (336-step) cycle, trend and noise:
    above LOMB_SCARGLE_MAX points the FFT path finds both periods, each to a small fraction of a
    step after refinement."""
    from evocov_core.fitting.spectrum import LOMB_SCARGLE_MAX

    assert n > LOMB_SCARGLE_MAX
    rng = np.random.default_rng(1)
    t = np.arange(n, dtype=np.float64)
    y = 0.0002 * t + np.sin(2 * math.pi * t / 48) + 0.6 * np.sin(2 * math.pi * t / 336) + 0.5 * rng.standard_normal(n)
    x = 1.0 + t / (n - 1)  # model units: the training range is [1, 2]
    omegas, weights = periodogram_peaks(x, y)
    periods = 2 * math.pi / omegas * (n - 1)  # in steps
    assert abs(periods[0] - 48) < 0.05
    assert np.min(np.abs(periods - 336)) < 1.0
    assert weights[0] > 0.5 and weights.sum() == pytest.approx(1.0)


def test_fft_path_bounded_memory_on_100k_points():
    """100,000 irregular-ish points (a few gaps): the periodogram stays in tens of megabytes."""
    import tracemalloc

    rng = np.random.default_rng(2)
    t = np.delete(np.arange(100_000, dtype=np.float64), rng.choice(100_000, 500, replace=False))
    y = np.sin(2 * math.pi * t / 288) + 0.3 * rng.standard_normal(t.size)
    tracemalloc.start()
    try:
        omegas, _ = periodogram_peaks(1.0 + t / t.max(), y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert abs(2 * math.pi / omegas[0] * t.max() - 288) < 0.5
    assert peak < 200e6  # the Lomb-Scargle grid alone would be 100,000 × 20,000 floats (16 GB)


def test_lomb_scargle_in_chunks_equals_one_call():
    """The chunked Lomb-Scargle path gives the periodogram of one call (each frequency is independent)."""
    from scipy.signal import lombscargle

    from evocov_core.fitting import spectrum

    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(1, 2, 900))
    y = np.sin(40 * x) + 0.2 * rng.standard_normal(900)
    grid = np.linspace(1, 500, 5000)
    whole = lombscargle(x, y, grid)
    chunked = np.concatenate([lombscargle(x, y, grid[i:i + spectrum._CHUNK])
                              for i in range(0, grid.size, spectrum._CHUNK)])
    assert np.array_equal(whole, chunked)
