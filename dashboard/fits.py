"""Reference fits (SE baseline, fixed structures) and classical forecasts in the background, shared by
every session.

Three lanes, each one child process at a time: the GP fits; the classical forecasters
(:func:`evocov_core.forecast.classical.classical_forecasts`, seconds each), so that a long SE fit never
holds the classical rows of the Results page back; and the HTML reports, whose baselines take
the GPSS budget the user sets (tens of seconds on a long series). Callers look these functions
up on the module (``fits.background_fit(...)``), so a test can replace them.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import streamlit as st

from dashboard.background import FitRunner


@st.cache_resource(show_spinner=False)
def _fit_runner() -> FitRunner:
    # Reference fits take seconds to minutes: one child process at a time, results kept by key
    # for every session of this server.
    return FitRunner(slots=1)


@st.cache_resource(show_spinner=False)
def _forecast_runner() -> FitRunner:
    # The classical forecasters: one child process at a time (it starts its own, killable, child
    # for the models' time limits), results kept by key for every session of this server.
    return FitRunner(slots=1)


@st.cache_resource(show_spinner=False)
def _report_runner() -> FitRunner:
    # HTML reports: one child process at a time, each report kept by key for every session, so
    # that leaving the page while one is made loses nothing.
    return FitRunner(slots=1)


def background_fit(key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` in a child process once per ``key``; returns its Future."""
    return _fit_runner().submit(key, fn, *args, **kwargs)


def existing_fit(key: tuple) -> Future | None:
    """The Future of the fit started for ``key``, or None."""
    return _fit_runner().get(key)


def background_forecast(key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` in a child process of the forecasts' lane once per ``key``; its Future."""
    return _forecast_runner().submit(key, fn, *args, **kwargs)


def existing_forecast(key: tuple) -> Future | None:
    """The Future of the forecasts started for ``key``, or None."""
    return _forecast_runner().get(key)


def background_report(key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` in a child process of the reports' lane once per ``key``; its Future."""
    return _report_runner().submit(key, fn, *args, **kwargs)


def existing_report(key: tuple) -> Future | None:
    """The Future of the report started for ``key``, or None."""
    return _report_runner().get(key)
