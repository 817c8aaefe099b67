"""What the dashboard pages share: the session's dataset, the job manager, run look-ups, kernel views.

Pages import from here (``from dashboard.common import ...``); the repository root is on
``sys.path`` under ``streamlit run app.py``. Nothing here runs a search in the script
thread: searches and explorations go to the process-wide :class:`JobManager`, and the
slower reference fits (SE baseline, fixed structures) to child processes
(:mod:`dashboard.background`); pages poll both from fragments.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.background import FitRunner
from evocov_core.data import DataError, Dataset, bundled_datasets, dataset_from_frame, load_bundled, read_table
from evocov_core.figures import (
    component_figure,
    components_data,
    extrapolation_data,
    extrapolation_figure,
    hyperparameter_table,
    tree_figure,
)
from evocov_core.jobs import Job, JobManager
from evocov_core.kernel import Kernel
from evocov_core.kernel_file import (
    KernelFileError,
    dump_kernel_file,
    kernel_file_dict,
    model_average_dict,
    parse_kernel_file,
)
from evocov_core.model import FittedModel, ModelAverage
from evocov_core.optimize import FitResult
from evocov_core.search import ALGORITHM_LABELS, RunStatus
from evocov_core.store import RunStore, default_data_dir

# --- page paths and session keys -----------------------------------------------------------

PAGE_DATA = "pages/1_data.py"
PAGE_SEARCH = "pages/2_search.py"
PAGE_RESULTS = "pages/3_results.py"
PAGE_EXPLORER = "pages/4_explorer.py"
PAGE_RUNS = "pages/5_runs.py"

DATASET_KEY = "evocov_dataset"  # the selected Dataset, shared by every page
SOURCE_KEY = "evocov_dataset_source"  # {"kind": "bundled" | "upload", "name": ...}
SEARCH_JOB_KEY = "evocov_search_job"  # id of the search this session watches
EXPLORE_JOB_KEY = "evocov_explore_job"  # id of the exploration this session watches
RESULTS_RUN_KEY = "evocov_results_run"  # run the Results page opens
MY_RUNS_KEY = "evocov_my_runs"  # ids of the runs this session started, oldest first
GPSS_JOBS_KEY = "evocov_gpss_jobs"  # dataset fingerprint -> GPSS baseline job id

DEFAULT_DATASET = "airline"
DEFAULT_TEST_FRACTION = 0.1

STATUS_ICONS = {
    RunStatus.QUEUED: ":material/hourglass_top:",
    RunStatus.RUNNING: ":material/sync:",
    RunStatus.FINISHED: ":material/check_circle:",
    RunStatus.CANCELLED: ":material/stop_circle:",
    RunStatus.FAILED: ":material/error:",
    RunStatus.INTERRUPTED: ":material/warning:",
}
STATUS_COLORS = {
    RunStatus.QUEUED: "gray",
    RunStatus.RUNNING: "blue",
    RunStatus.FINISHED: "green",
    RunStatus.CANCELLED: "orange",
    RunStatus.FAILED: "red",
    RunStatus.INTERRUPTED: "orange",
}


def status_badge(status: str) -> str:
    """Markdown for a run status, e.g. ``:green[:material/check_circle: finished]``."""
    return f":{STATUS_COLORS.get(status, 'gray')}[{STATUS_ICONS.get(status, '')} {status}]"


def algorithm_label(algorithm: str) -> str:
    if algorithm == "explore":
        return "Mutation explorer"
    return ALGORITHM_LABELS.get(algorithm, algorithm)


def max_upload_bytes() -> int:
    """The upload limit in bytes (``server.maxUploadSize`` of ``.streamlit/config.toml``, in MB)."""
    try:
        mb = int(st.get_option("server.maxUploadSize"))
    except Exception:  # pragma: no cover - option always exists in practice
        mb = 20
    return mb * 1024 * 1024


#: The pages in sidebar order: script, label, icon. Streamlit's own multipage mode serves every
#: script in ``pages/`` at ``/<name without its number>`` (``/data``, ``/search``...); its
#: automatic sidebar list is off (``client.showSidebarNavigation`` in .streamlit/config.toml)
#: so that :func:`sidebar` can show these labels and icons instead of file names.
PAGES = (
    (PAGE_DATA, "Data", ":material/show_chart:"),
    (PAGE_SEARCH, "Search", ":material/genetics:"),
    (PAGE_RESULTS, "Results", ":material/emoji_events:"),
    (PAGE_EXPLORER, "Mutation explorer", ":material/science:"),
    (PAGE_RUNS, "Runs", ":material/folder_open:"),
)


def page_setup(title: str) -> None:
    """Call first on every page: browser title, wide layout, and the shared sidebar."""
    st.set_page_config(page_title=f"{title} · EvoCov", page_icon=":material/genetics:", layout="wide")
    sidebar()


# --- the job manager and the run store ------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _manager_for(path: str) -> JobManager:
    return JobManager(RunStore(path))


def manager() -> JobManager:
    """The process-wide job manager (one per data folder, so tests can point elsewhere)."""
    return _manager_for(str(default_data_dir()))


def store() -> RunStore:
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


def get_run(run_id: str) -> dict | None:
    """One run of the store (see :meth:`RunStore.get_run`), or None."""
    return store().get_run(run_id)


def remember_run(run_id: str) -> None:
    runs = st.session_state.setdefault(MY_RUNS_KEY, [])
    if run_id not in runs:
        runs.append(run_id)


def latest_session_run(kind: str = "search") -> str | None:
    """The newest run of ``kind`` this session started that is still in the store."""
    ids = st.session_state.get(MY_RUNS_KEY, [])
    if not ids:
        return None
    runs = list_runs(kind)
    present = set(runs["id"])
    for rid in reversed(ids):
        if rid in present:
            return rid
    return None


# --- datasets --------------------------------------------------------------------------------


@st.cache_data(show_spinner=False)
def catalog() -> list[dict]:
    return bundled_datasets()


@st.cache_data(show_spinner=False)
def _bundled(name: str, test_fraction: float) -> Dataset:
    return load_bundled(name, test_fraction=test_fraction)


def set_dataset(ds: Dataset, source: dict) -> None:
    st.session_state[DATASET_KEY] = ds
    st.session_state[SOURCE_KEY] = source


def current_dataset() -> Dataset:
    """The session's dataset; Airline (test fraction 0.1) until the user picks another."""
    ds = st.session_state.get(DATASET_KEY)
    if ds is None:
        ds = _bundled(DEFAULT_DATASET, DEFAULT_TEST_FRACTION)
        set_dataset(ds, {"kind": "bundled", "name": DEFAULT_DATASET})
    return ds


def dataset_source() -> dict:
    current_dataset()
    return st.session_state.get(SOURCE_KEY) or {"kind": "bundled", "name": DEFAULT_DATASET}


def load_bundled_dataset(name: str, test_fraction: float) -> Dataset:
    return _bundled(name, test_fraction)


def dataset_fingerprint(ds: Dataset) -> str:
    """Identity of a dataset's content and split (name excluded)."""
    h = hashlib.sha1()
    h.update(np.ascontiguousarray(ds.x, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(ds.y, dtype=np.float64).tobytes())
    h.update(f"{ds.test_fraction:.6f}".encode())
    return h.hexdigest()[:16]


def dataset_summary(ds: Dataset) -> str:
    return f"{ds.n} points · {ds.n_train} train · {ds.n_test} test"


ROW_NUMBER = "(row number)"


def read_upload(data: bytes) -> pd.DataFrame:
    """Read uploaded bytes as a table (size limit, empty file and non-CSV refused with DataError)."""
    if len(data) == 0:
        raise DataError("the file is empty")
    return read_table(data, max_bytes=max_upload_bytes())


def upload_to_dataset(
    data: bytes,
    *,
    name: str = "upload",
    x: str | None = None,
    y: str | None = None,
    guess: bool = True,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    max_points: int = 2000,
    subsample: bool = False,
    drop_missing: bool = False,
) -> Dataset:
    """The whole upload validation path: bytes -> Dataset, or a :class:`DataError` that says why.

    ``x`` is a column name, :data:`ROW_NUMBER`/None for the row number; with ``guess`` and no
    ``y`` both are guessed from the table.
    """
    from evocov_core.data import guess_columns

    df = read_upload(data)
    if y is None:
        if not guess:
            raise DataError("choose a column to model (y)")
        gx, y = guess_columns(df)
        if x is None:
            x = gx
    if x == ROW_NUMBER:
        x = None
    return dataset_from_frame(
        df,
        x,
        y,
        name=name,
        test_fraction=test_fraction,
        max_points=max_points,
        subsample=subsample,
        drop_missing=drop_missing,
    )


# --- background reference fits (SE baseline, fixed structures) --------------------------------


@st.cache_resource(show_spinner=False)
def _fit_runner() -> FitRunner:
    # Reference fits take seconds to minutes: one child process at a time, results kept by key
    # for every session of this server.
    return FitRunner(slots=1)


def background_fit(key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` in a child process once per ``key``; returns its Future."""
    return _fit_runner().submit(key, fn, *args, **kwargs)


def existing_fit(key: tuple) -> Future | None:
    return _fit_runner().get(key)


def scrollable_formulas() -> None:
    """Long formulas scroll sideways inside their column instead of running off the page."""
    st.html("<style>.katex-display { overflow-x: auto; overflow-y: hidden; padding-bottom: 4px; }</style>")


def formula(kernel: Kernel) -> None:
    """A kernel's formula as a person reads it: simplified by SymPy (evocov_core.simplify), the tree as
    evolved one click away (the stored expression never changes)."""
    from evocov_core.simplify import display_latex

    scrollable_formulas()
    st.latex(f"k(x, x') = {display_latex(kernel)}")
    with st.expander("As evolved (the stored tree)"):
        st.latex(f"k(x, x') = {kernel.latex}")
        st.code(kernel.infix, language=None, wrap_lines=True)


def polish(fig: Any) -> Any:
    """Dashboard layout of a core figure: the legend under the x-axis title, not on top of it."""
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0, xanchor="left"))
    fig.update_layout(margin=dict(b=60))
    return fig


def poll_every(active: bool, interval: float = 1.0) -> float | None:
    return interval if active else None


# --- fits from stored values -------------------------------------------------------------------


def _finite(v: Any, default: float = math.nan) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def fit_from_doc(doc: dict, n: int = 0) -> FitResult:
    """A FitResult from a kernel-file document (e.g. a run's stored best kernel)."""
    return parse_kernel_file(dump_kernel_file(doc)).to_fit(n)


def with_test_rmse(fit: FitResult, ds: Dataset) -> FitResult:
    """``fit`` with its test RMSE on ``ds`` (its values read in ``ds``'s model units)."""
    if not fit.ok or ds.n_test == 0:
        return fit
    return replace(fit, test_rmse=FittedModel.from_fit(fit, ds.norm).test_rmse(ds))


def kernel_doc(fit: FitResult, ds: Dataset) -> dict:
    return kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, test_fraction=ds.test_fraction)


def fmt(v: Any, spec: str = ".4g") -> str:
    f = _finite(v)
    return format(f, spec) if math.isfinite(f) else "–"


# --- drawing a kernel --------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def _extrapolation(cache_key: str, _model: FittedModel | ModelAverage, _ds: Dataset) -> pd.DataFrame:
    return extrapolation_data(_model, _ds)


def model_key(model: FittedModel | ModelAverage, ds: Dataset) -> str:
    h = hashlib.sha1()
    if isinstance(model, ModelAverage):
        for m, w in zip(model.members, model.weights, strict=True):
            h.update(f"{model_key(m, ds)}:{w!r};".encode())
        return h.hexdigest()
    h.update(model.kernel.prefix.encode())
    h.update(np.asarray(model.theta, dtype=np.float64).tobytes())
    h.update(f"{model.log_noise!r}{model.jitter!r}{model.norm!r}".encode())
    h.update(dataset_fingerprint(ds).encode())
    return h.hexdigest()


def extrapolation_chart(model: FittedModel | ModelAverage, ds: Dataset, key: str, title: str | None = None) -> None:
    try:
        pred = _extrapolation(model_key(model, ds), model, ds)
    except Exception as exc:  # a numerically broken kernel must not break the page
        st.warning(f"Could not compute the predictions: {exc}")
        return
    fig = polish(extrapolation_figure(pred, ds, title=title))
    fig.update_layout(uirevision=key)
    st.plotly_chart(fig, key=key, config={"displaylogo": False})


def show_kernel(
    fit: FitResult,
    ds: Dataset,
    key: str,
    *,
    title: str = "Kernel",
    download_name: str | None = None,
    model: FittedModel | None = None,
    doc: dict | None = None,
    expand_hyperparameters: bool = False,
    average_download: tuple[str, str] | None = None,
) -> None:
    """Tree, formula, scores, hyperparameters, extrapolation and a JSON download of one kernel.

    ``average_download`` = (JSON text, file name) of a model average, offered beside the kernel's.
    """
    k = fit.kernel
    model = model or FittedModel.from_fit(fit, ds.norm)
    left, right = st.columns([1, 1])
    with left:
        st.markdown(f"**{title}**")
        formula(k)
        c1, c2, c3 = st.columns(3)
        c1.metric("q (hyperparameters)", k.q, help="Distinct kernel hyperparameters plus the noise variance.")
        c2.metric("BIC", fmt(fit.bic, ".2f"), help="−2·LML + q·log n on the training data; lower is better.")
        c3.metric("Test RMSE", fmt(fit.test_rmse), help=f"On the {ds.n_test} test points, in {ds.y_label} units.")
        with st.expander("Hyperparameters", expanded=expand_hyperparameters):
            try:
                table = hyperparameter_table(k, model.theta, model.log_noise, model.norm)
                st.dataframe(table, hide_index=True, width="stretch")
            except Exception as exc:
                st.caption(f"Hyperparameter table unavailable: {exc}")
    with right:
        fig = tree_figure(k, model.theta, title="Expression tree")
        st.plotly_chart(fig, key=f"{key}_tree", config={"displaylogo": False})
    extrapolation_chart(model, ds, key=f"{key}_extrap", title="Extrapolation: predictive mean and ±2σ band")
    components_section(model, ds, key=f"{key}_components")
    if download_name:
        d = doc if doc is not None else kernel_doc(fit, ds)
        cols = st.columns(2) if average_download else None
        (cols[0] if cols else st).download_button(
            "Download kernel (JSON)",
            dump_kernel_file(d),
            file_name=download_name,
            mime="application/json",
            key=f"{key}_download",
            icon=":material/download:",
            help="A versioned kernel file: load it on the Results page or with `python -m evocov_core predict`.",
        )
        if cols and average_download:
            with cols[1]:
                average_download_button(*average_download, key=f"{key}_average_download")


def components_section(model: FittedModel, ds: Dataset, *, key: str) -> None:
    """What the kernel says: its additive components, each with its posterior and one sentence."""
    if ds.x.shape[1] != 1:
        return
    with st.expander("What the kernel says: its components", expanded=False):
        comps, noise_sd, xs, split = components_data(model, ds)
        st.caption("The kernel written as a sum of terms (products distributed over sums); each term is an "
                   "independent part of the series. Shares are of the training data's variance; sentences are "
                   "read from each term's kernel function (correlation against lag), not from its name.")
        for i, c in enumerate(comps):
            st.markdown(f"**{i + 1}. {c.sentence[0].upper() + c.sentence[1:]}** — {c.explained:.0%} of the variance")
            st.plotly_chart(component_figure(c, xs, split), key=f"{key}_{i}", config={"displaylogo": False})
            st.caption(f"Term: `{c.kernel.infix}`")
        st.markdown(f"**Noise** with standard deviation {noise_sd:.3g} {ds.y_label}.")


# --- the model choice and the model average of a search ----------------------------------------------


def run_model_average(extra: dict, ds: Dataset) -> tuple[ModelAverage | None, list[dict], str | None]:
    """A run's stored model average: ``(average or None, its entries, why it cannot be used or None)``.

    ``extra["ensemble"]`` holds ``{"weight": w, "kernel": <kernel-file dict>}`` entries; older
    runs have none (``(None, [], None)``).
    """
    entries = [e for e in extra.get("ensemble") or [] if isinstance(e, dict) and isinstance(e.get("kernel"), dict)]
    if not entries:
        return None, [], None
    try:
        avg = ModelAverage.from_docs([e["kernel"] for e in entries], [e.get("weight") for e in entries], ds.norm)
    except (KernelFileError, ValueError, TypeError) as exc:
        return None, entries, str(exc)
    return avg, entries, None


@st.cache_data(show_spinner=False, max_entries=64)
def _average_test_rmse(cache_key: str, _avg: ModelAverage, _ds: Dataset) -> float | None:
    return _avg.test_rmse(_ds)


def average_test_rmse(avg: ModelAverage, ds: Dataset) -> float | None:
    """Test RMSE of the model average's mean (None without test data or when it cannot predict)."""
    try:
        v = _average_test_rmse(model_key(avg, ds), avg, ds)
    except Exception:  # a numerically broken member must not break the page
        return None
    return v if v is not None and math.isfinite(v) else None


def model_average_text(entries: list[dict], ds: Dataset, *, test_rmse: float | None = None, run: str | None = None
                       ) -> str:
    """The model-average JSON file of a run's stored ensemble entries."""
    scores: dict[str, Any] = {"test_rmse": test_rmse, "n_test": ds.n_test, "test_fraction": ds.test_fraction}
    if run:
        scores["run"] = run
    doc = model_average_dict([e["kernel"] for e in entries], [float(e["weight"]) for e in entries],
                             dataset=ds.name, scores=scores)
    return json.dumps(doc, indent=2, allow_nan=False)


def average_download_button(text: str, file_name: str, key: str) -> None:
    st.download_button(
        "Download model average (JSON)",
        text,
        file_name=file_name,
        mime="application/json",
        key=key,
        icon=":material/download:",
        help="The kernels of the model average (each a kernel file) with their weights; the forecast is "
        "the mixture of their predictive distributions.",
    )


def show_model_average(
    avg: ModelAverage,
    ds: Dataset,
    key: str,
    *,
    members: pd.DataFrame,
    test_rmse: float | None,
    title: str = "Model average",
    average_download: tuple[str, str] | None = None,
    kernel_download: tuple[str, str] | None = None,
) -> None:
    """Members, test RMSE, mixture extrapolation and downloads of a model average.

    ``average_download`` / ``kernel_download`` = (JSON text, file name).
    """
    st.markdown(f"**{title}**")
    st.caption(
        "The forecast is the mixture of the kernels' predictive distributions, each weighted: its mean is the "
        "weighted mean of theirs; its band also widens where they disagree."
    )
    c1, c2 = st.columns(2)
    c1.metric("Kernels", avg.k)
    c2.metric("Test RMSE", fmt(test_rmse), help=f"Of the mixture mean, on the {ds.n_test} test points, "
              f"in {ds.y_label} units.")
    st.dataframe(
        members,
        hide_index=True,
        width="stretch",
        column_config={
            "weight": st.column_config.NumberColumn("weight", format="%.3f"),
            "kernel": st.column_config.TextColumn("kernel", width="large"),
            "BIC": st.column_config.NumberColumn("BIC", format="%.2f"),
            "test RMSE": st.column_config.NumberColumn("test RMSE", format="%.4g"),
        },
    )
    extrapolation_chart(avg, ds, key=f"{key}_extrap", title="Extrapolation: mixture mean and ±2σ band")
    c_kernel, c_average = st.columns(2)
    if kernel_download:
        c_kernel.download_button(
            "Download kernel (JSON)",
            kernel_download[0],
            file_name=kernel_download[1],
            mime="application/json",
            key=f"{key}_kernel_download",
            icon=":material/download:",
            help="The chosen kernel alone, as a versioned kernel file.",
        )
    if average_download:
        with c_average:
            average_download_button(*average_download, key=f"{key}_download")


# --- run look-ups --------------------------------------------------------------------------------


def runs_on_dataset(
    ds: Dataset, *, algorithm: str | None = None, kind: str = "search",
    statuses: tuple[RunStatus, ...] = (RunStatus.FINISHED,)
) -> list[dict]:
    """Stored runs on exactly these data (same values and split), newest first."""
    fp = dataset_fingerprint(ds)
    runs = list_runs(kind)
    out = []
    for row in runs.itertuples(index=False):
        if algorithm is not None and row.algorithm != algorithm:
            continue
        if row.status not in statuses or row.dataset_name != ds.name:
            continue
        run = get_run(row.id)
        if run is not None and run.get("dataset") is not None and dataset_fingerprint(run["dataset"]) == fp:
            out.append(run)
    return out


def run_label(row: Any) -> str:
    """One line describing a run (a list_runs row or a get_run dict)."""
    get = row.get if isinstance(row, dict) else (lambda k, d=None: getattr(row, k, d))
    created = get("created")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(created))) if created else ""
    bic = get("best_bic")
    if bic is None and isinstance(get("best"), dict):
        bic = (get("best").get("scores") or {}).get("bic")
    extra = f" · BIC {fmt(bic, '.1f')}" if math.isfinite(_finite(bic)) else ""
    return (
        f"{when} · {algorithm_label(str(get('algorithm')))} · {get('dataset_name')} · "
        f"{get('status')}{extra} · {get('id')}"
    )


# --- the shared sidebar ----------------------------------------------------------------------------


def _adopt_run_dataset(run_id: str) -> None:
    """A fresh session (a reloaded tab) opened on a run's URL takes that run's data as its dataset."""
    if SOURCE_KEY in st.session_state:
        return
    try:
        run = get_run(run_id)
    except Exception:  # a malformed id must not break the page
        run = None
    if run is not None and run.get("dataset") is not None:
        set_dataset(run["dataset"], {"kind": "run", "name": run["dataset"].name, "run": run_id})


def sync_query_params() -> None:
    """Runs named in the URL (``?job=``, ``?explore=``, ``?run=``) become this session's."""
    for param, key in (("job", SEARCH_JOB_KEY), ("explore", EXPLORE_JOB_KEY), ("run", RESULTS_RUN_KEY)):
        value = st.query_params.get(param)
        if value:
            st.session_state[key] = value
            _adopt_run_dataset(value)


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
        unit = "batch" if snap.kind == "explore" else "generation"
        st.caption(f"{algorithm_label(snap.algorithm)} · {unit} {snap.generation}/{snap.total_generations or '?'}")
    else:
        st.caption(f"{algorithm_label(snap.algorithm)} · {snap.status}")
    st.page_link(page, label=f"Run {job_id}", icon=STATUS_ICONS.get(snap.status), query_params={param: job_id})
    return not snap.done


def sidebar() -> None:
    """The page list, the current dataset and this session's jobs (every page draws it)."""
    sync_query_params()
    for page, label, icon in PAGES:
        st.sidebar.page_link(page, label=label, icon=icon)
    st.sidebar.divider()
    ds = current_dataset()
    st.sidebar.markdown("**Current dataset**")
    st.sidebar.markdown(f"`{ds.name}` — {dataset_summary(ds)}")
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


# --- the GPSS baseline on the current data --------------------------------------------------------


def gpss_baseline_job(ds: Dataset):
    """This session's background GPSS job on ``ds`` (a Job) or None."""
    jobs = st.session_state.get(GPSS_JOBS_KEY, {})
    jid = jobs.get(dataset_fingerprint(ds))
    return manager().get(jid) if jid else None


def start_gpss_baseline(ds: Dataset) -> str:
    """Submit a quick GPSS search on ``ds`` as a background job; returns its id."""
    from evocov_core.jobs import JobSpec
    from evocov_core.search import preset

    spec = JobSpec(
        kind="search", dataset=ds, config=preset("quick", "gpss"), seed=0, label=f"GPSS baseline · {ds.name}"
    )
    gid = manager().submit(spec)
    st.session_state.setdefault(GPSS_JOBS_KEY, {})[dataset_fingerprint(ds)] = gid
    remember_run(gid)
    return gid
