"""Would averaging independent searches beat one search? Post hoc, on an accuracy folder's kernels.

One budgeted search's forecast varies much from seed to seed: which kernel family it finds is
luck. Averaging the forecasts of K independent searches (the equal-weight mixture of their
returned kernels, each with the hyperparameters its search found) removes part of that
variance. This script measures how much, on the kernels a ``bench accuracy`` folder holds
(``kernels/<series>__full__seed<k>.json``): for each series and each K, every combination of K
of its seeds; the test RMSE of the mixture's mean (ratio to the best published RMSE), the
median over the combinations, then the geometric mean over the series. K = 1 is the folder's
own number (median over the seeds). The searches' cost grows with K: K quick searches cost
K minutes.

A second rule keeps one of the K kernels instead of averaging them: the one with the lowest BIC
(``trials.csv``), as if the K searches were one search with K independent restarts. Its number
is paired: the geometric mean over every series and combination of its test RMSE over the
geometric mean of the K members' (1 = no better than taking any one of them).

Usage (from the repository root)::

    python -m bench.bench_run_average --folder bench/results/accuracy/standard-lags --k 1,2,3

Writes ``bench/results/bench_run_average__<folder name>.md`` and ends with one ``key=value``
line per K.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import limit_threads, write_report
from bench.accuracy import read_trials, reference_rmse
from bench.common import TrialStatus, geomean, load_series, md_table
from evocov_core.runs.kernel_file import load_kernel_file


def seed_forecasts(folder: Path, data_dir: Path, series: str) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """The test-range forecast mean (original units) of each seed's returned kernel, and the test outputs."""
    ds = load_series(data_dir, series)
    out = {}
    for path in sorted((folder / "kernels").glob(f"{series}__full__seed*.json")):
        seed = int(path.stem.rsplit("seed", 1)[1])
        model = load_kernel_file(path).model()
        out[seed] = model.predict(ds.X_train, ds.y_train, ds.X_test).mean
    return out, np.asarray(ds.y_test, dtype=float)


def mixture_ratios(means: dict[int, np.ndarray], y: np.ndarray, k: int, ref: float) -> list[float]:
    """RMSE / ``ref`` of the equal-weight mixture mean of every combination of ``k`` seeds."""
    return [math.sqrt(float(np.mean((np.mean([means[s] for s in c], axis=0) - y) ** 2))) / ref
            for c in itertools.combinations(sorted(means), k)]


def bic_pick_gains(ratios: pd.Series, bics: pd.Series, k: int) -> list[float]:
    """log(ratio of the lowest-BIC member) − mean log ratio of the members, per combination of ``k`` seeds.

    ``ratios`` and ``bics`` are indexed by seed (one series).
    """
    out = []
    for c in itertools.combinations(sorted(ratios.index), k):
        members = list(c)
        pick = bics[members].idxmin()
        out.append(math.log(ratios[pick]) - float(np.mean(np.log(ratios[members]))))
    return out


def full_trials(folder: Path, refs: pd.Series) -> pd.DataFrame:
    """The folder's finished ``full`` trials (a rerun counted once) with their ratio to ``refs``."""
    trials = read_trials(folder)
    trials = trials[(trials.variant == "full") & (trials.status == TrialStatus.OK)]
    return trials.assign(ratio=trials.test_rmse / trials.series.map(refs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--k", default="1,2,3", help="comma-separated numbers of searches to average")
    args = ap.parse_args()
    threads = limit_threads()
    runs = json.loads((args.folder / "run.json").read_text(encoding="utf-8"))["runs"]
    data_dir = args.data_dir or Path(runs[-1]["data_dir"])
    refs = reference_rmse(data_dir)["best_published"]
    ks = sorted({int(v) for v in args.k.split(",")})
    t0 = time.perf_counter()
    rows = []
    for series in refs.index:
        means, y = seed_forecasts(args.folder, data_dir, series)
        rows.append({"series": series, "seeds": len(means),
                     **{k: float(np.median(mixture_ratios(means, y, k, refs[series]))) for k in ks if k <= len(means)}})
    df = pd.DataFrame(rows).set_index("series")
    lines = [f"k={k} series={int(df[k].notna().sum())} geomean_of_series_medians={geomean(df[k].dropna()):.3f} "
             f"worst={df[k].max():.2f} over_3x={int((df[k] > 3).sum())}" for k in ks if k in df]
    trials = full_trials(args.folder, refs)
    for k in ks:
        if k < 2:
            continue
        per_series = {s: bic_pick_gains(g.set_index("seed").ratio, g.set_index("seed").bic, k)
                      for s, g in trials.groupby("series") if len(g) >= k}
        gains = [v for vs in per_series.values() for v in vs]
        means = [float(np.mean(vs)) for vs in per_series.values()]
        se = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) > 1 else math.nan
        lines.append(f"rule=lowest_bic_of_k k={k} combinations={len(gains)} "
                     f"paired_vs_members={math.exp(np.mean(gains)):.3f} se_log_over_series={se:.3f} "
                     f"series_better={sum(m < 0 for m in means)}/{len(means)}")
    method = __doc__.split("\n\n", 1)[1].split("Usage")[0].strip()
    table = md_table(["series", "seeds", *(f"K = {k}" for k in ks if k in df)],
                     [[s, int(r.seeds), *(f"{r[k]:.2f}" for k in ks if k in df)] for s, r in df.iterrows()])
    sections = [f"{method}\n\nFolder `{args.folder}`.",
                "## Test RMSE / best published: median over the combinations of K seeds\n\n" + table,
                f"Time {time.perf_counter() - t0:.0f} s.\n\n## Summary lines\n\n```\n" + "\n".join(lines) + "\n```"]
    path = write_report(f"bench_run_average__{args.folder.name}", "Averaging the forecasts of independent searches",
                        sections, threads)
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
