"""Periodogram peaks used to start frequency slots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.spectrum import periodogram_peaks


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
