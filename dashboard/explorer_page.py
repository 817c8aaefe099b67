"""The Mutation explorer: mutate a fitted kernel many times and see how its neighbours extrapolate."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import fits
from dashboard.covariates import modelled, run_data
from dashboard.datasets import current_dataset, dataset_fingerprint, dataset_summary
from dashboard.format import dash_empty, fmt, polish, poll_every, status_badge
from dashboard.runs import (
    get_run,
    gpss_baseline_job,
    manager,
    remember_run,
    run_label,
    runs_on_dataset,
    runs_with_a_kernel,
    start_gpss_baseline,
    store,
    watched_job,
)
from dashboard.state import EXPLORE_JOB_KEY
from dashboard.views import formula, show_kernel, with_test_rmse
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import METRIC_LABELS, METRICS, FitData
from evocov_core.fitting.optimize import FitResult
from evocov_core.language.library import GPSS_PUBLISHED, WELL_KNOWN, structure_text
from evocov_core.present.figures import explorer_figure
from evocov_core.runs.jobs import JobKind, JobSpec
from evocov_core.runs.kernel_file import KernelFileError, parse_kernel_file
from evocov_core.runs.run_record import RunRecord
from evocov_core.searches import ConfigError, EvalRecord, RunStatus, preset
from evocov_core.searches.gp_baselines import fit_fixed, fit_structure

CPUS = os.cpu_count() or 1
SOURCES = {
    "gpss_run": "GPSS baseline on these data",
    "published": "Published GPSS structure",
    "well_known": "Well-known kernel",
    "file": "Kernel file",
    "search": "Search result",
}
SELECTED = "ex_selected"  # row of the mutant opened below the table


def background_base(ds: Dataset, key: tuple, label: str, fn: Callable[..., FitResult], *args: Any
                    ) -> FitResult | None:
    """A base fitted in the background: a button to start, progress while fitting, the fit when done."""
    fut = fits.existing_fit(key)
    if fut is None:
        st.caption("Its hyperparameters must first be fitted on the current data (in the background; this can "
                   "take a minute).")
        if st.button(f"Fit {label} on {ds.name}", key=f"ex_fit_{key[0]}_{key[1]}", icon=":material/play_arrow:"):
            fits.background_fit(key, fn, *args)
            st.rerun()
        return None
    if not fut.done():

        @st.fragment(run_every=1.0)
        def wait() -> None:
            if fut.done():
                st.rerun()
            st.info(f"Fitting {label} on {ds.name} in the background…", icon=":material/hourglass_top:")

        wait()
        return None
    try:
        fit = fut.result()
    except Exception as exc:
        st.error(f"Fitting {label} failed: {exc}")
        return None
    if not fit.ok:
        st.error(f"Fitting {label} failed: {fit.reason or fit.status}")
        return None
    return fit


def gpss_base(ds: Dataset) -> tuple[FitResult | None, str]:
    """The best kernel of a GPSS run on these data, or a way to start one."""
    gruns = runs_on_dataset(ds, algorithm="gpss")
    if gruns:
        pick = st.selectbox("GPSS run", range(len(gruns)), format_func=lambda i: run_label(gruns[i]),
                            key="ex_gpss_run")
        run = gruns[pick]
        return (run.best.to_fit(ds.n_train) if run.best else None), f"GPSS baseline ({run.id})"
    gj = gpss_baseline_job(ds)
    if gj is None:
        st.info(f"No finished GPSS run on {ds.name} yet.", icon=":material/info:")
        if st.button("Run a quick GPSS search in the background", key="ex_run_gpss", icon=":material/play_arrow:"):
            start_gpss_baseline(ds)
            st.rerun()
        return None, ""

    @st.fragment(run_every=1.5)
    def wait_gpss() -> None:
        snap = gj.snapshot()
        if snap.done:
            st.rerun()
        st.info(f"GPSS search {snap.id} running in the background: {snap.status}, level "
                f"{snap.generation}/{snap.total_generations or '?'}.", icon=":material/hourglass_top:")

    wait_gpss()
    return None, ""


def file_base(ds: Dataset) -> tuple[FitResult | None, str]:
    """A kernel file's kernel, scored on these data."""
    up = st.file_uploader("Kernel file (JSON)", type=["json"], key="ex_kernel_file")
    if up is None:
        return None, ""
    try:
        return with_test_rmse(parse_kernel_file(up.getvalue()).to_fit(ds.n_train), ds), up.name
    except KernelFileError as exc:
        st.error(f"**Cannot load {up.name}:** {exc}", icon=":material/block:")
    except Exception as exc:
        st.error(f"**Cannot use {up.name} on {ds.name}:** {exc}", icon=":material/block:")
    return None, ""


def search_base(ds: Dataset) -> tuple[FitResult | None, str]:
    """The best kernel of a stored search, rescored when it was on other data."""
    sruns = runs_with_a_kernel("search")
    if len(sruns) == 0:
        st.info("No search with a best kernel in the store yet.", icon=":material/info:")
        return None, ""
    labels = {r.id: run_label(r) for r in sruns.itertuples(index=False)}
    rid = st.selectbox("Run", list(sruns["id"]), format_func=labels.get, key="ex_search_run")
    run = get_run(rid)
    if run is None or run.best is None:
        return None, ""
    base = run.best.to_fit(ds.n_train)
    if run.dataset is None or dataset_fingerprint(run_data(run)) != dataset_fingerprint(ds):
        st.warning(f"This run was on {run.dataset_name}, not on the current data: its values are read "
                   f"in {ds.name}'s model units and its test RMSE recomputed.")
        base = with_test_rmse(base, ds)
    return base, f"best of run {rid}"


def base_kernel(ds: Dataset) -> tuple[FitResult | None, str]:
    """Section 1: where the base kernel comes from, and the base itself once fitted."""
    st.subheader("1 · Base kernel")
    source = st.radio("Start from", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="ex_source",
                      help="The kernel whose neighbourhood is explored. Its values are read in the current data's "
                      "model units.")
    fp = dataset_fingerprint(ds)
    if source == "gpss_run":
        base, name = gpss_base(ds)
    elif source == "published":
        name = st.selectbox("Structure", list(GPSS_PUBLISHED), key="ex_published",
                            format_func=lambda k: f"{k}: {structure_text(GPSS_PUBLISHED[k])}",
                            help="Structures GPSS found on the 13 TSDL series (Duvenaud et al. 2013); their "
                            "hyperparameters are refitted on the current data.")
        base = background_base(ds, ("structure", name, fp), name, fit_structure, GPSS_PUBLISHED[name],
                               FitData.from_dataset(ds))
        name = f"GPSS structure {name}"
    elif source == "well_known":
        name = st.selectbox("Kernel", list(WELL_KNOWN), key="ex_well_known",
                            help="The paper's Table 1 kernels (WN is the zero kernel plus the model's noise).")
        base = background_base(ds, ("well_known", name, fp), name, fit_fixed, WELL_KNOWN[name](),
                               FitData.from_dataset(ds))
    elif source == "file":
        base, name = file_base(ds)
    else:
        base, name = search_base(ds)
    if base is not None:
        st.markdown(f"**{name}**")
        formula(base.kernel, "explorer_base")
        c1, c2, c3 = st.columns(3)
        c1.metric("q", base.q)
        c2.metric("Test RMSE", fmt(base.test_rmse))
        c3.metric("BIC", fmt(base.bic, ".2f"))
    return base, name


def mutation_settings(ds: Dataset, base: FitResult | None, base_name: str, job_active: bool) -> None:
    """Section 2: how many mutants, fitted by which metric, and Start."""
    st.subheader("2 · Mutations")
    a, b, c, d = st.columns(4)
    n_mut = a.number_input("Number of mutations M", min_value=1, max_value=5000, value=100, step=10, key="ex_n",
                           help="The paper uses 200. Each mutant is fitted like a search candidate.")
    metric = b.selectbox("Metric", METRICS, format_func=METRIC_LABELS.get, key="ex_metric",
                         help="Hyperparameter metric used to fit each mutant.")
    seed = c.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="ex_seed")
    workers = d.number_input("Worker processes", min_value=1, max_value=CPUS * 4, value=CPUS, step=1,
                             key="ex_workers")
    why = None
    if base is None:
        why = "Choose and fit a base kernel first."
    elif job_active:
        why = "An exploration is already running in this session."
    if not st.button("Start exploration", type="primary", key="ex_start", disabled=why is not None, help=why):
        return
    assert base is not None
    try:
        cfg = preset("quick", "evocov", metric=metric)
    except ConfigError as exc:
        st.error(str(exc))
        return
    spec = JobSpec(kind=JobKind.EXPLORE, dataset=ds, config=cfg, seed=int(seed), workers=int(workers),
                   label=f"Explore {base_name} · {ds.name}", base=base, n_mutations=int(n_mut))
    new_id = manager().submit(spec)
    st.session_state[EXPLORE_JOB_KEY] = new_id
    st.session_state.pop(SELECTED, None)
    remember_run(new_id)
    st.query_params["explore"] = new_id
    st.rerun()


def _select_from(widget_key: str, part: str) -> Callable[[], None]:
    """A callback storing the mutant picked on the chart (``points``) or in the table (``rows``)."""
    def pick() -> None:
        ev = st.session_state.get(widget_key)
        for p in (ev["selection"][part] if ev else []):
            cd = p.get("customdata") if part == "points" else p
            if cd is not None:
                st.session_state[SELECTED] = int(cd[0] if isinstance(cd, (list, tuple)) else cd)
                return
    return pick


def neighbourhood(job_id: str, job_active: bool) -> None:
    """Section 3: the mutants so far, their ratios against the base, a chart and a table to open one."""
    @st.fragment(run_every=poll_every(job_active, 1.5))
    def panel() -> None:
        run = get_run(job_id)
        if run is None:
            st.warning(f"No exploration with id `{job_id}` in the store (deleted?).")
            return
        j = manager().get(job_id)
        snap = j.snapshot() if j is not None else None
        status = snap.status if snap is not None else run.status
        if snap is None and status.active:
            status = RunStatus.INTERRUPTED
        if job_active and snap is not None and snap.done:
            st.rerun()
        records = store().evaluations(job_id)
        with st.container(key="explore_status"):
            st.markdown(f"**Run `{job_id}`** · {status_badge(status)} · {run.label}")
            if snap is not None and snap.status == RunStatus.QUEUED:
                st.info(f"Waiting in the queue (position {snap.queue_position}); the server runs "
                        f"{manager().max_concurrent} job(s) at once.", icon=":material/hourglass_top:")
            n_target = run.n_mutations
            st.progress(min(len(records) / n_target, 1.0) if n_target else 0.0,
                        text=f"{len(records)} / {n_target} mutants fitted")
            if snap is not None and not snap.done:
                st.button("Stop", key="ex_stop", icon=":material/stop_circle:", on_click=manager().cancel,
                          args=(job_id,))
            if status == RunStatus.FAILED:
                st.error(f"The exploration failed: {(run.error or (snap.error if snap else '')).splitlines()[0]}")
        if len(records) and run.dataset is not None:
            mutants(run.id, run, records, selectable=not job_active)

    panel()


def mutants(job_id: str, run: RunRecord, records: pd.DataFrame, *, selectable: bool) -> None:
    """Ratios, the chart and the table of an exploration's mutants; the one picked, drawn."""
    nb = run.neighbours
    base_q = nb.base_q if nb is not None else None
    base_rmse = nb.base_test_rmse if nb is not None else None
    better, simpler, both = run.neighbour_ratios(records)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Original", f"q = {base_q}", help=f"Test RMSE {fmt(base_rmse)}")
    c2.metric("Better fitted", f"{fmt(100 * better, '.1f')} %",
              help="Mutants with a lower test RMSE than the original.")
    c3.metric("Simpler", f"{fmt(100 * simpler, '.1f')} %", help="Mutants with fewer hyperparameters q.")
    c4.metric("Both", f"{fmt(100 * both, '.1f')} %", help="Better fitted and simpler.")
    fig = polish(explorer_figure(records, int(base_q or 0), base_rmse))
    fig.update_layout(uirevision=f"explore-{job_id}")
    table = records[["generation", "idx", "infix", "q", "test_rmse", "bic", "status", "origin"]].copy()
    table.insert(0, "row", range(len(table)))
    table = dash_empty(table, {"test_rmse": ".4g", "bic": ".2f"})
    cfg = {
        "infix": st.column_config.TextColumn("kernel", width="large"),
        "test_rmse": st.column_config.TextColumn("test RMSE"),
        "bic": st.column_config.TextColumn("BIC"),
        "generation": st.column_config.NumberColumn("batch"),
    }
    if not selectable:
        st.plotly_chart(fig, key=f"ex_chart_live_{job_id}", config={"displaylogo": False})
        st.caption("Click a point or select a row to open that mutant. Click a column header to sort.")
        st.dataframe(table, hide_index=True, column_config=cfg, height=320)
        return
    st.plotly_chart(fig, key=f"ex_chart_{job_id}", on_select=_select_from(f"ex_chart_{job_id}", "points"),
                    selection_mode="points", config={"displaylogo": False})
    st.caption("Click a point or select a row to open that mutant. Click a column header to sort.")
    st.dataframe(table, hide_index=True, column_config=cfg, key=f"ex_table_{job_id}",
                 on_select=_select_from(f"ex_table_{job_id}", "rows"), selection_mode="single-row", height=320)
    sel = st.session_state.get(SELECTED)
    if sel is None or not 0 <= sel < len(records):
        return
    row = records.iloc[sel]
    st.divider()
    dsx = run.dataset
    assert dsx is not None
    try:
        fit = EvalRecord.from_row(row).to_fit(dsx.n_train, run.settings.get("fit_points"))
    except (ValueError, KernelFileError) as exc:
        st.warning(f"Cannot open mutant {sel}: {exc}")
        return
    show_kernel(fit, dsx, key=f"ex_sel_{job_id}", title=f"Mutant {sel} ({row['origin']})",
                download_name=f"evocov-mutant-{dsx.name}-{job_id}-{sel}.json")


def render() -> None:
    """The whole page."""
    st.title("Mutation explorer")
    ds = modelled(current_dataset())  # with covariates: along time, their effect taken out, as searches model it
    st.caption(
        f"Take a fitted kernel, make M random mutations of it (each PSD-checked and refitted from the "
        f"parent's values) and compare each mutant's test RMSE and size with the original (the paper's "
        f"Figure 4 and Table 3). Data: **{ds.name}** ({dataset_summary(ds)})."
    )
    job_id, _, job_active = watched_job("explore", EXPLORE_JOB_KEY)
    base, base_name = base_kernel(ds)
    mutation_settings(ds, base, base_name, job_active)
    st.subheader("3 · Neighbourhood")
    if not job_id:
        st.info("No exploration in this session yet: choose a base kernel and press **Start exploration**.",
                icon=":material/science:")
        return
    neighbourhood(job_id, job_active)
