"""Candidate frequencies for periodic hyperparameters, from the data's periodogram.

The LML of a periodic kernel is highly multimodal in its frequency: a local optimiser
only finds the period if it starts within about ``2π/range`` of it. Starting frequency
slots uniformly in log space (as the paper does for all hyperparameters) lands there a
few percent of the time. So new starts for slots that act as ``spectral`` frequencies are
drawn, most of the time, near the peaks of the Lomb-Scargle periodogram of the linearly
detrended training outputs (which handles uneven sampling). This is θ-independent data
work, done once per data set.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.signal import lombscargle

__all__ = ["periodogram_peaks"]


def periodogram_peaks(x: NDArray[np.float64], y: NDArray[np.float64], *, n_peaks: int = 8,
                      oversample: int = 5) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Angular frequencies of the strongest periodogram peaks, and their weights.

    Parameters
    ----------
    x : ndarray of shape (n,)
        Inputs (model units; the first input dimension for d > 1).
    y : ndarray of shape (n,)
    n_peaks : int
    oversample : int
        Frequency grid step is ``2π / (range · oversample)``.

    Returns
    -------
    omegas : ndarray of shape (k,)
        Peak angular frequencies, strongest first (k ≤ n_peaks; empty when none).
    weights : ndarray of shape (k,)
        Peak powers normalised to sum 1.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    span = float(np.ptp(x)) if x.size else 0.0
    gaps = np.diff(np.unique(x))
    if x.size < 8 or span <= 0 or gaps.size == 0:
        return np.empty(0), np.empty(0)
    h = float(np.median(gaps))
    w_min = 2.0 * math.pi / (2.0 * span)
    w_max = math.pi / h
    step = 2.0 * math.pi / (span * oversample)
    n_grid = int(min(20000, max(16, (w_max - w_min) / step)))
    grid = np.linspace(w_min, w_max, n_grid)
    resid = y - np.polyval(np.polyfit(x, y, 1), x)
    if float(np.std(resid)) <= 1e-9 * max(float(np.std(y)), 1e-300):  # a straight line: rounding only
        return np.empty(0), np.empty(0)
    power = lombscargle(x, resid, grid)
    interior = (power[1:-1] > power[:-2]) & (power[1:-1] >= power[2:])
    idx = np.flatnonzero(interior) + 1
    if idx.size == 0:
        return np.empty(0), np.empty(0)
    top = idx[np.argsort(power[idx])[::-1][:n_peaks]]
    wts = power[top] / power[top].sum()
    return grid[top], wts
