"""Mutation explorer: mutate a fitted kernel many times and see how its neighbours extrapolate."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.common import (
    EXPLORE_JOB_KEY,
    background_fit,
    current_dataset,
    dataset_fingerprint,
    dataset_summary,
    existing_fit,
    fit_from_doc,
    fmt,
    formula,
    get_run,
    gpss_baseline_job,
    list_runs,
    manager,
    page_setup,
    polish,
    poll_every,
    remember_run,
    run_label,
    runs_on_dataset,
    show_kernel,
    start_gpss_baseline,
    status_badge,
    store,
    watched_job,
    with_test_rmse,
)
from evocov_core.baselines import fit_fixed, fit_structure
from evocov_core.figures import explorer_figure
from evocov_core.jobs import JobSpec
from evocov_core.kernel_file import KernelFileError, parse_kernel_file
from evocov_core.library import GPSS_PUBLISHED, WELL_KNOWN, structure_text
from evocov_core.metrics import METRIC_LABELS, METRICS, FitData
from evocov_core.optimize import FitResult, FitStatus
from evocov_core.search import ConfigError, EvalRecord, RunStatus, preset

page_setup("Mutation explorer")
st.title("Mutation explorer")
ds = current_dataset()
fp = dataset_fingerprint(ds)
st.caption(
    f"Take a fitted kernel, make M random mutations of it (each PSD-checked and refitted from the "
    f"parent's values) and compare each mutant's test RMSE and size with the original (the paper's "
    f"Figure 4 and Table 3). Data: **{ds.name}** ({dataset_summary(ds)})."
)

CPUS = os.cpu_count() or 1
SOURCES = {
    "gpss_run": "GPSS baseline on these data",
    "published": "Published GPSS structure",
    "well_known": "Well-known kernel",
    "file": "Kernel file",
    "search": "Search result",
}

# --- the job this session watches ---------------------------------------------------------------
job_id, job, job_active = watched_job("explore", EXPLORE_JOB_KEY)


def _background_base(key: tuple, label: str, fn, *args) -> FitResult | None:
    """A base fitted in the background: a button to start, progress while fitting, the fit when done."""
    fut = existing_fit(key)
    if fut is None:
        st.caption(
            "Its hyperparameters must first be fitted on the current data (in the background; this can take a minute)."
        )
        if st.button(f"Fit {label} on {ds.name}", key=f"ex_fit_{key[0]}_{key[1]}", icon=":material/play_arrow:"):
            background_fit(key, fn, *args)
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


# --- 1. the base kernel ---------------------------------------------------------------------------
st.subheader("1 · Base kernel")
source = st.radio(
    "Start from",
    list(SOURCES),
    format_func=SOURCES.get,
    horizontal=True,
    key="ex_source",
    help="The kernel whose neighbourhood is explored. Its values are read in the current data's model units.",
)
base: FitResult | None = None
base_name = ""
if source == "gpss_run":
    gruns = runs_on_dataset(ds, algorithm="gpss")
    if gruns:
        pick = st.selectbox("GPSS run", range(len(gruns)), format_func=lambda i: run_label(gruns[i]), key="ex_gpss_run")
        base = fit_from_doc(gruns[pick]["best"], ds.n_train)
        base_name = f"GPSS baseline ({gruns[pick]['id']})"
    else:
        gj = gpss_baseline_job(ds)
        if gj is None:
            st.info(f"No finished GPSS run on {ds.name} yet.", icon=":material/info:")
            if st.button("Run a quick GPSS search in the background", key="ex_run_gpss", icon=":material/play_arrow:"):
                start_gpss_baseline(ds)
                st.rerun()
        else:

            @st.fragment(run_every=1.5)
            def wait_gpss() -> None:
                snap = gj.snapshot()
                if snap.done:
                    st.rerun()
                st.info(
                    f"GPSS search {snap.id} running in the background: {snap.status}, level "
                    f"{snap.generation}/{snap.total_generations or '?'}.",
                    icon=":material/hourglass_top:",
                )

            wait_gpss()
elif source == "published":
    name = st.selectbox(
        "Structure",
        list(GPSS_PUBLISHED),
        key="ex_published",
        format_func=lambda k: f"{k}: {structure_text(GPSS_PUBLISHED[k])}",
        help="Structures GPSS found on the 13 TSDL series (Duvenaud et al. 2013); their "
        "hyperparameters are refitted on the current data.",
    )
    base = _background_base(
        ("structure", name, fp), name, fit_structure, GPSS_PUBLISHED[name], FitData.from_dataset(ds)
    )
    base_name = f"GPSS structure {name}"
elif source == "well_known":
    name = st.selectbox(
        "Kernel",
        list(WELL_KNOWN),
        key="ex_well_known",
        help="The paper's Table 1 kernels (WN is the zero kernel plus the model's noise).",
    )
    base = _background_base(("well_known", name, fp), name, fit_fixed, WELL_KNOWN[name](), FitData.from_dataset(ds))
    base_name = name
elif source == "file":
    up = st.file_uploader("Kernel file (JSON)", type=["json"], key="ex_kernel_file")
    if up is not None:
        try:
            base = with_test_rmse(parse_kernel_file(up.getvalue()).to_fit(ds.n_train), ds)
            base_name = up.name
        except KernelFileError as exc:
            st.error(f"**Cannot load {up.name}:** {exc}", icon=":material/block:")
        except Exception as exc:
            st.error(f"**Cannot use {up.name} on {ds.name}:** {exc}", icon=":material/block:")
else:
    sruns = list_runs("search")
    sruns = sruns[sruns["best_kernel"].notna()] if len(sruns) else sruns
    if len(sruns) == 0:
        st.info("No search with a best kernel in the store yet.", icon=":material/info:")
    else:
        labels = {r.id: run_label(r) for r in sruns.itertuples(index=False)}
        rid = st.selectbox("Run", list(sruns["id"]), format_func=labels.get, key="ex_search_run")
        run = get_run(rid)
        if run and run.get("best"):
            base = fit_from_doc(run["best"], ds.n_train)
            if run["dataset"] is None or dataset_fingerprint(run["dataset"]) != fp:
                st.warning(
                    f"This run was on {run['dataset_name']}, not on the current data: its values are read "
                    f"in {ds.name}'s model units and its test RMSE recomputed."
                )
                base = with_test_rmse(base, ds)
            base_name = f"best of run {rid}"

if base is not None:
    st.markdown(f"**{base_name}**")
    formula(base.kernel)
    c1, c2, c3 = st.columns(3)
    c1.metric("q", base.q)
    c2.metric("Test RMSE", fmt(base.test_rmse))
    c3.metric("BIC", fmt(base.bic, ".2f"))

# --- 2. settings and start -----------------------------------------------------------------------------
st.subheader("2 · Mutations")
a, b, c, d = st.columns(4)
n_mut = a.number_input(
    "Number of mutations M",
    min_value=1,
    max_value=5000,
    value=100,
    step=10,
    key="ex_n",
    help="The paper uses 200. Each mutant is fitted like a search candidate.",
)
metric = b.selectbox(
    "Metric",
    METRICS,
    format_func=METRIC_LABELS.get,
    key="ex_metric",
    help="Hyperparameter metric used to fit each mutant.",
)
seed = c.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="ex_seed")
workers = d.number_input("Worker processes", min_value=1, max_value=CPUS * 4, value=CPUS, step=1, key="ex_workers")
why = None
if base is None:
    why = "Choose and fit a base kernel first."
elif job_active:
    why = "An exploration is already running in this session."
if st.button("Start exploration", type="primary", key="ex_start", disabled=why is not None, help=why):
    assert base is not None
    try:
        cfg = preset("quick", "evocov", metric=metric)
    except ConfigError as exc:
        st.error(str(exc))
    else:
        spec = JobSpec(
            kind="explore",
            dataset=ds,
            config=cfg,
            seed=int(seed),
            workers=int(workers),
            label=f"Explore {base_name} · {ds.name}",
            base=base,
            n_mutations=int(n_mut),
        )
        new_id = manager().submit(spec)
        st.session_state[EXPLORE_JOB_KEY] = new_id
        st.session_state.pop("ex_selected", None)
        remember_run(new_id)
        st.query_params["explore"] = new_id
        st.rerun()

# --- 3. the exploration ---------------------------------------------------------------------------------
st.subheader("3 · Neighbourhood")
if not job_id:
    st.info(
        "No exploration in this session yet: choose a base kernel and press **Start exploration**.",
        icon=":material/science:",
    )
    st.stop()


def _base_reference(run: dict) -> tuple[int | None, float | None]:
    extra = run.get("extra") or {}
    if "base_q" in extra:
        return extra.get("base_q"), extra.get("base_test_rmse")
    doc = extra.get("base") or {}
    return doc.get("q"), (doc.get("scores") or {}).get("test_rmse")


def _ratios(records: pd.DataFrame, base_q: int | None, base_rmse: float | None) -> tuple[float, float, float]:
    # Same definition as evocov_core.search.neighbour_ratios, on the stored rows (for live display).
    if not len(records) or base_q is None:
        return math.nan, math.nan, math.nan
    ref = base_rmse if base_rmse is not None else math.inf
    rm = pd.to_numeric(records["test_rmse"], errors="coerce").to_numpy(dtype=float)
    better = (records["status"].to_numpy() == FitStatus.OK) & np.isfinite(rm) & (rm < ref)
    simpler = records["q"].to_numpy() < base_q
    return float(better.mean()), float(simpler.mean()), float((better & simpler).mean())


def _select_from_chart() -> None:
    ev = st.session_state.get(f"ex_chart_{job_id}")
    pts = ev["selection"]["points"] if ev else []
    for p in pts:
        cd = p.get("customdata")
        if cd is not None:
            st.session_state["ex_selected"] = int(cd[0] if isinstance(cd, (list, tuple)) else cd)
            return


def _select_from_table() -> None:
    ev = st.session_state.get(f"ex_table_{job_id}")
    rows = ev["selection"]["rows"] if ev else []
    if rows:
        st.session_state["ex_selected"] = int(rows[0])


@st.fragment(run_every=poll_every(job_active, 1.5))
def neighbourhood() -> None:
    run = get_run(job_id)
    if run is None:
        st.warning(f"No exploration with id `{job_id}` in the store (deleted?).")
        return
    j = manager().get(job_id)
    snap = j.snapshot() if j is not None else None
    status = snap.status if snap is not None else RunStatus(run["status"])
    if snap is None and status.active:
        status = RunStatus.INTERRUPTED
    if job_active and snap is not None and snap.done:
        st.rerun()
    with st.container(key="explore_status"):
        st.markdown(f"**Run `{job_id}`** · {status_badge(status)} · {run.get('label') or ''}")
        n_target = int(run["settings"].get("n_mutations") or 0)
        records = store().evaluations(job_id)
        if snap is not None and snap.status == RunStatus.QUEUED:
            st.info(
                f"Waiting in the queue (position {snap.queue_position}); the server runs "
                f"{manager().max_concurrent} job(s) at once.",
                icon=":material/hourglass_top:",
            )
        st.progress(
            min(len(records) / n_target, 1.0) if n_target else 0.0, text=f"{len(records)} / {n_target} mutants fitted"
        )
        if snap is not None and not snap.done:
            st.button("Stop", key="ex_stop", icon=":material/stop_circle:", on_click=manager().cancel, args=(job_id,))
        if status == RunStatus.FAILED:
            st.error(f"The exploration failed: {(run.get('error') or (snap.error if snap else '')).splitlines()[0]}")
    if not len(records):
        return
    dsx = run["dataset"]
    base_q, base_rmse = _base_reference(run)
    extra = snap.extra if snap is not None and snap.extra else run.get("extra") or {}
    if "better_fitted" in extra:
        better, simpler, both = extra.get("better_fitted"), extra.get("simpler"), extra.get("both")
    else:
        better, simpler, both = _ratios(records, base_q, base_rmse)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Original", f"q = {base_q}", help=f"Test RMSE {fmt(base_rmse)}")
    c2.metric(
        "Better fitted",
        f"{fmt(100 * better if better is not None else None, '.1f')} %",
        help="Mutants with a lower test RMSE than the original.",
    )
    c3.metric(
        "Simpler",
        f"{fmt(100 * simpler if simpler is not None else None, '.1f')} %",
        help="Mutants with fewer hyperparameters q.",
    )
    c4.metric("Both", f"{fmt(100 * both if both is not None else None, '.1f')} %", help="Better fitted and simpler.")
    fig = polish(explorer_figure(records, int(base_q or 0), base_rmse))
    fig.update_layout(uirevision=f"explore-{job_id}")
    selectable = not job_active
    if selectable:
        st.plotly_chart(
            fig,
            key=f"ex_chart_{job_id}",
            on_select=_select_from_chart,
            selection_mode="points",
            config={"displaylogo": False},
        )
    else:
        st.plotly_chart(fig, key=f"ex_chart_live_{job_id}", config={"displaylogo": False})
    table = records[["generation", "idx", "infix", "q", "test_rmse", "bic", "status", "origin"]].copy()
    table.insert(0, "row", range(len(table)))
    cfg = {
        "infix": st.column_config.TextColumn("kernel", width="large"),
        "test_rmse": st.column_config.NumberColumn("test RMSE", format="%.4g"),
        "bic": st.column_config.NumberColumn("BIC", format="%.2f"),
        "generation": st.column_config.NumberColumn("batch"),
    }
    st.caption("Click a point or select a row to open that mutant. Click a column header to sort.")
    if selectable:
        st.dataframe(
            table,
            hide_index=True,
            column_config=cfg,
            key=f"ex_table_{job_id}",
            on_select=_select_from_table,
            selection_mode="single-row",
            height=320,
        )
    else:
        st.dataframe(table, hide_index=True, column_config=cfg, height=320)

    sel = st.session_state.get("ex_selected")
    if selectable and sel is not None and 0 <= sel < len(records):
        row = records.iloc[sel]
        st.divider()
        try:
            fit = EvalRecord.from_row(row).to_fit(dsx.n_train)
        except (ValueError, KernelFileError) as exc:
            st.warning(f"Cannot open mutant {sel}: {exc}")
        else:
            show_kernel(
                fit,
                dsx,
                key=f"ex_sel_{job_id}",
                title=f"Mutant {sel} ({row['origin']})",
                download_name=f"evocov-mutant-{dsx.name}-{job_id}-{sel}.json",
            )


neighbourhood()
