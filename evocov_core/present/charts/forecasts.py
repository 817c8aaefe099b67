"""The charts of a series and its forecasts: the data and its split, the forecast after the data, the
predictive mean and band over the test range beside other methods' forecasts, and the fitted kernel's
additive components.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.present.charts.style import (
    _CLASSICAL_COLORS,
    _COLORS,
    _LEGEND,
    _OTHER_COLORS,
    MAX_DRAWN,
    _display_x,
    _scatter,
    minmax_indices,
)

if TYPE_CHECKING:
    from evocov_core.forecast.future import FutureForecast
    from evocov_core.present.compare import Comparison
    from evocov_core.present.decompose import Component

__all__ = [
    "DETAIL_POINTS",
    "Components",
    "comparison_forecasts_data",
    "component_figure",
    "components_data",
    "extrapolation_data",
    "extrapolation_figure",
    "extrapolation_grid",
    "forecast_window",
    "future_figure",
    "series_data",
    "series_figure",
    "split_value",
]


# --- the series and its split ------------------------------------------------------------


def series_data(ds: Dataset) -> pd.DataFrame:
    """Columns ``x`` (display units), ``x_value`` (float), ``y``, ``part`` (train/test)."""
    x = ds.x[:, 0]
    return pd.DataFrame({"x": _display_x(ds, x), "x_value": x, "y": ds.y,
                         "part": np.where(ds.train, "train", "test")})


def split_value(ds: Dataset) -> float:
    """x of the train/test boundary (the last training x)."""
    return float(ds.X_train[:, 0].max())


def series_figure(ds: Dataset, title: str | None = None, max_points: int = MAX_DRAWN) -> go.Figure:
    """The series, training part then test part; a part of more than ``max_points`` points is drawn
    from :func:`minmax_indices` as a WebGL line (its legend entry says how many are drawn)."""
    df = series_data(ds)
    fig = go.Figure()
    for part in ("train", "test"):
        d = df[df.part == part]
        if len(d):
            idx = minmax_indices(d.y.to_numpy(), max_points)
            dd = d.iloc[idx]
            dense = len(d) > max_points
            name = f"{part} ({len(d):,}" + (f", {len(dd):,} drawn)" if dense else ")")
            fig.add_trace(_scatter(len(dd), x=dd.x, y=dd.y, mode="lines" if dense else "lines+markers", name=name,
                                   marker=dict(size=4, color=_COLORS[part]), line=dict(width=1, color=_COLORS[part])))
    if ds.n_test:
        xs = _display_x(ds, np.array([split_value(ds)]))
        x0 = xs.iloc[0] if isinstance(xs, pd.Series) else xs[0]
        fig.add_vline(x=x0, line_dash="dash", line_color="#555")
    fig.update_layout(title=title or ds.name, xaxis_title=ds.x_label, yaxis_title=ds.y_label,
                      margin=dict(l=10, r=10, t=40, b=10), height=360, legend=_LEGEND)
    return fig


def future_figure(ds: Dataset, fc: FutureForecast, *, recent: int | None = None,
                  max_points: int = MAX_DRAWN) -> go.Figure:
    """The last observations and the forecast after them: the search's forecast with its 95 % band and,
    where the forecast averages other members, the kernel's own mean dashed.

    ``recent``: the observed points drawn (default: four times the horizon, at least 100), so that the
    steps ahead are not a sliver at the right of a long history; thinned as :func:`series_figure` is."""
    n_recent = min(ds.n, recent if recent is not None else max(100, 4 * len(fc.x)))
    order = np.argsort(ds.x[:, 0], kind="stable")[-n_recent:]
    xo, yo = ds.x[order, 0], ds.y[order]
    idx = minmax_indices(yo, max_points)
    fig = go.Figure()
    dense = n_recent > max_points
    fig.add_trace(_scatter(len(idx), x=_display_x(ds, xo[idx]), y=yo[idx], mode="lines" if dense else "lines+markers",
                           name=f"observed (last {n_recent:,})", marker=dict(size=4, color=_COLORS["train"]),
                           line=dict(width=1, color=_COLORS["train"])))
    xf = _display_x(ds, fc.x)
    xs = list(xf) + list(xf)[::-1]
    fig.add_trace(go.Scatter(x=xs, y=list(fc.upper) + list(fc.lower[::-1]), fill="toself", line=dict(width=0),
                             fillcolor=_COLORS["band"], name="95 % interval", hoverinfo="skip"))
    fig.add_trace(_scatter(len(fc.x), x=xf, y=fc.mean, mode="lines", name="forecast",
                           line=dict(color=_COLORS["mean"], width=2)))
    if fc.combined:
        fig.add_trace(_scatter(len(fc.x), x=xf, y=fc.kernel_mean, mode="lines", name="the kernel alone",
                               line=dict(color=_OTHER_COLORS[0], width=1.5, dash="dash")))
    last = _display_x(ds, np.array([float(ds.x[:, 0].max())]))
    fig.add_vline(x=last.iloc[0] if isinstance(last, pd.Series) else last[0], line_dash="dot", line_color="#555")
    fig.update_layout(xaxis_title=ds.x_label, yaxis_title=ds.y_label, margin=dict(l=10, r=10, t=30, b=10),
                      height=360, legend=_LEGEND)
    return fig


# --- extrapolation ---------------------------------------------------------------------------


#: Data x the extrapolation is computed at, at most: every one on a shorter series, else those
#: nearest the end of the training part (see :func:`extrapolation_grid`).
DETAIL_POINTS = 3000


def extrapolation_grid(ds: Dataset, n_grid: int = 400, extend: float = 0.0, detail: int = DETAIL_POINTS
                       ) -> np.ndarray:
    """Where :func:`extrapolation_data` predicts: a regular grid, and data x where detail matters.

    ``n_grid`` points evenly over the data range (and ``extend`` of it beyond), plus the data x
    themselves, so that the band passes through the observed points: all of them up to
    ``detail`` points; on a longer series the ``detail`` data x nearest the end of the training
    part (the end of what was learned and the start of the forecast), so that a daily cycle in
    100,000 half-hourly points is drawn where it is read, at the cost of one prediction per
    point (a band needs a variance, O(m²) per point for an exact GP on m points).

    Returns
    -------
    ndarray of shape (k,)
        Sorted, unique x (data units), ``k ≤ n_grid + detail``.
    """
    x = ds.x[:, 0]
    lo, hi = float(x.min()), float(x.max())
    grid = np.linspace(lo, hi + extend * (hi - lo), n_grid)
    if x.shape[0] > detail:
        split = int(np.searchsorted(x, split_value(ds), side="right"))  # x is sorted: first test index
        start = int(np.clip(split - detail // 2, 0, x.shape[0] - detail))
        x = x[start:start + detail]
    return np.unique(np.concatenate([grid, x]))


def extrapolation_data(model: FittedModel | ModelAverage, ds: Dataset, n_grid: int = 400, extend: float = 0.0,
                       band: bool = True) -> pd.DataFrame:
    """Predictive mean and ±2σ band (observation std) over the data range (:func:`extrapolation_grid`).

    ``model`` is one fitted kernel or a model average (mixture mean and std).

    Columns ``x`` (display), ``x_value``, ``mean``, ``lower``, ``upper``, ``std``.
    ``extend`` adds that fraction of the range beyond the last point. Without ``band`` only
    the mean is computed (``lower``, ``upper``, ``std`` are NaN): what a curve drawn dashed
    over another model's needs, without a variance per point (O(m²) each on m training points).
    """
    if ds.x.shape[1] > 1:
        raise ValueError("extrapolation plots are for one input dimension")
    grid = extrapolation_grid(ds, n_grid, extend)
    if not band:
        mean = model.predict_mean(ds.X_train, ds.y_train, grid[:, None])
        nan = np.full(mean.shape, np.nan)
        return pd.DataFrame({"x": _display_x(ds, grid), "x_value": grid, "mean": mean, "lower": nan, "upper": nan,
                             "std": nan})
    pred = model.predict(ds.X_train, ds.y_train, grid[:, None])
    return pd.DataFrame({"x": _display_x(ds, grid), "x_value": grid, "mean": pred.mean,
                         "lower": pred.mean - 2 * pred.std, "upper": pred.mean + 2 * pred.std, "std": pred.std})


class Components(NamedTuple):
    """A fitted kernel's additive components on a grid (:func:`components_data`); it unpacks as
    ``comps, noise_sd, x, split``."""

    #: The components, largest explained variance first; means and SDs of shape (n_grid,) in the
    #: data's units, without the data's mean.
    components: list[Component]
    #: The noise SD, in the data's units.
    noise_sd: float
    #: The grid's display x (dates for dates), shape (n_grid,).
    x: pd.Series | np.ndarray
    #: The display x of the last training point (a number, or a timestamp for dates).
    split: float | pd.Timestamp


def components_data(model: FittedModel, ds: Dataset, n_grid: int = 300, extend: float = 0.1) -> Components:
    """The fitted kernel's additive components (:func:`evocov_core.present.decompose.decompose`) on a grid.

    The grid runs over the data and ``extend`` of its range beyond. The components condition on the
    training points the kernel was fitted on (:meth:`FittedModel.conditioning`: on a long series, its
    subset of data).

    Parameters
    ----------
    model : FittedModel
        A kernel fitted on ``ds``'s training part.
    ds : Dataset
        One input column, shape (n, 1).
    n_grid : int
        Points of the grid.
    extend : float
        Fraction of the data's x range the grid runs on beyond the last point.

    Returns
    -------
    Components
        The components, the noise SD, the grid's display x and the display x of the last
        training point.
    """
    from evocov_core.present.decompose import decompose

    if ds.x.shape[1] > 1:
        raise ValueError("components are drawn for one input dimension")
    nm = model.norm
    x = ds.x[:, 0]
    lo, hi = float(x.min()), float(x.max())
    grid = np.linspace(lo, hi + extend * (hi - lo), n_grid)
    keep = model.conditioning(ds.X_train)  # on a long series, the subset the kernel was fitted on
    Xm, ym = nm.x_to_model(ds.X_train[keep]), (ds.y_train[keep] - nm.y_mean) / nm.y_std
    comps, noise = decompose(model.kernel, np.asarray(model.theta), model.log_noise, Xm, ym,
                             nm.x_to_model(grid[:, None]), jitter=model.jitter, x_scale=nm.x_scale[0],
                             x_offset=nm.x_offset[0], y_scale=nm.y_std,
                             x_unit="years" if ds.x_kind == "date" else str(ds.x_label), y_unit=str(ds.y_label))
    return Components(comps, noise, _display_x(ds, grid), _display_x(ds, np.array([split_value(ds)]))[0])


def component_figure(component: Component, x_display: pd.Series | np.ndarray, split: float | None = None,
                     title: str | None = None) -> go.Figure:
    """One component: posterior mean and ±2σ band; a dotted line where the training data end."""
    m, sd = component.mean, component.sd
    xs = list(x_display)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs + xs[::-1], y=list(m + 2 * sd) + list((m - 2 * sd)[::-1]), fill="toself",
                             line=dict(width=0), fillcolor="rgba(31,119,180,0.2)", name="±2σ", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=xs, y=m, mode="lines", name="mean", line=dict(color=_COLORS["train"])))
    if split is not None:
        fig.add_vline(x=split, line_dash="dot", line_color="#888")
    fig.update_layout(title=title, height=240, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      showlegend=False)
    return fig


def comparison_forecasts_data(comparison: Comparison, ds: Dataset,
                              kind: str | Sequence[str] | None = ("classical", "combined")) -> pd.DataFrame:
    """The test-range forecasts of a :class:`~evocov_core.present.compare.Comparison`, one row per method and point.

    ``kind`` keeps the methods of that kind or kinds only (``"classical"``, ``"combined"``, ``"GP"``;
    None: all); by default the classical forecasts and the search's combined forecast, which a
    forecast figure draws dashed beside the kernel's. Methods without a forecast (failed, timed out,
    skipped) have no rows.

    Returns
    -------
    DataFrame
        Columns ``method, kind, x`` (display), ``x_value, mean, lower, upper`` (NaN where the
        method gives no interval), in the comparison's order.
    """
    cols = ["method", "kind", "x", "x_value", "mean", "lower", "upper"]
    parts = []
    for fc in comparison.forecasts:
        if fc.mean is None or (kind is not None and fc.kind not in ((kind,) if isinstance(kind, str) else kind)):
            continue
        nan = np.full(fc.x.shape, np.nan)
        parts.append(pd.DataFrame({"method": fc.method, "kind": fc.kind, "x": _display_x(ds, fc.x), "x_value": fc.x,
                                   "mean": fc.mean, "lower": nan if fc.lower is None else fc.lower,
                                   "upper": nan if fc.upper is None else fc.upper}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def extrapolation_figure(pred: pd.DataFrame, ds: Dataset, title: str | None = None,
                         others: Sequence[tuple[str, pd.DataFrame]] = (),
                         forecasts: pd.DataFrame | None = None, max_points: int = MAX_DRAWN) -> go.Figure:
    """The data, the predictive mean and its ±2σ band (:func:`extrapolation_data`).

    ``others`` are ``(name, extrapolation_data of another model)`` pairs whose means are drawn
    dashed over it (the baselines of the report). ``forecasts`` (:func:`comparison_forecasts_data`)
    are drawn dashed over the test range, one legend entry per method (a click hides it); a combined
    forecast (kind ``combined``) dotted, and the kernel's mean is then named its own forecast. Data
    and forecasts of more than ``max_points`` points are drawn from :func:`minmax_indices`, with
    WebGL (the legend says how many points are drawn).
    """
    pts = series_data(ds)
    combined = (forecasts is not None and len(forecasts) > 0 and "kind" in forecasts
                and bool((forecasts["kind"] == "combined").any()))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=pred.x, y=pred.upper, mode="lines", line=dict(width=0), showlegend=False,
                             hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=pred.x, y=pred.lower, mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor=_COLORS["band"], name="±2σ"))
    # Beside a combined forecast, the kernel's own mean is named as such: two forecasts are drawn.
    fig.add_trace(go.Scatter(x=pred.x, y=pred["mean"], mode="lines",
                             name="the kernel's own forecast" if combined else "predictive mean",
                             line=dict(color=_COLORS["mean"], width=2)))
    for (name, other), color in zip(others, _OTHER_COLORS, strict=False):
        fig.add_trace(go.Scatter(x=other.x, y=other["mean"], mode="lines", name=name,
                                 line=dict(color=color, width=1.5, dash="dash")))
    if forecasts is not None and len(forecasts):
        for (name, d), color in zip(forecasts.groupby("method", sort=False), _CLASSICAL_COLORS * 4, strict=False):
            d = d.iloc[minmax_indices(d["mean"].to_numpy(), max_points)]
            if "kind" in d and (d["kind"] == "combined").all():  # the search's forecast: an average with them
                fig.add_trace(_scatter(len(d), x=d.x, y=d["mean"], mode="lines", name=f"the {name}",
                                       line=dict(color="#0b5d1e", width=2.5, dash="dot")))
                continue
            fig.add_trace(_scatter(len(d), x=d.x, y=d["mean"], mode="lines", name=f"{name} (classical)",
                                   line=dict(color=color, width=1.5, dash="dash")))
    window = forecast_window(ds)
    for part in ("train", "test"):
        d = pts[pts.part == part]
        if len(d):
            dd = _thinned(d, window, max_points)
            name = part if len(dd) == len(d) else f"{part} ({len(dd):,} of {len(d):,} drawn)"
            fig.add_trace(_scatter(len(dd), x=dd.x, y=dd.y, mode="markers", name=name,
                                   marker=dict(size=4 if part == "train" else 6, color=_COLORS[part])))
    if ds.n_test:
        xs = _display_x(ds, np.array([split_value(ds)]))
        fig.add_vline(x=xs.iloc[0] if isinstance(xs, pd.Series) else xs[0], line_dash="dash", line_color="#555")
    # The band's fill would make Plotly list the legend backwards; keep the order of the traces.
    fig.update_layout(title=title, xaxis_title=ds.x_label, yaxis_title=ds.y_label, height=420,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10), legend={**_LEGEND, "traceorder": "normal"})
    if window is not None:  # open on the forecast; the modebar's autoscale shows the whole history
        lo, hi = window
        shown = np.concatenate([pts.y[pts.x_value >= lo].to_numpy(),
                                pred.lower[pred.x_value >= lo].to_numpy(), pred.upper[pred.x_value >= lo].to_numpy()])
        shown = shown[np.isfinite(shown)]
        xr = _display_x(ds, np.array([lo, hi]))
        fig.update_xaxes(range=list(xr.iloc[:2]) if isinstance(xr, pd.Series) else [lo, hi])
        if shown.size:  # y too: Plotly would scale it to the whole history
            pad = 0.05 * (float(shown.max() - shown.min()) or 1.0)
            fig.update_yaxes(range=[float(shown.min()) - pad, float(shown.max()) + pad])
    return fig


def forecast_window(ds: Dataset) -> tuple[float, float] | None:
    """The x range a long series' forecast chart opens on, or None to show all of it.

    A series of more than :data:`DETAIL_POINTS` points whose test part would be a sliver of the
    chart: as many training points before the split as the test part has (at least
    ``DETAIL_POINTS // 2``), then the test part. The band is drawn densely there
    (:func:`extrapolation_grid`).
    """
    if ds.n <= DETAIL_POINTS or not ds.n_test:
        return None
    x = ds.x[:, 0]
    split = int(np.searchsorted(x, split_value(ds), side="right"))
    start = max(0, split - max(ds.n_test, DETAIL_POINTS // 2))
    return float(x[start]), float(x.max())


def _thinned(d: pd.DataFrame, window: tuple[float, float] | None, max_points: int) -> pd.DataFrame:
    """Rows of ``d`` (``x_value``, ``y``) to draw: :func:`minmax_indices` over all of them, or with
    a window, up to ``max_points`` inside it and a quarter of that before it (the zoomed-out view)."""
    if window is None:
        return d.iloc[minmax_indices(d.y.to_numpy(), max_points)]
    inside = d[d.x_value >= window[0]]
    before = d[d.x_value < window[0]]
    return pd.concat([before.iloc[minmax_indices(before.y.to_numpy(), max(4, max_points // 4))],
                      inside.iloc[minmax_indices(inside.y.to_numpy(), max_points)]])
