"""``bench reproduce`` and ``bench report``: the paper's Tables 5 and 6 and Figure 5 on the 13 TSDL series.

Every algorithm runs on every series with the published split, ``K`` seeded trials each
(**the seed of trial k is k**, so trial 0 of every algorithm and series uses seed 0).
Each trial is one serial search (``SerialExecutor``) in one worker; trials run in a
process pool or on a Dask cluster, and none depends on where or when it ran.

The output folder holds::

    run.json      every invocation (argv, start, end, wall time, machine), the budget and its settings
    trials.csv    one row per finished trial (appended as each ends)
    kernels/      one kernel file per successful trial (evocov_core.kernel_file format)
    table5.csv    standardised test RMSE (each RMSE / the best on its series over every method shown)
    table5_raw.csv, table6.csv, figure5.html, report.md

A trial is done when its row says ``ok`` and its kernel file exists (or the search ran but
fitted nothing, ``no_kernel``); rows with ``error`` are run again. Rerunning the same
command therefore only runs what is missing.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..data import Dataset
from ..metrics import FitData
from ..search import SearchConfig, run_search
from .budget import ALGORITHMS, budget_config, predicted_core_seconds, settings_summary
from .common import (
    BenchError,
    ResultFile,
    command_line,
    doc_md,
    fmt,
    load_series,
    machine_info,
    md_table,
    now_iso,
    resolve_series,
    run_jobs,
    write_json,
    write_text_atomic,
)
from .paper import (
    PAPER_TABLE6,
    PAPER_TABLE6_COLUMNS,
    PUBLISHED_METHODS,
    load_evocov_paper,
    load_published,
)

__all__ = ["TRIAL_COLUMNS", "TrialSpec", "report", "reproduce", "run_trial", "table5", "table6"]

TRIAL_COLUMNS = [
    "series", "algorithm", "seed", "budget", "status", "test_rmse", "q", "bic", "lml", "metric", "metric_value",
    "wall_seconds", "cpu_seconds", "n_evaluations", "restarts", "n_train", "n_test", "expression", "infix",
    "kernel_file", "settings", "host", "pid", "finished", "reason",
]
TRIAL_KEY = ["series", "algorithm", "seed", "budget"]

#: Short column labels for the markdown tables (the CSVs keep the long ones).
SHORT = {
    "ABCD-accuracy": "ABCD acc", "ABCD-interpretability": "ABCD int", "Eureqa": "Eureqa",
    "paper EvoCov LML best": "P LML best", "paper EvoCov LML mean": "P LML mean",
    "paper EvoCov SoPL best": "P SoPL best", "paper EvoCov SoPL mean": "P SoPL mean",
    "paper Random Search mean": "P RS mean", "paper GWTF mean": "P GWTF mean",
}
OUR_SHORT = {"evocov-lml": "LML", "evocov-sopl": "SoPL", "random": "RS", "gwtf": "GWTF", "gpss": "GPSS*"}


def trials_file(out: Path) -> ResultFile:
    """The ``trials.csv`` of a folder."""
    return ResultFile(Path(out) / "trials.csv", TRIAL_COLUMNS, TRIAL_KEY)


def kernel_path(series: str, algorithm: str, budget: str, seed: int) -> str:
    """Kernel file of a trial, relative to the output folder."""
    return f"kernels/{series}__{algorithm}__{budget}__seed{seed}.json"


# --- one trial ---------------------------------------------------------------------------------


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
    from ..evaluate import prepare_process
    from ..kernel_file import kernel_file_dict
    from ..parallel import SerialExecutor

    prepare_process()
    t0, c0 = time.perf_counter(), time.process_time()
    ds = spec.dataset
    row: dict = {"series": spec.series, "algorithm": spec.algorithm, "seed": spec.seed, "budget": spec.budget,
                 "n_train": ds.n_train, "n_test": ds.n_test, "host": socket.gethostname(), "pid": os.getpid(),
                 "settings": {k: v for k, v in spec.config.items() if k != "base_kernels"}}
    doc = None
    try:
        config = SearchConfig.from_dict(spec.config)
        data = FitData.from_dataset(ds, split_fraction=config.metric_split)
        with SerialExecutor(data, config.optim) as ex:
            result = run_search(data, config, seed=spec.seed, executor=ex)
        best = result.best
        row.update(n_evaluations=result.n_evaluations, restarts=result.restarts)
        if best is None or not best.ok:
            row.update(status="no_kernel", reason="no kernel could be fitted")
        else:
            row.update(status="ok", test_rmse=best.test_rmse, q=best.q, bic=best.bic, lml=best.lml,
                       metric=best.metric, metric_value=best.metric_value, expression=best.kernel.prefix,
                       infix=best.kernel.infix,
                       kernel_file=kernel_path(spec.series, spec.algorithm, spec.budget, spec.seed))
            doc = kernel_file_dict(best, ds.norm, dataset=spec.series, n_test=ds.n_test,
                                   test_fraction=ds.test_fraction,
                                   extra_scores={"algorithm": spec.algorithm, "seed": spec.seed,
                                                 "budget": spec.budget, "evaluations": result.n_evaluations,
                                                 "seconds": round(time.perf_counter() - t0, 3)})
    except Exception as exc:  # one failed trial must not stop the benchmark
        row.update(status="error", reason=f"{type(exc).__name__}: {exc}"[:500])
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


def _load_run(out: Path) -> dict:
    import json

    p = out / "run.json"
    if not p.is_file():
        return {}
    return json.loads(p.read_text(encoding="utf-8"))


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
        Comma-separated keys of :data:`~evocov_core.benchmarks.budget.ALGORITHMS`.
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
        ``f`` of the quick budget rule (:mod:`evocov_core.benchmarks.budget`).
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
    run = _load_run(out)
    if run and (run.get("budget") != budget or float(run.get("quick_scale", 1.0)) != float(quick_scale)):
        raise BenchError(f"{out} holds a run with budget {run.get('budget')!r} and quick scale "
                         f"{run.get('quick_scale')}; use another --out for budget {budget!r}, scale {quick_scale}")
    configs = {(s, k): budget_config(k, budget, datasets[s].n_train, factor=quick_scale) for s in names for k in keys}
    settings = run.get("settings", {})
    for (s, k), cfg in configs.items():
        before = settings.get(s, {}).get(k, {}).get("config")
        if before is not None and before != cfg.to_dict():
            diff = sorted(a for a in set(before) | set(cfg.to_dict()) if before.get(a) != cfg.to_dict().get(a))
            raise BenchError(f"{out} was made with other settings for {k} on {s} (differing: {', '.join(diff)}; "
                             "did preset('quick') change?); use another --out")
        settings.setdefault(s, {})[k] = {**settings_summary(cfg, datasets[s].n_train, k), "config": cfg.to_dict()}
    invocation = {"argv": list(argv if argv is not None else sys.argv[1:]), "command": command_line(argv),
                  "started": now_iso(), "algorithms": keys, "series": names, "trials": trials,
                  "workers": workers, "scheduler": scheduler, "machine": machine_info()}
    run.update(budget=budget, quick_scale=quick_scale, data_dir=str(data_dir), settings=settings)
    run.setdefault("invocations", []).append(invocation)
    write_json(out / "run.json", run)

    rf = trials_file(out)

    def done(row: dict) -> bool:
        if row.get("status") == "no_kernel":
            return True
        return row.get("status") == "ok" and (out / str(row.get("kernel_file"))).is_file()

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
            from ..kernel_file import dump_kernel_file

            write_text_atomic(out / row["kernel_file"], dump_kernel_file(doc))
        rf.append(row)
        count[0] += 1
        rmse = fmt(row.get("test_rmse"))
        say(f"[{count[0]}/{total}] {spec.series} {spec.algorithm} seed {spec.seed}: {row['status']} "
            f"rmse={rmse} q={row.get('q', '-')} {row['wall_seconds']:.1f}s"
            + (f" ({row.get('reason')})" if row["status"] != "ok" else ""))

    try:
        run_jobs(run_trial, specs, workers=workers, scheduler=scheduler, on_result=on_result, log=say)
    finally:
        invocation.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t0, 2),
                          trials_run=count[0], trials_skipped=skipped)
        write_json(out / "run.json", run)
    report(out, data_dir=data_dir)
    return run


# --- tables ----------------------------------------------------------------------------------------


def _ours(trials: pd.DataFrame) -> dict[str, pd.DataFrame]:
    ok = trials[trials["status"] == "ok"].copy()
    ok["test_rmse"] = pd.to_numeric(ok["test_rmse"], errors="coerce")
    ok["q"] = pd.to_numeric(ok["q"], errors="coerce")
    return {k: ok[ok["algorithm"] == k] for k in ALGORITHMS if (ok["algorithm"] == k).any()}


def table5(trials: pd.DataFrame, data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Raw and standardised test RMSE (series × method), with Mean and Median rows (standardised).

    Methods: the published ones (``published_rmse.csv``), the paper's own algorithms
    (``evocov_paper_rmse.csv``) and ours (best and mean over trials). Each RMSE is divided
    by the smallest RMSE on its series over all these methods, so each row's minimum is 1.
    Only series with at least one of our trials are shown.
    """
    ours = _ours(trials)
    series = sorted({s for df in ours.values() for s in df["series"]})
    pub = load_published(data_dir)
    paper = load_evocov_paper(data_dir)
    raw = pd.DataFrame(index=pd.Index(series, name="series"))
    for m in PUBLISHED_METHODS:
        if m in pub.columns:
            raw[m] = pub[m].reindex(series)
    for c in paper.columns:
        raw[c] = paper[c].reindex(series)
    for k, df in ours.items():
        g = df.groupby("series")["test_rmse"]
        raw[f"ours {k} best"] = g.min().reindex(series)
        raw[f"ours {k} mean"] = g.mean().reindex(series)
    best = raw.min(axis=1, skipna=True)
    std = raw.div(best, axis=0)
    std.loc["Mean"] = std.loc[series].mean(skipna=True)
    std.loc["Median"] = std.loc[series].median(skipna=True)
    return raw, std


def table6(trials: pd.DataFrame) -> pd.DataFrame:
    """Hyperparameter counts q (noise included): the paper's Table 6, our GPSS-kernel count, ours (mean)."""
    from ..library import GPSS_PUBLISHED, compose

    ours = _ours(trials)
    series = sorted({s for df in ours.values() for s in df["series"]})
    t = pd.DataFrame(index=pd.Index(series, name="series"))
    for j, c in enumerate(PAPER_TABLE6_COLUMNS):
        t[f"paper {c}"] = [PAPER_TABLE6.get(s, (None,) * 13)[j] for s in series]
    t["GPSS kernel, our q"] = [compose(GPSS_PUBLISHED[s]).q if s in GPSS_PUBLISHED else None for s in series]
    for k, df in ours.items():
        t[f"ours {k} mean"] = df.groupby("series")["q"].mean().reindex(series)
    t = t.apply(pd.to_numeric, errors="coerce").astype(float)
    t.loc["Mean"] = t.loc[series].mean(skipna=True)
    return t


def figure5(trials: pd.DataFrame, raw: pd.DataFrame, path: Path) -> None:
    """The paper's Figure 5: standardised RMSE per method, one point per series (ours: per trial)."""
    import plotly.graph_objects as go

    best = raw.min(axis=1, skipna=True)
    fig = go.Figure()
    for col in raw.columns:
        if col.startswith("ours "):
            continue
        v = (raw[col] / best).dropna()
        fig.add_trace(go.Box(y=v.values, x=[col] * len(v), name=col, boxpoints="all", jitter=0.3,
                             text=list(v.index), hovertemplate="%{text}: %{y:.3f}<extra>" + col + "</extra>",
                             marker_color="#7f7f7f", showlegend=False))
    ok = _ours(trials)
    for k, df in ok.items():
        d = df[df["series"].isin(raw.index)]
        v = d["test_rmse"].to_numpy() / best.reindex(d["series"]).to_numpy()
        label = f"ours {ALGORITHMS[k].label}"
        txt = [f"{s} seed {int(e)}" for s, e in zip(d["series"], d["seed"], strict=True)]
        fig.add_trace(go.Box(y=v, x=[label] * len(v), name=label, boxpoints="all", jitter=0.3, text=txt,
                             hovertemplate="%{text}: %{y:.3f}<extra></extra>", marker_color="#1f77b4",
                             showlegend=False))
    fig.update_yaxes(type="log", title="standardised test RMSE (1 = best on the series)")
    fig.update_layout(title="Standardised RMSE per method (paper Figure 5); ours: every trial",
                      height=560, margin=dict(b=160))
    fig.write_html(path, include_plotlyjs="cdn")


# --- report -------------------------------------------------------------------------------------------


def _md_frame(df: pd.DataFrame, digits: int = 3, rename: dict | None = None, fixed: bool = True) -> str:
    cols = [rename.get(c, c) if rename else c for c in df.columns]

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return f"{v:.{digits}f}" if fixed else fmt(v, digits)

    rows = [[str(i), *(cell(v) for v in r)] for i, r in zip(df.index, df.itertuples(index=False), strict=True)]
    return md_table([df.index.name or "", *cols], rows)


def _short_names(cols: list[str]) -> dict[str, str]:
    out = {}
    for c in cols:
        if c.startswith("ours "):
            _, k, which = c.split(" ")
            out[c] = f"{OUR_SHORT.get(k, k)} {which}"
        elif c.startswith("paper ") and c[6:] in PAPER_TABLE6_COLUMNS:
            out[c] = c[6:].replace("Random Search", "RS").replace("Go With The First", "GWTF") \
                .replace("ABCD-accuracy", "ABCD acc").replace("ABCD-interpretability", "ABCD int") \
                .replace("EvoCov ", "")
        else:
            out[c] = SHORT.get(c, c)
    return out


def _estimate_section(out: Path) -> list[str]:
    import json

    p = out / "estimate.json"
    lines = ["## paper budget: estimated cost", ""]
    if not p.is_file():
        return [*lines, "Not measured for this folder: `python -m evocov_core bench estimate --data-dir DIR "
                "--budget paper --series 01-airline,03-mauna,06-internet --generations 2 --out THIS_FOLDER`.", ""]
    from .estimate import estimate_markdown

    return [*lines, estimate_markdown(json.loads(p.read_text(encoding="utf-8"))), ""]


def _invocation_walls(invs: list[dict], trials: pd.DataFrame) -> list[tuple[float, bool]]:
    """Wall seconds of each invocation, and whether it was interrupted.

    An interrupted invocation (no ``wall_seconds``: the process was killed) is counted from its
    start to the last trial that finished before the next invocation started (0 if none did).
    """
    finished = pd.to_datetime(trials["finished"] if "finished" in trials else pd.Series(dtype=str), utc=True,
                              errors="coerce")
    starts = [pd.to_datetime(i.get("started"), utc=True, errors="coerce") for i in invs]
    out = []
    for k, inv in enumerate(invs):
        if inv.get("wall_seconds") is not None:
            out.append((float(inv["wall_seconds"]), False))
            continue
        mask = finished >= starts[k]
        if k + 1 < len(invs) and not pd.isna(starts[k + 1]):
            mask &= finished < starts[k + 1]
        last = finished[mask].max() if mask.any() else None
        out.append(((last - starts[k]).total_seconds() if last is not None else 0.0, True))
    return out


def report(out: Path, *, data_dir: Path | None = None) -> Path:
    """Regenerate ``table5.csv``, ``table5_raw.csv``, ``table6.csv``, ``figure5.html`` and ``report.md``.

    Reads only the folder's files (and the published RMSE files of ``data_dir``, by default
    the one recorded in ``run.json``).
    """
    out = Path(out)
    run = _load_run(out)
    if not run:
        raise BenchError(f"{out} has no run.json: not a bench reproduce folder")
    data_dir = Path(data_dir or run.get("data_dir", ""))
    if not (data_dir / "published_rmse.csv").is_file():
        raise BenchError(f"published_rmse.csv not found in {data_dir}; pass --data-dir")
    trials = trials_file(out).read()
    lines = [f"# EvoCov benchmark on the 13 TSDL series: Tables 5, 6 and Figure 5 (budget `{run.get('budget')}`)",
             "", "Regenerate this report from the folder's files with "
             f"`python -m evocov_core bench report --out {out}`.", ""]
    invs = run.get("invocations", [])
    walls = _invocation_walls(invs, trials)
    lines += ["## Commands", ""]
    for inv, (wall, cut) in zip(invs, walls, strict=True):
        ended = (f"interrupted, last trial {wall:.0f} s after the start" if cut
                 else f"finished {inv.get('finished')}, wall {fmt(wall)} s")
        lines += ["```", inv.get("command", ""), "```",
                  f"started {inv.get('started')}, {ended}, trials run {inv.get('trials_run', '?')}, already done "
                  f"{inv.get('trials_skipped', '?')}, workers {inv.get('workers') or 'every core'}"
                  + (f", scheduler {inv['scheduler']}" if inv.get("scheduler") else ""), ""]
    total_wall = sum(w for w, _ in walls)
    n_cut = sum(cut for _, cut in walls)
    if invs:
        lines += ["## Machine", "", md_table(["", ""], list(invs[-1].get("machine", {}).items()), "ll"), ""]
    status = trials["status"].value_counts().to_dict() if len(trials) else {}
    cpu = pd.to_numeric(trials.get("cpu_seconds", pd.Series(dtype=float)), errors="coerce").sum()
    twall = pd.to_numeric(trials.get("wall_seconds", pd.Series(dtype=float)), errors="coerce").sum()
    lines += ["## Totals", "",
              f"- total wall time of the invocations: **{total_wall:.0f} s ({total_wall / 60:.1f} min)**"
              + (f" ({n_cut} interrupted invocation(s) counted from their start to their last finished trial)"
                 if n_cut else ""),
              f"- trials: {len(trials)} ({', '.join(f'{k} {v}' for k, v in status.items()) or 'none'}); seed of "
              "trial k = k",
              f"- sum of trial wall times {twall:.0f} s, of trial CPU times {cpu:.0f} s", ""]
    lines += _budget_section(run)
    if (trials["status"] == "ok").any() if len(trials) else False:
        raw, std = table5(trials, data_dir)
        raw.to_csv(out / "table5_raw.csv", float_format="%.6g")
        std.to_csv(out / "table5.csv", float_format="%.4f")
        t6 = table6(trials)
        t6.to_csv(out / "table6.csv", float_format="%.2f")
        figure5(trials, raw, out / "figure5.html")
        names = _short_names(list(raw.columns))
        lines += [
            "## Table 5: standardised test RMSE", "",
            "Each RMSE divided by the best RMSE on its series over **every column shown** (so each row's minimum "
            "is 1.000). Columns: the published methods from `published_rmse.csv` (ABCD acc/int = ABCD "
            "accuracy/interpretability, SP = SP-bic); **GPSS** is the internal 2014-03 rerun of gpss-research "
            "(`published_rmse.csv` marks it as not in the ABCD paper's table; the EvoCov paper's Table 5 does "
            "show it); ABCD-accuracy for births and wages comes from an older placeholder run (see "
            "`gpss_kernels.md`). `P …` = the EvoCov paper's own results (`evocov_paper_rmse.csv`: best/mean of "
            "10 trials). Ours: LML / SoPL = EvoCov with that metric, RS = Random Search, GWTF = Go With The "
            "First, GPSS* = our GPSS baseline; best and mean over our trials. Mean and Median rows are over the "
            "series shown.", "",
            _md_frame(std, 3, names), "",
            "## Test RMSE (original units)", "", _md_frame(raw.loc[[i for i in raw.index]], 4, names, fixed=False),
            "",
            "## Table 6: hyperparameters q (noise included)", "",
            "`paper …`: the paper's Table 6 (`tab:extrap_hp_count`), transcribed; `GPSS kernel, our q`: q of the "
            "published GPSS structure written in our grammar (equals the paper's GPSS column); ours: mean over "
            "trials of the best kernel's q.", "",
            _md_frame(t6, 1, {**_short_names(list(t6.columns)), "GPSS kernel, our q": "GPSS our q"}), "",
            "## Figure 5", "",
            "[figure5.html](figure5.html): standardised RMSE of every method (published and paper methods: one "
            "point per series; ours: one point per trial), log scale.", "",
        ]
        lines += _trial_list(trials, run)
    else:
        lines += ["No successful trial yet: no tables.", ""]
    lines += _estimate_section(out)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _budget_section(run: dict) -> list[str]:
    from .budget import __doc__ as rule

    budget = run.get("budget")
    lines = [f"## Budget `{budget}`", ""]
    if budget == "quick":
        text = rule.split("Budgets\n-------\n", 1)[-1].strip() if rule else ""
        text = doc_md(text)
        lines += [text, "", f"Quick scale f = {run.get('quick_scale', 1.0)}.", ""]
    else:
        lines += ["`preset(\"paper\", algorithm)`: the paper's section 6.2 settings (EvoCov N = G = 141, μ = 14; "
                  "Random Search 20000 kernels; GWTF 13 × 200; GPSS 10 levels; Powell ref_fun_call = 300).", ""]
    settings = run.get("settings", {})
    if settings:
        rows = []
        total = 0.0
        for s in sorted(settings):
            for k, v in settings[s].items():
                extra = ", ".join(f"{a}={b}" for a, b in v.items() if a not in ("config", "fits", "predicted_core_s"))
                pred = v.get("predicted_core_s")
                total += float(pred or 0)
                rows.append([s, k, extra, v.get("fits", ""), "-" if pred is None else pred])
        lines += ["Settings per series (fits: kernel fits per trial, GPSS: an upper bound; predicted: the cost "
                  "model's core-seconds per trial):", "",
                  md_table(["series", "algorithm", "settings", "fits", "predicted core-s"], rows, "lllrr"), "",
                  f"Predicted total for one trial of each: {total:.0f} core-seconds "
                  f"({total / 120:.1f} min on 2 idle cores).", ""]
    return lines


def _trial_list(trials: pd.DataFrame, run: dict) -> list[str]:
    settings = run.get("settings", {})
    rows = []
    for r in trials.sort_values(["series", "algorithm", "seed"]).to_dict("records"):
        infix = str(r.get("infix") or "")
        if isinstance(r.get("infix"), float):  # NaN from an empty cell
            infix = ""
        pred = settings.get(r["series"], {}).get(r["algorithm"], {}).get("predicted_core_s")
        rows.append([r["series"], r["algorithm"], int(r["seed"]), r["status"], fmt(r.get("test_rmse")),
                     fmt(r.get("q"), 3), fmt(r.get("wall_seconds"), 3), fmt(r.get("cpu_seconds"), 3), fmt(pred, 3),
                     fmt(r.get("n_evaluations"), 6),
                     "`" + (infix if len(infix) <= 90 else infix[:87] + "…").replace("|", "\\|") + "`"
                     if infix else "-"])
    return ["## Trials", "",
            md_table(["series", "algorithm", "seed", "status", "test RMSE", "q", "wall s", "CPU s", "predicted s",
                      "fits", "best kernel"], rows, "llrlrrrrrrl"), ""]
