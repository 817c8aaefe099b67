"""What every chart shares: colours, the legend's place, x in display units, and drawing many points
(:func:`minmax_indices` thins what is drawn, never what is fitted; WebGL past :data:`WEBGL_FROM`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evocov_core.data.dataset import Dataset
from evocov_core.data.dates import decimal_years_to_dates

__all__ = ["MAX_DRAWN", "WEBGL_FROM", "drawn_note", "minmax_indices"]

# Horizontal legend above the plot area, clear of the x-axis title.
_LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0)

_COLORS = {"train": "#1f77b4", "test": "#d62728", "mean": "#2ca02c", "band": "rgba(44,160,44,0.18)",
           "front": "#d62728", "other": "#9aa5b1", "base": "#111111"}
_OTHER_COLORS = ("#7f7f7f", "#9467bd", "#ff7f0e", "#8c564b")  # dashed comparison means
_CLASSICAL_COLORS = ("#e377c2", "#17becf", "#bcbd22", "#d62728", "#393b79")  # dashed classical forecasts


def _display_x(ds: Dataset, x: np.ndarray) -> pd.Series | np.ndarray:
    """x for the axis: dates for date data (decimal years -> timestamps), else numbers."""
    if ds.x_kind == "date":
        # Whole microseconds: plotly drops nanoseconds with a warning on every chart.
        return pd.Series(decimal_years_to_dates(x).round("us"))
    return x


# --- drawing many points --------------------------------------------------------------------------

#: Points of one trace above which it is drawn from :func:`minmax_indices` (and with WebGL).
MAX_DRAWN = 4000
#: Points of one trace above which it is drawn with WebGL (``go.Scattergl``), not SVG.
WEBGL_FROM = 1000


def minmax_indices(y: np.ndarray, max_points: int = MAX_DRAWN) -> np.ndarray:
    """Which points of a series (in x order) to draw so that no peak or trough is lost.

    The points are cut into ``max_points // 2`` buckets of consecutive points (a bucket is
    about one pixel column of a chart) and each bucket keeps its lowest and its highest point,
    in x order; the first and the last point are always kept. A line through the kept points
    has the same envelope as the line through all of them: every local extreme of a bucket,
    so the global ones too, is drawn. What is fitted is never thinned, only what is drawn.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Values in x order (NaN are treated as neither lowest nor highest).
    max_points : int
        At most this many indices are returned (at least 4).

    Returns
    -------
    ndarray of int, shape (k,)
        Sorted indices into ``y``, ``k ≤ max(max_points, 2)``; all of them when ``n ≤ max_points``.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, (max(max_points, 4) - 2) // 2)
    edges = np.linspace(0, n, buckets + 1).astype(np.intp)
    lo = np.fmin.reduceat(y, edges[:-1])  # NaN-ignoring minimum of each bucket
    hi = np.fmax.reduceat(y, edges[:-1])
    size = np.diff(edges)
    bucket = np.repeat(np.arange(buckets), size)
    first_min = np.flatnonzero(y == lo[bucket])
    first_max = np.flatnonzero(y == hi[bucket])
    # The first index of each bucket where its minimum (maximum) is reached.
    keep_min = first_min[np.unique(bucket[first_min], return_index=True)[1]]
    keep_max = first_max[np.unique(bucket[first_max], return_index=True)[1]]
    return np.unique(np.concatenate([[0, n - 1], keep_min, keep_max]))


def _scatter(n: int, **kwargs: object) -> go.Scatter | go.Scattergl:
    """A scatter trace of ``n`` points: WebGL from :data:`WEBGL_FROM` points (SVG slows to a crawl)."""
    return go.Scattergl(**kwargs) if n >= WEBGL_FROM else go.Scatter(**kwargs)


def drawn_note(n_drawn: int, n_total: int) -> str:
    """``"drawn: 4,000 of 100,000 points (…)"`` for a chart's caption, or "" when every point is drawn."""
    if n_drawn >= n_total:
        return ""
    per = max(2, round(2 * n_total / max(n_drawn, 1)))
    return (f"drawn: {n_drawn:,} of {n_total:,} points, the lowest and the highest of every {per:,} consecutive "
            "ones, so no peak or trough is lost; only the chart is thinned, never the data fitted")
