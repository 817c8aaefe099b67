"""``python -m bench accuracy`` / ``accuracy-report``: scores, resuming, report, CLI errors.

Everything here runs on synthetic ``trials.csv`` rows or a synthetic 30-point series with
a stand-in search (fast and deterministic); one ``slow`` test runs a real one-second search.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bench import accuracy as acc
from bench.common import BenchError, append_run

ROOT = Path(__file__).resolve().parents[2]


def _refs() -> pd.DataFrame:
    return pd.DataFrame({"best_published": [10.0, 1.0, 2.0, 4.0], "evocov_lml_mean": [20.0, 2.0, 1.0, 4.0]},
                        index=pd.Index(["01-a", "02-b", "03-c", "04-d"], name="dataset"))


def _row(series: str, seed: int, status: str = "ok", rmse: float | None = None, bma: float | None = None,
         wall_ratio: float = 0.5, variant: str = "full", fits: int = 100) -> dict:
    return {"series": series, "variant": variant, "seed": seed, "budget": "quick", "status": status,
            "budget_s": 60.0, "wall_s": 60.0 * wall_ratio, "wall_ratio": wall_ratio, "test_rmse": rmse,
            "bma_test_rmse": bma, "bic_test_rmse": rmse, "n_evaluations": fits, "n_screen_fits": 0,
            "generations": 5, "q": 4, "infix": "hp0^2*exp(-0.5*|x-x'|^2/hp1^2)",
            "kernel_file": acc.kernel_path(series, variant, seed) if status == "ok" else "",
            "finished": "2026-01-01T10:00:00+00:00"}


def _trials() -> pd.DataFrame:
    """Three series of variant ``full`` (median ratios 2, 0.5, 5) and two of ``no-seed``."""
    rows = [
        _row("01-a", 0, rmse=10.0, bma=10.0), _row("01-a", 1, rmse=20.0, bma=30.0, wall_ratio=1.25),
        _row("01-a", 2, rmse=30.0, bma=50.0),
        _row("02-b", 0, rmse=0.5), _row("02-b", 1, rmse=0.5), _row("02-b", 2, rmse=4.0),  # no BMA at all
        _row("03-c", 0, rmse=8.0, bma=4.0), _row("03-c", 1, rmse=10.0, bma=4.0),
        _row("03-c", 2, status="no_kernel", wall_ratio=1.1),  # counts as an infinite RMSE
        _row("03-c", 3, status="error", wall_ratio=9.0),  # left out (run again later)
        _row("01-a", 0, rmse=40.0, variant="no-seed"), _row("02-b", 0, rmse=1.0, variant="no-seed", wall_ratio=2.0),
    ]
    return pd.DataFrame(rows)


# --- summary arithmetic -------------------------------------------------------------------------


def test_series_table_takes_medians_over_seeds() -> None:
    tab = acc.series_table(_trials(), _refs(), "full")
    assert list(tab.index) == ["01-a", "02-b", "03-c"]
    assert tab.loc["01-a", ["rmse", "ratio", "paper_ratio"]].tolist() == pytest.approx([20.0, 2.0, 1.0])
    assert tab.loc["02-b", "ratio"] == pytest.approx(0.5)
    # 8, 10 and a failed trial (inf): median 10; the error row is not counted.
    assert tab.loc["03-c", ["trials", "failed"]].tolist() == [3, 1]
    assert tab.loc["03-c", "ratio"] == pytest.approx(5.0)
    assert tab.loc["03-c", "paper_ratio"] == pytest.approx(10.0)
    assert tab.loc["01-a", "bma_ratio"] == pytest.approx(3.0)
    assert math.isnan(tab.loc["02-b", "bma_ratio"])
    assert tab.loc["01-a", "max_wall_ratio"] == pytest.approx(1.25)
    assert tab.loc["03-c", "max_wall_ratio"] == pytest.approx(1.1)  # not the error row's 9.0


def test_summary_geomean_worst_count_and_wall() -> None:
    tab = acc.series_table(_trials(), _refs(), "full")
    s = acc.summarize(tab)
    assert s.accuracy_geomean == pytest.approx((2.0 * 0.5 * 5.0) ** (1 / 3))
    assert (s.worst_ratio, s.series_over_3x, s.n_series) == (pytest.approx(5.0), 1, 3)
    assert s.max_wall_ratio == pytest.approx(1.25)
    bma = acc.summarize(tab, "bma_ratio")  # 02-b has no ensemble: left out
    assert bma.n_series == 2 and bma.accuracy_geomean == pytest.approx(math.sqrt(3.0 * 2.0))
    assert acc.summary_line("full", s) == ("variant=full accuracy_geomean=1.71 worst_ratio=5 series_over_3x=1 "
                                           "max_wall_ratio=1.25")


def test_a_series_where_every_seed_failed_is_infinitely_bad() -> None:
    trials = pd.DataFrame([_row("01-a", 0, rmse=10.0), _row("04-d", 0, status="no_kernel")])
    s = acc.summarize(acc.series_table(trials, _refs(), "full"))
    assert math.isinf(s.accuracy_geomean) and math.isinf(s.worst_ratio) and s.series_over_3x == 1
    assert "accuracy_geomean=inf" in acc.summary_line("full", s)
    empty = acc.summarize(acc.series_table(trials, _refs(), "no-cache"))
    assert empty.n_series == 0 and math.isnan(empty.accuracy_geomean)


def test_ablation_table_compares_each_variant_with_full() -> None:
    abl = acc.ablation_table(_trials(), _refs())
    assert list(abl.index) == ["full", "no-seed"]
    assert abl.loc["full", "vs_full"] == pytest.approx(1.0)
    # no-seed ratios 4 (01-a) and 1 (02-b) against full's 2 and 0.5: twice as bad on both.
    assert abl.loc["no-seed", "vs_full"] == pytest.approx(2.0)
    assert abl.loc["no-seed", "geomean"] == pytest.approx(2.0)
    assert abl.loc["no-seed", ["over_3x", "series", "trials"]].tolist() == [1, 2, 2]
    assert abl.loc["no-seed", "max_wall_ratio"] == pytest.approx(2.0)
    assert abl.loc["full", "failed"] == 1
    # Trial by trial, over the seeds both ran (seed 0 of 01-a and 02-b): 40 / 10 and 1 / 0.5.
    assert abl.loc["no-seed", "pairs"] == 2
    assert abl.loc["no-seed", "vs_full_paired"] == pytest.approx(math.sqrt(4.0 * 2.0))
    assert abl.loc["full", "vs_full_paired"] == pytest.approx(1.0)
    # full against itself: every finished trial pairs, its failed one (03-c seed 2, inf / inf) as a tie.
    assert abl.loc["full", "pairs"] == 9  # the error row (03-c seed 3) is not a finished trial


# --- resuming -----------------------------------------------------------------------------------


def test_finished_trials_are_skipped(tmp_path: Path) -> None:
    out = tmp_path / "run"
    rf = acc.trials_file(out)
    for series, variant, seed, status, kernel in [
        ("01-airline", "full", 0, "ok", True),  # done
        ("01-airline", "full", 1, "ok", False),  # kernel file deleted: run again
        ("02-solar", "full", 0, "error", False),  # error: run again
        ("02-solar", "full", 1, "no_kernel", False),  # done (the search fitted nothing)
        ("01-airline", "no-seed", 0, "ok", True),  # done
    ]:
        row = _row(series, seed, status=status, rmse=1.0, variant=variant)
        rf.append(row)
        if kernel:
            path = out / acc.kernel_path(series, variant, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}", encoding="utf-8")
    rf.append(_row("02-solar", 0, status="error", variant="no-seed"))
    rf.append(_row("02-solar", 0, status="no_kernel", variant="no-seed"))  # a later row replaces the error
    done = acc.done_keys(out)
    assert done == {("01-airline", "full", 0), ("02-solar", "full", 1), ("01-airline", "no-seed", 0),
                    ("02-solar", "no-seed", 0)}
    todo = acc.pending_trials(["01-airline", "02-solar"], ["full", "no-seed"], 2, done)
    assert todo == [("02-solar", "full", 0), ("01-airline", "full", 1), ("01-airline", "no-seed", 1),
                    ("02-solar", "no-seed", 1)]
    assert acc.pending_trials(["01-airline"], ["full"], 1, done) == []
    # --first-seed: only the later seeds (seed 0 of 02-solar is not due)
    later = acc.pending_trials(["01-airline", "02-solar"], ["full"], 2, done, first_seed=1)
    assert later == [("01-airline", "full", 1)]


def _toy_data_dir(path: Path) -> Path:
    """A TSDL-like folder with one 30-point series, its split and reference RMSEs."""
    from evocov_core.data import load_tsdl

    path.mkdir()
    rng = np.random.default_rng(0)
    x = 1990 + np.arange(30) / 4
    y = np.sin(x * 2) + 0.1 * (x - 1990) + 0.05 * rng.standard_normal(30)
    pd.DataFrame({"x": x, "y": y}).to_csv(path / "01-toy.csv", index=False)
    ds = load_tsdl(path / "01-toy.csv")
    pd.DataFrame({"file": ["01-toy.csv"], "n_train": [ds.n_train], "n_test": [ds.n_test]}).to_csv(
        path / "splits.csv", index=False)
    pd.DataFrame({"dataset": ["01-toy"], "best_published": [0.2], "evocov_lml_mean": [0.4]}).to_csv(
        path / "evocov_paper_rmse.csv", index=False)
    return path


def test_a_rerun_runs_only_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's loop, with a stand-in search (one real SE fit) instead of ``run_search``."""
    from evocov_core.fitting.optimize import fit_kernel
    from evocov_core.language.library import squared_exponential
    from evocov_core.runs.kernel_file import load_kernel_file

    calls: list[tuple[int, float]] = []

    def fake_search(data, config, *, seed: int, workers: int, dataset=None):
        calls.append((seed, config.time_budget))
        fit = fit_kernel(squared_exponential(), data, config.optim, np.random.default_rng(seed))
        return SimpleNamespace(best=fit, best_bic=fit, ensemble=((fit, 1.0),), n_evaluations=1, n_screen_fits=0,
                               history=(None, None), elapsed=0.01)

    monkeypatch.setattr("evocov_core.forecast.stage.search_and_forecast", fake_search)
    data_dir, out = _toy_data_dir(tmp_path / "data"), tmp_path / "out"
    quiet = {"log": lambda s: None, "workers": 1, "time_budget": 7.0}
    res = acc.accuracy(data_dir, out, seeds=2, argv=["accuracy", "first"], **quiet)
    assert calls == [(0, 7.0), (1, 7.0)]
    rows = pd.read_csv(out / "trials.csv")
    assert rows[["series", "variant", "seed", "status"]].values.tolist() == [["01-toy", "full", 0, "ok"],
                                                                             ["01-toy", "full", 1, "ok"]]
    assert (rows["budget_s"] == 7.0).all() and (rows["generations"] == 2).all()
    assert np.allclose(rows["wall_ratio"], rows["wall_s"] / 7.0, atol=1e-3)
    assert np.allclose(rows["bma_test_rmse"], rows["test_rmse"])  # a one-kernel ensemble is that kernel
    # The returned kernel's predictive normal (latent variance + noise) on the test part.
    assert rows["coverage_95"].between(0, 1).all() and (rows["crps"] > 0).all()
    from bench.common import load_series
    from evocov_core.present.compare import forecast_scores

    ds = load_series(data_dir, "01-toy")
    scores = forecast_scores(load_kernel_file(out / rows["kernel_file"][1]).model(), ds)
    assert (scores.coverage_95, scores.crps, scores.test_rmse) == (
        pytest.approx(rows["coverage_95"][1]), pytest.approx(rows["crps"][1]), pytest.approx(rows["test_rmse"][1]))
    # The report ran the classical forecasters once on the series and kept them.
    classical = pd.read_csv(out / "classical.csv")
    assert sorted(classical["model"]) == sorted(["SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta", "MSTL"])
    assert (classical["series"] == "01-toy").all() and classical["checksum"].str.startswith("sha256:").all()
    kf = load_kernel_file(out / "kernels" / "01-toy__full__seed1.json")
    assert kf.kernel.q == 3
    assert res.summary[0].startswith("variant=full accuracy_geomean=")
    # Rerun with one more seed: only seed 2 runs; then nothing at all.
    acc.accuracy(data_dir, out, seeds=3, argv=["accuracy", "second"], **quiet)
    acc.accuracy(data_dir, out, seeds=3, argv=["accuracy", "third"], **quiet)
    assert [c[0] for c in calls] == [0, 1, 2]
    assert len(pd.read_csv(out / "trials.csv")) == 3
    assert len(pd.read_csv(out / "classical.csv")) == len(classical)  # kept, not made again
    runs = json.loads((out / "run.json").read_text(encoding="utf-8"))["runs"]
    assert [(r["trials_run"], r["trials_skipped"]) for r in runs] == [(2, 0), (1, 2), (0, 3)]
    assert "bench accuracy third" in (out / "report.md").read_text(encoding="utf-8")
    # Other settings (another budget) in the same folder are refused, before anything runs.
    with pytest.raises(BenchError, match="time_budget"):
        acc.accuracy(data_dir, out, seeds=3, argv=["x"], log=lambda s: None, workers=1, time_budget=8.0)
    assert len(json.loads((out / "run.json").read_text(encoding="utf-8"))["runs"]) == 3
    # Ctrl-C during a search: the invocation is recorded as interrupted, the finished trials stay.

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("evocov_core.forecast.stage.search_and_forecast", interrupted)
    with pytest.raises(KeyboardInterrupt):
        acc.accuracy(data_dir, out, seeds=4, argv=["x"], **quiet)
    last = json.loads((out / "run.json").read_text(encoding="utf-8"))["runs"][-1]
    assert last["interrupted"] is True and last["trials_run"] == 0
    assert len(pd.read_csv(out / "trials.csv")) == 3
    assert "interrupted at" in acc.accuracy_report(out).path.read_text(encoding="utf-8")


# --- report ---------------------------------------------------------------------------------------


def test_report_is_regenerated_from_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _refs().reset_index().to_csv(data_dir / "evocov_paper_rmse.csv", index=False)
    out = tmp_path / "out"
    out.mkdir()
    append_run(out / "run.json", {"command": "python -m bench accuracy --first", "budget": "quick",
                                  "budget_s": 60.0, "started": "2026-01-01T09:59:00+00:00", "variants": ["full"],
                                  "data_dir": str(data_dir), "machine": {"CPU": "test CPU"}})  # interrupted
    append_run(out / "run.json", {"command": "python -m bench accuracy --second", "budget": "quick",
                                  "budget_s": 60.0, "started": "2026-01-01T11:00:00+00:00", "wall_seconds": 42.0,
                                  "finished": "2026-01-01T11:00:42+00:00", "variants": ["full", "no-seed"],
                                  "data_dir": str(data_dir), "machine": {"CPU": "test CPU"}})
    rf = acc.trials_file(out)
    for row in _trials().to_dict("records"):
        rf.append(row)
    assert main(["accuracy-report", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out.splitlines()
    # No series files here: no classical forecasts (vs_* nan); no trial recorded a coverage.
    assert stdout[:2] == [
        "variant=full accuracy_geomean=1.71 worst_ratio=5 series_over_3x=1 max_wall_ratio=1.25 "
        "single_run_geomean=inf single_run_p90=inf worst_single=inf median5_geomean=1.71 coverage_95=nan "
        "coverage_trials=0 vs_autoets=nan vs_autoarima=nan vs_autotheta=nan vs_snaive=nan",
        "variant=no-seed accuracy_geomean=2 worst_ratio=4 series_over_3x=1 max_wall_ratio=2 single_run_geomean=2 "
        "single_run_p90=3.7 worst_single=4 median5_geomean=2 coverage_95=nan coverage_trials=0 vs_autoets=nan "
        "vs_autoarima=nan vs_autotheta=nan vs_snaive=nan",
    ]
    text = (out / "report.md").read_text(encoding="utf-8")
    for part in (*stdout[:2], "## Per series, variant `full`", "## Ablation", "## Trials", "test CPU",
                 "bench accuracy --first", "interrupted, last trial 60 s after the start", "wall 42 s",
                 "1 trial(s) ended with an error", "| 03-c | 3 | 10 | 5.000 | 10.000 |", "| no-seed | 2 | 2 | 0 |",
                 "| paper ratio |", "| coverage | SeasonalNaive | AutoETS | AutoARIMA | AutoTheta | MSTL |",
                 "\\|x-x'\\|"):
        assert part in text, part
    # The report comes from the files alone: delete it, regenerate, same text.
    (out / "report.md").unlink()
    path, summary = acc.accuracy_report(out)
    assert path.read_text(encoding="utf-8") == text and summary == stdout[:2]


def _classical(rows: dict[str, dict[str, float]]) -> pd.DataFrame:
    """A classical-scores table: ``{series: {model: test RMSE}}``, every other model failed."""
    from evocov_core.forecast.classical import MODELS

    out = []
    for series, models in rows.items():
        for m in MODELS:
            ok = m in models
            out.append({"series": series, "model": m, "status": "ok" if ok else "failed",
                        "test_rmse": models.get(m, math.nan), "reason": "" if ok else f"{m}: no"})
    return pd.DataFrame(out)


def test_single_trials_coverage_and_the_classical_forecasters() -> None:
    trials = _trials()
    trials.loc[0, ["coverage_95", "n_test"]] = [1.0, 10]  # 01-a seed 0
    trials.loc[1, ["coverage_95", "n_test"]] = [0.5, 30]  # 01-a seed 1; the others recorded none
    classical = _classical({"01-a": {"AutoETS": 10.0, "AutoARIMA": 40.0}, "02-b": {"AutoETS": 2.0},
                            "03-c": {}})
    full = acc.trial_summary(trials, _refs(), "full", classical)
    # Ratios 1, 2, 3 | 0.5, 0.5, 4 | 4, 5, inf (03-c's failed trial): the 90th percentile lies on the failure.
    assert math.isinf(full.single_run_geomean) and math.isinf(full.single_run_p90) and math.isinf(full.worst_single)
    assert full.median5_geomean == pytest.approx((2.0 * 0.5 * 5.0) ** (1 / 3))  # the medians 2, 0.5, 5
    assert full.coverage_95 == pytest.approx((1.0 * 10 + 0.5 * 30) / 40) and full.coverage_trials == 2
    # Median RMSE 20 / 10 and 0.5 / 2 (03-c: AutoETS failed there, left out); AutoARIMA on 01-a only.
    assert full.vs["vs_autoets"] == pytest.approx(math.sqrt(2.0 * 0.25))
    assert full.vs["vs_autoarima"] == pytest.approx(0.5)
    assert math.isnan(full.vs["vs_autotheta"]) and math.isnan(full.vs["vs_snaive"])
    seed = acc.trial_summary(trials, _refs(), "no-seed")  # ratios 4 and 1; no classical table
    assert (seed.single_run_geomean, seed.single_run_p90, seed.worst_single, seed.median5_geomean) == (
        pytest.approx(2.0), pytest.approx(1 + 0.9 * 3), 4.0, pytest.approx(2.0))
    assert math.isnan(seed.coverage_95) and seed.coverage_trials == 0 and math.isnan(seed.vs["vs_autoets"])
    line = acc.summary_line("no-seed", acc.summarize(acc.series_table(trials, _refs(), "no-seed")), seed, "corpus_")
    assert line.startswith("variant=no-seed corpus_accuracy_geomean=2 corpus_worst_ratio=4 ")
    assert "corpus_single_run_p90=3.7 corpus_worst_single=4 corpus_median5_geomean=2 " in line
    assert line.endswith("corpus_vs_autoarima=nan corpus_vs_autotheta=nan corpus_vs_snaive=nan")


def _corpus_dir(path: Path, n: int = 2) -> Path:
    """A development-corpus-like folder: ``n`` 30-point quarterly series and their split, nothing published."""
    from evocov_core.data import load_tsdl

    path.mkdir()
    rng = np.random.default_rng(1)
    files, splits = [], []
    for i in range(1, n + 1):
        x = 1990 + np.arange(30) / 4
        y = i * np.sin(x * 2) + 0.1 * (x - 1990) + 0.05 * rng.standard_normal(30)
        name = f"{i:02d}-toy{i}"
        pd.DataFrame({"x": x, "y": y}).to_csv(path / f"{name}.csv", index=False)
        ds = load_tsdl(path / f"{name}.csv")
        files.append(f"{name}.csv")
        splits.append((ds.n_train, ds.n_test))
    pd.DataFrame({"file": files, "n_train": [a for a, _ in splits], "n_test": [b for _, b in splits]}).to_csv(
        path / "splits.csv", index=False)
    return path


def _fake_classical(calls: list[str]):
    """A stand-in for ``classical_forecasts``: each model forecasts the last training value ± 1 (MSTL never
    starts, as when its process cannot start)."""
    from evocov_core.fitting.seasons import infer_seasons
    from evocov_core.forecast.classical import MODELS, ClassicalForecast, ClassicalForecasts

    def fake(ds, **kwargs):
        calls.append(ds.name)
        h = ds.n_test
        mean = np.full(h, ds.y_train[-1])
        rows = tuple(ClassicalForecast(m, mean, mean - 1, mean + 1, "ok", "", 0.01, "season 4") if m != "MSTL"
                     else ClassicalForecast(m, None, None, None, "failed", "MSTL: the process died", math.nan)
                     for m in MODELS)
        return ClassicalForecasts(ds.X_test[:, 0].copy(), infer_seasons(ds), rows)

    return fake


def test_a_corpus_folder_is_judged_against_autoets_and_its_classical_table_is_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No evocov_paper_rmse.csv: the reference is AutoETS on the same split, every summary key is prefixed
    corpus_, the report has no paper columns; the classical table in the folder is reused while a series'
    file is the same, made again when it changes, and a model that never ran is tried again."""
    from bench.common import classical_file, series_checksum
    from evocov_core.forecast.classical import MODELS

    data_dir = _corpus_dir(tmp_path / "series")
    out = tmp_path / "out"
    out.mkdir()
    append_run(out / "run.json", {"command": "python -m bench accuracy --data-dir series",
                                  "budget": "quick", "budget_s": 60.0, "started": "2026-01-01T09:59:00+00:00",
                                  "variants": ["full"], "data_dir": str(data_dir)})
    rf = acc.trials_file(out)
    for series, seed, rmse in (("01-toy1", 0, 1.0), ("01-toy1", 1, 3.0), ("02-toy2", 0, 0.5), ("02-toy2", 1, 0.5)):
        rf.append({**_row(series, seed, rmse=rmse), "n_test": 3, "coverage_95": 2 / 3})
    cf = classical_file(out)
    for series, ets, naive in (("01-toy1", 2.0, 4.0), ("02-toy2", 1.0, 0.5)):
        for m in MODELS:  # what an earlier report made
            rmse = {"AutoETS": ets, "SeasonalNaive": naive}.get(m)
            cf.append({"series": series, "checksum": series_checksum(data_dir / f"{series}.csv"), "model": m,
                       "status": "ok" if rmse else "skipped", "test_rmse": rmse, "reason": "" if rmse else "no"})
    calls: list[str] = []
    monkeypatch.setattr("evocov_core.forecast.classical.classical_forecasts", _fake_classical(calls))
    res = acc.accuracy_report(out)
    assert calls == []  # every series read from classical.csv
    # Ratios to AutoETS: 0.5, 1.5 (median 1) and 0.5, 0.5 (median 0.5).
    line, goal = res.summary  # the summary, then issue 55's line on the kernel
    kernel = dict(kv.split("=") for kv in goal.split())
    assert kernel["corpus_kernel_vs_autoets"] == f"{(0.5 * 1.5 * 0.5 * 0.5) ** 0.25:.4g}"
    assert kernel["corpus_kernel_worst"] == "1.5" and kernel["corpus_kernel_weight"] == "nan"  # no forecast recorded
    want = {"corpus_accuracy_geomean": "0.7071", "corpus_worst_ratio": "1", "corpus_series_over_3x": "0",
            "corpus_single_run_geomean": f"{(0.5 * 1.5 * 0.5 * 0.5) ** 0.25:.4g}", "corpus_worst_single": "1.5",
            "corpus_median5_geomean": "0.7071", "corpus_coverage_95": "0.667", "corpus_coverage_trials": "4",
            "corpus_vs_autoets": "0.7071", "corpus_vs_snaive": "0.7071", "corpus_vs_autoarima": "nan"}
    got = dict(kv.split("=") for kv in line.split())
    assert got["variant"] == "full" and {k: got[k] for k in want} == want
    assert not any(k.startswith(("accuracy", "vs_", "single")) for k in got)  # every key prefixed
    text = res.path.read_text(encoding="utf-8")
    assert "paper ratio" not in text and "ratio = RMSE / AutoETS's test RMSE" in text
    assert "a development corpus: no published results" in text and "| 0.67 |" in text  # coverage 2/3
    # A series file that changed is forecast again (its old rows are stale); the other is still reused.
    (data_dir / "02-toy2.csv").write_text((data_dir / "02-toy2.csv").read_text() + "\n", encoding="utf-8")
    acc.accuracy_report(out)
    assert calls == ["02-toy2"]
    kept = pd.read_csv(out / "classical.csv").drop_duplicates(["series", "model"], keep="last")
    now = kept[(kept.series == "02-toy2") & (kept.checksum == series_checksum(data_dir / "02-toy2.csv"))]
    assert sorted(now.model) == sorted(set(MODELS) - {"MSTL"})  # MSTL never ran: not kept ...
    acc.accuracy_report(out)
    assert calls == ["02-toy2", "02-toy2"]  # ... so tried again


def test_a_folder_from_before_the_new_columns_reports_and_resumes(tmp_path: Path) -> None:
    """Committed folders' trials have no coverage, CRPS or forecast: the report shows "-"; resuming adds the
    columns."""
    import csv

    out = tmp_path / "out"
    out.mkdir()
    old = [c for c in acc.TRIAL_COLUMNS if c not in ("coverage_95", "crps", "forecast_test_rmse", "forecast")]
    assert old == acc.TRIAL_COLUMNS[:len(old)]
    with open(out / "trials.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=old, extrasaction="ignore")
        w.writeheader()
        for row in _trials().to_dict("records"):
            w.writerow(row)
    before = (out / "trials.csv").read_text(encoding="utf-8")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _refs().reset_index().to_csv(data_dir / "evocov_paper_rmse.csv", index=False)
    res = acc.accuracy_report(out, data_dir=data_dir)
    assert "coverage_95=nan coverage_trials=0" in res.summary[0]
    assert "| 01-a | full | 0 | ok | 10 | 10 | 10 | - | - |" in res.path.read_text(encoding="utf-8")
    assert acc.upgrade_trials_file(out) and not acc.upgrade_trials_file(out)
    after = (out / "trials.csv").read_text(encoding="utf-8")
    assert after.splitlines()[0] == ",".join(acc.TRIAL_COLUMNS)
    assert [line.removesuffix(",,,,") for line in after.splitlines()[1:]] == before.splitlines()[1:]
    assert not any("forecast_" in line for line in res.summary)  # no trial recorded a forecast
    acc.trials_file(out).append({**_row("04-d", 0, rmse=4.0), "coverage_95": 0.9, "crps": 1.5})
    t = acc.read_trials(out)
    assert len(t) == len(_trials()) + 1 and t["coverage_95"].iloc[-1] == 0.9


def test_report_needs_the_reference_rmse(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    append_run(out / "run.json", {"command": "c", "data_dir": str(tmp_path / "nowhere")})
    with pytest.raises(BenchError, match=r"evocov_paper_rmse\.csv"):
        acc.accuracy_report(out)


# --- settings and command line ----------------------------------------------------------------------


def test_each_variant_changes_only_its_part() -> None:
    full = acc.variant_config("full", "quick").to_dict()
    assert full["time_budget"] == acc.budget_seconds("quick") > 0
    assert acc.variant_config("full", "standard").time_budget > full["time_budget"]
    assert acc.variant_config("full", "quick", 12.5).time_budget == 12.5
    for name, v in acc.VARIANTS.items():
        if v.preset is not None:
            continue
        changed: set[str] = set()
        for budget in ("quick", "standard"):  # a part can be on in one preset and off in the other
            base = acc.variant_config("full", budget).to_dict()
            cfg = acc.variant_config(name, budget).to_dict()
            here = {k for k in cfg if cfg[k] != base[k]}
            assert here <= set(v.overrides), (name, budget)
            changed |= here
        # A variant changes its part in some preset, or is what every preset now runs (one the
        # presets adopted, kept so that its folders still name it: cp-by-expansion).
        adopted = all(acc.variant_config("full", b).to_dict()[k] == val
                      for b in ("quick", "standard") for k, val in v.overrides.items())
        assert changed == set(v.overrides) or (not changed and adopted), name
    fixed = acc.variant_config("fixed-quick", "quick")
    assert fixed.time_budget == 0  # no time limit
    assert acc.parse_variants("all") == list(acc.VARIANTS)
    assert acc.parse_variants("no-seed, full,no-seed") == ["no-seed", "full"]


@pytest.mark.parametrize(("args", "message"), [
    (["--budget", "huge"], "invalid choice"),
    (["--seeds", "three"], "invalid int value"),
    (["--bogus", "1"], "unrecognized arguments: --bogus 1"),
    (["--seeds", "0"], "--seeds must be at least 1"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--variants", "full,nope"], "unknown variant(s) nope"),
    (["--time-budget", "-5"], "--time-budget must be a positive number"),
    (["--series", "99-nothing"], "unknown series '99-nothing'"),
    (["--data-dir", "/nonexistent/tsdl"], "data folder /nonexistent/tsdl does not exist"),
])
def test_argument_errors_are_one_line(args: list[str], message: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    data_dir = _toy_data_dir(tmp_path / "data")
    argv = ["accuracy", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out" / "trials.csv").exists()


def test_missing_out_and_empty_folder_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    assert main(["accuracy"]) == 2
    assert main(["accuracy-report", "--out", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "required: --out" in lines[0] and "not a bench accuracy folder" in lines[1]


def test_the_module_entry_point_reports_errors_on_one_line(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "bench", "accuracy", "--seeds", "0", "--out",
                          str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2 and res.stderr == "error: --seeds must be at least 1, got 0\n"


# --- one real search ------------------------------------------------------------------------------


@pytest.mark.slow
def test_one_real_budgeted_trial(tmp_path: Path) -> None:
    from evocov_core.runs.kernel_file import load_kernel_file

    data_dir = _toy_data_dir(tmp_path / "data")
    res = acc.accuracy(data_dir, tmp_path / "out", time_budget=1.5, seeds=1, workers=1, log=lambda s: None,
                       records=True, argv=["test"])
    row = pd.read_csv(tmp_path / "out" / "trials.csv").iloc[0]
    assert row["status"] == "ok", row["reason"]
    assert math.isfinite(row["test_rmse"]) and row["n_evaluations"] >= 1 and row["generations"] >= 1
    kf = load_kernel_file(tmp_path / "out" / row["kernel_file"])
    assert kf.kernel.infix == row["infix"]
    # --records: every full fit, none screened out, the returned kernel among them with its BIC.
    recs = pd.read_csv(tmp_path / "out" / acc.records_path("01-toy", "full", 0))
    assert len(recs) == row["n_evaluations"] and "screened_out" not in set(recs["status"])
    mine = recs[recs["canonical"] == kf.kernel.canonical]
    assert np.isclose(mine["bic"].min(), row["bic"])
    assert res.summary[0].startswith("variant=full ")


def test_readme_table_compares_with_the_paper_and_published(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _refs().reset_index().to_csv(data_dir / "evocov_paper_rmse.csv", index=False)
    pd.DataFrame({"dataset": ["01-a", "01-a", "02-b"], "method": ["GPSS", "ABCD-accuracy", "GPSS"],
                  "rmse": [12.0, 11.0, 1.5]}).to_csv(data_dir / "published_rmse.csv", index=False)
    out = tmp_path / "out"
    out.mkdir()
    rf = acc.trials_file(out)
    for row in _trials().to_dict("records"):
        rf.append(row)
    text = acc.readme_table(out, data_dir)
    lines = text.splitlines()
    assert lines[0] == ("| series | EvoCov here (× best published) | EvoCov paper (mean) | GPSS | ABCD-accuracy | "
                        "AutoETS | AutoARIMA | AutoTheta |")
    assert "| 01-a | 20 (2.00×) | 20 | 12 | 11 | – | – | – |" in lines  # median of 10, 20, 30; ratio to 10
    assert "| 02-b | 0.5 (0.50×) | 2 | 1.5 | – | – | – | – |" in lines  # no series files: no classical ones
    assert "Geometric mean of the ratios to the best published: 1.71" in text
    assert "vs_autoets=nan" in text


def test_headline_table_sets_folders_beside_the_references(tmp_path: Path) -> None:
    """The README's table: each folder's medians, the references' own summary, single runs for ours only."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _refs().reset_index().to_csv(data_dir / "evocov_paper_rmse.csv", index=False)
    pd.DataFrame({"dataset": ["01-a", "01-a", "02-b"], "method": ["GPSS", "ABCD-accuracy", "GPSS"],
                  "rmse": [12.0, 11.0, 1.5]}).to_csv(data_dir / "published_rmse.csv", index=False)
    folders = {}
    for name, rows in (("A", _trials().to_dict("records")),
                       ("B", [_row("01-a", k, rmse=v) for k, v in enumerate((10.0, 11.0, 40.0))]
                        + [_row("02-b", 0, rmse=2.0), _row("03-c", 0, rmse=2.0)])):
        out = tmp_path / name
        out.mkdir()
        for row in rows:
            acc.trials_file(out).append(row)
        folders[f"{name} (1 s)"] = out
    lines = acc.headline_table(folders, data_dir).splitlines()
    assert lines[0] == ("| series | EvoCov A (1 s) | EvoCov B (1 s) | EvoCov paper (mean) | GPSS | ABCD-accuracy | "
                        "AutoETS | AutoARIMA | AutoTheta |")
    assert "| 01-a | 20 (2.00×) | 11 (1.10×) | 20 | 12 | 11 | – | – | – |" in lines
    assert "| 03-c | 10 (5.00×) | 2 (1.00×) | 1 | – | – | – | – | – |" in lines  # A: 8, 10 and a failure
    rows = {line.split(" | ")[0].strip("| *"): line.split(" | ")[1:] for line in lines[2:]}
    # Medians: A 2, 0.5, 5; B 1.1, 2, 1; the paper 2, 2, 0.5; GPSS lacks 03-c: no summary.
    gm = rows["geometric mean over the series** (ours: median of the seeds)"]
    assert gm[:4] == ["**1.71**", f"**{(1.1 * 2 * 1) ** (1 / 3):.2f}**", f"**{(2 * 2 * 0.5) ** (1 / 3):.2f}**", "**–**"]
    assert rows["worst series"][:3] == ["5.00", "2.00", "2.00"]
    assert rows["series over 3×"][:4] == ["1", "0", "0", "–"]
    # Single runs of B: 1.0, 1.1, 4.0, 2.0, 1.0 (ratios to 10, 10, 10, 1, 2).
    single = [1.0, 1.1, 4.0, 2.0, 1.0]
    assert rows["single run: geometric mean over all trials"][1] == f"**{math.prod(single) ** (1 / 5):.2f}**"
    assert rows["single run: worst"][1:3] == ["4.00", "–"]
    assert rows["single run: 90th percentile"][0] == "inf"  # A has a failed trial


def test_headline_command_wants_label_equals_folder(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    assert main(["accuracy-headline", "--folder", "bench/results/accuracy/quick-reseed"]) == 2
    assert "expected LABEL=FOLDER" in capsys.readouterr().err


def test_the_help_names_every_variant(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    assert main(["accuracy", "--help"]) == 0
    text = " ".join(re.sub(r"-\n\s*", "-", capsys.readouterr().out).split())  # argparse wraps at hyphens
    assert all(name in text for name in acc.VARIANTS), text


def test_forecast_line_reports_the_returned_forecast_and_pairs_it_with_the_kernel() -> None:
    """Trials that record the forecast the search returned (kernel or average): its single-run figures and its
    RMSE paired against the kernel's own, trial by trial."""
    rows = [
        {**_row("01-a", 0, rmse=10.0), "forecast_test_rmse": 5.0, "forecast": "kernel + AutoTheta"},  # ratio 0.5
        {**_row("02-b", 0, rmse=1.0), "forecast_test_rmse": 1.0, "forecast": "kernel"},  # ratio 1
        {**_row("04-d", 0, rmse=4.0), "forecast_test_rmse": 8.0, "forecast": "kernel + AutoETS + AutoTheta"},  # 2
        _row("03-c", 0, rmse=2.0),  # an older trial: no forecast recorded, left out
    ]
    line = acc.forecast_line(pd.DataFrame(rows), _refs(), "full", prefix="corpus_")
    got = dict(item.split("=") for item in line.split())
    # Against the references 10, 1, 4: 0.5, 1, 2 -> geometric mean 1, worst 2.
    assert float(got["corpus_forecast_single_run_geomean"]) == pytest.approx(1.0)
    assert float(got["corpus_forecast_worst_single"]) == pytest.approx(2.0)
    # Paired against the kernel: 0.5, 1, 2 -> 1, SE of the log = std(ln 0.5, 0, ln 2) / sqrt 3.
    assert float(got["corpus_forecast_paired"]) == pytest.approx(1.0)
    assert float(got["corpus_forecast_paired_se_log"]) == pytest.approx(np.log(2) / np.sqrt(3), rel=1e-3)
    assert got["corpus_forecast_combined"] == "2/3"
    assert acc.forecast_line(pd.DataFrame([_row("01-a", 0, rmse=1.0)]), _refs(), "full") is None


@pytest.mark.parametrize(("forecast", "weight"), [
    ("kernel", 1.0), ("kernel 0.41 + AutoETS 0.35 + AutoTheta 0.24", 0.41), ("AutoETS 0.6 + AutoTheta 0.4", 0.0),
    (None, float("nan")), ("", float("nan"))])
def test_kernel_weight_reads_the_recorded_forecast(forecast, weight) -> None:
    got = acc.kernel_weight(forecast)
    assert (np.isnan(got) and np.isnan(weight)) or got == pytest.approx(weight)


def test_kernel_goal_line_reports_the_kernel_and_its_weight() -> None:
    """Issue 55's keys: the kernel alone and the forecast against AutoETS (the corpus reference), the kernel's
    90th percentile and worst run, and its mean weight."""
    rows = [
        {**_row("01-a", 0, rmse=20.0), "forecast_test_rmse": 5.0, "forecast": "kernel 0.2 + AutoETS 0.8"},  # 2, 0.5
        {**_row("02-b", 0, rmse=0.5), "forecast_test_rmse": 1.0, "forecast": "kernel"},  # 0.5, 1
        {**_row("04-d", 0, rmse=4.0), "forecast_test_rmse": 8.0, "forecast": "kernel 0.6 + AutoTheta 0.4"},  # 1, 2
    ]
    line = acc.kernel_goal_line(pd.DataFrame(rows), _refs(), "full")
    got = dict(item.split("=") for item in line.split())
    assert float(got["corpus_kernel_vs_autoets"]) == pytest.approx(1.0)
    assert float(got["corpus_kernel_worst"]) == pytest.approx(2.0)
    assert 1.0 < float(got["corpus_kernel_p90"]) <= 2.0
    assert float(got["corpus_forecast_vs_autoets"]) == pytest.approx(1.0)
    assert float(got["corpus_kernel_weight"]) == pytest.approx((0.2 + 1.0 + 0.6) / 3)
    assert acc.kernel_goal_line(pd.DataFrame([_row("01-a", 0, status="error")]), _refs(), "full") is None
