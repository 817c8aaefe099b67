"""Gaps kept (issue 73): how much a forecast loses when training points are missing.

Each chosen series of the development corpus (``bench/corpus/series``; never TSDL, never a reserved
series) is searched once complete and, for each removal seed, with 10 % and 30 % of its training points
removed at random (the first training point is kept, so the split rule leaves the same test part). A
removed point is a point not observed: the series is what ``load_csv(..., missing="keep")`` makes of a
file with those values empty, every other point at its own time. Each search is the ``quick`` preset's
at ``--time-budget`` seconds with one worker and the same search seed, so a series' runs differ only by
the points removed (and the time a budgeted search gets).

Scored on the test part: the test RMSE of the search's forecast (the combination's, what a user gets) and
of the kernel alone, each over the complete series' run; the 95 % coverage of the kernel's calibrated
interval, pooled over every test point. Issue 73 asks: median forecast ratio at 10 % removed ≤ 1.10;
at 30 % a forecast for every series and a pooled coverage within 5 points of the complete series'.

::

    python -m bench gaps --time-budget 20 --seeds 3 --workers 2 --out bench/results/gaps/quick20

The folder holds ``trials.csv`` (one row per search, resumable) and ``report.md``.
"""

from __future__ import annotations

import math
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common import ResultFile, TrialStatus, fmt, load_series, md_table, resolve_series, run_jobs
from evocov_core.data import Dataset

__all__ = ["CORPUS_DIR", "DEFAULT_SERIES", "RATES", "GapTrial", "gapped", "gaps_report", "gaps_study", "run_gap_trial"]

CORPUS_DIR = Path(__file__).resolve().parent / "corpus" / "series"
#: Every fifth series of the corpus (01, 06, ..., 61), fixed before any run: annual to hourly.
DEFAULT_SERIES = tuple(f"{k:02d}" for k in range(1, 62, 5))
#: Shares of the training points removed.
RATES = (0.1, 0.3)
COLUMNS = ["series", "rate", "removal_seed", "status", "reason", "n_train", "n_test", "removed", "test_rmse",
           "forecast_test_rmse", "coverage_95", "forecast", "expression", "wall_s", "host"]
KEY = ["series", "rate", "removal_seed"]
#: Series of at least this many training points are reported apart too.
LONG = 500


def gapped(ds: Dataset, rate: float, seed: int) -> Dataset:
    """``ds`` with ``round(rate * n_train)`` training points removed at random (seeded; never the first).

    Parameters
    ----------
    ds : Dataset
        One input column; its training part precedes its test part.
    rate : float
        Share of the training points removed, in [0, 1).
    seed : int
        The removal's seed.

    Returns
    -------
    Dataset
        The same test part (checked), the other points at their own x.
    """
    if rate <= 0:
        return ds
    rng = np.random.default_rng([seed, ds.n_train, round(rate * 1000)])
    k = round(rate * ds.n_train)
    gone = rng.choice(np.arange(1, ds.n_train), size=k, replace=False)
    keep = np.ones(ds.n, dtype=bool)
    keep[np.flatnonzero(ds.train)[gone]] = False
    out = Dataset.from_arrays(ds.x[keep], ds.y[keep], name=ds.name, test_fraction=ds.test_fraction,
                              duplicates="keep", x_label=ds.x_label, y_label=ds.y_label, x_kind=ds.x_kind,
                              notes=(f"{k} training points removed at random (seed {seed})",))
    if not np.array_equal(out.X_test, ds.X_test):
        raise AssertionError("removing training points changed the test part")
    return out


@dataclass(frozen=True)
class GapTrial:
    """One search: a series, a share removed (0: complete) and the removal's seed."""

    series: str
    rate: float
    removal_seed: int
    time_budget: float
    data_dir: str


def run_gap_trial(trial: GapTrial) -> dict:
    """Search and forecast one (possibly gapped) series; a row of ``trials.csv``. Never raises."""
    from bench.accuracy import _predictive_scores, variant_config
    from evocov_core.fitting.metrics import FitData
    from evocov_core.forecast.stage import search_and_forecast

    row: dict[str, Any] = {"series": trial.series, "rate": trial.rate, "removal_seed": trial.removal_seed,
                           "host": socket.gethostname()}
    t0 = time.perf_counter()
    try:
        full = load_series(Path(trial.data_dir), trial.series)
        ds = gapped(full, trial.rate, trial.removal_seed)
        row.update(n_train=ds.n_train, n_test=ds.n_test, removed=full.n_train - ds.n_train)
        config = variant_config("full", "quick", trial.time_budget)
        data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
        forecast = search_and_forecast(data, config, seed=0, workers=1, dataset=ds)
        result = forecast.search
        best = result.best
        if best is None or not best.ok:
            row.update(status=TrialStatus.NO_KERNEL, reason="no kernel could be fitted")
        else:
            row.update(status=TrialStatus.OK, test_rmse=best.test_rmse, expression=best.kernel.prefix,
                       forecast_test_rmse=forecast.test_rmse(ds), forecast=forecast.combination.label,
                       **_predictive_scores(best, ds, getattr(result, "calibration", None)))
    except Exception as exc:  # one failed trial must not stop the study
        row.update(status=TrialStatus.ERROR, reason=f"{type(exc).__name__}: {exc}"[:300])
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    return row


def gaps_study(out: Path, *, series: Sequence[str] = DEFAULT_SERIES, seeds: int = 3, rates: Sequence[float] = RATES,
               time_budget: float = 20.0, workers: int = 1, data_dir: Path = CORPUS_DIR,
               log: Callable[[str], None] | None = None) -> tuple[Path, str]:
    """Run the trials not yet in ``out/trials.csv`` and write ``out/report.md``; returns its path and the
    summary line."""
    names = resolve_series(data_dir, list(series))
    store = ResultFile(Path(out) / "trials.csv", COLUMNS, KEY)
    done = store.keys(lambda r: r.get("status") != TrialStatus.ERROR)
    todo = [GapTrial(s, 0.0, 0, time_budget, str(data_dir)) for s in names]
    todo += [GapTrial(s, float(r), k, time_budget, str(data_dir)) for k in range(seeds) for r in rates for s in names]
    todo = [t for t in todo if (t.series, t.rate if t.rate else 0, t.removal_seed) not in done
            and (t.series, t.rate, t.removal_seed) not in done]

    def keep(_: object, row: dict) -> None:
        store.append(row)
        if log is not None:
            log(f"{row['series']} rate {row['rate']} seed {row['removal_seed']}: {row.get('status')} "
                f"forecast RMSE {fmt(row.get('forecast_test_rmse'))} ({row.get('wall_s')} s)")

    if todo:  # the code the trials run: the report names it
        from evocov_core.compute.provenance import git_state

        git = git_state()
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "commit.txt").write_text(f"{git['commit']}{' with local changes' if git['dirty'] else ''}\n")
    run_jobs(run_gap_trial, todo, workers=workers, on_result=keep)
    return gaps_report(out, time_budget=time_budget)


def _table(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per gapped trial with its ratios to the complete series' run."""
    ok = trials[trials["status"] == TrialStatus.OK].copy()
    base = ok[ok["rate"] == 0].set_index("series")
    gaps = ok[ok["rate"] > 0].copy()
    gaps = gaps[gaps["series"].isin(base.index)]
    for col, name in (("forecast_test_rmse", "forecast_ratio"), ("test_rmse", "kernel_ratio")):
        gaps[name] = gaps[col].to_numpy(float) / base.loc[gaps["series"], col].to_numpy(float)
    gaps["complete_n_train"] = base.loc[gaps["series"], "n_train"].to_numpy(float)
    return gaps


def _pooled(rows: pd.DataFrame) -> float:
    n = rows["n_test"].to_numpy(float)
    c = rows["coverage_95"].to_numpy(float)
    good = np.isfinite(c)
    return float(np.sum(c[good] * n[good]) / np.sum(n[good])) if good.any() else math.nan


def gaps_report(out: Path, *, time_budget: float | None = None) -> tuple[Path, str]:
    """Write ``out/report.md`` from ``out/trials.csv``; returns its path and the summary line."""
    trials = ResultFile(Path(out) / "trials.csv", COLUMNS, KEY).read()
    table = _table(trials)
    base = trials[(trials["rate"] == 0) & (trials["status"] == TrialStatus.OK)]
    lines, summary = [], [f"complete_coverage={fmt(_pooled(base), 3)}"]
    for r in sorted(table["rate"].unique()):
        t = table[table["rate"] == r]
        asked = trials[trials["rate"] == r]
        tag = f"gaps{round(r * 100)}"
        summary += [f"{tag}_median_forecast_ratio={fmt(float(np.median(t['forecast_ratio'])), 3)}",
                    f"{tag}_median_kernel_ratio={fmt(float(np.median(t['kernel_ratio'])), 3)}",
                    f"{tag}_coverage={fmt(_pooled(t), 3)}",
                    f"{tag}_forecasts={int(t['forecast_ratio'].notna().sum())}/{len(asked)}"]
        lines.append([f"{r:.0%}", len(t), fmt(float(np.median(t["forecast_ratio"])), 3),
                      fmt(float(np.quantile(t["forecast_ratio"], 0.9)), 3),
                      fmt(float(np.median(t["kernel_ratio"])), 3), fmt(_pooled(t), 3)])
    per = [[s, int(r["n_train"]), f"{r['rate']:.0%}", int(r["removal_seed"]), fmt(r["forecast_ratio"], 3),
            fmt(r["kernel_ratio"], 3), fmt(r["coverage_95"], 3), r["forecast"]]
           for _, r in table.sort_values(["series", "rate", "removal_seed"]).iterrows() for s in [r["series"]]]
    base_rows = [[r["series"], int(r["n_train"]), fmt(r["forecast_test_rmse"]), fmt(r["test_rmse"]),
                  fmt(r["coverage_95"], 3), r["forecast"]] for _, r in base.sort_values("series").iterrows()]
    failed = trials[trials["status"] != TrialStatus.OK]
    ran = Path(out) / "commit.txt"
    commit = ran.read_text().strip() if ran.is_file() else "unknown"
    short = table[table["complete_n_train"] < LONG]
    for r in sorted(short["rate"].unique()):
        summary.append(f"gaps{round(r * 100)}_median_forecast_ratio_under{LONG}="
                       f"{fmt(float(np.median(short[short['rate'] == r]['forecast_ratio'])), 3)}")
    text = "\n".join([
        "# Gaps kept: test RMSE with training points removed, over the complete series'", "",
        f"Trials run at commit {commit}; command "
        "`python -m bench gaps " + (" ".join(sys.argv[2:]) if sys.argv[1:2] == ["gaps"] else
                                    f"--time-budget {fmt(time_budget)} --seeds 3 --workers 2 --out {out}") + "`.", "",
        f"Searches: the quick preset at {fmt(time_budget) if time_budget else '?'} s, one worker, search seed 0; "
        "removal seeds 0-2. Ratio = test RMSE of the gapped series' run / the complete series' run (same test "
        "part). Coverage: the kernel's calibrated 95 % interval, pooled over test points.", "",
        md_table(["removed", "trials", "median forecast ratio", "p90 forecast ratio", "median kernel ratio",
                  "coverage"], lines), "",
        f"On the {short['series'].nunique()} series of fewer than {LONG} training points alone (at 20 s the longer "
        "ones return an exponential-smoothing form nearly every time, complete or not): median forecast ratio "
        + ", ".join(f"{fmt(float(np.median(short[short['rate'] == r]['forecast_ratio'])), 3)} at {r:.0%} removed"
                    for r in sorted(short["rate"].unique())) + ".", "",
        f"Complete series' pooled coverage: {fmt(_pooled(base), 3)}. Failed trials: {len(failed)}"
        + "".join(f"; {r['series']} {r['rate']} {r['removal_seed']}: {r['reason']}" for _, r in failed.iterrows()),
        "", "## Complete series", "",
        md_table(["series", "training points", "forecast RMSE", "kernel RMSE", "coverage", "forecast"], base_rows),
        "", "## Every gapped trial", "",
        md_table(["series", "training points", "removed", "seed", "forecast ratio", "kernel ratio", "coverage",
                  "forecast"], per), "",
        "Summary: " + " ".join(summary), ""])
    path = Path(out) / "report.md"
    path.write_text(text, encoding="utf-8")
    return path, " ".join(summary)


def main_gaps(a: Any) -> int:
    """``python -m bench gaps``: run what is missing, write the report, print the summary."""
    path, summary = gaps_study(a.out, series=a.series.split(",") if a.series else DEFAULT_SERIES, seeds=a.seeds,
                               time_budget=a.time_budget, workers=a.workers,
                               log=lambda line: print(line, file=sys.stderr, flush=True))
    print(summary)
    print(f"wrote {path}")
    return 0
