"""Covariates with known futures on the dashboard: which columns may be chosen, what the kernels model, and
the future values a forecast needs (:mod:`evocov_core.forecast.covariates` does the work).

A dataset with covariates (:attr:`~evocov_core.data.Dataset.covariates`, chosen on the Data page) is searched
on what their linear effect leaves, along time (:func:`~evocov_core.forecast.covariates.searched_on`, in the
background job as on the command line). Every page that fits or draws a kernel uses that series,
:func:`modelled`; its y label says so. A forecast past the data adds the effect back at the covariates'
future values, read from an uploaded table (:func:`read_future`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.datasets import dataset_fingerprint, read_upload
from evocov_core.data import DataError, Dataset, numeric_columns
from evocov_core.forecast.covariates import CovariateEffect, fit_covariates, future_covariates, on_time, time_only
from evocov_core.forecast.future import default_horizon, future_labels, future_x
from evocov_core.runs.run_record import RunRecord

__all__ = ["applied_to", "check_future", "covariate_options", "data_effect", "effect_words", "future_key",
           "future_template", "kernel_effect", "modelled", "read_future", "run_data"]

Array = NDArray[np.float64]


def covariate_options(df: pd.DataFrame, x: str | None, y: str) -> list[str]:
    """The columns of ``df`` that may be covariates: its columns of numbers other than ``x`` and ``y``."""
    return [str(c) for c in numeric_columns(df) if c not in (x, y)]


@st.cache_data(show_spinner=False, max_entries=16)
def _fitted(fingerprint: str, names: tuple[str, ...], _ds: Dataset) -> CovariateEffect:
    return fit_covariates(_ds)


def data_effect(ds: Dataset) -> CovariateEffect | None:
    """The covariates' effect on ``ds`` as a search estimates it (None without covariates); computed once per
    data (a regression: a third of a second at 100,000 points)."""
    if not ds.covariates:
        return None
    return _fitted(dataset_fingerprint(ds), ds.covariates, ds)


def kernel_effect(doc: Mapping | None) -> CovariateEffect | None:
    """The covariates' effect a kernel-file document records (None when it records none or a malformed one)."""
    stored = doc.get("covariates") if isinstance(doc, Mapping) else None
    if stored is None:
        return None
    try:
        return CovariateEffect.from_dict(stored)
    except (ValueError, TypeError):
        return None


def modelled(ds: Dataset, effect: CovariateEffect | None = None) -> Dataset:
    """What kernels are fitted, scored and drawn on: ``ds`` itself when it has no covariates; else ``ds`` along
    time with the covariates' effect taken out (``effect``: a kernel file's; by default the one a search
    estimates), its y label saying so when the effect is used.

    Raises
    ------
    DataError
        ``effect`` names a covariate ``ds`` does not have.
    """
    if not ds.covariates:
        return ds
    effect = effect if effect is not None else data_effect(ds)
    assert effect is not None
    on = on_time(ds, effect)
    return replace(on, y_label=f"{ds.y_label} − effect of {', '.join(effect.names)}") if effect.used else on


def run_data(run: RunRecord) -> Dataset:
    """The series ``run``'s kernels model: its data, with the covariates' effect its kernel file records taken
    out (:func:`modelled`)."""
    assert run.dataset is not None
    return modelled(run.dataset, kernel_effect(run.best.doc) if run.best is not None else None)


def applied_to(ds: Dataset, effect: CovariateEffect | None) -> Dataset:
    """``ds`` as a kernel file with ``effect`` (or none) applies to it: along time with that effect taken out,
    or along time alone when the file has no covariates and ``ds`` has some.

    Raises
    ------
    DataError
        The file uses a covariate ``ds`` does not have (the message names it).
    """
    if effect is not None:
        return modelled(ds, effect)
    return time_only(ds) if ds.covariates else ds


def effect_words(effect: CovariateEffect) -> str:
    """``"temp +2.1, holiday −30 per unit"`` (used), or ``"left out"``."""
    if not effect.used:
        return "left out"
    return ", ".join(f"{n} {c:+.4g}" for n, c in zip(effect.names, effect.coef, strict=True)) + " per unit"


def read_future(data: bytes, ds: Dataset, effect: CovariateEffect) -> tuple[Array, Array]:
    """The times (shape (h,), sorted, in the data's units) and the covariates' values there (shape (h, k), in
    ``effect.names`` order) of an uploaded table of future values.

    Raises
    ------
    DataError
        One line: the file cannot be read, a covariate's column is absent, a value is missing or not a number
        (naming the column and the line), a time cannot be read or is not after the last observation.
    """
    return future_covariates(read_upload(data), ds, effect)


def future_key(x: Array, C: Array) -> str:
    """A short key of the future values (so a background forecast is made once per table)."""
    h = hashlib.sha1(np.ascontiguousarray(x, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(C, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def future_template(ds: Dataset, effect: CovariateEffect) -> bytes:
    """A CSV to fill in: the time column with the next steps after the data (:func:`default_horizon` of them),
    and an empty column per covariate."""
    along = time_only(ds)
    x = future_x(along, default_horizon(along))
    table = pd.DataFrame({ds.x_label: future_labels(along, x)})
    for n in effect.names:
        table[n] = ""
    return table.to_csv(index=False).encode()


def check_future(x: Array, C: Array, names: tuple[str, ...]) -> None:
    """Refuse stored future values that do not fit the kernel (a DataError), e.g. a malformed store row."""
    if x.ndim != 1 or C.shape != (x.size, len(names)) or not (np.isfinite(x).all() and np.isfinite(C).all()):
        raise DataError("the stored future values do not match this kernel's covariates; upload them again")
