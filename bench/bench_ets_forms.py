"""How well do the Gaussian-process forms of exponential smoothing forecast on their own?

Issue 55 adds a local level, a local trend and a damped trend to the grammar
(:mod:`evocov_core.language.grammar`) and starts every budgeted search from the GP forms of the models ETS
chooses among (:mod:`evocov_core.search.ets_seeds`). Before they enter a search: fitted alone, from
the values the search gives them, what does each form forecast? For every series of a folder, each
form of :func:`~evocov_core.search.ets_seeds.ets_seeds` is fitted once (the ``quick`` preset's
optimiser settings, seed 0) on the training part; the script reports, against AutoETS's test RMSE on
the same split (``classical.csv`` of an accuracy folder):

``bic``
    the form of lowest BIC (a choice the search could make: it sees only the training part);
``oracle``
    the form of lowest test RMSE (hindsight: an upper bound on what choosing among the forms gives);
``search``
    the kernel of a ``bench accuracy`` folder's trials, for comparison.

Usage (from the repository root)::

    python -m bench.bench_ets_forms --data-dir bench/corpus/series \\
        --folder bench/results/corpus/quick-45-epyc --workers 2 --max-points 600

Writes ``bench/results/bench_ets_forms.md`` and ``…csv`` (one row per series and form).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, write_report
from bench.common import geomean, load_series, md_table
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import fit_kernel
from evocov_core.search.config import preset
from evocov_core.search.ets_seeds import NON_SEASONAL, SEASONAL, ets_seeds, season


def fit_forms(job: tuple[Path, str]) -> list[dict]:
    """Fit every seed form on one series; one row per form (test RMSE in the data's units)."""
    data_dir, name = job
    data = FitData.from_dataset(load_series(data_dir, name))
    omega = season(data)
    names = NON_SEASONAL + (SEASONAL if omega is not None else ())
    rows = []
    for form, (kernel, start) in zip(names, ets_seeds(data), strict=True):
        t0 = time.perf_counter()
        fit = fit_kernel(kernel, data, preset("quick").optim, np.random.default_rng(0), start)
        rmse = math.inf
        if fit.ok:
            post = posterior(fit.kernel, data.X, data.y, np.array(fit.theta), fit.log_noise, data.X_test,
                             jitter=fit.jitter, mean_only=True)
            pred = post.mean * data.y_std + data.y_mean
            rmse = float(np.sqrt(np.mean((pred - data.y_test) ** 2)))
        rows.append({"series": name, "n_train": data.n, "form": form, "bic": fit.bic if fit.ok else math.inf,
                     "test_rmse": rmse, "q": kernel.q, "season_steps": None if omega is None else
                     2 * math.pi / omega / data.step, "seconds": time.perf_counter() - t0})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("bench/corpus/series"))
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder (classical.csv, trials.csv)")
    ap.add_argument("--variant", default="full")
    ap.add_argument("--max-points", type=int, default=600, help="skip series with more training points")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    threads = limit_threads()
    classical = pd.read_csv(a.folder / "classical.csv")
    ets = classical[(classical["model"] == "AutoETS") & (classical["status"] == "ok")].set_index("series")
    trials = pd.read_csv(a.folder / "trials.csv")
    trials = trials[(trials["variant"] == a.variant) & (trials["status"] == "ok")]
    search = trials.groupby("series")["test_rmse"].median()
    names = [n for n in sorted(ets.index) if int(ets.loc[n, "n_train"]) <= a.max_points]
    rows = [r for chunk in map_jobs(fit_forms, [(a.data_dir, n) for n in names], a.workers) for r in chunk]
    df = pd.DataFrame(rows)
    df.to_csv(RESULTS_DIR / "bench_ets_forms.csv", index=False)
    table, ratios = [], {"bic": [], "oracle": [], "search": []}
    for name, g in df.groupby("series"):
        ref = float(ets.loc[name, "test_rmse"])
        by_bic = g.loc[g["bic"].idxmin()]
        best = g.loc[g["test_rmse"].idxmin()]
        found = float(search.get(name, math.nan))
        ratios["bic"].append(by_bic["test_rmse"] / ref)
        ratios["oracle"].append(best["test_rmse"] / ref)
        ratios["search"].append(found / ref)
        table.append([name, int(g["n_train"].iloc[0]), by_bic["form"], f"{by_bic['test_rmse'] / ref:.3f}",
                      best["form"], f"{best['test_rmse'] / ref:.3f}", f"{found / ref:.3f}"])
    summary = {k: (geomean(np.array(v, dtype=float)), float(np.quantile(v, 0.9)), float(np.max(v)))
               for k, v in ratios.items()}
    line = " ".join(f"{k}_geomean={g:.4f} {k}_p90={p:.3f} {k}_worst={w:.3f}" for k, (g, p, w) in summary.items())
    line += f" series={len(table)}"
    md = md_table(["series", "n", "lowest BIC", "× AutoETS", "lowest test RMSE", "× AutoETS", "search's kernel ×"],
                  table, "lrlrlrr")
    path = write_report("bench_ets_forms", "The exponential-smoothing forms alone, against AutoETS",
                        [__doc__.split("\n\n")[1], md, "```\n" + line + "\n```"], threads)
    print(md)
    print(line)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
