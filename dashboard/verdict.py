"""The Results page's verdict card: the forecast against the classical forecasters, its intervals, the kernel
in one phrase and who forecasts, before anything else (:func:`evocov_core.present.glance.verdict` says it)."""

from __future__ import annotations

import streamlit as st

from dashboard.comparison import current_comparison, se_future, settings_in_state
from dashboard.format import poll_every
from dashboard.runs import gpss_baseline_job, runs_on_dataset
from dashboard.views import model_key
from evocov_core.data import Dataset
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import FitResult
from evocov_core.forecast.combination import Combination
from evocov_core.present.glance import kernel_phrase, verdict
from evocov_core.runs.kernel_file import KernelFileError, parse_kernel_file
from evocov_core.runs.run_record import RunRecord


@st.cache_data(show_spinner=False, max_entries=32)
def _phrase(cache_key: str, _model: FittedModel, _ds: Dataset) -> str | None:
    return kernel_phrase(_model, _ds)


def verdict_card(run: RunRecord, ds: Dataset, best: FitResult, average: ModelAverage | None) -> None:
    """The verdict, in a bordered box (``results_verdict``); it refreshes itself while the classical
    forecasters it compares with still run."""
    combination = run.best.combination if run.best is not None else Combination()
    spread = 1.0
    if run.best is not None:
        try:
            spread = parse_kernel_file(run.best.text).calibration.spread
        except KernelFileError:
            spread = 1.0
    model = FittedModel.from_fit(best, ds.norm, ds.n_train, spread=spread)
    phrase = _phrase(model_key(model, ds), model, ds)
    comparable = ds.n_test > 0 and ds.x.shape[1] == 1
    se = se_future(ds) if comparable else None
    gpss_runs = runs_on_dataset(ds, algorithm="gpss") if comparable else []
    gpss_job = gpss_baseline_job(ds) if comparable else None
    settings = settings_in_state(run.id, ds) if comparable else None

    def now() -> tuple[object, bool]:
        if not comparable or se is None or settings is None:
            return None, False
        table, _, waiting = current_comparison(run, ds, best, average, se, gpss_runs[0] if gpss_runs else None,
                                               gpss_job, settings)
        return table, waiting

    _, waiting = now()

    @st.fragment(run_every=poll_every(waiting, 1.5))
    def card() -> None:
        table, _ = now()
        v = verdict(table, combination, phrase, n_test=ds.n_test)  # type: ignore[arg-type]
        with st.container(border=True, key="results_verdict"):
            for label, text in v.lines():
                st.markdown(f"**{label}.** {text}")
            if not comparable:
                st.caption("No test part to score the forecast on: set a test fraction on the Data page.")
            elif v.waiting:
                st.caption(f"Waiting for {', '.join(v.waiting)} (fitted in the background).")

    card()
