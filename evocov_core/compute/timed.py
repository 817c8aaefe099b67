"""Calls with time limits, one after another in a child process that is killed when a call outlives its limit.

Part of :mod:`evocov_core.compute`, the one place that starts and sets up processes: :func:`run_with_time_limits` runs
the classical forecasters of :mod:`evocov_core.forecast.classical`.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evocov_core.compute.runners import StopCheck
from evocov_core.compute.setup import prepare_process

__all__ = ["TimedResult", "TimedRun", "one_line", "run_with_time_limits"]


# --- calls with time limits, in a child that can be killed ------------------------------------------------

_LIMIT_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The child reads the parent's import path first (as a ``spawn`` child does), then serves calls.
_CHILD_CODE = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
               "from evocov_core.compute.timed import _timed_child; _timed_child()")


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
