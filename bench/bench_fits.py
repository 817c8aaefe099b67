"""Fits per second of a search before (``quick-fixed``) and after (``quick``) the budgeted search.

Three TSDL series of n_train = 129, 490 and 899 (Airline, Mauna Loa, Temperature). Each
setting runs for the same wall-clock budget (``--seconds``, default 30) on ``--workers``
processes, seed 0, and the report counts, per second of wall time:

* full fits (kernels fitted on all the training data),
* screening fits (fitted on the 240-point subset only; ``quick`` screens above 240 points),
* cache hits (kernels met again and not refitted),
* candidates (all three: kernels the search judged).

``quick-fixed`` runs with the same time budget and none of the budgeted parts (no cache,
no screening, no seeds, lowest-BIC choice), i.e. the former quick preset cut at the same
time. Usage (from the repository root)::

    python -m bench.bench_fits --data-dir ../shared/data/tsdl --seconds 30 --workers 2

Writes ``bench/results/bench_fits.md`` and ends with one ``key=value`` line per series.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench._common import limit_threads, write_report
from bench.common import md_table
from evocov_core.data import load_csv
from evocov_core.fitting.metrics import FitData
from evocov_core.search import preset, run_search

SERIES = ("01-airline", "03-mauna", "05-temperature")


def measure(data: FitData, name: str, seconds: float, workers: int) -> dict:
    cfg = preset(name, time_budget=seconds)
    t0 = time.perf_counter()
    res = run_search(data, cfg, seed=0, workers=workers)
    wall = time.perf_counter() - t0
    return {"wall": wall, "full": res.n_evaluations / wall, "screen": res.n_screen_fits / wall,
            "hits": res.n_cache_hits / wall,
            "candidates": (res.n_evaluations + res.n_screen_fits + res.n_cache_hits) / wall,
            "generations": len(res.history), "test_rmse": res.best.test_rmse if res.best else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/tsdl")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    threads = limit_threads()
    rows, lines = [], []
    for series in SERIES:
        data = FitData.from_dataset(load_csv(Path(args.data_dir) / f"{series}.csv"))
        before = measure(data, "quick-fixed", args.seconds, args.workers)
        after = measure(data, "quick", args.seconds, args.workers)
        for label, m in (("before (quick-fixed)", before), ("after (quick)", after)):
            rows.append([series, data.n, label, f"{m['wall']:.1f}", f"{m['full']:.2f}", f"{m['screen']:.2f}",
                         f"{m['hits']:.2f}", f"{m['candidates']:.2f}", m["generations"]])
        lines.append(f"series={series} n={data.n} full_fits_per_s_before={before['full']:.2f} "
                     f"full_fits_per_s_after={after['full']:.2f} candidates_per_s_before={before['candidates']:.2f} "
                     f"candidates_per_s_after={after['candidates']:.2f} "
                     f"candidates_ratio={after['candidates'] / max(before['candidates'], 1e-9):.2f}")
    summary = "\n".join(lines)
    sections = [
        " ".join(__doc__.split("\n\n")[1].split()),
        md_table(["series", "n_train", "settings", "wall s", "full fits/s", "screening fits/s", "cache hits/s",
                  "candidates/s", "generations"], rows),
        f"## Summary lines\n\n```\n{summary}\n```",
    ]
    path = write_report("bench_fits", "Fits per second before and after the budgeted search", sections, threads)
    print(summary)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
