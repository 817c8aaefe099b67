"""Covariates with known futures (issue 73, item 3): read as input columns after time, their linear effect
estimated and used or left out, the kernel searched on what they leave, their future values required."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_cases import TINY, cli

from bench.covariates import synthetic
from evocov_core.data import DataError, load_csv
from evocov_core.data.frame import dataset_from_frame
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.forecast.covariates import (
    CovariateEffect,
    fit_covariates,
    forecast_with_covariates,
    future_covariates,
    on_time,
)
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import kernel_file_dict, parse_kernel_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def series():
    return synthetic(0)


def test_covariates_are_input_columns_after_time(series):
    hist, _, _ = series
    ds = dataset_from_frame(hist, "month", "y", covariates=("temp",), test_fraction=0.0)
    assert ds.x.shape == (150, 2) and ds.covariates == ("temp",)
    assert np.allclose(ds.x[:, 1], hist["temp"])
    text = "t,temp,y\n" + "".join(f"{i},{'' if i == 4 else i % 5},{2 * i}\n" for i in range(20))
    with pytest.raises(DataError, match="--missing keep"):
        load_csv(io.BytesIO(text.encode()), x="t", y="y", covariates=["temp"])
    kept = load_csv(io.BytesIO(text.encode()), x="t", y="y", covariates=["temp"], missing="keep")
    assert kept.n == 19 and 4.0 not in kept.x[:, 0]  # a row without its covariate is a point not observed
    with pytest.raises(DataError, match="no covariate column named 'rain'"):
        load_csv(io.BytesIO(text.encode()), x="t", y="y", covariates=["rain"])
    # y chosen, x not: x is still the first column (a number here), not the row number
    assert load_csv(io.BytesIO(text.encode()), y="y", covariates=["temp"], missing="keep").x_label == "t"


def test_the_effect_is_used_when_it_explains_y_and_left_out_when_not(series):
    hist, _, _ = series
    ds = dataset_from_frame(hist, "month", "y", covariates=("temp",), test_fraction=0.0)
    eff = fit_covariates(ds)
    assert eff.used and eff.coef[0] == pytest.approx(3.0, abs=0.15) and "temp: used, temp +" in eff.reason
    noise = hist.assign(temp=np.random.default_rng(5).normal(size=len(hist)))
    other = fit_covariates(dataset_from_frame(noise, "month", "y", covariates=("temp",), test_fraction=0.0))
    assert not other.used and other.coef == (0.0,) and "left out" in other.reason
    timed = on_time(ds, eff)
    assert timed.x.shape == (150, 1) and timed.covariates == ()
    assert np.allclose(timed.y, hist["y"] - eff.coef[0] * hist["temp"])
    assert CovariateEffect.from_dict(json.loads(json.dumps(eff.to_dict()))) == eff
    with pytest.raises(ValueError, match="as many 'names'"):
        CovariateEffect.from_dict({"names": ["a"], "coef": []})


def test_future_values_are_required_column_and_value(series):
    hist, future, _ = series
    ds = on_time(dataset_from_frame(hist, "month", "y", covariates=("temp",), test_fraction=0.0),
                 CovariateEffect(("temp",), (3.0,), True, ""))
    eff = CovariateEffect(("temp",), (3.0,), True, "")
    x, C = future_covariates(future.iloc[::-1], ds, eff)  # any order: sorted by time
    assert np.all(np.diff(x) > 0) and np.allclose(C[:, 0], future["temp"])
    with pytest.raises(DataError, match="the future values have no column 'temp'"):
        future_covariates(future.rename(columns={"temp": "temperature"}), ds, eff)
    holed = future.assign(temp=future["temp"].where(future.index != 3))
    with pytest.raises(DataError, match=r"covariate 'temp' is missing or not a number at 2012-10-01 \(line 5\)"):
        future_covariates(holed, ds, eff)
    with pytest.raises(DataError, match="not after the last observation"):
        future_covariates(hist[["month", "temp"]].tail(3), ds, eff)


def test_a_kernel_file_keeps_the_effect_and_the_forecast_adds_it(series):
    hist, future, truth = series
    full = dataset_from_frame(hist, "month", "y", covariates=("temp",), test_fraction=0.0)
    eff = fit_covariates(full)
    ds = on_time(full, eff)
    fit = fit_kernel(compose(["+", ["*", "SE", "PER"], "LIN"]), FitData.from_dataset(ds),
                     OptimConfig(n_restarts=1, n_screen=10, data_bounds=True), np.random.default_rng(0))
    doc = kernel_file_dict(fit, ds.norm, dataset="synthetic", n_test=0, n_train=ds.n_train, test_fraction=0.0)
    kf = parse_kernel_file(json.dumps({**doc, "covariates": eff.to_dict()}))
    assert kf.covariates == eff
    fc = forecast_with_covariates(kf, ds, future)
    assert fc.mean.shape == (24,) and np.all(fc.lower < fc.mean) and "covariates' effect (temp" in fc.note
    assert np.sqrt(np.mean((fc.mean - truth) ** 2)) < 3.0






def test_the_command_line_searches_predicts_and_forecasts_with_covariates(series, tmp_path):
    hist, future, _ = series
    data, ahead, out = tmp_path / "hist.csv", tmp_path / "future.csv", tmp_path / "k.json"
    hist.to_csv(data, index=False)
    future.to_csv(ahead, index=False)
    res = cli("search", "--data", str(data), "--y", "y", "--covariates", "temp", *TINY, "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "covariates: temp: used" in res.stderr
    assert json.loads(out.read_text())["covariates"]["names"] == ["temp"]
    pred = tmp_path / "pred.csv"
    res = cli("predict", "--kernel", str(out), "--data", str(data), "--y", "y", "--out", str(pred))
    assert res.returncode == 0, res.stderr
    got = pd.read_csv(pred)
    test = hist.tail(len(got))
    assert np.sqrt(np.mean((got["mean"].to_numpy() - test["y"].to_numpy()) ** 2)) < 5.0  # the effect added back
    fc = tmp_path / "fc.csv"
    res = cli("forecast", "--kernel", str(out), "--data", str(data), "--y", "y", "--future", str(ahead),
              "--out", str(fc))
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(fc)) == 24
    alone = cli("forecast", "--kernel", str(out), "--data", str(data), "--y", "y", "--out", str(fc))
    assert alone.returncode != 0 and "give their future values with --future FILE" in alone.stderr
    future.drop(columns="temp").to_csv(ahead, index=False)
    bad = cli("forecast", "--kernel", str(out), "--data", str(data), "--y", "y", "--future", str(ahead),
              "--out", str(fc))
    assert bad.returncode != 0 and "no column 'temp'" in bad.stderr and "Traceback" not in bad.stderr
    said = [line for line in bad.stderr.strip().splitlines() if not line.startswith("note: ")]
    assert len(said) == 1 and "no column 'temp'" in said[0]  # notes, then one line


def test_the_api_searches_and_forecasts_with_covariates(series, tmp_path):
    import evocov_core as ec

    hist, future, truth = series
    data = tmp_path / "hist.csv"
    hist.to_csv(data, index=False)
    ds = ec.read_series(data, y="y", covariates=["temp"], test_fraction=0.0)
    assert ds.covariates == ("temp",) and ds.x_label == "month"
    res = ec.search(ds, "quick-fixed", workers=1, population=8, generations=2, mu=3, d_min=2, d_max=5, psd_w=6,
                    n_restarts=1, max_evals=15, n_screen=4)
    assert res.kernel_file.covariates is not None and res.kernel_file.covariates.used
    got = res.forecast(future=future)
    assert got.mean.shape == (24,) and np.sqrt(np.mean((got.mean - truth) ** 2)) < 5.0
    with pytest.raises(ValueError, match=r"give their future values, forecast\(future=frame\)"):
        res.forecast()


def _panel(k: int = 2, steps: int = 6) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, np.ndarray]]:
    rows, ahead, truth = [], [], {}
    for s in range(k):
        hist, future, true = synthetic(s)
        rows.append(hist.iloc[-60:].assign(unique_id=f"s{s}").rename(columns={"month": "ds"}))
        ahead.append(future.iloc[:steps].assign(unique_id=f"s{s}").rename(columns={"month": "ds"}))
        truth[f"s{s}"] = true[:steps]
    return pd.concat(rows), pd.concat(ahead), truth


def test_a_panel_takes_covariates_and_their_future_values():
    from evocov_core.panel.run import forecast_panel

    df, future, truth = _panel()
    res = forecast_panel(df, 6, budget=3, workers=1, covariates=["temp"], X_df=future)
    assert list(res.series["status"]) == ["ok", "ok"]
    for uid, true in truth.items():
        got = res.forecasts[res.forecasts.unique_id == uid]
        assert list(got["ds"].dt.strftime("%Y-%m")) == list(future[future.unique_id == uid]["ds"])
        assert np.sqrt(np.mean((got["EvoCov"].to_numpy() - true) ** 2)) < 3.0  # about 6.6 without the covariate


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: None, "need their future values"),
    (lambda f: f.drop(columns="temp"), "the future values have no column 'temp'"),
    (lambda f: f.assign(temp=f["temp"].where(np.arange(len(f)) != 2)), "covariate 'temp' is missing in row 4"),
    (lambda f: f.iloc[:-1], "series 's1' has 5 rows of future values after its last observation"),
])
def test_a_panels_future_values_are_checked(change, message):
    from evocov_core.panel.run import forecast_panel

    df, future, _ = _panel()
    with pytest.raises(DataError, match=message):
        forecast_panel(df, 6, budget=3, workers=1, covariates=["temp"], X_df=change(future))


def test_the_panel_command_needs_the_future_of_its_covariates(tmp_path):
    df, future, _ = _panel()
    data, ahead = tmp_path / "panel.csv", tmp_path / "future.csv"
    df.to_csv(data, index=False)
    future.drop(columns="temp").to_csv(ahead, index=False)
    alone = cli("panel", "--data", str(data), "--horizon", "6", "--covariates", "temp", "--out", str(tmp_path / "o"))
    assert alone.returncode != 0 and "--future FILE" in alone.stderr and len(alone.stderr.strip().splitlines()) == 1
    bad = cli("panel", "--data", str(data), "--horizon", "6", "--covariates", "temp", "--future", str(ahead),
              "--out", str(tmp_path / "o"))
    assert bad.returncode != 0 and "no column 'temp'" in bad.stderr and "Traceback" not in bad.stderr
