"""The run store (evocov_core.runs.store): schema, runs and their statistics, status changes, recovery of
runs whose process died, deletion, listing and CSV export, the default data folder."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evocov_core.data import Dataset
from evocov_core.runs.store import STATUSES, RunStatus, RunStore, dataset_from_json, dataset_to_json, default_data_dir
from evocov_core.searches.common import EVAL_COLUMNS, EvalRecord, GenerationStats


@pytest.fixture
def ds() -> Dataset:
    rng = np.random.default_rng(11)
    x = np.linspace(1990.0, 1995.0, 24)
    y = 10 + np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(x.size)
    return Dataset.from_arrays(x, y, name="toy", test_fraction=0.25, x_label="year", y_label="value",
                               x_kind="date", notes=("made up",))


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "data")


def _stats(gen: int, best: float = 10.0, *, restarted: bool = False) -> GenerationStats:
    return GenerationStats(generation=gen, best_bic=best, mean_bic=best + 5.0, best_so_far_bic=best,
                           n_evaluated=2, n_failed=0, restarted=restarted, elapsed=0.5 * gen)


def _record(gen: int, idx: int, *, bic: float = 10.0, test_rmse: float | None = 0.5) -> EvalRecord:
    return EvalRecord(generation=gen, index=idx, expression=f"hp(hp{idx})", canonical=f"c{idx}", infix=f"k{idx}",
                      q=idx + 2, bic=bic, lml=-bic / 2, metric_value=-bic / 2, test_rmse=test_rmse, status="ok",
                      reason="", origin="random", n_evals=7, seconds=0.01, theta=(0.5, -1.0),
                      log_noise=-3.0, jitter=0.0)


def _best_doc(bic: float, rmse: float, q: int = 3, infix: str = "SE") -> dict:
    return {"expression": "exp(sq_dist(euc(x), hp0))", "scores": {"bic": bic, "test_rmse": rmse}, "q": q,
            "infix": infix}


def _new_run(store: RunStore, ds: Dataset, run_id: str, **kw) -> None:
    store.create_run(run_id, kind=kw.pop("kind", "search"), algorithm=kw.pop("algorithm", "evocov"), dataset=ds,
                     settings=kw.pop("settings", {"population": 4}), seed=kw.pop("seed", 0), **kw)


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped (so it is not even a zombie)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=60)
    return proc.pid


def _set_owner(store: RunStore, run_id: str, pid: int | None) -> None:
    with sqlite3.connect(store.path) as c:
        c.execute("UPDATE runs SET owner_pid=? WHERE id=?", (pid, run_id))


# --- schema and location ---------------------------------------------------------------------------


def test_folder_gets_runs_sqlite3_with_the_three_tables(tmp_path):
    store = RunStore(tmp_path / "a" / "b")
    assert store.path == tmp_path / "a" / "b" / "runs.sqlite3"
    assert store.path.is_file()
    with sqlite3.connect(store.path) as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        run_cols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
        eval_cols = [r[1] for r in c.execute("PRAGMA table_info(evaluations)")]
        gen_pk = [r[1] for r in c.execute("PRAGMA table_info(generations)") if r[5]]
        mode = c.execute("PRAGMA journal_mode").fetchone()[0]
    assert {"runs", "generations", "evaluations"} <= tables
    assert "evaluations_run" in indexes
    assert run_cols[:4] == ["id", "kind", "algorithm", "status"]
    assert {"dataset_json", "settings_json", "best_json", "owner_pid", "extra_json", "error"} <= set(run_cols)
    assert len(eval_cols) == 19  # as many as add_generation inserts
    assert gen_pk == ["run_id", "generation"]
    assert mode == "wal"


def test_sqlite3_path_is_used_as_the_file(tmp_path):
    p = tmp_path / "nested" / "mine.sqlite3"
    store = RunStore(p)
    assert store.path == p and p.is_file()


def test_reopening_keeps_the_runs(tmp_path, ds):
    """The schema is created only if absent: opening an existing store again loses nothing."""
    first = RunStore(tmp_path)
    _new_run(first, ds, "r1", label="kept")
    second = RunStore(tmp_path)
    assert second.get_run("r1").label == "kept"
    assert list(second.list_runs().id) == ["r1"]


def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EVOCOV_DATA_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "explicit"
    monkeypatch.delenv("EVOCOV_DATA_DIR")
    assert default_data_dir() == tmp_path / "xdg" / "evocov"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "evocov"


def test_no_path_means_the_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EVOCOV_DATA_DIR", str(tmp_path / "env"))
    assert RunStore().path == tmp_path / "env" / "runs.sqlite3"


# --- runs ---------------------------------------------------------------------------------------------


def test_dataset_json_round_trip(ds):
    back = dataset_from_json(dataset_to_json(ds))
    np.testing.assert_array_equal(back.x, ds.x)
    np.testing.assert_array_equal(back.y, ds.y)
    np.testing.assert_array_equal(back.train, ds.train)
    assert (back.name, back.x_label, back.y_label, back.x_kind, back.test_fraction) == (
        "toy", "year", "value", "date", 0.25)
    assert back.notes == ds.notes
    assert back.norm == ds.norm


def test_create_and_get_run(store, ds):
    _new_run(store, ds, "r1", settings={"population": 4, "base_kernels": ["SE"]}, seed=7, label="first",
             extra={"base": None, "n": 3})
    run = store.get_run("r1")
    assert run.status == "queued"
    assert (run.kind, run.algorithm, run.seed, run.label) == ("search", "evocov", 7, "first")
    assert run.settings == {"population": 4, "base_kernels": ["SE"]}
    assert run.extra == {"base": None, "n": 3}
    assert run.best is None
    assert run.owner_pid == os.getpid()
    assert run.n_evaluations == 0 and run.generations_done == 0
    np.testing.assert_array_equal(run.dataset.y, ds.y)
    assert run.dataset_name == "toy"
    assert store.get_run("nope") is None


def test_duplicate_run_id_is_refused(store, ds):
    _new_run(store, ds, "r1")
    with pytest.raises(sqlite3.IntegrityError):
        _new_run(store, ds, "r1")


def test_set_status_checks_and_keeps_the_error(store, ds):
    _new_run(store, ds, "r1")
    with pytest.raises(ValueError, match="unknown status 'done'"):
        store.set_status("r1", "done")
    assert store.get_run("r1").status == "queued"
    store.set_status("r1", "failed", error="boom")
    store.set_status("r1", "running")  # no error given: the stored one stays
    run = store.get_run("r1")
    assert run.status == "running" and run.error == "boom"
    assert run.updated >= run.created
    for s in STATUSES:
        store.set_status("r1", s)
        assert store.get_run("r1").status == s


def test_generations_and_evaluations(store, ds):
    _new_run(store, ds, "r1")
    store.add_generation("r1", _stats(1, 20.0), [_record(1, 0, bic=20.0), _record(1, 1, bic=math.inf,
                                                                                     test_rmse=None)],
                         n_evaluations=2, best_doc=_best_doc(20.0, 1.0))
    store.add_generation("r1", _stats(2, 15.0, restarted=True), [_record(2, 0, bic=15.0, test_rmse=math.nan)],
                         n_evaluations=3, best_doc=None)
    hist = store.history("r1")
    assert list(hist.generation) == [1, 2]
    assert list(hist.best_bic) == [20.0, 15.0]
    assert list(hist.restarted) == [0, 1]
    ev = store.evaluations("r1")
    assert list(zip(ev.generation, ev.idx, strict=True)) == [(1, 0), (1, 1), (2, 0)]
    # SQLite has no inf/NaN: they are stored as NULL.
    assert ev.bic.isna().tolist() == [False, True, False]
    assert ev.test_rmse.isna().tolist() == [False, True, True]
    assert json.loads(ev.theta_json[0]) == [0.5, -1.0]
    run = store.get_run("r1")
    assert run.n_evaluations == 3 and run.generations_done == 2 and run.elapsed == 1.0
    # best_doc None keeps the best stored by generation 1.
    assert run.best.doc == _best_doc(20.0, 1.0)


def test_a_generation_written_twice_is_one_row(store, ds):
    _new_run(store, ds, "r1")
    store.add_generation("r1", _stats(1, 20.0), [], 1, None)
    store.add_generation("r1", _stats(1, 12.0), [], 1, None)
    hist = store.history("r1")
    assert len(hist) == 1 and hist.best_bic[0] == 12.0


def test_finish_run_merges_extra_and_keeps_counters(store, ds):
    _new_run(store, ds, "r1", extra={"base": "kept", "x": 1})
    store.add_generation("r1", _stats(1), [_record(1, 0)], 5, _best_doc(10.0, 0.5))
    store.finish_run("r1", "finished", best_doc=None, elapsed=None, n_evaluations=None, extra={"x": 2, "y": 3})
    run = store.get_run("r1")
    assert run.status == "finished" and run.error is None
    assert run.extra == {"base": "kept", "x": 2, "y": 3}
    assert run.n_evaluations == 5 and run.elapsed == 0.5
    assert run.best.doc == _best_doc(10.0, 0.5)
    store.finish_run("r1", "failed", best_doc=_best_doc(8.0, 0.25), elapsed=9.0, n_evaluations=6, error="x")
    run = store.get_run("r1")
    assert (run.status, run.error, run.elapsed, run.n_evaluations) == ("failed", "x", 9.0, 6)
    assert run.best.bic == 8.0


def test_list_runs_newest_first_with_best_columns(store, ds):
    _new_run(store, ds, "a", kind="search")
    _new_run(store, ds, "b", kind="explore", algorithm="explore")
    _new_run(store, ds, "c", kind="search", algorithm="gpss")
    with sqlite3.connect(store.path) as c:  # distinct creation times, whatever the clock resolution
        c.executemany("UPDATE runs SET created=? WHERE id=?", [(1.0, "a"), (2.0, "b"), (3.0, "c")])
    store.finish_run("a", "finished", best_doc=_best_doc(12.5, 0.75, q=5, infix="SE + PER"), elapsed=1.0,
                     n_evaluations=4, extra={"n_screen_fits": 9})
    df = store.list_runs()
    assert list(df.id) == ["c", "b", "a"]
    assert "best_json" not in df.columns and "extra_json" not in df.columns
    # Both counts of evocov_core.runs.counts: screening fits from the run's extra, 0 where none were recorded.
    assert list(df.n_screen_fits) == [0, 0, 9] and df.set_index("id").loc["a"].n_evaluations == 4
    a = df.set_index("id").loc["a"]
    assert (a.best_bic, a.best_test_rmse, a.best_q, a.best_kernel) == (12.5, 0.75, 5, "SE + PER")
    assert pd.isna(df.set_index("id").loc["c"].best_kernel)
    assert list(store.list_runs(kind="search").id) == ["c", "a"]
    assert list(store.list_runs(kind="explore").algorithm) == ["explore"]
    assert store.list_runs(kind="nothing").empty


def test_delete_run_removes_every_row(store, ds):
    _new_run(store, ds, "gone")
    _new_run(store, ds, "kept")
    for rid in ("gone", "kept"):
        store.add_generation(rid, _stats(1), [_record(1, 0), _record(1, 1)], 2, None)
    store.delete_run("gone")
    assert store.get_run("gone") is None
    assert store.history("gone").empty and store.evaluations("gone").empty
    assert len(store.evaluations("kept")) == 2 and len(store.history("kept")) == 1


def test_export_csv_has_every_evaluation(store, ds):
    _new_run(store, ds, "r1")
    store.add_generation("r1", _stats(1), [_record(1, 0), _record(1, 1)], 2, None)
    store.add_generation("r1", _stats(2), [_record(2, 0)], 3, None)
    back = pd.read_csv(StringIO(store.export_csv("r1")))
    assert len(back) == 3
    assert list(back.columns) == list(store.evaluations("r1").columns)
    assert list(back.infix) == ["k0", "k1", "k0"]


def test_threads_can_write_to_one_store(store, ds):
    """Connections are per call: job threads write their runs concurrently without losing rows."""
    ids = [f"t{i}" for i in range(4)]
    for rid in ids:
        _new_run(store, ds, rid)
    errors: list[BaseException] = []

    def work(rid: str) -> None:
        try:
            for g in range(1, 11):
                store.add_generation(rid, _stats(g), [_record(g, 0), _record(g, 1)], 2 * g, None)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(rid,)) for rid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    for rid in ids:
        assert len(store.history(rid)) == 10
        assert len(store.evaluations(rid)) == 20
        assert store.get_run(rid).n_evaluations == 20


# --- recovery of runs whose process died --------------------------------------------------------------


def test_recover_marks_runs_of_dead_processes_interrupted(store, ds):
    for rid, status in (("dead_running", "running"), ("dead_queued", "queued"), ("dead_finished", "finished"),
                        ("no_owner", "running")):
        _new_run(store, ds, rid)
        store.set_status(rid, status)
    pid = _dead_pid()
    for rid in ("dead_running", "dead_queued", "dead_finished"):
        _set_owner(store, rid, pid)
    _set_owner(store, "no_owner", None)
    assert store.recover() == 3
    status = {rid: store.get_run(rid).status for rid in ("dead_running", "dead_queued", "dead_finished",
                                                           "no_owner")}
    assert status == {"dead_running": "interrupted", "dead_queued": "interrupted", "dead_finished": "finished",
                      "no_owner": "interrupted"}
    assert store.recover() == 0  # nothing left to recover


def test_recover_leaves_runs_of_live_processes(store, ds):
    """A run owned by another live process (another server) is left alone until that process dies."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _new_run(store, ds, "other")
        store.set_status("other", "running")
        _set_owner(store, "other", proc.pid)
        assert store.recover() == 0
        assert store.get_run("other").status == "running"
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert store.recover() == 1
    assert store.get_run("other").status == "interrupted"


def test_recover_own_runs_unless_active(store, ds):
    """Runs of this very process are stale unless named in ``active`` (pid reuse, a job that died)."""
    _new_run(store, ds, "live")
    _new_run(store, ds, "stale")
    store.set_status("live", "running")
    store.set_status("stale", "running")
    assert store.recover(active={"live"}) == 1
    assert store.get_run("live").status == "running"
    assert store.get_run("stale").status == "interrupted"
    assert store.recover() == 1
    assert store.get_run("live").status == "interrupted"


def test_schema_version_is_stamped_and_a_newer_file_is_refused(tmp_path, ds):
    """PRAGMA user_version: a new file gets SCHEMA_VERSION, a pre-versioning file (0) is stamped and keeps its
    runs, a file from a newer EvoCov is refused with a message naming the versions."""
    from evocov_core.runs.store import SCHEMA_VERSION, StoreVersionError

    store = RunStore(tmp_path / "a")
    with sqlite3.connect(store.path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    # A file from before versioning: same tables, user_version 0, one run in it.
    old = RunStore(tmp_path / "b")
    rid = "r-before-versioning"
    _new_run(old, ds, rid)
    with sqlite3.connect(old.path) as c:
        c.execute("PRAGMA user_version = 0")
    again = RunStore(tmp_path / "b")
    assert again.get_run(rid) is not None
    with sqlite3.connect(again.path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with sqlite3.connect(again.path) as c:
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreVersionError, match=f"layout {SCHEMA_VERSION + 1}.*up to {SCHEMA_VERSION}"):
        RunStore(tmp_path / "b")


# --- typed records: statuses and evaluation rows --------------------------------------------------


def test_statuses_are_stored_as_their_strings(store, ds):
    """RunStatus and FitStatus members go to SQLite as the plain strings the file always held."""
    from evocov_core.fitting.optimize import FitStatus

    assert STATUSES == ("queued", "running", "finished", "cancelled", "failed", "interrupted")
    assert [s for s in RunStatus if s.active] == [RunStatus.QUEUED, RunStatus.RUNNING]
    _new_run(store, ds, "r1")
    store.set_status("r1", RunStatus.RUNNING)
    rec = dataclasses.replace(_record(1, 0), status=FitStatus.SCREENED_OUT, bic=math.inf, reason="screened out")
    store.add_generation("r1", _stats(1), [rec], n_evaluations=1, best_doc=None)
    with sqlite3.connect(store.path) as c:
        assert c.execute("SELECT status, typeof(status) FROM runs").fetchone() == ("running", "text")
        assert c.execute("SELECT status, typeof(status) FROM evaluations").fetchone() == ("screened_out", "text")
    store.finish_run("r1", RunStatus.FINISHED, best_doc=None, elapsed=1.0, n_evaluations=1)
    assert store.get_run("r1").status == RunStatus.FINISHED == "finished"
    with pytest.raises(ValueError, match="unknown status"):
        store.finish_run("r1", "done", best_doc=None, elapsed=None, n_evaluations=None)


def test_eval_record_row_round_trip(store, ds):
    """to_row is what the store writes; from_row reads it back (dict or pandas row), inf/NaN as NULL."""
    from evocov_core.fitting.optimize import FitStatus

    ok = _record(1, 0, bic=12.5, test_rmse=0.75)
    failed = EvalRecord(generation=1, index=1, expression="sqrt(-1)", canonical="sqrt(-1)", infix="sqrt(-1)", q=1,
                        bic=math.inf, lml=math.nan, metric_value=math.nan, test_rmse=None,
                        status=FitStatus.NON_FINITE, reason="covariance matrix has NaN or infinite entries",
                        origin="random", n_evals=3, seconds=0.02, theta=(), log_noise=math.nan, jitter=0.0)
    row = ok.to_row()
    assert list(row) == list(EVAL_COLUMNS)
    assert row["idx"] == 0 and row["theta_json"] == "[0.5, -1.0]" and row["status"] == "ok"
    assert failed.to_row()["bic"] is None and failed.to_row()["lml"] is None
    _new_run(store, ds, "r1")
    store.add_generation("r1", _stats(1), [ok, failed], n_evaluations=2, best_doc=None)
    ev = store.evaluations("r1")
    back = [EvalRecord.from_row(r) for _, r in ev.iterrows()]
    assert back[0] == ok and back[0].status is FitStatus.OK
    b = back[1]
    assert b.status is FitStatus.NON_FINITE and b.reason == failed.reason
    assert b.bic == math.inf and math.isnan(b.lml) and b.test_rmse is None and b.theta == ()
    assert EvalRecord.from_row(ok.to_row()) == ok  # from a plain dict too


def test_rows_written_before_the_enums_are_read(store, ds):
    """A row inserted the way EvoCov wrote them before (positional, plain strings) reopens as a fit."""
    from evocov_core.fitting.optimize import FitStatus

    _new_run(store, ds, "old")
    with sqlite3.connect(store.path) as c:
        c.executemany("INSERT INTO evaluations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
            ("old", 1, 0, "sq_dist(euc(x), hp0)", "c", "k", 2, 3.5, -1.0, -1.0, 0.5, "ok", "", "random", 9, 0.1,
             "[0.25]", -2.0, 0.0),
            ("old", 1, 1, "sq_dist(euc(x), hp0)", "c", "k", 2, None, None, None, None, "non_finite", "NaN",
             "random", 3, 0.1, "[null]", None, 0.0),
        ])
    ev = store.evaluations("old")
    good, bad = (EvalRecord.from_row(r) for _, r in ev.iterrows())
    fit = good.to_fit(n=20)
    assert fit.ok and fit.theta == (0.25,) and (fit.log_noise, fit.jitter, fit.bic, fit.q, fit.n) == (
        -2.0, 0.0, 3.5, 2, 20)
    assert (fit.lml, fit.metric_value, fit.test_rmse, fit.n_evals) == (-1.0, -1.0, 0.5, 9)
    assert bad.status is FitStatus.NON_FINITE
    with pytest.raises(ValueError, match="no usable fitted values"):
        bad.to_fit()
    failed_with_values = dataclasses.replace(good, status=FitStatus.CHOLESKY_FAILED, reason="not PD")
    with pytest.raises(ValueError, match=r"fit failed \(not PD\)"):
        failed_with_values.to_fit()
