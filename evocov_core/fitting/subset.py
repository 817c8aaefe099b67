"""Which training points a GP conditions on: all of them, or a subset of data on long series.

An exact GP costs O(n³) time and O(n²) memory: about 0.1 s per likelihood with gradient at
n = 1,000 on these machines, and 2.4 GB for one matrix at n = 17,520. Above
``max_points`` training points EvoCov therefore fits and predicts with an **exact GP on a
subset of the data** (Rasmussen & Williams 2006, section 8.3.1, "subset of data"):

* the most recent ``recent`` points, contiguous: the short periods (a daily cycle at 48
  points a day), the local level and the behaviour the forecast starts from, at full
  resolution;
* ``history`` points spread evenly (by position) over the earlier training points: a coarse
  view of the whole history, so that long periods and trends stay visible.

Every stage of a search (screening, full fits, the model choice) works inside this subset,
and a prediction conditions on the same points, so a forecast uses exactly the matrix the
search scored. The rule is a pure function of the number of training points, so a kernel
file that records ``max_points`` reproduces it on the same data. Below ``max_points`` the
GP is exact and nothing here changes anything.

Why this rather than inducing points or structured solvers: the evolved kernels are
arbitrary expression trees, so the general path must work for any kernel the evaluator can
build; inducing points on a grid cannot carry a 48-step cycle over 17,520 points without
thousands of them (see ``docs/long-series.md`` for what was measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEFAULT_MAX_POINTS", "RECENT_SHARE", "TAIL_SHARE", "DataSubset", "plan_subset"]

#: The exact GP's limit unless a caller says otherwise (a search: ``SearchConfig.fit_points``).
DEFAULT_MAX_POINTS = 2000
#: Share of the subset that is the contiguous most recent part.
RECENT_SHARE = 0.75
#: Share of the recent part that the model choice holds out as its validation tail.
TAIL_SHARE = 0.25


@dataclass(frozen=True)
class DataSubset:
    """How many of the training points a fit uses, and which.

    Attributes
    ----------
    n_total : int
        Training points in the data.
    max_points : int
        The limit (0: none, the GP is exact).
    recent : int
        Most recent points kept, contiguous (all of them when exact).
    history : int
        Points kept evenly spread over the earlier ``n_total − recent``.
    """

    n_total: int
    max_points: int
    recent: int
    history: int

    @property
    def exact(self) -> bool:
        """Every training point is used."""
        return self.recent + self.history >= self.n_total

    @property
    def n_used(self) -> int:
        return self.recent + self.history

    def mask(self, x: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Which of the training points (first input column ``x``, any order) are used.

        Parameters
        ----------
        x : ndarray of shape (n_total,)

        Returns
        -------
        ndarray of bool, shape (n_total,)
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.shape[0] != self.n_total:
            raise ValueError(f"this subset is for {self.n_total} training points, got {x.shape[0]}")
        keep = np.zeros(self.n_total, dtype=bool)
        if self.exact:
            keep[:] = True
            return keep
        order = np.argsort(x, kind="stable")
        rank = np.zeros(self.n_total, dtype=bool)
        rank[self.n_total - self.recent:] = True
        earlier = self.n_total - self.recent
        if self.history > 0 and earlier > 0:
            # Evenly spaced positions from the first point to just before the recent part.
            pos = np.unique(np.floor(np.linspace(0, earlier, self.history, endpoint=False)).astype(np.intp))
            rank[pos] = True
        keep[order[rank]] = True
        return keep

    def head_mask(self, x: NDArray[np.float64], split_fraction: float) -> NDArray[np.bool_]:
        """The model choice's head among the used points: all but the last :data:`TAIL_SHARE`
        of the recent part (with an exact GP: all but the last ``split_fraction`` of the x-range).

        Parameters
        ----------
        x : ndarray of shape (n_used,)
            First input column of the used points.
        split_fraction : float
            The exact GP's held-out share of the x-range.
        """
        from evocov_core.data.dataset import split_mask

        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.exact:
            return split_mask(x[:, None], split_fraction)
        tail = max(1, math.ceil(TAIL_SHARE * self.recent))
        head = np.ones(x.shape[0], dtype=bool)
        head[np.argsort(x, kind="stable")[x.shape[0] - tail:]] = False
        return head

    def describe(self) -> str:
        """One line for the Results page, the report and the CLI."""
        if self.exact:
            return f"exact GP on all {self.n_total:,} training points"
        return (f"subset of data: an exact GP on {self.n_used:,} of {self.n_total:,} training points "
                f"(the last {self.recent:,} and {self.history:,} spread over the earlier history)")

    def to_dict(self) -> dict:
        return {"method": "exact" if self.exact else "subset", "n_total": self.n_total,
                "max_points": self.max_points, "recent": self.recent, "history": self.history,
                "description": self.describe()}

    @classmethod
    def from_dict(cls, d: dict) -> DataSubset:
        """From :meth:`to_dict` (a kernel file's ``approximation``); raises ValueError when malformed."""
        try:
            out = cls(int(d["n_total"]), int(d["max_points"]), int(d["recent"]), int(d["history"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed approximation record: {exc}") from None
        if min(out.n_total, out.max_points, out.recent, out.history) < 0 or out.n_used > out.n_total:
            raise ValueError("malformed approximation record: negative or inconsistent counts")
        return out


def plan_subset(n_total: int, max_points: int) -> DataSubset:
    """The subset an exact GP uses for ``n_total`` training points under a limit of ``max_points``.

    Parameters
    ----------
    n_total : int
    max_points : int
        0 (or ≥ ``n_total``): every point.
    """
    if max_points <= 0 or n_total <= max_points:
        return DataSubset(n_total, max(0, max_points), n_total, 0)
    recent = round(RECENT_SHARE * max_points)
    return DataSubset(n_total, max_points, recent, max_points - recent)
