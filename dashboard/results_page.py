"""The Results page: a run's chosen kernel, how it was chosen, its forecast (or the model average's) against
the GP baselines and the classical forecasters (:mod:`dashboard.comparison`); the other tabs are in
:mod:`dashboard.results_tabs`."""

from __future__ import annotations

import contextlib
from concurrent.futures import Future
from dataclasses import dataclass

import streamlit as st

from dashboard.average import (
    average_test_rmse,
    members_table,
    model_average_text,
    run_model_average,
    show_model_average,
)
from dashboard.comparison import comparison_section, se_future
from dashboard.covariates import effect_words, kernel_effect, run_data
from dashboard.format import algorithm_label, dash_empty, fmt, poll_every, status_badge
from dashboard.future_view import future_section
from dashboard.results_tabs import kernel_file_tab, pareto_tab, report_tab
from dashboard.runs import (
    get_run,
    gpss_baseline_job,
    latest_session_run,
    run_label,
    runs_on_dataset,
    runs_with_a_kernel,
    start_gpss_baseline,
)
from dashboard.state import PAGE_SEARCH, RESULTS_RUN_KEY
from dashboard.verdict import verdict_card
from dashboard.views import show_kernel
from evocov_core.data import DataError, Dataset
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import FitResult
from evocov_core.present.figures import selection_data
from evocov_core.present.glance import weight_sentence
from evocov_core.runs.counts import (
    KERNELS_FITTED,
    KERNELS_FITTED_HELP,
    SCREENING_FITS,
    SCREENING_FITS_HELP,
    fit_counts,
)
from evocov_core.runs.jobs import Job
from evocov_core.runs.kernel_file import KernelFileError, parse_kernel_file
from evocov_core.runs.run_record import RunRecord
from evocov_core.searches import RunStatus
from evocov_core.searches.select import choice_description

FORECAST_HELP = (
    "Chosen kernel: the one the search returned. Model average: the mixture of the lowest-BIC kernels' "
    "forecasts, weighted by how well each predicted the end of the training range. Lowest BIC: the kernel with "
    "the best training-data score. The test RMSE and the extrapolation below follow this choice.")


@dataclass(frozen=True)
class Forecasts:
    """What a search returned, as forecasts to choose from: the chosen kernel, the model average, the lowest BIC."""

    best: FitResult
    average: ModelAverage | None
    average_problem: str | None
    average_rmse: float | None
    lowest: FitResult | None
    chosen_is_lowest: bool
    labels: dict[str, str]


def forecasts(run: RunRecord, ds: Dataset, best: FitResult) -> Forecasts:
    """The forecasts of ``run`` on its data, and their labels (a key for each one that exists)."""
    average, problem = run_model_average(run, ds)
    if average is not None and average.k < 2:
        average = None  # a mixture of one kernel is the lowest-BIC kernel: not a forecast of its own
    lowest = None
    if run.lowest_bic is not None:
        try:
            lowest = run.lowest_bic.to_fit(ds.n_train)
        except (KernelFileError, ValueError):
            lowest = None
    chosen_is_lowest = any(r.get("chosen") and r.get("rank") == 1 for r in run.selection)
    labels = {"chosen": "Chosen kernel"}
    if average is not None:
        labels["average"] = f"Model average ({average.k} kernels)"
    differs = run.lowest_bic is not None and not run.lowest_bic.same_model(run.best)
    if lowest is not None and (run.selection or differs):
        labels["lowest"] = "Lowest BIC" + (" (= chosen)" if chosen_is_lowest else "")
    avg_rmse = average_test_rmse(average, ds) if average is not None else None
    return Forecasts(best, average, problem, avg_rmse, lowest, chosen_is_lowest, labels)


def why_no_results(run_id: str) -> str:
    """Why run ``run_id`` has no results to show (it is not among the searches with a kernel)."""
    run = get_run(run_id)
    if run is None:
        return f"There is no run `{run_id}` in the store (deleted, or from another server's store)."
    if run.kind != "search":
        return f"Run `{run_id}` is a mutation exploration, not a search: open it on the Mutation explorer page."
    if run.status.active:
        return f"Run `{run_id}` is still {run.status}: its results appear here when it ends (watch it on Search)."
    if run.status == RunStatus.FAILED:
        return f"Run `{run_id}` failed: {run.error or 'no reason recorded'}."
    return (f"Run `{run_id}` ended ({run.status}) before any kernel was fitted"
            + (f": {run.error}." if run.error else "."))


def pick_run() -> str | None:
    """The run picker (every search with a kernel, this session's latest first choice); None when there is none."""
    runs = runs_with_a_kernel("search")
    qp_run = st.query_params.get("run")
    if qp_run:
        st.session_state[RESULTS_RUN_KEY] = qp_run
    asked = st.session_state.get(RESULTS_RUN_KEY)
    wanted = asked or latest_session_run("search")
    ids = list(runs["id"])
    # A run asked for by its id (the URL, Open in Results) that has nothing to show is said so;
    # another run is never shown in its place, and the URL keeps the id until one is picked.
    missing = bool(asked) and asked not in ids
    if missing:
        st.warning(why_no_results(asked), icon=":material/report:")
    if len(runs) == 0:
        st.info("No finished search with a kernel yet. Start one on the Search page; its results appear here.",
                icon=":material/emoji_events:")
        st.page_link(PAGE_SEARCH, label="Go to Search", icon=":material/genetics:")
        return None
    labels = {r.id: run_label(r) for r in runs.itertuples(index=False)}
    run_id = st.selectbox("Run", ids, index=None if missing else (ids.index(wanted) if wanted in ids else 0),
                          format_func=labels.get, key=f"results_pick_{wanted}", placeholder="Choose a run",
                          help="Every search with a best kernel, newest first. Default: this session's latest.")
    if run_id is None:
        return None
    st.session_state[RESULTS_RUN_KEY] = run_id
    if st.query_params.get("run") != run_id:
        st.query_params["run"] = run_id
    return run_id


def _se_panel(se_future: Future) -> None:
    se = None
    if se_future.done():
        try:
            se = se_future.result()
        except Exception as exc:  # shown here, the page goes on
            se = exc
    if isinstance(se, FitResult):
        st.metric("SE baseline", fmt(se.test_rmse),
                  help="The squared-exponential kernel fitted by LML on the same training data.")
    elif se is not None:
        st.metric("SE baseline", "–")
        st.caption(f"The SE fit failed: {se}")
    else:
        st.metric("SE baseline", "…", help="Fitting in the background.")
        st.caption("Fitting the SE kernel in the background…")


def _gpss_panel(g: RunRecord | None, gpss_job: Job | None) -> None:
    if g is not None:
        st.metric("GPSS baseline", fmt(g.best.test_rmse if g.best else None),
                  help=f"Best kernel of GPSS run {g.id} on the same data: {g.best.infix if g.best else ''}")
        st.caption(f"GPSS run `{g.id}`")
    elif gpss_job is not None:
        snap = gpss_job.snapshot()
        if snap.done:
            if snap.status == RunStatus.FINISHED:
                st.rerun()
            st.metric("GPSS baseline", "–")
            st.caption(f"The GPSS run {snap.id} ended: {snap.status}.")
        else:
            st.metric("GPSS baseline", "…")
            what = (f"queued (position {snap.queue_position})" if snap.status == RunStatus.QUEUED
                    else f"level {snap.generation}/{snap.total_generations or '?'}")
            st.caption(f"GPSS search `{snap.id}` running in the background: {what}.")
    else:
        st.metric("GPSS baseline", "–", help="No GPSS run on these data yet.")


def baselines(ds: Dataset, shown_rmse: float | None, shown_what: str, se_future: Future,
              gpss_runs: list[RunRecord], gpss_job: Job | None) -> None:
    """This run's test RMSE against an SE kernel and a GPSS search on the same data (both in the background)."""
    st.markdown("##### Test RMSE against baselines")
    waiting = not se_future.done() or (gpss_job is not None and not gpss_job.snapshot().done)

    @st.fragment(run_every=poll_every(waiting, 1.5))
    def panel() -> None:
        g = gpss_runs[0] if gpss_runs else None
        g_rmse = g.best.test_rmse if g is not None and g.best is not None else None
        se = se_future.result() if se_future.done() and se_future.exception() is None else None
        se_rmse = se.test_rmse if isinstance(se, FitResult) else None
        vs = [f"{shown_rmse - r:+.4g} vs {n}" for r, n in ((se_rmse, "SE"), (g_rmse, "GPSS"))
              if r is not None and shown_rmse is not None]
        c_best, c_se, c_gpss = st.columns(3)
        c_best.metric("This run", fmt(shown_rmse), delta=", ".join(vs) or None, delta_color="inverse",
                      help=f"Test RMSE of this run's {shown_what}. The difference to each baseline "
                      "is green when this run extrapolates better.")
        with c_se:
            _se_panel(se_future)
        with c_gpss:
            _gpss_panel(g, gpss_job)

    panel()
    if not gpss_runs and gpss_job is None and st.button(
            "Run a quick GPSS search in the background", key="results_run_gpss", icon=":material/play_arrow:",
            help="The greedy compositional search of Duvenaud et al. (quick preset: 3 levels). "
            "It runs as a background job; you can keep using the dashboard."):
        start_gpss_baseline(ds)
        st.rerun()


def choice_rule(run: RunRecord) -> str:
    """The rule the run chose its kernel by: ``long_choice`` where it fitted a subset of a long series."""
    on_subset = False
    if run.best is not None:
        with contextlib.suppress(KernelFileError):
            approx = parse_kernel_file(run.best.text).approximation
            on_subset = approx is not None and not approx.exact
    return str(run.settings.get("long_choice" if on_subset else "choice") or "tail")


def selection_table(run: RunRecord) -> None:
    """How the kernel was chosen among the lowest-BIC ones."""
    split = run.settings.get("metric_split") or 0.1
    st.divider()
    st.markdown("##### How the kernel was chosen")
    margin = run.settings.get("form_margin")
    st.markdown(choice_description(choice_rule(run), len(run.selection), split,
                                   float(margin) if isinstance(margin, int | float) else 1.0))
    table = selection_data(run.selection)
    if not table[["tail score", "origins CRPS"]].notna().any(axis=None):
        st.caption("No refit could be scored here: the lowest-BIC kernel was kept, and the model average "
                   "is weighted by BIC.")
    # Scores the rule did not compute (the tail's on a long series, the origins' on a short one) are not shown.
    table = table.drop(columns=[c for c in ("tail score", "tail RMSE", "origins CRPS") if table[c].isna().all()])
    table = dash_empty(table, {"q": ".0f", "BIC": ".2f", "tail score": ".2f", "tail RMSE": ".4g",
                               "origins CRPS": ".4g", "weight": ".3f", "test RMSE": ".4g"})
    num = st.column_config.TextColumn  # numbers written out, "—" where there is none
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "BIC rank": st.column_config.NumberColumn("BIC rank", help="1 = lowest BIC."),
        "kernel": st.column_config.TextColumn("kernel", width="large"),
        "BIC": num("BIC"),
        "tail score": num("tail score", help=f"Posterior log-likelihood of the last {split:.0%} of "
                          "the training range given the rest, after refitting on the rest. Higher is better."),
        "tail RMSE": num("tail RMSE", help="RMSE of that prediction of the held-out tail."),
        "origins CRPS": num("origins CRPS", help="Mean CRPS of its forecasts from the earlier "
                            "points in time (standardised units). Lower is better."),
        "state-space form": st.column_config.CheckboxColumn(
            "state-space form", help="Holds a level, trend or damped trend of the exponential-smoothing forms."),
        "weight": num("weight", help="Weight in the model average (Bayesian model averaging)."),
        "test RMSE": num("test RMSE", help="On the test part, never used for the choice."),
        "valid": st.column_config.CheckboxColumn(
            "valid", help="Its covariance is positive semi-definite on the training inputs and the forecast "
            "horizon. An invalid kernel (a negative direction the noise hid) is neither chosen nor averaged."),
        "chosen": st.column_config.CheckboxColumn("chosen"),
    })


def best_tab(run: RunRecord, ds: Dataset, fc: Forecasts) -> None:
    """The forecast choice, the baselines, the model choice and the chosen forecast drawn."""
    assert run.best is not None
    kf = parse_kernel_file(run.best.text)  # parsed once already by render()'s to_fit: it cannot fail here
    forecast = "chosen"
    if len(fc.labels) > 1:
        forecast = st.radio("Forecast", list(fc.labels), format_func=fc.labels.get, horizontal=True,
                            key=f"results_forecast_{run.id}", help=FORECAST_HELP)
    if fc.average_problem:
        st.caption(f"The model average of this run cannot be used: {fc.average_problem}")
    shown_rmse = {"chosen": fc.best.test_rmse, "average": fc.average_rmse,
                  "lowest": fc.lowest.test_rmse if fc.lowest is not None else None}[forecast]
    shown_what = {"chosen": "chosen kernel" if run.selection else "best kernel (lowest BIC)",
                  "average": "model average (mixture mean)", "lowest": "lowest-BIC kernel"}[forecast]
    se, gpss_runs, gpss_job = se_future(ds), runs_on_dataset(ds, algorithm="gpss"), gpss_baseline_job(ds)
    baselines(ds, shown_rmse, shown_what, se, gpss_runs, gpss_job)
    combined = run.best.combination.describe() if run.best is not None else None
    if combined:
        row = (" Its test RMSE is the *forecast* row of the table below" if run.best.combination.combined
               else "")
        members = ("*Average the forecast with*" if run.best.combination.refitted
                   else "*On long series, average with*")
        st.caption(f":material/merge: **{weight_sentence(run.best.combination)}** {combined}{row} (search "
                   f"settings {members}, *Weight power*, *Guard the forecast*).")
    dashed = comparison_section(run, ds, fc.best, fc.average, se, gpss_runs[0] if gpss_runs else None, gpss_job)
    if run.selection:
        selection_table(run)
    st.divider()
    kernel_name = f"evocov-kernel-{ds.name}-{run.id}.json"
    average_download = None
    if fc.average is not None:
        average_download = (model_average_text(run, ds, test_rmse=fc.average_rmse),
                            f"evocov-model-average-{ds.name}-{run.id}.json")
    if forecast == "average" and fc.average is not None:
        show_model_average(fc.average, ds, key="results_average", members=members_table(run),
                           test_rmse=fc.average_rmse, title=fc.labels["average"], average_download=average_download,
                           kernel_download=(run.best.text, kernel_name), forecasts=dashed)
    elif forecast == "lowest" and fc.lowest is not None and run.lowest_bic is not None:
        show_kernel(fc.lowest, ds, key="results_lowest",
                    title="Lowest-BIC kernel" + (" (also the chosen one)" if fc.chosen_is_lowest else ""),
                    download_name=f"evocov-kernel-{ds.name}-{run.id}-lowest-bic.json", doc=run.lowest_bic.doc,
                    expand_hyperparameters=True, average_download=average_download, forecasts=dashed)
    else:
        show_kernel(fc.best, ds, key="results_best", title="Chosen kernel" if run.selection else
                    "Best kernel (lowest BIC)", download_name=kernel_name, doc=run.best.doc,
                    # as its file forecasts: with the intervals its search calibrated, as the report
                    model=FittedModel.from_fit(fc.best, ds.norm, ds.n_train, spread=kf.calibration.spread),
                    expand_hyperparameters=True, average_download=average_download, forecasts=dashed)
    future_section(run, ds, kf)


def covariates_note(run: RunRecord, ds: Dataset) -> None:
    """What a run with covariates modelled, and what the page shows of it."""
    effect = kernel_effect(run.best.doc) if run.best is not None else None
    if effect is None:
        return
    if not effect.used:
        st.info(f"**Covariates:** {effect.reason}. The kernel models {ds.y_label} itself.", icon=":material/tune:")
        return
    st.info(f"**Covariates:** {', '.join(effect.names)} ({effect_words(effect)}), estimated beside trend and "
            f"season. The kernel models what their effect leaves, **{ds.y_label}**: the charts, baselines and "
            "classical forecasters below are all of that series (as `evocov predict` and `compare` use it), and "
            "their test errors are the same as with the effect added back. The forecast past the data adds it "
            "back at the future values you upload.", icon=":material/tune:")


def render() -> None:
    """The whole page."""
    st.title("Results")
    run_id = pick_run()
    if run_id is None:
        return
    run = get_run(run_id)
    assert run is not None and run.best is not None and run.dataset is not None
    try:
        ds = run_data(run)  # with covariates: the series their effect leaves, which the kernel models
    except DataError as exc:
        st.error(f"Run `{run.id}` cannot be shown: {exc}.", icon=":material/block:")
        return
    best = run.best.to_fit(ds.n_train)
    st.markdown(
        f"{algorithm_label(run.algorithm)} on **{ds.name}** ({ds.n_train} training, {ds.n_test} test "
        f"points) · seed {run.seed} · {status_badge(run.status)} · {fit_counts(run).describe()} "
        f"in {fmt(run.elapsed, '.1f')} s", help=f"{KERNELS_FITTED.capitalize()}: {KERNELS_FITTED_HELP} "
        f"{SCREENING_FITS.capitalize()}: {SCREENING_FITS_HELP}"
    )
    if run.status.active:
        st.info("This run is still going: the kernel shown is the best so far.", icon=":material/sync:")
    covariates_note(run, ds)
    fc = forecasts(run, ds, best)
    verdict_card(run, ds, best, fc.average)
    tab_best, tab_report, tab_pareto, tab_file = st.tabs(
        ["Best kernel", "Report", "All kernels (Pareto)", "Apply a kernel file"])
    with tab_best:
        best_tab(run, ds, fc)
    with tab_report:
        report_tab(run, ds)
    with tab_pareto:
        pareto_tab(run, ds, best, fc.average)
    with tab_file:
        kernel_file_tab()
