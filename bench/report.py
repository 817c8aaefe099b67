"""``bench report``: the results folder of ``bench reproduce`` read back as the paper's tables.

This module owns the folder's layout (``trials.csv`` columns, kernel file names, ``run.json``)
and everything written from it: ``table5.csv``, ``table5_raw.csv``, ``table6.csv``,
``figure5.html`` and ``report.md`` (with the paper-budget estimate of ``bench estimate``
when the folder has one). :mod:`~bench.reproduce` runs the trials and
:mod:`~bench.report` times them; both write through this module and
neither is imported by it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.budget import ALGORITHMS, budget_config
from bench.common import (
    BenchError,
    ResultFile,
    TrialStatus,
    command_line,
    doc_md,
    fmt,
    invocation_walls,
    load_series,
    machine_info,
    md_table,
    now_iso,
    resolve_series,
    run_headers,
)
from bench.common import write_json as _write_json
from evocov_core.compute.provenance import git_state
from evocov_core.compute.setup import prepare_process
from evocov_core.fitting.fits import make_executor
from evocov_core.fitting.metrics import FitData
from evocov_core.present.report_html import report_html
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.searches import run_search
from evocov_core.searches.wall_time import estimated_fits

__all__ = [
    "EVOCOV_PAPER_COLUMNS",
    "PAPER_TABLE3",
    "PAPER_TABLE4",
    "PAPER_TABLE6",
    "PAPER_TABLE6_COLUMNS",
    "PUBLISHED_METHODS",
    "SERIES",
    "TABLE4_METRICS",
    "TRIAL_COLUMNS",
    "TRIAL_KEY",
    "estimate",
    "estimate_markdown",
    "kernel_path",
    "load_evocov_paper",
    "load_published",
    "load_run",
    "report",
    "table5",
    "table6",
    "trials_file",
]

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



def load_run(out: Path) -> dict:
    """``run.json`` of a results folder (empty when there is none)."""
    p = out / "run.json"
    if not p.is_file():
        return {}
    return json.loads(p.read_text(encoding="utf-8"))


def _ours(trials: pd.DataFrame) -> dict[str, pd.DataFrame]:
    ok = trials[trials["status"] == TrialStatus.OK].copy()
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
    from evocov_core.language.library import GPSS_PUBLISHED, compose

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
    p = out / "estimate.json"
    lines = ["## paper budget: estimated cost", ""]
    if not p.is_file():
        return [*lines, "Not measured for this folder: `python -m bench estimate --data-dir DIR "
                "--budget paper --series 01-airline,03-mauna,06-internet --generations 2 --out THIS_FOLDER`.", ""]

    return [*lines, estimate_markdown(json.loads(p.read_text(encoding="utf-8"))), ""]


def report(out: Path, *, data_dir: Path | None = None) -> Path:
    """Regenerate ``table5.csv``, ``table5_raw.csv``, ``table6.csv``, ``figure5.html`` and ``report.md``.

    Reads only the folder's files (and the published RMSE files of ``data_dir``, by default
    the one recorded in ``run.json``).
    """
    out = Path(out)
    run = load_run(out)
    if not run:
        raise BenchError(f"{out} has no run.json: not a bench reproduce folder")
    data_dir = Path(data_dir or run.get("data_dir", ""))
    if not (data_dir / "published_rmse.csv").is_file():
        raise BenchError(f"published_rmse.csv not found in {data_dir}; pass --data-dir")
    trials = trials_file(out).read()
    lines = [f"# EvoCov benchmark on the 13 TSDL series: Tables 5, 6 and Figure 5 (budget `{run.get('budget')}`)",
             "", "Regenerate this report from the folder's files with "
             f"`python -m bench report --out {out}`.", ""]
    invs = run.get("invocations", [])
    walls = invocation_walls(invs, trials)
    lines += ["## Commands", ""]
    described = []
    for inv, (wall, cut) in zip(invs, walls, strict=True):
        ended = (f"interrupted, last trial {wall:.0f} s after the start" if cut
                 else f"finished {inv.get('finished')}, wall {fmt(wall)} s")
        described.append(f"started {inv.get('started')}, {ended}, trials run {inv.get('trials_run', '?')}, already "
                         f"done {inv.get('trials_skipped', '?')}, workers {inv.get('workers') or 'every core'}"
                         + (f", scheduler {inv['scheduler']}" if inv.get("scheduler") else ""))
    total_wall = sum(w for w, _ in walls)
    n_cut = sum(cut for _, cut in walls)
    lines += run_headers(invs, described, machine_intro=["## Machine", ""])
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
    if (trials["status"] == TrialStatus.OK).any() if len(trials) else False:
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
    from bench.budget import __doc__ as rule

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



def estimate_markdown(doc: dict) -> str:
    """The estimate as markdown (method, measurements, per-series extrapolation, totals)."""
    lines = [f"Command: `{doc.get('command', '')}` ({doc.get('started')}), {doc.get('generations')} timed "
             f"generations of N = {doc.get('population', 141)} per series and metric, machine "
             f"{doc.get('machine', {}).get('CPU', '?')}.", "",
             "Method: mean core-seconds per kernel fit of the timed generations (seeds 0) × the fits of a paper "
             "trial: EvoCov 141 × 141 = 19881 (LML and SoPL timed separately; SoPL uses Powell with "
             "ref_fun_call 300), Random Search 20000, GWTF 18013, GPSS ≤ 787 (an upper bound of its candidates "
             "over 10 levels; crude), the last three at the EvoCov-LML per-fit cost; untimed series by a power "
             "law in n_train fitted per algorithm. The first generations hold the smallest kernels, so treat "
             "these as lower bounds.", "",
             md_table(["series", "n", "metric", "fits timed", "wall s", "fit core-s", "core-s / generation",
                       "core-s / fit"],
                      [[m["series"], m["n_train"], m["algorithm"], m["fits"], fmt(m["wall_seconds"]),
                        fmt(m["fit_core_seconds"]), ", ".join(fmt(v) for v in m["core_seconds_per_generation"]),
                        fmt(m["core_seconds_per_fit"], 3)] for m in doc.get("measured", [])], "lrlrrrlr"), ""]
    full = doc.get("all_series_core_seconds", {})
    if full:
        keys = list(full)
        series = sorted(next(iter(full.values())))
        timed = set(doc.get("per_trial_core_seconds", {}))
        rows = [[s + ("" if s in timed else " (extrapolated)"),
                 *(fmt(full[k][s] / 3600, 3) for k in keys),
                 fmt(sum(full[k][s] for k in keys) / 3600, 3)] for s in series]
        lines += ["Estimated core-hours per trial (paper budget):", "",
                  md_table(["series", *keys, "all"], rows), "",
                  "Exponents b of cost ∝ n^b: " + ", ".join(f"{k} {v}" for k, v in doc.get("exponents", {}).items()),
                  "",
                  f"**Total for {doc.get('trials')} trials × {len(keys)} algorithms × {len(series)} series: "
                  f"{doc.get('total_core_hours')} core-hours, about {doc.get('total_wall_hours_on_cores')} hours "
                  f"of wall time on {doc.get('cores')} cores** (perfect packing, no other load).", ""]
    return "\n".join(lines)


# --- paper -----------------------------------------------------------------------------------------------


#: The 13 series, in the paper's order.
SERIES = ("01-airline", "02-solar", "03-mauna", "04-wheat", "05-temperature", "06-internet", "07-call-centre",
          "08-radio", "09-gas-production", "10-sulphuric", "11-unemployment", "12-births", "13-wages")

#: Published extrapolation methods of ``published_rmse.csv`` in the column order of the
#: paper's Table 5 (``tab:extrap_results``); SP is the paper's "SP-bic".
PUBLISHED_METHODS = ("ABCD-accuracy", "GPSS", "ABCD-interpretability", "CP", "LIN", "MKL", "SE", "SP", "TCI",
                     "Eureqa")

#: Table 3 (``tab:intial``): fractions of 200 mutants of the published GPSS kernel that are
#: better fitted (lower test RMSE), simpler (fewer hyperparameters) and both.
PAPER_TABLE3: dict[str, tuple[float, float, float]] = {
    "01-airline": (0.38, 0.43, 0.13),
    "02-solar": (0.55, 0.32, 0.21),
    "03-mauna": (0.18, 0.34, 0.05),
    "04-wheat": (0.40, 0.19, 0.11),
    "05-temperature": (0.23, 0.27, 0.00),
    "06-internet": (0.24, 0.38, 0.07),
    "07-call-centre": (0.50, 0.48, 0.20),
    "08-radio": (0.36, 0.30, 0.05),
    "09-gas-production": (0.71, 0.41, 0.30),
    "10-sulphuric": (0.56, 0.43, 0.23),
    "11-unemployment": (0.47, 0.38, 0.15),
    "12-births": (0.48, 0.32, 0.13),
    "13-wages": (0.38, 0.28, 0.08),
}

#: Table 4 (``tab:hpopt_results``): mean test RMSE of the published GPSS kernel optimised
#: (Powell, 5000 samples, 10 trials from random starts) under each metric, in the order
#: ``lml, loocv, posterior_lml, sopl, rmse``. Transcribed as printed (the Solar row is far
#: above every published Solar RMSE, about 0.4: probably other units or a typo in the paper).
PAPER_TABLE4: dict[str, tuple[float, float, float, float, float]] = {
    "01-airline": (37.00, 230.27, 157.96, 57.10, 97.34),
    "02-solar": (269.12, 539.64, 925.25, 279.24, 132.04),
    "03-mauna": (4.40, 37.61, 3.94, 2.34, 3.19),
    "04-wheat": (54.13, 99.64, 67.94, 52.58, 266.37),
    "05-temperature": (4.92, 6.63, 4.62, 5.62, 4.67),
    "06-internet": (49352.14, 4994073.33, 38259.26, 23756.89, 25970.23),
    "07-call-centre": (212.22, 43078.20, 1460.47, 844.32, 55.08),
    "08-radio": (2.14, 2.01, 1.27, 0.74, 1.63),
    "09-gas-production": (13791.03, 179944.80, 26403.55, 18066.63, 50771.39),
    "10-sulphuric": (39.58, 1979.48, 56.56, 53.42, 67.89),
    "11-unemployment": (142.30, 4436.13, 265.76, 192.34, 219.65),
    "12-births": (44.78, 16203.27, 49.84, 44.54, 46.40),
    "13-wages": (23.26, 40.97, 15.16, 15.38, 13.61),
}
TABLE4_METRICS = ("lml", "loocv", "posterior_lml", "sopl", "rmse")

#: Columns of Table 6 (``tab:extrap_hp_count``), as printed.
PAPER_TABLE6_COLUMNS = ("ABCD-accuracy", "GPSS", "ABCD-interpretability", "CP", "LIN", "MKL", "SE", "SP", "TCI",
                        "Random Search", "Go With The First", "EvoCov LML", "EvoCov SoPL")

#: Table 6: hyperparameters (noise included) of the best kernel per series and method; the
#: paper's own algorithms give means over 10 trials. ABCD-accuracy is missing for births
#: and wages in the paper.
PAPER_TABLE6: dict[str, tuple[float | None, ...]] = {
    "01-airline": (12, 15, 12, 8, 4, 5, 3, 16, 8, 6.1, 6.3, 10.2, 8.5),
    "02-solar": (23, 13, 19, 18, 4, 7, 3, 13, 10, 4.8, 5.4, 7.0, 6.3),
    "03-mauna": (10, 11, 12, 5, 4, 5, 3, 12, 8, 6.7, 4.9, 7.0, 10.8),
    "04-wheat": (14, 7, 13, 13, 4, 5, 3, 7, 5, 5.4, 4.9, 6.6, 5.8),
    "05-temperature": (9, 9, 8, 6, 4, 6, 3, 9, 7, 4.5, 4.5, 4.2, 5.3),
    "06-internet": (18, 15, 26, 13, 4, 5, 3, 13, 8, 4.1, 6.0, 10.1, 6.3),
    "07-call-centre": (18, 19, 16, 11, 4, 7, 3, 7, 7, 5.1, 8.2, 11.3, 7.6),
    "08-radio": (15, 9, 13, 5, 4, 5, 3, 12, 8, 6.0, 6.1, 7.6, 8.0),
    "09-gas-production": (28, 21, 21, 18, 4, 5, 3, 13, 11, 5.8, 8.0, 13.4, 8.7),
    "10-sulphuric": (19, 17, 17, 13, 4, 7, 3, 12, 9, 5.4, 6.5, 7.5, 7.2),
    "11-unemployment": (13, 15, 10, 9, 4, 4, 3, 18, 8, 6.4, 4.8, 7.1, 8.3),
    "12-births": (None, 11, 6, 5, 4, 5, 3, 9, 6, 5.0, 5.6, 6.8, 7.0),
    "13-wages": (None, 13, 19, 18, 4, 7, 3, 10, 7, 3.0, 5.0, 6.3, 5.6),
}

#: Columns of ``evocov_paper_rmse.csv`` (the paper's own algorithms, raw RMSE) and labels.
EVOCOV_PAPER_COLUMNS = {
    "evocov_lml_best": "paper EvoCov LML best",
    "evocov_lml_mean": "paper EvoCov LML mean",
    "evocov_sopl_best": "paper EvoCov SoPL best",
    "evocov_sopl_mean": "paper EvoCov SoPL mean",
    "random_search_mean": "paper Random Search mean",
    "gwtf_mean": "paper GWTF mean",
}


def load_published(data_dir: Path) -> pd.DataFrame:
    """``published_rmse.csv`` as a (series × method) table of test RMSE."""
    df = pd.read_csv(Path(data_dir) / "published_rmse.csv")
    return df.pivot(index="dataset", columns="method", values="rmse")


def load_evocov_paper(data_dir: Path) -> pd.DataFrame:
    """``evocov_paper_rmse.csv``: the paper's own RMSEs (series × labelled column)."""
    df = pd.read_csv(Path(data_dir) / "evocov_paper_rmse.csv").set_index("dataset")
    return df[list(EVOCOV_PAPER_COLUMNS)].rename(columns=EVOCOV_PAPER_COLUMNS)


# --- estimate --------------------------------------------------------------------------------------------



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


# --- report pictures -------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
PICTURE_SERIES = {"01-airline": "Airline passengers", "03-mauna": "Mauna Loa CO₂"}
KERNELS = ROOT / "bench" / "results" / "accuracy" / "quick" / "kernels"
CHROMIUM = "/usr/bin/chromium"
MAX_BYTES = 300_000
#: Width of the page and height of the part shown: the title, the forecast and the comparison table.
VIEWPORT = {"width": 1040, "height": 1180}


def report_pictures(data_dir: Path, baseline_budget: float = 20.0, out: Path = ROOT / "docs") -> int:
    """``python -m bench report-pictures``: the README's pictures of the report, its top on Airline and Mauna Loa
    (the seed-0 ``quick`` kernels of ``bench/results/accuracy/quick/kernels/``), each opened in headless Chromium
    with no network and saved as ``docs/report-<series>.png`` (under 300 KB). The HTML goes to a temporary
    folder: it embeds Plotly (4 MB) and is remade by the same command."""
    from playwright.sync_api import sync_playwright

    prepare_process()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for name, title in PICTURE_SERIES.items():
            ds = load_series(data_dir, name)
            kf = load_kernel_file(KERNELS / f"{name}__full__seed0.json")
            t0 = time.perf_counter()
            page_html = Path(tmp) / f"{name}.html"
            page_html.write_text(report_html(kf, ds, title=f"EvoCov report: {title} (TSDL {name})",
                                             baseline_budget=baseline_budget, seed=0), encoding="utf-8")
            ctx = browser.new_context(offline=True, viewport=VIEWPORT)
            page = ctx.new_page()
            page.goto(page_html.as_uri())
            n = page.locator("div.plotly-graph-div").count()
            page.wait_for_function(f"document.querySelectorAll('div.plotly-graph-div .main-svg').length >= {n}",
                                   timeout=60_000)
            time.sleep(1.0)  # let the figures finish drawing
            png = out / f"report-{name.split('-', 1)[1]}.png"
            page.screenshot(path=str(png), full_page=False)
            ctx.close()
            size = png.stat().st_size
            print(f"{png.relative_to(ROOT)}: {size / 1000:.0f} KB ({time.perf_counter() - t0:.0f} s)")
            if size > MAX_BYTES:
                raise SystemExit(f"{png} is {size} bytes, over {MAX_BYTES}: lower VIEWPORT")
        browser.close()
    return 0

