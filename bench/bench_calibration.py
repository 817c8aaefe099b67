"""Are the 95 % intervals of a returned kernel 95 % intervals? And which spread correction makes them so?

Conclusion first: see ``bench/results/bench_calibration.md`` (its summary lines) and ``docs/studies.md``.

A kernel's predictive spread comes from hyperparameters fitted to the whole training range,
the same points its likelihood has already explained; beyond them it is too confident (the
development corpus: 78 % of test points inside the 95 % interval of the kernel a ``quick``
search returns, ``bench/results/bench_choice__quick-before.md``). This script scores, on the
kernel each trial of a ``bench accuracy`` folder returned (its kernel file; no search is run):

``raw``
    the GP's interval;
``tail-q`` / ``tail-rms``
    the spread multiplied by a factor learned from one out-of-sample forecast: the kernel refitted
    on the first 90 % of the training range (one L-BFGS-B run from its values, as the model
    choice does) forecasts the last 10 %; ``q``: the 95 % quantile of the standardised errors
    ``|z|`` over 1.96 (:func:`evocov_core.search.validate.spread_scale`), ``rms``: ``sqrt(mean z²)``
    (:func:`evocov_core.fitting.calibration.rms_scale`); both never below 1;
``origins-q`` / ``origins-rms``
    the same factors from four such forecasts, from 60, 70, 80 and 90 % of the range
    (:func:`evocov_core.search.validate.origin_scores` with a refit), errors pooled.

Per rule: coverage of the 95 % interval on the test part (pooled over every test point, and
the share of trials whose coverage is at least 90 %), the geometric mean of the CRPS ratio to
``raw`` and of the interval width ratio to ``raw``. The test part is never used to learn a factor.

Usage (from the repository root)::

    python -m bench.bench_calibration --folder bench/results/corpus/quick-before --data-dir bench/corpus/series
    python -m bench.bench_calibration --folder bench/results/accuracy/quick-reseed

Writes ``bench/results/bench_calibration__<folder name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, md_table, write_report
from bench.accuracy import read_trials
from bench.bench_choice import folder_setup, predictive_on_test, trial_data
from bench.common import TrialStatus, geomean
from evocov_core.fitting.calibration import rms_scale
from evocov_core.fitting.metrics import FitData, crps_normal
from evocov_core.fitting.optimize import FitResult
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.stages import head_stage
from evocov_core.search.validate import origin_scores, spread_scale

RULES = ("raw", "tail-q", "tail-rms", "origins-q", "origins-rms")


def test_quality(data: FitData, fit: FitResult, scale: float) -> dict[str, float]:
    """Points inside, points, mean CRPS and mean interval width on the test part (original units)."""
    y, mu, sd = predictive_on_test(data, fit, scale)
    inside = (y >= mu - 1.96 * sd) & (y <= mu + 1.96 * sd)
    return {"inside": float(inside.sum()), "points": float(y.size), "crps": crps_normal(y, mu, sd),
            "width": float(np.mean(2 * 1.96 * sd))}


def trial_rows(data: FitData, fit: FitResult, refit, seed: int) -> dict[str, dict[str, float]]:
    tail = origin_scores(data, fit, origins=(1.0 - data.split_fraction,), refit=refit, seed=(seed, 3))
    many = origin_scores(data, fit, refit=refit, seed=(seed, 4))
    scales = {"raw": 1.0, "tail-q": spread_scale(tail.z, min_points=5), "tail-rms": rms_scale(tail.z),
              "origins-q": spread_scale(many.z), "origins-rms": rms_scale(many.z)}
    return {rule: {"scale": s, **test_quality(data, fit, s)} for rule, s in scales.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder (its kernels/)")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    args = ap.parse_args()
    threads = limit_threads()
    t0 = time.perf_counter()
    data_dir, config = folder_setup(args.folder, args.data_dir)
    trials = read_trials(args.folder)
    trials = trials[(trials.variant == "full") & (trials.status == TrialStatus.OK)]
    rows = []
    for t in trials.itertuples():
        data = trial_data(data_dir, config, t.series)
        fit = load_kernel_file(args.folder / str(t.kernel_file)).to_fit(data.n)
        refit = head_stage(data, config.optim)[1]
        for rule, q in trial_rows(data, fit, refit, int(t.seed)).items():
            rows.append({"series": t.series, "seed": int(t.seed), "rule": rule, **q})
    df = pd.DataFrame(rows)
    out_csv = RESULTS_DIR / f"bench_calibration__{args.folder.name}.csv"
    df.to_csv(out_csv, index=False)
    raw = df[df.rule == "raw"].set_index(["series", "seed"])
    table, lines = [], []
    for rule in RULES:
        d = df[df.rule == rule].set_index(["series", "seed"])
        pooled = d.inside.sum() / d.points.sum()
        per = d.inside / d.points
        crps = (d.crps / raw.crps.reindex(d.index)).replace([np.inf, -np.inf], np.nan).dropna()
        width = (d.width / raw.width.reindex(d.index)).replace([np.inf, -np.inf], np.nan).dropna()
        table.append([rule, f"{pooled:.3f}", f"{per.mean():.3f}", f"{(per >= 0.9).mean():.2f}",
                      f"{geomean(crps):.3f}", f"{geomean(width):.3f}", f"{d.scale.median():.2f}"])
        lines.append(f"rule={rule} coverage_pooled={pooled:.4f} coverage_mean={per.mean():.4f} "
                     f"trials_ge_90={(per >= 0.9).mean():.3f} crps_vs_raw={geomean(crps):.4f} "
                     f"width_vs_raw={geomean(width):.4f}")
    header = ["rule", "coverage (pooled)", "coverage (mean of trials)", "trials ≥ 90 %", "CRPS / raw",
              "width / raw", "median factor"]
    sections = [f"Folder `{args.folder}`, data `{data_dir}`, {len(raw)} trials, {time.perf_counter() - t0:.0f} s.",
                md_table(header, table), "```", *lines, "```"]
    path = write_report(f"bench_calibration__{args.folder.name}", "Calibrating the predictive spread", sections,
                        threads)
    print("\n".join(lines))
    print(f"wrote {path} and {out_csv}")


if __name__ == "__main__":
    main()
