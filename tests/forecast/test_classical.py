"""Classical forecasters (statsforecast) beside the GP: seasons, models, time limits, the table, CLI, report."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_cases import cli

from evocov_core.data import Dataset, load_bundled
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.classical import COMBINE_MODELS, MODELS, classical_forecasts
from evocov_core.present.compare import COLUMNS, forecast_comparison
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, load_kernel_file
from evocov_core.searches.gp_baselines import se_baseline

ROOT = Path(__file__).resolve().parents[2]
DAY = 1 / 365.2425


def dated(index: pd.DatetimeIndex, y: np.ndarray | None = None, **kwargs: object) -> Dataset:
    """A data set on these dates, converted as a CSV's date column is (decimal years)."""
    from evocov_core.data import dates_to_decimal_years

    x = dates_to_decimal_years(pd.Series(index))
    if y is None:
        y = np.random.default_rng(0).standard_normal(x.size)
    return Dataset.from_arrays(x, y, x_kind="date", **kwargs)


# --- season lengths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("index", "primary", "secondary", "source"), [
    (pd.date_range("1990-01-01", periods=120, freq="MS"), 12, (), "monthly dates"),
    (pd.date_range("1990-01-01", periods=40, freq="QS"), 4, (), "quarterly dates"),
    (pd.date_range("1900-01-01", periods=60, freq="YS"), 1, (), "annual dates"),
    (pd.date_range("2015-01-04", periods=200, freq="W"), 52, (), "weekly dates"),
    (pd.date_range("2015-01-01", periods=3 * 365, freq="D"), 7, (365,), "daily dates"),
    (pd.date_range("2020-03-01", periods=30 * 48, freq="30min"), 48, (336,), "half-hourly dates"),
    (pd.bdate_range("2019-01-01", periods=300), 5, (), "business-day dates"),
])
def test_seasons_from_dates(index: pd.DatetimeIndex, primary: int, secondary: tuple[int, ...], source: str) -> None:
    s = infer_seasons(dated(index))
    assert (s.primary, s.secondary, s.source) == (primary, secondary, source)
    assert not s.notes


@pytest.mark.parametrize(("index", "periods_in_days"), [
    (pd.date_range("2015-01-01", periods=3 * 365, freq="D"), (7.0, 365.2425)),  # a year, not 365 steps
    (pd.bdate_range("2019-01-01", periods=300), (7.0,)),  # five steps, seven days
    (pd.date_range("2020-03-01", periods=30 * 48, freq="30min"), (1.0, 7.0)),
    (pd.date_range("1990-01-01", periods=120, freq="MS"), (365.2425,)),
    (pd.date_range("1900-01-01", periods=60, freq="YS"), ()),
])
def test_calendar_periods_are_lengths_of_time(index: pd.DatetimeIndex, periods_in_days: tuple[float, ...]) -> None:
    """The calendar's seasons in x units (decimal years) for the long-series seeds' periods."""
    from evocov_core.fitting.seasons import calendar_periods

    got = calendar_periods(dated(index))
    assert [p / DAY for p in got] == pytest.approx(periods_in_days, rel=1e-9)
    assert calendar_periods(Dataset.from_arrays(np.arange(300.0), np.zeros(300))) == ()  # plain numbers


def test_a_season_the_training_part_cannot_hold_is_dropped_with_a_note() -> None:
    """One year of daily data: 7, and 365 is dropped (fewer than two years of training points)."""
    s = infer_seasons(dated(pd.date_range("2015-01-01", periods=365, freq="D")))
    assert (s.primary, s.secondary) == (7, ())
    assert len(s.notes) == 1 and "season 365 dropped" in s.notes[0] and "fewer than two full seasons" in s.notes[0]


def test_seasons_of_tsdl_years_and_irregular_months() -> None:
    """x in decimal years with ``x_label == "year"`` (TSDL) reads as dates; months of 28-31 days
    with a few missing still read as monthly, and very irregular steps are noted."""
    hours = 2004.9 + np.arange(900) * DAY / 24
    ds = Dataset.from_arrays(hours, np.zeros(900), x_label="year")
    assert infer_seasons(ds).lengths == (24, 168)
    assert infer_seasons(Dataset.from_arrays(hours, np.zeros(900))).source != "hourly steps"  # plain numbers
    rng = np.random.default_rng(1)
    days = np.arange(150) * 30.44 + rng.uniform(-2, 2, 150)
    keep = np.sort(rng.choice(150, 140, replace=False))
    s = infer_seasons(Dataset.from_arrays(1990 + days[keep] * DAY, np.zeros(140), x_kind="date"))
    assert s.primary == 12 and s.notes == ()
    mixed = np.cumsum(np.tile([1.0, 1.0, 2.5], 40)) / 12  # a third of the steps 2.5 months long
    s = infer_seasons(Dataset.from_arrays(1990 + mixed, np.zeros(120), x_kind="date"))
    assert s.primary == 12 and len(s.notes) == 1 and "regular steps" in s.notes[0]


def test_seasons_of_plain_numbers_come_from_the_periodogram() -> None:
    rng = np.random.default_rng(0)
    x = np.arange(240.0)
    wave = Dataset.from_arrays(x, np.sin(2 * np.pi * x / 10) + 0.5 * rng.standard_normal(240))
    s = infer_seasons(wave)
    assert (s.primary, s.source) == (10, "periodogram")
    noise = infer_seasons(Dataset.from_arrays(x, rng.standard_normal(240)))
    assert noise.primary == 1 and noise.lengths == () and "no clear" in noise.source
    # x in steps of 0.5: a period of 5 x-units is 10 steps
    assert infer_seasons(Dataset.from_arrays(x / 2, wave.y)).primary == 10


def test_given_seasons_win_and_are_checked() -> None:
    ds = dated(pd.date_range("1990-01-01", periods=120, freq="MS"))
    s = infer_seasons(ds, [24, 168])
    assert (s.primary, s.secondary, s.source) == (24, (), "given")
    assert any("season 168 dropped" in n for n in s.notes)
    assert infer_seasons(ds, [1]).lengths == ()
    assert infer_seasons(ds, [6, 12]).lengths == (6, 12)
    with pytest.raises(ValueError, match="at least 1"):
        infer_seasons(ds, [0])


def test_seasons_typed_by_a_person() -> None:
    from evocov_core.fitting.seasons import parse_seasons

    assert parse_seasons("") is None and parse_seasons("  ") is None
    assert parse_seasons("12") == (12,)
    assert parse_seasons("7, 365") == parse_seasons("7 365") == parse_seasons("7;365") == (7, 365)
    assert parse_seasons("none") == parse_seasons("1") == (1,)
    for bad, message in (("twelve", "whole numbers"), ("0", "at least 1"), ("12.5", "whole numbers")):
        with pytest.raises(ValueError, match=message):
            parse_seasons(bad)


# --- the models ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seasonal() -> Dataset:
    """Ten years of monthly data: trend, a 12-month cycle, noise of SD 1 (seeded)."""
    rng = np.random.default_rng(3)
    t = np.arange(120)
    y = 50 + 0.2 * t + 5 * np.sin(2 * np.pi * t / 12) + rng.standard_normal(120)
    return dated(pd.date_range("2000-01-01", periods=120, freq="MS"), y)


@pytest.fixture(scope="module")
def seasonal_forecasts(seasonal: Dataset):
    return classical_forecasts(seasonal, time_limit=60)


def _check_forecast(f, ds: Dataset) -> None:
    assert f.status == "ok" and f.reason == "", f.reason
    h = ds.n_test
    assert f.mean.shape == f.lower.shape == f.upper.shape == (h,)
    assert np.all(np.isfinite(f.mean)) and np.all(f.lower <= f.mean) and np.all(f.mean <= f.upper)
    inside = np.mean((f.lower <= ds.y_test) & (ds.y_test <= f.upper))
    assert inside >= 0.6, f"{f.name}: its 95 % interval holds {inside:.0%} of the test points"
    rmse = float(np.sqrt(np.mean((f.mean - ds.y_test) ** 2)))
    assert rmse < 4.0, f"{f.name}: test RMSE {rmse:.2f} on noise of SD 1 (the cycle alone has SD 3.5)"
    assert f.seconds >= 0


def test_each_model_forecasts_a_seasonal_series(seasonal: Dataset, seasonal_forecasts) -> None:
    r = seasonal_forecasts
    assert [f.name for f in r.forecasts] == list(MODELS)
    assert r.seasons.primary == 12 and np.array_equal(r.x, seasonal.X_test[:, 0])
    for name in ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta"):
        f = r.get(name)
        _check_forecast(f, seasonal)
        assert f.settings == f"season 12; {seasonal.n_train} points"
    mstl = r.get("MSTL")
    assert mstl.status == "skipped" and mstl.mean is None and "\n" not in mstl.reason
    assert mstl.reason.startswith("MSTL: needs two seasons")
    assert len(r.startup) == 1 and r.startup[0] > 0  # one child served every model


def test_the_models_a_combination_may_add_forecast_a_seasonal_series(seasonal: Dataset) -> None:
    r = classical_forecasts(seasonal, models=COMBINE_MODELS, time_limit=60)
    assert [f.name for f in r.forecasts] == list(COMBINE_MODELS) and not set(COMBINE_MODELS) & set(MODELS)
    for f in r.forecasts:
        _check_forecast(f, seasonal)
        assert f.settings == f"season 12; {seasonal.n_train} points"


def test_mstl_runs_with_two_seasons() -> None:
    """Cycles of 7 and 30 steps on a trend, noise of SD 1 (seeded)."""
    rng = np.random.default_rng(0)
    t = np.arange(420.0)
    y = 50 + 0.02 * t + 3 * np.sin(2 * np.pi * t / 7) + 5 * np.sin(2 * np.pi * t / 30) + rng.standard_normal(420)
    ds = Dataset.from_arrays(t, y)
    r = classical_forecasts(ds, season_lengths=[7, 30], models=["MSTL"], time_limit=60)
    f = r.get("MSTL")
    _check_forecast(f, ds)
    assert f.settings == f"seasons 7, 30; {ds.n_train} points"


def test_a_model_that_fails_has_a_one_line_reason_and_the_table_still_builds() -> None:
    """Twelve points, half of them for training: statsforecast's ETS refuses six points."""
    rng = np.random.default_rng(0)
    ds = dated(pd.date_range("2000-01-01", periods=12, freq="MS"), 10 + rng.standard_normal(12), test_fraction=0.5)
    assert ds.n_train == 6
    r = classical_forecasts(ds, time_limit=60)
    ets = r.get("AutoETS")
    assert ets.status == "failed" and ets.mean is None
    assert ets.reason.startswith("AutoETS: ") and "\n" not in ets.reason and len(ets.reason) < 200
    fit = se_baseline(FitData.from_dataset(ds))
    table = forecast_comparison(ds, FittedModel.from_fit(fit, ds.norm), classical=r).table
    assert list(table.columns) == list(COLUMNS)
    assert list(table.method) == ["this kernel", *MODELS]
    row = table.set_index("method").loc["AutoETS"]
    assert row.status == "failed" and row.reason == ets.reason and math.isnan(row.test_rmse)
    ok = table[table.status == "ok"]
    assert len(ok) >= 3 and ok.test_rmse.notna().all() and ok.coverage_95.between(0, 1).all()
    assert table.best.sum() == 1 and table.loc[table.best, "test_rmse"].item() == ok.test_rmse.min()


def test_rows_still_running_or_skipped_and_rows_of_fits_made_elsewhere(seasonal: Dataset) -> None:
    """What the Results page builds while its baselines run in the background: every row is there,
    the ones not ready say so without numbers, and the best is among the finished ones."""
    from evocov_core.forecast.classical import running_forecasts
    from evocov_core.present.compare import forecast_scores
    from evocov_core.present.gp_comparison import Compared

    fit = se_baseline(FitData.from_dataset(seasonal))
    se = Compared.from_fit("SE", fit, seasonal, seconds=1.5)
    model = FittedModel.from_fit(fit, seasonal.norm, seasonal.n_train)
    assert se.model == model and se.test_rmse == pytest.approx(model.test_rmse(seasonal))
    assert se.bic == fit.bic and se.expression == fit.kernel.infix
    waiting = running_forecasts(seasonal)
    assert [f.status for f in waiting.forecasts] == ["running"] * len(MODELS)
    assert waiting.seasons.primary == 12 and np.array_equal(waiting.x, seasonal.X_test[:, 0])
    assert running_forecasts(seasonal, season_lengths=[6]).seasons.describe() == "6 (given)"
    died = running_forecasts(seasonal, failed="RuntimeError: the process died\n(exit code -9)")
    assert {f.reason for f in died.forecasts} == {f"{m}: RuntimeError: the process died (exit code -9)"
                                                   for m in MODELS}
    assert {f.status for f in died.forecasts} == {"failed"}
    rows = [se, Compared.waiting("GPSS", "running"), Compared.waiting("other", "skipped", "no run yet")]
    table = forecast_comparison(seasonal, model, baselines=rows, classical=waiting).table.set_index("method")
    assert list(table.index) == ["this kernel", "SE", "GPSS", "other", *MODELS]
    assert list(table.status) == ["ok", "ok", "running", "skipped", *["running"] * len(MODELS)]
    assert table.loc["other", "reason"] == "no run yet" and table.loc["GPSS", "reason"] == ""
    assert table.loc[table.status != "ok", ["test_rmse", "coverage_95", "crps"]].isna().all().all()
    assert table.loc[table.status != "ok", "best"].eq(False).all()
    assert table.best.sum() == 2 and table.loc[["this kernel", "SE"], "best"].all()  # the same model: a tie
    # The SE row is the same model as "this kernel": the same scores, and forecast_scores agrees.
    s = forecast_scores(model, seasonal)
    assert s.status == "ok" and s.test_rmse == pytest.approx(table.loc["SE", "test_rmse"])
    assert (s.coverage_95, s.crps) == (pytest.approx(table.loc["SE", "coverage_95"]),
                                       pytest.approx(table.loc["SE", "crps"]))
    assert 0 <= s.coverage_95 <= 1 and s.crps > 0 and s.interval_score > 0
    # The classical forecasters alone (no kernel row); a failed fit is a failed row with its reason.
    bad = Compared.waiting("SE", "failed", "RuntimeError: no luck")
    alone = forecast_comparison(seasonal, None, baselines=[bad]).table
    assert list(alone.method) == ["SE"] and alone.status[0] == "failed"
    assert alone.reason[0] == "SE: RuntimeError: no luck"
    with pytest.raises(ValueError, match="running, skipped or failed"):
        Compared.waiting("SE", "ok")


def test_a_model_over_its_time_limit_is_killed_and_the_next_one_runs() -> None:
    """AutoARIMA with season 96 on 990 points takes seconds (6-9 s here); a limit of 0.3 s
    stops it, and a new child runs the seasonal naive."""
    rng = np.random.default_rng(0)
    t = np.arange(1100)
    ds = Dataset.from_arrays(t, 10 * np.sin(2 * np.pi * t / 96) + np.cumsum(rng.standard_normal(1100)))
    r = classical_forecasts(ds, season_lengths=[96], models=["AutoARIMA", "SeasonalNaive"],
                            time_limit={"AutoARIMA": 0.3, "SeasonalNaive": 60})
    arima, naive = r.forecasts
    assert arima.status == "timeout" and arima.mean is None
    assert arima.reason == "AutoARIMA: no result within 0.3 s"
    assert arima.settings == "season 96 (seasonal AR and MA orders at most 1); 990 points"
    assert naive.status == "ok" and naive.settings.startswith("season 96")
    assert len(r.startup) == 2  # the child was killed and a new one started


def test_no_test_part_or_bad_arguments() -> None:
    ds = dated(pd.date_range("2000-01-01", periods=30, freq="MS"), test_fraction=0.0)
    r = classical_forecasts(ds)
    assert {f.status for f in r.forecasts} == {"skipped"} and r.startup == ()
    assert all("no test points" in f.reason for f in r.forecasts)
    with pytest.raises(ValueError, match="unknown classical model"):
        classical_forecasts(ds, models=["Prophet"])
    with pytest.raises(ValueError, match="positive"):
        classical_forecasts(ds, time_limit=0)


def test_importing_the_package_does_not_import_statsforecast() -> None:
    code = ("import sys, evocov_core, evocov_core.forecast.classical, evocov_core.present.compare, "
            "evocov_core.present.report_html, "
            "evocov_core.present.cli; print('statsforecast' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# --- the command line and the report, on Airline -----------------------------------------------------


@pytest.fixture(scope="module")
def airline_se(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SE kernel fitted on the bundled Airline series (10 % test split), as a kernel file."""
    ds = load_bundled("airline")
    fit = se_baseline(FitData.from_dataset(ds))
    assert fit.ok
    path = tmp_path_factory.mktemp("airline") / "se.json"
    path.write_text(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset="airline", n_test=ds.n_test,
                                                      test_fraction=ds.test_fraction)))
    return path




def test_compare_writes_one_row_per_method(airline_se: Path, tmp_path: Path) -> None:
    out = tmp_path / "table.csv"
    res = cli("compare", "--kernel", str(airline_se), "--data", "data/airline.csv", "--out", str(out),
              "--baseline-budget", "0", "--time-limit", "60")
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(out, keep_default_na=False, na_values=[""])
    assert list(table.columns) == list(COLUMNS)
    assert list(table.method) == ["this kernel", "SE", *MODELS]
    assert list(table.kind) == ["GP", "GP"] + ["classical"] * 5
    ok = table[table.status == "ok"]
    assert set(ok.method) >= {"this kernel", "SE", "SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta"}
    assert (ok.test_rmse > 0).all() and ok.coverage_95.between(0, 1).all() and (ok.crps > 0).all()
    assert (ok.interval_score > 0).all()
    assert table.best.sum() == 1
    # The SE kernel is the kernel file: the two GP rows agree.
    assert table.test_rmse[0] == pytest.approx(table.test_rmse[1], rel=1e-6)
    assert "AutoARIMA" in res.stdout and "seasons (steps): 12 (monthly dates)" in res.stdout
    assert f"wrote {out}" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--season-length", "0"], "--season-length"),
    (["--time-limit", "0"], "--time-limit"),
])
def test_compare_errors_are_one_line(airline_se: Path, args: list[str], message: str) -> None:
    res = cli("compare", "--kernel", str(airline_se), "--data", "data/airline.csv", "--baseline-budget", "0", *args)
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and message in res.stderr and res.stderr.count("\n") == 1


def test_the_airline_report_holds_the_classical_rows(airline_se: Path) -> None:
    from evocov_core.present.report_html import report_html

    text = report_html(load_kernel_file(airline_se), load_bundled("airline"), baseline_budget=0, time_limit=60)
    m = re.search(r'<script type="application/json" id="evocov-forecast-comparison">(.*?)</script>', text, re.S)
    assert m, "no forecast comparison in the report"
    rows = {r["method"]: r for r in json.loads(m.group(1))}
    assert set(rows) == {"this kernel", "SE", *MODELS}
    for name in ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta"):
        assert rows[name]["kind"] == "classical" and rows[name]["status"] == "ok"
        assert rows[name]["test_rmse"] > 0 and 0 <= rows[name]["coverage_95"] <= 1
    assert rows["MSTL"]["status"] == "skipped" and rows["MSTL"]["test_rmse"] is None
    table = re.search(r'<table[^>]*class="[^"]*forecasts[^"]*".*?</table>', text, re.S).group(0)
    assert table.split("<tbody>")[1].count("<tr>") == 7 and "95 % coverage" in table and "(best)" in table
    # Coverage reads as on the Results page: a percentage.
    cover = f"{rows['AutoETS']['coverage_95']:.0%}"
    assert re.search(rf"<td>AutoETS</td>\s*<td>classical</td>\s*<td>[^<]+</td>\s*<td>{cover}</td>", table), table
    # Drawn dashed in the forecast figure, one legend entry each; the report's other parts are kept.
    for name in ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta"):
        assert f'"name":"{name} (classical)"' in text
    assert "Against the baselines" in text and "What the kernel says" in text and "Residual checks" in text


def test_a_report_reuses_classical_forecasts_made_already(airline_se: Path, monkeypatch) -> None:
    """Given finished classical forecasts (the Results page's), the report shows them and fits none."""
    import evocov_core.present.compare as compare_module
    from evocov_core.present.report_html import report_html

    ds = load_bundled("airline")
    done = classical_forecasts(ds, season_lengths=(12,), time_limit=60)

    def refit(*_a, **_k):
        raise AssertionError("the classical forecasters were fitted again")

    monkeypatch.setattr(compare_module, "classical_forecasts", refit)
    text = report_html(load_kernel_file(airline_se), ds, baseline_budget=0, classical_done=done)
    rows = {r["method"]: r for r in json.loads(re.search(
        r'<script type="application/json" id="evocov-forecast-comparison">(.*?)</script>', text, re.S).group(1))}
    assert rows["AutoETS"]["status"] == "ok"
    assert rows["AutoETS"]["test_rmse"] == pytest.approx(float(np.sqrt(np.mean(
        (done.get("AutoETS").mean - ds.y_test) ** 2))), rel=1e-9)
    # Forecasts of another test part are refused, not drawn against the wrong points.
    with pytest.raises(ValueError, match="another test part"):
        report_html(load_kernel_file(airline_se), ds.with_test_fraction(0.2), baseline_budget=0, classical_done=done)
