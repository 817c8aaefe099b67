"""The Results page's forecast past the data: the next steps after the last observation, drawn and
downloadable as CSV (:mod:`evocov_core.forecast.future`).

When the search's forecast averages the kernel with classical forecasters, those are fitted on every
observed point in the background (the forecasts' lane of :mod:`dashboard.fits`, once per run, data and
horizon for every session of the server); until they are done the kernel's own forecast is shown and
the section refreshes itself.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from dashboard import fits
from dashboard.datasets import dataset_fingerprint
from dashboard.format import polish, poll_every
from evocov_core.data import DataError, Dataset
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, classical_forecasts
from evocov_core.forecast.combination import Combination
from evocov_core.forecast.future import MAX_HORIZON, default_horizon, forecast_future, future_members_data
from evocov_core.present.figures import future_figure
from evocov_core.runs.kernel_file import KernelFile
from evocov_core.runs.run_record import RunRecord


def future_section(run: RunRecord, ds: Dataset, kf: KernelFile) -> None:
    """Heading, horizon, chart, note and CSV download of the forecast after the data."""
    st.divider()
    st.markdown("##### Forecast past the data")
    if ds.x.shape[1] != 1:
        st.caption(f"A forecast past the data needs one input (time); these data have {ds.x.shape[1]}.")
        return
    top = min(MAX_HORIZON, ds.n)
    h = int(st.columns([1, 3])[0].number_input(
        "Steps ahead", min_value=1, max_value=top, value=default_horizon(ds), step=1, key=f"results_horizon_{run.id}",
        help=f"Steps after the last observation, at the data's step (at most {top:,}: the number of points). "
             "The kernel is conditioned on every observed point, test part included."))
    comb = kf.combination
    fut = None
    if comb.combined:
        key = ("future", dataset_fingerprint(ds), run.id, h)
        fut = fits.existing_forecast(key) or fits.background_forecast(
            key, classical_forecasts, future_members_data(kf, ds, h),
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
            fc = forecast_future(own, ds, h, classical=classical)
        except DataError as exc:
            st.error(f"No forecast past the data: {exc}", icon=":material/block:")
            return
        if pending:
            st.info(f"{' and '.join(comb.models)} are being fitted on every observed point for the search's forecast; "
                    "meanwhile this is the kernel's own.", icon=":material/hourglass_top:")
        st.plotly_chart(polish(future_figure(ds, fc)), key=f"results_future_chart_{run.id}_{h}_{pending}")
        st.caption(fc.note)
        st.download_button(
            "Download the forecast (CSV)", fc.frame(ds.x_label).to_csv(index=False).encode(),
            file_name=f"evocov-forecast-{ds.name}-{run.id}-{h}-steps.csv", mime="text/csv",
            key=f"results_future_download_{run.id}", disabled=pending, icon=":material/download:",
            help="One row per step: the forecast and its 95 % interval, then the kernel's own mean and interval.")

    body()


def _kernel_only(kf: KernelFile) -> KernelFile:
    """``kf`` with its own forecast, while the classical members are fitted."""
    return dataclasses.replace(kf, combination=Combination())
