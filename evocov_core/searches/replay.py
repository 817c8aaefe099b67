"""Reproducible budgeted runs: what a timed search did, and doing it again without a clock.

A time budget makes a run depend on the machine's speed: the clock decides which fits finish,
after how many metric evaluations each fit in flight is cut, and where the search stops. A
:class:`RunLog` records exactly those decisions, and a replay follows the log instead of the
clock:

* **every fit whose result the run used**, by its key (the task's seed tuple, unique within
  a run) with its number of metric evaluations. A replay runs those fits and no other, each
  capped at that many evaluations: where the deadline cut a fit, the cap cuts it at the
  same evaluation (a deadline is checked before each evaluation, and so is the cap); a fit
  that ended by itself ends the same way (``Task.eval_cap``);
* **where the budget ran out**: during which batch of fits the search saw it (``("batch",
  b)``, the b-th call to the executor), or at which of its own checks of the clock
  (``("check", c)``, the c-th). A replay's search stops at the same place.

With the seed and the settings (both in the result file), the replay makes the same random
draws, fits the same kernels with the same evaluations, and returns the same kernel and BIC on
any machine of the same arithmetic (``docs/design.md``, "Same seed, same result": numpy and OpenBLAS
pick their code by the processor, and a last-bit difference can move a fit and then the search).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evocov_core.fitting.optimize import FitResult

if TYPE_CHECKING:
    from evocov_core.fitting.fits import Task

__all__ = ["MAX_LOG_FITS", "RecordingExecutor", "ReplayExecutor", "RunLog"]

#: A result file's log may list at most this many fits (it is untrusted input).
MAX_LOG_FITS = 200_000


@dataclass(frozen=True)
class RunLog:
    """The decisions of a run's clock (module docstring).

    Attributes
    ----------
    fits : mapping of tuple of int to int
        Task seed -> metric evaluations, for every fit whose result the run used.
    stop : tuple of (str, int) or None
        ``("batch", b)`` or ``("check", c)``: where the run's budget ran out; None if it never did.
    """

    fits: Mapping[tuple[int, ...], int] = field(default_factory=dict)
    stop: tuple[str, int] | None = None

    def to_dict(self) -> dict:
        """JSON-friendly: ``{"fits": [[*seed, evaluations], ...], "stop": [kind, index] or null}``."""
        return {"fits": [[*key, n] for key, n in self.fits.items()],
                "stop": list(self.stop) if self.stop is not None else None}

    @classmethod
    def from_dict(cls, d: object) -> RunLog:
        """Validate and read :meth:`to_dict` (from an untrusted file).

        Raises
        ------
        ValueError
            Naming what is malformed.
        """
        if not isinstance(d, dict):
            raise ValueError("the run log must be an object")
        rows = d.get("fits")
        if not isinstance(rows, list) or len(rows) > MAX_LOG_FITS:
            raise ValueError(f"the run log's 'fits' must be a list of at most {MAX_LOG_FITS} entries")
        fits: dict[tuple[int, ...], int] = {}
        for row in rows:
            if (not isinstance(row, list) or not 2 <= len(row) <= 8
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row)):
                raise ValueError("each entry of the run log's 'fits' must be 2-8 non-negative whole numbers")
            fits[tuple(row[:-1])] = row[-1]
        stop = d.get("stop")
        if stop is not None:
            if (not isinstance(stop, list) or len(stop) != 2 or stop[0] not in ("batch", "check")
                    or not isinstance(stop[1], int) or isinstance(stop[1], bool) or stop[1] < 1):
                raise ValueError("the run log's 'stop' must be null or [\"batch\" or \"check\", a positive number]")
            stop = (str(stop[0]), int(stop[1]))
        return cls(fits, stop)


class _Wrapped:
    """An executor around another: same stages and workers; closing it leaves the inner one open."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.stages: frozenset[str] = inner.stages
        self.workers: int = inner.workers
        self.replay: RunLog | None = inner.replay

    def close(self) -> None:
        pass

    def __enter__(self) -> _Wrapped:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingExecutor(_Wrapped):
    """Runs tasks on ``inner`` and records, for each result it returns, the task's seed and the
    fit's evaluations (:attr:`fits`)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.fits: dict[tuple[int, ...], int] = {}

    def map(self, tasks: Sequence[Task], should_stop: Callable[[], bool] | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        out = self.inner.map(tasks, should_stop, on_result)
        for task, fit in zip(tasks, out, strict=True):
            if fit is not None:
                self.fits[tuple(task.seed)] = int(fit.n_evals)
        return out


class ReplayExecutor(_Wrapped):
    """Runs only the tasks of a :class:`RunLog`, each without its deadline and capped at its
    recorded evaluations; every other task gets None, as a task the clock stopped before it ran."""

    def __init__(self, inner: Any, log: RunLog) -> None:
        super().__init__(inner)
        self.replay: RunLog = log

    def map(self, tasks: Sequence[Task], should_stop: Callable[[], bool] | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        keep = [i for i, t in enumerate(tasks) if tuple(t.seed) in self.replay.fits]
        capped = [replace(tasks[i], deadline=None, eval_cap=self.replay.fits[tuple(tasks[i].seed)]) for i in keep]
        out: list[FitResult | None] = [None] * len(tasks)
        results = self.inner.map(capped, should_stop, None) if capped else []
        for i, fit in zip(keep, results, strict=True):
            out[i] = fit
            if on_result is not None and fit is not None:
                on_result(i, fit)
        return out
