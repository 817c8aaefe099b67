"""Many series at once (evocov_core.panel): the long table, every series forecast or given a named fallback,
a run that resumes after a kill with the same forecasts, and the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from panel_cases import FIXED
from panel_cases import long_panel as _long

from evocov_core.data.limits import DataError
from evocov_core.panel import FORECAST_COLUMNS, SERIES_COLUMNS, forecast_panel
from evocov_core.panel.series import FALLBACK, SeriesJob, forecast_series
from evocov_core.panel.store import PanelStore, file_name
from evocov_core.panel.table import guess_panel_columns, panel_from_frame

ROOT = Path(__file__).resolve().parents[2]


# --- the table -------------------------------------------------------------------------------------------------


def test_a_long_table_splits_into_series_with_their_own_times():
    shuffled = _long(2).sample(frac=1.0, random_state=1)  # rows in any order
    panel = panel_from_frame(shuffled, season_length=12)
    assert [s.uid for s in panel.series] == list(dict.fromkeys(shuffled.unique_id))  # in order of first appearance
    gaps = next(s for s in panel.series if s.uid == "gaps")
    assert gaps.missing == 4 and gaps.y.size == 32 and np.all(np.isfinite(gaps.y))
    assert np.all(np.diff(gaps.x) > 0) and np.isclose(gaps.x[3] - gaps.x[2], 2 / 12)  # the gap kept in time
    assert panel.x_label == "year" and np.array_equal(panel.to_ds(gaps.x[:3]), [0, 1, 2])
    dates = pd.DataFrame({"unique_id": ["a"] * 24, "ds": pd.date_range("2020-01-01", periods=24, freq="MS"),
                          "y": np.arange(24.0)})
    dp = panel_from_frame(dates)
    assert dp.ds_kind == "date" and np.isclose(dp.series[0].x[1] - dp.series[0].x[0], 1 / 12)
    assert str(dp.to_ds(dp.series[0].x[:1])[0]).startswith("2020-01-01")
    # Months forecast at month starts, days at their dates.
    assert [str(d)[:10] for d in dp.to_ds(dp.series[0].x[-1] + np.arange(1, 4) / 12)] == [
        "2022-01-01", "2022-02-01", "2022-03-01"]
    daily = panel_from_frame(dates.assign(ds=pd.date_range("2020-01-06", periods=24, freq="D")))
    assert str(daily.to_ds(daily.series[0].x[-1:] + 1 / 365.2425)[0])[:10] == "2020-01-30"


def test_columns_are_guessed_and_can_be_named():
    df = pd.DataFrame({"item": ["a", "a"], "date": ["2020-01-01", "2020-02-01"], "sales": [1.0, 2.0]})
    assert guess_panel_columns(df) == ("item", "date", "sales")
    odd = df.rename(columns={"item": "who", "sales": "how_many"})
    assert panel_from_frame(odd, id_col="who", y_col="how_many").series[0].uid == "a"
    with pytest.raises(DataError, match="no unique_id column"):
        panel_from_frame(odd.rename(columns={"who": "zz"}).drop(columns=["how_many"]).assign(q="x"))


@pytest.mark.parametrize(("frame", "message"), [
    (pd.DataFrame({"unique_id": ["a", "a"], "ds": [1, 1], "y": [1.0, 2.0]}),
     r"series 'a' has two rows at ds 1 \(row 3 repeats an earlier one\)"),
    (pd.DataFrame({"unique_id": ["a", "a"], "ds": [1, 2], "y": ["1.5", "lots"]}),
     r"column 'y' \(y\) holds 'lots' in row 3, which is not a number"),
    (pd.DataFrame({"unique_id": ["a", "a"], "ds": ["np.float64(1.0)", "np.float64(2.0)"], "y": [1.0, 2.0]}),
     r"column 'ds' \(ds\) holds 'np.float64\(1.0\)' in row 2, which is neither a date nor a number; nothing was "
     r"guessed"),
    (pd.DataFrame({"unique_id": ["a", None], "ds": [1, 2], "y": [1.0, 2.0]}),
     r"column 'unique_id' \(unique_id\) is empty in row 3"),
    (pd.DataFrame({"unique_id": [], "ds": [], "y": []}), "the table has no rows"),
])
def test_bad_tables_get_one_line_that_names_the_column_and_row(frame, message):
    with pytest.raises(DataError, match=message) as err:
        panel_from_frame(frame)
    assert "\n" not in str(err.value)


def test_file_names_are_safe_for_any_unique_id(tmp_path):
    assert file_name("N0001") == "N0001"
    odd = file_name("../etc/passwd")
    assert "/" not in odd and odd.startswith("etc_passwd-") and odd != file_name("../etc/passwd2")
    assert file_name("a b") != file_name("a_b") and file_name("..") != ".."
    store = PanelStore(tmp_path / "run", {"h": 3})
    store.save("../x y", np.arange(3.0), {"mean": np.ones(3)}, {"status": "ok"}, "{}")
    assert set(store.done()) == {"../x y"} and not (tmp_path / "x y.json").exists()
    with pytest.raises(DataError, match="holds a panel run with other h"):
        PanelStore(tmp_path / "run", {"h": 4})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="is not a panel run's folder"):
        PanelStore(tmp_path / "other", {"h": 3})


# --- one series -------------------------------------------------------------------------------------------------


def _job(y: np.ndarray, **kw) -> SeriesJob:
    x = np.arange(y.size) / 12.0
    return SeriesJob(kw.pop("uid", "a"), x, y, "number", "year", kw.pop("h", 4), "panel", FIXED, 0, (12,), 0, 1 / 12,
                     **kw)


@pytest.mark.parametrize(("y", "why", "status"), [
    (np.full(30, 5.0), "the series is constant", "fallback"),
    (np.arange(3.0), "3 observed points: a search needs at least 10", "fallback"),
    (np.array([7.0]), "1 observed point", "fallback"),
    (np.array([]), "no observed value", "no_data"),
])
def test_series_the_search_cannot_serve_get_a_named_fallback(y, why, status):
    out = forecast_series(_job(y))
    assert out.row["status"] == status and out.row["reason"].startswith(why)
    assert out.kernel_file is None and np.all(np.isnan(out.forecast["kernel-mean"]))
    if status == "fallback":
        assert np.all(np.isfinite(out.forecast["mean"])) and out.forecast["mean"][0] == y[-1]
        assert np.all(np.diff(out.x) > 0) and out.x[0] > (y.size - 1) / 12
    if y.size >= 3:
        assert FALLBACK in out.row["forecast"]
        lo, hi = out.forecast["lo-95"], out.forecast["hi-95"]
        assert np.all(lo <= out.forecast["lo-80"]) and np.all(out.forecast["hi-80"] <= hi)


def test_a_bug_in_one_series_is_its_row_not_the_panels_end(monkeypatch):
    import evocov_core.panel.series as series

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(series, "unserved", broken)
    out = forecast_series(_job(np.sin(np.arange(30.0))))
    assert out.row["status"] == "error" and out.row["reason"].startswith("KeyError: 'a bug' (test_panel.py:")


# --- the panel ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def panel_run(tmp_path_factory):
    df = _long()
    out = tmp_path_factory.mktemp("panel") / "run"
    import evocov_core as ec  # the front door: the kernels described in words too

    return df, out, ec.forecast_panel(df, 6, season_length=12, workers=1, out=out, **FIXED)


def test_every_series_and_step_gets_a_forecast_and_the_bad_ones_are_marked(panel_run):
    df, out, res = panel_run
    assert list(res.forecasts.columns) == list(FORECAST_COLUMNS) and list(res.series.columns) == list(SERIES_COLUMNS)
    assert res.forecasts.groupby("unique_id").size().to_dict() == {u: 6 for u in df.unique_id.unique()}
    assert np.all(np.isfinite(res.forecasts["EvoCov"])) and res.errors == 0
    rows = res.series.set_index("unique_id")
    assert rows.loc["const", "status"] == rows.loc["three", "status"] == "fallback"
    assert rows.loc["gaps", "status"] == "ok" and rows.loc["gaps", "missing"] == 4 and rows.loc["gaps", "n"] == 32
    ok = rows[rows.status == "ok"]
    assert (ok.kernel_infix != "").all() and (ok.kernel != "").all() and np.isfinite(ok.bic.astype(float)).all()
    assert ok.forecast.str.contains("kernel").all() and (ok.cpu_s.astype(float) > 0).all()
    # The product's forecast weighs the kernel with AutoETS and AutoTheta on at least one series, and its
    # intervals nest; the kernel's own is there beside it.
    assert ok.forecast.str.contains("AutoETS").any()
    f = res.forecasts
    assert (f["EvoCov-lo-95"] <= f["EvoCov-lo-80"]).all() and (f["EvoCov-lo-80"] <= f["EvoCov"]).all()
    assert (f["EvoCov"] <= f["EvoCov-hi-80"]).all() and (f["EvoCov-hi-80"] <= f["EvoCov-hi-95"]).all()
    kern = f[f.unique_id.isin(ok.index)]
    assert np.all(np.isfinite(kern["EvoCov-kernel"])) and (kern["EvoCov-kernel-lo-95"] < kern["EvoCov-kernel"]).all()
    # The steps follow each series' last ds, as whole numbers.
    s0 = f[f.unique_id == "s0"].ds.to_numpy()
    assert list(s0) == list(range(40, 46))
    # The folder: the tables and one kernel file per searched series.
    assert pd.read_csv(out / "forecasts.csv").shape == f.shape
    assert sorted(p.stem for p in (out / "kernels").glob("*.json")) == sorted(ok.index)
    assert json.loads((out / "kernels" / "s0.json").read_text())["format"] == "evocov-kernel"


def test_a_second_run_reads_the_finished_series_and_gives_the_same_tables(panel_run):
    df, out, res = panel_run
    again = forecast_panel(df, 6, season_length=12, workers=1, out=out, **FIXED)
    assert again.resumed == len(res.series)  # the words were written with the parts: read back, not redone
    pd.testing.assert_frame_equal(again.forecasts, res.forecasts)
    pd.testing.assert_frame_equal(again.series, res.series)
    with pytest.raises(DataError, match="other h"):
        forecast_panel(df, 5, season_length=12, workers=1, out=out, **FIXED)
    with pytest.raises(DataError, match="other data"):
        forecast_panel(df.assign(y=df.y + 1), 6, season_length=12, workers=1, out=out, **FIXED)


def test_local_processes_give_the_same_forecasts_as_this_process(panel_run):
    df, _, res = panel_run
    sub = df[df.unique_id.isin(["s0", "s3", "three"])]
    pooled = forecast_panel(sub, 6, season_length=12, workers=2, **FIXED)
    assert (pooled.series.kernel == "").all()  # the panel layer itself describes nothing
    want = res.forecasts[res.forecasts.unique_id.isin(["s0", "s3", "three"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(pooled.forecasts, want)


def _cli(*args: str, cwd: Path = ROOT, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "evocov_core", "panel", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def _fixed_flags() -> list[str]:
    out = []
    for k, v in FIXED.items():
        out += [f"--{k.replace('_', '-')}", str(v)]
    return out


def test_the_command_resumes_after_a_kill_with_the_same_forecasts(panel_run, tmp_path):
    """Killed with SIGKILL midway (the whole process group), run again: the finished series are read, the rest
    run, and the tables equal an uninterrupted run's."""
    df, _, res = panel_run
    data = tmp_path / "long.csv"
    df.to_csv(data, index=False)
    out = tmp_path / "run"
    args = ["--data", str(data), "--horizon", "6", "--season-length", "12", "--out", str(out), "--workers", "1",
            *_fixed_flags()]
    proc = _cli(*args)
    t0 = time.time()
    while len(list((out / "parts").glob("*.json"))) < 3 if (out / "parts").exists() else True:
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < 120
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done = len(list((out / "parts").glob("*.json")))
    assert 3 <= done < len(res.series) and not (out / "forecasts.csv").exists()
    again = _cli(*args)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr
    assert f"{done} read from an earlier run" in stdout and "Traceback" not in stderr
    got = pd.read_csv(out / "forecasts.csv", float_precision="round_trip")
    want = res.forecasts.copy()
    want["ds"] = want["ds"].astype(np.int64)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert "const: the series is constant" in stdout and "three: 3 observed points" in stdout


@pytest.mark.parametrize(("frame", "message"), [
    (pd.DataFrame({"unique_id": ["a", "a"], "ds": [1, 1], "y": [1.0, 2.0]}), "has two rows at ds 1"),
    (pd.DataFrame({"unique_id": ["a", "a"], "ds": [1, 2], "y": ["x", "2"]}), "which is not a number"),
])
def test_the_command_says_what_is_wrong_with_a_table_in_one_line(tmp_path, frame, message):
    data = tmp_path / "bad.csv"
    frame.to_csv(data, index=False)
    proc = _cli("--data", str(data), "--horizon", "3", "--out", str(tmp_path / "o"))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2 and message in stderr and "Traceback" not in stderr
    assert stderr.count("\n") == 1


def test_settings_are_checked_before_any_series_runs():
    from evocov_core.searches.config import ConfigError

    with pytest.raises(ConfigError, match="unknown setting"):
        forecast_panel(_long(1, bad=False), 3, season_length=12, workers=1, no_such_setting=1)
    with pytest.raises(DataError, match="horizon"):
        forecast_panel(_long(1, bad=False), 0, season_length=12, workers=1)
    with pytest.raises(DataError, match="budget"):
        forecast_panel(_long(1, bad=False), 3, season_length=12, workers=1, budget=-1)


def test_the_holdout_ratio_is_the_refitted_forecast_of_the_last_h_points_against_autoets(panel_run):
    """series.csv's holdout ratio, recomputed here: the kernel refitted from its values on all but the last h points,
    its forecast of them, and AutoETS fitted on the same points (statsforecast called directly)."""
    from statsforecast.models import AutoETS

    from evocov_core.data import Dataset
    from evocov_core.fitting.model import FittedModel
    from evocov_core.fitting.optimize import fit_kernel
    from evocov_core.forecast.combination import Combination
    from evocov_core.panel.series import holdout_ratios
    from evocov_core.runs.kernel_file import load_kernel_file
    from evocov_core.searches import preset, search_data

    df, out, res = panel_run
    rows = res.series.set_index("unique_id")
    assert np.isfinite(rows.loc[rows.status == "ok", "holdout_ratio"].astype(float)).all()
    assert rows.loc[["const", "three"], "holdout_ratio"].isna().all()
    y = df[df.unique_id == "s2"].y.to_numpy()
    ds = Dataset.from_arrays(np.arange(y.size) / 12, y, test_fraction=0.0, x_label="year")
    job = SeriesJob("s2", ds.x[:, 0], y, "number", "year", 6, "panel", FIXED, 0, (12,))
    best = load_kernel_file(out / "kernels" / "s2.json").to_fit(ds.n)
    config = preset("panel", **FIXED)
    ratio, kernel_ratio = holdout_ratios(ds, job, best, config, Combination())
    head = Dataset.from_arrays(ds.x[:-6, 0], y[:-6], test_fraction=0.0, x_label="year")
    fit = fit_kernel(best.kernel, search_data(head, config), config.optim, np.random.default_rng(0), best.start())
    mean = FittedModel.from_fit(fit, head.norm, head.n).predict_mean(head.X_train, head.y_train, ds.x[-6:])
    ets = AutoETS(season_length=12).forecast(y=y[:-6], h=6)["mean"]
    want = np.sqrt(np.mean((mean - y[-6:]) ** 2)) / np.sqrt(np.mean((ets - y[-6:]) ** 2))
    assert ratio == kernel_ratio == pytest.approx(want, rel=1e-9)


def test_panel_priors_are_learned_from_the_panels_series_and_every_search_uses_them(tmp_path):
    """Empirical Bayes across the panel: a prior by role from the series' own fits, kept in the run's folder,
    read back on resume, and the series' kernels fitted under it (priors="panel")."""
    import json

    from evocov_core.fitting.priors import PRIORS
    from evocov_core.panel.priors import MIN_SERIES, prior_from_estimates
    from evocov_core.searches import preset
    from evocov_core.searches.config import ConfigError

    # The aggregation: each series weighs one, a robust centre and spread, no prior from too few series.
    per_series = [[("lengthscale", float(i)), ("lengthscale", float(i)), ("noise", -3.0)] for i in range(11)]
    prior = prior_from_estimates(per_series)
    assert prior.table == {"lengthscale": (5.0, pytest.approx(1.4826 * 3, abs=1e-3))} and prior.noise == (-3.0, 0.5)
    with pytest.raises(ValueError, match=f"on {MIN_SERIES} series"):
        prior_from_estimates(per_series[:MIN_SERIES - 1])
    PRIORS["panel"] = None
    with pytest.raises(ConfigError, match="panel priors"):
        preset("panel", priors="panel")

    df = _long(12, bad=False)
    out = tmp_path / "run"
    res = forecast_panel(df, 6, season_length=12, workers=1, out=out, panel_priors=True, **FIXED)
    doc = json.loads((out / "prior.json").read_text())
    assert {r[0] for r in doc["roles"]} >= {"value", "lengthscale"} and doc["noise"] is not None
    kf = json.loads((out / "kernels" / "s0.json").read_text())
    assert kf["run"]["settings"]["priors"] == "panel" and res.errors == 0
    again = forecast_panel(df, 6, season_length=12, workers=1, out=out, panel_priors=True, **FIXED)
    assert again.resumed == 12
    pd.testing.assert_frame_equal(again.forecasts, res.forecasts)


def test_a_run_an_earlier_version_wrote_with_the_grammars_booleans_resumes(tmp_path):
    """A manifest with ``changepoints``/``statespace`` booleans is rewritten with ``families``, as the
    settings of today's call are, so the store finds the same run; other manifests are left as they are."""
    import json

    from evocov_core.panel.run import _upgrade_manifest
    from evocov_core.searches.config import current_settings

    old = {"format": "evocov-panel", "version": 1, "h": 6,
           "settings": {"changepoints": True, "horizon": 6, "statespace": False, "time_budget": 2.0}}
    path = tmp_path / "panel.json"
    path.write_text(json.dumps(old))
    _upgrade_manifest(path)
    new = json.loads(path.read_text())
    assert new["settings"] == {"families": ["changepoint"], "horizon": 6, "time_budget": 2.0}
    assert {k: v for k, v in new.items() if k != "settings"} == {k: v for k, v in old.items() if k != "settings"}
    assert current_settings({"changepoints": True, "horizon": 6, "time_budget": 2.0}) == new["settings"]
    text = path.read_text()
    _upgrade_manifest(path)  # today's manifest: untouched
    assert path.read_text() == text
    (tmp_path / "bad.json").write_text("{not json")
    _upgrade_manifest(tmp_path / "bad.json")  # the store refuses it with its own message
    assert (tmp_path / "bad.json").read_text() == "{not json"
