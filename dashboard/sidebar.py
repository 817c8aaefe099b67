"""The shared sidebar (page list, current dataset, this session's jobs) and :func:`page_setup`."""

from __future__ import annotations

from concurrent.futures import Future

import streamlit as st

from dashboard.datasets import current_dataset, dataset_summary, set_dataset
from dashboard.format import STATUS_ICONS, algorithm_label, poll_every
from dashboard.runs import get_run, manager, panel_runs, store_problem
from dashboard.state import (
    EXPLORE_JOB_KEY,
    FAVICON,
    PAGE_EXPLORER,
    PAGE_PANEL,
    PAGE_SEARCH,
    PAGES,
    PANEL_RUN_KEY,
    RESULTS_RUN_KEY,
    SEARCH_JOB_KEY,
    SOURCE_KEY,
)
from evocov_core.compute.runners import run_in_daemon_process
from evocov_core.fitting.gp import load_fused_loop
from evocov_core.runs.jobs import Job, JobKind, JobSnapshot
from evocov_core.searches import RunStatus


def page_setup(title: str) -> None:
    """Call first on every page: browser title, wide layout, and the shared sidebar."""
    st.set_page_config(page_title=f"{title} · EvoCov", page_icon=FAVICON, layout="wide")
    problem = store_problem()
    if problem is not None:  # every page reads or writes runs: say why once, instead of a traceback
        st.error(problem, icon=":material/database:")
        st.stop()
    panel_runs()  # made on a server's first page: it resumes the panel runs a stopped server left
    _fused_loops_loaded()
    sidebar()


@st.cache_resource(show_spinner=False)
def _fused_loops_loaded() -> Future:
    """A server's first page compiles the fused loops of short series in a child process (Numba caches them
    on disk): on a new machine the one compile, 20-40 s, is under way while the user picks data, not after
    the first search's Start (a search loads them before its clock starts)."""
    return run_in_daemon_process(load_fused_loop, name="evocov-compile")


def _adopt_run_dataset(run_id: str) -> None:
    """A fresh session (a reloaded tab) opened on a run's URL takes that run's data as its dataset."""
    if SOURCE_KEY in st.session_state:
        return
    try:
        run = get_run(run_id)
    except Exception:  # a malformed id must not break the page
        run = None
    if run is not None and run.dataset is not None:
        set_dataset(run.dataset, {"kind": "run", "name": run.dataset.name, "run": run_id})


def sync_query_params() -> None:
    """Runs named in the URL (``?job=``, ``?explore=``, ``?run=``) become this session's."""
    for param, key in (("job", SEARCH_JOB_KEY), ("explore", EXPLORE_JOB_KEY), ("run", RESULTS_RUN_KEY)):
        value = st.query_params.get(param)
        if value:
            st.session_state[key] = value
            _adopt_run_dataset(value)


def _progress_words(job: Job, snap: JobSnapshot) -> str:
    """"generation 10 · 42 s left" for a timed search (its generation count is only a cap), else
    "generation 10/100"."""
    unit = "batch" if snap.kind is JobKind.EXPLORE else "generation"
    budget = float(job.spec.config.time_budget or 0) if snap.kind is JobKind.SEARCH else 0.0
    if budget > 0:
        return f"{unit} {snap.generation} · {max(0.0, budget - snap.elapsed):.0f} s left"
    return f"{unit} {snap.generation}/{snap.total_generations or '?'}"


def _job_lines(job_id: str, page: str, param: str, what: str) -> bool:
    """Sidebar lines for one job; returns whether it is still going."""
    job = manager().get(job_id)
    if job is None:
        return False
    snap = job.snapshot()
    st.markdown(f"**{'Active' if not snap.done else 'Last'} {what}**")
    if snap.status == RunStatus.QUEUED:
        st.caption(f"{algorithm_label(snap.algorithm)} · queued, position {snap.queue_position}")
    elif snap.status == RunStatus.RUNNING:
        st.caption(f"{algorithm_label(snap.algorithm)} · {_progress_words(job, snap)}")
    else:
        st.caption(f"{algorithm_label(snap.algorithm)} · {snap.status}")
    st.page_link(page, label=f"Run {job_id}", icon=STATUS_ICONS.get(snap.status), query_params={param: job_id})
    return not snap.done


def panel_lines() -> None:
    """The panel run this session watches, redrawn every 2 s while it runs."""
    run_id = st.session_state.get(PANEL_RUN_KEY)
    if not run_id or not panel_runs().exists(run_id):
        return

    @st.fragment(run_every=poll_every(panel_runs().status(run_id).active, 2.0))
    def lines() -> None:
        s = panel_runs().status(run_id)
        st.markdown(f"**{'Active' if s.active else 'Last'} panel run**")
        st.caption(f"{s.request.name} · {s.done}/{s.total} series · {s.state}")
        st.page_link(PAGE_PANEL, label=f"Panel {run_id}", icon=":material/stacked_line_chart:",
                     query_params={"panel": run_id})

    with st.sidebar:
        lines()


def sidebar() -> None:
    """The page list, the current dataset and this session's jobs (every page draws it)."""
    sync_query_params()
    for page, label, icon in PAGES:
        st.sidebar.page_link(page, label=label, icon=icon)
    st.sidebar.divider()
    ds = current_dataset()
    st.sidebar.markdown("**Current dataset**")
    st.sidebar.markdown(f"`{ds.name}` — {dataset_summary(ds)}")
    panel_lines()
    jobs = [
        (st.session_state.get(SEARCH_JOB_KEY), PAGE_SEARCH, "job", "search"),
        (st.session_state.get(EXPLORE_JOB_KEY), PAGE_EXPLORER, "explore", "exploration"),
    ]
    jobs = [j for j in jobs if j[0] and manager().get(j[0]) is not None]
    if not jobs:
        return
    active = any(not manager().get(j[0]).snapshot().done for j in jobs)

    @st.fragment(run_every=poll_every(active, 2.0))
    def job_panel() -> None:
        for j in jobs:
            _job_lines(*j)

    with st.sidebar:
        job_panel()
