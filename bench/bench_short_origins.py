"""Would more earlier origins weigh the kernel better on short series?

On a series of at most 100 training points a search weighs its kernel, AutoETS and AutoTheta by
their squared errors summed over four earlier origins (0.6, 0.7, 0.8 and 0.9 of the training
range, each forecasting the next tenth: 3-10 points each), with the kernel's weight held at one half
(``combine_short``, :mod:`evocov_core.forecast.combination`), because four such errors could not tell a kernel
that extrapolates well from one that leaves the data. This script asks whether more origins, each
still forecasting the next tenth, tell them apart better, post hoc on ``bench accuracy`` folders:
for each trial on a short series the returned kernel is refitted at each origin exactly as the
search refits it there (:func:`~evocov_core.search.validate.origin_scores` with the model choice's
refit settings and the search's seeds; at the presets' four origins this reproduces the recorded
errors), AutoETS and AutoTheta are fitted on the same points as beside the search
(:func:`~evocov_core.forecast.beside.origin_datasets`), and the forecast of the test part is weighed
as the product weighs it, held and not. The kernel keeps its recorded guard. Nothing here sees the
test part but the scores.

Usage (from the repository root; about a minute on two cores)::

    python -m bench.bench_short_origins --folder bench/results/corpus/quick-41-weights \\
        --folder bench/results/corpus/quick-43-seed1 --data-dir bench/corpus/series --workers 2 --name corpus

Writes ``bench/results/bench_short_origins__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from bench._common import limit_threads, paired_rules_table, write_report
from bench.bench_choice import add_folder_study_args, run_folder_study
from bench.bench_classical_members import capped, sse, weighed
from bench.common import load_series
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import ORIGIN_TIME_LIMIT, origin_datasets
from evocov_core.forecast.classical import classical_forecasts_many
from evocov_core.forecast.combination import KERNEL, SHORT_KERNEL_WEIGHT
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.stages import head_stage
from evocov_core.search.validate import DEFAULT_ORIGINS, origin_scores, origin_windows

MEMBERS = ("AutoETS", "AutoTheta")
#: Origin sets, as shares of the training range; each origin forecasts the next tenth of it.
ORIGIN_SETS = {
    "4 origins (0.6-0.9, the presets)": DEFAULT_ORIGINS,
    "6 origins (0.4-0.9)": (0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    "9 origins (0.5-0.9, every 0.05)": (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9),
    "2 origins (0.8, 0.9)": (0.8, 0.9),
}
PRODUCT = f"{next(iter(ORIGIN_SETS))}, held"
#: Series of at most this many training points (the presets' ``combine_short``).
MAX_TRAIN = 100


def _kernel_errors(data: FitData, fit, refit, seed: int, origins) -> float:
    """The kernel's squared errors summed over ``origins`` (original units), refitted at each as the search
    refits it (+inf where a forecast failed)."""
    scores = origin_scores(data, fit, origins=origins, refit=refit, seed=(seed, 7927))
    if not np.all(np.isfinite(scores.mean)):
        return math.inf
    return sse(scores.window_means(data), _targets(data, origin_windows(data, origins)))


def _targets(data: FitData, windows) -> list[np.ndarray]:
    return [data.y[t] * data.y_std + data.y_mean for _, _, t in windows]


def series_rows(job: tuple) -> list[dict]:
    data_dir, config, series, trials, ref = job
    ds = load_series(data_dir, series)
    data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
    refit = head_stage(data, config.optim)[1]
    y = np.asarray(ds.y_test, dtype=np.float64)
    # The members' forecasts of the test part and at every origin of every set, in one child process.
    windows = {name: origin_windows(data, origins) for name, origins in ORIGIN_SETS.items()}
    full, cuts = None, {}
    for name, w in windows.items():
        full, cuts[name] = origin_datasets(ds, data, w)
    out = classical_forecasts_many([full, *(c for name in windows for c in cuts[name])],
                                   season_lengths=infer_seasons(ds).lengths or (1,), time_limit=ORIGIN_TIME_LIMIT,
                                   models=MEMBERS)
    test = {m: (f.mean if (f := out[0].get(m)) is not None and f.ok else None) for m in MEMBERS}
    member, at = {}, 1
    for name, w in windows.items():
        part = out[at:at + len(w)]
        at += len(w)
        member[name] = {m: sse([f.mean if (f := c.get(m)) is not None and f.ok else None for c in part],
                               _targets(data, w)) for m in MEMBERS}
    rows = []
    for t in trials:
        kf = load_kernel_file(Path(t["folder"]) / str(t["kernel_file"]))
        c = kf.combination
        if kf.normalisation is not None and kf.normalisation != ds.norm:
            raise SystemExit(f"{series}: the kernel file's units are not the data's")
        fit = kf.to_fit(ds.n_train)
        kmean = np.asarray(kf.model(fallback_norm=ds.norm)
                           .predict_mean(ds.X_train, ds.y_train, ds.X_test), dtype=np.float64)
        values: dict[str, float] = {"kernel": rmse(y, kmean)}
        check = math.nan
        for name, origins in ORIGIN_SETS.items():
            ksse = _kernel_errors(data, fit, refit, int(t["seed"]), origins)
            if origins == DEFAULT_ORIGINS and c.origins:
                recorded = dict(c.origin_sse)
                mine = {KERNEL: ksse, **member[name]}
                check = max((abs(mine[m] / recorded[m] - 1.0) for m in mine
                             if math.isfinite(recorded.get(m, math.nan)) and recorded[m] > 0), default=math.nan)
            if c.guard or not c.origins:
                ksse = math.inf  # left out by the guard, or no origins made: as the search did
            members = [(ksse, kmean), *((member[name][m], test[m]) for m in MEMBERS)]
            values[f"{name}, held"] = rmse(y, capped(members, SHORT_KERNEL_WEIGHT))
            values[f"{name}, not held"] = rmse(y, weighed(members))
        values["mean(ET)"] = (rmse(y, np.mean([test[m] for m in MEMBERS], axis=0))
                              if all(test[m] is not None for m in MEMBERS) else math.nan)
        recorded_forecast = float(t["forecast_test_rmse"])
        rows += [{"series": series, "seed": int(t["seed"]), "n_train": ds.n_train, "rule": r, "rmse": v,
                  "ratio": v / ref, "check_sse": check,
                  "check_unheld": values[f"{next(iter(ORIGIN_SETS))}, not held"] / recorded_forecast - 1.0}
                 for r, v in values.items()]
    print(series, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_short_origins", "a bench accuracy folder made before the hold (the kernel "
                                                     "files' weights unheld)")
    ap.add_argument("--max-train", type=int, default=MAX_TRAIN, help=f"at most this many training points "
                                                                     f"(default {MAX_TRAIN})")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, df, name = run_folder_study(args, "bench_short_origins", series_rows,
                                                 keep=lambda t: t[t.n_train.astype(int) <= args.max_train])
    names = sorted(trials.series.unique())
    table, lines = paired_rules_table(df, PRODUCT, list(df.rule.unique()), "product")
    kernel_check = float(df.check_sse.abs().max())
    unheld_check = float(df.check_unheld.abs().max())
    write_report(f"bench_short_origins__{name}", "More origins to weigh the kernel on short series", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}: {len(names)} series of at "
        f"most {args.max_train} training points, {len(trials)} trials. The kernel's, AutoETS's and AutoTheta's "
        f"errors at the presets' four origins recomputed against the recorded ones: largest relative difference "
        f"{kernel_check:.2g}; the unheld forecast at those origins against the recorded `forecast_test_rmse`: "
        f"{unheld_check:.2g}. "
        "Ratios: test RMSE over AutoETS's on the same split; paired against the product (four origins, held), "
        "the geometric mean over series of each series' mean log ratio over its seeds.",
        table,
        "```\n" + "\n".join(lines) + "\n```"], threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
