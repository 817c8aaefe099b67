"""The frozen, typed run record the store hands back (evocov_core.runs.run_record)."""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.optimize import FitResult, FitStatus
from evocov_core.language.library import periodic, squared_exponential
from evocov_core.runs.kernel_file import kernel_file_dict
from evocov_core.runs.run_record import KernelRecord, RunRecord
from evocov_core.runs.store import RunStore, dataset_to_json
from evocov_core.searches.common import EvalRecord, GenerationStats, RunStatus
from evocov_core.searches.explore import neighbour_ratios


@pytest.fixture
def ds() -> Dataset:
    x = np.linspace(0.0, 5.0, 30)
    return Dataset.from_arrays(x, np.sin(x), name="toy", test_fraction=0.2)


def _fit(kernel=None, bic: float = 12.5, rmse: float | None = 0.25) -> FitResult:
    k = kernel or squared_exponential()
    return FitResult(k, tuple(0.1 * i for i in range(k.n_params)), -3.0, 0.0, FitStatus.OK, "", "lml", -5.0,
                     -5.0, bic, k.q, 24, 9, 0.1, rmse)


def _doc(fit: FitResult, ds: Dataset) -> dict:
    return kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, test_fraction=ds.test_fraction)


def test_a_search_round_trips_through_the_store(tmp_path: Path, ds: Dataset) -> None:
    store = RunStore(tmp_path)
    best, other = _fit(), _fit(periodic(), bic=14.0, rmse=0.5)
    store.create_run("r1", kind="search", algorithm="evocov", dataset=ds, settings={"generations": 7,
                     "time_budget": 60.0, "metric_split": 0.1}, seed=3, label="one")
    store.add_generation("r1", GenerationStats(1, 12.5, 13.0, 12.5, 2, 0, False, 0.5), [], 2, _doc(best, ds))
    selection = [{"rank": 1, "expression": best.kernel.prefix, "bic": 12.5, "chosen": False},
                 {"rank": 2, "expression": other.kernel.prefix, "bic": 14.0, "chosen": True}]
    store.finish_run("r1", RunStatus.FINISHED, best_doc=_doc(other, ds), elapsed=2.5, n_evaluations=2,
                     extra={"selection": selection, "lowest_bic": _doc(best, ds),
                            "ensemble": [{"weight": 0.75, "kernel": _doc(other, ds)},
                                         {"weight": 0.25, "kernel": _doc(best, ds)}]})
    run = store.get_run("r1")
    assert isinstance(run, RunRecord) and run.status is RunStatus.FINISHED
    assert (run.id, run.kind, run.algorithm, run.seed, run.label) == ("r1", "search", "evocov", 3, "one")
    assert (run.n_evaluations, run.generations_done, run.elapsed) == (2, 1, 2.5)
    assert run.dataset is not None and np.array_equal(run.dataset.y, ds.y) and run.dataset_name == "toy"
    assert run.best.expression == other.kernel.prefix
    assert (run.best.infix, run.best.q, run.best.bic, run.best.test_rmse) == (other.kernel.infix, other.q, 14.0, 0.5)
    assert run.best_bic == 14.0 and run.total_generations == 7 and run.time_budget == 60.0
    assert run.best.to_fit(ds.n_train).kernel == other.kernel and run.best.to_fit().theta == other.theta
    assert run.lowest_bic is not None and run.lowest_bic.bic == 12.5 and not run.lowest_bic.same_model(run.best)
    assert [(m.weight, m.kernel.expression) for m in run.ensemble] == [(0.75, other.kernel.prefix),
                                                                      (0.25, best.kernel.prefix)]
    assert [r["rank"] for r in run.selection] == [1, 2] and run.selection[1]["chosen"] is True
    assert run.neighbours is None and run.base is None and run.error is None


def test_the_record_is_frozen(tmp_path: Path, ds: Dataset) -> None:
    store = RunStore(tmp_path)
    store.create_run("r1", kind="search", algorithm="evocov", dataset=ds, settings={"population": 4}, seed=0)
    run = store.get_run("r1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = RunStatus.FAILED  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.settings["population"] = 5  # type: ignore[index]
    doc = _doc(_fit(), ds)
    kr = KernelRecord.from_doc(doc)
    kr.doc["q"] = 99  # a copy
    assert kr.doc["q"] == doc["q"]


def test_absent_parts_are_none(tmp_path: Path, ds: Dataset) -> None:
    store = RunStore(tmp_path)
    store.create_run("r1", kind="search", algorithm="gpss", dataset=ds, settings={}, seed=0)
    run = store.get_run("r1")
    assert run.status is RunStatus.QUEUED and run.best is None and run.best_bic is None
    assert run.lowest_bic is None and run.ensemble == () and run.selection == () and run.neighbours is None
    assert run.total_generations is None and run.time_budget == 0.0 and run.error is None
    # A best kernel whose scores lack a test RMSE (no test part) and a malformed ensemble entry.
    doc = _doc(_fit(rmse=None), ds)
    store.finish_run("r1", RunStatus.FINISHED, best_doc=doc, elapsed=1.0, n_evaluations=1,
                     extra={"ensemble": [{"weight": 1.0}, "junk", {"weight": None, "kernel": doc}]})
    run = store.get_run("r1")
    assert run.best.test_rmse is None and run.best.bic == 12.5
    assert [(m.weight, m.kernel.expression) for m in run.ensemble] == [(None, doc["expression"])]
    assert store.get_run("nope") is None


def test_rows_of_the_previous_layout_are_read(tmp_path: Path, ds: Dataset) -> None:
    """A store file from before versioning (user_version 0), its rows written by older EvoCovs: NULL counters,
    no extra, a best kernel from before provenance and the model average."""
    path = tmp_path / "runs.sqlite3"
    RunStore(path)  # the layout; then made to look old
    old_best = {k: v for k, v in _doc(_fit(), ds).items() if k != "git"}
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA user_version = 0")
        c.execute("INSERT INTO runs (id, kind, algorithm, status, created, updated, dataset_name, dataset_json,"
                  " settings_json, seed, label, best_json, n_evaluations, generations_done, elapsed, error,"
                  " owner_pid, extra_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,NULL)",
                  ("old", "search", "evocov", "finished", 1.0, 2.0, "toy", dataset_to_json(ds),
                   json.dumps({"generations": 3}), 5, None, json.dumps(old_best)))
        c.execute("INSERT INTO runs (id, kind, algorithm, status, created, updated) VALUES (?,?,?,?,?,?)",
                  ("bare", "explore", "explore", "interrupted", 1.0, 1.0))
    store = RunStore(path)
    run = store.get_run("old")
    assert run.status is RunStatus.FINISHED and run.best.bic == 12.5 and run.best.to_fit().ok
    assert (run.n_evaluations, run.generations_done, run.elapsed, run.label, run.owner_pid) == (0, 0, 0.0, "", None)
    assert run.ensemble == () and run.extra == {} and run.total_generations == 3
    bare = store.get_run("bare")
    assert bare.dataset is None and bare.settings == {} and bare.best is None and bare.seed is None
    assert bare.neighbours is not None and bare.neighbours.base_q is None
    assert all(math.isnan(v) for v in bare.neighbour_ratios(store.evaluations("bare")))


def test_an_exploration_s_ratios_come_from_the_core_while_it_runs(tmp_path: Path, ds: Dataset) -> None:
    store = RunStore(tmp_path)
    base = _fit(rmse=0.3)
    store.create_run("x", kind="explore", algorithm="explore", dataset=ds, settings={"n_mutations": 4}, seed=0,
                     extra={"base": _doc(base, ds)})
    recs = [EvalRecord(1, i, "hp(hp0)", "c", "k", q, 1.0, 0.0, 0.0, rm, st, "", "mutation", 1, 0.1, (0.0,), -3.0,
                       0.0)
            for i, (q, rm, st) in enumerate([(2, 0.1, "ok"), (4, 0.2, "ok"), (2, 0.5, "ok"),
                                             (2, None, "cholesky_failed")])]
    store.add_generation("x", GenerationStats(1, 1.0, 1.0, 1.0, 4, 1, False, 0.1), recs, 4, None)
    run = store.get_run("x")
    assert run.n_mutations == 4 and run.base.test_rmse == 0.3
    assert run.neighbours.base_q == base.q and run.neighbours.better_fitted is None
    got = run.neighbour_ratios(store.evaluations("x"))
    assert got == neighbour_ratios(base, recs) == (0.5, 0.75, 0.25)
    # Once ended, the stored ratios (the base rescored on these data) are what counts.
    store.finish_run("x", RunStatus.FINISHED, best_doc=None, elapsed=1.0, n_evaluations=4,
                     extra={"better_fitted": 0.25, "simpler": 0.75, "both": 0.0, "base_q": 3, "base_test_rmse": 0.15})
    done = store.get_run("x")
    assert done.neighbours.base_test_rmse == 0.15
    assert done.neighbour_ratios(store.evaluations("x")) == (0.25, 0.75, 0.0)
