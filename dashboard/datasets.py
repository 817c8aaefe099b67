"""The session's dataset: bundled series, uploads, the train/test split, fingerprints.

Every check of the data is the core's (:mod:`evocov_core.data`): what fails comes back as a
:class:`~evocov_core.data.DataError` whose one line the Data page shows.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.state import DATASET_KEY, DEFAULT_DATASET, DEFAULT_TEST_FRACTION, SOURCE_KEY
from evocov_core.data import (
    MAX_BYTES,
    MAX_POINTS,
    DataError,
    Dataset,
    bundled_datasets,
    dataset_from_frame,
    guess_columns,
    load_bundled,
    read_table,
    validate_split,
)

#: The x-column choice meaning "number the rows".
ROW_NUMBER = "(row number)"


def max_upload_bytes() -> int:
    """The upload limit in bytes: the core reader's :data:`~evocov_core.data.MAX_BYTES`, the command line's too.

    ``server.maxUploadSize`` of ``.streamlit/config.toml`` is the same number of MB
    (tests/dashboard/test_server_config.py checks it), so the browser refuses what the reader would.
    """
    return MAX_BYTES


@st.cache_data(show_spinner=False)
def catalog() -> list[dict]:
    """The bundled series (``data/datasets.json``)."""
    return bundled_datasets()


@st.cache_data(show_spinner=False)
def _bundled(name: str, test_fraction: float) -> Dataset:
    return load_bundled(name, test_fraction=test_fraction)


def load_bundled_dataset(name: str, test_fraction: float) -> Dataset:
    """A bundled series split at ``test_fraction``; a split no search should use is refused (DataError)."""
    validate_split(test_fraction)
    ds = _bundled(name, test_fraction)
    validate_split(ds.test_fraction, ds.n_train)
    return ds


def with_test_fraction(ds: Dataset, test_fraction: float) -> Dataset:
    """``ds`` split anew; a split no search should use is refused (DataError)."""
    validate_split(test_fraction)
    new = ds.with_test_fraction(test_fraction)
    validate_split(new.test_fraction, new.n_train)
    return new


def set_dataset(ds: Dataset, source: dict) -> None:
    """Make ``ds`` the session's dataset; ``source`` says where it came from."""
    st.session_state[DATASET_KEY] = ds
    st.session_state[SOURCE_KEY] = source


def current_dataset() -> Dataset:
    """The session's dataset; Airline (test fraction 0.1) until the user picks another."""
    ds = st.session_state.get(DATASET_KEY)
    if ds is None:
        ds = _bundled(DEFAULT_DATASET, DEFAULT_TEST_FRACTION)
        set_dataset(ds, {"kind": "bundled", "name": DEFAULT_DATASET})
    return ds


def dataset_source() -> dict:
    """Where the session's dataset came from: ``{"kind": ..., "name": ...}``."""
    current_dataset()
    return st.session_state.get(SOURCE_KEY) or {"kind": "bundled", "name": DEFAULT_DATASET}


def dataset_fingerprint(ds: Dataset) -> str:
    """Identity of a dataset's content and split (name excluded)."""
    h = hashlib.sha1()
    h.update(np.ascontiguousarray(ds.x, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(ds.y, dtype=np.float64).tobytes())
    h.update(f"{ds.test_fraction:.6f}".encode())
    if ds.covariates:  # (data without covariates keep the fingerprint they always had)
        h.update(repr(ds.covariates).encode())
    return h.hexdigest()[:16]


def dataset_summary(ds: Dataset) -> str:
    """``"144 points · 129 train · 15 test"``, then ``" · covariates temp, price"`` when it has some."""
    return (f"{ds.n} points · {ds.n_train} train · {ds.n_test} test"
            + (f" · covariates {', '.join(ds.covariates)}" if ds.covariates else ""))


def subset_note(ds: Dataset, fit_points: int) -> str | None:
    """What a search does with a long series, one sentence (None when every training point is used).

    ``fit_points``: the search setting (:attr:`evocov_core.searches.SearchConfig.fit_points`).
    """
    from evocov_core.fitting.subset import plan_subset

    plan = plan_subset(ds.n_train, fit_points)
    if plan.exact:
        return None
    return (f"Long series: fits and forecasts will use an exact GP on {plan.n_used:,} of the {ds.n_train:,} "
            f"training points (the most recent {plan.recent:,}, and {plan.history:,} spread over the earlier "
            "history): a subset of the data, since an exact GP on every point costs O(n³) time and O(n²) memory.")


def read_upload(data: bytes) -> pd.DataFrame:
    """Read uploaded bytes as a table (size limit, empty file and non-CSV refused with DataError)."""
    if len(data) == 0:
        raise DataError("the file is empty")
    return read_table(data, max_bytes=max_upload_bytes())


def upload_to_dataset(
    data: bytes,
    *,
    name: str = "upload",
    x: str | None = None,
    y: str | None = None,
    guess: bool = True,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    max_points: int = MAX_POINTS,
    subsample: bool = False,
    drop_missing: bool = False,
    frame: pd.DataFrame | None = None,
    covariates: tuple[str, ...] | list[str] = (),
) -> Dataset:
    """The whole upload validation path: bytes -> Dataset, or a :class:`DataError` that says why.

    ``x`` is a column name, :data:`ROW_NUMBER`/None for the row number; with ``guess`` and no
    ``y`` both are guessed from the table. The split is checked as everywhere
    (:func:`evocov_core.data.validate_split`). ``frame``: the table :func:`read_upload` has
    already read from ``data`` (the Data page's), so that a file is parsed once a rerun. ``covariates``:
    columns known in advance, x's columns 2 to d (:func:`evocov_core.data.dataset_from_frame`).
    """
    df = read_upload(data) if frame is None else frame
    if y is None:
        if not guess:
            raise DataError("choose a column to model (y)")
        gx, y = guess_columns(df)
        if x is None:
            x = gx
    if x == ROW_NUMBER:
        x = None
    ds = dataset_from_frame(
        df,
        x,
        y,
        name=name,
        test_fraction=test_fraction,
        max_points=max_points,
        subsample=subsample,
        drop_missing=drop_missing,
        covariates=tuple(covariates),
    )
    validate_split(ds.test_fraction, ds.n_train)
    return ds
