"""Benchmark: what the classical forecasters (statsforecast) cost: imports, the child process, each model.

:mod:`evocov_core.forecast.classical` runs statsforecast's models in a child process, one after another,
each within a time limit. This measures the numbers its design and defaults rest on:

1. **Imports**, each in a fresh interpreter (wall, median of ``--reps``): nothing, numpy +
   pandas + scipy, ``evocov_core.forecast.classical`` (which must not import statsforecast), statsforecast,
   ``statsforecast.models``.
2. **The child**: seconds from starting it to its being ready, bare (interpreter and
   ``evocov_core.compute``) and with statsforecast imported (``run_with_time_limits``'s
   ``startup``; median of ``--reps``). A child is paid once per call of
   ``classical_forecasts``, plus once after each timeout.
3. **First and second call** of each model on Airline (129 training points, season 12,
   h = 15), each model in a fresh child: statsforecast ≥ 2 compiles nothing (no numba), so the
   two should match.
4. **AutoARIMA against the season and the length** with our settings (``approximation=None``,
   seasonal orders at most 1 above 12 steps): 1000 points of a synthetic series (two cycles, a
   random walk, noise; seeds 0-2) with season 24, 48, 96, 168; and statsforecast's default
   (``approximation=False``, seasonal orders up to 2) against ours on 540 points with season 48
   (``--skip-raw`` leaves that out: it takes about 4 minutes).
5. **Long series with the defaults**: ``classical_forecasts`` on 17,520 and 100,000 half-hourly
   points (seasons 48 and 336 read from the dates), default time limits and training lengths.

Run from the repository root: ``python -m bench.bench_classical`` (about 10 minutes).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from bench._common import ROOT, limit_threads, write_report
from bench.common import md_table
from evocov_core.compute.timed import run_with_time_limits
from evocov_core.data import Dataset, dates_to_decimal_years, load_bundled
from evocov_core.forecast.classical import _forecast, _Task, classical_forecasts, import_statsforecast

IMPORTS = {
    "nothing (`pass`)": "pass",
    "numpy, pandas, scipy.stats": "import numpy, pandas, scipy.stats",
    "`evocov_core.forecast.classical`": ("import sys, evocov_core.forecast.classical; "
                                         "assert 'statsforecast' not in sys.modules"),
    "`statsforecast`": "import statsforecast",
    "`statsforecast.models`": "import statsforecast.models",
}
MODELS = ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta", "MSTL")


def _import_seconds(code: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _nothing(item: object) -> object:
    return item


def _raw_arima(task: _Task) -> float:
    """statsforecast's AutoARIMA as it comes (``approximation=False``); its seconds (in the child)."""
    from statsforecast.models import AutoARIMA

    t0 = time.perf_counter()
    AutoARIMA(season_length=task.seasons[0]).forecast(y=task.y, h=task.h, level=[95])
    return time.perf_counter() - t0


def synthetic(n: int, m: int = 48, seed: int = 0) -> np.ndarray:
    """Two cycles (m and 7m steps), a slow random walk and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return (100 + 10 * np.sin(2 * np.pi * t / m) + 5 * np.sin(2 * np.pi * t / (7 * m))
            + np.cumsum(rng.normal(0, 0.3, n)) + rng.normal(0, 1, n))


def half_hourly(n: int) -> Dataset:
    dates = pd.Series(pd.date_range("2020-01-01", periods=n, freq="30min"))
    return Dataset.from_arrays(dates_to_decimal_years(dates), synthetic(n), x_kind="date", name=f"half-hourly {n}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the import and start-up timings")
    ap.add_argument("--skip-raw", action="store_true", help="leave out statsforecast's default AutoARIMA (minutes)")
    args = ap.parse_args(argv)
    threads = limit_threads()
    sections, summary = [], []

    rows = [[name, f"{_import_seconds(code, args.reps):.2f}"] for name, code in IMPORTS.items()]
    sections += ["## 1. Imports (fresh interpreter, wall seconds, median)", md_table(["import", "seconds"], rows)]
    summary.append(f"import_statsforecast_models={rows[-1][1]}s import_evocov_classical={rows[2][1]}s")
    print(sections[-1], flush=True)

    bare = [run_with_time_limits(_nothing, [0], 60).startup[0] for _ in range(args.reps)]
    ready = [run_with_time_limits(_nothing, [0], 60, setup=import_statsforecast) for _ in range(args.reps)]
    rows = [["bare (interpreter + `evocov_core.compute`)", f"{statistics.median(bare):.2f}", "-"],
            ["with statsforecast imported", f"{statistics.median(r.startup[0] for r in ready):.2f}",
             f"{statistics.median(r.setup[0] for r in ready):.2f}"]]
    sections += ["## 2. The child process (wall seconds from start to ready, median)",
                 md_table(["child", "start to ready", "of which the import"], rows)]
    summary.append(f"child_startup={rows[1][1]}s")
    print(sections[-1], flush=True)

    ds = load_bundled("airline")
    y = np.ascontiguousarray(ds.y_train, dtype=np.float64)
    rows = []
    for name in MODELS:
        task = _Task(name, (12,) if name != "MSTL" else (4, 12), y, ds.n_test)
        run = run_with_time_limits(_forecast, [task, task], 120, setup=import_statsforecast)
        first, second = run.results
        rmse = float(np.sqrt(np.mean((first.value[0] - ds.y_test) ** 2))) if first.status == "ok" else float("nan")
        rows.append([name + (" (seasons 4, 12)" if name == "MSTL" else ""), f"{first.seconds:.4f}",
                     f"{second.seconds:.4f}", f"{rmse:.2f}"])
        summary.append(f"{name}_first={first.seconds:.3f}s")
    sections += ["## 3. First and second call on Airline (seconds in the child; 129 points, season 12, h = 15)",
                 md_table(["model", "first call", "second call", "test RMSE"], rows)]
    print(sections[-1], flush=True)

    rows = []
    y1000 = synthetic(1000)
    for m in (24, 48, 96, 168):
        tasks = [_Task("AutoARIMA", (m,), synthetic(1000, m, seed)[:900], 100) for seed in range(3)]
        got = run_with_time_limits(_forecast, tasks, 120, setup=import_statsforecast).results
        rows.append(["ours", "1000", str(m), ", ".join(sorted({r.status for r in got})),
                     ", ".join(f"{r.seconds:.1f}" for r in got)])
    if not args.skip_raw:
        y540 = y1000[:540]
        # By its module's name: run as ``-m``, this module is __main__, which the child cannot import.
        raw_arima = importlib.import_module("bench.bench_classical")._raw_arima
        raw = run_with_time_limits(raw_arima, [_Task("AutoARIMA", (48,), y540, 54)], 600,
                                   setup=import_statsforecast).results[0]
        ours = run_with_time_limits(_forecast, [_Task("AutoARIMA", (48,), y540, 54)], 600,
                                    setup=import_statsforecast).results[0]
        raw_seconds = raw.value if raw.status == "ok" else raw.seconds
        rows.append(["statsforecast's default (`approximation=False`, seasonal orders up to 2)", "540", "48",
                     raw.status if raw.status == "ok" else raw.reason, f"{raw_seconds:.1f}"])
        rows.append(["ours", "540", "48", ours.status, f"{ours.seconds:.1f}"])
        summary.append(f"arima_540_m48_default={rows[-2][-1]}s arima_540_m48_ours={rows[-1][-1]}s")
    sections += ["## 4. AutoARIMA against the season and the length (seconds in the child, limit 120 s / 600 s)",
                 md_table(["AutoARIMA", "points", "season", "status", "seconds (seeds 0, 1, 2)"], rows, "lrrlr")]
    print(sections[-1], flush=True)

    rows = []
    for n in (17_520, 100_000):
        big = half_hourly(n)
        t0 = time.perf_counter()
        r = classical_forecasts(big)
        wall = time.perf_counter() - t0
        for f in r.forecasts:
            rows.append([str(n), f.name, f.status, "-" if f.status == "skipped" else f"{f.seconds:.1f}",
                         f.settings or f.reason])
        rows.append([str(n), "(all, wall)", f"seasons {r.seasons.describe()}", f"{wall:.1f}",
                     f"{len(r.startup)} child(ren), start-up {', '.join(f'{s:.1f}' for s in r.startup)} s"])
        summary.append(f"long_{n}_wall={wall:.1f}s")
    sections += ["## 5. Long half-hourly series with the defaults (30 s per model)",
                 md_table(["points", "model", "status", "seconds", "what it saw"], rows, "rllrl")]
    print(sections[-1], flush=True)

    line = "classical " + " ".join(summary)
    path = write_report("bench_classical", "Classical forecasters: imports, the child process, each model",
                        [__doc__.split("\n\n", 1)[1].split("Run from")[0].strip(), *sections,
                         "```\n" + line + "\n```"], threads)
    print(f"wrote {path}")
    print(line)


if __name__ == "__main__":
    main()
