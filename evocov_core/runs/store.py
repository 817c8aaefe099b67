"""The run store: every search and exploration, in SQLite.

One file, ``runs.sqlite3``, under the data directory: ``$EVOCOV_DATA_DIR`` if set, else
``$XDG_DATA_HOME/evocov`` (default ``~/.local/share/evocov``), never inside the code tree.

Tables
------
``runs``         one row per run: kind, algorithm, status, dataset (the arrays, so a run
                 can be reopened without the original file), settings, seed, best kernel
                 (a kernel-file document), counters, owner process, error.
``generations``  per-generation statistics (fitness curves).
``evaluations``  every kernel fitted, with its scores and values (Pareto plots, reopening).

A run's status is a :class:`~evocov_core.searches.common.RunStatus` (``queued``, ``running``,
``finished``, ``cancelled``, ``failed``, ``interrupted``), an evaluation's a
:class:`~evocov_core.fitting.optimize.FitStatus`; both are stored as their string values. A run
left ``queued``/``running`` by a process that no longer exists (the server died) is marked
``interrupted`` by :meth:`RunStore.recover`.

What :meth:`RunStore.get_run` hands back is a frozen, typed
:class:`~evocov_core.runs.run_record.RunRecord`, read from these columns; :meth:`RunStore.list_runs`
is a table (one row per run).

Connections are opened per call (SQLite in WAL mode), so job threads and page threads
can use one store safely.

The file records its layout in ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`). A file
from before versioning (0) has the layout of version 1 and is stamped on first open; a file
written by a newer EvoCov is refused with a message instead of being misread.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from evocov_core.data.dataset import Dataset
from evocov_core.runs.run_record import RunRecord
from evocov_core.searches.common import EVAL_COLUMNS, EvalRecord, GenerationStats, RunStatus, sql_number

__all__ = ["SCHEMA_VERSION", "RunRecord", "RunStatus", "RunStore", "StoreVersionError", "default_data_dir"]

#: Layout of the tables below; bump it (and migrate in ``RunStore.__init__``) when they change.
SCHEMA_VERSION = 1


class StoreVersionError(RuntimeError):
    """The run store was written by a newer EvoCov whose tables this version cannot read."""

STATUSES = tuple(RunStatus)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    algorithm TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    dataset_name TEXT,
    dataset_json TEXT,
    settings_json TEXT,
    seed INTEGER,
    label TEXT,
    best_json TEXT,
    n_evaluations INTEGER DEFAULT 0,
    generations_done INTEGER DEFAULT 0,
    elapsed REAL DEFAULT 0,
    error TEXT,
    owner_pid INTEGER,
    extra_json TEXT
);
CREATE TABLE IF NOT EXISTS generations (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    best_bic REAL, mean_bic REAL, best_so_far_bic REAL,
    n_evaluated INTEGER, n_failed INTEGER, restarted INTEGER, elapsed REAL,
    PRIMARY KEY (run_id, generation)
);
CREATE TABLE IF NOT EXISTS evaluations (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    expression TEXT, canonical TEXT, infix TEXT, q INTEGER,
    bic REAL, lml REAL, metric_value REAL, test_rmse REAL,
    status TEXT, reason TEXT, origin TEXT, n_evals INTEGER, seconds REAL,
    theta_json TEXT, log_noise REAL, jitter REAL
);
CREATE INDEX IF NOT EXISTS evaluations_run ON evaluations(run_id);
"""


def default_data_dir() -> Path:
    """``$EVOCOV_DATA_DIR``, else ``$XDG_DATA_HOME/evocov``, else ``~/.local/share/evocov``."""
    env = os.environ.get("EVOCOV_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "evocov"


_INSERT_EVALUATION = (f"INSERT INTO evaluations (run_id, {', '.join(EVAL_COLUMNS)})"
                      f" VALUES (:run_id, {', '.join(':' + c for c in EVAL_COLUMNS)})")


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's live process
        return True
    return True


def dataset_to_json(ds: Dataset) -> str:
    """A run's data as the store keeps them: the arrays, labels, split and the names of the covariates (x's
    columns 2 to d when they are covariates with known futures; written only when there are some)."""
    d = {"name": ds.name, "x": ds.x.tolist(), "y": ds.y.tolist(), "x_label": ds.x_label, "y_label": ds.y_label,
         "x_kind": ds.x_kind, "notes": list(ds.notes), "test_fraction": ds.test_fraction}
    if ds.covariates:
        d["covariates"] = list(ds.covariates)
    return json.dumps(d)


def dataset_from_json(text: str) -> Dataset:
    """Inverse of :func:`dataset_to_json` (rows written before covariates existed have none)."""
    d = json.loads(text)
    return Dataset.from_arrays(np.asarray(d["x"]), np.asarray(d["y"]), name=d["name"],
                               test_fraction=d["test_fraction"], duplicates="keep", x_label=d["x_label"],
                               y_label=d["y_label"], x_kind=d["x_kind"], notes=tuple(d["notes"]),
                               covariates=tuple(map(str, d.get("covariates") or ())))


class RunStore:
    """SQLite store of runs. ``path`` is a folder (created if needed) or a ``.sqlite3`` file."""

    def __init__(self, path: str | Path | None = None) -> None:
        p = Path(path) if path is not None else default_data_dir()
        if p.suffix != ".sqlite3":
            p.mkdir(parents=True, exist_ok=True)
            p = p / "runs.sqlite3"
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        with self._conn() as c:
            version = int(c.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreVersionError(
                    f"{p} was written by a newer EvoCov (store layout {version}, this version reads up to "
                    f"{SCHEMA_VERSION}): upgrade EvoCov, or set EVOCOV_DATA_DIR to another folder")
            c.executescript(_SCHEMA)
            if version < SCHEMA_VERSION:  # new file, or from before versioning: same layout as 1
                c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def ping(self) -> None:
        """Open the store and read it: raises OSError or ``sqlite3.Error`` when it cannot be used (its
        folder deleted, the file no database, no permission)."""
        with self._conn() as c:
            c.execute("SELECT count(*) FROM runs").fetchone()

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            yield conn
            conn.commit()
        finally:
            conn.close()

    # --- writing ---------------------------------------------------------------------
    def create_run(self, run_id: str, *, kind: str, algorithm: str, dataset: Dataset, settings: dict,
                   seed: int, label: str = "", status: RunStatus = RunStatus.QUEUED,
                   extra: dict | None = None) -> None:
        status = RunStatus(status)
        now = time.time()
        with self._conn() as c:
            c.execute(
                "INSERT INTO runs (id, kind, algorithm, status, created, updated, dataset_name, dataset_json,"
                " settings_json, seed, label, owner_pid, extra_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, kind, algorithm, status, now, now, dataset.name, dataset_to_json(dataset),
                 json.dumps(settings), seed, label, os.getpid(), json.dumps(extra or {})),
            )

    def set_status(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        with self._conn() as c:
            c.execute("UPDATE runs SET status=?, updated=?, error=COALESCE(?, error) WHERE id=?",
                      (status, time.time(), error, run_id))

    def add_generation(self, run_id: str, stats: GenerationStats, records: Sequence[EvalRecord],
                       n_evaluations: int, best_doc: dict | None) -> None:
        with self._conn() as c:
            c.execute(
                "INSERT OR REPLACE INTO generations VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, stats.generation, sql_number(stats.best_bic), sql_number(stats.mean_bic),
                 sql_number(stats.best_so_far_bic), stats.n_evaluated, stats.n_failed, int(stats.restarted),
                 stats.elapsed),
            )
            c.executemany(_INSERT_EVALUATION, [{"run_id": run_id, **r.to_row()} for r in records])
            c.execute(
                "UPDATE runs SET updated=?, n_evaluations=?, generations_done=?, elapsed=?,"
                " best_json=COALESCE(?, best_json) WHERE id=?",
                (time.time(), n_evaluations, stats.generation, stats.elapsed,
                 json.dumps(best_doc) if best_doc is not None else None, run_id),
            )

    def finish_run(self, run_id: str, status: RunStatus, *, best_doc: dict | None, elapsed: float | None,
                   n_evaluations: int | None, error: str | None = None, extra: dict | None = None) -> None:
        """Record the end of a run. ``None`` keeps the stored counters; ``extra`` is merged
        into the stored one (keys it does not name are kept)."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        with self._conn() as c:
            row = c.execute("SELECT extra_json FROM runs WHERE id=?", (run_id,)).fetchone()
            merged = json.loads(row[0]) if row and row[0] else {}
            merged.update(extra or {})
            c.execute(
                "UPDATE runs SET status=?, updated=?, best_json=COALESCE(?, best_json),"
                " elapsed=COALESCE(?, elapsed), n_evaluations=COALESCE(?, n_evaluations),"
                " error=?, extra_json=? WHERE id=?",
                (status, time.time(), json.dumps(best_doc) if best_doc is not None else None, elapsed,
                 n_evaluations, error, json.dumps(merged), run_id),
            )

    def update_extra(self, run_id: str, extra: dict) -> None:
        """Merge ``extra`` into the run's stored extra (keys it does not name are kept): what a user added to
        a run after it ended, such as the future values of its covariates that the Results page forecast with."""
        with self._conn() as c:
            row = c.execute("SELECT extra_json FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(run_id)
            merged = json.loads(row[0]) if row[0] else {}
            merged.update(extra)
            c.execute("UPDATE runs SET extra_json=? WHERE id=?", (json.dumps(merged), run_id))

    def recover(self, active: frozenset[str] | set[str] = frozenset()) -> int:
        """Mark runs left queued/running by dead processes as interrupted; returns how many.

        Runs of this process not in ``active`` are stale too (a previous server whose pid
        was reused, or a job that died without saying so).
        """
        with self._conn() as c:
            rows = c.execute("SELECT id, owner_pid FROM runs WHERE status IN (?, ?)",
                             (RunStatus.QUEUED, RunStatus.RUNNING)).fetchall()
            dead = [rid for rid, pid in rows
                    if rid not in active and (not _pid_alive(pid) or pid == os.getpid())]
            c.executemany("UPDATE runs SET status=?, updated=? WHERE id=?",
                          [(RunStatus.INTERRUPTED, time.time(), rid) for rid in dead])
        return len(dead)

    def delete_run(self, run_id: str) -> None:
        with self._conn() as c:
            c.execute("DELETE FROM evaluations WHERE run_id=?", (run_id,))
            c.execute("DELETE FROM generations WHERE run_id=?", (run_id,))
            c.execute("DELETE FROM runs WHERE id=?", (run_id,))

    # --- reading ---------------------------------------------------------------------
    def list_runs(self, kind: str | None = None) -> pd.DataFrame:
        """One row per run, newest first."""
        q = ("SELECT id, kind, algorithm, status, created, updated, dataset_name, seed, label, n_evaluations,"
             " generations_done, elapsed, error, best_json, extra_json FROM runs")
        args: tuple = ()
        if kind is not None:
            q += " WHERE kind=?"
            args = (kind,)
        with self._conn() as c:
            df = pd.read_sql_query(q + " ORDER BY created DESC", c, params=args)
        best = [json.loads(b) if isinstance(b, str) and b else None for b in df.pop("best_json")]
        df["best_bic"] = [b["scores"].get("bic") if b else None for b in best]
        df["best_test_rmse"] = [b["scores"].get("test_rmse") if b else None for b in best]
        df["best_q"] = [b.get("q") if b else None for b in best]
        df["best_kernel"] = [b.get("infix") if b else None for b in best]
        extra = [json.loads(e) if isinstance(e, str) and e else {} for e in df.pop("extra_json")]
        # Screening fits (evocov_core.runs.counts): stored beside the run's row; 0 where none were recorded.
        df["n_screen_fits"] = [int(e.get("n_screen_fits") or 0) if isinstance(e, dict) else 0 for e in extra]
        return df

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run as a frozen, typed :class:`~evocov_core.runs.run_record.RunRecord`, or None."""
        with self._conn() as c:
            c.row_factory = sqlite3.Row
            row = c.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            return None
        d = dict(row)
        ds = dataset_from_json(d["dataset_json"]) if d.get("dataset_json") else None
        return RunRecord.from_row(d, ds)

    def history(self, run_id: str) -> pd.DataFrame:
        with self._conn() as c:
            return pd.read_sql_query("SELECT * FROM generations WHERE run_id=? ORDER BY generation", c,
                                     params=(run_id,))

    def evaluations(self, run_id: str) -> pd.DataFrame:
        with self._conn() as c:
            df = pd.read_sql_query("SELECT * FROM evaluations WHERE run_id=? ORDER BY generation, idx", c,
                                   params=(run_id,))
        return df

    def export_csv(self, run_id: str) -> str:
        """Every evaluated kernel of a run as CSV text."""
        return self.evaluations(run_id).to_csv(index=False)
