"""``bench reproduce`` and ``bench report``: the paper's Tables 5 and 6 and Figure 5 on the 13 TSDL series.

Every algorithm runs on every series with the published split, ``K`` seeded trials each
(**the seed of trial k is k**, so trial 0 of every algorithm and series uses seed 0).
Each trial is one serial search (``SerialExecutor``) in one worker; trials run in a
process pool or on a Dask cluster, and none depends on where or when it ran.

The output folder holds::

    run.json      every invocation (argv, start, end, wall time, machine), the budget and its settings
    trials.csv    one row per finished trial (appended as each ends)
    kernels/      one kernel file per successful trial (evocov_core.runs.kernel_file format)
    table5.csv    standardised test RMSE (each RMSE / the best on its series over every method shown)
    table5_raw.csv, table6.csv, figure5.html, report.md

A trial is done when its row says ``ok`` and its kernel file exists (or the search ran but
fitted nothing, ``no_kernel``); rows with ``error`` are run again. Rerunning the same
command therefore only runs what is missing.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.budget import ALGORITHMS, budget_config, predicted_core_seconds, settings_summary
from bench.common import (
    BenchError,
    TrialStatus,
    command_line,
    fmt,
    load_series,
    machine_info,
    now_iso,
    resolve_series,
    run_jobs,
    write_json,
    write_text_atomic,
)
from bench.report import kernel_path, load_run, report, trials_file
from evocov_core.compute.provenance import git_state
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.searches import SearchConfig, run_search
from evocov_core.searches.config import current_settings

__all__ = ["TrialSpec", "reproduce", "run_trial"]

@dataclass(frozen=True)
class TrialSpec:
    """Everything a worker needs to run one trial (picklable)."""

    series: str
    algorithm: str
    seed: int
    budget: str
    config: dict
    dataset: Dataset
    cost: float = 0.0  # relative cost estimate, for scheduling the longest first

    @property
    def key(self) -> tuple:
        """``(series, algorithm, seed, budget)``: the trial's identity in ``trials.csv``."""
        return (self.series, self.algorithm, self.seed, self.budget)


def run_trial(spec: TrialSpec) -> dict:
    """Run one trial serially; returns ``{"row": ..., "kernel": kernel-file dict or None}``.

    Never raises: an exception becomes a row with status ``error`` and its message.
    """
    from evocov_core.compute.setup import prepare_process
    from evocov_core.fitting.fits import SerialExecutor
    from evocov_core.runs.kernel_file import kernel_file_dict

    prepare_process()
    t0, c0 = time.perf_counter(), time.process_time()
    ds = spec.dataset
    row: dict = {"series": spec.series, "algorithm": spec.algorithm, "seed": spec.seed, "budget": spec.budget,
                 "n_train": ds.n_train, "n_test": ds.n_test, "host": socket.gethostname(), "pid": os.getpid(),
                 "settings": {k: v for k, v in spec.config.items() if k != "base_kernels"}}
    doc = None
    try:
        config = SearchConfig.from_dict(spec.config)
        data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
        with SerialExecutor(data, config.optim) as ex:
            result = run_search(data, config, seed=spec.seed, executor=ex)
        best = result.best
        row.update(n_evaluations=result.n_evaluations, restarts=result.restarts)
        if best is None or not best.ok:
            row.update(status=TrialStatus.NO_KERNEL, reason="no kernel could be fitted")
        else:
            row.update(status=TrialStatus.OK, test_rmse=best.test_rmse, q=best.q, bic=best.bic, lml=best.lml,
                       metric=best.metric, metric_value=best.metric_value, expression=best.kernel.prefix,
                       infix=best.kernel.infix,
                       kernel_file=kernel_path(spec.series, spec.algorithm, spec.budget, spec.seed))
            doc = kernel_file_dict(best, ds.norm, dataset=spec.series, n_test=ds.n_test, n_train=ds.n_train,
                                   test_fraction=ds.test_fraction, calibration=result.calibration,
                                   extra_scores={"algorithm": spec.algorithm, "seed": spec.seed,
                                                 "budget": spec.budget, "evaluations": result.n_evaluations,
                                                 "seconds": round(time.perf_counter() - t0, 3)})
    except Exception as exc:  # one failed trial must not stop the benchmark
        row.update(status=TrialStatus.ERROR, reason=f"{type(exc).__name__}: {exc}"[:500])
    row.update(wall_seconds=round(time.perf_counter() - t0, 3), cpu_seconds=round(time.process_time() - c0, 3),
               finished=now_iso())
    return {"row": row, "kernel": doc}


# --- the command ---------------------------------------------------------------------------------


def _parse_algorithms(text: str) -> list[str]:
    keys = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in keys if a not in ALGORITHMS]
    if bad or not keys:
        raise BenchError(f"unknown algorithm(s) {', '.join(bad) or '(none)'}; choose from {', '.join(ALGORITHMS)}")
    return list(dict.fromkeys(keys))


def reproduce(data_dir: Path, out: Path, *, algorithms: str, trials: int, budget: str, workers: int | None,
              scheduler: str | None, series: str | None, quick_scale: float = 1.0,
              argv: list[str] | None = None, log=None) -> dict:
    """Run (or resume) the benchmark into ``out``; returns the updated ``run.json`` content.

    Parameters
    ----------
    data_dir : Path
        ``../shared/data/tsdl``.
    out : Path
        Output folder (created; reused to resume).
    algorithms : str
        Comma-separated keys of :data:`~bench.budget.ALGORITHMS`.
    trials : int
        K: trials ``0 … K−1`` (seed = trial index).
    budget : {"quick", "paper"}
    workers : int or None
        Local processes (default every core), or Dask workers with ``scheduler="local"``.
    scheduler : str or None
        Dask scheduler address or ``local``.
    series : str or None
        Comma-separated subset of the series.
    quick_scale : float
        ``f`` of the quick budget rule (:mod:`bench.budget`).
    """
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if trials < 1:
        raise BenchError("--trials must be at least 1")
    data_dir, out = Path(data_dir).resolve(), Path(out)
    keys = _parse_algorithms(algorithms)
    names = resolve_series(data_dir, series)
    datasets = {s: load_series(data_dir, s) for s in names}
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernels").mkdir(exist_ok=True)
    run = load_run(out)
    if run and (run.get("budget") != budget or float(run.get("quick_scale", 1.0)) != float(quick_scale)):
        raise BenchError(f"{out} holds a run with budget {run.get('budget')!r} and quick scale "
                         f"{run.get('quick_scale')}; use another --out for budget {budget!r}, scale {quick_scale}")
    configs = {(s, k): budget_config(k, budget, datasets[s].n_train, factor=quick_scale) for s in names for k in keys}
    settings = run.get("settings", {})
    defaults = SearchConfig().to_dict()
    for (s, k), cfg in configs.items():
        before = settings.get(s, {}).get(k, {}).get("config")
        if before is not None:
            # A setting renamed since, or added later at its default, leaves the search as it was.
            before = current_settings(before)
            before = {**{a: v for a, v in defaults.items() if a not in before and cfg.to_dict()[a] == v}, **before}
        if before is not None and before != cfg.to_dict():
            diff = sorted(a for a in set(before) | set(cfg.to_dict()) if before.get(a) != cfg.to_dict().get(a))
            raise BenchError(f"{out} was made with other settings for {k} on {s} (differing: {', '.join(diff)}; "
                             "did preset('quick') change?); use another --out")
        settings.setdefault(s, {})[k] = {**settings_summary(cfg, datasets[s].n_train, k), "config": cfg.to_dict()}
    invocation = {"argv": list(argv if argv is not None else sys.argv[1:]), "command": command_line(argv),
                  "started": now_iso(), "algorithms": keys, "series": names, "trials": trials,
                  "workers": workers, "scheduler": scheduler, "machine": machine_info(), "git": git_state()}
    run.update(budget=budget, quick_scale=quick_scale, data_dir=str(data_dir), settings=settings)
    run.setdefault("invocations", []).append(invocation)
    write_json(out / "run.json", run)

    rf = trials_file(out)

    def done(row: dict) -> bool:
        if row.get("status") == TrialStatus.NO_KERNEL:
            return True
        return row.get("status") == TrialStatus.OK and (out / str(row.get("kernel_file"))).is_file()

    finished = rf.keys(done)
    specs = []
    for s in names:
        n = datasets[s].n_train
        for k in keys:
            cfg = configs[(s, k)]
            cost = predicted_core_seconds(k, cfg, n)
            for seed in range(trials):
                spec = TrialSpec(s, k, seed, budget, cfg.to_dict(), datasets[s], cost)
                if spec.key not in finished:
                    specs.append(spec)
    specs.sort(key=lambda sp: -sp.cost)  # longest first: better packing of the pool
    total = len(specs)
    skipped = len(names) * len(keys) * trials - total
    say(f"bench reproduce: {total} trials to run, {skipped} already done, budget {budget}, out {out}")
    t0 = time.perf_counter()
    count = [0]

    def on_result(spec: TrialSpec, res: dict) -> None:
        row, doc = res["row"], res["kernel"]
        if doc is not None:
            from evocov_core.runs.kernel_file import dump_kernel_file

            write_text_atomic(out / row["kernel_file"], dump_kernel_file(doc))
        rf.append(row)
        count[0] += 1
        rmse = fmt(row.get("test_rmse"))
        say(f"[{count[0]}/{total}] {spec.series} {spec.algorithm} seed {spec.seed}: {row['status']} "
            f"rmse={rmse} q={row.get('q', '-')} {row['wall_seconds']:.1f}s"
            + (f" ({row.get('reason')})" if row["status"] != TrialStatus.OK else ""))

    try:
        run_jobs(run_trial, specs, workers=workers, scheduler=scheduler, on_result=on_result, log=say)
    finally:
        invocation.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t0, 2),
                          trials_run=count[0], trials_skipped=skipped)
        write_json(out / "run.json", run)
    report(out, data_dir=data_dir)
    return run


# --- tables ----------------------------------------------------------------------------------------
