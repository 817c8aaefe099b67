"""Where work runs in parallel, and how a process that runs it is set up: the one place.

Every process this package starts is started here (a test checks the sources), and every one
is set up the same way, by :func:`prepare_process`: one BLAS thread (parallelism is over
candidate kernels, and on these 2-core machines a 2-thread OpenBLAS was measured up to 2000x
slower than one thread when the other core is busy) and glibc malloc thresholds.

Two layers:

**Runners** run ``fn(item)`` for many items, or ``fn(shared, item)`` where ``shared`` is sent
to each worker once: :class:`SerialRunner` (this process), :class:`PoolRunner` (a local
``spawn`` process pool), :class:`DaskRunner` (Dask distributed; ``fn`` is named by module
and name, so it must be a module-level function of this package or of a module the workers
can import). :func:`make_runner` picks one; ``map`` returns the results **in item order**,
calls ``on_result(i, result)`` as each arrives, and polls ``should_stop`` each time a result
arrives (serial: between items), then returns at once: unfinished items are cancelled and
their slots hold ``None``. :func:`run_in_daemon_process` runs one call in a daemon process,
as a Future, for a server that must never wait for it. :func:`run_with_time_limits` runs calls
one after another in a child process, each within its own time limit, killing the child when
a call outlives it (the classical forecasters of :mod:`evocov_core.classical`).
:func:`run_measured` runs a command to its end and samples the memory of its process tree
(the long-series benchmark's trials).

**Kernel-fit executors** fit :class:`Task`\\ s on top of a runner: :class:`SerialExecutor`,
:class:`ProcessExecutor`, :class:`DaskExecutor`, :func:`make_executor`. Each task carries its
own seed, so a given run gives identical results on every executor. The training data
(:class:`~evocov_core.metrics.FitData`) is the runner's ``shared`` value, sent once per worker
(process-pool initializer, or a Dask ``scatter(broadcast=True)``), not per task. Besides the
main data and optimiser settings, an executor can hold named **stages** (``{"screen": (window
data, settings), ...}``): a task names the stage it runs in, so a search can fit candidates
cheaply on a window first and fully later on the same workers. A stop takes at most one
kernel fit's time.

A Dask cluster needs nothing of ours installed: :class:`DaskRunner` ships this package to the
workers first and exchanges calls and results as bytes (:mod:`evocov_core.dask_setup`).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import multiprocessing as mp
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from .dask_setup import DaskSetupError
from .kernel import Kernel
from .metrics import FitData
from .optimize import FitResult, OptimConfig, Start, fit_kernel

__all__ = [
    "DaskExecutor",
    "DaskRunner",
    "DaskSetupError",
    "Executor",
    "MeasuredRun",
    "PoolRunner",
    "ProcessExecutor",
    "Runner",
    "SerialExecutor",
    "SerialRunner",
    "Stages",
    "Task",
    "TimedResult",
    "TimedRun",
    "command_output",
    "limit_blas_threads",
    "make_executor",
    "make_runner",
    "one_line",
    "prepare_process",
    "run_in_daemon_process",
    "run_measured",
    "run_task",
    "run_with_time_limits",
]


# --- process setup -----------------------------------------------------------------------------------------

_BLAS_LIMITED = False
_MALLOC_TUNED = False


def limit_blas_threads(n: int = 1) -> None:
    """Limit BLAS/OpenMP to ``n`` threads in this process (idempotent).

    Parallelism comes from evaluating candidate kernels in separate processes.
    """
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    # Libraries loaded later read these; scipy ships its own OpenBLAS, so load it now
    # too, or threadpoolctl would leave it (and every Cholesky) at its default threads.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    import scipy.linalg
    import scipy.spatial.distance  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    _BLAS_LIMITED = True


def _tune_malloc() -> None:
    """Keep large freed blocks in the heap instead of returning them to the OS.

    Every node of a kernel tree makes an n×n temporary (1.9 MB at n = 490). glibc
    serves blocks that large with a fresh ``mmap`` and unmaps them on free, so each
    temporary paid ~0.5 ms of page faults: measured here, SE + PER×SE at n = 490 took
    16.9 ms with the defaults and 4.2 ms with these thresholds. No-op off glibc.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 256 * 1024 * 1024)
        libc.mallopt(m_trim_threshold, 512 * 1024 * 1024)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def prepare_process() -> None:
    """Set up this process for kernel evaluation: one BLAS thread, malloc thresholds.

    Every worker of this module runs it before its first call; entry points that evaluate
    kernels in their own process (the CLI, the benchmarks, the tests) call it too. Idempotent.
    """
    limit_blas_threads(1)
    _tune_malloc()


# --- runners: fn(item) for many items ------------------------------------------------------------------

StopCheck = Callable[[], bool]
OnResult = Callable[[int, Any], None]


class Runner(Protocol):
    """Runs ``fn(item)`` (or ``fn(shared, item)``) for many items. Use as a context manager."""

    workers: int

    def map(self, fn: Callable[..., Any], items: Sequence[Any], should_stop: StopCheck | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        ...

    def close(self) -> None:
        ...


_C = TypeVar("_C", bound="_Closes")


class _Closes:
    """``with`` support for anything with ``close()``."""

    def close(self) -> None:
        pass

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialRunner(_Closes):
    """Runs the calls one after another in this process, set up as a worker (:func:`prepare_process`)."""

    workers = 1

    def __init__(self, shared: object | None = None) -> None:
        prepare_process()
        self._shared = () if shared is None else (shared,)

    def map(self, fn: Callable[..., Any], items: Sequence[Any], should_stop: StopCheck | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        out: list[Any] = [None] * len(items)
        for i, item in enumerate(items):
            if should_stop is not None and should_stop():
                break
            out[i] = fn(*self._shared, item)
            if on_result is not None:
                on_result(i, out[i])
        return out


# Worker-process global of a PoolRunner: () or (shared,), set once by the initializer.
_W_SHARED: tuple = ()


def _init_pool_worker(shared: object | None, pids: Any = None) -> None:
    global _W_SHARED
    prepare_process()
    _W_SHARED = () if shared is None else (shared,)
    if pids is not None:
        pids.put(os.getpid())  # so that the pool's owner can end it (PoolRunner.close)


def _pool_call(fn: Callable[..., Any], item: Any) -> Any:
    return fn(*_W_SHARED, item)


def _collect(futures: list[Future], should_stop: StopCheck | None, on_result: OnResult | None,
             poll: float = 0.2) -> list[Any]:
    """Results of ``futures`` in their order, ``on_result`` as each ends; on a stop, cancel the rest."""
    index = {f: i for i, f in enumerate(futures)}
    out: list[Any] = [None] * len(futures)
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


class PoolRunner(_Closes):
    """A local process pool whose workers are set up by :func:`prepare_process`.

    Uses the ``spawn`` start method: forking a multi-threaded server (Streamlit) can
    deadlock. ``close`` does not wait for calls still running (a stopped search returns at
    once): it ends the worker processes when some are still running a call, whose result no
    one will read, so that they free their core at once and a command that exits does not
    wait for them (Python waits for a pool's running calls at exit). ``fn`` is pickled by
    reference, so it must be a module-level function.

    Parameters
    ----------
    workers : int or None
        Processes (None: every core).
    shared : object or None
        Sent to each worker once, when it starts; calls are then ``fn(shared, item)``
        (None: ``fn(item)``).
    """

    def __init__(self, workers: int | None = None, shared: object | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        ctx = mp.get_context("spawn")
        self._pids = ctx.SimpleQueue()  # each worker's process id, put there when it starts
        self._futures: list[Future] = []
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                         initializer=_init_pool_worker, initargs=(shared, self._pids))

    def map(self, fn: Callable[..., Any], items: Sequence[Any], should_stop: StopCheck | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        futures = [self._pool.submit(_pool_call, fn, item) for item in items]
        self._futures = [f for f in self._futures if not f.done()] + futures
        return _collect(futures, should_stop, on_result)

    def close(self) -> None:
        # The pool's own worker processes (CPython keeps them by pid), taken before shutdown drops them.
        processes = dict(getattr(self._pool, "_processes", None) or {})
        running = any(f.running() for f in self._futures)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._end_workers(processes, every=running)
        self._futures = []

    def _end_workers(self, processes: dict, every: bool) -> None:
        """Terminate (SIGTERM) the workers still starting, which would otherwise fail to read their
        start-up arguments once this process has exited and print a traceback; with ``every``, the
        started ones too: their running calls' results would never be read."""
        import signal

        started = set()
        while not self._pids.empty():
            started.add(self._pids.get())
        for pid in started if every else ():
            with contextlib.suppress(OSError):  # already gone
                os.kill(pid, signal.SIGTERM)
        for pid, proc in processes.items():
            if pid not in started:
                with contextlib.suppress(OSError, ValueError):  # already gone, or closed
                    proc.terminate()


def _dask_call(*values: Any) -> Any:
    """What a Dask worker runs: ``(*shared, module, name, item)`` -> ``module.name(*shared, item)``, set up first."""
    *shared, module, name, item = values
    prepare_process()
    return getattr(importlib.import_module(module), name)(*shared, item)


class DaskRunner(_Closes):
    """Dask distributed: ``address`` of a scheduler (``tcp://host:8786``), or a ``client``.

    Without either, or with ``address="local"``, starts a ``LocalCluster`` of ``workers``
    single-threaded processes. The workers need this package's dependencies, not the package:
    ``ship`` (default) uploads it to them (:func:`~evocov_core.dask_setup.ship_package`, which
    checks that they can import this module and ``modules``) and calls reach the scheduler as
    bytes, so it needs nothing of ours either.

    Raises
    ------
    DaskSetupError
        The workers cannot run the package (a dependency missing or of another version);
        one line that says what to install where.
    """

    def __init__(self, address: str | None = None, *, client: object | None = None, workers: int = 2,
                 shared: object | None = None, ship: bool = True, modules: Sequence[str] = ()) -> None:
        from distributed import Client, LocalCluster

        from .dask_setup import ship_package

        self._cluster = None
        self._own_client = False
        try:
            if client is not None:
                self._client = client
            else:
                if address in (None, "local"):
                    self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                 dashboard_address=None)
                    address = self._cluster.scheduler_address
                self._client = Client(address)
                self._own_client = True
            if ship:
                ship_package(self._client, modules=tuple(dict.fromkeys((__name__, *modules))))
            self.workers = len(self._client.scheduler_info().get("workers", {})) or workers  # type: ignore[attr-defined]
            self.address = str(getattr(self._client.scheduler, "address", address))  # type: ignore[attr-defined]
            # In a list: scatter() would send a dict's values one by one, keyed by its keys.
            # Scattered data goes to the workers; the scheduler keeps it serialised.
            self._shared = () if shared is None else (
                self._client.scatter([shared], broadcast=True)[0],)  # type: ignore[attr-defined]
        except BaseException:
            self.close()
            raise

    def map(self, fn: Callable[..., Any], items: Sequence[Any], should_stop: StopCheck | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        from distributed import as_completed

        from .dask_setup import pack, remote, unpack

        call = remote(__name__, "_dask_call", label=fn.__name__)  # tasks named after fn on Dask's dashboard
        futures = [self._client.submit(call, pack(fn.__module__, fn.__qualname__, item),  # type: ignore[attr-defined]
                                       *self._shared, pure=False) for item in items]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(futures)
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


def make_runner(*, workers: int | None = None, scheduler: str | None = None, shared: object | None = None,
                modules: Sequence[str] = ()) -> SerialRunner | PoolRunner | DaskRunner:
    """The runner for these settings, the choice every command offers.

    Parameters
    ----------
    workers : int or None
        ``1``: serial, in this process; otherwise a process pool of ``workers`` (None: every
        core), or the size of a Dask ``LocalCluster``.
    scheduler : str or None
        A Dask scheduler address (``tcp://host:8786``), or ``"local"`` for a LocalCluster.
    shared : object or None
        Sent to each worker once; calls are then ``fn(shared, item)``.
    modules : sequence of str
        Modules whose functions the calls run: Dask workers import them before any call, so
        a missing dependency is reported once, in one line.
    """
    if scheduler:
        return DaskRunner(scheduler, workers=workers or os.cpu_count() or 1, shared=shared, modules=modules)
    if workers == 1:
        return SerialRunner(shared)
    return PoolRunner(workers, shared)


# --- one call in a daemon process ----------------------------------------------------------------------


def _daemon_child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    prepare_process()
    try:
        result = (True, fn(*args, **kwargs))
    except BaseException as exc:  # sent back to the caller's Future
        result = (False, exc)
    try:
        conn.send(result)
    except Exception as exc:  # an unpicklable result or exception
        conn.send((False, RuntimeError(f"could not return the result: {exc}")))
    finally:
        conn.close()


def _drive_daemon(fut: Future, fn: Callable[..., Any], args: tuple, kwargs: dict,
                  gate: threading.Semaphore | None) -> None:
    with gate if gate is not None else contextlib.nullcontext():
        if not fut.set_running_or_notify_cancel():
            return
        ctx = mp.get_context("spawn")
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_daemon_child, args=(send, fn, args, kwargs), daemon=True)
        try:
            proc.start()
            send.close()
            ok, value = recv.recv()
        except EOFError:
            proc.join(timeout=5)  # for its exit code
            fut.set_exception(RuntimeError(f"the process running {getattr(fn, '__name__', 'the call')} died "
                                           f"(exit code {proc.exitcode})"))
        except Exception as exc:
            fut.set_exception(exc)
        else:
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)
        finally:
            recv.close()
            proc.join(timeout=5)


def run_in_daemon_process(fn: Callable[..., Any], args: tuple = (), kwargs: Mapping[str, Any] | None = None, *,
                          gate: threading.Semaphore | None = None, name: str = "evocov-process") -> Future:
    """The Future of ``fn(*args, **kwargs)`` run in its own *daemon* ``spawn`` process.

    For a server that must never wait for the work: a daemon thread starts the process and
    waits for its result, so the call never blocks the caller, never holds its GIL, and never
    delays its exit (a daemon process is killed at exit, where a ProcessPoolExecutor would
    make interpreter shutdown wait for the running call). The process is set up like every
    worker (:func:`prepare_process`). An exception of ``fn``, or the process dying, becomes
    the Future's exception.

    Parameters
    ----------
    fn : callable
        Picklable by reference (a module-level function); so must its arguments and result be.
    args, kwargs
        Its arguments.
    gate : threading.Semaphore or None
        Held while the process runs: a semaphore shared by several calls caps how many run
        at once. Until its turn the Future is pending and can be cancelled.
    name : str
        The driving thread's name.
    """
    fut: Future = Future()
    threading.Thread(target=_drive_daemon, args=(fut, fn, tuple(args), dict(kwargs or {}), gate), daemon=True,
                     name=name).start()
    return fut


# --- calls with time limits, in a child that can be killed ------------------------------------------------

_LIMIT_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The child reads the parent's import path first (as a ``spawn`` child does), then serves calls.
_CHILD_CODE = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
               "from evocov_core.parallel import _timed_child; _timed_child()")


@dataclass(frozen=True)
class TimedResult:
    """The outcome of one call of :func:`run_with_time_limits`.

    Attributes
    ----------
    status : str
        ``"ok"``, ``"timeout"`` (no result within the limit: the child was killed),
        ``"failed"`` (the call raised, or the child died) or ``"cancelled"``.
    value : object
        The call's result when ``ok``, else None.
    reason : str
        One line when not ``ok``: ``"no result within 30 s"``, ``"ValueError: ..."``.
    seconds : float
        Wall seconds of the call in the child (a timeout: the limit).
    """

    status: str
    value: Any = None
    reason: str = ""
    seconds: float = math.nan


@dataclass(frozen=True)
class TimedRun:
    """Every call's :class:`TimedResult`, in item order, and the start-up of each child.

    Attributes
    ----------
    results : tuple of TimedResult
    startup : tuple of float
        Per child started (one, and one more after each timeout or death), the seconds from
        starting it to its being ready: interpreter, imports and ``setup``.
    setup : tuple of float
        The part of each ``startup`` that ``setup`` took.
    """

    results: tuple[TimedResult, ...]
    startup: tuple[float, ...] = ()
    setup: tuple[float, ...] = ()


def one_line(exc: BaseException) -> str:
    """``"TypeName: first line of the message"``, at most 200 characters."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


def _parent_death_kills_me() -> None:
    """Linux: the kernel kills this process when its parent dies (no orphan keeps computing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _timed_child() -> None:
    """The child of :func:`run_with_time_limits`: pickles in on stdin, pickles out on a copy of stdout."""
    _parent_death_kills_me()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library's print() must not corrupt the message stream
    warnings.simplefilter("ignore")
    inp = sys.stdin.buffer

    def send(msg: tuple) -> None:
        try:
            data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result
            data = pickle.dumps((*msg[:2], False, f"could not return the result: {one_line(exc)}", msg[-1]))
        out.write(data)
        out.flush()

    prepare_process()
    t0 = time.perf_counter()
    try:
        setup = pickle.load(inp)
        if setup is not None:
            setup()
        error = None
    except Exception as exc:
        error = one_line(exc)
    send(("ready", time.perf_counter() - t0, error))
    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:
            return
        if msg is None:
            return
        index, payload = msg
        t0 = time.perf_counter()
        try:
            fn, item = pickle.loads(payload)  # here, so that a function the child cannot import fails its call
            value, ok = fn(item), True
        except Exception as exc:  # reported as this call's failure; the child serves the next call
            value, ok = one_line(exc), False
        send(("done", index, ok, value, time.perf_counter() - t0))


_EOF = object()


class _Child:
    """A ``python`` child serving :func:`_timed_child`, and a thread that queues what it sends."""

    def __init__(self, setup: Callable[[], object] | None) -> None:
        self.messages: queue.Queue = queue.Queue()
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, **_LIMIT_ENV})
        self.started = time.perf_counter()
        threading.Thread(target=self._read, daemon=True, name="evocov-timed-reader").start()
        self.send(list(sys.path))
        self.send(setup)

    def _read(self) -> None:
        try:
            while True:
                self.messages.put(pickle.load(self.proc.stdout))
        except Exception:  # EOF or a broken stream: the child is gone
            self.messages.put(_EOF)

    def send(self, obj: object) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        with contextlib.suppress(BrokenPipeError):  # the child is gone: the reader reports it
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def wait(self, seconds: float, should_stop: StopCheck | None) -> object:
        """The next message, ``None`` after ``seconds``, ``"stop"`` when ``should_stop()`` says so."""
        deadline = time.perf_counter() + seconds
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            try:
                return self.messages.get(timeout=min(left, 0.1) if should_stop else left)
            except queue.Empty:
                if should_stop is not None and should_stop():
                    return "stop"

    def died(self) -> str:
        self.proc.wait()  # the stream ended: the process has exited or is exiting
        return f"the process died (exit code {self.proc.returncode})"

    def close(self, kill: bool = False) -> None:
        with contextlib.suppress(OSError, ValueError):
            if not kill:
                self.send(None)
            self.proc.stdin.close()
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a child that ignores the end of its input is killed
            self.proc.kill()
            self.proc.wait()


def run_with_time_limits(fn: Callable[[Any], Any], items: Sequence[Any], time_limits: float | Sequence[float], *,
                         setup: Callable[[], object] | None = None, start_limit: float = 120.0,
                         should_stop: StopCheck | None = None,
                         on_result: Callable[[int, TimedResult], None] | None = None) -> TimedRun:
    """``fn(item)`` for each item, one after another in a child process, each within its time limit.

    A call that outlives its limit cannot be stopped from inside (a C extension does not
    check for signals), so the child is killed: the call is recorded as ``timeout`` and a
    new child serves the items left. ``setup`` (e.g. importing a slow library) runs once per
    child before its first call, off every call's clock. A call that raises is ``failed``
    with its exception in one line, and the child goes on; a child that dies fails its call.

    The child is a plain ``python`` subprocess talking pickles over its pipes, not a
    ``multiprocessing`` process: a daemonic process (a dashboard fit run by
    :func:`run_in_daemon_process`) may not start ``multiprocessing`` children, but it may
    start this one. It has one BLAS thread and, on Linux, dies with its parent.

    Parameters
    ----------
    fn : callable
        A module-level function (pickled by reference); its items and results are pickled.
    items : sequence
    time_limits : float or sequence of float
        Seconds for each call (one for all, or one per item).
    setup : callable, optional
        A module-level function run once in each child before its first call.
    start_limit : float
        Seconds for a child to start and run ``setup``; beyond, the calls left fail.
    should_stop : callable, optional
        Polled every 0.1 s while waiting: True kills the child, the calls left are ``cancelled``.
    on_result : callable, optional
        ``on_result(i, result)`` as each call ends.

    Returns
    -------
    TimedRun
    """
    n = len(items)
    limits = [float(time_limits)] * n if isinstance(time_limits, (int, float)) else [float(t) for t in time_limits]
    if len(limits) != n:
        raise ValueError(f"{len(limits)} time limits for {n} items")
    results: list[TimedResult | None] = [None] * n
    startup: list[float] = []
    setup_seconds: list[float] = []

    def record(i: int, result: TimedResult) -> None:
        results[i] = result
        if on_result is not None:
            on_result(i, result)

    def fail_rest(i: int, status: str, reason: str) -> None:
        for j in range(i, n):
            record(j, TimedResult(status, None, reason, math.nan))  # never ran

    i = 0
    while i < n:
        child = _Child(setup)
        killed = True
        try:
            msg = child.wait(start_limit, should_stop)
            if msg == "stop":
                fail_rest(i, "cancelled", "cancelled")
                break
            if msg is None or msg is _EOF or msg[2] is not None:
                why = (f"the worker process did not start within {start_limit:g} s" if msg is None
                       else child.died() if msg is _EOF else msg[2])
                fail_rest(i, "failed", why)
                break
            startup.append(time.perf_counter() - child.started)
            setup_seconds.append(float(msg[1]))
            while i < n:
                child.send((i, pickle.dumps((fn, items[i]), protocol=pickle.HIGHEST_PROTOCOL)))
                msg = child.wait(limits[i], should_stop)
                if msg == "stop":
                    fail_rest(i, "cancelled", "cancelled")
                    return TimedRun(tuple(results), tuple(startup), tuple(setup_seconds))  # type: ignore[arg-type]
                if msg is None:
                    record(i, TimedResult("timeout", None, f"no result within {limits[i]:g} s", limits[i]))
                    i += 1
                    break  # kill this child; a new one serves the rest
                if msg is _EOF:
                    record(i, TimedResult("failed", None, child.died(), math.nan))
                    i += 1
                    break
                _, _, ok, value, seconds = msg
                record(i, TimedResult("ok", value, "", seconds) if ok else TimedResult("failed", None, value, seconds))
                i += 1
            else:
                killed = False
        finally:
            child.close(kill=killed)
    return TimedRun(tuple(results), tuple(startup), tuple(setup_seconds))  # type: ignore[arg-type]


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
        :mod:`evocov_core.search.replay`).
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
    """Runs tasks for one search run. Use as a context manager."""

    stages: frozenset[str]

    def map(self, tasks: Sequence[Task], should_stop: StopCheck | None = None,
            on_result: Callable[[int, FitResult], None] | None = None) -> list[FitResult | None]:
        ...

    def close(self) -> None:
        ...


class _FitExecutor(_Closes):
    """Fits tasks with a runner whose shared value is the data and settings of every stage."""

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

    Without either, starts a ``LocalCluster`` of ``workers`` single-threaded processes (used
    by the tests). ``ship`` uploads this package to the workers first.

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


# --- short external commands ---------------------------------------------------------------------------------


def command_output(args: Sequence[str], *, cwd: str | os.PathLike[str], timeout: float) -> str | None:
    """Standard output of a short external command (``git rev-parse HEAD``), or None.

    None when the program is missing, fails (non-zero exit), or takes longer than ``timeout``
    seconds; never raises. No standard input: it cannot wait for a prompt.
    """
    try:
        res = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return res.stdout if res.returncode == 0 else None


class MeasuredRun(NamedTuple):
    """What :func:`run_measured` saw of one command."""

    returncode: int
    """Exit status (negative: ended by that signal, e.g. after its time-out)."""
    wall_s: float
    """Seconds from starting the command to its exit."""
    peak_rss_bytes: int
    """The largest sum, over the samples, of the resident set sizes of the command and all its descendants."""
    stdout: str
    stderr: str


def _tree_rss(proc: Any) -> int:
    """RSS of a psutil process and of its descendants, summed (a process that ends meanwhile counts 0)."""
    import psutil

    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def run_measured(args: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, every: float = 0.1,
                 timeout: float | None = None) -> MeasuredRun:
    """Run a command to its end; its wall time and the peak memory of its whole process tree.

    A thread samples, every ``every`` seconds, the resident set size (RSS) of the command and
    of all its descendants (worker processes included) with psutil, and keeps the largest sum.
    Pages shared between processes (the interpreter, libraries) count once per process, so
    the sum is an upper bound of the memory the tree takes; a peak shorter than ``every`` can
    be missed.

    Parameters
    ----------
    args : sequence of str
        The command (no shell).
    cwd : path, optional
    env : mapping, optional
        The command's whole environment (default: this process's).
    every : float
        Seconds between samples.
    timeout : float, optional
        Seconds after which the command is killed (its ``returncode`` is then negative).

    Returns
    -------
    MeasuredRun
    """
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(list(args), cwd=cwd, env=dict(env) if env is not None else None, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            ps = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            peak = max(peak, _tree_rss(ps))
            done.wait(every)

    sampler = threading.Thread(target=sample, name="evocov-rss-sampler", daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    return MeasuredRun(proc.returncode, wall, peak, out, err)
