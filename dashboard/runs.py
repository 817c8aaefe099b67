"""Runs and jobs: the process-wide job manager, the run store, the runs this session watches.

Nothing here runs a search in the script thread: searches and explorations go to the
:class:`~evocov_core.runs.jobs.JobManager`; pages poll it from fragments. What the store hands
back is a frozen :class:`~evocov_core.runs.run_record.RunRecord`.
"""

from __future__ import annotations

import math
import sqlite3
import time
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.datasets import dataset_fingerprint
from dashboard.format import algorithm_label, finite, fmt
from dashboard.panel_runs import PanelRuns
from dashboard.state import GPSS_JOBS_KEY, MY_RUNS_KEY
from evocov_core.data import Dataset
from evocov_core.runs.jobs import Job, JobManager, JobSpec
from evocov_core.runs.run_record import RunRecord
from evocov_core.runs.store import RunStore, StoreVersionError, default_data_dir
from evocov_core.searches import RunStatus, preset


@st.cache_resource(show_spinner=False)
def _manager_for(path: str) -> JobManager:
    return JobManager(RunStore(path))


def manager() -> JobManager:
    """The process-wide job manager (one per data folder, so tests can point elsewhere)."""
    return _manager_for(str(default_data_dir()))


@st.cache_resource(show_spinner=False)
def _panel_runs_for(path: str) -> PanelRuns:
    return PanelRuns(path)


def panel_runs() -> PanelRuns:
    """The panel runs of the data folder, made once per server: the first page a (re)started server draws
    resumes the panel runs it finds interrupted (:class:`~dashboard.panel_runs.PanelRuns`)."""
    return _panel_runs_for(str(default_data_dir()))


def store_problem() -> str | None:
    """Why the run store cannot be used (a folder that is a file or was deleted, a file that is no
    database, no permission, a newer layout), as a sentence for the page; None when it can."""
    path = default_data_dir()
    try:
        manager().store.ping()  # type: ignore[union-attr]
    except (OSError, sqlite3.Error, StoreVersionError) as exc:
        return (f"The run store in `{path}` cannot be used: {exc}. Set `EVOCOV_DATA_DIR` to a folder this "
                "server can write, then restart the dashboard.")
    return None


def store() -> RunStore:
    """The run store of :func:`manager`."""
    s = manager().store
    assert s is not None
    return s


def watched_job(query_key: str, state_key: str) -> tuple[str | None, Job | None, bool]:
    """The job this session watches: ``(job id, job or None, still running)``.

    The id lives in the session state and is mirrored in the URL (``?<query_key>=<id>``), so a
    reload, a bookmark or a new tab comes back to the same job; a URL id wins over the session's.
    ``job`` is None when the id is not in this server's job manager (an old run: read the store).
    """
    qp = st.query_params.get(query_key)
    if qp:
        st.session_state[state_key] = qp
    job_id: str | None = st.session_state.get(state_key)
    if job_id and st.query_params.get(query_key) != job_id:
        st.query_params[query_key] = job_id
    job = manager().get(job_id) if job_id else None
    return job_id, job, job is not None and not job.snapshot().done


def list_runs(kind: str | None = None) -> pd.DataFrame:
    """Every run in the store, newest first (see :meth:`RunStore.list_runs`)."""
    return store().list_runs(kind)


def runs_with_a_kernel(kind: str = "search") -> pd.DataFrame:
    """The runs of ``kind`` that have a best kernel, newest first."""
    runs = list_runs(kind)
    return runs[runs["best_kernel"].notna()] if len(runs) else runs


def get_run(run_id: str) -> RunRecord | None:
    """One run of the store (see :meth:`RunStore.get_run`), or None."""
    return store().get_run(run_id)


def remember_run(run_id: str) -> None:
    """Note that this session started ``run_id``."""
    runs = st.session_state.setdefault(MY_RUNS_KEY, [])
    if run_id not in runs:
        runs.append(run_id)


def latest_session_run(kind: str = "search") -> str | None:
    """The newest run of ``kind`` this session started that is still in the store."""
    ids = st.session_state.get(MY_RUNS_KEY, [])
    if not ids:
        return None
    present = set(list_runs(kind)["id"])
    for rid in reversed(ids):
        if rid in present:
            return rid
    return None


def runs_on_dataset(
    ds: Dataset, *, algorithm: str | None = None, kind: str = "search",
    statuses: tuple[RunStatus, ...] = (RunStatus.FINISHED,)
) -> list[RunRecord]:
    """Stored runs on exactly these data (same values and split), newest first."""
    fp = dataset_fingerprint(ds)
    out = []
    for row in list_runs(kind).itertuples(index=False):
        if algorithm is not None and row.algorithm != algorithm:
            continue
        if row.status not in statuses or row.dataset_name != ds.name:
            continue
        run = get_run(row.id)
        if run is not None and run.dataset is not None and dataset_fingerprint(run.dataset) == fp:
            out.append(run)
    return out


def run_label(run: Any) -> str:
    """One line describing a run: a :meth:`RunStore.list_runs` row or a :class:`RunRecord` (same names)."""
    created = getattr(run, "created", None)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(created))) if created else ""
    bic = getattr(run, "best_bic", None)
    extra = f" · BIC {fmt(bic, '.1f')}" if math.isfinite(finite(bic)) else ""
    return (f"{when} · {algorithm_label(str(run.algorithm))} · {run.dataset_name} · "
            f"{run.status}{extra} · {run.id}")


def gpss_baseline_job(ds: Dataset) -> Job | None:
    """This session's background GPSS job on ``ds``, or None."""
    jid = st.session_state.get(GPSS_JOBS_KEY, {}).get(dataset_fingerprint(ds))
    return manager().get(jid) if jid else None


def start_gpss_baseline(ds: Dataset) -> str:
    """Submit a quick GPSS search on ``ds`` as a background job; returns its id."""
    spec = JobSpec(kind="search", dataset=ds, config=preset("quick", "gpss"), seed=0,
                   label=f"GPSS baseline · {ds.name}")
    gid = manager().submit(spec)
    st.session_state.setdefault(GPSS_JOBS_KEY, {})[dataset_fingerprint(ds)] = gid
    remember_run(gid)
    return gid
