"""How many recent points the classical members of a long series' forecast combination need.

On long series the search's forecast can weigh the kernel with MSTL and AutoETS (the setting
``long_combine``, :mod:`evocov_core.forecast.beside`). They are fitted five times a search (the whole
training part and the points before each of four origins) beside a 60 s search: on all of up to
10,000 points (the benchmark baselines' setting) AutoETS takes 6-10 s a fit. This script fits both
on the last N training points for several N, on every series of a ``bench long`` folder, and
reports each forecast's test RMSE against the one from 10,000 points, with the seconds per fit:
what :data:`evocov_core.forecast.beside.LONG_POINTS` is chosen on (the development set's folder).

Usage (from the repository root; the folder's ``data/`` is rebuilt from the installed packages)::

    python -m bench.bench_long_classical --folder bench/results/long-dev/quick-seed-order --name long-dev

Writes ``bench/results/bench_long_classical__<name>.md`` and ``…csv``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, write_report
from bench.common import geomean, md_table
from bench.long import load_long, write_series
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import rmse
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.classical import classical_forecasts

POINTS = (1000, 2000, 4000, 10_000)
MODELS = ("MSTL", "AutoETS")


def last_points(ds: Dataset, n: int) -> Dataset:
    """``ds`` with only its last ``n`` training points (its test part unchanged)."""
    keep = np.ones(ds.n, dtype=bool)
    keep[np.flatnonzero(ds.train)[:-n]] = False
    return dataclasses.replace(ds, x=ds.x[keep], y=ds.y[keep], train=ds.train[keep], notes=())


def series_rows(ds: Dataset, name: str) -> list[dict]:
    """One row per (N, model): test RMSE and seconds; the seasons are those of the whole series."""
    seasons = infer_seasons(ds).lengths or (1,)
    rows = []
    for n in POINTS:
        t0 = time.perf_counter()
        out = classical_forecasts(last_points(ds, n), season_lengths=seasons, models=MODELS, time_limit=120)
        wall = time.perf_counter() - t0
        for f in out.forecasts:
            rows.append({"series": name, "points": n, "model": f.name, "status": f.status,
                         "test_rmse": rmse(ds.y[~ds.train], f.mean) if f.ok else math.nan,
                         "seconds": f.seconds if f.ok else math.nan, "call_s": wall, "settings": f.settings})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench long folder (its series)")
    ap.add_argument("--name", default=None, help="the report's name after bench_long_classical__")
    args = ap.parse_args()
    threads = limit_threads()
    names = list(pd.read_csv(args.folder / "trials.csv")["series"].drop_duplicates())
    write_series(args.folder / "data", names)
    df = pd.DataFrame([r for s in names for r in series_rows(load_long(args.folder / "data" / f"{s}.csv"), s)])
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_long_classical__{name}.csv", index=False)
    ok = df[df.status == "ok"]
    ref = ok[ok.points == max(POINTS)].set_index(["series", "model"])["test_rmse"]
    table, lines = [], []
    for n in POINTS:
        mine = ok[ok.points == n].set_index(["series", "model"])
        r = (mine["test_rmse"] / ref.reindex(mine.index)).dropna()
        table.append([f"{n:,}", str(len(r)), f"{geomean(r):.3f}", f"{r.min():.2f}", f"{r.max():.2f}",
                      f"{mine['seconds'].median():.2f}", f"{mine['seconds'].max():.2f}"])
        lines.append(f"points={n} geomean_vs_10000={geomean(r):.4f} worst={r.max():.3f} "
                     f"median_seconds={mine['seconds'].median():.3f}")
    per = ok.pivot_table(index=["series", "model"], columns="points", values="test_rmse")
    per_rows = [[s, m, *(f"{v:.4g}" for v in row)] for (s, m), row in per.iterrows()]
    write_report(f"bench_long_classical__{name}", "Classical members of a long series' forecast on recent points", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, {len(names)} series; the seasons are those of each whole series "
        "(:func:`evocov_core.fitting.seasons.infer_seasons`); MSTL keeps a season when it sees two of it. Ratio = test "
        "RMSE from the last N training points over that from the last 10,000 (every point when fewer), per "
        "series and model; seconds = one fit in the child process.",
        md_table(["points", "forecasts", "geomean ratio", "best", "worst", "median s", "max s"], table,
                 "rrrrrrr"),
        "```\n" + "\n".join(lines) + "\n```",
        "Test RMSE per series and model:",
        md_table(["series", "model", *(f"{n:,}" for n in per.columns)], per_rows, "ll" + "r" * len(per.columns))],
        threads)


if __name__ == "__main__":
    main()
