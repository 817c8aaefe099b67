"""The Results page's table of every forecast of the test part: this run's kernel, its model average, the
SE and GPSS baselines and the classical forecasters; the classical forecasts drawn dashed on the forecast.

The SE fit and the classical forecasters run in the background (:mod:`dashboard.fits`), once per
data set and split (and, for the classical ones, seasons and time limit) for every session of the
server: a rerun of the page refits nothing. Until they end, their rows say ``running…`` and the
table refreshes itself; when the classical forecasts arrive the page redraws once, to draw them.
The numbers come from :func:`evocov_core.present.compare.forecast_comparison`.
"""

from __future__ import annotations

import contextlib
import math
from concurrent.futures import Future

import pandas as pd
import streamlit as st

from dashboard import fits
from dashboard.datasets import dataset_fingerprint
from dashboard.format import fmt, poll_every
from dashboard.views import model_key
from evocov_core.compute.timed import one_line
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.seasons import Seasons, infer_seasons, parse_seasons
from evocov_core.forecast.classical import (
    DEFAULT_TIME_LIMIT,
    ClassicalForecasts,
    classical_forecasts,
    running_forecasts,
)
from evocov_core.forecast.combination import Combination
from evocov_core.present.compare import forecast_comparison
from evocov_core.present.figures import comparison_forecasts_data
from evocov_core.present.gp_comparison import Compared, FittedBaseline
from evocov_core.runs.jobs import Job
from evocov_core.runs.kernel_file import KernelFile, KernelFileError, parse_kernel_file
from evocov_core.runs.run_record import RunRecord
from evocov_core.searches.gp_baselines import se_baseline

TABLE_HELP = (
    "Every method forecasts the {h} test points from the {n} training points. **Test RMSE** of the forecast "
    "mean; **95 % coverage**: the share of the test points inside the 95 % interval (near 95 % is an honest "
    "interval); **CRPS**: how far the whole forecast distribution is from each test value, averaged, in the "
    "data's units; **interval score** (α = 0.05): the interval's width plus a penalty for each point outside "
    "it. Lower is better for all but coverage. ★ marks the lowest test RMSE. The classical forecasters see "
    "the points as consecutive steps; their forecasts are drawn dashed on the forecast below (click a legend "
    "entry to hide or show one).")


def se_future(ds: Dataset) -> Future:
    """The background SE fit on ``ds`` (started now unless it exists): a :class:`FitResult`."""
    fp = dataset_fingerprint(ds)
    return fits.existing_fit(("se", fp)) or fits.background_fit(("se", fp), se_baseline, FitData.from_dataset(ds))


def _settings(run_id: str, ds: Dataset) -> tuple[tuple[int, ...] | None, float, Seasons]:
    """The season and time-limit widgets, and the seasons line: ``(seasons typed or None, limit, seasons)``."""
    c_seasons, c_limit = st.columns([2, 1])
    text = c_seasons.text_input(
        "Seasons of the classical forecasters (steps)", key=f"results_seasons_{run_id}",
        placeholder="read from the x spacing",
        help="Season lengths in steps, main one first: 12 for monthly data with a yearly cycle, 7, 365 for daily "
        "data. 1 or none: no season. Empty: read from the spacing of x (dates) or the periodogram.")
    limit = c_limit.number_input(
        "Time limit per model (s)", min_value=1.0, max_value=600.0, value=DEFAULT_TIME_LIMIT, step=5.0,
        key=f"results_time_limit_{run_id}",
        help="A classical model still running after this many seconds is stopped and its row says so.")
    try:
        given = parse_seasons(text)
    except ValueError as exc:
        st.error(f"Seasons: {exc}. The seasons read from the data are used.", icon=":material/block:")
        given = None
    seasons = infer_seasons(ds, given)
    notes = "".join(f" {n[0].upper()}{n[1:]}." for n in seasons.notes)
    st.caption(f"Seasons given to the classical forecasters (steps): **{seasons.describe()}**.{notes}")
    return given, float(limit), seasons


def _classical_key(ds: Dataset, seasons: Seasons, limit: float) -> tuple:
    return ("classical", dataset_fingerprint(ds), seasons.lengths, limit)


def classical_future(ds: Dataset, given: tuple[int, ...] | None, limit: float, seasons: Seasons) -> Future:
    """The background classical forecasts of ``ds`` with these seasons and time limit (started unless they exist)."""
    key = _classical_key(ds, seasons, limit)
    return fits.existing_forecast(key) or fits.background_forecast(key, classical_forecasts, ds,
                                                                    season_lengths=given, time_limit=limit)


def settings_in_state(run_id: str, ds: Dataset) -> tuple[tuple[int, ...] | None, float, Seasons]:
    """The seasons and time limit the comparison section's widgets hold (their defaults before it is drawn):
    ``(seasons typed or None, limit, seasons)``, as :func:`_settings` returns them."""
    try:
        given = parse_seasons(str(st.session_state.get(f"results_seasons_{run_id}", "") or ""))
    except ValueError:
        given = None
    limit = float(st.session_state.get(f"results_time_limit_{run_id}", DEFAULT_TIME_LIMIT))
    return given, limit, infer_seasons(ds, given)


def classical_for_report(run_id: str, ds: Dataset) -> ClassicalForecasts | None:
    """The classical forecasts the comparison section made with its current seasons and time limit, for
    the report to use instead of fitting them again; None when they are not done (the report fits its
    own), failed, or the data have no test part to forecast."""
    if ds.x.shape[1] != 1 or ds.n_test == 0:
        return None
    _, limit, seasons = settings_in_state(run_id, ds)
    fut = fits.existing_forecast(_classical_key(ds, seasons, limit))
    if fut is None or not fut.done() or fut.exception() is not None:
        return None
    return fut.result()


def baselines_for_report(ds: Dataset, kf: KernelFile, gpss: RunRecord | None
                         ) -> tuple[FittedBaseline | None, FittedBaseline | None]:
    """The GP baselines the page has fitted already, for the report to score instead of fitting its own:
    ``(SE, GPSS)``, each None when it is not done, failed, or was fitted on other points or in other units
    than the report compares ``kf`` on (:meth:`~evocov_core.present.gp_comparison.FittedBaseline.fits`).

    The SE fit is :func:`se_future`'s, the same seeded fit the report would make, so the report is the same
    with it (but for the SE row's seconds: spent elsewhere); ``gpss``, a finished GPSS run on ``ds``, then
    stands for the report's own GPSS search."""
    se = None
    fut = fits.existing_fit(("se", dataset_fingerprint(ds)))
    if fut is not None and fut.done() and fut.exception() is None:
        candidate = FittedBaseline(fut.result(), ds.norm)
        se = candidate if candidate.fit.ok and candidate.fits(kf, ds) else None
    found = None
    if gpss is not None and gpss.best is not None and gpss.dataset is not None:
        try:
            fit = gpss.best.to_fit(ds.n_train)
        except (KernelFileError, ValueError):
            fit = None
        if fit is not None:
            candidate = FittedBaseline(fit, gpss.dataset.norm, seconds=gpss.elapsed,
                                       note=f"GPSS run {gpss.id} on these data (the Results page's GPSS baseline)")
            found = candidate if candidate.fits(kf, ds) else None
    return se, found


def _state(fut: Future) -> str:
    if not fut.done():
        return "running"
    return "ok" if fut.exception() is None else f"failed: {one_line(fut.exception())}"  # type: ignore[arg-type]


def _classical(fut: Future, ds: Dataset, given: tuple[int, ...] | None) -> ClassicalForecasts:
    if not fut.done():
        return running_forecasts(ds, season_lengths=given)
    exc = fut.exception()
    if exc is not None:
        return running_forecasts(ds, season_lengths=given, failed=f"the background run failed: {one_line(exc)}")
    return fut.result()


def _gp_rows(ds: Dataset, average: ModelAverage | None, se: Future, gpss: RunRecord | None,
             gpss_job: Job | None) -> list[Compared]:
    rows = []
    if average is not None:
        rows.append(Compared.from_model(
            "model average", average, ds, expression=f"mixture of {average.k} kernel{'s' * (average.k > 1)}",
            note="interval and CRPS of the normal with the mixture's mean and standard deviation"))
    if not se.done():
        rows.append(Compared.waiting("SE", "running"))
    elif se.exception() is not None:
        rows.append(Compared.waiting("SE", "failed", f"the fit failed: {one_line(se.exception())}"))  # type: ignore
    else:
        rows.append(Compared.from_fit("SE", se.result(), ds, note="squared exponential + noise, fitted by LML"))
    if gpss is not None and gpss.best is not None and gpss.dataset is not None:
        try:
            fit: FitResult = gpss.best.to_fit(ds.n_train)
        except (KernelFileError, ValueError) as exc:
            rows.append(Compared.waiting("GPSS", "failed", f"GPSS run {gpss.id}: {one_line(exc)}"))
        else:
            rows.append(Compared.from_fit("GPSS", fit, ds, norm=gpss.dataset.norm, seconds=gpss.elapsed,
                                          note=f"GPSS run {gpss.id}"))
    elif gpss_job is not None and not gpss_job.snapshot().done:
        rows.append(Compared.waiting("GPSS", "running"))
    else:
        rows.append(Compared.waiting("GPSS", "skipped", "no GPSS run on these data yet (the button above starts one)"))
    return rows


@st.cache_data(show_spinner=False, max_entries=32)
def _comparison(cache_key: str, _ds: Dataset, _kernel: FittedModel, _average: ModelAverage | None, _se: Future,
                _gpss: RunRecord | None, _gpss_job: Job | None, _classical: ClassicalForecasts,
                _seconds: float | None, _combination: Combination) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison table and the classical (and combined) forecasts to draw (``cache_key`` says what
    they are made of)."""
    comp = forecast_comparison(_ds, _kernel, baselines=_gp_rows(_ds, _average, _se, _gpss, _gpss_job),
                               classical=_classical, kernel_seconds=_seconds, combination=_combination)
    return comp.table, comparison_forecasts_data(comp, _ds)


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_~[]$<>#"})


def table_view(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison table as the page shows it: numbers written out, the best starred, one note per row.

    ``st.table`` reads Markdown in its cells: a GP's kernel is a code span, other notes are escaped.
    """

    def note(r: pd.Series) -> str:
        text = str(r["reason"] if r["status"] != "ok" else r["details"] or "")
        text = text if len(text) <= 90 else text[:89] + "…"
        if r["status"] == "ok" and r["kind"] == "GP" and r["method"] != "model average" and "`" not in text:
            return f"`{text}`" if text else ""
        return text.translate(_MARKDOWN)

    def pct(v: float) -> str:
        return f"{v:.0%}" if math.isfinite(v) else "–"

    return pd.DataFrame({
        "method": table["method"], "best": ["★" if b else "" for b in table["best"]], "kind": table["kind"],
        "test RMSE": [fmt(v) for v in table["test_rmse"]], "95 % coverage": [pct(v) for v in table["coverage_95"]],
        "CRPS": [fmt(v) for v in table["crps"]], "interval score": [fmt(v) for v in table["interval_score"]],
        "seconds": [fmt(v, ".2g") for v in table["seconds"]],
        "status": ["running…" if s == "running" else s for s in table["status"]],
        "notes": [note(r) for _, r in table.iterrows()],
    }).set_index("method")


def current_comparison(run: RunRecord, ds: Dataset, best: FitResult, average: ModelAverage | None, se: Future,
                       gpss: RunRecord | None, gpss_job: Job | None,
                       settings: tuple[tuple[int, ...] | None, float, Seasons]
                       ) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The comparison table and the forecasts to draw as they stand now, and whether something still runs.

    ``settings`` is ``(seasons typed or None, time limit, seasons)`` (:func:`settings_in_state`); the
    classical forecasts with them are started unless they exist. Cached: the verdict card and the
    comparison section ask for the same table once.
    """
    given, limit, seasons = settings
    fut = classical_future(ds, given, limit, seasons)
    spread = 1.0
    if run.best is not None:
        # The intervals as the kernel file gives them (calibrated), as in the report.
        with contextlib.suppress(KernelFileError):
            spread = parse_kernel_file(run.best.text).calibration.spread
    kernel = FittedModel.from_fit(best, ds.norm, ds.n_train, spread=spread)
    combination = run.best.combination if run.best is not None else Combination()
    gpss_state = gpss.id if gpss is not None else (gpss_job.snapshot().status if gpss_job is not None else "")
    key = "|".join([run.id, dataset_fingerprint(ds), model_key(kernel, ds),
                    model_key(average, ds) if average is not None else "", _state(se), str(gpss_state),
                    repr((seasons.lengths, limit, given)), _state(fut), combination.label])
    table, drawn = _comparison(key, ds, kernel, average, se, gpss, gpss_job, _classical(fut, ds, given), run.elapsed,
                               combination)
    waiting = not fut.done() or not se.done() or (gpss_job is not None and not gpss_job.snapshot().done)
    return table, drawn, waiting


def comparison_section(run: RunRecord, ds: Dataset, best: FitResult, average: ModelAverage | None, se: Future,
                       gpss: RunRecord | None, gpss_job: Job | None) -> pd.DataFrame | None:
    """The table of every forecast of the test part; returns the classical forecasts to draw dashed.

    Parameters
    ----------
    run : RunRecord
    ds : Dataset
        The run's data.
    best : FitResult
        This run's kernel.
    average : ModelAverage or None
        Its model average.
    se : Future
        :func:`se_future` of ``ds``.
    gpss, gpss_job
        A finished GPSS run on ``ds``, or the background GPSS job running on it (or None).

    Returns
    -------
    DataFrame or None
        :func:`~evocov_core.present.figures.comparison_forecasts_data` of the classical forecasts (None when
        there are none to draw yet).
    """
    st.markdown("##### Every forecast of the test part")
    if ds.n_test == 0:
        st.caption("The forecasts are compared on the test part: this run's data have none (a test fraction "
                   "of 0). Set one on the Data page and search again to compare them.")
        return None
    if ds.x.shape[1] != 1:
        st.caption(f"The forecasts are compared on a series with one input (time): these data have "
                   f"{ds.x.shape[1]} inputs.")
        return None
    given, limit, seasons = _settings(run.id, ds)
    fut = classical_future(ds, given, limit, seasons)
    classical_was_done = fut.done()
    waiting = not fut.done() or not se.done() or (gpss_job is not None and not gpss_job.snapshot().done)

    def current() -> tuple[pd.DataFrame, pd.DataFrame]:
        return current_comparison(run, ds, best, average, se, gpss, gpss_job, (given, limit, seasons))[:2]

    @st.fragment(run_every=poll_every(waiting, 1.5))
    def table() -> None:
        if not classical_was_done and fut.done():
            st.rerun()  # the whole page: the forecast figure draws the classical forecasts
        tab, _ = current()
        st.caption(TABLE_HELP.format(h=ds.n_test, n=ds.n_train))
        with st.container(key="results_comparison"):
            st.table(table_view(tab))

    table()
    drawn = current()[1]
    return drawn if len(drawn) else None
