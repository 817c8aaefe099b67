"""How robust is one default fit? LML over many seeds for a few start settings (issue 3).

``bench_optimizers.py`` compares optimisers on 3 seeds; this script asks a narrower question
with more seeds: how often does one ``fit_kernel`` call of SE + PER×SE end in a poor local
optimum, and what do more screened starts, more L-BFGS-B runs or more evaluations per run buy?

Settings (``OptimConfig`` fields; everything else default):

``screen 20``   ``n_screen=20``: 20 starts screened by LML, L-BFGS-B from the best 3, ≤ 60
                evaluations each (the default before this benchmark);
``screen 50``   ``n_screen=50`` (the default since: ``OptimConfig()``);
``restarts 5``  ``n_screen=20, n_restarts=5``;
``evals 100``   ``n_screen=20, max_evals=100``.

Each setting fits the same kernel once per seed (``np.random.default_rng(seed)``), seeds
0 … S−1; the table gives the median, 10th percentile and minimum LML (model units), the median
test RMSE (original units) and the mean wall time per fit, also relative to ``screen 20``.
Settings alternate within each seed, so load from other processes falls on all of them alike.

Run from the repository root: ``python -m bench.bench_starts [--seeds 20] [--series airline mauna]``
(about 2 minutes with the defaults). Report: ``bench/results/bench_starts.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench._common import ROOT, limit_threads, machine_info, write_report
from bench.common import md_table
from evocov_core.data import load_tsdl
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.library import compose

SERIES = {"airline": "01-airline.csv", "mauna": "03-mauna.csv"}
SETTINGS = {
    "screen 20": OptimConfig(n_screen=20),
    "screen 50": OptimConfig(n_screen=50),
    "restarts 5": OptimConfig(n_screen=20, n_restarts=5),
    "evals 100": OptimConfig(n_screen=20, max_evals=100),
}
BASE = "screen 20"  # times are given relative to this setting


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--series", nargs="+", default=list(SERIES), choices=list(SERIES))
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data" / "tsdl")
    args = ap.parse_args()
    threads = limit_threads()
    for k, v in machine_info():
        print(f"{k}: {v}")

    kern = compose(["+", "SE", ["*", "PER", "SE"]])
    rows = []
    for name in args.series:
        fd = FitData.from_dataset(load_tsdl(args.data_dir / SERIES[name]))
        res: dict[str, list[tuple[float, float, float]]] = {s: [] for s in SETTINGS}
        for seed in range(args.seeds):
            order = list(SETTINGS)
            order = order[seed % len(order):] + order[: seed % len(order)]
            for s in order:
                t0 = time.perf_counter()
                r = fit_kernel(kern, fd, SETTINGS[s], np.random.default_rng(seed))
                res[s].append((r.lml if r.ok else np.nan, r.test_rmse if r.ok else np.nan,
                               time.perf_counter() - t0))
            print(f"{name} seed {seed}: " + ", ".join(f"{s} {res[s][-1][0]:.1f}" for s in SETTINGS), flush=True)
        for s in SETTINGS:
            a = np.array(res[s])
            rows.append([name, s, f"{np.nanmedian(a[:, 0]):.1f}", f"{np.nanquantile(a[:, 0], 0.1):.1f}",
                         f"{np.nanmin(a[:, 0]):.1f}", f"{np.nanmedian(a[:, 1]):.4g}", f"{a[:, 2].mean():.3f}",
                         f"{a[:, 2].mean() / np.array(res[BASE])[:, 2].mean():.2f}",
                         " ".join(f"{v:.0f}" for v in a[:, 0])])
    header = ["series", "setting", "median LML", "10th pct LML", "min LML", "median test RMSE", "s / fit",
              f"time vs {BASE}", "LML per seed"]
    table = md_table(header, rows, "llrrrrrrl")
    print("\n" + table)
    path = write_report("bench_starts", "Robustness of one default fit: LML over seeds (issue 3)",
                        [f"Kernel `SE + PER×SE`, TSDL published split, {args.seeds} seeds. Settings: see the "
                         "docstring of `bench/bench_starts.py`.", "## Results\n\n" + table], threads)
    print(f"\n(written to {path.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
