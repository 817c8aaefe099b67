"""The bookkeeping every search shares: best so far, records, history, progress reports.

A search is a plain function ``run(data, config, executor, seed, progress, should_stop)``.
After every generation it calls ``progress(Progress)``; it polls ``should_stop()``
between kernel fits and returns the best result so far when asked to stop.

The :class:`Tracker` composes the parts of a budgeted search that do not depend on the algorithm,
each its own unit:

* the **clock** (:class:`~evocov_core.searches.clock.Clock`): when the run stops (out of time,
  cancelled, or where a replayed run stopped);
* the **time budget** (:class:`~evocov_core.searches.budget.Budget`): the share of the budget the
  run keeps for the model choice, which moves the clock's stop;
* the **fit cache** (:class:`~evocov_core.searches.cache.FitCache`, ``config.cache_fits``): a kernel
  fitted before in the run keeps that fit;
* **screening** (:class:`~evocov_core.searches.screening.Screening`, ``config.screen_points``):
  which new kernels are fitted on all the data;
* the model choice's **candidates** (:class:`~evocov_core.searches.candidates.Candidates`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, FitStatus, Start
from evocov_core.language.kernel import Kernel
from evocov_core.searches.budget import SPLIT, Budget, workers_of
from evocov_core.searches.cache import FitCache, fit_key
from evocov_core.searches.candidates import Candidates, better_fit
from evocov_core.searches.clock import Clock
from evocov_core.searches.common import (
    EvalRecord,
    GenerationStats,
    Progress,
    ProgressCallback,
    RunStatus,
    SearchResult,
    StopCheck,
)
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.replay import RunLog
from evocov_core.searches.screening import Batch, Screening
from evocov_core.searches.select import choice_refits

__all__ = ["Tracker", "generation_stats"]


def _mean(values: list[float]) -> float:
    """Mean of finite values; +inf when empty or when it overflows (BICs of wild kernels can be ~1e308)."""
    if not values:
        return math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        m = float(np.mean(values))
    return m if math.isfinite(m) else math.inf


def generation_stats(generation: int, recs: Sequence[EvalRecord], best: FitResult | None, restarted: bool,
                     elapsed: float) -> GenerationStats:
    """The statistics of a generation that fitted ``recs``, ``best`` the best fit of the run so far."""
    finite = [r.bic for r in recs if math.isfinite(r.bic)]
    return GenerationStats(
        generation=generation,
        best_bic=min(finite) if finite else math.inf,
        mean_bic=_mean(finite),
        best_so_far_bic=best.bic if best is not None else math.inf,
        n_evaluated=len(recs),
        n_failed=sum(1 for r in recs if r.status not in (FitStatus.OK, FitStatus.SCREENED_OUT)),
        restarted=restarted,
        elapsed=elapsed,
    )


class Tracker:
    """Bookkeeping shared by the searches (module docstring).

    Parameters
    ----------
    algorithm, total_generations, progress, should_stop, seed
        The search's name and generations, its callbacks and its seed.
    config : SearchConfig
        Its budget, cache, screening and model-choice settings.
    n_train : int
        Training points (screening applies only above ``screen_points``).
    data, executor : optional
        The data and executor of the search: what the budget is sized by; a replay's executor
        makes the run a replay (:class:`~evocov_core.searches.clock.Clock`).
    """

    def __init__(self, algorithm: str, total_generations: int, progress: ProgressCallback | None,
                 should_stop: StopCheck | None, seed: int, *, config: SearchConfig, n_train: int = 0,
                 data: FitData | None = None, executor: Executor | None = None, started: float | None = None) -> None:
        self.algorithm = algorithm
        self.total = total_generations
        self.progress = progress
        self.seed = seed
        self.best: FitResult | None = None
        self.records: list[EvalRecord] = []
        self.history: list[GenerationStats] = []
        self.n_evaluations = 0
        self.restarts = 0
        self.generation = 0
        self._top_k = config.select_top
        self._gen_recs: list[EvalRecord] = []
        self.candidates = Candidates()
        seconds = config.time_budget * SPLIT.search_part(config) if config.time_budget > 0 else math.inf
        self.clock = Clock(seconds, should_stop, executor.replay if executor is not None else None, started=started)
        self.budget = Budget(config, self.candidates, self.clock, data, executor,
                             refits=choice_refits(config, data is not None and data.on_subset))
        self.cache = FitCache(config.cache_fits)
        self.screening = Screening(config, n_train, self.clock, self.budget, self.candidates)

    @property
    def stopped(self) -> bool:
        """Cancelled by the caller or out of time."""
        return self.clock.stopped

    def stop_requested(self) -> bool:
        """The search's own check of the clock (and of a cancel): True once it should stop."""
        return self.clock.stop_requested()

    def evaluate(self, executor: Executor, kernels: Sequence[Kernel], starts: Sequence[Start | None],
                 origins: Sequence[str]) -> list[FitResult | None]:
        """Fit a generation's kernels (each seeded by run seed, generation, index): one fit per kernel,
        None where the run stopped first. A kernel fitted before (or twice in this batch) gets that fit
        with the cache; a kernel screening did not promote gets one with status ``screened_out``, BIC +inf."""
        self.generation += 1
        keys = [fit_key(k, s, o) for k, s, o in zip(kernels, starts, origins, strict=True)]
        batch = Batch(self.seed, self.generation, kernels, starts, origins, keys)
        plan = self.cache.plan(keys)
        self.budget.cost.workers = workers_of(executor)
        outcome = self.screening.fit(executor, batch, plan.todo, self.clock.fit_deadline(), self.best is None)
        new, screen_only = outcome.fits, outcome.screen_only
        recs: list[EvalRecord] = []
        for i in plan.todo:
            f = new.get(i)
            if f is None:
                continue
            self.cache.store(keys[i], f)
            if i not in screen_only:  # (screening fits are counted where they are made)
                self.n_evaluations += 1
                self.best = better_fit(self.best, f)
                self.candidates.note(keys[i], f, origins[i])
            recs.append(EvalRecord.from_fit(f, self.generation, i, origins[i]))
        self.budget.update_stop([new.get(i) for i in plan.todo if i not in screen_only and i not in outcome.folded])
        self.records.extend(recs)
        self._gen_recs = recs
        return plan.fits(new, len(kernels))

    def end_generation(self, restarted: bool = False) -> None:
        """Record the generation's statistics and report its progress."""
        recs = self._gen_recs
        stats = generation_stats(self.generation, recs, self.best, restarted, time.perf_counter() - self.clock.t0)
        if restarted:
            self.restarts += 1
        self.history.append(stats)
        if self.progress is not None:
            self.progress(Progress(self.algorithm, self.generation, self.total, stats, self.best,
                                   self.n_evaluations, self.restarts, stats.elapsed, tuple(recs),
                                   self.budget.time_budget, self.screening.n_fits))

    def result(self, settings: dict | None = None) -> SearchResult:
        """The run so far as a :class:`~evocov_core.searches.common.SearchResult` (before the model choice)."""
        clock = self.clock
        return SearchResult(algorithm=self.algorithm, best=self.best,
                            status=RunStatus.CANCELLED if clock.cancelled else RunStatus.FINISHED,
                            history=tuple(self.history), records=tuple(self.records),
                            n_evaluations=self.n_evaluations, restarts=self.restarts,
                            elapsed=time.perf_counter() - clock.t0, settings=settings or {}, best_bic=self.best,
                            budget_spent=clock.spent, n_screen_fits=self.screening.n_fits,
                            n_cache_hits=self.cache.n_hits, candidates=self.candidates.top(self._top_k),
                            eval_seconds=self.budget.cost.eval_seconds, run_log=RunLog({}, clock.stop_mark))
