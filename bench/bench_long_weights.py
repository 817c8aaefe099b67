"""The weight power of a long series' forecast combination, post hoc on a ``bench long`` folder.

A search on a long series with ``long_combine`` records, in its kernel file, each member's squared
error summed over the four origins (``combination.origin_sse``: the kernel's with its fitted values,
MSTL's and AutoETS's from the last ``LONG_POINTS`` points) and the weights they gave at the preset's
power 2. This script recomputes the forecast of the test part for other powers from those errors:
the kernel's mean from its kernel file, the classical members' from the same last ``LONG_POINTS``
training points the search gave them (``evocov_core.forecast.beside``), the guard as the search
applied it (recorded). Nothing is refitted but the classical models, once per series; the power-2
row is checked against the forecast RMSE each trial recorded.

A folder whose searches did not combine (before 0215392, e.g. ``long/standard-seed-order``) gets the
combination the presets make now, by the package's own ``ClassicalBeside`` on each returned kernel
(the kernels do not depend on it: ``long-dev/quick-42-combine``'s were ``quick-seed-order``'s,
paired 1.008); its ``recorded`` row is then the kernel's own.

Usage (from the repository root; the folder's ``data/`` is rebuilt from the installed packages)::

    python -m bench.bench_long_weights --folder bench/results/long-dev/quick-42-combine --name long-dev
    python -m bench.bench_long_weights --folder bench/results/long/quick-42-combine --name long
    python -m bench.bench_long_weights --folder bench/results/long/standard-seed-order --name long-standard

Writes ``bench/results/bench_long_weights__<name>.md`` and ``…csv``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, write_report
from bench.bench_choice import long_setup
from bench.bench_long_classical import last_points
from bench.common import geomean, md_table
from bench.long import load_long, write_series
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import rmse
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import LONG_POINTS, ClassicalBeside
from evocov_core.forecast.classical import classical_forecasts
from evocov_core.forecast.combination import KERNEL, MIN_WEIGHT, Combination, inverse_error_weights
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search import SearchConfig, preset, search_data

POWERS = (0.0, 1.0, 2.0, 3.0, 4.0, 8.0)


def weighted(errors: dict[str, float], means: dict[str, np.ndarray], power: float, guarded: bool) -> np.ndarray:
    """The combined forecast at ``power`` (the product's rule: members under MIN_WEIGHT dropped)."""
    names = [n for n in errors if n in means and not (guarded and n == KERNEL)]
    w = inverse_error_weights([errors[n] for n in names], power)
    w = np.where(w < MIN_WEIGHT, 0.0, w)
    w = w / w.sum()
    return np.einsum("i,ij->j", w, np.array([means[n] for n in names]))


def _product_combination(ds: Dataset, fit: FitResult, kernel_mean: np.ndarray, config: SearchConfig) -> Combination:
    """What a search whose returned kernel is ``fit`` makes of it since the presets combine long series: the
    package's own :class:`~evocov_core.forecast.beside.ClassicalBeside`, with the presets' members and power."""
    members = preset("quick").long_combine
    beside = ClassicalBeside(ds, search_data(ds, config), members, horizon=ds.n_test)
    return beside.choose(None, fit=fit, kernel_mean=kernel_mean).combination


def finished_trials(folder: Path) -> tuple[pd.DataFrame, SearchConfig]:
    """A ``bench long`` folder's finished trials (a rerun counted once), its series rebuilt into its
    ``data/``, and the searches' settings."""
    trials = pd.read_csv(folder / "trials.csv").drop_duplicates(["series", "seed"], keep="last")
    trials = trials[trials.status == "ok"]
    write_series(folder / "data", list(trials.series.unique()))
    return trials, long_setup(folder)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench long folder")
    ap.add_argument("--name", default=None, help="the report's name after bench_long_weights__")
    args = ap.parse_args()
    threads = limit_threads()
    trials, config = finished_trials(args.folder)
    rows = []
    for series, group in trials.groupby("series", sort=False):
        ds = load_long(args.folder / "data" / f"{series}.csv")
        seasons = infer_seasons(ds).lengths or (1,)
        fc = classical_forecasts(last_points(ds, LONG_POINTS), season_lengths=seasons, models=("MSTL", "AutoETS"))
        classical = {f.name: np.asarray(f.mean, dtype=np.float64) for f in fc.forecasts if f.ok}
        y = ds.y[~ds.train]
        for t in group.itertuples():
            kf = load_kernel_file(args.folder / str(t.kernel_file))
            fit = kf.to_fit(kf.approximation.n_used if kf.approximation is not None else ds.n_train)
            model = FittedModel.from_fit(fit, ds.norm, ds.n_train)
            means = {**classical, KERNEL: model.predict_mean(ds.X_train, ds.y_train, ds.X_test)}
            c = kf.combination
            if c.origins == 0:  # a search made without long_combine: the combination the presets make now
                c = _product_combination(ds, fit, means[KERNEL], config)
            errors = {k: v for k, v in c.origin_sse if math.isfinite(v)}
            row = {"series": series, "seed": int(t.seed), "best_baseline": float(t.best_baseline_rmse),
                   "recorded": float(t.test_rmse), "kernel": rmse(y, means[KERNEL]), "guard": bool(c.guard)}
            for p in POWERS:
                row[f"power {p:g}"] = rmse(y, weighted(errors, means, p, bool(c.guard))) if errors else row["kernel"]
            rows.append(row)
    df = pd.DataFrame(rows)
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_long_weights__{name}.csv", index=False)
    table, lines = [], []
    for col in ["kernel", *(f"power {p:g}" for p in POWERS), "recorded"]:
        r = df[col] / df.best_baseline
        med = r.groupby(df.series).median()
        lr = np.log(df[col] / df.kernel)
        se = lr.std(ddof=1) / math.sqrt(len(lr))
        table.append([col, f"{geomean(med):.3f}", f"{med.max():.3f}", f"{int((med > 1).sum())}",
                      f"{r.max():.3f}", f"{math.exp(lr.mean()):.3f} ({se:.3f})"])
        lines.append(f"rule={col.replace(' ', '_')} geomean_of_medians={geomean(med):.4f} worst_median={med.max():.3f} "
                     f"worst_single={r.max():.3f} paired_vs_kernel={math.exp(lr.mean()):.4f} se_log={se:.4f}")
    check = float(np.max(np.abs(df["power 2"] / df["recorded"] - 1.0)))
    write_report(f"bench_long_weights__{name}", "The weight power of a long series' forecast combination", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, {len(df)} trials. Ratios are test RMSE over the better of seasonal naive and "
        "MSTL; `series above 1` counts medians over the seeds above it; paired is the geometric mean, trial by "
        f"trial, over the kernel's own RMSE. Power 2 recomputed against the recorded forecasts: largest relative "
        f"difference {check:.2g}.",
        md_table(["forecast", "geomean of medians", "worst median", "series above 1", "worst single run",
                  "paired / kernel (SE)"], table, "lrrrrr"),
        "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()
