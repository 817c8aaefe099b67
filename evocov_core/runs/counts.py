"""How many fits a search made, named and counted one way everywhere.

A search makes two kinds of fits:

* **kernels fitted**: full fits on every training point the search fits (all of them, or on a
  long series its subset of data). Each has a BIC and, with a test part, a test RMSE; the
  search's ``n_evaluations``. A kernel met again and taken from the cache is not fitted again.
* **screening fits**: quick fits on a small share of the training points that decide which
  candidates of a generation get a full fit (``SearchConfig.screen``). They are not kernels
  fitted: a candidate screened and then promoted counts once in each.

:func:`fit_counts` reads both from whatever holds them (a search result, a live progress report or
job snapshot, a stored run, a row of the run list, a kernel-file document); :meth:`FitCounts.describe`
writes them as the Search page, Results, Runs, the command line and the kernel file say them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KERNELS_FITTED", "KERNELS_FITTED_HELP", "SCREENING_FITS", "SCREENING_FITS_HELP", "FitCounts",
           "count_scores", "fit_counts"]

#: The name of the full fits, on every page and in every file.
KERNELS_FITTED = "kernels fitted"
#: The name of the subset fits that screen candidates.
SCREENING_FITS = "screening fits"
KERNELS_FITTED_HELP = ("Full fits on the training points: each has a BIC and a test RMSE. A kernel met again is "
                       "taken from the cache, not fitted again.")
SCREENING_FITS_HELP = ("Quick fits on a small share of the training points that decide which candidates get a "
                       "full fit; not counted among the kernels fitted.")


def _count(v: object) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if not math.isfinite(v) or v < 0:
        return None
    return int(v)


@dataclass(frozen=True)
class FitCounts:
    """The fits of one search.

    Attributes
    ----------
    kernels_fitted : int
        Full fits (a search's ``n_evaluations``).
    screening_fits : int
        Fits on a subset that screened candidates (0 without screening, or where none were recorded).
    """

    kernels_fitted: int
    screening_fits: int = 0

    def describe(self) -> str:
        """``"48 kernels fitted, 163 screening fits"``: both counts, always both, in this order."""
        return f"{self.kernels_fitted} {KERNELS_FITTED}, {self.screening_fits} {SCREENING_FITS}"

    def to_scores(self) -> dict[str, int]:
        """The counts as a kernel file's scores: ``{"kernels_fitted": 48, "screening_fits": 163}``."""
        return {"kernels_fitted": self.kernels_fitted, "screening_fits": self.screening_fits}


def count_scores(source: Any) -> dict[str, int]:
    """:meth:`FitCounts.to_scores` of :func:`fit_counts` ``(source)``: what a kernel file stores."""
    return fit_counts(source).to_scores()


def _from_mapping(d: Mapping[str, Any]) -> FitCounts:
    """From a kernel-file document, its ``scores``, a run-list row or a stored run's ``extra``."""
    scores = d.get("scores") if isinstance(d.get("scores"), Mapping) else {}
    run = d.get("run") if isinstance(d.get("run"), Mapping) else {}
    extra = d.get("extra") if isinstance(d.get("extra"), Mapping) else {}
    full = None
    for where, key in ((d, "kernels_fitted"), (scores, "kernels_fitted"), (d, "n_evaluations"),
                       (scores, "evaluations"), (run, "evaluations"), (d, "evaluations")):
        full = _count(where.get(key))
        if full is not None:
            break
    screen = None
    for where, key in ((d, "screening_fits"), (scores, "screening_fits"), (d, "n_screen_fits"),
                       (extra, "n_screen_fits"), (run, "screen_fits")):
        screen = _count(where.get(key))
        if screen is not None:
            break
    return FitCounts(full or 0, screen or 0)


def fit_counts(source: Any) -> FitCounts:
    """The fits of a search, from whatever records them.

    Parameters
    ----------
    source
        A :class:`~evocov_core.searches.common.SearchResult` or
        :class:`~evocov_core.searches.common.Progress` (``n_evaluations``, ``n_screen_fits``); a
        :class:`~evocov_core.runs.jobs.JobSnapshot` (the same); a
        :class:`~evocov_core.runs.run_record.RunRecord` (``n_evaluations``, and ``n_screen_fits`` in its
        ``extra``); a row of :meth:`~evocov_core.runs.store.RunStore.list_runs` (a mapping or a named
        tuple with ``n_evaluations`` and ``n_screen_fits``); a kernel-file document, its ``scores``
        or a :class:`~evocov_core.runs.kernel_file.KernelFile` (``kernels_fitted`` and ``screening_fits``;
        older files: ``evaluations`` and the ``run`` record's ``screen_fits``).

    Returns
    -------
    FitCounts
        Missing counts are 0.
    """
    if isinstance(source, Mapping):
        return _from_mapping(source)
    scores = getattr(source, "scores", None)
    if isinstance(scores, Mapping) and not hasattr(source, "n_evaluations"):  # a KernelFile
        run = getattr(source, "run", None)
        return _from_mapping({"scores": scores, "run": run if isinstance(run, Mapping) else {}})
    full = _count(getattr(source, "n_evaluations", None)) or 0
    screen = _count(getattr(source, "n_screen_fits", None))
    if screen is None:
        extra = getattr(source, "extra", None)
        screen = _count(extra.get("n_screen_fits")) if isinstance(extra, Mapping) else None
    return FitCounts(full, screen or 0)
