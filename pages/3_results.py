"""Results page: the best kernel of a run, how it was chosen, its extrapolation (or the model average's),
baselines, the Pareto plot, kernel files."""

from __future__ import annotations

import math
from dataclasses import replace

import streamlit as st

from dashboard.common import (
    PAGE_SEARCH,
    RESULTS_RUN_KEY,
    algorithm_label,
    average_test_rmse,
    background_fit,
    current_dataset,
    dataset_fingerprint,
    existing_fit,
    fit_from_doc,
    fmt,
    get_run,
    gpss_baseline_job,
    latest_session_run,
    list_runs,
    model_average_text,
    page_setup,
    polish,
    poll_every,
    run_label,
    run_model_average,
    runs_on_dataset,
    show_kernel,
    show_model_average,
    start_gpss_baseline,
    status_badge,
    store,
)
from evocov_core.baselines import se_baseline
from evocov_core.data import Dataset
from evocov_core.figures import average_members_data, pareto_data, pareto_figure, selection_data
from evocov_core.kernel_file import KernelFileError, dump_kernel_file, parse_kernel_file
from evocov_core.metrics import FitData
from evocov_core.model import FittedModel
from evocov_core.optimize import FitResult
from evocov_core.search import EvalRecord, RunStatus

page_setup("Results")
st.title("Results")

runs = list_runs("search")
runs = runs[runs["best_kernel"].notna()] if len(runs) else runs

qp_run = st.query_params.get("run")
if qp_run:
    st.session_state[RESULTS_RUN_KEY] = qp_run
wanted = st.session_state.get(RESULTS_RUN_KEY) or latest_session_run("search")

if len(runs) == 0:
    st.info(
        "No finished search with a kernel yet. Start one on the Search page; its results appear here.",
        icon=":material/emoji_events:",
    )
    st.page_link(PAGE_SEARCH, label="Go to Search", icon=":material/genetics:")
    run_id = None
else:
    ids = list(runs["id"])
    labels = {r.id: run_label(r) for r in runs.itertuples(index=False)}
    index = ids.index(wanted) if wanted in ids else 0
    run_id = st.selectbox(
        "Run",
        ids,
        index=index,
        format_func=labels.get,
        key=f"results_pick_{wanted}",
        help="Every search with a best kernel, newest first. Default: this session's latest.",
    )
    st.session_state[RESULTS_RUN_KEY] = run_id
    if st.query_params.get("run") != run_id:
        st.query_params["run"] = run_id

if run_id is not None:
    run = get_run(run_id)
    assert run is not None
    ds: Dataset = run["dataset"]
    best = fit_from_doc(run["best"], ds.n_train)
    st.markdown(
        f"{algorithm_label(run['algorithm'])} on **{ds.name}** ({ds.n_train} training, {ds.n_test} test "
        f"points) · seed {run['seed']} · {status_badge(run['status'])} · {run['n_evaluations']} kernels "
        f"fitted in {fmt(run['elapsed'], '.1f')} s"
    )
    if RunStatus(run["status"]).active:
        st.info("This run is still going: the kernel shown is the best so far.", icon=":material/sync:")

    tab_best, tab_report, tab_pareto, tab_file = st.tabs(
        ["Best kernel", "Report", "All kernels (Pareto)", "Apply a kernel file"]
    )

    # --- what the search returned: the chosen kernel, the lowest-BIC one, the model average -----------
    extra = run.get("extra") or {}
    selection = [r for r in extra.get("selection") or [] if isinstance(r, dict)]
    average, average_entries, average_problem = run_model_average(extra, ds)
    lowest_doc = extra.get("lowest_bic") if isinstance(extra.get("lowest_bic"), dict) else None
    lowest = None
    if lowest_doc is not None:
        try:
            lowest = fit_from_doc(lowest_doc, ds.n_train)
        except (KernelFileError, ValueError):
            lowest_doc = None
    chosen_is_lowest = any(r.get("chosen") and r.get("rank") == 1 for r in selection)
    forecasts = {"chosen": "Chosen kernel"}
    if average is not None:
        forecasts["average"] = f"Model average ({average.k} kernel{'s' if average.k > 1 else ''})"
    best_doc = run["best"] or {}
    lowest_differs = lowest_doc is not None and any(
        lowest_doc.get(k) != best_doc.get(k) for k in ("expression", "hyperparameters", "noise_variance")
    )
    if lowest is not None and (selection or lowest_differs):
        forecasts["lowest"] = "Lowest BIC" + (" (= chosen)" if chosen_is_lowest else "")
    kernel_name = f"evocov-kernel-{ds.name}-{run_id}.json"
    average_name = f"evocov-model-average-{ds.name}-{run_id}.json"

    # --- best kernel and baselines --------------------------------------------------------------
    with tab_best:
        forecast = "chosen"
        if len(forecasts) > 1:
            forecast = st.radio(
                "Forecast",
                list(forecasts),
                format_func=forecasts.get,
                horizontal=True,
                key=f"results_forecast_{run_id}",
                help="Chosen kernel: the one the search returned. Model average: the mixture of the lowest-BIC "
                "kernels' forecasts, weighted by how well each predicted the end of the training range. "
                "Lowest BIC: the kernel with the best training-data score. The test RMSE and the extrapolation "
                "below follow this choice.",
            )
        if average_problem:
            st.caption(f"The model average of this run cannot be used: {average_problem}")
        avg_rmse = average_test_rmse(average, ds) if average is not None else None
        shown_rmse = {"chosen": best.test_rmse, "average": avg_rmse,
                      "lowest": lowest.test_rmse if lowest is not None else None}[forecast]
        shown_what = {"chosen": "chosen kernel" if selection else "best kernel (lowest BIC)",
                      "average": "model average (mixture mean)", "lowest": "lowest-BIC kernel"}[forecast]
        st.markdown("##### Test RMSE against baselines")
        fp = dataset_fingerprint(ds)
        se_future = existing_fit(("se", fp)) or background_fit(("se", fp), se_baseline, FitData.from_dataset(ds))
        gpss_runs = runs_on_dataset(ds, algorithm="gpss")
        gpss_job = gpss_baseline_job(ds)
        waiting = not se_future.done() or (gpss_job is not None and not gpss_job.snapshot().done)

        @st.fragment(run_every=poll_every(waiting, 1.5))
        def baselines() -> None:
            se = None
            if se_future.done():
                try:
                    se = se_future.result()
                except Exception as exc:  # shown below, the page goes on
                    se = exc
            g = gpss_runs[0] if gpss_runs else None
            g_rmse = ((g.get("best") or {}).get("scores") or {}).get("test_rmse") if g else None
            se_rmse = se.test_rmse if isinstance(se, FitResult) else None
            c_best, c_se, c_gpss = st.columns(3)
            vs = [
                f"{shown_rmse - r:+.4g} vs {n}"
                for r, n in ((se_rmse, "SE"), (g_rmse, "GPSS"))
                if r is not None and shown_rmse is not None
            ]
            c_best.metric(
                "This run",
                fmt(shown_rmse),
                delta=", ".join(vs) or None,
                delta_color="inverse",
                help=f"Test RMSE of this run's {shown_what}. The difference to each baseline "
                "is green when this run extrapolates better.",
            )
            with c_se:
                if isinstance(se, FitResult):
                    st.metric(
                        "SE baseline",
                        fmt(se_rmse),
                        help="The squared-exponential kernel fitted by LML on the same training data.",
                    )
                elif se is not None:
                    st.metric("SE baseline", "–")
                    st.caption(f"The SE fit failed: {se}")
                else:
                    st.metric("SE baseline", "…", help="Fitting in the background.")
                    st.caption("Fitting the SE kernel in the background…")
            with c_gpss:
                if g is not None:
                    st.metric(
                        "GPSS baseline",
                        fmt(g_rmse),
                        help=f"Best kernel of GPSS run {g['id']} on the same data: "
                        f"{(g.get('best') or {}).get('infix', '')}",
                    )
                    st.caption(f"GPSS run `{g['id']}`")
                elif gpss_job is not None:
                    snap = gpss_job.snapshot()
                    if snap.done:
                        if snap.status == RunStatus.FINISHED:
                            st.rerun()
                        st.metric("GPSS baseline", "–")
                        st.caption(f"The GPSS run {snap.id} ended: {snap.status}.")
                    else:
                        st.metric("GPSS baseline", "…")
                        what = (
                            f"queued (position {snap.queue_position})"
                            if snap.status == RunStatus.QUEUED
                            else f"level {snap.generation}/{snap.total_generations or '?'}"
                        )
                        st.caption(f"GPSS search `{snap.id}` running in the background: {what}.")
                else:
                    st.metric("GPSS baseline", "–", help="No GPSS run on these data yet.")

        baselines()
        if (
            not gpss_runs
            and gpss_job is None
            and st.button(
                "Run a quick GPSS search in the background",
                key="results_run_gpss",
                icon=":material/play_arrow:",
                help="The greedy compositional search of Duvenaud et al. (quick preset: 3 levels). "
                "It runs as a background job; you can keep using the dashboard.",
            )
        ):
            start_gpss_baseline(ds)
            st.rerun()
        if selection:
            st.divider()
            st.markdown("##### How the kernel was chosen")
            split = (run.get("settings") or {}).get("metric_split") or 0.1
            st.markdown(
                f"The search ranks kernels by BIC; the returned kernel is, among the {len(selection)} lowest-BIC "
                f"ones, the one that best predicts the last {split:.0%} of the training range after being refitted "
                "on the rest."
            )
            table = selection_data(selection)
            if not table["tail score"].notna().any():
                st.caption("No refit could be scored here: the lowest-BIC kernel was kept, and the model average "
                           "is weighted by BIC.")
            st.dataframe(
                table,
                hide_index=True,
                width="stretch",
                column_config={
                    "BIC rank": st.column_config.NumberColumn("BIC rank", help="1 = lowest BIC."),
                    "kernel": st.column_config.TextColumn("kernel", width="large"),
                    "BIC": st.column_config.NumberColumn("BIC", format="%.2f"),
                    "tail score": st.column_config.NumberColumn(
                        "tail score",
                        format="%.2f",
                        help=f"Posterior log-likelihood of the last {split:.0%} of the training range given the "
                        "rest, after refitting on the rest. Higher is better.",
                    ),
                    "tail RMSE": st.column_config.NumberColumn(
                        "tail RMSE", format="%.4g", help="RMSE of that prediction of the held-out tail."
                    ),
                    "weight": st.column_config.NumberColumn(
                        "weight", format="%.3f", help="Weight in the model average (Bayesian model averaging)."
                    ),
                    "test RMSE": st.column_config.NumberColumn(
                        "test RMSE", format="%.4g", help="On the test part, never used for the choice."
                    ),
                    "valid": st.column_config.CheckboxColumn(
                        "valid", help="Its covariance is positive semi-definite on the training inputs and the "
                        "forecast horizon. An invalid kernel (a negative direction the noise hid) is neither "
                        "chosen nor averaged."
                    ),
                    "chosen": st.column_config.CheckboxColumn("chosen"),
                },
            )
        st.divider()
        average_download = None
        if average is not None:
            average_download = (model_average_text(average_entries, ds, test_rmse=avg_rmse, run=run_id), average_name)
        if forecast == "average" and average is not None:
            show_model_average(
                average,
                ds,
                key="results_average",
                members=average_members_data(average_entries),
                test_rmse=avg_rmse,
                title=forecasts["average"],
                average_download=average_download,
                kernel_download=(dump_kernel_file(run["best"]), kernel_name),
            )
        elif forecast == "lowest" and lowest is not None and lowest_doc is not None:
            show_kernel(
                lowest,
                ds,
                key="results_lowest",
                title="Lowest-BIC kernel" + (" (also the chosen one)" if chosen_is_lowest else ""),
                download_name=f"evocov-kernel-{ds.name}-{run_id}-lowest-bic.json",
                doc=lowest_doc,
                expand_hyperparameters=True,
                average_download=average_download,
            )
        else:
            show_kernel(
                best,
                ds,
                key="results_best",
                title="Chosen kernel" if selection else "Best kernel (lowest BIC)",
                download_name=kernel_name,
                doc=run["best"],
                expand_hyperparameters=True,
                average_download=average_download,
            )

    # --- a self-contained HTML report of the returned kernel ----------------------------------------
    with tab_report:
        st.caption(
            "One HTML file that opens offline: the forecast next to an SE kernel and a short GPSS search fitted "
            "on the same training data, the kernel's components with a sentence each, residual checks and the "
            "kernel itself (also `python -m evocov_core report`)."
        )
        report_key = f"results_report_{run_id}"
        budget = st.number_input(
            "GPSS baseline budget (s)",
            min_value=0,
            max_value=600,
            value=20,
            step=5,
            key="results_report_budget",
            help="Seconds for the GPSS search the kernel is compared with (0: the SE baseline only). "
            "The report is written when it ends.",
        )
        if run.get("best") and st.button("Make the report", key="results_make_report", icon=":material/article:"):
            from evocov_core.report_html import report_html

            with st.spinner("Fitting the baselines and writing the report…"):
                st.session_state[report_key] = report_html(
                    parse_kernel_file(dump_kernel_file(run["best"])), ds, baseline_budget=float(budget)
                )
        if report_key in st.session_state:
            st.download_button(
                "Download the report (HTML)",
                st.session_state[report_key],
                file_name=f"evocov-report-{ds.name}-{run_id}.html",
                mime="text/html",
                key="results_report_download",
                icon=":material/download:",
            )

    # --- Pareto plot over every kernel evaluated --------------------------------------------------
    with tab_pareto:
        records = store().evaluations(run_id)
        pdata = pareto_data(records)
        if len(pdata) == 0:
            st.info("No evaluated kernel of this run has a test RMSE (no test part?).")
        else:
            ref = (best.q, best.test_rmse) if best.test_rmse is not None else None
            fig = polish(pareto_figure(pdata, reference=ref))
            fig.update_layout(uirevision=f"pareto-{run_id}")
            st.caption(
                f"{len(records)} kernels fitted, {int(pdata.on_front.sum())} on the Pareto front (red). "
                "The triangle is the run's best kernel. Click a point to open that kernel."
            )
            event = st.plotly_chart(
                fig,
                key=f"results_pareto_{run_id}",
                on_select="rerun",
                selection_mode="points",
                config={"displaylogo": False},
            )
            points = event.selection.points if event and event.selection else []
            row_idx = None
            for p in points:
                cd = p.get("customdata")
                if cd is not None:
                    row_idx = int(cd[0] if isinstance(cd, (list, tuple)) else cd)
                    break
            if row_idx is None:
                st.caption("No kernel selected.")
            else:
                row = records.iloc[row_idx]
                try:
                    fit = EvalRecord.from_row(row).to_fit(ds.n_train)
                except (ValueError, KernelFileError) as exc:
                    st.warning(f"Cannot open this kernel: {exc}")
                else:
                    st.divider()
                    show_kernel(
                        fit,
                        ds,
                        key=f"results_sel_{run_id}",
                        title=f"Selected kernel (generation {row['generation']}, #{row['idx']})",
                        download_name=f"evocov-kernel-{ds.name}-{run_id}-g{row['generation']}-{row['idx']}.json",
                    )

    # --- load a kernel file and apply it to the current dataset ----------------------------------
    with tab_file:
        cur = current_dataset()
        st.markdown(
            f"Load a kernel file (JSON) and apply it to the **current dataset**, **{cur.name}** "
            f"({cur.n_train} training, {cur.n_test} test points)."
        )
        up = st.file_uploader(
            "Kernel file",
            type=["json"],
            key="results_kernel_file",
            help="A file downloaded from this dashboard or written by `python -m evocov_core`.",
        )
        if up is not None:
            try:
                kf = parse_kernel_file(up.getvalue())
            except KernelFileError as exc:
                st.error(f"**Cannot load {up.name}:** {exc}", icon=":material/block:")
            else:
                same = kf.scores.get("dataset") == cur.name
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
                fit = kf.to_fit(cur.n_train)
                try:
                    rm = model.test_rmse(cur)
                except Exception as exc:
                    rm = None
                    st.warning(f"Could not predict with this kernel: {exc}")
                fit = replace(fit, test_rmse=rm if rm is not None and math.isfinite(rm) else None)
                st.success(
                    f"Loaded {up.name}: q = {kf.q}; test RMSE on {cur.name}: {fmt(rm)}.", icon=":material/check_circle:"
                )
                show_kernel(fit, cur, key="results_file", title=f"{up.name} on {cur.name}", model=model)
