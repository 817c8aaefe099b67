"""Gaps and uneven timestamps kept, not refused (issue 73, item 2): a missing value is a point not
observed, every other point keeps its own time; classical forecasters get an interpolated copy on
regular steps; forecasts at any future times."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_cases import TINY, cli

import evocov_core as ec
from evocov_core.data import DataError, Dataset, load_csv
from evocov_core.data.dates import days_to_decimal_years, decimal_years_to_dates
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.forecast.classical import classical_forecasts
from evocov_core.forecast.future import forecast_future, future_x
from evocov_core.forecast.steps import future_times, step_grid
from evocov_core.language.evaluate import covariance
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import kernel_file_dict, parse_kernel_file

ROOT = Path(__file__).resolve().parents[2]


def _csv(rows: list[tuple[object, object]], header: str = "t,y") -> bytes:
    return (header + "\n" + "".join(f"{a},{b}\n" for a, b in rows)).encode()


# --- the reader ------------------------------------------------------------------------------------


def test_a_missing_value_is_refused_naming_the_option_and_kept_at_its_own_time():
    rows = [(i, "" if i in (4, 5, 11) else float(i)) for i in range(30)]
    with pytest.raises(DataError, match=r"3 rows .* \(file lines 6, 7, 13\).*--missing keep.*missing='keep'"):
        load_csv(io.BytesIO(_csv(rows)))
    ds = load_csv(io.BytesIO(_csv(rows)), missing="keep")
    assert ds.n == 27 and not {4.0, 5.0, 11.0} & set(ds.x[:, 0])
    assert np.array_equal(ds.x[:, 0], ds.y)  # every point at its own x
    assert any("3 rows have no value (file lines 6, 7, 13): kept as points not observed" in n for n in ds.notes)
    with pytest.raises(ValueError, match="missing must be one of refuse, keep"):
        load_csv(io.BytesIO(_csv(rows)), missing="drop")


def test_without_an_x_column_the_row_numbers_keep_the_gap():
    text = "value\n" + "".join(("NA\n" if i in (3, 8) else f"{i * 2.0}\n") for i in range(25))
    ds = load_csv(io.BytesIO(text.encode()), missing="keep")
    assert ds.x_label == "row" and ds.n == 23
    assert np.array_equal(ds.x[:, 0], ds.y / 2)  # row 3 and 8 are holes, not renumbered


def test_dates_keep_their_days_and_an_unreadable_time_is_named():
    days = pd.date_range("2024-01-01", periods=30, freq="D")
    rows = [(d.strftime("%Y-%m-%d") if i != 20 else "soon", "" if i == 6 else i) for i, d in enumerate(days)]
    ds = load_csv(io.BytesIO(_csv(rows, "date,y")), missing="keep")
    assert ds.n == 28 and ds.x_kind == "date"
    seen = decimal_years_to_dates(ds.x[:, 0]).round("D")
    assert pd.Timestamp("2024-01-07") not in seen and pd.Timestamp("2024-01-08") in seen
    assert any("whose x in column 'date' cannot be read (file lines 22)" in n for n in ds.notes)


def test_the_api_reads_with_missing_keep(tmp_path):
    p = tmp_path / "gappy.csv"
    p.write_bytes(_csv([(i, "NA" if i % 7 == 3 else float(i)) for i in range(40)]))
    with pytest.raises(DataError, match="--missing keep"):
        ec.read_series(p)
    assert ec.read_series(p, missing="keep").n == 34


# --- steps and the classical forecasters' copy -----------------------------------------------------


def test_step_grid_counts_steps_months_and_business_days():
    x = np.arange(20.0)
    assert step_grid(x[:15], x[15:]).regular
    kept = np.delete(x, [3, 4, 16])
    g = step_grid(kept[:13], kept[13:])
    assert not g.regular and g.gaps == 2 and g.horizon == 5
    assert list(g.train[:4]) == [0, 1, 2, 5] and list(g.test) == [15, 17, 18, 19]
    assert np.array_equal(g.fill(kept[:13]), np.arange(15.0))  # each gap a straight line
    assert np.array_equal(g.read(np.arange(15.0, 20.0)), [15, 17, 18, 19])
    weekdays = days_to_decimal_years(pd.bdate_range("2024-01-01", periods=40))
    assert step_grid(weekdays[:30], weekdays[30:], "date").regular  # a weekend is no gap
    month_ends = days_to_decimal_years(pd.date_range("2000-01-31", periods=120, freq="ME"))
    assert step_grid(month_ends[:100], month_ends[100:], "date").regular  # 28 to 31 days: one step each
    half = step_grid(x[:15], np.array([15.5, 17.0]))
    assert np.allclose(half.test, [15.5, 17.0]) and half.horizon == 3


def test_classical_forecasters_get_an_interpolated_copy_and_are_read_at_the_test_points():
    """SeasonalNaive (season 4) on a series with a gap in each part: its forecast of each test point is the
    value one season earlier on the filled steps."""
    t = np.arange(48.0)
    y = np.tile([1.0, 5.0, 2.0, 9.0], 12) + t / 10
    keep = ~np.isin(t, [38, 42, 46])  # 38 in the training part, 42 and 46 in the test part
    ds = Dataset.from_arrays(t[keep], y[keep], test_fraction=0.16)
    assert ds.X_train[-1, 0] == 39 and list(ds.X_test[:, 0]) == [40, 41, 43, 44, 45, 47]
    got = classical_forecasts(ds, season_lengths=(4,), models=("SeasonalNaive",)).get("SeasonalNaive")
    assert got.ok and "1 steps without a point filled" in got.settings
    filled = y.copy()
    filled[38] = (y[37] + y[39]) / 2
    expect = [filled[36 + (s - 40) % 4] for s in (40, 41, 43, 44, 45, 47)]
    assert np.allclose(got.mean, expect)


# --- uneven timestamps: weekdays ------------------------------------------------------------------


@pytest.fixture(scope="module")
def weekdays() -> Dataset:
    """A daily series of 15 weeks observed on weekdays only, with a weekly pattern of the true calendar."""
    days = pd.date_range("2024-01-01", periods=105, freq="D")
    rng = np.random.default_rng(3)
    y = 50 + 10 * np.sin(2 * np.pi * np.arange(105) / 7) + rng.normal(0, 0.5, 105)
    rows = [(d.strftime("%Y-%m-%d"), "" if d.dayofweek >= 5 else f"{v:.3f}") for d, v in zip(days, y, strict=True)]
    return load_csv(io.BytesIO(_csv(rows, "day,visits")), missing="keep")


def test_the_kernel_sees_the_true_time_gaps(weekdays):
    assert weekdays.n == 75
    data = FitData.from_dataset(weekdays)
    t = data.X[:, 0]
    day = t[1] - t[0]  # Monday to Tuesday
    friday = int(np.flatnonzero(decimal_years_to_dates(weekdays.X_train[:, 0]).dayofweek == 4)[0])
    assert t[friday + 1] - t[friday] == pytest.approx(3 * day)  # Friday to Monday: three days, not one step
    se = compose("SE")
    theta = np.log([1.0, 2 * day])
    K = covariance(se, data.X, theta)
    lag3 = covariance(se, np.array([[0.0], [3 * day]]), theta)[0, 1]
    lag1 = covariance(se, np.array([[0.0], [day]]), theta)[0, 1]
    assert K[friday, friday + 1] == pytest.approx(lag3) and K[0, 1] == pytest.approx(lag1) and lag3 < lag1


def _file(ds: Dataset, kernel) -> object:
    fit = fit_kernel(kernel, FitData.from_dataset(ds), OptimConfig(n_restarts=1, n_screen=10, data_bounds=True),
                     np.random.default_rng(0))
    assert fit.ok
    return parse_kernel_file(json.dumps(kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test,
                                                         n_train=ds.n_train, test_fraction=ds.test_fraction)))


def test_weekdays_forecast_the_next_weekdays_and_any_future_times(weekdays):
    kf = _file(weekdays, compose(["*", "SE", "PER"]))
    fc = forecast_future(kf, weekdays, 5)
    assert list(fc.labels) == ["2024-04-15", "2024-04-16", "2024-04-17", "2024-04-18", "2024-04-19"]
    truth = 50 + 10 * np.sin(2 * np.pi * np.arange(105, 110) / 7)
    assert np.sqrt(np.mean((fc.mean - truth) ** 2)) < 3.0  # the weekly pattern, read at the true days
    at = forecast_future(kf, weekdays, at=["2024-04-20", "2024-04-16 12:00"])  # a Saturday and a noon
    assert list(at.labels) == ["2024-04-16 12:00:00", "2024-04-20"] and np.all(at.upper > at.lower)
    assert "the 2 times asked" in at.note
    with pytest.raises(DataError, match="not after the last observation"):
        future_times(weekdays, ["2024-04-01"])
    with pytest.raises(DataError, match="'someday' to forecast at is not a date or a number"):
        future_times(weekdays, ["someday"])


def test_forecast_at_numbers_after_a_gappy_series():
    t = np.arange(60.0)
    keep = np.random.default_rng(0).random(60) > 0.3
    keep[[0, -1]] = True
    y = np.sin(2 * np.pi * t / 12)
    ds = Dataset.from_arrays(t[keep], y[keep], test_fraction=0.0)
    kf = _file(ds, compose(["*", "SE", "PER"]))
    assert np.allclose(future_x(ds, 3), [60, 61, 62])  # the median step goes on
    fc = forecast_future(kf, ds, at=[61.5, 60.25, 70])
    assert np.allclose(fc.x, [60.25, 61.5, 70]) and np.all(np.isfinite(fc.mean))
    assert np.sqrt(np.mean((fc.mean - np.sin(2 * np.pi * fc.x / 12)) ** 2)) < 0.3


# --- the command line -----------------------------------------------------------------------------





def test_the_command_line_refuses_or_keeps_gaps_and_forecasts_at_times(tmp_path):
    rng = np.random.default_rng(0)
    months = pd.date_range("2015-01-01", periods=96, freq="MS")
    y = 100 + 0.3 * np.arange(96) + 8 * np.sin(2 * np.pi * np.arange(96) / 12) + rng.normal(0, 1, 96)
    gone = set(rng.choice(96, 10, replace=False).tolist()) - {0, 95}
    data = tmp_path / "gaps.csv"
    data.write_text("month,sales\n" + "".join(f"{m:%Y-%m},{'' if i in gone else f'{v:.3f}'}\n"
                                              for i, (m, v) in enumerate(zip(months, y, strict=True))))
    out = tmp_path / "k.json"
    refused = cli("search", "--data", str(data), *TINY, "--out", str(out))
    assert refused.returncode != 0 and "--missing keep" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    res = cli("search", "--data", str(data), "--missing", "keep", *TINY, "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert f"{len(gone)} rows have no value" in res.stderr
    kf = json.loads(out.read_text())
    assert kf["scores"]["n_train"] + kf["scores"]["n_test"] == 96 - len(gone)
    fc = tmp_path / "fc.csv"
    res = cli("forecast", "--kernel", str(out), "--data", str(data), "--missing", "keep", "--at",
              "2023-03-01,2023-01-01", "--out", str(fc))
    assert res.returncode == 0, res.stderr
    got = pd.read_csv(fc)
    assert list(got["month"]) == ["2023-01-01", "2023-03-01"] and got["forecast"].notna().all()
    bad = cli("forecast", "--kernel", str(out), "--data", str(data), "--missing", "keep", "--at", "2019-01-01",
              "--out", str(fc))
    assert bad.returncode != 0 and "not after the last observation" in bad.stderr and "Traceback" not in bad.stderr


def test_a_time_column_that_cannot_be_read_is_said_not_guessed_around():
    text = "x,y\n" + "".join(f"np.float64({i}.0),{i * 2}\n" for i in range(20))
    ds = load_csv(io.BytesIO(text.encode()))
    assert ds.x_label == "row"
    assert any("column 'x' holds values such as 'np.float64(0.0)'" in n and "x is the row number" in n
               for n in ds.notes)


def test_the_search_forecasts_classical_members_at_a_gappy_test_part():
    """Beside a search, the classical forecasts of a test part with gaps are read at its own points."""
    from evocov_core.forecast.beside import ClassicalBeside

    t = np.arange(72.0)
    y = np.tile([1.0, 5.0, 2.0, 9.0], 18) + t / 10
    keep = ~np.isin(t, [20, 33, 66, 67])  # gaps in the training part and in the test part
    ds = Dataset.from_arrays(t[keep], y[keep], test_fraction=0.12)
    assert list(ds.X_test[:, 0]) == [63, 64, 65, 68, 69, 70, 71]
    beside = ClassicalBeside(ds, FitData.from_dataset(ds), ("SeasonalNaive",), in_process=True, season_lengths=(4,))
    chosen = beside.choose(None)
    got = chosen.classical.get("SeasonalNaive")
    assert got.ok and np.array_equal(chosen.classical.x, ds.X_test[:, 0])
    expect = [y[59 + (s - 63) % 4] for s in (63, 64, 65, 68, 69, 70, 71)]  # the last season, 59-62, repeated
    assert np.allclose(got.mean, expect)
