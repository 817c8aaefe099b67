"""Would the returned kernel's forecast, averaged with classical forecasts, be better than either?

Post hoc, on the kernels budgeted searches returned (``bench accuracy``'s ``kernels/``). Issue 27
asks for a single run that can be trusted; the studies of the model choice found the better
forecasts among a search's candidates but nothing on the training range that tells which
(``docs/studies.md``). Forecast combination is the forecasting literature's answer to that (the
M competitions: an average of unlike methods is rarely the worst and often the best). Here the
returned kernel's predictive mean on the test inputs is averaged, with equal weights, with the
point forecasts of statsforecast's AutoETS and AutoTheta fitted on the same training part
(:func:`evocov_core.forecast.classical.classical_forecasts`, the dashboard's and the benchmark's settings),
and the test RMSE of each average is compared, trial by trial, with the kernel's own.

The GP's mean is recomputed from the kernel file; its test RMSE is checked against the one the
trial recorded. The equal-weight rules fit nothing. With ``--validate`` the weights are chosen
on the training range alone, from the forecasts of four earlier origins (60, 70, 80 and 90 % of
the training x-range, each forecasting the next 10 %, as the search's ``refit_origins`` choice
and the interval calibration do): at each origin the kernel is refitted on the points before it
(one L-BFGS-B run of the preset's optimiser from its full-data values, in the full training
part's units) and the classical models are fitted on the same points. ``val-best`` takes the
rule with the lowest squared error summed over the origins, ``val-best-gp`` the same among
the rules that contain the kernel's forecast, ``val-inverse`` weights the three
forecasts by the inverse of that error (Bates & Granger 1969).

``val-best-gp`` was what a budgeted search returned as its forecast from b43bd69 to 1bf900b, when
the weighted average of ``bench/bench_combine_weights.py`` replaced it (:mod:`evocov_core.forecast.combination`,
the presets' ``combine``), with two differences: the kernel's
origin forecasts are the interval calibration's refits (seeded by the search), and the classical
models at every origin get the seasons read from the whole training part. ``bench accuracy``
records that forecast (``forecast_test_rmse``); this script stays the way to study other rules on
committed runs.

Usage (from the repository root)::

    python -m bench.bench_combine --folder bench/results/corpus/quick-35-cpexp --variant cp-by-expansion \\
        --workers 2 --name corpus-quick-35-cpexp
    python -m bench.bench_combine --folder bench/results/accuracy/quick-37-5seeds --variant full \\
        --data-dir ../shared/data/tsdl --workers 2 --name tsdl-quick-37-5seeds

Writes ``bench/results/bench_combine__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, write_report
from bench.accuracy import read_trials
from bench.bench_choice import folder_setup, is_long, long_setup, reference, trial_data
from bench.common import TrialStatus, geomean, load_series, md_table
from bench.long import load_long
from evocov_core.data import Dataset
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import NUMERIC_ERRORS, Start, fit_kernel
from evocov_core.forecast.classical import classical_forecasts
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.validate import DEFAULT_ORIGINS

#: The classical forecasters averaged with the kernel's forecast unless ``--models`` says otherwise.
MODELS = ("AutoETS", "AutoTheta")
#: Short names in the rules' names.
SHORT = {"AutoETS": "ETS", "AutoTheta": "Theta", "AutoARIMA": "ARIMA", "SeasonalNaive": "SN"}


def make_rules(models: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Rule name -> the forecasts it averages with equal weights: the kernel, each model, the kernel
    with each, the kernel with all, all the models."""
    short = [SHORT.get(m, m) for m in models]
    rules = {"gp": ("gp",), **{m: (m,) for m in models}}
    rules.update({f"gp+{s}": ("gp", m) for s, m in zip(short, models, strict=True)})
    if len(models) > 1:
        rules["gp+" + "+".join(short)] = ("gp", *models)
        rules["+".join(short)] = tuple(models)
    return rules


def kernel_mean(ds: Dataset, fit, config, norm, seed: tuple[int, ...] | None) -> np.ndarray | None:
    """The kernel's point forecast of ``ds``'s test part (original units; None when it fails numerically):
    refitted on ``ds``'s training part from its values when ``seed`` is given, else with its values."""
    data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points, norm=norm)
    if seed is not None:
        try:
            refit = fit_kernel(fit.kernel, data, config.optim, np.random.default_rng(seed),
                               Start(tuple(fit.theta), fit.log_noise))
            if refit.ok:
                fit = refit
        except NUMERIC_ERRORS:
            pass  # forecast with the full-data values
    try:
        with np.errstate(all="ignore"):
            post = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise, data.X_test,
                             jitter=fit.jitter, mean_only=True)
    except NUMERIC_ERRORS:
        return None
    return post.mean * data.y_std + data.y_mean


def forecasts(ds: Dataset, fit, config, norm, seed: tuple[int, ...] | None,
              models: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Point forecasts of ``ds``'s test part (original units): the kernel's (:func:`kernel_mean`, key
    ``gp``) and each classical model's."""
    mean = kernel_mean(ds, fit, config, norm, seed)
    out = {} if mean is None else {"gp": mean}
    classical = classical_forecasts(ds, models=models)
    for name in models:
        f = classical.get(name)
        if f is not None and f.ok:
            out[name] = np.asarray(f.mean, dtype=np.float64)
    return out


def origin_sets(ds: Dataset) -> list[Dataset]:
    """The training part cut at each of :data:`DEFAULT_ORIGINS`: the points before the origin train,
    the next 10 % of the training x-range is the test part."""
    x, y = ds.x[ds.train], ds.y[ds.train]
    lo, span = float(x[:, 0].min()), float(np.ptp(x[:, 0]))
    out = []
    for o in DEFAULT_ORIGINS:
        head = x[:, 0] <= lo + o * span
        keep = head | (x[:, 0] <= lo + min(1.0, o + 0.1) * span)
        if head.sum() >= 8 and (keep & ~head).any():
            out.append(dataclasses.replace(ds, x=x[keep], y=y[keep], train=head[keep]))
    return out


def trial_rows(job: tuple) -> list[dict]:
    """Rows (series, seed, rule, rmse, recorded) of one trial."""
    series, seed, recorded, kernel_file, data_dir, config, validate, models, long = job
    # A bench long folder's series are read as its searches read them; an accuracy folder's with their
    # split and x kind (load_csv would infer other seasons for the classical models).
    ds = load_long(data_dir / f"{series}.csv") if long else load_series(data_dir, series)
    fit = load_kernel_file(kernel_file).to_fit(trial_data(data_dir, config, series).n)
    means = forecasts(ds, fit, config, None, None, models)
    y_test = ds.y[~ds.train]
    rules = {r: parts for r, parts in make_rules(models).items() if all(p in means for p in parts)}
    rows = []

    def add(rule: str, mean: np.ndarray) -> None:
        rows.append({"series": series, "seed": seed, "rule": rule, "rmse": rmse(y_test, mean), "recorded": recorded})

    for rule, parts in rules.items():
        add(rule, np.mean([means[p] for p in parts], axis=0))
    if validate and "gp" in means:
        sse = {rule: 0.0 for rule in rules}
        per_origin = {}  # "sse<i> <rule>": origin i's squared error, for rules studied after the run
        for i, ds_o in enumerate(origin_sets(ds)):
            m = forecasts(ds_o, fit, config, ds.norm, (seed, i), models)
            y_o = ds_o.y[~ds_o.train]
            for rule, parts in rules.items():
                e = (float(np.sum((np.mean([m[p] for p in parts], axis=0) - y_o) ** 2))
                     if all(p in m for p in parts) else math.inf)
                sse[rule] += e
                per_origin[f"sse{i} {rule}"] = e
        best = min(sse, key=lambda r: (sse[r], r))
        add("val-best", np.mean([means[p] for p in rules[best]], axis=0))
        rows[-1].update({"chosen": best, **{f"sse {r}": v for r, v in sse.items()}, **per_origin})
        best_gp = min((r for r in rules if "gp" in rules[r]), key=lambda r: (sse[r], r))
        add("val-best-gp", np.mean([means[p] for p in rules[best_gp]], axis=0))
        rows[-1]["chosen"] = best_gp
        single = [p for p in ("gp", *models) if p in rules]
        inv = np.array([1.0 / max(sse[p], 1e-300) if math.isfinite(sse[p]) else 0.0 for p in single])
        w = inv / inv.sum() if inv.sum() > 0 else np.full(len(single), 1.0 / len(single))
        add("val-inverse", np.einsum("i,ij->j", w, np.array([means[p] for p in single])))
        rows[-1]["chosen"] = " ".join(f"{p}:{v:.2f}" for p, v in zip(single, w, strict=True))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--variant", default="full", help="the variant whose trials are combined (default: full)")
    ap.add_argument("--name", default=None, help="the report's name after bench_combine__ (default: the folder's)")
    ap.add_argument("--workers", type=int, default=1, help="trials in parallel processes")
    ap.add_argument("--validate", action="store_true", help="add the rules whose weights four earlier origins choose")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated classical models (classical.MODELS)")
    args = ap.parse_args()
    threads = limit_threads()
    models = tuple(args.models.split(","))
    long = is_long(args.folder)
    if long:  # a bench long folder: its series' CSVs and the settings its searches had
        config, trials = long_setup(args.folder)
        data_dir, trials = args.folder / "data", trials[trials.status == TrialStatus.OK]
    else:
        data_dir, config = folder_setup(args.folder, args.data_dir, args.variant)
        trials = read_trials(args.folder)
        trials = trials[(trials.variant == args.variant) & (trials.status == TrialStatus.OK)]
    jobs = [(t.series, int(t.seed), float(t.test_rmse), args.folder / str(t.kernel_file), data_dir, config,
             args.validate, models, long)
            for t in trials.itertuples()]
    df = pd.DataFrame([row for res in map_jobs(trial_rows, jobs, args.workers) for row in res])
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_combine__{name}.csv", index=False)
    gp = df[df.rule == "gp"]
    mismatch = int((np.abs(np.log(gp.rmse / gp.recorded)) > 1e-3).sum())
    refs = reference(args.folder, data_dir, sorted(df.series.unique()))
    base = gp.set_index(["series", "seed"]).rmse
    table, lines = [], []
    for rule, d in df.groupby("rule", sort=False):
        d = d.set_index(["series", "seed"])
        lr = np.log(d.rmse / base.reindex(d.index)).replace([np.inf, -np.inf], np.nan).dropna()
        ratio = (d.rmse / refs.reindex(d.index.get_level_values(0)).to_numpy()).replace(
            [np.inf, -np.inf], np.nan).dropna()
        se = lr.std(ddof=1) / math.sqrt(len(lr))
        table.append([rule, str(len(ratio)), f"{geomean(ratio):.3f}", f"{np.percentile(ratio, 90):.2f}",
                      f"{ratio.max():.2f}", f"{int((ratio > 3).sum())}", f"{math.exp(lr.mean()):.3f}",
                      f"{se:.3f}", f"{int((lr < -0.01).sum())}/{int((lr > 0.01).sum())}"])
        lines.append(f"rule={rule} single_run_geomean={geomean(ratio):.4f} single_run_p90="
                     f"{np.percentile(ratio, 90):.3f} worst_single={ratio.max():.3f} paired={math.exp(lr.mean()):.4f} "
                     f"se_log={se:.4f}")
    summary = md_table(["rule", "trials", "single runs: geomean", "p90", "worst", "over 3×", "paired / gp",
                        "SE of the log", "lower / higher (> 1 %)"], table, "lrrrrrrrr")
    write_report(f"bench_combine__{name}", "The returned kernel's forecast averaged with classical forecasts", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, variant `{args.variant}`, {len(jobs)} trials; the recomputed GP test RMSE "
        f"differs from the recorded one by more than 0.1 % in {mismatch}. Ratios are test RMSE over the reference "
        "RMSE of the series (the best published on TSDL, AutoETS on the same split on the development corpus, the "
        "better of seasonal naive and MSTL on a `bench long` folder); "
        "`paired / gp` is the geometric mean, trial by trial, of the rule's test RMSE over the kernel's own, "
        "with the standard error of the mean log ratio.",
        summary, "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()
