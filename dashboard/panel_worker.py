"""``python -m dashboard.panel_worker FOLDER``: run, or resume, the panel run kept in ``FOLDER``.

The process :class:`dashboard.panel_runs.PanelRuns` starts for a run of the Panel page (no Streamlit here).
It holds the folder's lock while it works, calls the ``panel`` command's engine
(:func:`evocov_core.forecast_panel`, the front door's, so that ``series.csv`` has each kernel in words)
on the folder's table and request (with covariates, their future values ``future.csv`` as ``X_df``) with
``out=FOLDER/out`` (where the finished series are, and are read
back when the run resumes), writes each progress report to ``progress.json``, stops when ``FOLDER/stop``
appears, and says how it ended in ``state.json``. A second worker on the same folder leaves at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from dashboard.panel_runs import FUTURE, LOCK, OUT, PROGRESS, STOP, TABLE, read_request, write_state

__all__ = ["main", "run"]


def _acquire(path: Path, wait: float = 10.0) -> int | None:
    """The file descriptor holding ``path``'s lock, or None when another worker holds it. Retried for
    ``wait`` seconds: the page probes the lock (:func:`~dashboard.panel_runs.holds_lock`) for an instant."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.1)


def _number(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def run(folder: Path) -> str:
    """Run the panel of ``folder`` to its end; returns how it ended (``finished``, ``stopped``, ``failed``)."""
    from evocov_core.api import forecast_panel
    from evocov_core.compute.setup import prepare_process
    from evocov_core.compute.timed import one_line
    from evocov_core.data import DataError, read_table
    from evocov_core.panel.store import atomic_write
    from evocov_core.searches import ConfigError

    prepare_process()  # one BLAS thread, as every process that fits kernels
    request = read_request(folder)
    stop = folder / STOP

    def progress(p: Any) -> None:
        atomic_write(folder / PROGRESS, json.dumps({
            "done": p.done, "total": p.total, "resumed": p.resumed, "uid": p.uid, "status": p.status,
            "elapsed": _number(p.elapsed), "eta": _number(p.eta), "updated": time.time()}) + "\n")

    try:
        table = read_table(folder / TABLE)
        future = read_table(folder / FUTURE) if request.covariates else None  # the covariates' X_df
        result = forecast_panel(table, request.h, out=folder / OUT, progress=progress, should_stop=stop.exists,
                                X_df=future, **request.engine_args())
    except (DataError, ConfigError) as exc:  # the table or the settings: the user's to fix, in one line
        write_state(folder, "failed", error=str(exc))
        return "failed"
    except Exception as exc:  # a bug: one line for the page, the traceback for worker.log
        traceback.print_exc()
        write_state(folder, "failed", error=one_line(exc))
        return "failed"
    counts = {str(k): int(v) for k, v in result.series["status"].value_counts().items()}
    ended = "stopped" if len(result.series) < request.n_series and stop.exists() else "finished"
    write_state(folder, ended, counts=counts, errors=result.errors)
    return ended


def main(argv: list[str] | None = None) -> int:
    """The command: ``FOLDER [--lock-fd N]``; exit status 0 unless the run failed.

    ``--lock-fd``: a descriptor of the folder's lock file, locked by the process that started this one (the
    server, :meth:`~dashboard.panel_runs.PanelRuns.start`), so that the lock is never free in between.
    Without it the worker takes the lock itself.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 3) or (len(args) == 3 and (args[1] != "--lock-fd" or not args[2].isdigit())):
        print("usage: python -m dashboard.panel_worker FOLDER [--lock-fd N]", file=sys.stderr)
        return 2
    folder = Path(args[0])
    fd = int(args[2]) if len(args) == 3 else _acquire(folder / LOCK)
    if fd is None:
        print(f"{folder}: another worker runs this panel", file=sys.stderr)
        return 0
    try:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} worker {os.getpid()} starts", flush=True)
        ended = run(folder)
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} worker {os.getpid()}: {ended}", flush=True)
        return 1 if ended == "failed" else 0
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
