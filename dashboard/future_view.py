"""The Results page's forecast past the data: the next steps after the last observation, drawn and
downloadable as CSV (:mod:`evocov_core.forecast.future`).

When the search's forecast averages the kernel with classical forecasters, those are fitted on every
observed point in the background (the forecasts' lane of :mod:`dashboard.fits`, once per run, data and
horizon for every session of the server); until they are done the kernel's own forecast is shown and
the section refreshes itself.

A kernel searched with covariates (:mod:`dashboard.covariates`) that kept their effect forecasts at the times
of a table of the covariates' future values, uploaded here: the kernel forecasts what the effect leaves and
the effect at those values is added back (:func:`~evocov_core.forecast.covariates.add_effect`). The table
accepted is kept with the run, so that a reload forecasts with it again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import streamlit as st

from dashboard import fits
from dashboard.covariates import check_future, effect_words, future_key, future_template, read_future
from dashboard.datasets import dataset_fingerprint
from dashboard.format import polish, poll_every
from dashboard.runs import store
from dashboard.state import FUTURE_VALUES
from evocov_core.data import DataError, Dataset
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, classical_forecasts
from evocov_core.forecast.combination import Combination
from evocov_core.forecast.covariates import CovariateEffect, add_effect
from evocov_core.forecast.future import MAX_HORIZON, default_horizon, forecast_future, future_members_data
from evocov_core.present.figures import future_figure
from evocov_core.runs.kernel_file import KernelFile
from evocov_core.runs.run_record import RunRecord


def future_section(run: RunRecord, ds: Dataset, kf: KernelFile) -> None:
    """Heading, horizon (or the covariates' future values), chart, note and CSV download of the forecast
    after the data. ``ds``: the series the kernel models (with covariates, what their effect leaves)."""
    st.divider()
    st.markdown("##### Forecast past the data")
    if ds.x.shape[1] != 1:
        st.caption(f"A forecast past the data needs one input (time); these data have {ds.x.shape[1]}.")
        return
    effect = kf.covariates
    if effect is not None and effect.used:
        covariate_future(run, ds, kf, effect)
        return
    if effect is not None:
        st.caption(f"The search left the covariates {', '.join(effect.names)} out ({effect.reason}): the forecast "
                   "needs no future values of them.")
    top = min(MAX_HORIZON, ds.n)
    h = int(st.columns([1, 3])[0].number_input(
        "Steps ahead", min_value=1, max_value=top, value=default_horizon(ds), step=1, key=f"results_horizon_{run.id}",
        help=f"Steps after the last observation, at the data's step (at most {top:,}: the number of points). "
             "The kernel is conditioned on every observed point, test part included."))
    forecast_body(run, ds, kf, h=h, name=f"{h}-steps")


def covariate_future(run: RunRecord, ds: Dataset, kf: KernelFile, effect: CovariateEffect) -> None:
    """The uploader of the covariates' future values (or those kept with the run), then the forecast at them."""
    names = ", ".join(effect.names)
    full = run.dataset if run.dataset is not None else ds
    many = len(effect.names) > 1
    st.markdown(f"This kernel uses the covariate{'s' * many} **{names}** ({effect_words(effect)}): a forecast past "
                f"the data needs {'their values' if many else 'its value'} at every time it is for. Upload a CSV "
                f"with the time column (`{ds.x_label}`) and a column for each covariate "
                f"(`{'`, `'.join(effect.names)}`), one row per time after the last observation.")
    c1, c2 = st.columns([3, 1])
    up = c1.file_uploader("Future values of the covariates (CSV)", type=["csv", "txt", "tsv"],
                          key=f"results_future_file_{run.id}",
                          help="The forecast is at these times, with the covariates' effect at these values added "
                          "to the kernel's forecast of what the effect leaves. Kept with the run.")
    c2.download_button("Template (CSV)", future_template(ds, effect), file_name=f"{ds.name}-future-{run.id}.csv",
                       mime="text/csv", key=f"results_future_template_{run.id}", icon=":material/download:",
                       help=f"The next {default_horizon(ds)} steps after the data, with an empty column for each "
                       "covariate to fill in.")
    kept = run.extra.get(FUTURE_VALUES)
    if up is not None:
        try:
            x, C = read_future(up.getvalue(), ds, effect)
        except DataError as exc:
            st.error(f"**Cannot use {up.name}:** {exc}.", icon=":material/block:")
            return
        source = up.name
        if not (isinstance(kept, dict) and kept.get("x") == x.tolist() and kept.get("c") == C.tolist()):
            store().update_extra(run.id, {FUTURE_VALUES: {"file": up.name, "names": list(effect.names),
                                                       "x": x.tolist(), "c": C.tolist()}})
    elif isinstance(kept, dict) and kept.get("names") == list(effect.names):
        try:
            x, C = np.asarray(kept["x"], dtype=np.float64), np.asarray(kept["c"], dtype=np.float64)
            check_future(x, C, effect.names)
        except (DataError, KeyError, TypeError, ValueError) as exc:
            st.error(f"The future values kept with this run cannot be used: {exc}.", icon=":material/block:")
            return
        source = str(kept.get("file") or "the file uploaded before")
        st.caption(f":material/history: Forecast with the future values of **{source}**, uploaded before; upload "
                   "another file to replace them.")
    else:
        st.info(f"No forecast past the data until the future values of {names} are uploaded.",
                icon=":material/upload_file:")
        return
    forecast_body(run, ds, kf, at=(x, C), effect=effect, full=full, name=Path(source).stem[:40] or "future")


def forecast_body(run: RunRecord, ds: Dataset, kf: KernelFile, *, h: int | None = None,
                  at: tuple[np.ndarray, np.ndarray] | None = None, effect: CovariateEffect | None = None,
                  full: Dataset | None = None, name: str = "") -> None:
    """The forecast of the next ``h`` steps, or at the times ``at[0]`` with the covariates' values ``at[1]``
    (``effect`` added back, drawn over ``full``): the classical members in the background first when the
    search's forecast averages some."""
    x = at[0] if at is not None else None
    steps = h if at is None else int(at[0].size)
    comb = kf.combination
    fut = None
    if comb.combined:
        key = ("future", dataset_fingerprint(ds), run.id, h if at is None else future_key(*at))
        fut = fits.existing_forecast(key) or fits.background_forecast(
            key, classical_forecasts, future_members_data(kf, ds, steps, at=x),
            season_lengths=infer_seasons(ds).lengths or (1,), time_limit=DEFAULT_TIME_LIMIT, models=comb.models)
    waiting = fut is not None and not fut.done()

    @st.fragment(run_every=poll_every(waiting, 1.5))
    def body() -> None:
        pending = fut is not None and not fut.done()
        classical = fut.result() if fut is not None and fut.done() and fut.exception() is None else None
        try:
            if fut is not None and classical is None and not pending:
                st.warning(f"The classical members could not be fitted ({fut.exception()}): the kernel's own "
                           "forecast is shown.", icon=":material/warning:")
            own = kf if classical is not None or fut is None else _kernel_only(kf)
            fc = forecast_future(own, ds, h, classical=classical, at=x)
            if at is not None and effect is not None:
                fc = add_effect(fc, effect, at[1])
        except DataError as exc:
            st.error(f"No forecast past the data: {exc}", icon=":material/block:")
            return
        if pending:
            st.info(f"{' and '.join(comb.models)} are being fitted on every observed point for the search's forecast; "
                    "meanwhile this is the kernel's own.", icon=":material/hourglass_top:")
        shown = full if full is not None else ds
        st.plotly_chart(polish(future_figure(shown, fc)), key=f"results_future_chart_{run.id}_{name}_{pending}")
        st.caption(fc.note)
        st.download_button(
            "Download the forecast (CSV)", fc.frame(ds.x_label).to_csv(index=False).encode(),
            file_name=f"evocov-forecast-{ds.name}-{run.id}-{name}.csv", mime="text/csv",
            key=f"results_future_download_{run.id}", disabled=pending, icon=":material/download:",
            help="One row per step: the forecast and its 95 % interval, then the kernel's own mean and interval"
            + (" (the covariates' effect added to each)." if at is not None else "."))

    body()


def _kernel_only(kf: KernelFile) -> KernelFile:
    """``kf`` with its own forecast, while the classical members are fitted."""
    return dataclasses.replace(kf, combination=Combination())
