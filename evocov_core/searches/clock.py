"""When a search stops: the end of its time, a cancel by the caller, or in a replay the log's word.

Fits in flight stop at the clock's stop with the best point they reached (``Task.deadline``). A
:class:`~evocov_core.searches.replay.ReplayExecutor` makes the run a replay: it stops where the log
says the timed run stopped, counted in the clock's logical steps (its checks and batches of fits),
not by the time.
"""

from __future__ import annotations

import math
import time

from evocov_core.compute.runners import StopCheck
from evocov_core.fitting.fits import Executor, Task
from evocov_core.fitting.optimize import FitResult
from evocov_core.searches.replay import RunLog

__all__ = ["Clock"]


class Clock:
    """A search's clock, started at construction.

    Parameters
    ----------
    seconds : float
        When the search stops, after the start (+inf: never by the time). The
        :class:`~evocov_core.searches.budget.Budget` moves it (:attr:`stop_at`).
    should_stop : callable, optional
        The caller's cancel.
    replay : RunLog, optional
        The log of the timed run this one replays: stop where it says, not by the time.
    started : float, optional
        The :func:`time.perf_counter` at which the budget began (default: now): a caller that spent part
        of it before the search (a panel's worker fitting the classical members) starts the clock then.

    Attributes
    ----------
    t0, stop_at : float
        ``time.perf_counter()`` at the start and at the stop.
    cancelled, spent : bool
        Cancelled by the caller; out of time (or at the replayed stop).
    stop_mark : tuple of (str, int) or None
        Where the time ran out: the logical step (``("check", n)`` or ``("batch", n)``) a replay stops at.
    """

    def __init__(self, seconds: float = math.inf, should_stop: StopCheck | None = None,
                 replay: RunLog | None = None, started: float | None = None) -> None:
        self.t0 = time.perf_counter() if started is None else started
        self.stop_at = self.t0 + seconds
        self.cancelled = False
        self.spent = False
        self.replay = replay
        self.stop_mark: tuple[str, int] | None = None
        self._should_stop = should_stop
        self._checks = 0
        self._batches = 0

    @property
    def stopped(self) -> bool:
        """Cancelled by the caller or out of time."""
        return self.cancelled or self.spent

    def fit_deadline(self) -> float | None:
        """The stop as wall-clock time (``time.time()``) for :class:`Task`, or None without one."""
        if not math.isfinite(self.stop_at):
            return None
        return time.time() + (self.stop_at - time.perf_counter())

    def cancel_requested(self) -> bool:
        """True once the caller has asked the run to stop."""
        if not self.cancelled and self._should_stop is not None and self._should_stop():
            self.cancelled = True
        return self.cancelled

    def stop_requested(self) -> bool:
        """The search's own check of the clock (and of a cancel): True once it should stop."""
        if self.cancel_requested():
            return True
        self._checks += 1
        if self.replay is not None:
            if self.replay.stop == ("check", self._checks):
                self.spent = True
        elif not self.spent and time.perf_counter() >= self.stop_at:
            self.spent = True
            self.stop_mark = ("check", self._checks)
        return self.spent

    def map(self, executor: Executor, tasks: list[Task]) -> list[FitResult | None]:
        """One batch of fits; the executor polls the clock between them (replay: the log says)."""
        self._batches += 1
        if not tasks:
            return []
        if self.replay is not None:
            out = executor.map(tasks, self.cancel_requested)
            if self.replay.stop == ("batch", self._batches):
                self.spent = True
            return out

        def poll() -> bool:
            if self.cancel_requested():
                return True
            if not self.spent and time.perf_counter() >= self.stop_at:
                self.spent = True
                self.stop_mark = ("batch", self._batches)
            return self.spent

        return executor.map(tasks, poll)
