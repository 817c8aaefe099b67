"""Which classical forecasters a long series' forecast combination should weigh, post hoc on a ``bench long`` folder.

Each trial's returned kernel is combined by the package's own
``evocov_core.forecast.beside.ClassicalBeside``, as a search with ``long_combine`` does: the kernel
forecasts each of the four origins' next tenth with its fitted values, the classical models see the
last ``LONG_POINTS`` points before each origin and before the test part, and every member is weighed
by the inverse square of its error summed over the origins (the guard included). One
``ClassicalBeside`` per series fits every candidate member once; each member set is then weighed
from those forecasts (its guard reads only that set's intervals). The kernels are the folder's; the
presets' set is checked against the forecast each trial recorded when the folder combined with it.

Usage (from the repository root; the folder's ``data/`` is rebuilt from the installed packages)::

    python -m bench.bench_long_members --folder bench/results/long-dev/quick-42-combine --name long-dev

Writes ``bench/results/bench_long_members__<name>.md`` and ``…csv``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, write_report
from bench.bench_long_weights import finished_trials
from bench.common import geomean, md_table
from bench.long import load_long
from evocov_core.fitting.metrics import rmse
from evocov_core.forecast.beside import ClassicalBeside, combined_test_mean, kernel_test_mean
from evocov_core.forecast.combination import KERNEL, Combination
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search import preset, search_data

#: The member sets weighed with the kernel; the first is the presets' (``long_combine``).
SETS: tuple[tuple[str, ...], ...] = (
    ("MSTL", "AutoETS"),
    ("MSTL", "AutoETS", "SeasonalNaive"),
    ("MSTL", "SeasonalNaive"),
    ("MSTL",),
)


def _label(members: tuple[str, ...]) -> str:
    return "kernel + " + " + ".join(members)


def weigh(beside: ClassicalBeside, members: tuple[str, ...], fit, kernel_mean: np.ndarray):
    """The combination ``beside`` makes with ``members`` only (its forecasts made once for all sets)."""
    every = beside.models
    beside.models = members
    try:
        return beside.choose(None, fit=fit, kernel_mean=kernel_mean)
    finally:
        beside.models = every


def kernel_weight(c: Combination) -> float:
    """The kernel's weight in the forecast (0 when left out; equal weights when none are recorded)."""
    return dict(zip(c.members, c.member_weights, strict=True)).get(KERNEL, 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench long folder")
    ap.add_argument("--name", default=None, help="the report's name after bench_long_members__")
    args = ap.parse_args()
    threads = limit_threads()
    presets = preset("quick").long_combine
    assert SETS[0] == presets, (SETS[0], presets)
    trials, config = finished_trials(args.folder)
    every = tuple(dict.fromkeys(m for s in SETS for m in s))
    rows = []
    for series, group in trials.groupby("series", sort=False):
        ds = load_long(args.folder / "data" / f"{series}.csv")
        beside = ClassicalBeside(ds, search_data(ds, config), every, horizon=ds.n_test)
        y = ds.y[~ds.train]
        for t in group.itertuples():
            kf = load_kernel_file(args.folder / str(t.kernel_file))
            fit = kf.to_fit(kf.approximation.n_used if kf.approximation is not None else ds.n_train)
            kernel_mean = kernel_test_mean(fit, ds)
            row = {"series": series, "seed": int(t.seed), "best_baseline": float(t.best_baseline_rmse),
                   "recorded": float(t.test_rmse), "kernel": rmse(y, kernel_mean),
                   "recorded_combined": kf.combination.origins > 0}
            for members in SETS:
                c, full, _ = weigh(beside, members, fit, kernel_mean)
                mean = combined_test_mean(c, kernel_mean, full)
                row[_label(members)] = rmse(y, mean) if mean is not None else math.nan
                row[f"w_kernel {_label(members)}"] = kernel_weight(c)
            rows.append(row)
            print(series, t.seed, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)}, flush=True)
    df = pd.DataFrame(rows)
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_long_members__{name}.csv", index=False)
    table, lines = [], []
    for col in ["kernel", *(_label(s) for s in SETS)]:
        r = df[col] / df.best_baseline
        med = r.groupby(df.series).median()
        lr = np.log(df[col] / df[_label(SETS[0])])
        se = lr.std(ddof=1) / math.sqrt(len(lr))
        w = df.get(f"w_kernel {col}")
        table.append([col, f"{geomean(med):.3f}", f"{med.max():.3f}", f"{int((med > 1).sum())}", f"{r.max():.3f}",
                      f"{math.exp(lr.mean()):.3f} ({se:.3f})", "" if w is None else f"{w.median():.2f}"])
        lines.append(f"rule={col.replace(' ', '_')} geomean_of_medians={geomean(med):.4f} worst_median={med.max():.3f} "
                     f"worst_single={r.max():.3f} paired_vs_presets={math.exp(lr.mean()):.4f} se_log={se:.4f}")
    combined = df[df.recorded_combined]
    check = (f"The presets' set recomputed against the {len(combined)} recorded forecasts: largest relative "
             f"difference {float(np.max(np.abs(combined[_label(SETS[0])] / combined.recorded - 1.0))):.2g}."
             if len(combined) else "The folder's searches did not combine: no recorded forecast to check against.")
    per_series = df.assign(**{c: df[c] / df.best_baseline for c in ["kernel", *(_label(s) for s in SETS)]}) \
        .groupby("series")[["kernel", *(_label(s) for s in SETS)]].median().round(3).reset_index()
    write_report(f"bench_long_members__{name}", "The members of a long series' forecast combination", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, {len(df)} trials. Ratios are test RMSE over the better of seasonal naive and "
        "MSTL; `series above 1` counts medians over the seeds above it; paired is the geometric mean, trial by "
        f"trial, over the presets' set ({_label(SETS[0])}). {check}",
        md_table(["forecast", "geomean of medians", "worst median", "series above 1", "worst single run",
                  "paired / presets (SE)", "kernel's median weight"], table, "lrrrrrr"),
        "Per series, the median over seeds of the ratio to the better baseline:",
        md_table(list(per_series.columns), per_series.astype(str).values.tolist()),
        "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()
