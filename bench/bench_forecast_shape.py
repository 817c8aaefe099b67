"""Does the shape of a candidate's forecast tell, before the test part, that it will be wrong?

Post hoc, on the records of budgeted searches (``bench accuracy --records``). Issue 27 asks that
a kernel whose forecast leaves the data's behaviour (an accelerating curve from a linear trend,
a variance that collapses) not be returned on the strength of its training fit. A filter on the
forecast's shape could do that only if the shape predicted the error. For each trial's 20
lowest-BIC distinct kernels this script computes, over a horizon of 11 % of the training span
after its end (the test part's length at the benchmarks' split, without its values), from the
full-data fit:

``growth``
    the largest prior variance ``k(x*, x*)`` on the horizon over the largest on the training
    inputs (1 for a stationary kernel; polynomial or exponential terms grow);
``excursion``
    how far the predictive mean leaves the range of the training outputs, in their SDs;
``off_trend``
    the RMS distance of the predictive mean from the straight line fitted to the last fifth of
    the training range and extended, in SDs;
``bend``
    the largest second difference of the predictive mean on 30 horizon points, times 30²;
``spread_end``
    the predictive SD at the horizon's end (noise included), in SDs;
``q``
    the number of hyperparameters.

It reports each feature's Spearman correlation with the log test RMSE, over all candidates and
within trials (each value minus its trial's median, for the feature and the error alike: what
a choice among one search's candidates could use), and, for the returned kernel, the share of
its test MSE that is a level error (the squared mean error over the MSE) and its test RMSE with
the outputs centred on the mean of the last 10 % or 25 % of the training range instead of the
training mean (where a stationary part reverts to).

Usage (from the repository root)::

    python -m bench.bench_forecast_shape --folder bench/results/corpus/quick-35-cpexp --variant cp-by-expansion \\
        --data-dir bench/corpus/series --name corpus-quick-35-cpexp

Writes ``bench/results/bench_forecast_shape__<name>.md`` and ``…csv`` (one row per candidate).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, recorded_trials, write_report
from bench.bench_choice import as_fit, distinct_fits, folder_setup, reference, trial_data
from bench.common import md_table
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult
from evocov_core.language.evaluate import covariance_diag
from evocov_core.runs.kernel_file import load_kernel_file

FEATURES = ("growth", "excursion", "off_trend", "bend", "spread_end", "q")
#: The horizon after the training range, as a share of its span (the benchmarks' 10 % test part
#: of the whole series is 1/9 of the training span).
HORIZON = 1 / 9
#: Candidates per trial.
TOP = 20
#: Shares of the training range whose mean the returned kernel's outputs are re-centred on.
RECENTRE = (0.1, 0.25)


def shape(data: FitData, fit: FitResult, points: int = 30) -> dict[str, float] | None:
    """The features of the module docstring for one fit (None if its forecast fails)."""
    x, y = data.X[:, 0], data.y
    span = float(x.max() - x.min())
    h = span / max(len(x) - 1, 1)
    xs = np.linspace(x.max() + h, x.max() + HORIZON * span, points)[:, None]
    last = x >= x.max() - 0.2 * span
    line = np.polyfit(x[last], y[last], 1)
    theta = np.asarray(fit.theta)
    try:
        with np.errstate(all="ignore"):
            grow = float(np.max(covariance_diag(fit.kernel, xs, theta)) /
                         max(float(np.max(covariance_diag(fit.kernel, data.X, theta))), 1e-300))
            post = posterior(fit.kernel, data.inputs, y, theta, fit.log_noise, xs, jitter=fit.jitter)
    except NUMERIC_ERRORS:
        return None
    mu = post.mean
    if not np.all(np.isfinite(mu)):
        return None
    return {"growth": grow,
            "excursion": float(max(0.0, mu.max() - y.max(), y.min() - mu.min())),
            "off_trend": float(np.sqrt(np.mean((mu - np.polyval(line, xs[:, 0])) ** 2))),
            "bend": float(np.abs(np.diff(mu, 2)).max() * points ** 2),
            "spread_end": float(np.sqrt(post.var[-1] + fit.noise_variance)),
            "q": float(fit.q)}


def level_share(data: FitData, fit: FitResult) -> float:
    """The share of ``fit``'s test MSE that is its mean error squared (the level it misses)."""
    e = np.asarray(data.y_test, dtype=np.float64) - recentred_mean(data, fit, 0.0)
    return float(np.mean(e) ** 2 / np.mean(e ** 2))


def recentred_mean(data: FitData, fit: FitResult, share: float) -> np.ndarray:
    """``fit``'s predictive mean on the test inputs (original units) with the outputs centred on the
    mean of the last ``share`` of the training range instead of the training mean (0: as fitted),
    the values not refitted: where a stationary part of the kernel reverts to."""
    x = data.X[:, 0]
    centre = float(np.mean(data.y[x >= x.max() - share * (x.max() - x.min())])) if share > 0 else 0.0
    with np.errstate(all="ignore"):
        mu = posterior(fit.kernel, data.inputs, data.y - centre, np.asarray(fit.theta), fit.log_noise, data.X_test,
                       jitter=fit.jitter, mean_only=True).mean
    return (mu + centre) * data.y_std + data.y_mean


def trial_rows(job: tuple) -> list[dict]:
    """One row per candidate of a trial (``rank`` −1: the returned kernel)."""
    records, series, seed, kernel_file, data_dir, config = job
    data = trial_data(data_dir, config, series)
    fits = distinct_fits(pd.read_csv(records))
    returned = load_kernel_file(kernel_file).to_fit(data.n)
    rows = []
    for rank, fit in [(-1, returned), *((i, as_fit(fits.loc[i], data.n)) for i in range(min(TOP, len(fits))))]:
        feats = shape(data, fit)
        if feats is not None:
            extra = {}
            if rank < 0:
                extra = {"level_share": level_share(data, fit),
                         **{f"recentred_{share:g}": rmse(data.y_test, recentred_mean(data, fit, share))
                            for share in RECENTRE}}
            rows.append({"series": series, "seed": seed, "rank": rank, "test_rmse": fit.test_rmse, **feats, **extra})
    return rows


def paired_choice(df: pd.DataFrame, feature: str, k: int) -> tuple[str, str, str]:
    """Paired ratio (and its SE, and trials lower / higher) of choosing, among each trial's ``k``
    lowest-BIC candidates, the one with the smallest ``feature``, against the returned kernel."""
    logs = []
    for _, g in df.groupby(["series", "seed"]):
        returned = g[g["rank"] < 0].test_rmse
        top = g[(g["rank"] >= 0) & (g["rank"] < k)]
        if len(returned) and len(top):
            logs.append(math.log(top.test_rmse[top[feature].idxmin()] / returned.iloc[0]))
    lr = np.array([v for v in logs if math.isfinite(v)])
    return (f"{math.exp(lr.mean()):.3f}", f"{lr.std(ddof=1) / math.sqrt(len(lr)):.3f}",
            f"{int((lr < -1e-9).sum())}/{int((lr > 1e-9).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder made with --records")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--variant", default="full", help="the variant whose trials are read (default: full)")
    ap.add_argument("--name", default=None, help="the report's name after bench_forecast_shape__")
    ap.add_argument("--workers", type=int, default=1, help="trials in parallel processes")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the CSV an earlier run wrote")
    args = ap.parse_args()
    threads = limit_threads()
    data_dir, config = folder_setup(args.folder, args.data_dir, args.variant)
    name = args.name or args.folder.name
    out_csv = RESULTS_DIR / f"bench_forecast_shape__{name}.csv"
    if args.report_only:
        df = pd.read_csv(out_csv)
    else:
        jobs = [(records, t.series, int(t.seed), args.folder / str(t.kernel_file), data_dir, config)
                for records, t in recorded_trials(args.folder, args.variant)]
        df = pd.DataFrame([row for res in map_jobs(trial_rows, jobs, args.workers) for row in res])
        df.to_csv(out_csv, index=False)
    refs = reference(args.folder, data_dir, sorted(df.series.unique()))
    cands = df[df["rank"] >= 0].copy()
    cands["log_err"] = np.log(cands.test_rmse / refs.reindex(cands.series).to_numpy())
    trial = [cands.series, cands.seed]
    rows = []
    for f in FEATURES:
        within_err = cands.log_err - cands.groupby(trial).log_err.transform("median")
        within_f = cands[f] - cands.groupby(trial)[f].transform("median")
        rows.append([f, f"{cands[f].median():.3g}", f"{cands.log_err.corr(cands[f], method='spearman'):+.3f}",
                     f"{within_err.corr(within_f, method='spearman'):+.3f}"])
    choices = [[f"{feature}, the {k} lowest BIC", *paired_choice(df, feature, k)]
               for feature in ("off_trend", "spread_end") for k in (3, 5, 10)]
    ret = df[df["rank"] < 0]
    level = ret.level_share
    recentred = []
    for share in RECENTRE:
        lr = np.log(ret[f"recentred_{share:g}"] / ret.test_rmse).replace([np.inf, -np.inf], np.nan).dropna()
        recentred.append(f"the mean of the last {share:.0%}: paired {math.exp(lr.mean()):.3f} "
                         f"(SE {lr.std(ddof=1) / math.sqrt(len(lr)):.3f}, {int((lr < -1e-9).sum())} lower, "
                         f"{int((lr > 1e-9).sum())} higher)")
    worst = ret.assign(ratio=ret.test_rmse / refs.reindex(ret.series).to_numpy()).nlargest(10, "ratio")
    write_report(f"bench_forecast_shape__{name}", "The shape of a candidate's forecast against its error", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, variant `{args.variant}`: {len(ret)} trials, {len(cands)} candidates.",
        md_table(["feature", "median", "Spearman with log error: all candidates", "within trials"], rows, "lrrr"),
        "A choice by shape: of the K lowest-BIC candidates, the one with the smallest feature, paired trial by "
        "trial against the returned kernel (geometric mean of the RMSE ratios, standard error of the mean log, "
        "trials lower / higher):",
        md_table(["smallest", "paired", "SE", "lower / higher"], choices, "lrrr"),
        f"Returned kernels: the level error is {level.mean():.2f} of the test MSE on average (median "
        f"{level.median():.2f}); in the 10 worst trials (ratio to the reference "
        f"{worst.ratio.min():.2f}-{worst.ratio.max():.2f}) {worst.level_share.mean():.2f}. Re-centred on "
        + "; on ".join(recentred) + " (the returned kernel's values, not refitted).",
        "```\n" + "\n".join(f"feature={r[0]} spearman_all={r[2]} spearman_within={r[3]}" for r in rows)
        + f"\nlevel_share_mean={level.mean():.3f} level_share_worst10={worst.level_share.mean():.3f}\n```"], threads)


if __name__ == "__main__":
    main()
