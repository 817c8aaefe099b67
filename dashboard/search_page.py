"""The Search page: the settings form, Start/Stop, and the live view of the run this session watches."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard.datasets import current_dataset, dataset_summary
from dashboard.format import algorithm_label, fmt, polish, poll_every, status_badge
from dashboard.runs import get_run, manager, remember_run, store, watched_job
from dashboard.search_form import CPUS, settings_form
from dashboard.state import MY_RUNS_KEY, PAGE_EXPLORER, PAGE_RESULTS, RESULTS_RUN_KEY, SEARCH_JOB_KEY
from dashboard.views import formula, latex_box, show_approximation
from evocov_core.data import Dataset
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, DataSubset, plan_subset
from evocov_core.present.figures import fitness_figure
from evocov_core.runs.counts import (
    KERNELS_FITTED,
    KERNELS_FITTED_HELP,
    SCREENING_FITS,
    SCREENING_FITS_HELP,
    fit_counts,
)
from evocov_core.runs.jobs import JobKind, JobSpec
from evocov_core.searches import ALGORITHM_LABELS, RunStatus, SearchConfig
from evocov_core.searches.wall_time import estimate_wall_time


@dataclass(frozen=True)
class RunState:
    """What the run panel shows, from a live job's snapshot or, for an old run, from the store."""

    status: RunStatus
    generation: int
    total: int
    elapsed: float
    n_evaluations: int
    evals_per_second: float
    restarts: int
    best: FitResult | None
    error: str
    algorithm: str
    label: str
    budget: float
    history: pd.DataFrame
    queue_position: int = 0
    approximation: DataSubset | None = None
    n_screen_fits: int = 0


def run_state(run_id: str) -> RunState | None:
    """The state of ``run_id``: live when this server runs it, else as stored (None when deleted)."""
    job = manager().get(run_id)
    if job is not None:
        s = job.snapshot()
        return RunState(s.status, s.generation, s.total_generations, s.elapsed, s.n_evaluations,
                        s.evals_per_second, s.restarts, s.best, s.error, s.algorithm, s.label,
                        float(job.spec.config.time_budget), s.history, s.queue_position,
                        plan_subset(job.spec.dataset.n_train, job.spec.config.fit_points),
                        fit_counts(s).screening_fits)
    run = get_run(run_id)
    if run is None:
        return None
    history = store().history(run_id)
    elapsed, n_eval, restarts = run.elapsed, run.n_evaluations, 0
    if len(history):
        # A failed or interrupted run is closed with zero counters: count from its generations.
        n_eval = n_eval or int(history["n_evaluated"].sum())
        elapsed = elapsed or float(history["elapsed"].max())
        restarts = int(history["restarted"].sum())
    # Not in this server while it says it runs: its process is gone.
    status = RunStatus.INTERRUPTED if run.status.active else run.status
    approximation = None
    if run.dataset is not None:
        approximation = plan_subset(run.dataset.n_train, int(run.settings.get("fit_points", DEFAULT_MAX_POINTS)))
    return RunState(status, run.generations_done, run.total_generations or run.generations_done, elapsed, n_eval,
                    n_eval / elapsed if elapsed > 0 else 0.0, restarts, run.best.to_fit() if run.best else None,
                    run.error or "", run.algorithm, run.label, run.time_budget, history, 0, approximation,
                    fit_counts(run).screening_fits)


def run_kind_and_data(run_id: str) -> tuple[str | None, Dataset | None]:
    """What run ``run_id`` is (``"search"`` or ``"explore"``) and the data it runs on, from its job or
    else the store; ``(None, None)`` when unknown."""
    job = manager().get(run_id)
    if job is not None:
        return job.spec.kind, job.spec.dataset
    run = get_run(run_id)
    return (run.kind, run.dataset) if run is not None else (None, None)


def run_settings(run_id: str) -> tuple[dict, int | None] | None:
    """A search's settings and seed, from its job or else the store; None for anything else."""
    job = manager().get(run_id)
    if job is not None:
        return (job.spec.config.to_dict(), job.spec.seed) if job.spec.kind is JobKind.SEARCH else None
    run = get_run(run_id)
    return (dict(run.settings), run.seed) if run is not None and run.kind == "search" else None


def status_panel(run_id: str, s: RunState) -> None:
    """Status, progress bar and counters of a run."""
    with st.container(key="search_status"):
        st.markdown(f"**Run `{run_id}`** · {status_badge(s.status)} · {s.label or algorithm_label(s.algorithm)}")
        if s.status == RunStatus.QUEUED:
            pos, mc = s.queue_position, manager().max_concurrent
            st.info(
                f"Waiting: {pos} run{'s' if pos != 1 else ''} ahead of you; the server runs {mc} "
                f"search{'es' if mc != 1 else ''} at once. Yours starts by itself when a slot frees up.",
                icon=":material/hourglass_top:",
            )
        if s.budget > 0:
            done = not s.status.active
            frac = 1.0 if done else min(s.elapsed / s.budget, 1.0)
            left = max(0.0, s.budget - s.elapsed)
            text = f"Generation {s.generation} · {'finished' if done else f'{left:.0f} s left of {s.budget:.0f} s'}"
        else:
            frac = min(s.generation / s.total, 1.0) if s.total else 0.0
            text = (f"Generation {s.generation} / {s.total}" if s.total else
                    ("Starting worker processes…" if s.status == RunStatus.RUNNING else f"Generation {s.generation}"))
        st.progress(frac, text=text)
        show_approximation(s.approximation)
        # Three a row: five columns cut their labels on a half-page column.
        m1, m2, m3 = st.columns(3)
        m1.metric(KERNELS_FITTED.capitalize(), s.n_evaluations, help=KERNELS_FITTED_HELP)
        m2.metric(SCREENING_FITS.capitalize(), s.n_screen_fits, help=SCREENING_FITS_HELP)
        m3.metric("Fits per second", f"{s.evals_per_second:.1f}", help="Kernels fitted per second.")
        m4, m5, _ = st.columns(3)
        m4.metric("Elapsed", time.strftime("%H:%M:%S", time.gmtime(s.elapsed)))
        m5.metric("Restarts", s.restarts)
        if s.status == RunStatus.FAILED and s.error:
            st.error(f"The run failed: {s.error.splitlines()[0]}")
            with st.expander("Details"):
                st.code(s.error, language=None)
        elif s.status == RunStatus.INTERRUPTED:
            st.warning("This run was interrupted (the server stopped while it ran). What it had found is kept.")


def fitness_chart(history: pd.DataFrame) -> None:
    """Best and mean BIC per generation."""
    fig = polish(fitness_figure(history))
    fig.update_layout(uirevision="fitness")  # keep the user's zoom across live updates
    n_gen = len(history)
    if n_gen <= 30:
        fig.update_xaxes(dtick=1 if n_gen <= 15 else 2)
    st.plotly_chart(fig, key="search_fitness", config={"displaylogo": False})


def best_panel(best: FitResult | None, ds: Dataset, live: bool) -> None:
    """The best kernel so far: the tree as evolved (simplifying on every new best would stall the updates)."""
    st.markdown("**Lowest-BIC kernel so far**" if live else "**Returned kernel**")
    if not live and best is not None:
        # The choice among the lowest-BIC kernels may return one whose BIC is above the lowest seen while live.
        st.caption("Chosen among the lowest-BIC kernels by how well each forecasts held-out training data, so its "
                   "BIC can be above the lowest one found: Results shows the candidates and the choice.")
    if best is None:
        st.caption("No kernel fitted yet." if live else
                   "No kernel was fitted: the run ended before its first fit (stopped at once, or a time budget "
                   "shorter than starting the workers and reading the data). Raise the time budget and start again.")
        return
    if live:  # simplifying on every new best would stall the updates: the tree as evolved
        latex_box(best.kernel.latex, "search_best")
        st.code(best.kernel.infix, language=None, wrap_lines=True)
    else:
        formula(best.kernel, "search_best")
    c1, c2, c3 = st.columns(3)
    c1.metric("q", best.q, help="Hyperparameters, noise included.")
    c2.metric("BIC", fmt(best.bic, ".2f"))
    c3.metric("Test RMSE", fmt(best.test_rmse), help=f"On the test part, in {ds.y_label} units.")


def start_button(config: SearchConfig | None, seed: int, workers: int, ds: Dataset, job_active: bool) -> None:
    """The time estimate of a fixed count of fits, and Start (which submits the job and watches it)."""
    if config is not None and config.time_budget <= 0:
        # A fixed count of fits can take hours on long series: say so before the user starts.
        est = estimate_wall_time(config, ds.n_train, workers, CPUS)
        with st.container(key="search_estimate"):
            st.caption(f":material/schedule: **Estimated time: {est.text}** ({est.fits} kernel fits; "
                       "longer if other searches run on this server).")
    why = None
    if config is None:
        why = "Fix the settings first."
    elif job_active:
        why = "This page is watching a running search: stop it first (or open a new browser tab)."
    if st.button("Start search", type="primary", key="search_start", disabled=why is not None, help=why,
                 width="stretch"):
        assert config is not None
        spec = JobSpec(kind=JobKind.SEARCH, dataset=ds, config=config, seed=seed, workers=workers,
                       label=f"{ALGORITHM_LABELS[config.algorithm]} · {ds.name} · seed {seed}"
                       + (f" · covariates {', '.join(ds.covariates)}" if ds.covariates else ""))
        new_id = manager().submit(spec)
        st.session_state[SEARCH_JOB_KEY] = new_id
        remember_run(new_id)
        st.query_params["job"] = new_id
        st.rerun()


def next_steps(job_id: str) -> None:
    """Open in Results, or set up a new search (the way on comes before the slow charts)."""
    run = get_run(job_id)
    row = st.container(horizontal=True)  # buttons as wide as their labels, side by side
    if run is not None and run.best is not None and row.button(
            "Open in Results", type="primary", key="search_open_results", icon=":material/emoji_events:"):
        st.session_state[RESULTS_RUN_KEY] = job_id
        st.switch_page(PAGE_RESULTS, query_params={"run": job_id})
    if row.button("New search", key="search_new", help="Stop watching this run and set up another."):
        st.session_state.pop(SEARCH_JOB_KEY, None)
        st.query_params.pop("job", None)
        st.rerun()


def run_panel(job_id: str, job_active: bool, ds: Dataset) -> None:
    """The live status (polled), the way on, and the fitness curve with the best kernel (polled unless paused)."""
    paused = st.toggle("Pause live updates", key="search_pause",
                       help="Stop redrawing the charts so you can zoom and hover; progress keeps updating.")

    @st.fragment(run_every=poll_every(job_active))
    def live_status() -> None:
        s = run_state(job_id)
        if s is None:
            st.warning(f"No run with id `{job_id}` in the store (deleted?).")
            return
        status_panel(job_id, s)
        j = manager().get(job_id)
        if j is not None and not j.snapshot().done:
            st.button("Stop", key="search_stop", icon=":material/stop_circle:", on_click=manager().cancel,
                      args=(job_id,), help="Stops after the kernel fits in progress; the best kernel so far is kept.")
        elif job_active:
            st.rerun()  # it just finished: redraw the page without polling
        if paused and job_active:
            best_panel(s.best, ds, job_active)

    live_status()
    if not job_active:
        next_steps(job_id)

    @st.fragment(run_every=poll_every(job_active and not paused))
    def live_charts() -> None:
        s = run_state(job_id)
        history = s.history if s is not None else store().history(job_id)
        if len(history):
            fitness_chart(history)
        else:
            st.caption("The fitness curve appears after the first generation.")
        if not (paused and job_active):
            best_panel(s.best if s is not None else None, ds, job_active)

    if paused:
        st.caption(":material/pause: Live chart updates are paused.")
    live_charts()


def render() -> None:
    """The whole page."""
    st.title("Search")
    ds = current_dataset()
    st.caption(
        f"Evolve a kernel for **{ds.name}** ({dataset_summary(ds)}). Candidates are scored by BIC on the "
        "training part; the test part is only used to report extrapolation error."
        + (" The covariates' linear effect is estimated first, beside trend and season, and the kernel searched "
           "on what it leaves (when they lower the BIC; otherwise on the series itself)." if ds.covariates else "")
    )
    job_id, _, job_active = watched_job("job", SEARCH_JOB_KEY)
    settings_col, run_col = st.columns([2, 3], gap="large")
    with settings_col:
        st.subheader("Settings")
        # After a reload the session is new: the form shows the watched search's settings.
        config, seed, workers = settings_form((lambda: run_settings(job_id)) if job_id else None)
        start_button(config, seed, workers, ds, job_active)
    with run_col:
        st.subheader("Run")
        if job_id:
            kind, run_ds = run_kind_and_data(job_id)
            if kind == "explore":
                st.warning(f"Run `{job_id}` is a mutation exploration, not a search.", icon=":material/report:")
                st.page_link(PAGE_EXPLORER, label="Open the Mutation explorer", icon=":material/science:")
                return
            # The run's own data (units, labels): the Data page may have moved on since it started.
            run_panel(job_id, job_active, run_ds or ds)
            return
        st.info("No search yet in this session. Choose the settings and press **Start search**. "
                "The run continues on the server if you leave this page or reload the tab.", icon=":material/genetics:")
        mine = st.session_state.get(MY_RUNS_KEY, [])
        if mine:
            st.caption(f"Runs started in this session: {', '.join(mine)}")
