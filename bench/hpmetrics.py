"""``bench metrics``: the hyperparameter-metric experiment (paper section 6.3, Table 4).

For each series, the published GPSS **structure** (``library.GPSS_PUBLISHED`` via
``compose``; values not used) is optimised under each of the five metrics (``lml``,
``loocv``, ``posterior_lml``, ``sopl``, ``rmse``) from random starts, K trials, and the
mean test RMSE per metric is reported beside the paper's Table 4.

``--method paper``: Powell with ``ref_fun_call = 5000`` for every metric (the paper:
"stops when 5000 samples have been taken", scaled by 350²/n² as everywhere in the paper).
``--method default``: our default optimiser (``OptimConfig(metric=m)`` with the search
defaults: L-BFGS-B with screened starts for lml and loocv, Powell with ref_fun_call 300 for
the others).

Seeds: trial k draws its starts from ``numpy.random.default_rng(SeedSequence([k]))``, the
same for every metric, so within a trial all five metrics start from the same random point
(starts drawn by slot role, ``init="roles"``, unless ``--init paper``).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import (
    BenchError,
    ResultFile,
    TrialStatus,
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
    run_jobs,
    update_run,
)
from bench.report import PAPER_TABLE4, TABLE4_METRICS
from evocov_core.compute.provenance import git_state
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import METRIC_LABELS, METRICS, FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel

__all__ = ["hp_metrics", "metrics_report", "optim_config"]

COLUMNS = ["series", "metric", "trial", "method", "init", "status", "test_rmse", "metric_value", "lml", "n_evals",
           "seconds", "theta", "log_noise", "reason"]
KEY = ["series", "metric", "trial", "method", "init"]


def optim_config(metric: str, method: str, init: str = "roles") -> OptimConfig:
    """The optimiser settings of the experiment for one metric."""
    from evocov_core.searches import SearchConfig

    if method == "paper":
        return OptimConfig(metric=metric, method="powell", ref_fun_call=5000, init=init)
    if method == "default":
        c = SearchConfig(metric=metric, init=init)
        return c.optim
    raise BenchError(f"--method must be 'paper' or 'default', got {method!r}")


@dataclass(frozen=True)
class MetricJob:
    """One fit of the experiment (picklable)."""

    series: str
    metric: str
    trial: int
    method: str
    init: str
    dataset: Dataset


def run_metric_job(job: MetricJob) -> dict:
    """Fit the published GPSS structure of ``job.series`` under ``job.metric`` (never raises)."""
    from evocov_core.compute.setup import prepare_process
    from evocov_core.language.library import GPSS_PUBLISHED, compose

    prepare_process()
    row = {"series": job.series, "metric": job.metric, "trial": job.trial, "method": job.method, "init": job.init}
    t0 = time.perf_counter()
    try:
        kernel = compose(GPSS_PUBLISHED[job.series])
        cfg = optim_config(job.metric, job.method, job.init)
        data = FitData.from_dataset(job.dataset)
        fit = fit_kernel(kernel, data, cfg, np.random.default_rng(np.random.SeedSequence([job.trial])))
        row.update(status=fit.status, test_rmse=fit.test_rmse, metric_value=fit.metric_value, lml=fit.lml,
                   n_evals=fit.n_evals, theta=[round(t, 6) for t in fit.theta],
                   log_noise=fit.log_noise, reason=fit.reason)
    except Exception as exc:  # recorded, rerun on resume
        row.update(status=TrialStatus.ERROR, reason=f"{type(exc).__name__}: {exc}"[:500])
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def hp_metrics(data_dir: Path, out: Path, *, trials: int, series: str | None = None, method: str = "paper",
               init: str = "roles", workers: int | None = None, scheduler: str | None = None,
               argv: list[str] | None = None, log=None) -> Path:
    """Run (or resume) the metric experiment into ``out``; returns the report path."""
    from evocov_core.language.library import GPSS_PUBLISHED

    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if trials < 1:
        raise BenchError("--trials must be at least 1")
    optim_config("lml", method, init)  # validates
    data_dir, out = Path(data_dir).resolve(), Path(out)
    names = [s for s in resolve_series(data_dir, series) if s in GPSS_PUBLISHED]
    out.mkdir(parents=True, exist_ok=True)
    rf = ResultFile(out / "metrics.csv", COLUMNS, KEY)
    done = rf.keys(lambda r: r.get("status") != TrialStatus.ERROR)
    jobs = []
    for s in names:
        ds = load_series(data_dir, s)
        for m in METRICS:
            for k in range(trials):
                if (s, m, k, method, init) not in done:
                    jobs.append(MetricJob(s, m, k, method, init, ds))
    jobs.sort(key=lambda j: -j.dataset.n_train)
    run_doc = {"command": command_line(argv), "argv": list(argv if argv is not None else sys.argv[1:]),
               "started": now_iso(), "machine": machine_info(),
               "git": git_state(), "trials": trials, "method": method, "init": init,
               "series": names, "jobs": len(jobs)}
    say(f"bench metrics: {len(jobs)} fits to run ({len(names)} series × {len(METRICS)} metrics × {trials} trials, "
        f"method {method})")
    t0 = time.perf_counter()
    run_index = append_run(out / "runs.json", run_doc)
    count = [0]

    def on_result(job: MetricJob, row: dict) -> None:
        rf.append(row)
        count[0] += 1
        say(f"[{count[0]}/{len(jobs)}] {job.series} {job.metric} trial {job.trial}: {row['status']} "
            f"test RMSE {fmt(row.get('test_rmse'))} ({row['seconds']:.1f} s)")

    try:
        run_jobs(run_metric_job, jobs, workers=workers, scheduler=scheduler, on_result=on_result, log=say)
    finally:
        run_doc.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t0, 2), fits_run=count[0])
        update_run(out / "runs.json", run_index, run_doc)
    return metrics_report(out)


def table4(rows: pd.DataFrame, method: str | None = None) -> pd.DataFrame:
    """Mean test RMSE per series and metric (ours), beside the paper's Table 4."""
    ok = rows[rows["status"] == TrialStatus.OK].copy()
    if method is not None:
        ok = ok[ok["method"] == method]
    ok["test_rmse"] = pd.to_numeric(ok["test_rmse"], errors="coerce")
    ours = ok.pivot_table(index="series", columns="metric", values="test_rmse", aggfunc="mean")
    ours = ours.reindex(columns=list(METRICS))
    ours.columns = [f"ours {c}" for c in ours.columns]
    paper = pd.DataFrame({f"paper {m}": {s: v[j] for s, v in PAPER_TABLE4.items()}
                          for j, m in enumerate(TABLE4_METRICS)})
    t = ours.join(paper, how="left")
    t.index.name = "series"
    return t


def metrics_report(out: Path) -> Path:
    """Write ``table4.csv`` and ``report.md`` of a metric-experiment folder from its files."""
    out = Path(out)
    runs = read_runs(out / "runs.json")
    rows = ResultFile(out / "metrics.csv", COLUMNS, KEY).read()
    lines = ["# Hyperparameter metrics on the published GPSS structures (paper section 6.3, Table 4)", ""]
    lines += run_headers(runs, [f"started {r.get('started')}, finished {r.get('finished', '(interrupted)')}, wall "
                                f"{fmt(r.get('wall_seconds'))} s, fits run {r.get('fits_run', '?')}; method "
                                f"{r.get('method')}, init {r.get('init')}" for r in runs])
    lines += [doc_md((__doc__ or "").split("\n\n", 1)[1].strip()), ""]
    if len(rows):
        for method in sorted(rows["method"].dropna().unique()):
            t = table4(rows, method)
            t.to_csv(out / f"table4_{method}.csv", float_format="%.6g")
            ours_cols = [f"ours {m}" for m in METRICS]
            paper_cols = [f"paper {m}" for m in TABLE4_METRICS]

            def row_cells(vals: list[float]) -> list[str]:
                finite = [v for v in vals if v is not None and math.isfinite(v)]
                best = min(finite) if finite else None
                return [("**" + fmt(v) + "**") if v == best and best is not None else fmt(v) for v in vals]

            body = []
            for s in t.index:
                body.append([s, *row_cells([t.at[s, c] for c in ours_cols]),
                             *row_cells([t.at[s, c] for c in paper_cols])])
            n_trials = rows[rows["method"] == method].groupby(["series", "metric"]).size()
            wins = _wins(t, ours_cols), _wins(t, paper_cols)
            lines += [f"## Table 4, method `{method}`: mean test RMSE per metric (bold: best of the row's block)",
                      "", f"Trials per cell: {int(n_trials.min()) if len(n_trials) else 0}–"
                      f"{int(n_trials.max()) if len(n_trials) else 0}. Left: ours; right: the paper's Table 4.", "",
                      md_table(["series", *(f"ours {METRIC_LABELS[m]}" for m in METRICS),
                                *(f"paper {METRIC_LABELS[m]}" for m in TABLE4_METRICS)], body), "",
                      "Series won per metric (ours / paper, over the series shown): "
                      + ", ".join(f"{METRIC_LABELS[m]} {wins[0].get(f'ours {m}', 0)} / "
                                  f"{wins[1].get(f'paper {m}', 0)}" for m in METRICS), ""]
        failed = rows[rows["status"] != TrialStatus.OK]
        if len(failed):
            lines += [f"{len(failed)} fit(s) did not end ok: "
                      + "; ".join(f"{r['series']} {r['metric']} trial {r['trial']}: {r['status']}"
                                  for r in failed.head(10).to_dict("records")), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _wins(t: pd.DataFrame, cols: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in t.index:
        vals = t.loc[s, cols].astype(float)
        if vals.notna().any():
            out[str(vals.idxmin())] = out.get(str(vals.idxmin()), 0) + 1
    return out
