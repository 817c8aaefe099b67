"""The data and optimiser settings each stage of a budgeted search fits on.

=============  ====================================================================
stage          data / settings
=============  ====================================================================
``""``         all the training data / the search's settings (every unscreened fit)
``screen``     a subset of about ``screen_points`` training points (:func:`screen_mask`;
               more recent ones for a long period, :func:`screen_recent`) / the search's settings
``promote``    all the training data / one L-BFGS-B run of half the evaluations from
               the screened values (they are close: a refinement, not a search)
``seed``       all the training data / one L-BFGS-B run from the given values of a long series'
               spectral seed or of an exponential-smoothing seed, unscreened
               (:class:`~evocov_core.searches.screening.Screening`)
``head``       the first ``1 − metric_split`` of the training range / one L-BFGS-B
               run from the full-data values (the model choice's refits)
``origin:o``   the training points up to origin ``o`` (a share of the range) / as ``head``
               (the refits of ``choice = "refit_origins"``, one stage per origin of
               :func:`~evocov_core.searches.validate.origin_windows`)
=============  ====================================================================

A subset has no train-train / train-test split of its own, so on ``screen`` and ``head``
a metric that needs one (:data:`~evocov_core.fitting.metrics.SPLIT_METRICS`: posterior LML,
SoPL, RMSE) is replaced by the LML there; screening ranks by BIC, an LML score, anyway,
and the model choice scores the head's refit by its own tail score.

An executor made with :func:`search_executor` holds all of them, so each worker gets
every data set once per run.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from evocov_core.data.dataset import split_mask
from evocov_core.fitting.fits import Stages, make_executor
from evocov_core.fitting.metrics import SPLIT_METRICS, FitData
from evocov_core.fitting.optimize import OptimConfig
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.select import needs_head_stage, needs_origin_stages
from evocov_core.searches.spectral_seeds import clear_frequencies, may_seed
from evocov_core.searches.validate import origin_stage, origin_windows

__all__ = ["head_refit", "head_stage", "screen_mask", "screen_recent", "screen_subset", "search_executor",
           "search_stages"]


#: The screening subset's recent block covers this many of the data's longest clear period.
SCREEN_CYCLES = 2.0
#: ... but never more than this many points (the cost of a screening fit grows as its cube).
SCREEN_RECENT_MAX = 720


def screen_mask(n: int, m: int, recent: int | None = None) -> NDArray[np.bool_]:
    """Which of ``n`` training points (sorted by x) screening uses.

    ``recent`` of them (default ``m // 2``) are the most recent points, contiguous (short
    periods and the local behaviour the forecast starts from); ``m − m // 2`` more are spread
    evenly over the rest of the range (long trends and periods stay visible).
    """
    mask = np.zeros(n, dtype=bool)
    recent = m // 2 if recent is None else int(recent)
    spread_n = m - m // 2
    if m >= n or recent + spread_n >= n:
        mask[:] = True
        return mask
    mask[n - recent:] = True
    spread = np.unique(np.round(np.linspace(0, n - recent - 1, spread_n)).astype(int))
    mask[spread] = True
    return mask


def screen_recent(data: FitData, m: int) -> int:
    """The screening subset's recent block: ``m // 2`` points, or, on a long series fitted on a
    subset (``data.approximation`` not exact), enough to hold :data:`SCREEN_CYCLES` cycles of its
    longest clear period, at most :data:`SCREEN_RECENT_MAX` points.

    On half-hourly data a block of 120 points is two and a half days: a weekly cycle is
    invisible in it, and the points spread over months of history alias the daily one, so
    screening ranked kernels by how well they fit noise. Periods come from the
    whole training series' periodogram
    (:func:`~evocov_core.searches.spectral_seeds.clear_frequencies`). Series short enough for an
    exact GP keep the block they always had.
    """
    base = m // 2
    step = data.step
    if not data.on_subset or not (np.isfinite(step) and step > 0):
        return base
    periods = [2.0 * np.pi / omega / step for omega in clear_frequencies(data)]  # in sampling steps
    want = int(np.ceil(SCREEN_CYCLES * max(periods, default=0.0)))
    return int(min(max(base, want), SCREEN_RECENT_MAX))


def screen_subset(data: FitData, m: int) -> FitData:
    """The screening subset of ``data`` (:func:`screen_mask` with :func:`screen_recent`'s block), as
    data of its own: ``m`` points, or more on a long series whose recent block holds two cycles."""
    order = np.argsort(data.X[:, 0], kind="stable")
    mask = np.zeros(data.n, dtype=bool)
    mask[order[screen_mask(data.n, m, screen_recent(data, m))]] = True
    return data.subset(mask)


def _refit(optim: OptimConfig, share: float = 1.0) -> OptimConfig:
    """One L-BFGS-B run from the given values (``share`` of the evaluations), no random starts."""
    return dataclasses.replace(optim, n_screen=0, n_restarts=1, max_evals=max(10, round(optim.max_evals * share)))


def _on_subset(optim: OptimConfig) -> OptimConfig:
    """``optim`` for data without a split: LML instead of a metric that needs one."""
    return dataclasses.replace(optim, metric="lml") if optim.metric in SPLIT_METRICS else optim


def search_stages(data: FitData, config: SearchConfig) -> dict[str, tuple[FitData, OptimConfig]]:
    """The stages ``config`` needs on ``data`` (empty for the paper's settings)."""
    optim = config.optim
    stages: dict[str, tuple[FitData, OptimConfig]] = {}
    if 0 < config.screen_points < data.n:
        stages["screen"] = (screen_subset(data, config.screen_points), _on_subset(optim))
    if config.screen_points > 0:
        stages["promote"] = (data, _refit(optim, 0.5))
        if may_seed(data, config.naive_seeds) or config.ets_seeds:
            seed = _refit(optim)
            stages["seed"] = (data, dataclasses.replace(seed, max_evals=config.seed_evals or seed.max_evals))
    if needs_head_stage(data, config):
        stages["head"] = head_stage(data, optim)
    if needs_origin_stages(data, config):
        refit = head_refit(optim)
        for o, head, _ in origin_windows(data):
            stages[origin_stage(o)] = (data.subset(head), refit)
    return stages


def head_refit(optim: OptimConfig) -> OptimConfig:
    """The model choice's refits (at the head, or at the origins): one L-BFGS-B run from the
    given values, on the likelihood where ``optim``'s metric needs a split."""
    return _refit(_on_subset(optim))


def head_stage(data: FitData, optim: OptimConfig) -> tuple[FitData, OptimConfig]:
    """The model choice's refit: the first ``1 − split_fraction`` of the training range (its tail
    as test data, original units) and :func:`head_refit`."""
    head = data.head if data.head is not None else split_mask(data.X, data.split_fraction)
    tail = ~head
    return (data.subset(head, X_test=data.X[tail], y_test=data.y[tail] * data.y_std + data.y_mean),
            head_refit(optim))


def search_executor(data: FitData, config: SearchConfig, *, workers: int | None = None,
                    scheduler: str | None = None, stages: Stages | None = None):
    """An executor for a search with ``config`` on ``data`` (:func:`~evocov_core.fitting.fits.make_executor`)."""
    return make_executor(data, config.optim, workers=workers, scheduler=scheduler,
                         stages=search_stages(data, config) if stages is None else stages)
