"""A search's model average on the dashboard: the mixture, its test RMSE, its file, its view."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.format import dash_empty, fmt
from dashboard.views import average_download_button, extrapolation_chart, kernel_download_button, model_key
from evocov_core.data import Dataset
from evocov_core.fitting.model import ModelAverage
from evocov_core.present.figures import average_members_data
from evocov_core.runs.kernel_file import KernelFileError, model_average, model_average_dict
from evocov_core.runs.run_record import RunRecord


def run_model_average(run: RunRecord, ds: Dataset) -> tuple[ModelAverage | None, str | None]:
    """A run's stored model average: ``(average or None, why it cannot be used or None)``.

    Older runs have none: ``(None, None)``.
    """
    if not run.ensemble:
        return None, None
    try:
        avg = model_average([m.kernel.doc for m in run.ensemble], [m.weight for m in run.ensemble], ds.norm)
    except (KernelFileError, ValueError, TypeError) as exc:
        return None, str(exc)
    return avg, None


def members_table(run: RunRecord) -> pd.DataFrame:
    """The kernels of a run's model average, heaviest first
    (:func:`evocov_core.present.figures.average_members_data`)."""
    return average_members_data([{"weight": m.weight, "kernel": m.kernel.doc} for m in run.ensemble])


@st.cache_data(show_spinner=False, max_entries=64)
def _average_test_rmse(cache_key: str, _avg: ModelAverage, _ds: Dataset) -> float | None:
    return _avg.test_rmse(_ds)


def average_test_rmse(avg: ModelAverage, ds: Dataset) -> float | None:
    """Test RMSE of the model average's mean (None without test data or when it cannot predict)."""
    try:
        v = _average_test_rmse(model_key(avg, ds), avg, ds)
    except Exception:  # a numerically broken member must not break the page
        return None
    return v if v is not None and math.isfinite(v) else None


def model_average_text(run: RunRecord, ds: Dataset, *, test_rmse: float | None = None) -> str:
    """The model-average JSON file of a run's stored model average."""
    scores: dict[str, Any] = {"test_rmse": test_rmse, "n_test": ds.n_test, "test_fraction": ds.test_fraction,
                              "run": run.id}
    doc = model_average_dict([m.kernel.doc for m in run.ensemble], [float(m.weight or 0.0) for m in run.ensemble],
                             dataset=ds.name, scores=scores)
    return json.dumps(doc, indent=2, allow_nan=False)


def show_model_average(
    avg: ModelAverage,
    ds: Dataset,
    key: str,
    *,
    members: pd.DataFrame,
    test_rmse: float | None,
    title: str = "Model average",
    average_download: tuple[str, str] | None = None,
    kernel_download: tuple[str, str] | None = None,
    forecasts: pd.DataFrame | None = None,
) -> None:
    """Members, test RMSE, mixture extrapolation and downloads of a model average.

    ``average_download`` / ``kernel_download`` = (JSON text, file name); ``forecasts`` are other
    methods' forecasts, drawn dashed on the extrapolation.
    """
    st.markdown(f"**{title}**")
    st.caption(
        "The forecast is the mixture of the kernels' predictive distributions, each weighted: its mean is the "
        "weighted mean of theirs; its band also widens where they disagree."
    )
    c1, c2 = st.columns(2)
    c1.metric("Kernels", avg.k)
    c2.metric("Test RMSE", fmt(test_rmse), help=f"Of the mixture mean, on the {ds.n_test} test points, "
              f"in {ds.y_label} units.")
    st.dataframe(
        dash_empty(members, {"weight": ".3f", "BIC": ".2f", "test RMSE": ".4g", "q": ".0f"}),
        hide_index=True,
        width="stretch",
        column_config={"kernel": st.column_config.TextColumn("kernel", width="large")},
    )
    extrapolation_chart(avg, ds, key=f"{key}_extrap", title="Extrapolation: mixture mean and ±2σ band",
                        forecasts=forecasts)
    c_kernel, c_average = st.columns(2)
    if kernel_download:
        kernel_download_button(c_kernel, *kernel_download, key=f"{key}_kernel_download",
                               help="The chosen kernel alone, as a versioned kernel file.")
    if average_download:
        with c_average:
            average_download_button(*average_download, key=f"{key}_download")
