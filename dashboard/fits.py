"""Reference fits (SE baseline, fixed structures) in the background, shared by every session.

Callers look these functions up on the module (``fits.background_fit(...)``), so a test can
replace them.
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


def background_fit(key: tuple, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` in a child process once per ``key``; returns its Future."""
    return _fit_runner().submit(key, fn, *args, **kwargs)


def existing_fit(key: tuple) -> Future | None:
    """The Future of the fit started for ``key``, or None."""
    return _fit_runner().get(key)
