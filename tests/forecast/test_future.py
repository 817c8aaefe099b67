"""Forecasts past the last observation (evocov_core.forecast.future) and the ``forecast`` command."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from evocov_core.data import DataError, Dataset, dates_to_decimal_years, load_csv
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.fitting.seasons import Seasons
from evocov_core.forecast.classical import ClassicalForecast, ClassicalForecasts
from evocov_core.forecast.combination import Combination, linear_pool_interval
from evocov_core.forecast.future import (
    default_horizon,
    forecast_future,
    future_labels,
    future_members_data,
    future_x,
)
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import kernel_file_dict, parse_kernel_file

ROOT = Path(__file__).resolve().parents[2]


def monthly(n: int = 72) -> Dataset:
    dates = pd.date_range("2015-01-01", periods=n, freq="MS").strftime("%Y-%m")
    t = np.arange(n)
    y = 100 + 0.5 * t + 8 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(0).normal(0, 1, n)
    text = "month,sales\n" + "".join(f"{d},{v:.3f}\n" for d, v in zip(dates, y, strict=True))
    return load_csv(io.BytesIO(text.encode()), test_fraction=0.1)


@pytest.fixture(scope="module")
def sales() -> Dataset:
    return monthly()


@pytest.fixture(scope="module")
def sales_fit(sales):
    fit = fit_kernel(compose(["+", ["*", "SE", "PER"], "LIN"]), FitData.from_dataset(sales),
                     OptimConfig(n_restarts=1, n_screen=10, data_bounds=True), np.random.default_rng(0))
    assert fit.ok
    return fit


def kernel_file(ds, fit, combination: Combination | None = None):
    return parse_kernel_file(__import__("json").dumps(kernel_file_dict(
        fit, ds.norm, dataset="sales", n_test=ds.n_test, n_train=ds.n_train, test_fraction=ds.test_fraction,
        combination=combination)))


def test_the_steps_continue_the_data_and_read_as_month_starts(sales):
    x = future_x(sales, 14)
    assert x.shape == (14,) and np.all(np.diff(x) > 0) and x[0] > sales.x[:, 0].max()
    assert list(future_labels(sales, x)[:3]) == ["2021-01-01", "2021-02-01", "2021-03-01"]
    assert future_labels(sales, x).iloc[-1] == "2022-02-01"
    days = dates_to_decimal_years(pd.Series(pd.date_range("2020-01-01", periods=40, freq="D")))
    daily = Dataset.from_arrays(days, np.sin(np.arange(40.0)), x_kind="date")
    assert list(future_labels(daily, future_x(daily, 2))) == ["2020-02-10", "2020-02-11"]
    plain = Dataset.from_arrays(np.arange(0.0, 50.0, 2.5), np.arange(20.0))
    np.testing.assert_allclose(future_x(plain, 3), [50.0, 52.5, 55.0])
    assert list(future_labels(plain, future_x(plain, 1))) == [50.0]
    assert default_horizon(sales) == sales.n_test


def test_business_day_data_continue_on_weekdays_and_daily_data_on_every_day():
    # 2024-01-05 is a Friday: the next steps of a trading-day series are Monday to Friday.
    bdays = pd.Series(pd.bdate_range("2023-11-01", "2024-01-05"))
    stocks = Dataset.from_arrays(dates_to_decimal_years(bdays), np.arange(len(bdays), dtype=float), x_kind="date")
    labels = list(future_labels(stocks, future_x(stocks, 6)))
    assert labels == ["2024-01-08", "2024-01-09", "2024-01-10", "2024-01-11", "2024-01-12", "2024-01-15"]
    # A daily series whose weekends are present keeps them (as does one without any 3-day gap).
    every = pd.Series(pd.date_range("2023-11-01", "2024-01-05", freq="D"))
    daily = Dataset.from_arrays(dates_to_decimal_years(every), np.arange(len(every), dtype=float), x_kind="date")
    assert list(future_labels(daily, future_x(daily, 2))) == ["2024-01-06", "2024-01-07"]
    # Hours on weekdays only are not business days: they step by the hour.
    hours = pd.Series(pd.date_range("2024-01-01", periods=48, freq="h"))
    hourly = Dataset.from_arrays(dates_to_decimal_years(hours), np.arange(48.0), x_kind="date")
    assert future_labels(hourly, future_x(hourly, 1)).iloc[0] == "2024-01-03"


@pytest.mark.parametrize("horizon", [0, -1, 73, 2.5, True])
def test_a_horizon_out_of_range_is_refused(sales, horizon):
    with pytest.raises(DataError, match="horizon must be a whole number of steps from 1 to 72"):
        future_x(sales, horizon)


def test_several_inputs_have_no_future(sales):
    ds = Dataset.from_arrays(np.c_[np.arange(30.0), np.arange(30.0) % 7], np.arange(30.0))
    with pytest.raises(DataError, match="needs one input"):
        future_x(ds, 3)


def test_the_kernel_is_conditioned_on_every_observed_point(sales, sales_fit):
    """The forecast is the file's model given training and test points: it equals that posterior, and moving
    only the test part's y moves it."""
    kf = kernel_file(sales, sales_fit)
    fc = forecast_future(kf, sales, 12)
    model = kf.model()
    pred = model.predict(sales.x, sales.y, fc.x)
    np.testing.assert_allclose(fc.mean, pred.mean, rtol=1e-12)
    np.testing.assert_allclose(fc.upper - fc.lower, 2 * 1.959963984540054 * pred.std, rtol=1e-9)
    assert fc.members == (("kernel", 1.0),) and not fc.combined and fc.conditioned == sales.n
    assert "conditioned on all 72 observed points" in fc.note
    shifted = Dataset(sales.name, sales.x, np.where(sales.train, sales.y, sales.y + 20), sales.train,
                      sales.x_label, sales.y_label, sales.x_kind)
    assert forecast_future(kf, shifted, 12).mean[0] > fc.mean[0] + 5
    frame = fc.frame(sales.x_label)
    assert list(frame.columns) == ["month", "forecast", "lower_95", "upper_95", "kernel_mean", "kernel_lower_95",
                                   "kernel_upper_95"]
    assert len(frame) == 12 and frame.month.iloc[0] == "2021-01-01"


def test_the_linear_pool_is_the_mixture_quantile():
    w = np.array([0.3, 0.7])
    means, sds = np.array([[0.0, 5.0], [4.0, 5.0]]), np.array([[1.0, 2.0], [1.0, 2.0]])
    lo, hi = linear_pool_interval(w, means, sds)
    for j in range(2):
        cdf = lambda v, j=j: float((w * ndtr((v - means[:, j]) / sds[:, j])).sum())  # noqa: E731
        assert cdf(lo[j]) == pytest.approx(0.025, abs=1e-12) and cdf(hi[j]) == pytest.approx(0.975, abs=1e-12)
    np.testing.assert_allclose([lo[1], hi[1]], [5 - 1.959963984540054 * 2, 5 + 1.959963984540054 * 2], rtol=1e-10)


def _classical(x, members: dict[str, tuple[np.ndarray, float] | None]) -> ClassicalForecasts:
    rows = []
    for name, part in members.items():
        if part is None:
            rows.append(ClassicalForecast(name, None, None, None, "timeout", f"{name}: no result", 30.0))
        else:
            mean, half = part
            rows.append(ClassicalForecast(name, mean, mean - half, mean + half, "ok", "", 0.1))
    return ClassicalForecasts(x, Seasons(12), tuple(rows))


def test_the_search_s_average_is_remade_with_its_weights_and_guarded(sales, sales_fit):
    comb = Combination(("kernel", "AutoETS", "AutoTheta"), (("kernel", 1.0), ("AutoETS", 2.0), ("AutoTheta", 3.0)),
                       4, weights=(0.5, 0.3, 0.2))
    kf = kernel_file(sales, sales_fit, comb)
    own = forecast_future(kernel_file(sales, sales_fit), sales, 6)
    x = own.x
    near = _classical(x, {"AutoETS": (own.mean + 1.0, 10.0), "AutoTheta": (own.mean - 2.0, 10.0)})
    fc = forecast_future(kf, sales, 6, classical=near)
    np.testing.assert_allclose(fc.mean, 0.5 * own.mean + 0.3 * (own.mean + 1) + 0.2 * (own.mean - 2), rtol=1e-12)
    np.testing.assert_allclose(fc.kernel_mean, own.mean, rtol=1e-12)
    assert fc.combined and [m for m, _ in fc.members] == ["kernel", "AutoETS", "AutoTheta"]
    assert np.all(fc.lower < fc.mean) and np.all(fc.mean < fc.upper)
    assert "kernel 0.50 + AutoETS 0.30 + AutoTheta 0.20" in fc.note
    # The kernel's forecast far outside both members' intervals: left out, the others keep their proportions.
    far = _classical(x, {"AutoETS": (own.mean + 500.0, 1.0), "AutoTheta": (own.mean + 500.0, 1.0)})
    fc = forecast_future(kf, sales, 6, classical=far)
    assert [m for m, _ in fc.members] == ["AutoETS", "AutoTheta"] and fc.members[0][1] == pytest.approx(0.6)
    assert "The kernel is left out" in fc.note
    # A member without a forecast of these steps: the others share its weight, and the note says so.
    fc = forecast_future(kf, sales, 6, classical=_classical(x, {"AutoETS": (own.mean, 10.0), "AutoTheta": None}))
    assert dict(fc.members) == pytest.approx({"kernel": 0.5 / 0.8, "AutoETS": 0.3 / 0.8})
    assert "AutoTheta had no forecast" in fc.note
    # None of them: the kernel's own.
    fc = forecast_future(kf, sales, 6, classical=_classical(x, {"AutoETS": None, "AutoTheta": None}))
    assert fc.members == (("kernel", 1.0),) and "this is the kernel's alone" in fc.note
    with pytest.raises(ValueError, match="other steps"):
        forecast_future(kf, sales, 5, classical=near)


def test_the_members_see_every_observed_point_and_the_steps_ahead(sales, sales_fit):
    comb = Combination(("kernel", "AutoETS"), (("kernel", 1.0), ("AutoETS", 2.0)), 4, weights=(0.5, 0.5))
    members = future_members_data(kernel_file(sales, sales_fit, comb), sales, 9)
    assert members.n_train == sales.n and members.n_test == 9
    np.testing.assert_array_equal(members.y_train, sales.y)
    np.testing.assert_allclose(members.X_test[:, 0], future_x(sales, 9))


def test_the_forecast_command_writes_one_row_per_step(sales, sales_fit, tmp_path):
    data = tmp_path / "sales.csv"
    pd.DataFrame({"month": future_labels(sales, sales.x[:, 0]).str[:7], "sales": sales.y}).to_csv(data, index=False)
    kernel = tmp_path / "k.json"
    kernel.write_text(__import__("json").dumps(kernel_file_dict(sales_fit, sales.norm, n_test=sales.n_test,
                                                                n_train=sales.n_train, test_fraction=0.1)))
    out = tmp_path / "f.csv"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "evocov_core", "forecast", "--kernel", str(kernel), "--data",
                               str(data), "--out", str(out), *args], capture_output=True, text=True, cwd=ROOT)

    res = run("--horizon", "18")
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(out)
    assert len(table) == 18 and table.month.iloc[0] == "2021-01-01" and table.month.iloc[-1] == "2022-06-01"
    np.testing.assert_allclose(table.forecast, forecast_future(kernel_file(sales, sales_fit), sales, 18).mean,
                               rtol=1e-9)
    assert "conditioned on all 72 observed points" in res.stderr
    res = run("--horizon", "100")
    assert res.returncode != 0 and "from 1 to 72" in res.stderr and "Traceback" not in res.stderr
    res = run("--time-limit", "0")
    assert res.returncode != 0 and "--time-limit must be above 0" in res.stderr
