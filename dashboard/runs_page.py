"""The Runs page: every search and exploration in the store; open, compare, export, delete."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from dashboard.format import algorithm_label, polish
from dashboard.runs import list_runs, manager, run_label, store
from dashboard.state import EXPLORE_JOB_KEY, PAGE_EXPLORER, PAGE_RESULTS, PAGE_SEARCH, RESULTS_RUN_KEY, SEARCH_JOB_KEY
from evocov_core.present.figures import fitness_compare_figure
from evocov_core.present.glance import MISSING, text_cells
from evocov_core.runs.counts import (
    KERNELS_FITTED,
    KERNELS_FITTED_HELP,
    SCREENING_FITS,
    SCREENING_FITS_HELP,
    fit_counts,
)
from evocov_core.searches import RunStatus


def runs_table(runs: pd.DataFrame, live: dict[str, RunStatus]) -> pd.DataFrame:
    """The table shown: one row per run, live statuses of this server's running jobs."""
    return pd.DataFrame({
        "run": runs["id"],
        "status": [live.get(r.id, r.status) for r in runs.itertuples(index=False)],
        "kind": runs["kind"],
        "algorithm": [algorithm_label(a) for a in runs["algorithm"]],
        "dataset": runs["dataset_name"],
        "seed": text_cells(runs["seed"], ".0f"),
        # Written out, "—" where a run has none (a table would print None).
        "BIC": text_cells(runs["best_bic"], ".2f"),
        "test RMSE": text_cells(runs["best_test_rmse"], ".4g"),
        "q": text_cells(runs["best_q"], ".0f"),
        "generations": runs["generations_done"],
        KERNELS_FITTED: [fit_counts(r).kernels_fitted for r in runs.itertuples(index=False)],
        SCREENING_FITS: [fit_counts(r).screening_fits for r in runs.itertuples(index=False)],
        "time (s)": text_cells(runs["elapsed"], ".1f"),
        "started": [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(c))) for c in runs["created"]],
        "returned kernel": [k if isinstance(k, str) and k else MISSING for k in runs["best_kernel"]],
        "label": runs["label"],
    })


def open_tab(runs: pd.DataFrame, ids: list[str], labels: dict[str, str]) -> None:
    """Open a run on the page that shows it."""
    rid = st.selectbox("Run", ids, format_func=labels.get, key="runs_open_pick")
    row = runs[runs["id"] == rid].iloc[0]
    if row["kind"] == "explore":
        if st.button("Open in the Mutation explorer", type="primary", key="runs_open", icon=":material/science:"):
            st.session_state[EXPLORE_JOB_KEY] = rid
            st.switch_page(PAGE_EXPLORER, query_params={"explore": rid})
    else:
        buttons = st.container(horizontal=True)  # buttons as wide as their labels, side by side
        has_best = isinstance(row["best_kernel"], str)
        if buttons.button("Open in Results", type="primary", key="runs_open", icon=":material/emoji_events:",
                          disabled=not has_best, help=None if has_best else "This run has no kernel yet."):
            st.session_state[RESULTS_RUN_KEY] = rid
            st.switch_page(PAGE_RESULTS, query_params={"run": rid})
        if buttons.button("Watch on the Search page", key="runs_watch", icon=":material/genetics:",
                          help="Shows the run's progress and fitness curve."):
            st.session_state[SEARCH_JOB_KEY] = rid
            st.switch_page(PAGE_SEARCH, query_params={"job": rid})
    if isinstance(row.get("error"), str) and row["error"]:
        with st.expander("Error"):
            st.code(row["error"], language=None)


def compare_tab(runs: pd.DataFrame, ids: list[str], labels: dict[str, str]) -> None:
    """Best BIC against generation, one line per chosen search."""
    searches = [i for i in ids if runs.loc[runs["id"] == i, "kind"].iloc[0] == "search"]
    # BIC is comparable on the same data only: preselect the newest search and the next on its data.
    data_of = dict(zip(runs["id"], runs["dataset_name"], strict=True))
    default = [i for i in searches if searches and data_of.get(i) == data_of.get(searches[0])][:2]
    chosen = st.multiselect("Runs to compare", searches, default=default, format_func=labels.get,
                            key="runs_compare", help="Best BIC so far against generation, one line per run. "
                            "BICs of runs on different data are not comparable.")
    if chosen:
        short = {r.id: f"{algorithm_label(r.algorithm)} · {r.dataset_name} · seed {r.seed} ({r.id})"
                 for r in runs.itertuples(index=False)}
        fig = polish(fitness_compare_figure({short[i]: store().history(i) for i in chosen}))
        st.plotly_chart(fig, key="runs_compare_chart", config={"displaylogo": False})


def export_tab(ids: list[str], labels: dict[str, str]) -> None:
    """Every kernel a run fitted, as CSV."""
    rid = st.selectbox("Run", ids, format_func=labels.get, key="runs_export_pick")
    st.download_button("Download every evaluated kernel (CSV)", store().export_csv(rid),
                       file_name=f"evocov-run-{rid}.csv", mime="text/csv", key="runs_export",
                       icon=":material/download:", help="One row per kernel fitted: expression, scores, fitted values.")


def delete_tab(ids: list[str], labels: dict[str, str], live: dict[str, RunStatus]) -> None:
    """Delete a run that is not going, after a confirmation."""
    rid = st.selectbox("Run", ids, format_func=labels.get, key="runs_delete_pick")
    busy = rid in live
    confirm = st.checkbox(f"Yes, delete run {rid} and everything it recorded", key=f"runs_delete_confirm_{rid}",
                          disabled=busy)
    if busy:
        st.caption("This run is still going: stop it before deleting it.")
    if st.button("Delete run", key="runs_delete", icon=":material/delete:", disabled=not confirm or busy):
        store().delete_run(rid)
        for k in (RESULTS_RUN_KEY, SEARCH_JOB_KEY, EXPLORE_JOB_KEY):
            if st.session_state.get(k) == rid:
                st.session_state.pop(k)
        st.toast(f"Deleted run {rid}.")
        st.rerun()


def render() -> None:
    """The whole page."""
    st.title("Runs")
    st.caption(
        f"Every search and exploration recorded on this server ({store().path}). Runs survive restarts: a run "
        "that was going when the server stopped is marked *interrupted* and keeps what it had found."
    )
    runs = list_runs()
    if len(runs) == 0:
        st.info("No runs yet. Start a search on the Search page.", icon=":material/folder_open:")
        st.page_link(PAGE_SEARCH, label="Go to Search", icon=":material/genetics:")
        return
    # Jobs of this server that are still going report live status (the store is updated per generation).
    live = {s.id: s.status for s in manager().active()}
    view = runs_table(runs, live)
    c1, c2, c3 = st.columns(3)
    c1.metric("Runs", len(runs))
    c2.metric("Running or queued", sum(1 for s in runs["status"] if RunStatus(s).active))
    c3.metric("Finished", int((runs["status"] == RunStatus.FINISHED).sum()))
    st.dataframe(view, hide_index=True, key="runs_table", height=min(420, 38 + 35 * len(view)), column_config={
        "BIC": st.column_config.TextColumn(help="The returned kernel's (a search may return one of its lowest-BIC "
                                           "kernels, chosen by its forecasts)."),
        KERNELS_FITTED: st.column_config.NumberColumn(help=KERNELS_FITTED_HELP),
        SCREENING_FITS: st.column_config.NumberColumn(help=SCREENING_FITS_HELP),
        "started": st.column_config.TextColumn(width="medium"),
        "returned kernel": st.column_config.TextColumn(width="large"),
    })
    labels = {r.id: run_label(r) for r in runs.itertuples(index=False)}
    ids = list(runs["id"])
    tab_open, tab_compare, tab_export, tab_delete = st.tabs(["Open", "Compare", "Export CSV", "Delete"])
    with tab_open:
        open_tab(runs, ids, labels)
    with tab_compare:
        compare_tab(runs, ids, labels)
    with tab_export:
        export_tab(ids, labels)
    with tab_delete:
        delete_tab(ids, labels, live)
