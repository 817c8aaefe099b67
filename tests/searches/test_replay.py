"""Reproducible budgeted runs (evocov_core.searches.replay): a timed run's log replayed without a clock."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evocov_core.data import Dataset, load_bundled
from evocov_core.forecast.stage import search_and_forecast
from evocov_core.searches import RunLog, preset, run_search, search_data
from evocov_core.searches.run_file import replay_inputs

ROOT = Path(__file__).resolve().parents[2]


def _signature(result) -> list[tuple]:
    """Every fit of a run: what it fitted and what it found."""
    return [(r.generation, r.index, r.canonical, r.bic, r.n_evals, str(r.status)) for r in result.records]


@pytest.mark.slow
@pytest.mark.parametrize(("series", "budget", "workers"), [("airline", 4.0, 1), ("co2", 6.0, 1), ("co2", 8.0, 2)])
def test_a_replay_returns_the_timed_runs_kernel_and_fits(series, budget, workers):
    """Same settings, seed and log: the same fits, kernel and BIC, though the replay has no clock
    (co2 has 468 training points: screening and promotions are replayed too)."""
    ds = load_bundled(series)
    config = preset("quick").with_(time_budget=budget)
    data = search_data(ds, config)
    timed = run_search(data, config, seed=5, workers=workers)
    assert timed.budget_spent and timed.run_log.stop is not None and timed.run_log.fits
    again = run_search(data, config, seed=5, workers=workers, replay=timed.run_log)
    assert again.best.kernel.canonical == timed.best.kernel.canonical
    assert again.best.bic == timed.best.bic
    assert _signature(again) == _signature(timed)
    assert [r["canonical"] for r in again.selection] == [r["canonical"] for r in timed.selection]
    # The returned kernel's refits at the origins (its calibration, the forecast combination's choice)
    # ran on the executor, so they are replayed too.
    assert again.calibration == timed.calibration
    assert (again.origins is None) == (timed.origins is None)
    if timed.origins is not None:
        np.testing.assert_array_equal(again.origins.mean, timed.origins.mean)
    assert again.run_log == timed.run_log  # it used exactly the fits it was told to


def test_a_replay_of_a_run_choosing_by_refitted_origins_makes_the_same_choice():
    """``choice="refit_origins"``: the choice's refits at the origins are in the log, and the replay
    refits with the same evaluations, so it scores and chooses the same kernel."""
    ds = load_bundled("airline")
    config = preset("quick").with_(time_budget=4.0, choice="refit_origins")
    data = search_data(ds, config)
    timed = run_search(data, config, seed=2, workers=1)
    assert timed.budget_spent and len(timed.selection) > 1
    again = run_search(data, config, seed=2, workers=1, replay=timed.run_log)
    assert again.best.kernel.canonical == timed.best.kernel.canonical and again.best.bic == timed.best.bic
    assert [r["origins_crps"] for r in again.selection] == [r["origins_crps"] for r in timed.selection]
    assert again.calibration == timed.calibration
    assert again.run_log == timed.run_log


def test_the_test_part_never_takes_part_in_a_choice():
    """Scrambling the test part's outputs leaves the search's result unchanged: the same log
    replayed on scrambled test data returns the same kernel, BIC and fits."""
    ds = load_bundled("airline")
    config = preset("quick").with_(time_budget=3.0)
    timed = run_search(search_data(ds, config), config, seed=1, workers=1)
    rng = np.random.default_rng(0)
    y = ds.y.copy()
    y[~ds.train] = rng.permutation(y[~ds.train]) * 3.0 + 100.0
    # The same x (dates: the seasons the seeds start at are read from them), scrambled test outputs.
    scrambled = Dataset.from_arrays(ds.x, y, name="scrambled", test_fraction=ds.test_fraction, x_kind=ds.x_kind,
                                    x_label=ds.x_label)
    assert np.array_equal(scrambled.train, ds.train) and not np.array_equal(scrambled.y_test, ds.y_test)
    again = run_search(search_data(scrambled, config), config, seed=1, workers=1, replay=timed.run_log)
    assert again.best.kernel.canonical == timed.best.kernel.canonical and again.best.bic == timed.best.bic
    assert [(r.canonical, r.bic) for r in again.records] == [(r.canonical, r.bic) for r in timed.records]
    assert again.best.test_rmse != timed.best.test_rmse  # the test part did change


def test_the_forecast_combination_ignores_the_test_part():
    """The forecast's weights and the guard are made from the training part alone: the classical models
    and the kernel's refits at the origins see only training points, and the guard compares forecasts of
    the test inputs, not their outputs. Scrambled test outputs give the same combination."""
    ds = load_bundled("airline")
    config = preset("quick-fixed").with_(population=8, mu=2, generations=2, calibration="origins",
                                         combine=("AutoETS", "AutoTheta"))
    y = ds.y.copy()
    y[~ds.train] = np.random.default_rng(0).permutation(y[~ds.train]) * 3.0 + 100.0
    other = Dataset.from_arrays(ds.x, y, test_fraction=ds.test_fraction)
    a = search_and_forecast(search_data(ds, config), config, seed=0, workers=1, dataset=ds)
    b = search_and_forecast(search_data(other, config), config, seed=0, workers=1, dataset=other)
    assert a.combination.origins == 4 and not a.combination.reason
    assert a.combination == b.combination and a.search.best.kernel.canonical == b.search.best.kernel.canonical
    assert a.test_rmse(ds) != b.test_rmse(other)  # the test part did change


def test_fixed_count_search_ignores_the_test_part():
    """Without a budget (fixed N × G fits) the same holds with no log at all."""
    ds = load_bundled("airline")
    config = preset("quick-fixed").with_(population=8, mu=2, generations=2)
    y = ds.y.copy()
    y[~ds.train] = 0.0
    other = Dataset.from_arrays(ds.x, y, test_fraction=ds.test_fraction)
    a = run_search(search_data(ds, config), config, seed=0, workers=1)
    b = run_search(search_data(other, config), config, seed=0, workers=1)
    assert [(r.canonical, r.bic) for r in a.records] == [(r.canonical, r.bic) for r in b.records]


@pytest.mark.parametrize("bad", [
    None, [], {"fits": "x"}, {"fits": [[1]]}, {"fits": [[1, 2, -3]]}, {"fits": [[1, True]]},
    {"fits": [], "stop": ["later", 3]}, {"fits": [], "stop": ["batch", 0]},
])
def test_a_malformed_log_is_refused(bad):
    with pytest.raises(ValueError, match="run log"):
        RunLog.from_dict(bad)


def test_log_round_trip_and_run_record_validation():
    log = RunLog({(3, 1, 4): 60, (3, 2, 0, 1): 7}, ("batch", 4))
    assert RunLog.from_dict(json.loads(json.dumps(log.to_dict()))) == log
    with pytest.raises(ValueError, match="no record of its search"):
        replay_inputs(None)
    config = preset("quick")
    run = {"seed": 2, "settings": config.to_dict(), "log": log.to_dict()}
    got, seed, back = replay_inputs(run)
    assert got == config and seed == 2 and back == log
    with pytest.raises(ValueError, match="unknown setting"):
        replay_inputs({**run, "settings": {**config.to_dict(), "eval": "1"}})


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evocov_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_cli_replay_reproduces_a_timed_search(tmp_path):
    out = tmp_path / "best.json"
    res = _cli("search", "--data", "data/airline.csv", "--time-budget", "5", "--workers", "1", "--seed", "3",
               "--quiet", "--out", str(out))
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["run"]["seed"] == 3 and doc["run"]["log"]["fits"] and doc["git"] is not None
    rep = _cli("search", "--replay", str(out), "--data", "data/airline.csv", "--workers", "1", "--quiet")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "replay reproduces" in rep.stdout
    # A file whose BIC does not match is reported as such (exit 1), not silently accepted.
    doc["scores"]["bic"] = doc["scores"]["bic"] + 1.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    rep = _cli("search", "--replay", str(bad), "--data", "data/airline.csv", "--workers", "1", "--quiet")
    assert rep.returncode == 1 and "replay differs" in rep.stdout


def test_cli_replay_of_a_file_without_a_run_is_one_line(tmp_path):
    # A real kernel file, written before kernel files recorded their search.
    doc = json.loads((ROOT / "tests/fixtures/kernel_v1.json").read_text())
    doc.pop("run", None)
    f = tmp_path / "old.json"
    f.write_text(json.dumps(doc))
    res = _cli("search", "--replay", str(f), "--data", "data/airline.csv")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "no record of its search" in res.stderr


def test_replayed_run_log_is_kept_on_replace():
    """SearchResult carries its log through dataclasses.replace (the model choice replaces fields)."""
    from evocov_core.searches.common import SearchResult

    r = SearchResult("evocov", None, "finished", (), (), 0, 0, 0.0, run_log=RunLog({(1,): 2}, None))
    assert replace(r, elapsed=1.0).run_log == r.run_log
