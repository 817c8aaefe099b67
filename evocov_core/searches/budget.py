"""The time budget of a search: the share it keeps for the model choice after it.

With ``config.time_budget`` a search stops itself (status ``FINISHED``, ``budget_spent``) when its
share of the budget is spent (its :class:`~evocov_core.searches.clock.Clock`). The share it keeps for
the model choice (:func:`search_share`) grows, on long series where one evaluation is slow, to what
the choice's refits and checks are estimated to cost at this run's seconds per evaluation
(:class:`ChoiceCost`); the :class:`Budget` moves the clock's stop as fits tell it that cost.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult

if TYPE_CHECKING:
    from evocov_core.searches.candidates import Candidates
    from evocov_core.searches.clock import Clock
    from evocov_core.searches.config import SearchConfig

__all__ = [
    "CALIBRATE_ABOVE",
    "CHOICE_EXTRA_EVALS",
    "LONG_CHECK_EVALS",
    "LONG_FINISH_EVALS",
    "SPLIT",
    "Budget",
    "BudgetSplit",
    "ChoiceCost",
    "time_one_evaluation",
    "workers_of",
]

#: Evaluations the model choice costs per candidate beyond its head refit, in units of one
#: full-data likelihood-with-gradient evaluation: the tail score (a posterior on the split),
#: the validity check (a Cholesky or an eigenvalue of K over the data and a forecast grid) and
#: the forecast spread. Measured on taylor (1,000 points): 8-12.
CHOICE_EXTRA_EVALS = 12
#: On a long series (fitted on a subset of data) the same per candidate: the validity check is a
#: Cholesky there (:func:`~evocov_core.searches.select.indefiniteness`), and the origins' forecasts
#: keep the fitted values. Measured on 2,000 fit points of a 20,000-point half-hourly series: 1.3-1.8
#: evaluations (0.35-0.5 s at 0.28 s an evaluation).
LONG_CHECK_EVALS = 3
#: ... and once per run: the returned kernel's forecasts of the test part and from the origins for
#: the forecast combination, the model average's and the result's scores. Measured there: 7-9.
LONG_FINISH_EVALS = 12
#: Above this many training points a budgeted search with a model choice times one evaluation first.
CALIBRATE_ABOVE = 1000


@dataclass(frozen=True)
class BudgetSplit:
    """How a time budget is shared out, the one place its shares live.

    Attributes
    ----------
    search_share : float
        Share of the budget the search itself may use when a model choice follows (``select_top > 1``);
        the rest is the choice's and the calibration's. On long series the choice can take more
        (:meth:`ChoiceCost.reserve`), but never below ``min_search_share``.
    end_share : float
        Share by which the model choice and the calibration end (and the search, without a choice); the
        rest is for the model average's posterior and the result.
    min_search_share : float
        The search keeps at least this share, however slow the choice looks.
    write_reserve : float
        Seconds of a search command's budget kept for writing its result and its summary
        (:mod:`evocov_core.present.cli`).
    """

    search_share: float = 0.88
    end_share: float = 0.97
    min_search_share: float = 0.5
    write_reserve: float = 0.5

    def search_part(self, config: SearchConfig) -> float:
        """Share of ``config``'s budget the search itself may use at least (1 without a budget)."""
        if config.time_budget <= 0:
            return 1.0
        return self.search_share if config.select_top > 1 else self.end_share


#: The split every budgeted search and command uses.
SPLIT = BudgetSplit()


def workers_of(executor: Executor | None) -> int:
    """The executor's workers (1 without one): the rounds a batch of refits takes."""
    return 1 if executor is None else max(1, executor.workers)


def time_one_evaluation(data: FitData) -> float:
    """Seconds of one LML-with-gradient evaluation of SE + PER × SE on ``data`` (the fastest of
    two; a failed evaluation costs what it cost)."""
    from evocov_core.fitting.metrics import loss_and_grad
    from evocov_core.language.library import compose

    kernel = compose(["+", "SE", ["*", "PER", "SE"]])
    z = np.zeros(kernel.n_params + 1)
    z[-1] = math.log(0.1)
    best = math.inf
    for _ in range(2):
        t = time.perf_counter()
        with contextlib.suppress(NUMERIC_ERRORS):
            loss_and_grad("lml", kernel, data, z)
        best = min(best, time.perf_counter() - t)
    return best


class ChoiceCost:
    """What the model choice after a search will cost, at this run's seconds per evaluation.

    Parameters
    ----------
    config : SearchConfig
        Read for ``time_budget``, ``select_top`` and ``max_evals`` (a head refit's cap).
    on_subset : bool
        The search fits a long series' subset of points.
    refits : (int, int)
        The refits the choice makes per candidate, and of the returned kernel for its calibration
        (:func:`~evocov_core.searches.select.choice_refits`).
    workers : int
        Refits run side by side on this many workers.
    """

    def __init__(self, config: SearchConfig, on_subset: bool, refits: tuple[int, int], workers: int = 1) -> None:
        self.time_budget = float(config.time_budget)
        self.share = SPLIT.search_part(config)
        self.top_k = config.select_top
        self.head_evals = config.max_evals
        self.on_subset = on_subset
        self.workers = workers
        self.refits, self.calib_refits = refits
        self.eval_costs: list[float] = []  # seconds per evaluation of full-data fits

    def note(self, fits: Sequence[FitResult | None]) -> None:
        """Fold new full fits' seconds per evaluation into the estimate."""
        self.eval_costs.extend(f.seconds / f.n_evals for f in fits if f is not None and f.n_evals > 0)

    @property
    def eval_seconds(self) -> float:
        """Median seconds per evaluation of the fits so far (NaN before the first)."""
        return float(np.median(self.eval_costs)) if self.eval_costs else math.nan

    def reserve(self, n_candidates: int) -> float:
        """Seconds to keep for the model choice: its share of the budget, or on long series,
        where one evaluation is slow, what its refits and checks are estimated to cost (the
        median seconds per evaluation × the evaluations the choice makes: one head refit per
        candidate, or four with ``choice="refit_origins"``, and four of the returned kernel for
        ``calibration="origins"``, each round of refits spread over the workers, plus the checks of
        :meth:`check_seconds`), at most half the budget. The choice refits the ``n_candidates``
        distinct kernels fitted so far, at most ``select_top``. With fewer than two there is nothing
        to choose and nothing to refit, so the search goes on fitting (on taylor it used to stop at
        60 % of a 60 s budget, keeping the rest for the choice of one kernel, fitted with a single
        evaluation on the fit points)."""
        base = self.time_budget * (1.0 - self.share)
        k = min(self.top_k, n_candidates)
        if self.top_k <= 1 or not self.eval_costs or k < 2:
            return base
        workers = max(1, self.workers)
        rounds = math.ceil(k * self.refits / workers) + math.ceil(self.calib_refits / workers)
        # The choice must end by SPLIT.end_share of the budget, not at its end.
        estimate = (self.eval_seconds * rounds * self.head_evals + self.check_seconds(k)
                    + self.time_budget * (1.0 - SPLIT.end_share))
        return min(max(base, estimate), self.time_budget * (1.0 - SPLIT.min_search_share))

    def check_seconds(self, k: int) -> float:
        """Seconds the model choice's checks of ``k`` candidates take beyond their refits (and on
        a long series what the run does once after them)."""
        evals = k * LONG_CHECK_EVALS + LONG_FINISH_EVALS if self.on_subset else k * CHOICE_EXTRA_EVALS
        return self.eval_seconds * evals

    def check_reserve(self, n_candidates: int) -> float:
        """Seconds to keep for the checks alone of ``n_candidates`` (at most ``select_top``): what
        promotions in flight must leave (:meth:`Budget.promote_deadline`)."""
        k = min(self.top_k, n_candidates)
        return min(max(self.time_budget * (1.0 - self.share), self.check_seconds(k)),
                   self.time_budget * (1.0 - SPLIT.min_search_share))


class Budget:
    """The time budget of a search: moves its :class:`~evocov_core.searches.clock.Clock`'s stop so that
    the model choice after it has the time it is estimated to need (:class:`ChoiceCost`).

    Parameters
    ----------
    config : SearchConfig
        Its ``time_budget`` (0: no budget, nothing moves) and the model choice's settings.
    candidates : Candidates
        The model choice's candidates so far: how many the reserve must leave time for.
    clock : Clock
        The search's clock, started with the search.
    data : FitData, optional
        On data of more than :data:`CALIBRATE_ABOVE` points, a budgeted search with a model
        choice times one evaluation first, so that the choice's share is right from the first
        generation.
    executor : Executor, optional
        Its ``workers`` size the reserve.
    refits : (int, int)
        The refits the model choice makes (:class:`ChoiceCost`).
    """

    def __init__(self, config: SearchConfig, candidates: Candidates, clock: Clock, data: FitData | None = None,
                 executor: Executor | None = None, refits: tuple[int, int] = (0, 0)) -> None:
        self.time_budget = float(config.time_budget)
        self.cost = ChoiceCost(config, data is not None and data.on_subset, refits, workers_of(executor))
        self.clock = clock
        self._candidates = candidates
        if (data is not None and data.n > CALIBRATE_ABOVE and self.time_budget > 0 and self.cost.top_k > 1
                and clock.replay is None):
            self.cost.eval_costs.append(time_one_evaluation(data))
            clock.stop_at = clock.t0 + self.time_budget - self.choice_reserve()

    def choice_reserve(self) -> float:
        """Seconds kept for the model choice of the candidates so far (:meth:`ChoiceCost.reserve`)."""
        return self.cost.reserve(len(self._candidates))

    def update_stop(self, fits: Sequence[FitResult | None]) -> None:
        """Fold new full fits' cost per evaluation into the stop time (budgeted runs only)."""
        if self.time_budget <= 0:
            return
        self.cost.note(fits)
        self.clock.stop_at = self.clock.t0 + self.time_budget - self.choice_reserve()

    def promote_deadline(self, n_up: int, deadline: float | None) -> float | None:
        """The deadline of ``n_up`` promotions: early enough for the model choice's checks of the
        candidates they will make, not only of those fitted so far. Fits in flight run to their
        deadline, so on a long series, where a check takes a fraction of a second, the promotions
        of the first generation used to end where the choice had to begin (taylor: 1.05-1.10 of
        the budget)."""
        if deadline is None or self.cost.top_k <= 1 or not self.cost.eval_costs or self.clock.replay is not None:
            return deadline
        stop = self.clock.t0 + self.time_budget - self.cost.check_reserve(len(self._candidates) + n_up)
        return min(deadline, time.time() + (stop - time.perf_counter()))
