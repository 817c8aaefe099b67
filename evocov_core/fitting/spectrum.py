"""Candidate frequencies for periodic hyperparameters, from the data's periodogram.

The LML of a periodic kernel is highly multimodal in its frequency: a local optimiser
only finds the period if it starts within about ``2π/range`` of it. Starting frequency
slots uniformly in log space (as the paper does for all hyperparameters) lands there a
few percent of the time. So new starts for slots that act as ``spectral`` frequencies are
drawn, most of the time, near the peaks of the Lomb-Scargle periodogram of the linearly
detrended training outputs. This is θ-independent data work, done once per data set.

Two estimators, one interface (:func:`periodogram_peaks`):

* up to :data:`LOMB_SCARGLE_MAX` points, the Lomb-Scargle periodogram (uneven sampling as it
  is), evaluated over the frequency grid in chunks so that memory stays about
  ``n × 2048`` floats whatever the grid;
* above it (long, high-frequency series: 17,520 half-hours, 100,000 five-minute readings),
  the outputs are averaged into bins of the median sampling step on a regular grid (empty
  bins interpolated), tapered with a Hann window against leakage, and the periodogram is
  an FFT: O(n log n) time and O(n) memory. Peaks must be a few frequency bins apart, so
  the sidelobes of a strong daily cycle do not crowd out a weekly one.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["LOMB_SCARGLE_MAX", "periodogram_peaks"]

#: Above this many points the periodogram is an FFT of the binned series.
LOMB_SCARGLE_MAX = 2000
#: Frequencies per Lomb-Scargle call (memory ≈ n × this many floats).
_CHUNK = 2048


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
    if x.size > LOMB_SCARGLE_MAX:
        return _fft_peaks(x, resid, h, n_peaks, oversample)
    # scipy.signal is imported here, not with the module: it takes 0.85 s, which every worker
    # process of a search paid at its start (they unpickle the data and never compute a spectrum).
    from scipy.signal import lombscargle

    # Same values as one call (each frequency is independent), in bounded memory.
    power = np.concatenate([lombscargle(x, resid, grid[i:i + _CHUNK]) for i in range(0, grid.size, _CHUNK)])
    interior = (power[1:-1] > power[:-2]) & (power[1:-1] >= power[2:])
    idx = np.flatnonzero(interior) + 1
    if idx.size == 0:
        return np.empty(0), np.empty(0)
    top = idx[np.argsort(power[idx])[::-1][:n_peaks]]
    wts = power[top] / power[top].sum()
    return grid[top], wts


def _fft_peaks(x: NDArray[np.float64], resid: NDArray[np.float64], h: float, n_peaks: int, oversample: int
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Peaks of the FFT periodogram of ``resid`` binned on a grid of step ``h`` (see the module docstring)."""
    x0 = float(x.min())
    idx = np.rint((x - x0) / h).astype(np.intp)
    m = int(idx.max()) + 1
    if m > 50 * x.size:  # a few far outliers in x: the grid would be mostly empty
        keep = idx < 50 * x.size
        idx, resid = idx[keep], resid[keep]
        m = int(idx.max()) + 1
    count = np.bincount(idx, minlength=m)
    total = np.bincount(idx, weights=resid, minlength=m)
    filled = count > 0
    grid = np.arange(m, dtype=np.float64)
    series = np.interp(grid, grid[filled], total[filled] / count[filled])
    series -= series.mean()
    series *= np.hanning(m)
    n_fft = 1 << math.ceil(math.log2(max(16, m * oversample)))
    power = np.abs(np.fft.rfft(series, n_fft)) ** 2
    omega = 2.0 * math.pi * np.fft.rfftfreq(n_fft, d=h)
    span = h * (m - 1)
    # Skip periods longer than twice the span (the trend's leakage) and the zero frequency.
    lo = int(np.searchsorted(omega, 2.0 * math.pi / (2.0 * span)))
    from scipy.signal import find_peaks  # (as lombscargle above)

    # The Hann window's main lobe is 2 resolution bins each side: closer maxima are one peak.
    peaks, _ = find_peaks(power[lo:], distance=max(1, int(2.5 * n_fft / m)))
    if peaks.size == 0:
        return np.empty(0), np.empty(0)
    peaks = peaks + lo
    top = peaks[np.argsort(power[peaks])[::-1][:n_peaks]]
    step = float(omega[1] - omega[0])
    refined = np.array([_refine(x, resid, float(omega[i]), step) for i in top])
    return refined, power[top] / power[top].sum()


def _refine(x: NDArray[np.float64], resid: NDArray[np.float64], omega: float, step: float) -> float:
    """The frequency within one grid step of ``omega`` where the periodogram of the raw
    (unbinned) series peaks: a grid's resolution, 2π/(span·oversample), leaves a long period's
    phase off by hours after a few weeks, and a periodic kernel's likelihood is that narrow."""
    from scipy.optimize import minimize_scalar

    def neg_power(w: float) -> float:
        return -abs(np.sum(resid * np.exp(-1j * w * x))) ** 2

    res = minimize_scalar(neg_power, bounds=(omega - step, omega + step), method="bounded",
                          options={"xatol": step * 1e-4})
    return float(res.x) if res.success and -res.fun >= -neg_power(omega) else omega
