"""Drawing one kernel: its formula, scores, hyperparameters, tree, extrapolation and components.

The data behind every figure comes from :mod:`evocov_core.present.figures`; this module lays it out.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.datasets import dataset_fingerprint
from dashboard.format import fmt, polish
from evocov_core.data import Dataset
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.subset import DataSubset
from evocov_core.language.kernel import Kernel
from evocov_core.present.figures import (
    component_figure,
    components_data,
    extrapolation_data,
    extrapolation_figure,
    hyperparameter_table,
    tree_figure,
    tree_fold_depth,
    tree_layout,
    tree_outline,
)
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict

#: Containers whose key starts with these scroll sideways inside their column (a long formula, a wide tree).
SCROLL_KEYS = ("formula_", "treebox_")


def scrollable_formulas() -> None:
    """Long formulas and wide trees scroll sideways inside their own box instead of running off the page."""
    boxes = ", ".join(f"[class*='st-key-{k}']" for k in SCROLL_KEYS)
    st.html("<style>.katex-display { overflow-x: auto; overflow-y: hidden; padding-bottom: 4px; } "
            f"{boxes} {{ overflow-x: auto; overflow-y: hidden; max-width: 100%; }} "
            "[class*='st-key-formula_'] .stMarkdown, [class*='st-key-formula_'] [data-testid='stMarkdownContainer'] "
            "{ min-width: 0; }</style>")


def latex_box(latex: str, key: str) -> None:
    """One formula in its own box (``formula_<key>``) that scrolls sideways when the formula is wider."""
    scrollable_formulas()
    with st.container(key=f"formula_{key}"):
        st.latex(f"k(x, x') = {latex}")


def formula(kernel: Kernel, key: str = "kernel") -> None:
    """A kernel's formula as a person reads it: simplified by SymPy (evocov_core.language.simplify), the tree as
    evolved one click away (the stored expression never changes). Each scrolls in its own box."""
    from evocov_core.language.simplify import display_latex

    latex_box(display_latex(kernel), key)
    with st.expander("As evolved (the stored tree)"):
        latex_box(kernel.latex, f"{key}_stored")
        st.code(kernel.infix, language=None, wrap_lines=True)


def tree_section(kernel: Kernel, theta: Any, key: str) -> None:
    """The expression tree: a picture sized from its width and depth (zoom and pan), folded to a chosen
    depth on a large tree, and the same tree as an indented outline."""
    depth = int(tree_layout(kernel)[0].depth.max())
    shown = None
    if depth >= 3:
        default = tree_fold_depth(kernel) or depth
        tree_id = hashlib.sha1(kernel.prefix.encode()).hexdigest()[:10]  # another tree: its own slider and default
        shown = st.slider("Depth shown", 1, depth, default, key=f"{key}_tree_depth_{tree_id}",
                          help="Fold the tree below this depth: a folded node ends in …, its subtree in its "
                          "hover text. The outline always shows the whole tree.")
    pic, outline = st.tabs(["Tree", "Outline (text)"])
    with pic:
        scrollable_formulas()
        fig = tree_figure(kernel, theta, max_depth=None if shown == depth else shown)
        w = int(fig.layout.width)
        # The chart keeps the width its labels need (Streamlit would shrink it to the column, and the labels
        # would overlap): its box scrolls sideways instead.
        st.html(f"<style>.st-key-treebox_{key} [data-testid='stElementContainer'], .st-key-treebox_{key} "
                f"[data-testid='stPlotlyChart'] {{ width: {w}px !important; min-width: {w}px; max-width: none; }}"
                "</style>")
        with st.container(key=f"treebox_{key}"):
            st.plotly_chart(fig, key=f"{key}_tree", width=w, config={"displaylogo": False, "scrollZoom": True})
    with outline:
        text = tree_outline(kernel, theta)
        st.code(text, language=None, height=min(480, 22 * (text.count(chr(10)) + 2)))


def approximation_line(approximation: DataSubset | None) -> str | None:
    """How a kernel was fitted, for a caption: ``"Fitted with an exact GP on 2,000 of 17,520 training points
    (…)"`` on a long series (a subset of data), None when every training point was used or it is unknown.

    ``approximation`` is a kernel file's (:attr:`KernelFile.approximation`), a model's
    (:attr:`FittedModel.approximation`) or ``FitData.approximation``.
    """
    if approximation is None or approximation.exact:
        return None
    a = approximation
    return (f"Fitted with an exact GP on {a.n_used:,} of {a.n_total:,} training points: the most recent "
            f"{a.recent:,} and {a.history:,} spread over the earlier history (a subset of data; forecasts "
            "condition on the same points). The search setting *Points an exact fit uses* sets how many.")


def show_approximation(approximation: DataSubset | None) -> None:
    """:func:`approximation_line` as a caption, when there is one (nothing on a short series)."""
    line = approximation_line(approximation)
    if line:
        st.caption(f":material/data_thresholding: {line}")


def with_test_rmse(fit: FitResult, ds: Dataset) -> FitResult:
    """``fit`` with its test RMSE on ``ds`` (its values read in ``ds``'s model units)."""
    if not fit.ok or ds.n_test == 0:
        return fit
    return replace(fit, test_rmse=FittedModel.from_fit(fit, ds.norm, ds.n_train).test_rmse(ds))


def kernel_doc(fit: FitResult, ds: Dataset) -> dict:
    """The kernel-file document of ``fit`` on ``ds``."""
    return kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, n_train=ds.n_train,
                            test_fraction=ds.test_fraction)


def model_key(model: FittedModel | ModelAverage, ds: Dataset) -> str:
    """A cache key for a model's predictions on ``ds``."""
    h = hashlib.sha1()
    if isinstance(model, ModelAverage):
        for m, w in zip(model.members, model.weights, strict=True):
            h.update(f"{model_key(m, ds)}:{w!r};".encode())
        return h.hexdigest()
    h.update(model.kernel.prefix.encode())
    h.update(np.asarray(model.theta, dtype=np.float64).tobytes())
    h.update(f"{model.log_noise!r}{model.jitter!r}{model.norm!r}".encode())
    h.update(dataset_fingerprint(ds).encode())
    return h.hexdigest()


@st.cache_data(show_spinner=False, max_entries=64)
def _extrapolation(cache_key: str, _model: FittedModel | ModelAverage, _ds: Dataset) -> pd.DataFrame:
    return extrapolation_data(_model, _ds)


def extrapolation_chart(model: FittedModel | ModelAverage, ds: Dataset, key: str, title: str | None = None,
                        forecasts: pd.DataFrame | None = None) -> None:
    """The predictive mean and ±2σ band over the data (a broken kernel gives a warning, not an error).

    ``forecasts`` (:func:`evocov_core.present.figures.comparison_forecasts_data`) are drawn dashed over the test
    range, one legend entry each.
    """
    try:
        pred = _extrapolation(model_key(model, ds), model, ds)
    except Exception as exc:  # a numerically broken kernel must not break the page
        st.warning(f"Could not compute the predictions: {exc}")
        return
    fig = polish(extrapolation_figure(pred, ds, title=title, forecasts=forecasts))
    fig.update_layout(uirevision=key)
    st.plotly_chart(fig, key=key, config={"displaylogo": False})


def kernel_download_button(where: Any, text: str, file_name: str, key: str, help: str) -> None:
    """The download button of a kernel file, in ``where`` (``st`` or a column)."""
    where.download_button("Download kernel (JSON)", text, file_name=file_name, mime="application/json", key=key,
                          icon=":material/download:", help=help)


def average_download_button(text: str, file_name: str, key: str) -> None:
    """The download button of a model-average file."""
    st.download_button(
        "Download model average (JSON)",
        text,
        file_name=file_name,
        mime="application/json",
        key=key,
        icon=":material/download:",
        help="The kernels of the model average (each a kernel file) with their weights; the forecast is "
        "the mixture of their predictive distributions.",
    )


def show_kernel(
    fit: FitResult,
    ds: Dataset,
    key: str,
    *,
    title: str = "Kernel",
    download_name: str | None = None,
    model: FittedModel | None = None,
    doc: dict | None = None,
    expand_hyperparameters: bool = False,
    average_download: tuple[str, str] | None = None,
    forecasts: pd.DataFrame | None = None,
) -> None:
    """Tree, formula, scores, hyperparameters, extrapolation and a JSON download of one kernel.

    ``average_download`` = (JSON text, file name) of a model average, offered beside the kernel's;
    ``forecasts`` are other methods' forecasts, drawn dashed on the extrapolation.
    """
    k = fit.kernel
    model = model or FittedModel.from_fit(fit, ds.norm, ds.n_train)
    left, right = st.columns([1, 1])
    with left:
        st.markdown(f"**{title}**")
        formula(k, key)
        c1, c2, c3 = st.columns(3)
        c1.metric("q (hyperparameters)", k.q, help="Distinct kernel hyperparameters plus the noise variance.")
        c2.metric("BIC", fmt(fit.bic, ".2f"), help="−2·LML + q·log n on the training data; lower is better.")
        c3.metric("Test RMSE", fmt(fit.test_rmse), help=f"On the {ds.n_test} test points, in {ds.y_label} units.")
        show_approximation(model.approximation)
        if model.spread > 1.0:
            st.caption(f":material/expand: Forecast intervals {model.spread:.2f}× as wide as the GP's own, learned "
                       "from the kernel's out-of-sample errors (search setting *Interval calibration*); the mean "
                       "is unchanged.")
        with st.expander("Hyperparameters", expanded=expand_hyperparameters):
            try:
                table = hyperparameter_table(k, model.theta, model.log_noise, model.norm)
                # Narrow numbers, so that the sentence in data units is not cut off in a half-page column.
                st.dataframe(table, hide_index=True, width="stretch", column_config={
                    "hyperparameter": st.column_config.TextColumn(width="small"),
                    "value": st.column_config.NumberColumn(format="%.4g", width="small"),
                    "log value": st.column_config.NumberColumn(format="%.3f", width="small"),
                    "in data units": st.column_config.TextColumn(width="large")})
            except Exception as exc:
                st.caption(f"Hyperparameter table unavailable: {exc}")
    with right:
        st.markdown("**Expression tree**")
        tree_section(k, model.theta, key)
    extrapolation_chart(model, ds, key=f"{key}_extrap", title="Extrapolation: predictive mean and ±2σ band",
                        forecasts=forecasts)
    components_section(model, ds, key=f"{key}_components")
    if download_name:
        d = doc if doc is not None else kernel_doc(fit, ds)
        cols = st.columns(2) if average_download else None
        kernel_download_button(cols[0] if cols else st, dump_kernel_file(d), download_name, f"{key}_download",
                               "A versioned kernel file: load it on the Results page or with "
                               "`python -m evocov_core predict`.")
        if cols and average_download:
            with cols[1]:
                average_download_button(*average_download, key=f"{key}_average_download")


def components_section(model: FittedModel, ds: Dataset, *, key: str) -> None:
    """What the kernel says: its additive components, each with its posterior and one sentence."""
    if ds.x.shape[1] != 1:
        return
    with st.expander("What the kernel says: its components", expanded=False):
        comps, noise_sd, xs, split = components_data(model, ds)
        st.caption("The kernel written as a sum of terms (products distributed over sums); each term is an "
                   "independent part of the series. Shares are of the training data's variance; sentences are "
                   "read from each term's kernel function (correlation against lag), not from its name.")
        for i, c in enumerate(comps):
            st.markdown(f"**{i + 1}. {c.sentence[0].upper() + c.sentence[1:]}** — {c.explained:.0%} of the variance")
            st.plotly_chart(component_figure(c, xs, split), key=f"{key}_{i}", config={"displaylogo": False})
            st.caption(f"Term: `{c.kernel.infix}`")
        st.markdown(f"**Noise** with standard deviation {noise_sd:.3g} {ds.y_label}.")
