"""Weigh the returned kernel's forecast against classical ones instead of choosing one average; guard it.

Post hoc, on the kernels budgeted searches returned (``bench accuracy``'s ``kernels/``). Until
1bf900b a search's forecast was the kernel's own or one of its equal-weight averages with AutoETS
and AutoTheta, whichever had the lowest squared error summed over four earlier origins
(``bench/bench_combine.py``'s ``val-best-gp``). Choosing one of four is a hard decision made on a
handful of points; the forecasting literature weighs instead (Bates & Granger 1969: weights
proportional to the inverse of each forecast's error), and a kernel that explodes past the training
range (TSDL's Wages, 56 × the best published in one run of `quick-40-origins`) was taken whenever its
origins favoured it. This script measures, trial by trial:

* ``selected``: the lowest-error equal-weight average with the kernel, the rule of its day, on the
  same refits as the others (its own refits, not the search's: the recorded forecast is
  ``recorded``);
* ``inverse^p <members>``: each member (the kernel, AutoETS, AutoTheta, and AutoARIMA with ``kETA``)
  weighted by its summed squared error over the origins to the power ``-p`` (p = 0: equal weights);
* ``+guard``: the same, with the kernel left out (its weight 0, the others renormalised) wherever its
  forecast of the test part lies more than one half-width outside the union of AutoETS's and
  AutoTheta's 95 % intervals at some step (:func:`evocov_core.forecast.beside.guard_reason`);
* ``product``: what a search returns since 1bf900b (:func:`evocov_core.forecast.combination.weigh_members`
  with the preset's power and the guard; members under 1 % dropped), computed by the package itself.

Each origin (60, 70, 80, 90 % of the training x-range, forecasting the next tenth) refits the kernel
on the points before it (one L-BFGS-B run of the preset's optimiser from its full-data values) and
fits the classical models on the same points (``bench/bench_combine.py``'s ``origin_sets``). Nothing
here sees the test part but the scores.

Usage (from the repository root)::

    python -m bench.bench_combine_weights --folder bench/results/corpus/quick-39-combine \\
        --rerun bench/results/corpus/quick-40-origins --workers 2 --name corpus-quick-40
    python -m bench.bench_combine_weights --folder bench/results/accuracy/quick-39-combine \\
        --rerun bench/results/accuracy/quick-40-origins --data-dir ../shared/data/tsdl --workers 2 \\
        --name tsdl-quick-40

``--rerun``: a folder whose trials replace the first folder's (a change rerun on part of a set, as
``bench/rerun_figures.py`` reads them). A ``bench long`` folder (whose searches record no combined
forecast: ``recorded`` is the kernel's) takes ``--models MSTL,AutoETS --members MSTL,AutoETS``.
Writes ``bench/results/bench_combine_weights__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, write_report
from bench.accuracy import read_trials
from bench.bench_choice import folder_setup, is_long, long_setup, reference, trial_data
from bench.bench_combine import kernel_mean, origin_sets
from bench.common import TrialStatus, geomean, load_series, md_table
from bench.long import load_long
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import rmse
from evocov_core.forecast.classical import ClassicalForecast, classical_forecasts
from evocov_core.forecast.combination import (
    KERNEL,
    POWER,
    SHORT_KERNEL_WEIGHT,
    guard_reason,
    inverse_error_weights,
    weigh_members,
)
from evocov_core.present.glance import kernel_weight
from evocov_core.runs.kernel_file import load_kernel_file

#: The classical models fitted at every origin, unless ``--models`` says otherwise.
MODELS = ("AutoETS", "AutoTheta", "AutoARIMA")
#: The product's members beside the kernel (the presets' ``combine``), unless ``--members`` says otherwise.
PRODUCT_MODELS = ("AutoETS", "AutoTheta")
POWERS = (0.0, 1.0, 1.5, 2.0, 3.0, 4.0)
SHORT = {"AutoETS": "E", "AutoTheta": "T", "AutoARIMA": "A", "MSTL": "M", "SeasonalNaive": "N"}


def member_sets(models: tuple[str, ...], members: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Rule label -> members: the kernel with the product's members, and with every model fitted."""
    out = {}
    for ms in (members, models):
        out["k" + "".join(SHORT.get(m, m) for m in ms)] = (KERNEL, *ms)
    return out


def _forecasts(ds: Dataset, fit, config, norm, seed: tuple[int, ...] | None, models: tuple[str, ...]
               ) -> tuple[dict[str, np.ndarray], dict[str, ClassicalForecast]]:
    """The kernel's point forecast of ``ds``'s test part (``bench_combine.kernel_mean``: refitted on its
    training part from its values when ``seed`` is given) and every classical model's forecast, original
    units."""
    mean = kernel_mean(ds, fit, config, norm, seed)
    means = {} if mean is None else {KERNEL: mean}
    classical = {f.name: f for f in classical_forecasts(ds, models=models).forecasts if f.ok}
    means.update({name: np.asarray(f.mean, dtype=np.float64) for name, f in classical.items()})
    return means, classical


def _sse(origins: list[tuple[dict[str, np.ndarray], np.ndarray]], name: str) -> float:
    total = 0.0
    for means, y in origins:
        f = means.get(name)
        total += float(np.sum((f - y) ** 2)) if f is not None and np.all(np.isfinite(f)) else math.inf
    return total


def trial_rows(job: tuple) -> list[dict]:
    """Rows (series, seed, rule, rmse) of one trial."""
    series, seed, recorded, forecast, kernel_file, data_dir, config, models, members, long = job
    # A bench long folder's series are read as its searches read them; an accuracy folder's with their split.
    ds = load_long(data_dir / f"{series}.csv") if long else load_series(data_dir, series)
    fit = load_kernel_file(kernel_file).to_fit(trial_data(data_dir, config, series).n)
    full, classical = _forecasts(ds, fit, config, None, None, models)
    origins = []
    for i, cut in enumerate(origin_sets(ds)):
        means, _ = _forecasts(cut, fit, config, ds.norm, (seed, i), models)
        origins.append((means, cut.y[~cut.train]))
    y = ds.y[~ds.train]
    rows = []

    def add(rule: str, mean: np.ndarray | None, **extra) -> None:
        value = rmse(y, mean) if mean is not None and np.all(np.isfinite(mean)) else math.nan
        rows.append({"series": series, "seed": seed, "rule": rule, "rmse": value, **extra})

    rows.append({"series": series, "seed": seed, "rule": "recorded", "rmse": forecast})
    rows.append({"series": series, "seed": seed, "rule": "kernel (recorded)", "rmse": recorded})
    if KERNEL not in full or not all(m in full for m in members):
        return rows
    why = guard_reason(full[KERNEL], [classical[m] for m in members])
    sse = {name: _sse(origins, name) for name in (KERNEL, *models)}
    # The rule of its day: the equal-weight average (with the kernel) of lowest summed error, fewer members on ties.
    averages = [(KERNEL,), *((KERNEL, m) for m in members), *([(KERNEL, *members)] if len(members) > 1 else [])]
    avg_sse = [sum(float(np.sum((np.mean([m[p] for p in a], axis=0) - t) ** 2)) if all(p in m for p in a)
                   else math.inf for m, t in origins) for a in averages]
    chosen = averages[min(range(len(averages)), key=lambda i: (avg_sse[i], i))]
    add("selected", np.mean([full[p] for p in chosen], axis=0), members=" + ".join(chosen))
    add("selected +guard", np.mean([full[p] for p in (members if why else chosen)], axis=0))
    for label, group in member_sets(models, members).items():
        if not all(m in full for m in group):
            continue
        for p in POWERS:
            for guarded in (False, True):
                errors = [math.inf if (guarded and why and m == KERNEL) else sse[m] for m in group]
                if not np.isfinite(errors).any():
                    continue
                w = inverse_error_weights(errors, p)
                add(f"inverse^{p:g} {label}" + (" +guard" if guarded else ""),
                    np.einsum("i,ij->j", w, np.array([full[m] for m in group])))
    # The product's rule, by the package.
    kernel_o = [m.get(KERNEL) for m, _ in origins]
    classical_o = [{k: v for k, v in m.items() if k != KERNEL} for m, _ in origins]
    # "product held": the kernel held at SHORT_KERNEL_WEIGHT on short series (the presets' combine_short);
    # "product": never held. Both on the same refits, so the pair isolates the hold.
    short = getattr(config, "combine_short", 0)
    for rule, cap in (("product", 1.0), ("product held", SHORT_KERNEL_WEIGHT if ds.n_train <= short else 1.0)):
        c = weigh_members(kernel_o, classical_o, [t for _, t in origins], members, power=POWER,
                          exclude=(KERNEL,) if why else (), guard=why, max_kernel_weight=cap)
        add(rule, c.mean(full[KERNEL], full), members=c.label, guard=bool(why), kernel_weight=kernel_weight(c),
            short=ds.n_train <= short)
    return rows


def _trials(folder: Path, rerun: Path | None) -> pd.DataFrame:
    def ok(f: Path) -> pd.DataFrame:
        t = read_trials(f)
        t = t[(t.variant == "full") & (t.status == TrialStatus.OK)].copy()
        t["folder"] = str(f)
        return t.set_index(["series", "seed"])

    t = ok(folder)
    if rerun is not None:
        new = ok(rerun)
        t = pd.concat([t[~t.index.isin(new.index)], new])
    return t.sort_index().reset_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder (variant full)")
    ap.add_argument("--rerun", type=Path, default=None, help="a folder whose trials replace --folder's")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--name", default=None, help="the report's name after bench_combine_weights__")
    ap.add_argument("--workers", type=int, default=1, help="trials in parallel processes")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated classical models fitted")
    ap.add_argument("--members", default=",".join(PRODUCT_MODELS),
                    help="the product's classical members (and the guard's intervals), among --models")
    args = ap.parse_args()
    threads = limit_threads()
    models, members = tuple(args.models.split(",")), tuple(args.members.split(","))
    if not set(members) <= set(models):
        ap.error("--members must be among --models")
    long = is_long(args.folder)
    if long:  # a bench long folder: its series' CSVs and the settings its searches had; no forecast recorded
        config, trials = long_setup(args.folder)
        data_dir = args.folder / "data"
        trials = trials[trials.status == TrialStatus.OK].assign(folder=str(args.folder), forecast_test_rmse=math.nan)
    else:
        data_dir, config = folder_setup(args.rerun or args.folder, args.data_dir, "full")
        trials = _trials(args.folder, args.rerun)
    jobs = [(t.series, int(t.seed), float(t.test_rmse),
             float(t.test_rmse if long else t.forecast_test_rmse), Path(t.folder) / str(t.kernel_file), data_dir,
             config, models, members, long) for t in trials.itertuples()]
    df = pd.DataFrame([row for res in map_jobs(trial_rows, jobs, args.workers) for row in res])
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_combine_weights__{name}.csv", index=False)
    refs = reference(args.folder, data_dir, sorted(df.series.unique()))
    wide = df.pivot_table(index=["series", "seed"], columns="rule", values="rmse", aggfunc="first")
    table, lines = [], []
    for rule in wide.columns:
        r = (wide[rule] / refs.reindex(wide.index.get_level_values(0)).to_numpy()).dropna()
        cells = [rule, str(len(r)), f"{geomean(r):.3f}", f"{np.percentile(r, 90):.2f}", f"{r.max():.2f}",
                 f"{int((r > 3).sum())}", f"{geomean(r.groupby(level=0).median()):.3f}"]
        line = (f"rule={rule.replace(' ', '_')} single_run_geomean={geomean(r):.4f} "
                f"single_run_p90={np.percentile(r, 90):.3f} worst_single={r.max():.3f}")
        for base in ("recorded", "selected"):
            lr = np.log(wide[rule] / wide[base]).replace([np.inf, -np.inf], np.nan).dropna()
            se = lr.std(ddof=1) / math.sqrt(len(lr))
            cells += [f"{math.exp(lr.mean()):.3f} ({se:.3f})", f"{int((lr < -0.01).sum())}/{int((lr > 0.01).sum())}"]
            line += f" vs_{base}={math.exp(lr.mean()):.4f} se_log={se:.4f}"
        table.append(cells)
        lines.append(line)
    product = df[df.rule == "product"]
    guarded = int(product["guard"].astype(bool).sum()) if "guard" in product else 0
    summary = md_table(["rule", "trials", "single runs: geomean", "p90", "worst", "over 3×", "median of seeds",
                        "paired / recorded (SE)", "lower / higher", "paired / selected (SE)", "lower / higher"],
                       table, "lrrrrrrrrrr")
    write_report(f"bench_combine_weights__{name}", "Weighing the kernel's forecast against classical ones", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`" + (f", its trials replaced by `{args.rerun}`'s where rerun" if args.rerun else "")
        + f", variant `full`, {len(jobs)} trials. Ratios are test RMSE over the series' reference RMSE (the best "
        "published on TSDL, AutoETS on the same split on the development corpus); `median of seeds` is the "
        "geometric mean over the series of the median over their seeds; paired columns are the geometric mean, "
        "trial by trial, of the rule's test RMSE over the recorded forecast's and over `selected`'s, with the "
        f"standard error of the mean log ratio. The guard left the kernel out in {guarded} of {len(product)} "
        "trials.",
        summary, "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()
