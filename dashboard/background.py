"""Reference fits (SE baseline, fixed structures) in a child process, one at a time, as Futures.

No Streamlit here: the child process imports only this module and the core. Each fit runs in
its own *daemon* ``spawn`` process driven by a daemon thread, so a fit never blocks a page,
never holds the server's GIL, and never delays the server's exit (a ProcessPoolExecutor
would make interpreter shutdown wait for the running fit).
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["FitRunner"]


def _child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    from evocov_core.evaluate import prepare_process

    prepare_process()  # one BLAS thread, as every kernel-evaluating process has
    try:
        result = (True, fn(*args, **kwargs))
    except BaseException as exc:  # sent back to the page, which shows it
        result = (False, exc)
    try:
        conn.send(result)
    except Exception as exc:  # an unpicklable result or exception
        conn.send((False, RuntimeError(f"could not return the result: {exc}")))
    finally:
        conn.close()


class FitRunner:
    """Runs functions in child processes, ``slots`` at a time, keyed so each runs once."""

    def __init__(self, slots: int = 1) -> None:
        self._slots = threading.Semaphore(slots)
        self._lock = threading.Lock()
        self.futures: dict[tuple, Future] = {}

    def get(self, key: tuple) -> Future | None:
        with self._lock:
            return self.futures.get(key)

    def submit(self, key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """The Future of ``fn(*args, **kwargs)`` for ``key`` (started now unless it exists; failures retry)."""
        with self._lock:
            fut = self.futures.get(key)
            if fut is not None and not (fut.done() and fut.exception() is not None):
                return fut
            fut = Future()
            self.futures[key] = fut
        threading.Thread(
            target=self._run, args=(fut, fn, args, kwargs), daemon=True, name=f"evocov-fit-{key[0]}"
        ).start()
        return fut

    def _run(self, fut: Future, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        with self._slots:
            if not fut.set_running_or_notify_cancel():
                return
            ctx = mp.get_context("spawn")
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(send, fn, args, kwargs), daemon=True)
            try:
                proc.start()
                send.close()
                ok, value = recv.recv()
            except EOFError:
                fut.set_exception(RuntimeError(f"the fitting process died (exit code {proc.exitcode})"))
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
