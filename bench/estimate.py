"""``bench estimate``: the cost of the ``paper`` budget, from a few timed EvoCov generations.

A paper-budget run is far too long to try (141 × 141 kernels per EvoCov trial, 10 trials,
5 algorithms, 13 series). This command runs the first ``G`` (default 2) generations of
EvoCov with the paper's settings (N = 141) under LML and under SoPL on a few series,
sums the seconds of every kernel fit (core-seconds: independent of how many workers ran
them) and extrapolates:

* EvoCov (LML, SoPL): mean core-seconds per kernel fit of the timed generations × the
  141 × 141 = 19881 fits of a paper trial;
* Random Search (20000 kernels) and Go With The First (13 + 200·(13·14/2 − 1) = 18013
  kernels): mean core-seconds per kernel fit of the timed EvoCov-LML generations × their
  number of fits (their kernels are random kernels and their mutants, as in EvoCov's first
  generations);
* GPSS (10 levels): the same per-fit cost × the upper bound of its candidates (787): crude;
* series not timed: a power law ``cost ∝ n^b`` fitted per algorithm through the timed
  series (b = 2 with only one timed series).

Totals multiply by the trials (default 10) and divide by the cores for a wall-time
figure that assumes perfect packing. Later generations hold deeper kernels than the first
two, so these are lower bounds more likely than upper ones.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.budget import ALGORITHMS, budget_config
from bench.common import (
    BenchError,
    command_line,
    load_series,
    machine_info,
    now_iso,
    resolve_series,
)
from bench.common import write_json as _write_json
from bench.report import estimate_markdown, report
from evocov_core.compute.provenance import git_state
from evocov_core.fitting.fits import make_executor
from evocov_core.fitting.metrics import FitData
from evocov_core.searches import run_search
from evocov_core.searches.wall_time import estimated_fits

__all__ = ["estimate", "load_estimate"]


def estimate(data_dir: Path, out: Path, *, series: str | None, generations: int = 2, trials: int = 10,
             population: int | None = None, workers: int | None = None, scheduler: str | None = None,
             argv: list[str] | None = None, log=None) -> dict:
    """Time ``generations`` paper-budget EvoCov generations per series and extrapolate.

    ``population`` overrides N = 141 of the timed generations (μ scaled alike), to time
    fewer fits; the extrapolation uses the mean cost per fit, so it only adds noise.

    Writes ``estimate.json`` into ``out`` and, when ``out`` is a ``bench reproduce``
    folder, regenerates its report (section "paper budget: estimated cost"); otherwise
    writes ``estimate.md``.
    """
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if generations < 2:
        raise BenchError("--generations must be at least 2 (EvoCov evaluates a population at least twice)")
    data_dir, out = Path(data_dir).resolve(), Path(out)
    names = resolve_series(data_dir, series or "01-airline,03-mauna,06-internet")
    all_names = resolve_series(data_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc: dict = {"command": command_line(argv), "argv": list(argv if argv is not None else sys.argv[1:]),
                 "started": now_iso(), "generations": generations, "population": population or 141,
                 "trials": trials, "workers": workers,
                 "scheduler": scheduler, "machine": machine_info(), "git": git_state(), "measured": []}
    n_of = {s: load_series(data_dir, s).n_train for s in all_names}
    per_trial: dict[str, dict[str, float]] = {}
    for s in names:
        ds = load_series(data_dir, s)
        for key in ("evocov-lml", "evocov-sopl"):
            cfg = budget_config(key, "paper", ds.n_train).with_(generations=generations)
            if population is not None:
                cfg = cfg.with_(population=population, mu=max(1, min(population - 1, round(population / 10))))
            data = FitData.from_dataset(ds, split_fraction=cfg.metric_split)
            t0 = time.perf_counter()
            with make_executor(data, cfg.optim, workers=workers, scheduler=scheduler) as ex:
                res = run_search(data, cfg, seed=0, executor=ex)
            wall = time.perf_counter() - t0
            gens: dict[int, float] = {}
            for r in res.records:
                gens[r.generation] = gens.get(r.generation, 0.0) + r.seconds
            fit_s = sum(gens.values())
            m = {"series": s, "n_train": ds.n_train, "algorithm": key, "wall_seconds": round(wall, 2),
                 "fits": res.n_evaluations, "fit_core_seconds": round(fit_s, 2),
                 "core_seconds_per_generation": [round(gens[g], 2) for g in sorted(gens)],
                 "core_seconds_per_fit": round(fit_s / max(res.n_evaluations, 1), 4)}
            doc["measured"].append(m)
            say(f"estimate {s} {key}: {generations} generations, {res.n_evaluations} fits, {wall:.1f} s wall, "
                f"{fit_s:.1f} core-s of fitting")
            per_fit = fit_s / max(res.n_evaluations, 1)
            per_trial.setdefault(s, {})[key] = per_fit * estimated_fits(budget_config(key, "paper", ds.n_train))
            if key == "evocov-lml":
                for other in ("random", "gwtf", "gpss"):
                    per_trial[s][other] = per_fit * estimated_fits(budget_config(other, "paper", ds.n_train))
    # Power law per algorithm through the timed series, to extrapolate to all 13.
    exponents, full = {}, {}
    for key in ALGORITHMS:
        pts = [(n_of[s], per_trial[s][key]) for s in per_trial if key in per_trial[s] and per_trial[s][key] > 0]
        if not pts:
            continue
        ns = np.array([p[0] for p in pts], dtype=float)
        cs = np.array([p[1] for p in pts], dtype=float)
        if len(set(ns)) >= 2:
            b, a = np.polyfit(np.log(ns), np.log(cs), 1)
        else:
            b = 2.0
            a = math.log(cs[0]) - b * math.log(ns[0])
        exponents[key] = round(float(b), 3)
        full[key] = {s: (per_trial[s][key] if s in per_trial and key in per_trial[s]
                         else float(math.exp(a + b * math.log(n_of[s])))) for s in all_names}
    cores = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    total = sum(v for d in full.values() for v in d.values()) * trials
    doc.update(per_trial_core_seconds=per_trial, exponents=exponents, all_series_core_seconds=full,
               total_core_hours=round(total / 3600, 2), cores=cores,
               total_wall_hours_on_cores=round(total / 3600 / max(cores, 1), 2), finished=now_iso())
    _write_json(out / "estimate.json", doc)
    if (out / "run.json").is_file():
        report(out, data_dir=data_dir)
    else:
        (out / "estimate.md").write_text("# paper budget: estimated cost\n\n" + estimate_markdown(doc) + "\n",
                                         encoding="utf-8")
    return doc


def load_estimate(out: Path) -> dict | None:
    """``estimate.json`` of a folder, or None."""
    p = Path(out) / "estimate.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None
