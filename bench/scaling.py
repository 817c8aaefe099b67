"""``bench scaling``: what a kernel fit costs, against n and against the number of workers.

1. **Against n.** A fixed set of kernels (``--kernels`` random kernels from
   :func:`evocov_core.searches.variation.random_kernel`, seed ``--seed``, depths 3–8, kernels that
   never read x discarded, plus SE + PER×SE) is fitted once per series, serially in this
   process, with the searches' default optimiser (``SearchConfig().optim``: L-BFGS-B, 20
   screened starts, 3 runs of at most 60 evaluations); each series uses its own n_train
   (129 … 909). Reported: median and mean seconds per fit, seconds per metric evaluation.
2. **Against workers.** One population (``--population`` random kernels) on one series
   (``--workers-series``), fitted by: the serial executor, a process pool of 1 and of 2
   processes (:class:`~evocov_core.fitting.fits.ProcessExecutor`), and 2 Dask workers on a
   ``LocalCluster`` (:class:`~evocov_core.fitting.fits.DaskExecutor`). Executors are started
   (and warmed up with two small fits) before timing; repetitions interleave the executors
   in rotated order and the median is kept. Throughput = fits per second; speed-ups are
   ratios measured side by side in this run.
3. **Where the time goes.** One cProfile run of the same population, serially:
   linear algebra (:func:`evocov_core.fitting.gp.factorize` = Cholesky ``dpotrf``,
   :func:`~evocov_core.fitting.gp._raw_inverse` = ``dpotri``, ``Factor.solve`` = ``dpotrs``,
   ``scipy.linalg.solve_triangular``), building K and its gradient
   (:func:`evocov_core.language.evaluate._forward`, ``_backward``, Toeplitz ``expand``/``reduce``),
   and the rest (Python: the optimiser, bookkeeping, PSD-free glue). cProfile's own
   overhead lands mostly in "the rest".
"""

from __future__ import annotations

import cProfile
import math
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import (
    BenchError,
    append_run,
    command_line,
    doc_md,
    fmt,
    load_series,
    machine_info,
    md_table,
    now_iso,
    read_runs,
    resolve_series,
    run_headers,
    update_run,
)
from evocov_core.compute.provenance import git_state
from evocov_core.fitting.fits import DaskExecutor, ProcessExecutor, SerialExecutor, Task, run_task
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitStatus
from evocov_core.language.grammar import get_grammar
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose
from evocov_core.language.psd import PSDConfig
from evocov_core.searches import SearchConfig
from evocov_core.searches.variation import VariationConfig, random_kernel

__all__ = ["fixed_kernels", "profile_breakdown", "scaling"]

#: (category, file suffix, function names) for the profile breakdown.
PROFILE_CATEGORIES = (
    ("linear algebra (Cholesky dpotrf, dpotri, dpotrs, dtrtrs)", (
        ("evocov_core/fitting/gp.py", "factorize"), ("evocov_core/fitting/gp.py", "_raw_inverse"),
        ("evocov_core/fitting/gp.py", "solve"), ("scipy/linalg/_basic.py", "solve_triangular"))),
    ("building K and dK (evaluate._forward, _backward, Toeplitz expand/reduce)", (
        ("evocov_core/language/evaluate.py", "_forward"), ("evocov_core/language/evaluate.py", "_backward"),
        ("evocov_core/language/inputs.py", "expand"), ("evocov_core/language/inputs.py", "reduce"))),
)


def fixed_kernels(count: int, seed: int = 0) -> list[Kernel]:
    """``count`` random kernels (depth 3–8, reading x, PSD-checked) from ``seed``, then SE + PER×SE."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    cfg = VariationConfig(require_input=True, psd=PSDConfig(w=12))
    grammar = get_grammar(20)
    out = []
    seen: set[str] = set()
    while len(out) < count:
        k = random_kernel(grammar, rng, 3, 8, cfg)[0]
        if k.canonical in seen or "x" not in k.tokens:
            continue
        seen.add(k.canonical)
        out.append(k)
    return [*out, compose(["+", "SE", ["*", "PER", "SE"]])]


def _fit_all(kernels: list[Kernel], data: FitData, seed: int) -> list[tuple[float, float, int, FitStatus]]:
    cfg = SearchConfig().optim
    out = []
    for i, k in enumerate(kernels):
        t0, c0 = time.perf_counter(), time.process_time()
        fit = run_task(data, cfg, Task(k.tokens, (seed, 0, i)))
        out.append((time.perf_counter() - t0, time.process_time() - c0, fit.n_evals, fit.status))
    return out


def profile_breakdown(kernels: list[Kernel], data: FitData, seed: int = 0) -> tuple[float, list[tuple[str, float]]]:
    """Profile serial fits of ``kernels``; total seconds and (category, seconds) pairs (rest last)."""
    cfg = SearchConfig().optim
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for i, k in enumerate(kernels):
        run_task(data, cfg, Task(k.tokens, (seed, 1, i)))
    prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    parts = []
    for label, fns in PROFILE_CATEGORIES:
        s = 0.0
        for (fname, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.items():
            f = fname.replace("\\", "/")
            if any(f.endswith(suffix) and func == name for suffix, name in fns):
                s += ct
        parts.append((label, s))
    # A Cholesky that needs jitter rebuilds K inside ``factorize``: that time is in both
    # categories. Fractions are of max(wall, sum of categories), so they add up to 1.
    denom = max(total, sum(p for _, p in parts))
    parts.append(("the rest (Python: optimiser, metric glue, bookkeeping; profiler overhead)",
                  denom - sum(p for _, p in parts)))
    return denom, parts


def _timed_map(ex, tasks: list[Task]) -> tuple[float, float, float]:
    """Wall seconds of ``ex.map(tasks)``, this process's CPU seconds meanwhile, and the 1-min load before."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not Unix
        load = math.nan
    t0, c0 = time.perf_counter(), time.process_time()
    res = ex.map(tasks)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    if any(r is None for r in res):  # pragma: no cover - nothing asks to stop
        raise RuntimeError("an executor returned missing results")
    return dt, dc, load


def scaling(data_dir: Path, out: Path, *, kernels: int = 20, series: str | None = None,
            workers_series: str = "03-mauna", population: int = 40, reps: int = 2, seed: int = 0,
            dask: bool = True, argv: list[str] | None = None, log=None) -> Path:
    """Measure fit cost against n and workers, profile a population; write the folder's report."""
    from evocov_core.compute.setup import prepare_process

    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    prepare_process()
    if kernels < 1 or population < 2 or reps < 1:
        raise BenchError("need --kernels ≥ 1, --population ≥ 2 and --reps ≥ 1")
    data_dir, out = Path(data_dir).resolve(), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = resolve_series(data_dir, series)
    t_run = time.perf_counter()
    run_doc = {"command": command_line(argv), "argv": list(argv if argv is not None else sys.argv[1:]),
               "started": now_iso(), "machine": machine_info(),
               "git": git_state(), "kernels": kernels, "population": population,
               "reps": reps, "seed": seed, "workers_series": workers_series}
    run_index = append_run(out / "runs.json", run_doc)
    ks = fixed_kernels(kernels, seed)
    pd.DataFrame({"kernel": [k.prefix for k in ks], "infix": [k.infix for k in ks], "q": [k.q for k in ks]}) \
        .to_csv(out / "kernels.csv", index=False)
    # 1. against n
    rows = []
    for s in sorted(names, key=lambda s: load_series(data_dir, s).n_train):
        ds = load_series(data_dir, s)
        data = FitData.from_dataset(ds)
        res = _fit_all(ks, data, seed)
        walls = [r[0] for r in res]
        evals = sum(r[2] for r in res)
        rows.append({"series": s, "n_train": ds.n_train, "fits": len(res), "median_s_per_fit": statistics.median(walls),
                     "mean_s_per_fit": statistics.fmean(walls), "total_s": sum(walls),
                     "cpu_s": sum(r[1] for r in res), "evaluations": evals,
                     "ms_per_evaluation": 1000 * sum(walls) / max(evals, 1),
                     "failed": sum(r[3] != FitStatus.OK for r in res)})
        say(f"scaling {s} (n={ds.n_train}): median {rows[-1]['median_s_per_fit']:.3f} s/fit, "
            f"{rows[-1]['ms_per_evaluation']:.2f} ms/evaluation")
    by_n = pd.DataFrame(rows)
    by_n.to_csv(out / "scaling.csv", index=False, float_format="%.6g")
    # 2. against workers
    wname = resolve_series(data_dir, workers_series)[0]
    wds = load_series(data_dir, wname)
    wdata = FitData.from_dataset(wds)
    cfg = SearchConfig().optim
    pop = fixed_kernels(population, seed + 1)[:population]
    tasks = [Task(k.tokens, (seed, 2, i)) for i, k in enumerate(pop)]
    warm = [Task(compose("SE").tokens, (seed, 3, i)) for i in range(2)]
    makers = {"serial (this process)": lambda: SerialExecutor(wdata, cfg),
              "process pool, 1 worker": lambda: ProcessExecutor(wdata, cfg, workers=1),
              "process pool, 2 workers": lambda: ProcessExecutor(wdata, cfg, workers=2)}
    if dask:
        makers["Dask LocalCluster, 2 workers"] = lambda: DaskExecutor(wdata, cfg, workers=2)
    executors, startup = {}, {}
    for name, make in makers.items():
        t0 = time.perf_counter()
        try:
            ex = make()
            ex.map(warm)
        except Exception as exc:  # e.g. Dask missing: report and go on
            say(f"{name}: unavailable ({exc})")
            continue
        executors[name] = ex
        startup[name] = time.perf_counter() - t0
    times: dict[str, list[tuple[float, float, float]]] = {n: [] for n in executors}
    try:
        order = list(executors)
        for r in range(reps):
            for name in order[r % len(order):] + order[: r % len(order)]:
                times[name].append(_timed_map(executors[name], tasks))
                say(f"workers: {name} rep {r + 1}: {times[name][-1][0]:.1f} s for {len(tasks)} fits")
    finally:
        for ex in executors.values():
            ex.close()

    def med(v: list[tuple[float, float, float]], i: int = 0) -> float:
        return statistics.median(t[i] for t in v)

    ref = med(times.get("process pool, 1 worker") or next(iter(times.values())))
    wrows = [{"executor": n, "startup_s": startup[n], "median_s": med(v), "reps": len(v), "fits": len(tasks),
              "fits_per_s": len(tasks) / med(v), "speedup_vs_1_process": ref / med(v),
              "parent_cpu_s": med(v, 1), "load_before": med(v, 2)} for n, v in times.items()]
    by_w = pd.DataFrame(wrows)
    by_w.to_csv(out / "workers.csv", index=False, float_format="%.6g")
    # 3. profile
    total, parts = profile_breakdown(pop, wdata, seed)
    prof = pd.DataFrame([{"category": c, "seconds": s, "fraction": s / total if total else math.nan}
                         for c, s in parts])
    prof.to_csv(out / "profile.csv", index=False, float_format="%.6g")
    _figure(by_n, by_w, out / "scaling.html")
    run_doc.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t_run, 2), workers_series=wname,
                   n_workers_series=wds.n_train, profile_total_s=round(total, 3))
    update_run(out / "runs.json", run_index, run_doc)
    return scaling_report(out)


def _figure(by_n: pd.DataFrame, by_w: pd.DataFrame, path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("seconds per kernel fit against n_train",
                                                        "throughput against executor"))
    fig.add_trace(go.Scatter(x=by_n["n_train"], y=by_n["median_s_per_fit"], mode="markers+lines", name="median",
                             text=by_n["series"]), 1, 1)
    fig.add_trace(go.Scatter(x=by_n["n_train"], y=by_n["mean_s_per_fit"], mode="markers", name="mean",
                             text=by_n["series"]), 1, 1)
    if len(by_n):
        n0, t0 = float(by_n["n_train"].iloc[0]), float(by_n["median_s_per_fit"].iloc[0])
        xs = np.linspace(by_n["n_train"].min(), by_n["n_train"].max(), 20)
        fig.add_trace(go.Scatter(x=xs, y=t0 * (xs / n0) ** 2, mode="lines", name="∝ n² (from the smallest)",
                                 line=dict(dash="dot")), 1, 1)
    fig.add_trace(go.Bar(x=by_w["executor"], y=by_w["fits_per_s"], name="fits / s",
                         text=[f"{v:.2f}x" for v in by_w["speedup_vs_1_process"]]), 1, 2)
    fig.update_xaxes(type="log", title="n_train", row=1, col=1)
    fig.update_yaxes(type="log", title="seconds", row=1, col=1)
    fig.update_yaxes(title="kernel fits per second", row=1, col=2)
    fig.update_layout(height=480, title="Cost of a kernel fit")
    fig.write_html(path, include_plotlyjs="cdn")


def scaling_report(out: Path) -> Path:
    """``report.md`` of a scaling folder, from its files."""
    out = Path(out)
    runs = read_runs(out / "runs.json")
    lines = ["# Cost of a kernel fit: against n, against workers, and where the time goes", ""]
    lines += run_headers(runs[-1:], [f"started {r.get('started')}, finished {r.get('finished')}, wall "
                                     f"{fmt(r.get('wall_seconds'))} s; {r.get('kernels')} random kernels + SE + "
                                     f"PER×SE per series; population {r.get('population')} on "
                                     f"{r.get('workers_series')} (n = {r.get('n_workers_series')}), {r.get('reps')} "
                                     "repetitions" for r in runs[-1:]])
    lines += [doc_md((__doc__ or "").split("\n\n", 1)[1].strip()), ""]
    if (out / "scaling.csv").is_file():
        d = pd.read_csv(out / "scaling.csv")
        lines += ["## Seconds per kernel fit against n", "",
                  md_table(["series", "n_train", "fits", "median s/fit", "mean s/fit", "ms/evaluation",
                            "evaluations", "failed"],
                           [[r["series"], int(r["n_train"]), int(r["fits"]), fmt(r["median_s_per_fit"], 3),
                             fmt(r["mean_s_per_fit"], 3), fmt(r["ms_per_evaluation"], 3), int(r["evaluations"]),
                             int(r["failed"])] for r in d.to_dict("records")]), ""]
        if len(d) >= 2:
            b = np.polyfit(np.log(d["n_train"]), np.log(d["median_s_per_fit"]), 1)[0]
            be = np.polyfit(np.log(d["n_train"]), np.log(d["ms_per_evaluation"]), 1)[0]
            lines += [f"Fitted exponents: seconds per fit ∝ n^{b:.2f}; seconds per evaluation ∝ n^{be:.2f}.", ""]
    if (out / "workers.csv").is_file():
        w = pd.read_csv(out / "workers.csv")
        lines += ["## Throughput against executors (side by side, this run)", "",
                  md_table(["executor", "startup s", "median s", "fits", "fits/s", "speed-up vs 1 process",
                            "this process's CPU s", "load before"],
                           [[r["executor"], fmt(r["startup_s"], 3), fmt(r["median_s"], 3), int(r["fits"]),
                             fmt(r["fits_per_s"], 3), f"{r['speedup_vs_1_process']:.2f}x",
                             fmt(r.get("parent_cpu_s"), 3), fmt(r.get("load_before"), 3)]
                            for r in w.to_dict("records")]), "",
                  "The machine is shared: other processes' load (1-minute load average before each "
                  "measurement; 2 = both cores busy) changes these ratios from run to run (PERF_NOTES.md "
                  "measured 0.9–1.4x for 2 processes). \"This process's CPU\": the coordinating process "
                  "(serial: the fits themselves; pools: bookkeeping; Dask: also the local scheduler).", ""]
    if (out / "profile.csv").is_file():
        p = pd.read_csv(out / "profile.csv")
        lines += ["## Where the time goes (cProfile, serial fits of the population)", "",
                  md_table(["category", "seconds", "fraction"],
                           [[r["category"], fmt(r["seconds"], 3), f"{100 * r['fraction']:.1f} %"]
                            for r in p.to_dict("records")]), ""]
    lines += ["Plot: [scaling.html](scaling.html). Data: `scaling.csv`, `workers.csv`, `profile.csv`, `kernels.csv`.",
              ""]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
