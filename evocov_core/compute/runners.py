"""Runners: ``fn(item)`` for many items, in this process, a local process pool or on Dask; one call
in a daemon process.

Part of :mod:`evocov_core.compute`, the one place that starts and sets up processes.
:class:`SerialRunner` (this process), :class:`PoolRunner` (a local ``spawn`` process pool),
:class:`DaskRunner` (Dask distributed); :func:`make_runner` picks one. :func:`run_in_daemon_process`
runs one call in a daemon process, as a Future.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import context as mp_context
from multiprocessing import popen_spawn_posix, reduction, spawn, util
from typing import Any, Protocol, TypeVar

from evocov_core.compute.setup import prepare_process

__all__ = ["DaskRunner", "DetachedProcess", "OnResult", "PoolRunner", "Runner", "SerialRunner", "StopCheck",
           "make_runner", "run_in_daemon_process", "spawn_context", "start_detached"]

#: The module Dask workers must import before any call (:func:`~evocov_core.compute.cluster.ship_package`
#: checks it): the facade, which imports every part of the parallel layer and what a kernel fit needs.
_SHIPPED = "evocov_core.fitting.fits"


# --- spawn without the caller's main module -------------------------------------------------------------


class _PopenWithoutMain(popen_spawn_posix.Popen):
    """CPython's ``spawn`` launch (``popen_spawn_posix.Popen._launch``, unchanged since 3.8) less the main
    module: a spawned child normally imports the parent's ``__main__`` again, which runs an unguarded script
    (no ``if __name__ == "__main__"``) once more in every worker, and breaks the pool of a script read from
    standard input (``python -``). Our workers only ever call functions of this package, pickled by
    reference, so they never need the caller's main module (joblib's loky does the same)."""

    def _launch(self, process_obj: Any) -> None:
        from multiprocessing import resource_tracker

        tracker_fd = resource_tracker.getfd()
        self._fds.append(tracker_fd)
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        fp = io.BytesIO()
        mp_context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, fp)
            reduction.dump(process_obj, fp)
        finally:
            mp_context.set_spawning_popen(None)
        parent_r = child_w = child_r = parent_w = None
        try:
            parent_r, child_w = os.pipe()
            child_r, parent_w = os.pipe()
            cmd = spawn.get_command_line(tracker_fd=tracker_fd, pipe_handle=child_r)
            self._fds.extend([child_r, child_w])
            self.pid = util.spawnv_passfds(spawn.get_executable(), cmd, self._fds)
            self.sentinel = parent_r
            with open(parent_w, "wb", closefd=False) as f:
                f.write(fp.getbuffer())
        finally:
            self.finalizer = util.Finalize(self, util.close_fds, [fd for fd in (parent_r, parent_w) if fd is not None])
            for fd in (child_r, child_w):
                if fd is not None:
                    os.close(fd)


class _SpawnProcessWithoutMain(mp_context.SpawnProcess):
    _start_method = "spawn"

    @staticmethod
    def _Popen(process_obj: Any) -> popen_spawn_posix.Popen:
        return _PopenWithoutMain(process_obj)


class _SpawnContextWithoutMain(mp_context.SpawnContext):
    Process = _SpawnProcessWithoutMain


def spawn_context(started: list[Any] | None = None) -> mp_context.BaseContext:
    """The ``spawn`` start method, for every process this package starts: forking a multi-threaded server
    (Streamlit) can deadlock. On POSIX its children do not import the caller's main module again, so a search
    runs from an unguarded script or from ``python -``; elsewhere it is the standard ``spawn`` context.
    With ``started``, every process the context makes is appended to that list (a pool's workers, without
    reading the pool's private attributes)."""
    if sys.platform == "win32":  # pragma: no cover - Windows spawns through popen_spawn_win32
        import multiprocessing

        return multiprocessing.get_context("spawn")
    ctx = _SpawnContextWithoutMain()
    if started is not None:
        def make(*args: Any, **kwargs: Any) -> _SpawnProcessWithoutMain:
            proc = _SpawnProcessWithoutMain(*args, **kwargs)
            started.append(proc)
            return proc

        ctx.Process = make  # type: ignore[assignment]  # this context's processes only
    return ctx


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


def _pool_chunk(fn: Callable[..., Any], items: Sequence[Any]) -> tuple[list[Any], float]:
    """Several calls as one job, and the seconds they took (what the next jobs are sized by)."""
    t0 = time.perf_counter()
    out = [fn(*_W_SHARED, item) for item in items]
    return out, time.perf_counter() - t0


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


class _Forgotten(Future):
    """A cancelled call's stand-in in a pool about to break (:meth:`PoolRunner.close`): the exception the
    broken pool sets on its pending calls is dropped."""

    def set_exception(self, exception: BaseException | None) -> None:
        pass


def _forgotten() -> Future:
    f = _Forgotten()
    f.cancel()
    return f


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
    job_seconds : float
        Calls go to the workers in jobs of several, sized so that a job holds about this much work
        (measured: the mean seconds of the calls so far; one call a job until there is a measure), and
        at most ``len(items) / (2 · workers)`` calls so that every worker gets a share. A job costs the pool
        about 1-2 ms (the queue, pickling both ways, the result's wake-up): a kernel fit on a short series
        takes 5-30 ms, so one fit a job spent up to a fifth of a worker's time on traffic. 0 sends one
        call a job. Results and ``on_result`` keep the items' order within a job.
    """

    #: Default ``job_seconds``: 25 ms, above ten times a job's overhead.
    JOB_SECONDS = 0.025

    def __init__(self, workers: int | None = None, shared: object | None = None, *,
                 job_seconds: float = JOB_SECONDS) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.job_seconds = job_seconds
        self._call_seconds: float | None = None  # running mean of one call's seconds
        self._calls_timed = 0
        self._started: list[Any] = []  # the worker processes, as the context starts them
        ctx = spawn_context(self._started)
        self._pids = ctx.SimpleQueue()  # each worker's process id, put there when it starts
        self._futures: list[Future] = []
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                         initializer=_init_pool_worker, initargs=(shared, self._pids))

    def map(self, fn: Callable[..., Any], items: Sequence[Any], should_stop: StopCheck | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        size = self.job_size(len(items))
        starts = list(range(0, len(items), size))
        futures = [self._pool.submit(_pool_chunk, fn, items[i:i + size]) for i in starts]
        self._futures = [f for f in self._futures if not f.done()] + futures

        def on_job(j: int, done: tuple[list[Any], float]) -> None:
            results, seconds = done
            if results:
                self._timed(seconds, len(results))
            if on_result is not None:
                for k, r in enumerate(results):
                    on_result(starts[j] + k, r)

        out: list[Any] = [None] * len(items)
        for j, done in enumerate(_collect(futures, should_stop, on_job)):
            if done is not None:
                out[starts[j]:starts[j] + len(done[0])] = done[0]
        return out

    def job_size(self, n_items: int) -> int:
        """Calls per job for a map of ``n_items`` (see ``job_seconds``)."""
        if self.job_seconds <= 0 or self._call_seconds is None or n_items <= 1:
            return 1
        want = math.ceil(self.job_seconds / max(self._call_seconds, 1e-6))
        share = max(1, n_items // (2 * self.workers))
        return max(1, min(want, share))

    def _timed(self, seconds: float, calls: int) -> None:
        """Add a job's seconds to the running mean of one call's (the last 200 calls weigh most)."""
        self._calls_timed = min(self._calls_timed + calls, 200)
        per_call = seconds / calls
        if self._call_seconds is None:
            self._call_seconds = per_call
        else:
            weight = calls / self._calls_timed
            self._call_seconds += weight * (per_call - self._call_seconds)

    def close(self) -> None:
        running = any(f.running() for f in self._futures)
        self._pool.shutdown(wait=False, cancel_futures=True)
        if running:
            # Ending running workers breaks the pool, and CPython 3.11's manager thread then sets an exception
            # on every pending call, raising InvalidStateError (a traceback) on those already cancelled (a
            # stopped map cancels them); 3.12 ignores them. The one private attribute read here, for that
            # interpreter's sake: each cancelled call gets a cancelled stand-in that takes the exception. Their
            # entries stay: the manager thread may still look them up by id (removing them raised KeyError).
            for item in list(getattr(self._pool, "_pending_work_items", {}).values()):
                if item.future.cancelled():
                    item.future = _forgotten()
        self._end_workers(list(self._started), every=running)
        self._futures = []

    def _end_workers(self, processes: list[Any], every: bool) -> None:
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
        for proc in processes:
            if proc.pid is not None and proc.pid not in started:
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
    single-threaded processes, spawned from this one with its ``sys.path``: they import this process's
    package, and the compiled loops of short series from its cache. Other workers need this package's
    dependencies, not the package: ``ship`` (default) uploads it to them
    (:func:`~evocov_core.compute.cluster.ship_package`, which checks that they can import
    :mod:`evocov_core.fitting.fits` and ``modules``) and calls reach the scheduler as bytes, so it needs
    nothing of ours either.

    Raises
    ------
    DaskSetupError
        The workers cannot run the package (a dependency missing or of another version);
        one line that says what to install where.
    """

    def __init__(self, address: str | None = None, *, client: object | None = None, workers: int = 2,
                 shared: object | None = None, ship: bool = True, modules: Sequence[str] = ()) -> None:
        from distributed import Client, LocalCluster

        from evocov_core.compute.cluster import ship_package

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
            if ship and self._cluster is None:
                ship_package(self._client, modules=tuple(dict.fromkeys((_SHIPPED, *modules))))
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

        from evocov_core.compute.cluster import pack, remote, unpack

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
        ctx = spawn_context()
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


# --- a long-lived worker in a session of its own ------------------------------------------------------


class DetachedProcess:
    """A process started by :func:`start_detached`: what its starter may ask of it."""

    def __init__(self, proc: Any) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        return int(self._proc.pid)

    def poll(self) -> int | None:
        """Its exit status, or None while it runs."""
        return self._proc.poll()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for it to end (at most ``timeout`` seconds); True when it has."""
        import subprocess

        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def end_group(self) -> None:
        """SIGTERM to its process group (it and the workers it started), if it still runs."""
        import signal

        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self._proc.pid, signal.SIGTERM)


def start_detached(args: Sequence[str], *, cwd: str | os.PathLike[str], log: str | os.PathLike[str],
                   pass_fds: Sequence[int] = ()) -> DetachedProcess:
    """Start ``args`` (a command: ``[sys.executable, "-m", module, ...]``) in a session of its own, its output
    appended to ``log``, with the descriptors ``pass_fds`` inherited (a lock it takes over).

    For a worker that must outlive the script run that starts it and ignore the signals sent to its starter's
    process group (a dashboard's Ctrl-C): its starter ends it with :meth:`DetachedProcess.end_group`. A thread
    that never touches the caller reaps it when it ends (no zombie).
    """
    import subprocess

    with open(log, "ab") as out:
        proc = subprocess.Popen(list(args), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                pass_fds=tuple(pass_fds), start_new_session=True)
    threading.Thread(target=proc.wait, name=f"evocov-detached-{proc.pid}", daemon=True).start()
    return DetachedProcess(proc)
