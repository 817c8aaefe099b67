"""Short budgets on a long series (issue 28): does the search command end within its budget + 10 %?

The search command a user runs, ``python -m evocov_core search --data FILE --time-budget B
--workers 2``, on the seeded 20,000-point half-hourly synthetic series of ``bench long``
(:func:`bench.long.synthetic_series`: a trend, daily and weekly cycles, unit
noise), at budgets of 15, 20 and 30 s by default; each run's wall time (imports and reading
included), peak memory of the command and its workers, and test RMSE of the forecast it returns
against the series' true mean's. With ``--before DIR``, the same commands run from another
checkout of the repository too (a ``git worktree`` at an earlier commit), interleaved run by
run with this one, so that both see the same machine.

Run from the repository root: ``python -m bench.bench_short_budget [--before DIR]`` (about
3 minutes a code version with the defaults).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench._common import limit_threads, parse_tuple, write_report
from bench.common import md_table
from bench.long import load_long, synthetic_series
from evocov_core.compute.measure import run_measured
from evocov_core.compute.provenance import git_state
from evocov_core.runs.kernel_file import load_kernel_file

ROOT = Path(__file__).resolve().parents[1]


def _commit(root: Path) -> str:
    """The short commit of checkout ``root`` (:func:`~evocov_core.compute.provenance.git_state`),
    "+dirty" if changed."""
    state = git_state(root)
    return (state["commit"] or "unknown")[:7] + ("+dirty" if state["dirty"] else "")


def run_once(root: Path, csv: Path, budget: float, out: Path) -> dict:
    """One search command from checkout ``root``: wall, peak memory, test RMSE of its forecast."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    res = run_measured([sys.executable, "-m", "evocov_core", "search", "--data", str(csv), "--time-budget",
                        f"{budget:g}", "--workers", "2", "--seed", "0", "--quiet", "--out", str(out)],
                       cwd=root, env=env, timeout=10 * budget + 120)
    if res.returncode != 0:
        raise SystemExit(f"the search from {root} failed: {res.stderr.strip()[-300:]}")
    kf = load_kernel_file(out)
    rmse = kf.scores.get("forecast_test_rmse") or kf.scores["test_rmse"]
    return {"wall": res.wall_s, "peak": res.peak_rss_bytes / 1e9, "rmse": float(rmse),
            "fits": int(kf.scores.get("evaluations", 0))}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", type=parse_tuple, default=(15.0, 20.0, 30.0), help="seconds, comma-separated")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--points", type=int, default=20_000)
    p.add_argument("--before", type=Path, default=None, help="another checkout to run the same commands from")
    args = p.parse_args(argv)
    threads = limit_threads()
    frame, truth = synthetic_series(args.points)
    versions = {"this checkout": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    commits = {name: _commit(root) for name, root in versions.items()}
    rows: dict[tuple[str, float], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / f"synthetic-{args.points}.csv"
        frame.to_csv(csv, index=False)
        ds = load_long(csv)  # as the search reads it: its split says which points are tested
        floor = float(np.sqrt(np.mean((ds.y_test - truth[~ds.train]) ** 2)))
        for _ in range(args.repeats):
            for budget in args.budgets:
                for name, root in versions.items():  # interleaved: both versions see the same machine
                    run = run_once(root, csv, budget, Path(tmp) / "k.json")
                    rows.setdefault((name, budget), []).append(run)
                    print(f"{name} {budget:g} s: wall {run['wall']:.1f} s, {run['peak']:.2f} GB, "
                          f"RMSE {run['rmse']:.3f}, {run['fits']} fits", flush=True)
    table = []
    for (name, budget), runs in rows.items():
        walls = [r["wall"] for r in runs]
        table.append([f"{name} ({commits[name]})", f"{budget:g}", f"{statistics.median(walls) / budget:.3f}",
                      f"{max(walls) / budget:.3f}", f"{max(r['peak'] for r in runs):.2f}",
                      f"{statistics.median(r['rmse'] for r in runs) / floor:.3f}",
                      f"{statistics.median(r['fits'] for r in runs):g}"])
    doc = (f"The search command on the {args.points:,}-point synthetic series of `bench long`, seed 0, two "
           f"workers, {args.repeats} runs a budget, the versions interleaved run by run. Wall / budget counts the "
           "command's start, imports and reading; peak GB is the summed RSS of the command and its workers; "
           "RMSE / true mean is the forecast's test RMSE over that of the series' true mean (the floor); fits are "
           "the kernels fully fitted (median).")
    table_md = md_table(["code", "budget s", "wall / budget: median", "largest", "peak GB", "RMSE / true mean",
                         "fits"], table, "lrrrrrr")
    path = write_report("bench_short_budget", "Short budgets on a 20,000-point series", [doc, table_md], threads)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
