"""Executors that fit many kernels at once: serial, a local process pool, Dask distributed.

Evaluating a population is embarrassingly parallel. A search hands an executor a list of
:class:`Task`\\ s; the executor fits each with :func:`run_task` somewhere and gives the
:class:`~evocov_core.optimize.FitResult`\\ s back **in task order**, whatever order they
finished in. Each task carries its own seed, so a given run gives identical results on
every executor.

The training data (:class:`~evocov_core.metrics.FitData`) is shipped to each worker once
per run (process-pool initializer, or a Dask ``scatter(broadcast=True)``), not per task.
Besides the main data and optimiser settings, an executor can hold named **stages**
(``{"screen": (window data, settings), ...}``): a task names the stage it runs in, so a
search can fit candidates cheaply on a window first and fully later on the same workers.

Cancellation: ``map`` polls ``should_stop`` each time a result arrives (serial: between
tasks) and then returns at once; unfinished tasks are cancelled and their slots hold
``None``. So a stop takes at most one kernel fit's time.

BLAS is limited to one thread in every worker (:func:`~evocov_core.evaluate.prepare_process`):
parallelism is over candidate kernels.

A Dask cluster needs nothing of ours installed: :class:`DaskExecutor` ships this package to
the workers first and exchanges tasks and results as bytes (:mod:`evocov_core.dask_setup`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .dask_setup import DaskSetupError
from .evaluate import prepare_process
from .kernel import Kernel
from .metrics import FitData
from .optimize import FitResult, OptimConfig, Start, fit_kernel

__all__ = [
    "DaskExecutor",
    "DaskSetupError",
    "Executor",
    "ProcessExecutor",
    "SerialExecutor",
    "Stages",
    "Task",
    "make_executor",
    "run_task",
]


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
    """

    tokens: tuple[str, ...]
    seed: tuple[int, ...]
    start: Start | None = None
    stage: str = ""
    deadline: float | None = None


Stages = Mapping[str, tuple[FitData, OptimConfig]]


def run_task(data: FitData, config: OptimConfig, task: Task) -> FitResult:
    """Fit one task's kernel on ``data`` with ``config`` (pure but for the deadline)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(task.seed)))
    return fit_kernel(Kernel(task.tokens), data, config, rng, task.start, deadline=task.deadline)


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


StopCheck = Callable[[], bool]


class Executor(Protocol):
    """Runs tasks for one search run. Use as a context manager."""

    stages: frozenset[str]

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        ...

    def close(self) -> None:
        ...


class SerialExecutor:
    """Fits tasks one after another in this process (for debugging and tiny runs)."""

    workers = 1

    def __init__(self, data: FitData, config: OptimConfig, stages: Stages | None = None) -> None:
        prepare_process()
        self.data = data
        self.config = config
        self._contexts = _contexts(data, config, stages)
        self.stages = frozenset(self._contexts) - {""}

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        out: list[FitResult | None] = [None] * len(tasks)
        for i, t in enumerate(tasks):
            if should_stop is not None and should_stop():
                break
            out[i] = _run_in(self._contexts, t)
            if on_result is not None:
                on_result(i, out[i])  # type: ignore[arg-type]
        return out

    def close(self) -> None:
        pass

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Worker-process globals, set once by the pool initializer.
_W_CONTEXTS: dict[str, tuple[FitData, OptimConfig]] = {}


def _init_worker(contexts: dict[str, tuple[FitData, OptimConfig]]) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    prepare_process()
    _W_CONTEXTS.clear()
    _W_CONTEXTS.update(contexts)


def _worker_task(task: Task) -> FitResult:
    assert _W_CONTEXTS, "worker not initialised"
    return _run_in(_W_CONTEXTS, task)


def _collect(futures: list[Future], should_stop: StopCheck | None,
             on_result: Callable[[int, FitResult], None] | None, poll: float = 0.2) -> list[FitResult | None]:
    index = {f: i for i, f in enumerate(futures)}
    out: list[FitResult | None] = [None] * len(futures)
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll, return_when=FIRST_COMPLETED)
        for f in done:
            if f.cancelled():
                continue
            r = f.result()
            out[index[f]] = r
            if on_result is not None:
                on_result(index[f], r)
        if should_stop is not None and should_stop():
            for f in pending:
                f.cancel()
            break
    return out


class ProcessExecutor:
    """A local process pool (default: every core), data sent once per worker.

    Uses the ``spawn`` start method: forking a multi-threaded server (Streamlit) can
    deadlock.
    """

    def __init__(self, data: FitData, config: OptimConfig, workers: int | None = None,
                 stages: Stages | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        contexts = _contexts(data, config, stages)
        self.stages = frozenset(contexts) - {""}
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("spawn"),
                                         initializer=_init_worker, initargs=(contexts,))

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        futures = [self._pool.submit(_worker_task, t) for t in tasks]
        return _collect(futures, should_stop, on_result)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ProcessExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dask_task(contexts: dict[str, tuple[FitData, OptimConfig]], task: Task) -> FitResult:
    prepare_process()
    return _run_in(contexts, task)


class DaskExecutor:
    """Dask distributed: ``address`` of a scheduler (``tcp://host:8786``), or a ``Client``.

    Without either, starts a ``LocalCluster`` of ``workers`` single-threaded processes
    (used by the tests). The workers need this package's dependencies, not the package:
    ``ship`` (default) uploads it to them (:func:`~evocov_core.dask_setup.ship_package`) and
    tasks reach the scheduler as bytes, so it needs nothing of ours either.

    Raises
    ------
    DaskSetupError
        The workers cannot run the package (a dependency missing or of another version);
        one line that says what to install where.
    """

    def __init__(self, data: FitData, config: OptimConfig, address: str | None = None, *,
                 client: object | None = None, workers: int = 2, stages: Stages | None = None,
                 ship: bool = True) -> None:
        from distributed import Client, LocalCluster

        from .dask_setup import remote, ship_package

        self._cluster = None
        if client is not None:
            self._client = client
            self._own_client = False
        else:
            if address is None:
                self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None)
                address = self._cluster.scheduler_address
            self._client = Client(address)
            self._own_client = True
        try:
            if ship:
                ship_package(self._client)
            self.workers = len(self._client.scheduler_info().get("workers", {})) or workers  # type: ignore[attr-defined]
            contexts = _contexts(data, config, stages)
            self.stages = frozenset(contexts) - {""}
            # In a list: scatter() would send a dict's values one by one, keyed by its keys.
            # Scattered data goes to the workers; the scheduler keeps it serialised.
            self._contexts = self._client.scatter([contexts], broadcast=True)[0]  # type: ignore[attr-defined]
        except BaseException:
            self.close()
            raise
        self._fit = remote(__name__, "_dask_task")

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        from distributed import as_completed

        from .dask_setup import pack, unpack

        futures = [self._client.submit(self._fit, pack(t), self._contexts, pure=False)  # type: ignore[attr-defined]
                   for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[FitResult | None] = [None] * len(futures)
        remaining = set(index)
        for f in as_completed(futures):
            r = unpack(f.result())
            i = index[f.key]
            out[i] = r
            remaining.discard(f.key)
            if on_result is not None:
                on_result(i, r)
            if should_stop is not None and should_stop() and remaining:
                self._client.cancel([g for g in futures if g.key in remaining])  # type: ignore[attr-defined]
                break
        return out

    def close(self) -> None:
        if self._own_client:
            self._client.close()  # type: ignore[attr-defined]
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_executor(data: FitData, config: OptimConfig, *, workers: int | None = None,
                  scheduler: str | None = None, stages: Stages | None = None
                  ) -> SerialExecutor | ProcessExecutor | DaskExecutor:
    """``scheduler`` -> Dask; ``workers == 1`` -> serial; otherwise a process pool."""
    if scheduler:
        return DaskExecutor(data, config, scheduler, stages=stages)
    if workers == 1:
        return SerialExecutor(data, config, stages)
    return ProcessExecutor(data, config, workers, stages)
