"""External commands: a short one's output, and a long one's wall time and peak memory of its process tree.

Part of :mod:`evocov_core.compute`, the one place that starts and sets up processes:
:func:`command_output` reads the git commit (:mod:`evocov_core.compute.provenance`), :func:`run_measured`
the long-series benchmark's trials.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["MeasuredRun", "command_output", "run_measured"]


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
