"""Panel runs for the Panel page: one folder and one worker process per run, resumable. No Streamlit here.

A run is the ``panel`` command's run (:func:`evocov_core.forecast_panel`) in a folder of its own under the
data directory, ``$EVOCOV_DATA_DIR/panels/<id>/``::

    request.json   what to run: the table's columns, the horizon, preset, settings, workers (written once)
    table.csv      the uploaded long table, byte for byte
    future.csv     with covariates: their future values (statsforecast's X_df), byte for byte
    out/           the engine's own folder (evocov_core.panel.store): panel.json, parts/, kernels/,
                   forecasts.csv, series.csv
    state.json     "running" (asked to run, with the worker's process id), then "finished", "stopped" or
                   "failed" (with its one line), written by the worker when it ends
    progress.json  the engine's last progress report (done, total, resumed, ETA), rewritten after each series
    worker.lock    locked (``flock``) by the server that starts the worker and handed to it (an inherited
                   descriptor), held while the worker runs; the kernel frees it when the worker ends,
                   however it ends
    stop           present: the worker stops once the series in flight are given up (the finished ones stay)
    worker.log     the worker's output

The worker (:mod:`dashboard.panel_worker`) is a process in a session of its own, so nothing the page does
(a script run ending, a reload, another session) touches it, and it keeps going when the server is killed.
The engine writes each series to ``out/parts`` as it finishes (atomically), and rereads them when called
again on the same folder. So a run whose worker died (the machine restarted, the server stopped: a server
that exits ends the workers it started) is *interrupted*: ``state.json`` says running and nobody holds the
lock. The first page a (re)started server draws resumes every interrupted run (:meth:`PanelRuns.__init__`);
a run interrupted while the server is up is resumed by one click (:meth:`PanelRuns.resume`). The finished
series are read, not redone.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import math
import os
import sys
import threading
import time
import uuid
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evocov_core.compute.runners import DetachedProcess, start_detached
from evocov_core.panel.store import atomic_write

__all__ = ["PanelRequest", "PanelRuns", "PanelStatus", "holds_lock", "read_request", "run_folder_ok"]

REQUEST, TABLE, OUT, STATE, FUTURE = "request.json", "table.csv", "out", "state.json", "future.csv"
PROGRESS, LOCK, STOP, LOG = "progress.json", "worker.lock", "stop", "worker.log"
#: The dashboard's package root: the worker is ``python -m dashboard.panel_worker`` from there.
_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PanelRequest:
    """What a panel run runs: the arguments of :func:`evocov_core.forecast_panel`.

    Attributes
    ----------
    name : str
        The uploaded file's name.
    id_col, ds_col, y_col : str
    h : int
        Steps forecast after each series' last observation.
    season_length : int or None
        Steps in a season (``ds`` given as numbers only).
    preset : str
    seed : int
    workers : int
        Processes over the series (1: in the worker process itself).
    settings : dict
        Search settings over the preset's (``time_budget`` included).
    n_series : int
    created : float
    covariates : list of str
        Columns with known futures (each series' search estimates their effect); their future values are the
        folder's ``future.csv``. Empty: none (and requests written before covariates existed).
    """

    name: str
    id_col: str
    ds_col: str
    y_col: str
    h: int
    season_length: int | None
    preset: str
    seed: int
    workers: int
    settings: dict[str, Any] = field(default_factory=dict)
    n_series: int = 0
    created: float = 0.0
    covariates: list[str] = field(default_factory=list)

    def engine_args(self) -> dict[str, Any]:
        """The keyword arguments of :func:`evocov_core.forecast_panel` but the table, ``h``, its hooks and the
        covariates' future values (``X_df``)."""
        return {"preset": self.preset, "seed": self.seed, "season_length": self.season_length,
                "id_col": self.id_col, "ds_col": self.ds_col, "y_col": self.y_col, "workers": self.workers,
                **({"covariates": tuple(self.covariates)} if self.covariates else {}), **self.settings}


@dataclass(frozen=True)
class PanelStatus:
    """Where a run is, read from its folder.

    Attributes
    ----------
    id : str
    request : PanelRequest
    state : str
        ``running`` (a worker holds the run), ``interrupted`` (asked to run, no worker holds it: resumable),
        ``finished``, ``stopped`` (by a user: resumable) or ``failed``.
    done, total, resumed : int
        Series finished (those of earlier calls included), in the panel, read from an earlier call.
    eta : float
        Seconds left at the worker's pace (NaN before its first series, or when it is not running).
    error : str
    """

    id: str
    request: PanelRequest
    state: str
    done: int
    total: int
    resumed: int
    eta: float
    error: str = ""

    @property
    def active(self) -> bool:
        return self.state == "running"

    @property
    def resumable(self) -> bool:
        return self.state in ("interrupted", "stopped")


def read_request(folder: Path) -> PanelRequest:
    """The request of the run in ``folder``."""
    return PanelRequest(**json.loads((folder / REQUEST).read_text(encoding="utf-8")))


def _read_json(path: Path) -> dict:
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def write_state(folder: Path, status: str, **more: Any) -> None:
    """Write ``state.json`` whole (a temporary file renamed over it)."""
    atomic_write(folder / STATE, json.dumps({"status": status, "updated": time.time(), **more}) + "\n")


def holds_lock(path: Path) -> bool:
    """Whether a process holds ``path``'s ``flock`` (a worker running the panel)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def run_folder_ok(folder: Path) -> bool:
    """Whether ``folder`` holds a panel run of this page (a request that can be read)."""
    try:
        read_request(folder)
    except (OSError, ValueError, TypeError):
        return False
    return True


class PanelRuns:
    """The panel runs under one data directory, and the worker processes this server started.

    Made once per server and data directory (the page caches it): it resumes every interrupted run there.

    Parameters
    ----------
    data_dir : path
        Runs live in ``data_dir/panels``.
    resume : bool
        Resume the interrupted runs now (a server's registry); False only reads the folders.

    Attributes
    ----------
    resumed_at_start : tuple of str
        The runs it resumed when it was made.
    """

    def __init__(self, data_dir: str | Path, *, resume: bool = True) -> None:
        self.root = Path(data_dir) / "panels"
        self._procs: dict[str, DetachedProcess] = {}
        self._lock = threading.Lock()
        self.resumed_at_start = tuple(r for r in self.ids() if resume and self.status(r).state == "interrupted"
                                      and self.resume(r))
        atexit.register(self._on_exit)

    # --- the runs --------------------------------------------------------------------------------------
    def folder(self, run_id: str) -> Path:
        """The folder of ``run_id`` (the id is checked: it never leaves ``panels/``)."""
        if not (len(run_id) == 12 and all(c in "0123456789abcdef" for c in run_id)):
            raise KeyError(run_id)
        return self.root / run_id

    def ids(self) -> list[str]:
        """Every run's id, newest first."""
        if not self.root.is_dir():
            return []
        found = [p for p in self.root.iterdir() if p.is_dir() and run_folder_ok(p)]
        return [p.name for p in sorted(found, key=lambda p: read_request(p).created, reverse=True)]

    def exists(self, run_id: str) -> bool:
        try:
            return run_folder_ok(self.folder(run_id))
        except KeyError:
            return False

    def start(self, table: bytes, request: PanelRequest, future: bytes | None = None) -> str:
        """Make a run's folder (the table, the covariates' future values when it has some, and the request) and
        start its worker; returns the run's id."""
        if bool(request.covariates) != (future is not None):
            raise ValueError("a panel run with covariates needs their future values, and only then")
        run_id = uuid.uuid4().hex[:12]
        folder = self.folder(run_id)
        folder.mkdir(parents=True)
        (folder / TABLE).write_bytes(table)
        if future is not None:
            (folder / FUTURE).write_bytes(future)
        # The request last: a folder is a run once its request can be read.
        atomic_write(folder / REQUEST, json.dumps(asdict(request), indent=1) + "\n")
        self._launch(run_id)
        return run_id

    def resume(self, run_id: str) -> bool:
        """Start the worker of a stopped or interrupted run again; False when a worker holds it already."""
        folder = self.folder(run_id)
        if self.status(run_id).active:
            return False
        with self._lock:
            proc = self._procs.get(run_id)
        if proc is not None and not proc.wait(timeout=30):  # it has said how it ended: it is exiting
            return False
        with contextlib.suppress(FileNotFoundError):
            (folder / STOP).unlink()
        return self._launch(run_id)

    def stop(self, run_id: str) -> None:
        """Ask the run's worker, wherever it runs, to stop (the series finished so far are kept)."""
        (self.folder(run_id) / STOP).touch()

    def status(self, run_id: str) -> PanelStatus:
        """Where ``run_id`` is (module docstring)."""
        folder = self.folder(run_id)
        request = read_request(folder)
        state = _read_json(folder / STATE)
        progress = _read_json(folder / PROGRESS)
        said = str(state.get("status") or "running")
        if said == "running":  # an ending worker writes how it ended before it lets the lock go
            said = "running" if self._alive(run_id) or holds_lock(folder / LOCK) else "interrupted"
        done = int(progress.get("done") or 0)
        if not progress or said != "running":  # the parts on disk are what counts between calls
            done = max(done, sum(1 for _ in (folder / OUT / "parts").glob("*.json")))
        eta = progress.get("eta") if said == "running" else None
        eta = float(eta) if isinstance(eta, (int, float)) and math.isfinite(eta) else math.nan
        return PanelStatus(run_id, request, said, min(done, request.n_series), request.n_series,
                           int(progress.get("resumed") or 0), eta,
                           str(state.get("error") or ""))

    # --- results -----------------------------------------------------------------------------------------
    def series_table(self, run_id: str) -> pd.DataFrame | None:
        """``series.csv`` (one row per series finished when the engine last returned), or None before."""
        path = self.folder(run_id) / OUT / "series.csv"
        if not path.is_file():
            return None
        return pd.read_csv(path, dtype={"unique_id": str}, keep_default_na=False, na_values=[""])

    def forecasts(self, run_id: str) -> pd.DataFrame | None:
        """``forecasts.csv``, or None before the engine first returned."""
        path = self.folder(run_id) / OUT / "forecasts.csv"
        return pd.read_csv(path, dtype={"unique_id": str}) if path.is_file() else None

    def kernel_text(self, run_id: str, relative: str) -> str | None:
        """A series' kernel file (its ``kernel_file`` cell of ``series.csv``), or None."""
        out = (self.folder(run_id) / OUT).resolve()
        path = (out / relative).resolve()
        if not relative or out not in path.parents or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")

    def zip_bytes(self, run_id: str) -> bytes:
        """``forecasts.csv``, ``series.csv`` and every kernel file, as one zip (paths as in the folder)."""
        out = self.folder(run_id) / OUT
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name in ("forecasts.csv", "series.csv"):
                if (out / name).is_file():
                    z.write(out / name, name)
            for path in sorted((out / "kernels").glob("*.json")):
                z.write(path, f"kernels/{path.name}")
        return buf.getvalue()

    # --- the worker processes ------------------------------------------------------------------------------
    def _alive(self, run_id: str) -> bool:
        with self._lock:
            proc = self._procs.get(run_id)
        return proc is not None and proc.poll() is None

    def _launch(self, run_id: str) -> bool:
        """Start the run's worker holding the run's lock; False when another process holds it.

        The lock is taken here and handed to the worker (an inherited descriptor of the same open file), so
        that the run is never seen free between this call and the worker's start: no second server resumes it
        meanwhile, and a reader never sees it interrupted.
        """
        folder = self.folder(run_id)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + 5.0  # a worker of another server that has just ended lets it go
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    return False
                time.sleep(0.1)
        try:
            write_state(folder, "running")
            with contextlib.suppress(FileNotFoundError):  # an earlier call's report: its ETA is not this call's
                (folder / PROGRESS).unlink()
            # A session of its own: a signal to the server's process group (Ctrl-C) does not reach the
            # worker; the server ends the workers it started when it exits (_on_exit).
            proc = start_detached([sys.executable, "-m", "dashboard.panel_worker", str(folder), "--lock-fd", str(fd)],
                                  cwd=_ROOT, log=folder / LOG, pass_fds=(fd,))
        finally:
            os.close(fd)  # the worker's copy holds the lock from now on, until it ends
        write_state(folder, "running", pid=proc.pid)
        with self._lock:
            self._procs[run_id] = proc
        return True

    def _on_exit(self) -> None:
        """The server exits: end the workers it started (each with its pool), so that no process outlives a
        stopped server; their runs are left interrupted and resume when a server starts again."""
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            proc.end_group()
