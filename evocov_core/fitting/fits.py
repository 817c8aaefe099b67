"""Kernel-fit executors: :class:`Task`\\ s fitted on top of a runner, each with its own seed.

They run on the runners of :mod:`evocov_core.compute.runners`:
:class:`SerialExecutor`, :class:`ProcessExecutor`, :class:`DaskExecutor`, :func:`make_executor`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from evocov_core.compute.runners import DaskRunner, PoolRunner, Runner, SerialRunner, StopCheck, _Closes
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, OptimConfig, Start, fit_kernel
from evocov_core.language.kernel import Kernel

__all__ = ["DaskExecutor", "Executor", "ProcessExecutor", "SerialExecutor", "Stages", "Task", "make_executor",
           "run_task"]


# --- kernel-fit executors ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One kernel to fit.

    Attributes
    ----------
    tokens : tuple of str
        The kernel tree.
    seed : tuple of int
        Entropy for this task's ``numpy.random.SeedSequence``.
    start : Start or None
        Inherited or current hyperparameter values.
    stage : str
        Which of the executor's data/settings pairs to fit on (``""``: the main one).
    deadline : float or None
        Wall-clock time (``time.time()``) at which the fit returns its best point so far.
    eval_cap : int or None
        Metric evaluations after which it does (a replayed timed fit, see
        :mod:`evocov_core.searches.replay`).
    """

    tokens: tuple[str, ...]
    seed: tuple[int, ...]
    start: Start | None = None
    stage: str = ""
    deadline: float | None = None
    eval_cap: int | None = None


Stages = Mapping[str, tuple[FitData, OptimConfig]]


def run_task(data: FitData, config: OptimConfig, task: Task) -> FitResult:
    """Fit one task's kernel on ``data`` with ``config`` (pure but for the deadline)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(task.seed)))
    return fit_kernel(Kernel(task.tokens), data, config, rng, task.start, deadline=task.deadline,
                      eval_cap=task.eval_cap)


def _contexts(data: FitData, config: OptimConfig, stages: Stages | None) -> dict[str, tuple[FitData, OptimConfig]]:
    ctx = {"": (data, config)}
    for name, pair in (stages or {}).items():
        if not name:
            raise ValueError("a stage needs a non-empty name")
        ctx[name] = pair
    return ctx


def _run_in(contexts: Mapping[str, tuple[FitData, OptimConfig]], task: Task) -> FitResult:
    try:
        data, config = contexts[task.stage]
    except KeyError:
        raise ValueError(f"this executor has no stage {task.stage!r} (it has {sorted(contexts)})") from None
    return run_task(data, config, task)


class Executor(Protocol):
    """Runs tasks for one search run. Use as a context manager.

    Attributes
    ----------
    stages : frozenset of str
        The stages it can fit tasks on, beside the full data (``"head"``, ``"origin:0.9"``...).
    workers : int
        Tasks it runs side by side.
    replay : object or None
        The log of a timed run that it replays (:class:`~evocov_core.searches.replay.RunLog`), else None.
    """

    stages: frozenset[str]
    workers: int
    replay: Any

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        ...

    def close(self) -> None:
        ...


class _FitExecutor(_Closes):
    """Fits tasks with a runner whose shared value is the data and settings of every stage."""

    replay = None  # it replays nothing: a searches.replay.ReplayExecutor around it does

    def __init__(self, data: FitData, config: OptimConfig, stages: Stages | None,
                 runner: Callable[[dict[str, tuple[FitData, OptimConfig]]], Runner]) -> None:
        contexts = _contexts(data, config, stages)  # refuse bad stages before starting any process
        self.data = data
        self.config = config
        self.stages = frozenset(contexts) - {""}
        self._runner = runner(contexts)
        self.workers = self._runner.workers

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        return self._runner.map(_run_in, tasks, should_stop, on_result)

    def close(self) -> None:
        self._runner.close()


class SerialExecutor(_FitExecutor):
    """Fits tasks one after another in this process (for debugging and tiny runs)."""

    def __init__(self, data: FitData, config: OptimConfig, stages: Stages | None = None) -> None:
        super().__init__(data, config, stages, SerialRunner)


class ProcessExecutor(_FitExecutor):
    """A local ``spawn`` process pool (default: every core), data sent once per worker (:class:`PoolRunner`)."""

    def __init__(self, data: FitData, config: OptimConfig, workers: int | None = None,
                 stages: Stages | None = None) -> None:
        super().__init__(data, config, stages, lambda contexts: PoolRunner(workers, contexts))


class DaskExecutor(_FitExecutor):
    """Dask distributed (:class:`DaskRunner`): ``address`` of a scheduler, ``"local"``, or a ``client``.

    Without either, starts a ``LocalCluster`` of ``workers`` single-threaded processes, which import this
    process's package. ``ship`` uploads the package to the workers of another cluster first.

    Raises
    ------
    DaskSetupError
        The workers cannot run the package; one line that says what to install where.
    """

    def __init__(self, data: FitData, config: OptimConfig, address: str | None = None, *,
                 client: object | None = None, workers: int = 2, stages: Stages | None = None,
                 ship: bool = True) -> None:
        super().__init__(data, config, stages, lambda contexts: DaskRunner(
            address, client=client, workers=workers, shared=contexts, ship=ship))


def make_executor(data: FitData, config: OptimConfig, *, workers: int | None = None,
                  scheduler: str | None = None, stages: Stages | None = None
                  ) -> SerialExecutor | ProcessExecutor | DaskExecutor:
    """``scheduler`` -> Dask (``"local"``: a LocalCluster of ``workers``, default every core);
    ``workers == 1`` -> serial; otherwise a process pool."""
    if scheduler:
        return DaskExecutor(data, config, scheduler, stages=stages, workers=workers or os.cpu_count() or 1)
    if workers == 1:
        return SerialExecutor(data, config, stages)
    return ProcessExecutor(data, config, workers, stages)
