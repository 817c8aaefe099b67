"""Find runs of values that two series share, up to an affine rescale.

A corpus series must not contain a stretch of a judging series (TSDL) or of a bundled
dataset, even rescaled (another unit, a mean-centred copy such as TSDL's Mauna Loa) or
shifted in time. Two runs of ``RUN`` consecutive values are taken as the same values when

1. their Pearson correlation is above ``MIN_CORR`` in absolute value (a copy ``a·v + b``
   has correlation ±1; rounding to the stored decimals keeps it above 0.999),
2. so is the correlation of their first differences, above ``MIN_DIFF_CORR``: a copy keeps
   the shape of every step, while two smooth stretches (steady growth of GDP and of a
   motorcycle fleet) reach 0.999 on the levels alone, and
3. each run takes at least ``MIN_DISTINCT`` distinct values: a price held at two levels
   and a temperature rounded to 0.1 °F can share a 0/1 pattern by chance, and a flat run
   carries no fingerprint at all.

Every aligned pair of windows is compared: the centred, unit-norm windows of all series are
stacked and multiplied block by block, so a whole corpus is checked in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray

__all__ = ["MIN_CORR", "MIN_DIFF_CORR", "MIN_DISTINCT", "RUN", "Match", "find_shared", "read_values",
           "reference_series"]

#: Shortest shared run that counts (consecutive values).
RUN = 12
#: |correlation| of the levels above which two runs may be the same values rescaled.
MIN_CORR = 0.999
#: |correlation| of the first differences that confirms it.
MIN_DIFF_CORR = 0.99
#: Fewest distinct values a run must take to count.
MIN_DISTINCT = 4
#: Windows per block of the matrix product (bounds memory at about 100 MB per block).
_BLOCK = 1024


@dataclass(frozen=True)
class Match:
    """A pair of windows that counts as shared.

    Attributes
    ----------
    a, b : str
        Names of the two series.
    i, j : int
        0-based start of the window in ``a`` and in ``b``.
    corr, diff_corr : float
        Correlation of the levels and of the first differences (negative for a sign flip).
    """

    a: str
    i: int
    b: str
    j: int
    corr: float
    diff_corr: float


def _unit(w: NDArray[np.float64], keep: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Rows centred and scaled to unit norm; rows not kept (or flat) are zero, so never match."""
    c = w - w.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", c, c))
    keep = keep & (norm > 0)
    out = np.zeros_like(c)
    out[keep] = c[keep] / norm[keep, None]
    return out


@dataclass(frozen=True)
class _Windows:
    names: list[str]
    starts: NDArray[np.int64]   # first row of each series in the stack
    owner: NDArray[np.int64]    # series of each row
    level: NDArray[np.float32]  # unit windows of the values (float32: halves the time, error ~1e-7)
    diff: NDArray[np.float64]   # unit windows of the first differences


def _windows(series: Mapping[str, ArrayLike], run: int) -> _Windows:
    names, levels, diffs, owner, starts = [], [], [], [], []
    count = 0
    for k, (name, values) in enumerate(series.items()):
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or not np.isfinite(v).all():
            raise ValueError(f"{name}: need a 1-d series of finite values")
        names.append(name)
        starts.append(count)
        if len(v) < run:
            continue
        w = sliding_window_view(v, run)
        # Distinct values per window, with a tolerance far below any stored precision.
        tol = 1e-9 * max(float(np.abs(v).max()), 1.0)
        distinct = 1 + (np.diff(np.sort(w, axis=1), axis=1) > tol).sum(axis=1)
        keep = distinct >= MIN_DISTINCT
        levels.append(_unit(w, keep))
        diffs.append(_unit(np.diff(w, axis=1), keep))
        owner.append(np.full(len(w), k))
        count += len(w)
    empty = np.zeros((0, run))
    return _Windows(names, np.array(starts, dtype=np.int64),
                    np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64),
                    (np.vstack(levels) if levels else empty).astype(np.float32),
                    np.vstack(diffs) if diffs else empty[:, 1:])


def find_shared(left: Mapping[str, ArrayLike], right: Mapping[str, ArrayLike] | None = None, *, run: int = RUN,
                min_corr: float = MIN_CORR, min_diff_corr: float = MIN_DIFF_CORR) -> list[Match]:
    """Pairs of series that share a run, with their best-matching windows.

    Parameters
    ----------
    left : mapping of str to array_like of shape (n,)
        Series in time order, by name.
    right : mapping, optional
        Reference series. When omitted, every pair of distinct series of ``left`` is checked.
    run : int
        Window length.
    min_corr, min_diff_corr : float
        Thresholds on |correlation| of the levels and of the first differences.

    Returns
    -------
    list of Match
        At most one per pair of series (the window pair with the largest
        |correlation| of differences), in the order of ``left`` then ``right``.
    """
    a = _windows(left, run)
    b = a if right is None else _windows(right, run)
    best: dict[tuple[int, int], tuple[float, int, int, float]] = {}
    for lo in range(0, len(a.level), _BLOCK):
        hi = min(lo + _BLOCK, len(a.level))
        # Within one mapping compare only with later series: no self-pairs, each pair once.
        first_b = int(np.searchsorted(a.owner, a.owner[lo], side="right")) if right is None else 0
        corr = a.level[lo:hi] @ b.level[first_b:].T
        np.abs(corr, out=corr)
        rows, cols = np.nonzero(corr > min_corr)
        if right is None and len(rows):
            # A block can span two series: drop pairs of a series with itself or an earlier one.
            ok = b.owner[first_b + cols] > a.owner[lo + rows]
            rows, cols = rows[ok], cols[ok]
        if not len(rows):
            continue
        ia, jb = lo + rows, first_b + cols
        dcorr = np.einsum("ij,ij->i", a.diff[ia], b.diff[jb])
        for i, j, dc in zip(ia, jb, dcorr, strict=True):
            if abs(dc) <= min_diff_corr:
                continue
            key = (int(a.owner[i]), int(b.owner[j]))
            if key not in best or abs(dc) > abs(best[key][0]):
                best[key] = (float(dc), int(i), int(j), float(a.level[i].astype(np.float64) @ b.level[j]))
    out = []
    for (ka, kb), (dc, i, j, c) in sorted(best.items()):
        out.append(Match(a.names[ka], i - int(a.starts[ka]), b.names[kb], j - int(b.starts[kb]), c, dc))
    return out


def read_values(path: Path) -> NDArray[np.float64]:
    """The value column of a CSV: ``y`` when present (TSDL, the corpus), else the last column
    (the bundled ``date,<value>`` files); rows with a missing value are dropped."""
    df = pd.read_csv(path)
    col = "y" if "y" in df.columns else df.columns[-1]
    v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    return v[np.isfinite(v)]


def reference_series(folder: Path) -> dict[str, NDArray[np.float64]]:
    """``{file name: values}`` for every series CSV of ``folder``: those whose header is
    ``x,y`` or starts with ``date,`` (``splits.csv`` and result tables are left out)."""
    out = {}
    for p in sorted(Path(folder).glob("*.csv")):
        with open(p, encoding="utf-8") as fh:
            head = fh.readline().strip().lower()
        if head == "x,y" or head.startswith("date,"):
            out[p.name] = read_values(p)
    return out
