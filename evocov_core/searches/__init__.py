"""Kernel searches: EvoCov, Random Search, Go With The First, a GPSS baseline, the mutation explorer.

Each is a plain function ``run_*(data, config, executor, seed=, progress=, should_stop=, started=)``
returning a :class:`~evocov_core.searches.common.SearchResult`. :func:`run_search`
dispatches on ``config.algorithm`` and, when no executor is given, makes one.
"""

from __future__ import annotations

import dataclasses
import math
import time

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.fits import Executor
from evocov_core.fitting.gp import load_fused_loop
from evocov_core.fitting.metrics import FitData
from evocov_core.searches.budget import CHOICE_EXTRA_EVALS, SPLIT
from evocov_core.searches.common import (
    EvalRecord,
    GenerationStats,
    Progress,
    ProgressCallback,
    RunStatus,
    SearchResult,
    StopCheck,
)
from evocov_core.searches.config import ALGORITHM_LABELS, ALGORITHMS, ConfigError, SearchConfig
from evocov_core.searches.evocov import run_evocov
from evocov_core.searches.explore import ExploreResult, NeighbourRatios, explore_mutations, neighbour_ratios
from evocov_core.searches.gpss import run_gpss
from evocov_core.searches.gwtf import run_gwtf
from evocov_core.searches.presets import PRESETS, preset
from evocov_core.searches.random_search import run_random_search
from evocov_core.searches.replay import RecordingExecutor, ReplayExecutor, RunLog
from evocov_core.searches.select import ModelChoice, calibrate_returned, choice_rule, choose_model, needs_head_stage
from evocov_core.searches.stages import head_refit, search_executor, search_stages

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_LABELS",
    "PRESETS",
    "ConfigError",
    "EvalRecord",
    "ExploreResult",
    "GenerationStats",
    "ModelChoice",
    "NeighbourRatios",
    "Progress",
    "RunLog",
    "RunStatus",
    "SearchConfig",
    "SearchResult",
    "explore_mutations",
    "neighbour_ratios",
    "preset",
    "run_evocov",
    "run_gpss",
    "run_gwtf",
    "run_random_search",
    "run_search",
    "search_data",
    "search_executor",
    "search_stages",
]

_RUNNERS = {"evocov": run_evocov, "random": run_random_search, "gwtf": run_gwtf, "gpss": run_gpss}


def search_data(ds: Dataset, config: SearchConfig) -> FitData:
    """The training data a search with ``config`` fits on: the split of ``config.metric_split`` (or, with
    ``config.horizon``, the origins of that horizon: :func:`~evocov_core.fitting.metrics.horizon_origins`) and,
    on long series, the subset of ``config.fit_points`` (:mod:`evocov_core.fitting.subset`)."""
    return FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points,
                                horizon=config.horizon)


def run_search(data: FitData, config: SearchConfig, *, seed: int = 0, executor: Executor | None = None,
               workers: int | None = None, scheduler: str | None = None,
               progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
               replay: RunLog | None = None, started: float | None = None) -> SearchResult:
    """Run ``config.algorithm`` on ``data`` and choose the kernel to return.

    Without ``executor``, one is made for the run with the stages ``config`` needs
    (:func:`~evocov_core.searches.stages.search_executor`: ``scheduler`` -> Dask,
    ``workers=1`` -> serial, else a process pool of ``workers`` or every core) and closed
    afterwards. With ``config.select_top > 1`` the returned ``best`` is chosen by
    :func:`~evocov_core.searches.select.choose_model` among the lowest-BIC kernels (the
    lowest stays in ``best_bic``); with ``config.time_budget`` the whole call, the model
    choice included, ends within the budget plus the time of one metric evaluation.

    A timed run's ``run_log`` (:class:`~evocov_core.searches.replay.RunLog`) records where its
    clock stopped it; ``replay`` (such a log, with the run's settings and seed) reruns it
    without a clock and returns the same kernel and BIC on any machine of the same arithmetic
    (``docs/design.md``, "Same seed, same result").

    ``started``: the :func:`time.perf_counter` at which the caller started the clock of the budget
    (default: now). The forecast stage that runs beside the search is
    :func:`evocov_core.forecast.stage.search_and_forecast`.
    """
    if started is None:
        load_fused_loop(data.n)  # before the clock: a first compile is not the budget's
    t0 = time.perf_counter() if started is None else started
    if executor is not None:
        return _run(data, config, executor, seed, progress, should_stop, t0, replay)
    with search_executor(data, config, workers=workers, scheduler=scheduler) as ex:
        return _run(data, config, ex, seed, progress, should_stop, t0, replay)


def _run(data: FitData, config: SearchConfig, executor: Executor, seed: int, progress: ProgressCallback | None,
         should_stop: StopCheck | None, t0: float, replay: RunLog | None = None) -> SearchResult:
    recorder = RecordingExecutor(ReplayExecutor(executor, replay) if replay is not None else executor)
    result = _search_and_choose(data, config, recorder, seed, progress, should_stop, t0, replay is not None)
    stop = result.run_log.stop if replay is None else replay.stop
    return dataclasses.replace(result, run_log=RunLog(dict(recorder.fits), stop))


def _search_and_choose(data: FitData, config: SearchConfig, executor: Executor, seed: int,
                       progress: ProgressCallback | None, should_stop: StopCheck | None, t0: float,
                       replaying: bool) -> SearchResult:
    if needs_head_stage(data, config) and "head" not in executor.stages:
        raise ValueError("select_top > 1 needs an executor with the 'head' stage: make it with "
                         "search_executor(data, config) or pass search_stages(data, config)")
    result = _RUNNERS[config.algorithm](data, config, executor, seed=seed, progress=progress,
                                        should_stop=should_stop, started=t0)
    if result.status == RunStatus.CANCELLED:
        return result
    deadline = end = None
    refit = head_refit(config.optim)
    # One refit of the returned kernel at its cap of evaluations (calibrate_returned counts the rounds).
    refit_cost = refit.max_evals * result.eval_seconds if math.isfinite(result.eval_seconds) else 0.0
    if config.time_budget > 0 and not replaying:
        end = time.time() + (t0 + SPLIT.end_share * config.time_budget - time.perf_counter())
    if config.select_top <= 1 or len(result.candidates) <= 1:
        if result.best is None or not result.best.ok:
            return result
        calib, scored = calibrate_returned(data, result.best, None, config.calibration, refit, seed, end,
                                           refit_cost, executor, should_stop)
        return dataclasses.replace(result, calibration=calib, origins=scored, elapsed=time.perf_counter() - t0)
    if end is not None:
        # The refits stop early enough for the checks that follow them (long series: seconds).
        checks = len(result.candidates) * CHOICE_EXTRA_EVALS * result.eval_seconds
        deadline = end - (checks if math.isfinite(checks) else 0.0)
    rule = choice_rule(config, data.on_subset)
    choice = choose_model(
        data, result.candidates, executor, seed=seed, deadline=deadline, should_stop=should_stop, rule=rule,
        calibration=config.calibration, refit=refit, end=end, refit_cost=refit_cost,
        form_margin=config.form_margin)
    return dataclasses.replace(result, best=choice.chosen or result.best, selection=choice.rows,
                               ensemble=choice.ensemble, calibration=choice.calibration, origins=choice.origins,
                               elapsed=time.perf_counter() - t0)
