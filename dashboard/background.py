"""Reference fits (SE baseline, fixed structures) in a child process, one at a time, as Futures.

No Streamlit here: the child process imports only the core. Each fit runs through
:func:`evocov_core.compute.runners.run_in_daemon_process` (its own *daemon* ``spawn`` process driven
by a daemon thread), so a fit never blocks a page, never holds the server's GIL, and never
delays the server's exit (a ProcessPoolExecutor would make interpreter shutdown wait for the
running fit). This module only adds the keys: each fit runs once per key, for every session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from evocov_core.compute.runners import run_in_daemon_process

__all__ = ["FitRunner"]


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
            fut = run_in_daemon_process(fn, args, kwargs, gate=self._slots, name=f"evocov-fit-{key[0]}")
            self.futures[key] = fut
        return fut
