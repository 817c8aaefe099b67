"""The Results page's other tabs: the HTML report, the Pareto plot of every kernel, applying a kernel file."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import streamlit as st

from dashboard import fits
from dashboard.comparison import (
    baselines_for_report,
    classical_for_report,
    current_comparison,
    se_future,
    settings_in_state,
)
from dashboard.covariates import applied_to, kernel_effect
from dashboard.datasets import current_dataset, dataset_fingerprint
from dashboard.format import fmt, polish, poll_every
from dashboard.runs import gpss_baseline_job, runs_on_dataset, store
from dashboard.views import kernel_doc, show_kernel
from evocov_core.compute.timed import one_line
from evocov_core.data import DataError, Dataset
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import FitResult
from evocov_core.present.figures import pareto_data, pareto_figure
from evocov_core.present.glance import forecast_row
from evocov_core.runs.counts import fit_counts
from evocov_core.runs.kernel_file import KernelFileError, parse_kernel_file
from evocov_core.runs.run_record import RunRecord
from evocov_core.searches import EvalRecord


def report_tab(run: RunRecord, ds: Dataset) -> None:
    """A self-contained HTML report of the returned kernel, made in the background.

    The report scores the GP baselines the Results page has fitted already (its SE fit, a finished GPSS run
    on these data) instead of fitting its own (:func:`~dashboard.comparison.baselines_for_report`), as it
    takes the classical forecasts the page has made: with all three done, a report of a 100,000-point
    series is written in seconds instead of its GPSS budget and an SE fit.
    """
    st.caption(
        "One HTML file that opens offline: the forecast next to an SE kernel and a short GPSS search fitted "
        "on the same training data, the kernel's components with a sentence each, residual checks and the "
        "kernel itself (also `python -m evocov_core report`)."
    )
    if run.best is None:
        return
    best = run.best
    kf = parse_kernel_file(best.text)
    # Another GPSS run on these data (a GPSS run's own report does not compare it with itself).
    gpss_runs = [g for g in runs_on_dataset(ds, algorithm="gpss") if g.id != run.id]
    gpss_run = baselines_for_report(ds, kf, gpss_runs[0] if gpss_runs else None)[1]
    if gpss_run is not None:
        st.caption(f"GPSS baseline: {gpss_run.note}, test RMSE {fmt(gpss_run.fit.test_rmse)}. The report scores "
                   "its kernel and runs no GPSS search of its own.")
        budget, gpss_key = 0.0, gpss_run.note
    else:
        budget = float(st.number_input(
            "GPSS baseline budget (s)",
            min_value=0,
            max_value=600,
            value=20,
            step=5,
            key="results_report_budget",
            help="Seconds for the GPSS search the kernel is compared with (0: the SE baseline only). "
            "The report is written when it ends; it is made in the background, so other pages stay usable. "
            "With a finished GPSS run on these data (the Best kernel tab's button), the report uses it instead.",
        ))
        gpss_key = ""
    key = ("report", run.id, dataset_fingerprint(ds), budget, gpss_key)

    def make() -> None:  # a callback, so the page drawn after the click already knows the report runs
        from evocov_core.present.report_html import report_html

        se_done, gpss_done = baselines_for_report(ds, kf, gpss_runs[0] if gpss_runs else None)
        fits.background_report(key, report_html, kf, ds, baseline_budget=budget,
                               classical_done=classical_for_report(run.id, ds), se_done=se_done, gpss_done=gpss_done)

    fut = fits.existing_report(key)  # (after a click too: the callback runs before this)
    st.button("Make the report", key="results_make_report", icon=":material/article:", on_click=make,
              disabled=fut is not None and (not fut.done() or fut.exception() is None))
    if fut is None:
        return
    started = st.session_state.setdefault(f"results_report_started_{key}", time.time())
    was_done = fut.done()

    @st.fragment(run_every=poll_every(not was_done, 1.5))
    def ready() -> None:
        if not was_done and fut.done():
            st.rerun()  # the whole page: the button's state, and no more polling
        if not fut.done():
            gpss = f"; the GPSS baseline takes its {budget:g} s" if budget else ""
            st.info(f"Fitting the baselines and writing the report in the background ({time.time() - started:.0f} s "
                    f"so far{gpss}). Other pages stay usable, and the report waits here.",
                    icon=":material/hourglass_top:")
            return
        if fut.exception() is not None:
            st.error(f"The report could not be made: {one_line(fut.exception())}", icon=":material/error:")
            return
        st.download_button(
            "Download the report (HTML)",
            fut.result(),
            file_name=f"evocov-report-{ds.name}-{run.id}.html",
            mime="text/html",
            key="results_report_download",
            icon=":material/download:",
        )

    ready()


def _clicked_row(event: object) -> int | None:
    """The row (``customdata``) of the first point clicked in a Plotly selection event."""
    points = event.selection.points if event and event.selection else []  # type: ignore[attr-defined]
    for p in points:
        cd = p.get("customdata")
        if cd is not None:
            return int(cd[0] if isinstance(cd, (list, tuple)) else cd)
    return None


def _levels(run: RunRecord, ds: Dataset, best: FitResult, average: ModelAverage | None) -> list[tuple[str, float]]:
    """AutoETS's test RMSE and, when the forecast averages the kernel's with classical ones, the forecast's:
    from the comparison table the Best kernel tab makes (None where they are not done)."""
    if ds.n_test == 0 or ds.x.shape[1] != 1:
        return []
    gpss_runs = runs_on_dataset(ds, algorithm="gpss")
    table, _, _ = current_comparison(run, ds, best, average, se_future(ds), gpss_runs[0] if gpss_runs else None,
                                     gpss_baseline_job(ds), settings_in_state(run.id, ds))
    out = []
    ets = table[(table["method"] == "AutoETS") & (table["status"] == "ok")]
    # AutoETS first: pareto_figure draws the first level dashed grey, the second dotted green.
    out.append(("AutoETS", float(ets.iloc[0]["test_rmse"]) if len(ets) else math.nan))
    combination = run.best.combination if run.best is not None else None
    row = forecast_row(table, combination)
    if row is not None and row["kind"] == "combined":
        out.append((f"the forecast ({combination.label if combination else 'combined'})", float(row["test_rmse"])))
    return out


def pareto_tab(run: RunRecord, ds: Dataset, best: FitResult, average: ModelAverage | None = None) -> None:
    """Every kernel the run fitted, q against test RMSE; a click opens one."""
    records = store().evaluations(run.id)
    pdata = pareto_data(records)
    if len(pdata) == 0:
        st.info("No evaluated kernel of this run has a test RMSE (no test part?).")
        return
    ref = (best.q, best.test_rmse) if best.test_rmse is not None else None
    combined = run.best is not None and run.best.combination.combined
    levels = _levels(run, ds, best, average)
    fig = polish(pareto_figure(pdata, reference=ref, levels=levels,
                               reference_name="chosen kernel" + ("" if combined else " (the forecast)")))
    fig.update_layout(uirevision=f"pareto-{run.id}")
    st.info("**Test RMSE is shown here for hindsight only: it took no part in the choice.** The search never "
            "sees the test part; it chose its kernel by BIC and by forecasts of held-out training data, so a "
            "kernel far below the chosen one here could not have been told apart when choosing.",
            icon=":material/visibility:")
    st.caption(
        f"{fit_counts(run).describe()}; {len(pdata)} with a test RMSE are drawn, {int(pdata.on_front.sum())} on "
        "the Pareto front (red). The triangle is the chosen kernel"
        + ("; the dotted line the forecast, which averages it with classical forecasts" if combined else
           ", whose forecast is the run's") + (", the dashed line AutoETS's test RMSE" if any(
               n == "AutoETS" for n, _ in levels) else "") + ". Click a point to open that kernel."
    )
    event = st.plotly_chart(fig, key=f"results_pareto_{run.id}", on_select="rerun", selection_mode="points",
                            config={"displaylogo": False})
    row_idx = _clicked_row(event)
    if row_idx is None:
        st.caption("No kernel selected.")
        return
    row = records.iloc[row_idx]
    try:
        fit = EvalRecord.from_row(row).to_fit(ds.n_train)
    except (ValueError, KernelFileError) as exc:
        st.warning(f"Cannot open this kernel: {exc}")
        return
    st.divider()
    effect = kernel_effect(run.best.doc) if run.best is not None else None  # its file adds the effect back too
    show_kernel(fit, ds, key=f"results_sel_{run.id}",
                title=f"Selected kernel (generation {row['generation']}, #{row['idx']})",
                download_name=f"evocov-kernel-{ds.name}-{run.id}-g{row['generation']}-{row['idx']}.json",
                doc=None if effect is None else {**kernel_doc(fit, ds), "covariates": effect.to_dict()})


def kernel_file_tab() -> None:
    """Load a kernel file and apply it to the current dataset."""
    cur = current_dataset()
    if cur.covariates:
        st.caption(f"A kernel file applies along time: with the covariates' effect it records taken out of "
                   f"{cur.y_label}, or, from a search without covariates, to {cur.y_label} itself.")
    st.markdown(
        f"Load a kernel file (JSON) and apply it to the **current dataset**, **{cur.name}** "
        f"({cur.n_train} training, {cur.n_test} test points)."
    )
    up = st.file_uploader("Kernel file", type=["json"], key="results_kernel_file",
                          help="A file downloaded from this dashboard or written by `python -m evocov_core`.")
    if up is None:
        return
    try:
        kf = parse_kernel_file(up.getvalue())
    except KernelFileError as exc:
        st.error(f"**Cannot load {up.name}:** {exc}", icon=":material/block:")
        return
    try:
        cur = applied_to(cur, kf.covariates)
    except DataError as exc:
        st.error(f"**Cannot apply {up.name} to {cur.name}:** {exc}.", icon=":material/block:")
        return
    same = kf.scores.dataset == cur.name
    norm_choice = st.radio(
        "Units of the file's values",
        ["The file's normalisation", "Rescale to the current data"],
        index=0 if same and kf.normalisation is not None else 1,
        horizontal=True,
        key="results_kf_norm",
        help="Values in a kernel file are in model units. Keep the file's normalisation when it was "
        "made on these data; rescale when applying the kernel to other data.",
    )
    norm = kf.normalisation if norm_choice.startswith("The file") and kf.normalisation else cur.norm
    model = FittedModel(kf.kernel, tuple(kf.theta), kf.log_noise, kf.jitter, norm)
    try:
        rm = model.test_rmse(cur)
    except Exception as exc:
        rm = None
        st.warning(f"Could not predict with this kernel: {exc}")
    fit = replace(kf.to_fit(cur.n_train), test_rmse=rm if rm is not None and math.isfinite(rm) else None)
    st.success(f"Loaded {up.name}: q = {kf.q}; test RMSE on {cur.name}: {fmt(rm)}.", icon=":material/check_circle:")
    show_kernel(fit, cur, key="results_file", title=f"{up.name} on {cur.name}", model=model)
