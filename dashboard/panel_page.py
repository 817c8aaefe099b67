"""The Panel page: many series at once, each with its own kernel, in the background, resumable.

A run is the ``panel`` command's, in a folder under the data directory, worked by a process of its own
(:mod:`dashboard.panel_runs`): the page starts it, polls its folder (a progress bar and an ETA), stops or
resumes it, and shows its table, one row per series. A row clicked opens that series on the Results page
(:func:`dashboard.panel_view.register_series_run`); the forecasts and kernel files download as one zip.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.datasets import read_upload
from dashboard.long_table import LongTable, current_long_table
from dashboard.panel_runs import PanelRequest, PanelRuns, PanelStatus
from dashboard.panel_view import (
    SPARK_POINTS,
    format_eta,
    panel_of_run,
    register_series_run,
    series_rows,
    settings_from_text,
)
from dashboard.runs import panel_runs, store
from dashboard.search_form import CPUS
from dashboard.state import PAGE_DATA, PAGE_RESULTS, PANEL_RUN_KEY, RESULTS_RUN_KEY
from evocov_core.data import DataError, numeric_columns
from evocov_core.panel.table import future_values, panel_from_frame
from evocov_core.searches import PRESETS, preset

__all__ = ["HOLDOUT_CAPTION", "render"]

HOLDOUT_CAPTION = (
    "**Holdout ÷ AutoETS**: each series' last *h* observed points are held out; the kernel (refitted from the "
    "values the search found, with its optimiser), AutoETS and the forecast's other classical members are fitted "
    "on the points before them and forecast them; the forecast is weighed as the search weighed it. The number is "
    "the forecast's RMSE on those *h* points divided by AutoETS's (below 1: closer than AutoETS); *kernel holdout* "
    "is the kernel's own. The search chose its kernel and weights on every point, those included: an indication, "
    "not a test. Empty where a series is too short to hold *h* points out, or a fit failed.")
_STATES = {"running": ("blue", ":material/sync:"), "finished": ("green", ":material/check_circle:"),
           "stopped": ("orange", ":material/stop_circle:"), "interrupted": ("orange", ":material/warning:"),
           "failed": ("red", ":material/error:")}


def _badge(state: str) -> str:
    color, icon = _STATES.get(state, ("gray", ""))
    return f":{color}[{icon} {state}]"


def watched_run(runs: PanelRuns) -> str | None:
    """The run this session watches: the URL's (``?panel=``, a reload or a bookmark) or the session's."""
    asked = st.query_params.get("panel")
    if asked:
        st.session_state[PANEL_RUN_KEY] = asked
    run_id = st.session_state.get(PANEL_RUN_KEY)
    if not run_id:
        return None
    if not runs.exists(run_id):
        st.warning(f"There is no panel run `{run_id}` in this server's data folder.", icon=":material/report:")
        return None
    if st.query_params.get("panel") != run_id:
        st.query_params["panel"] = run_id
    return run_id


# --- a new run -------------------------------------------------------------------------------------------------


def _reset_budget() -> None:
    st.session_state["panel_budget"] = float(preset(st.session_state["panel_preset"]).time_budget)


def new_run(runs: PanelRuns, table: LongTable | None) -> None:
    """The settings of a run on the session's long table, and Start."""
    if table is None:
        st.info("Upload a long table (`unique_id`, `ds`, `y`: one row per series and time stamp) on the Data page, "
                "tab **Many series**; it is run here.", icon=":material/stacked_line_chart:")
        st.page_link(PAGE_DATA, label="Go to Data", icon=":material/show_chart:")
        return
    st.markdown(f"**{table.name}** — {table.summary()}")
    for note in table.notes:
        st.caption(f"Note: {note}.")
    st.session_state.setdefault("panel_preset", "panel")
    st.session_state.setdefault("panel_budget", float(preset("panel").time_budget))
    c1, c2, c3, c4, c5 = st.columns(5)
    h = c1.number_input("Horizon (steps)", min_value=1, max_value=10_000, step=1, key="panel_h",
                        value=table.season_length if table.season_length and table.season_length > 1 else 12,
                        help="Steps forecast after each series' last observation.")
    c2.selectbox("Preset", list(PRESETS), key="panel_preset", on_change=_reset_budget,
                 help="panel: a few seconds of one core a series (the default). Any search preset applies to "
                 "every series.")
    budget = c3.number_input("Seconds per series", min_value=0.0, max_value=86_400.0, step=1.0, key="panel_budget",
                             help="Each series' time budget on one core. 0: no clock, the preset's fixed counts.")
    workers = c4.number_input("Worker processes", min_value=1, max_value=max(CPUS, 1) * 4, value=CPUS, step=1,
                              key="panel_workers", help=f"Series searched at once ({CPUS} cores here).")
    seed = c5.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="panel_seed",
                           help="Every series' search uses it.")
    text = st.text_input("Other search settings", key="panel_settings", placeholder="population=20 generations=5",
                         help="name=value pairs over the preset, as the command line's options (--d-min 2 is "
                         "d-min=2): python -m evocov_core search --help lists them.")
    if budget > 0:
        st.caption(f"About {table.n_series * budget / int(workers) / 60:.1f} min on {int(workers)} worker "
                   f"process{'es' * (int(workers) > 1)} (the budget of each series, plus its forecast).")
    try:
        settings = settings_from_text(text, st.session_state["panel_preset"])
    except ValueError as exc:
        st.error(f"**Invalid settings:** {exc}.", icon=":material/block:")
        return
    chosen = panel_covariates(table, int(h))
    if chosen is None:
        return
    covariates, future = chosen
    if st.button("Start the panel", type="primary", key="panel_start", icon=":material/play_arrow:"):
        request = PanelRequest(table.name, table.id_col, table.ds_col, table.y_col, int(h), table.season_length,
                               st.session_state["panel_preset"], int(seed), int(workers),
                               {**settings, "time_budget": float(budget)}, table.n_series, time.time(),
                               list(covariates))
        run_id = runs.start(table.data, request, future)
        st.session_state[PANEL_RUN_KEY] = run_id
        st.query_params["panel"] = run_id
        st.rerun()


@st.cache_data(show_spinner=False, max_entries=4)
def _table(fingerprint: str, _data: bytes) -> pd.DataFrame:
    return read_upload(_data).rename(columns=str)


def panel_covariates(table: LongTable, h: int) -> tuple[list[str], bytes | None] | None:
    """The covariates with known futures a run uses (the table's other columns of numbers) and the file of their
    future values, checked as the worker will read them; None (and one line said) until they can be used."""
    df = _table(table.fingerprint, table.data)
    options = [c for c in numeric_columns(df) if c not in (table.id_col, table.ds_col, table.y_col)]
    if not options:
        return [], None
    covariates = st.multiselect(
        "Covariates (known in advance)", options, key=f"panel_cov_{table.fingerprint}", placeholder="None",
        help="Columns whose future values you know: a price, a holiday flag. Each series' search estimates their "
        "effect beside trend and season, keeps it when it lowers the BIC and searches its kernel on what it "
        "leaves; the forecast is at the times of the future values, with their effect added (as `evocov panel "
        "--covariates ... --future FILE`).")
    if not covariates:
        return [], None
    up = st.file_uploader(
        "Future values of the covariates (CSV)", type=["csv", "txt", "tsv"], key="panel_future",
        help=f"statsforecast's X_df: columns {table.id_col}, {table.ds_col} and each covariate, the {h} steps "
        "after each series' last observation (one row a series and step).")
    if up is None:
        st.info(f"Upload the future values of {', '.join(covariates)} ({table.id_col}, {table.ds_col} and each "
                f"covariate, for the {h} steps after each series) to start.", icon=":material/upload_file:")
        return None
    try:
        panel = panel_from_frame(df, id_col=table.id_col, ds_col=table.ds_col, y_col=table.y_col,
                                 season_length=table.season_length, covariates=tuple(covariates))
        future_values(panel, read_upload(up.getvalue()), h)
    except DataError as exc:
        st.error(f"**Cannot use {up.name}:** {exc}.", icon=":material/block:")
        return None
    return covariates, up.getvalue()


# --- a run --------------------------------------------------------------------------------------------------------


def _describe(req: PanelRequest) -> str:
    budget = float(req.settings.get("time_budget", 0.0) or 0.0)
    return (f"**{req.name}** · {req.n_series:,} series · {req.h} steps ahead · "
            + (f"covariates {', '.join(req.covariates)} · " if req.covariates else "") + f"preset `{req.preset}`, "
            + (f"{budget:g} s a series" if budget > 0 else "fixed counts") + f" · seed {req.seed} · "
            f"{req.workers} worker process{'es' * (req.workers > 1)}")


def live(runs: PanelRuns, run_id: str, was_active: bool) -> None:
    """The run's state, progress bar and ETA, Stop or Resume; redrawn every second while it runs."""
    s = runs.status(run_id)
    if was_active and not s.active:
        st.rerun()  # the whole page: its table is ready
    st.markdown(f"{_badge(s.state)} · {s.done}/{s.total} series finished"
                + (f" ({s.resumed} read from before an interruption)" if s.resumed else ""))
    frac = s.done / s.total if s.total else 1.0
    if s.active:
        st.progress(frac, text=f"{s.done}/{s.total} series · ETA {format_eta(s.eta)}")
        st.button("Stop", key="panel_stop", icon=":material/stop:", on_click=runs.stop, args=(run_id,),
                  help="The run stops once the series in flight are given up; the finished ones are kept, and "
                  "Resume goes on from them.")
    elif s.resumable:
        st.progress(frac, text=f"{s.done}/{s.total} series")
        if s.state == "interrupted":
            st.warning("This run was interrupted (its process ended before the run did). Resume goes on from the "
                       "series finished: none is redone.", icon=":material/warning:")
        if st.button("Resume", key="panel_resume", type="primary", icon=":material/play_arrow:"):
            runs.resume(run_id)
            st.rerun()
    elif s.state == "failed":
        st.error(f"**The run failed:** {s.error}", icon=":material/error:")


def run_section(runs: PanelRuns, run_id: str) -> None:
    """One run: what it is, its live state, its table and the zip."""
    s: PanelStatus = runs.status(run_id)
    st.subheader(f"Panel run {run_id}")
    st.markdown(_describe(s.request))
    if run_id in runs.resumed_at_start:
        st.info("The server stopped during this run; it resumed by itself when the server started again, from "
                "the series already finished (read, not redone).", icon=":material/restart_alt:")

    @st.fragment(run_every=1.0 if s.active else None)
    def poll() -> None:
        live(runs, run_id, s.active)

    poll()
    results(runs, run_id, s)


@st.cache_data(show_spinner=False, max_entries=8)
def _observed(_runs: PanelRuns, run_id: str) -> dict[str, np.ndarray]:
    """Each series' observed values (a run's table never changes)."""
    return {p.uid: p.y for p in panel_of_run(_runs, run_id).series}


#: The table's columns, the ratio first after the name: what a sort is mostly for.
COLUMN_ORDER = ("series", "holdout ÷ AutoETS", "spark", "status", "forecast by", "kernel", "kernel holdout ÷ AutoETS",
                "points", "missing", "BIC", "seconds", "why")
_ROW_PX = 35  # Streamlit's row height


def column_config(h: int) -> dict:
    """How the table's columns are drawn and explained (fixed widths first: the table reads left to right)."""
    num = st.column_config.NumberColumn
    text = st.column_config.TextColumn
    return {
        "series": text("series", width=90, pinned=True),
        "holdout ÷ AutoETS": num("holdout ÷ AutoETS", width=130, format="%.2f",
                                 help=HOLDOUT_CAPTION.replace("**", "").replace("*", "")),
        "spark": st.column_config.LineChartColumn(
            "series, then forecast", width=170,
            help=f"The last {SPARK_POINTS} observed values, then the forecast of the next {h} steps."),
        "status": text("status", width=80, help="ok: searched. fallback: a series the search cannot serve (too "
                       "few points, constant): why is in the last column."),
        "forecast by": text("forecast by", width="medium", help="Who forecasts, with which weights: the kernel, or "
                            "its weighted average with AutoETS and AutoTheta (weights from their forecasts at four "
                            "earlier origins)."),
        "kernel": text("kernel", width="large", help="The kernel found, in words."),
        "kernel holdout ÷ AutoETS": num("kernel holdout ÷ AutoETS", format="%.2f",
                                        help="The kernel's own forecast of the held-out points, ÷ AutoETS's."),
        "BIC": num("BIC", format="%.1f"), "seconds": num("seconds", format="%.1f"),
        "why": text("why", width="large"),
    }


def results(runs: PanelRuns, run_id: str, s: PanelStatus) -> None:
    """The table, one row per series (a click opens it on Results), and the zip of forecasts and kernels."""
    series = runs.series_table(run_id)
    if series is None:
        if s.active:
            st.caption("The table appears when the run ends or is stopped.")
        return
    try:
        observed = _observed(runs, run_id)
    except DataError:  # the folder's table cannot be read any more: the rows without their history
        observed = {}
    rows = series_rows(series, runs.forecasts(run_id), observed)
    st.markdown("##### Every series")
    if len(series) < s.total:
        st.caption(f"{len(series)} of {s.total} series are finished; the rest come when the run is resumed.")
    counts = series["status"].value_counts()
    st.caption(" · ".join(f"{int(counts[k])} {k}" for k in ("ok", "fallback", "no_data", "error") if k in counts)
               + ". Click a column's header to sort by it; click a row to open that series on the Results page.")
    event = st.dataframe(rows, key=f"panel_table_{run_id}", on_select="rerun", selection_mode="single-row",
                         hide_index=True, width="stretch", height=_ROW_PX * (min(len(rows), 15) + 1) + 3,
                         column_order=COLUMN_ORDER, column_config=column_config(s.request.h))
    st.caption(HOLDOUT_CAPTION)
    picked = event.selection.rows if event is not None else []
    if picked:
        open_series(runs, run_id, series.iloc[int(picked[0])])
    st.download_button("Download forecasts and kernels (zip)", data=lambda: runs.zip_bytes(run_id),
                       file_name=f"evocov-panel-{run_id}.zip", mime="application/zip", key="panel_download",
                       icon=":material/download:", on_click="ignore",
                       help="forecasts.csv (statsforecast's shape), series.csv and kernels/<series>.json, "
                       "as the panel command writes them.")


def open_series(runs: PanelRuns, run_id: str, row: Any) -> None:
    """Open a series (``row``: its row of ``series.csv``) on the Results page as a single search shows it, or
    say why it has nothing to open."""
    uid = str(row.unique_id)
    kernel_file = row.kernel_file if isinstance(row.kernel_file, str) else ""
    rid = register_series_run(store(), runs, run_id, uid, kernel_file, float(row.seconds)) if kernel_file else None
    if rid is None:
        st.warning(f"**{uid}** has no kernel to open ({row.status}): {row.reason}", icon=":material/info:")
        return
    st.session_state[RESULTS_RUN_KEY] = rid
    st.switch_page(PAGE_RESULTS, query_params={"run": rid})


def other_runs(runs: PanelRuns, run_id: str | None) -> None:
    """Every panel run in the data folder, to open another."""
    ids = runs.ids()
    if not ids or ids == [run_id]:
        return
    with st.expander(f"Panel runs in this server's data folder ({len(ids)})"):
        def label(i: str) -> str:
            s = runs.status(i)
            return f"{time_label(s.request.created)} · {s.request.name} · {s.total} series · {s.state} · {i}"

        chosen = st.selectbox("Open a run", ids, index=ids.index(run_id) if run_id in ids else None,
                              format_func=label, key="panel_pick", placeholder="Choose a run")
        if chosen and chosen != run_id:
            st.session_state[PANEL_RUN_KEY] = chosen
            st.query_params["panel"] = chosen
            st.rerun()


def time_label(t: float) -> str:
    """A run's start, ``2026-01-31 14:05``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t and math.isfinite(t) else ""


def render() -> None:
    """The whole page."""
    st.title("Panel")
    st.caption("Many series at once: each series of a long table gets its own kernel search and the forecast of "
               "the steps after it, with the engine of `python -m evocov_core panel`, in a process of its own. "
               "Leave or reload the page: the run goes on. Stopped or interrupted, it resumes from the series "
               "it has finished.")
    runs = panel_runs()
    run_id = watched_run(runs)
    if run_id is not None:
        run_section(runs, run_id)
        st.divider()
        with st.expander("New panel run", expanded=False):
            new_run(runs, current_long_table())
    else:
        st.subheader("New panel run")
        new_run(runs, current_long_table())
    other_runs(runs, run_id)
