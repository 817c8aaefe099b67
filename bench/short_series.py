"""Kernels fitted per second on short series (issue 71): this tree against another, side by side.

Three M3 series, the medians of their strata: N0560 (yearly, 19 training points), N1083 (quarterly,
44) and N2188 (monthly, 116). Each series' training part is written to a CSV with ``x = 1 + i /
period`` (i = 0..n-1), and every source tree given runs the same command on it in a child process::

    python -m evocov_core search --data SERIES.csv --test-fraction 0 --time-budget 15 --seed 1 --workers 1

Runs are interleaved (series by series, the trees in turn, ``--rounds`` times over) so that slow spells
of a shared machine fall on every tree alike. Per run: the kernels fitted and the search's seconds
(its last line, ``N kernels fitted, M screening fits in S s``), and the CPU seconds of the child and
its children (``resource.getrusage(RUSAGE_CHILDREN)``, which the classical forecasts' process adds
to). Kernels fitted per second of one core is kernels ÷ search seconds (``--workers 1``: one core).
The ratio of each tree to the first (``--trees``, default ``../wt-e7a``, a worktree of
e7a1b8c made by ``git worktree add ../wt-e7a e7a1b8c``, then this tree) is the median of the
per-round ratios.

Results go to ``bench/results/short_series.md`` and ``short_series.csv``; the last line printed is the
summary (``fits_per_s_ratio_n19=`` ...).

``--cpu`` runs, instead of the command, the same search (``run_search`` with the ``quick`` preset at the
budget, without the forecast stage and its classical models) in a child process that reports the CPU
seconds of the search itself, and rates kernels per CPU second: what one core does, whatever share of it
the other tenants of a shared machine left (results in ``bench/results/short_series_cpu.md``).

``--pool-overhead`` measures instead what a worker process costs a fit (issue 71: at most 10 % at every n):
the same ``--fits`` kernel fits (random trees that pass the PSD check, each with its seed, the ``quick``
preset's fitting settings) on each series, in this process and in a pool of one worker process, one fit
a job and in jobs sized to 25 ms of work (:class:`evocov_core.compute.runners.PoolRunner`), in
interleaved rounds after a warm-up, counting the CPU seconds of this process and its workers (wall time
on a shared machine measures the other tenants). Overhead = pool CPU seconds ÷ serial CPU seconds − 1
(median over rounds), in ``bench/results/pool_overhead.md``.

Run from the repository root: ``python -m bench.short_series [--rounds 2] [--trees ../wt-e7a .]``, or
``python -m bench.short_series --pool-overhead [--fits 150] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import RESULTS_DIR, limit_threads, md_table, write_report

#: series -> its stratum's median size, as issue 71 names them.
SERIES = {"N0560": 19, "N1083": 44, "N2188": 116}
LAST_LINE = re.compile(r"(\d+) kernels fitted, (\d+) screening fits in ([0-9.]+) s")


def write_series(folder: Path) -> dict[str, Path]:
    """The three series' training parts as CSVs ``x, y`` with ``x = 1 + i / period``."""
    from bench.mcomp import load_set

    every = {s.unique_id: s for s in load_set("M3")}
    paths = {}
    for name in SERIES:
        s = every[name]
        n = len(s.x)
        path = folder / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["x", "y"])
            for i in range(n):
                w.writerow([repr(1.0 + i / s.period), repr(float(s.x[i]))])
        paths[name] = path
    return paths


def run_cpu(tree: Path, data: Path, budget: float, seed: int) -> dict[str, float]:
    """One search (``run_search``, no forecast stage) in a child process run from ``tree``: its kernels and
    the CPU and wall seconds of the search alone."""
    import json

    from bench.profile_search import _CHILD

    table = np.loadtxt(data, delimiter=",", skiprows=1)
    arg = json.dumps([{}, table[:, 0].tolist(), table[:, 1].tolist(), budget, "quick", seed])
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", _CHILD, arg], cwd=tree, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return {"fits": r["fits"], "screen": 0, "seconds": r["cpu"], "wall": r["wall"], "cpu": r["cpu"],
            "fits_per_s": r["fits"] / r["cpu"]}


def run_one(tree: Path, data: Path, budget: float, seed: int, out: Path) -> dict[str, float]:
    """One search in a child process run from ``tree``; its kernels, seconds and CPU seconds."""
    cmd = [sys.executable, "-m", "evocov_core", "search", "--data", str(data), "--test-fraction", "0",
           "--time-budget", f"{budget:g}", "--seed", str(seed), "--workers", "1", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = LAST_LINE.search(done.stdout)
    if done.returncode != 0 or m is None:
        raise SystemExit(f"{tree}: search failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    fits, screen, seconds = int(m.group(1)), int(m.group(2)), float(m.group(3))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"fits": fits, "screen": screen, "seconds": seconds, "wall": wall, "cpu": cpu,
            "fits_per_s": fits / seconds}


def _cpu(proc: Any) -> float:
    """CPU seconds (user + system) of ``proc`` (a ``psutil.Process``) and its living children."""
    import psutil

    total = 0.0
    for p in (proc, *proc.children(recursive=True)):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:  # a child that ended meanwhile
            continue
        total += t.user + t.system
    return total


def pool_overhead(fits: int, rounds: int) -> None:
    """Seconds of the same fits serially and in a one-worker pool, one fit a job and in sized jobs."""
    import psutil

    from evocov_core.compute.runners import PoolRunner, SerialRunner
    from evocov_core.data import Dataset
    from evocov_core.fitting.fits import Task, _run_in
    from evocov_core.language.grammar import get_grammar
    from evocov_core.searches import preset, search_data
    from evocov_core.searches.variation import VariationConfig, random_kernel

    threads = limit_threads()
    cfg = preset("quick")
    grammar, vcfg = get_grammar(cfg.n_hyper), VariationConfig()
    rows, summary = [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_series(Path(tmp))
        for name, path in paths.items():
            table = np.loadtxt(path, delimiter=",", skiprows=1)
            data = search_data(Dataset.from_arrays(table[:, 0], table[:, 1], test_fraction=0.0), cfg)
            contexts = {"": (data, cfg.optim)}
            rng = np.random.default_rng(71)
            tasks = [Task(random_kernel(grammar, rng, cfg.d_min, cfg.d_max, vcfg)[0].tokens, (71, i))
                     for i in range(fits)]
            runners = {"serial": SerialRunner(contexts), "pool, one fit a job": PoolRunner(1, contexts, job_seconds=0),
                       "pool, 25 ms jobs": PoolRunner(1, contexts)}
            for r in runners.values():  # warm-up: start the worker, import, measure a call
                r.map(_run_in, tasks[:8])
            times: dict[str, list[float]] = {k: [] for k in runners}
            me = psutil.Process()
            for rnd in range(rounds):
                order = list(runners) if rnd % 2 == 0 else list(runners)[::-1]
                for k in order:
                    # CPU seconds of this process and its worker processes: what the fits cost a core,
                    # whatever share of the cores other tenants took.
                    before = _cpu(me)
                    runners[k].map(_run_in, tasks)
                    times[k].append(_cpu(me) - before)
            jobs = runners["pool, 25 ms jobs"].job_size(fits)  # type: ignore[attr-defined]
            for r in runners.values():
                r.close()
            base = times["serial"]
            for k, v in times.items():
                over = statistics.median(a / b - 1.0 for a, b in zip(v, base, strict=True))
                rows.append([name, str(SERIES[name]), k, f"{1e3 * statistics.median(v) / fits:.2f}",
                             "-" if k == "serial" else f"{100 * over:.1f} %",
                             str(jobs) if k == "pool, 25 ms jobs" else ("1" if k != "serial" else "-")])
                if k == "pool, 25 ms jobs":
                    summary.append(f"pool_overhead_n{SERIES[name]}={over:.3f}")
                elif k == "pool, one fit a job":
                    summary.append(f"pool_overhead_single_n{SERIES[name]}={over:.3f}")
            print(name, {k: round(1e3 * statistics.median(v) / fits, 2) for k, v in times.items()}, flush=True)
    text = md_table(["series", "n", "runner", "CPU ms a fit", "overhead", "fits a job"], rows, "lrlrrr")
    line = " ".join(summary)
    write_report("pool_overhead", "What a worker process costs a kernel fit on short series (issue 71)",
                 [f"{fits} random PSD kernels fitted with the `quick` preset's fitting settings, {rounds} interleaved "
                  "rounds after a warm-up of 8 fits; overhead = pool CPU s ÷ serial CPU s − 1 (median of rounds).",
                  "## Results\n\n" + text, "## Summary line\n\n```\n" + line + "\n```"], threads)
    print(text)
    print(line)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=Path, nargs="+", default=[Path("../wt-e7a"), Path(".")],
                    help="source trees; ratios are to the first (default: ../wt-e7a and .)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=15.0, help="--time-budget of each search (default 15)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu", action="store_true", help="kernels per CPU second of the search alone (run_search)")
    ap.add_argument("--pool-overhead", action="store_true", help="measure a worker process's cost per fit instead")
    ap.add_argument("--fits", type=int, default=150, help="fits per round with --pool-overhead (default 150)")
    args = ap.parse_args(argv)
    if args.pool_overhead:
        pool_overhead(args.fits, args.rounds)
        return
    threads = limit_threads()
    trees = [t.resolve() for t in args.trees]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_series(Path(tmp))
        for r in range(args.rounds):
            for name, path in paths.items():
                order = trees if r % 2 == 0 else trees[::-1]
                for tree in order:
                    res = (run_cpu(tree, path, args.budget, args.seed) if args.cpu
                           else run_one(tree, path, args.budget, args.seed, Path(tmp) / "out.json"))
                    rows.append({"round": r, "series": name, "n": SERIES[name], "tree": str(tree), **res})
                    print(f"round {r} {name} {tree.name}: {res['fits']} kernels in {res['seconds']:.1f} s "
                          f"({res['fits_per_s']:.1f}/s), CPU {res['cpu']:.1f} s", flush=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = "short_series_cpu" if args.cpu else "short_series"
    with (RESULTS_DIR / f"{stem}.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    base = trees[0]
    table, summary = [], []
    for name, n in SERIES.items():
        for tree in trees:
            mine = [x for x in rows if x["series"] == name and x["tree"] == str(tree)]
            ref = [x for x in rows if x["series"] == name and x["tree"] == str(base)]
            ratios = [a["fits_per_s"] / b["fits_per_s"] for a, b in zip(mine, ref, strict=True)]
            ratio = statistics.median(ratios)
            table.append([name, str(n), tree.name, f"{np.median([x['fits'] for x in mine]):.0f}",
                          f"{np.median([x['seconds'] for x in mine]):.1f}",
                          f"{np.median([x['fits_per_s'] for x in mine]):.1f}", f"{ratio:.2f}",
                          " ".join(f"{v:.2f}" for v in ratios)])
            if tree != base:
                summary.append(f"fits_per_s_ratio_n{n}={ratio:.3g}")
    unit = "search CPU s" if args.cpu else "search s"
    head = ["series", "n", "tree", "kernels fitted", unit, "kernels / s", f"÷ {base.name}", "per round"]
    text = md_table(head, table, "lrlrrrrl")
    line = " ".join(summary)
    how = ("`run_search` of the `quick` preset in a child process, kernels per CPU second of the search" if args.cpu
           else "`python -m evocov_core search`, kernels per second of the search as it reports it")
    write_report(stem, "Kernels fitted per second on short M3 series (issue 71)",
                 ["Trees: " + ", ".join(f"`{t}`" for t in trees) + f"; {args.rounds} rounds, interleaved; "
                  f"`--time-budget {args.budget:g} --seed {args.seed} --workers 1 --test-fraction 0`; {how}.",
                  "## Results\n\n" + text, "## Summary line\n\n```\n" + line + "\n```"], threads)
    print(text)
    print(line)


if __name__ == "__main__":
    main()
