"""Screening (``config.screen_points``): which of a batch's new kernels are fitted on all the data.

A batch of new kernels is first fitted on a subset of the training points (executor stage
``screen``, see :func:`~evocov_core.searches.stages.search_stages`); the best ``promote_fraction`` of
them by that BIC are fitted on all the data from the values found (stage ``promote``); the others
are recorded with status ``SCREENED_OUT`` and never selected. A long series' seeds
(:data:`~evocov_core.searches.cache.SEEDED`) are not screened: they are fitted on all the data from
their given values (stage ``seed``) before the rest of their batch is screened.

Why the seeds come first: screened together, a first generation of 31 kernels on a 5,000-point
daily series spent 42 of 60 s screening and the seeds' promotions got one evaluation each; and a
seed's values fitted on the screening subset (the recent block and a few points spread over the
years) start its full fit worse than its own: on daily Chicago ridership ``PER(week) + PER(year) +
SE`` reached BIC 1,970 (test RMSE 2.98) from them in 30 evaluations, 1,847 (2.31) from its own.
The seeds' fits then count among the choice's candidates, and their cost in the stop time (the
choice's checks of them), before the others are screened: otherwise, on a short budget, the
screening ran on to the search's first deadline, kept for a choice with nothing to check, and the
choice of the seeds came after it (a 15 s search on 20,000 points took 20 s).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from evocov_core.fitting.fits import Executor, Task
from evocov_core.fitting.optimize import FitResult, FitStatus, Start
from evocov_core.fitting.scoring import PENALTY
from evocov_core.language.kernel import Kernel
from evocov_core.searches.rules import SEEDED

if TYPE_CHECKING:  # the units it works with are given to it (``Tracker`` composes them)
    from evocov_core.searches.budget import Budget
    from evocov_core.searches.candidates import Candidates
    from evocov_core.searches.clock import Clock
    from evocov_core.searches.config import SearchConfig

__all__ = ["Batch", "ScreenOutcome", "Screening"]

# The last element of a task's seed says which fit of a kernel it is (no element: an unscreened fit).
_SCREEN, _FULL, _LAST_RESORT = 1, 2, 3


@dataclass(frozen=True)
class Batch:
    """A generation's kernels, index-aligned with their starts, origins and cache keys.

    Attributes
    ----------
    seed, generation : int
        The run's seed and the generation: with a kernel's index, the seed of its fits.
    kernels : sequence of Kernel
    starts : sequence of Start or None
    origins : sequence of str
        What made each kernel (``seed``, ``random``, a mutation, a seed of :data:`SEEDED`, ...).
    keys : sequence of str
        Their cache keys (:func:`~evocov_core.searches.cache.fit_key`).
    """

    seed: int
    generation: int
    kernels: Sequence[Kernel]
    starts: Sequence[Start | None]
    origins: Sequence[str]
    keys: Sequence[str]

    def task(self, i: int, start: Start | None, stage: str = "", deadline: float | None = None,
             step: int | None = None) -> Task:
        """The fit of kernel ``i`` from ``start``, seeded by (run seed, generation, ``i``[, ``step``])."""
        seed = (self.seed, self.generation, i) if step is None else (self.seed, self.generation, i, step)
        return Task(self.kernels[i].tokens, seed, start, stage=stage, deadline=deadline)


@dataclass(frozen=True)
class ScreenOutcome:
    """The fits of a screened batch.

    Attributes
    ----------
    fits : dict of int to FitResult or None
        Index -> its fit: a full fit, a screened-out one, or a subset fit that failed (None where
        the run stopped first).
    screen_only : frozenset of int
        The indices only fitted on the subset (not counted as evaluations).
    folded : frozenset of int
        Full fits whose cost the stop time already holds (the seeds').
    """

    fits: dict[int, FitResult | None]
    screen_only: frozenset[int]
    folded: frozenset[int]


class Screening:
    """Fits a batch's new kernels: each on all the data, or with screening (``active``: more training
    points than ``screen_points``) on the subset first, the best promoted to full fits (module docstring).

    Parameters
    ----------
    config : SearchConfig
        Read for ``screen_points`` and ``promote_fraction``.
    n_train : int
        Training points: screening applies only above ``screen_points``.
    clock : Clock
        Runs the batches of fits and says when to stop.
    budget : Budget
        The deadlines of the full fits (time for the model choice's checks of what they make).
    candidates : Candidates
        Where the seeds' full fits are offered at once.
    """

    def __init__(self, config: SearchConfig, n_train: int, clock: Clock, budget: Budget,
                 candidates: Candidates) -> None:
        self.active = 0 < config.screen_points < n_train
        self.promote_fraction = float(config.promote_fraction)
        self.n_fits = 0  # screening fits so far
        self._clock = clock
        self._budget = budget
        self._candidates = candidates

    def fit(self, executor: Executor, batch: Batch, todo: Sequence[int], deadline: float | None,
            no_full_fit: bool) -> ScreenOutcome:
        """Fit the kernels ``todo`` of ``batch`` by ``deadline``: without screening each on all the
        data; with it, the seeds among them on all the data, the others screened and the best promoted.

        ``no_full_fit``: the run has no full fit yet, so that if it runs out of time here it still
        makes one (:func:`_last_resort`).
        """
        clock = self._clock
        if not self.active:
            tasks = [batch.task(i, batch.starts[i], deadline=deadline) for i in todo]
            return ScreenOutcome(dict(zip(todo, clock.map(executor, tasks), strict=True)), frozenset(), frozenset())
        seeds = [i for i in todo if batch.origins[i] in SEEDED]
        rest = [i for i in todo if batch.origins[i] not in SEEDED]
        out: dict[int, FitResult | None] = {}
        up: list[int] = []  # fitted on all the data
        if seeds:
            deadline = self._fit_seeds(executor, batch, seeds, deadline, out, up)
        screened: dict[int, FitResult | None] = {}
        if rest and not (seeds and clock.stopped):
            tasks = [batch.task(i, batch.starts[i], "screen", deadline, _SCREEN) for i in rest]
            screened = dict(zip(rest, clock.map(executor, tasks), strict=True))
        self.n_fits += sum(1 for f in screened.values() if f is not None)
        ranked = sorted((i for i, f in screened.items() if f is not None and f.ok),
                        key=lambda i: screened[i].bic)  # type: ignore[union-attr]
        # The seeds count among the kernels a share of which is fitted on all the data.
        n_up = max(1, math.ceil(self.promote_fraction * (len(ranked) + len(up)))) if ranked else 0
        promote = ranked[:max(0, n_up - len(up))]
        for i, sf in screened.items():
            if sf is not None and not sf.ok:
                out[i] = sf  # failed on the subset: a numerical failure, recorded as such
        if promote and not clock.stopped:
            self._promote(executor, batch, promote, screened, deadline, out)
        up += promote
        _screen_out(ranked, screened, out, up)
        promoted_ok = any(out[i].ok for i in up if out.get(i) is not None)  # type: ignore[union-attr]
        if clock.stopped and no_full_fit and not promoted_ok and not clock.cancelled:
            last = [(i, batch.starts[i], "seed") for i in seeds] + [
                (i, screened[i].start(), "promote") for i in ranked]  # type: ignore[union-attr]
            _last_resort(executor, batch, last, out, up)
        return ScreenOutcome(out, frozenset(set(out) - set(up)), frozenset(i for i in seeds if i in out))

    def _fit_seeds(self, executor: Executor, batch: Batch, seeds: list[int], deadline: float | None,
                   out: dict[int, FitResult | None], up: list[int]) -> float | None:
        """Fit the seeds on all the data from their given values, offer them to the choice, fold
        their cost into the stop time; returns the deadline of the screening that follows."""
        budget = self._budget
        dl = budget.promote_deadline(len(seeds), deadline)
        tasks = [batch.task(i, batch.starts[i], "seed", dl, _FULL) for i in seeds]
        for i, f in zip(seeds, self._clock.map(executor, tasks), strict=True):
            if f is not None:
                out[i] = f
                up.append(i)
                self._candidates.note(batch.keys[i], f, batch.origins[i])
        budget.update_stop([out[i] for i in up])
        fresh = self._clock.fit_deadline()
        return fresh if deadline is None or fresh is None else min(deadline, fresh)

    def _promote(self, executor: Executor, batch: Batch, promote: list[int],
                 screened: dict[int, FitResult | None], deadline: float | None,
                 out: dict[int, FitResult | None]) -> None:
        """Fit ``promote`` on all the data from the values their screening found."""
        dl = self._budget.promote_deadline(len(promote), deadline)
        tasks = [batch.task(i, screened[i].start(), "promote", dl, _FULL)  # type: ignore[union-attr]
                 for i in promote]
        for i, f in zip(promote, self._clock.map(executor, tasks), strict=True):
            if f is not None:
                out[i] = f


def _screen_out(ranked: list[int], screened: dict[int, FitResult | None], out: dict[int, FitResult | None],
                up: list[int]) -> None:
    """Record the ranked kernels not promoted as ``SCREENED_OUT`` (BIC +inf, never selected)."""
    for r, i in enumerate(ranked, start=1):
        if i in out or i in up:
            continue
        sf = screened[i]
        assert sf is not None
        out[i] = replace(sf, status=FitStatus.SCREENED_OUT, bic=PENALTY, lml=math.nan, test_rmse=None, n=sf.n,
                         reason=f"screened out: BIC {sf.bic:.2f} on {sf.n} points, rank {r} of {len(ranked)}")


def _last_resort(executor: Executor, batch: Batch, last: list[tuple[int, Start | None, str]],
                 out: dict[int, FitResult | None], up: list[int]) -> None:
    """Out of time (before the promotions or during them) with no full fit in the whole run: still
    give it one, one evaluation at the ``last`` values of each candidate in turn until one can be
    evaluated. (Its own seed key: a replay must not take it for the promotion the clock stopped.)"""
    for i, start, stage in last:
        f = executor.map([batch.task(i, start, stage, time.time(), _LAST_RESORT)])[0]
        out[i] = f
        if i not in up:
            up.append(i)
        if f is not None and f.ok:
            break
