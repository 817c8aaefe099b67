"""The GP baselines: reference kernels fitted on the user's data, the SE kernel, a GPSS search, fixed structures.

The Results page shows test RMSE next to these; the mutation explorer starts from them; the report
compares a kernel file with the SE and GPSS baselines
(:func:`evocov_core.present.gp_comparison.compare_with_baselines`).
The classical forecasters (AutoETS and the others) are another thing: :mod:`evocov_core.forecast.classical`.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, OptimConfig, fit_kernel
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose, squared_exponential

__all__ = ["BASELINE_POINTS", "baseline_subset", "fit_fixed", "fit_structure", "gpss_baseline", "gpss_config",
           "refine", "se_baseline"]

#: Above this many training points the SE and GPSS baselines search on a subset of this size
#: and refine their winner on all the data (:func:`baseline_subset`, :func:`refine`). On the
#: 2,000 points of a long series one likelihood with gradient costs 0.26 s, so the GPSS
#: baseline's first level took 132 s of a 20 s budget, and the SE fit 33 s
#: (``bench/results/bench_dashboard_long.md``). The cost grows as the cube of the points: on
#: that series' subset (922 points, :func:`baseline_subset`) one evaluation costs about a tenth.
BASELINE_POINTS = 500
#: Evaluations of the one L-BFGS-B run that refines a baseline found on the subset.
REFINE_EVALS = 30


def fit_fixed(kernel: Kernel, data: FitData, *, seed: int = 0, metric: str = "lml", n_restarts: int = 5,
              max_evals: int = 200) -> FitResult:
    """Fit one kernel with a generous budget (a reference, not a search candidate)."""
    cfg = OptimConfig(metric=metric, n_restarts=n_restarts, max_evals=max_evals)
    return fit_kernel(kernel, data, cfg, np.random.default_rng(seed))


def baseline_subset(data: FitData, points: int | None = None) -> FitData | None:
    """The points a baseline searches on when ``data`` has more than ``points`` of them; else None.

    The search's screening subset (:func:`~evocov_core.searches.stages.screen_subset`): the most
    recent points, contiguous (on a long series enough for two of its longest clear period,
    :func:`~evocov_core.searches.stages.screen_recent`), and ``points − points // 2`` spread over
    the earlier range. Values fitted there mean the same on ``data`` (same step, span, units).

    Parameters
    ----------
    data : FitData
        The ``n`` training points the baselines are scored on.
    points : int, optional
        Default :data:`BASELINE_POINTS`.

    Returns
    -------
    FitData or None
        Of at most ``points − points // 2 + SCREEN_RECENT_MAX`` points, without a split.
    """
    from evocov_core.searches.stages import screen_subset

    points = BASELINE_POINTS if points is None else int(points)
    return None if data.n <= points else screen_subset(data, points)


def refine(fit: FitResult, data: FitData, optim: OptimConfig, *, seed: int = 0) -> FitResult:
    """``fit`` (made on a subset) continued on ``data``: one L-BFGS-B run of at most
    :data:`REFINE_EVALS` evaluations from its values, so that its BIC, tail score and forecast
    are those of the same points as the kernel it is compared with. A failed ``fit`` is returned
    as it is."""
    if not fit.ok:
        return fit
    cfg = dataclasses.replace(optim, n_screen=0, n_restarts=1, max_evals=REFINE_EVALS)
    return fit_kernel(fit.kernel, data, cfg, np.random.default_rng(seed), fit.start())


def se_baseline(data: FitData, *, seed: int = 0, points: int | None = None) -> FitResult:
    """The SE kernel (``θ0² exp(−r²/2)``) fitted by LML: the benchmark's ``SE`` column.

    With more than ``points`` (default :data:`BASELINE_POINTS`) training points it is fitted
    on :func:`baseline_subset` and :func:`refine`-d on all of ``data``; the result is a fit on
    ``data`` either way.
    """
    small = baseline_subset(data, points)
    if small is None:
        return fit_fixed(squared_exponential(), data, seed=seed)
    return refine(fit_fixed(squared_exponential(), small, seed=seed), data, OptimConfig(metric="lml"), seed=seed)


def fit_structure(expr: str | list, data: FitData, *, seed: int = 0, metric: str = "lml") -> FitResult:
    """Fit a GPSS-style structure (e.g. a published GPSS preset) on these data."""
    return fit_fixed(compose(expr), data, seed=seed, metric=metric)


def gpss_config():
    """The GPSS baseline's settings: the ``quick`` preset's GPSS, levels not timed, the lowest BIC returned."""
    from evocov_core.searches import preset

    return preset("quick", "gpss", time_budget=0.0, select_top=1)


def gpss_baseline(data: FitData, budget: float, *, seed: int = 0, workers: int | None = 1):
    """The project's GPSS search (``preset("quick", "gpss")``) returning its lowest-BIC kernel.

    The budget is checked *between* levels: a level started is finished, so the result does
    not depend on where the clock stopped inside a level. A new level starts only when the
    time spent plus 1.5 times the last level's (levels grow: on Airline 4, 9, 22, 35
    candidates) fits in the budget, so the search ends near it. Same data and seed, same
    kernel, unless that prediction falls right on the budget. GPSS's own answer is the
    lowest BIC (``select_top = 1``).

    Returns
    -------
    SearchResult
    """
    from evocov_core.searches import run_search

    config = gpss_config()
    t0 = time.perf_counter()
    last = [t0]
    spent = [False]

    def after_level(_progress: object) -> None:
        now = time.perf_counter()
        spent[0] = (now - t0) + 1.5 * (now - last[0]) > budget
        last[0] = now

    return run_search(data, config, seed=seed, workers=workers, progress=after_level, should_stop=lambda: spent[0])


