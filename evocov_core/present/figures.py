"""The data behind every chart, and the Plotly figures drawn from it.

Each chart is two functions: ``*_data`` (pure, returns a DataFrame or simple values,
tested without a browser) and ``*_figure`` (draws that data with Plotly). Pages only
call these and ``st.plotly_chart``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evocov_core.data import Dataset, Normalisation, decimal_years_to_dates
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.language.grammar import is_slot, symbol
from evocov_core.language.kernel import Kernel, _nest, flatten, slot_roles
from evocov_core.search.common import GenerationStats

if TYPE_CHECKING:
    from evocov_core.present.compare import Comparison
    from evocov_core.present.future import FutureForecast

__all__ = [
    "MAX_DRAWN",
    "average_members_data",
    "comparison_forecasts_data",
    "drawn_note",
    "explorer_figure",
    "extrapolation_data",
    "extrapolation_figure",
    "fitness_compare_figure",
    "fitness_data",
    "fitness_figure",
    "forecast_window",
    "future_figure",
    "hyperparameter_table",
    "minmax_indices",
    "pareto_data",
    "pareto_figure",
    "selection_data",
    "series_data",
    "series_figure",
    "tree_figure",
    "tree_fold_depth",
    "tree_geometry",
    "tree_label_boxes",
    "tree_label_width",
    "tree_layout",
    "tree_outline",
]

# Horizontal legend above the plot area, clear of the x-axis title.
_LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0)

_COLORS = {"train": "#1f77b4", "test": "#d62728", "mean": "#2ca02c", "band": "rgba(44,160,44,0.18)",
           "front": "#d62728", "other": "#9aa5b1", "base": "#111111"}
_OTHER_COLORS = ("#7f7f7f", "#9467bd", "#ff7f0e", "#8c564b")  # dashed comparison means
_CLASSICAL_COLORS = ("#e377c2", "#17becf", "#bcbd22", "#d62728", "#393b79")  # dashed classical forecasts


def _display_x(ds: Dataset, x: np.ndarray) -> pd.Series | np.ndarray:
    """x for the axis: dates for date data (decimal years -> timestamps), else numbers."""
    if ds.x_kind == "date":
        # Whole microseconds: plotly drops nanoseconds with a warning on every chart.
        return pd.Series(decimal_years_to_dates(x).round("us"))
    return x


# --- drawing many points --------------------------------------------------------------------------

#: Points of one trace above which it is drawn from :func:`minmax_indices` (and with WebGL).
MAX_DRAWN = 4000
#: Points of one trace above which it is drawn with WebGL (``go.Scattergl``), not SVG.
WEBGL_FROM = 1000


def minmax_indices(y: np.ndarray, max_points: int = MAX_DRAWN) -> np.ndarray:
    """Which points of a series (in x order) to draw so that no peak or trough is lost.

    The points are cut into ``max_points // 2`` buckets of consecutive points (a bucket is
    about one pixel column of a chart) and each bucket keeps its lowest and its highest point,
    in x order; the first and the last point are always kept. A line through the kept points
    has the same envelope as the line through all of them: every local extreme of a bucket,
    so the global ones too, is drawn. What is fitted is never thinned, only what is drawn.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Values in x order (NaN are treated as neither lowest nor highest).
    max_points : int
        At most this many indices are returned (at least 4).

    Returns
    -------
    ndarray of int, shape (k,)
        Sorted indices into ``y``, ``k ≤ max(max_points, 2)``; all of them when ``n ≤ max_points``.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, (max(max_points, 4) - 2) // 2)
    edges = np.linspace(0, n, buckets + 1).astype(np.intp)
    lo = np.fmin.reduceat(y, edges[:-1])  # NaN-ignoring minimum of each bucket
    hi = np.fmax.reduceat(y, edges[:-1])
    size = np.diff(edges)
    bucket = np.repeat(np.arange(buckets), size)
    first_min = np.flatnonzero(y == lo[bucket])
    first_max = np.flatnonzero(y == hi[bucket])
    # The first index of each bucket where its minimum (maximum) is reached.
    keep_min = first_min[np.unique(bucket[first_min], return_index=True)[1]]
    keep_max = first_max[np.unique(bucket[first_max], return_index=True)[1]]
    return np.unique(np.concatenate([[0, n - 1], keep_min, keep_max]))


def _scatter(n: int, **kwargs: object) -> go.Scatter | go.Scattergl:
    """A scatter trace of ``n`` points: WebGL from :data:`WEBGL_FROM` points (SVG slows to a crawl)."""
    return go.Scattergl(**kwargs) if n >= WEBGL_FROM else go.Scatter(**kwargs)


def drawn_note(n_drawn: int, n_total: int) -> str:
    """``"drawn: 4,000 of 100,000 points (…)"`` for a chart's caption, or "" when every point is drawn."""
    if n_drawn >= n_total:
        return ""
    per = max(2, round(2 * n_total / max(n_drawn, 1)))
    return (f"drawn: {n_drawn:,} of {n_total:,} points, the lowest and the highest of every {per:,} consecutive "
            "ones, so no peak or trough is lost; only the chart is thinned, never the data fitted")


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


# --- fitness curves --------------------------------------------------------------------------


def fitness_data(history: Sequence[GenerationStats] | pd.DataFrame) -> pd.DataFrame:
    """Columns ``generation, best_bic, mean_bic, best_so_far_bic, restarted`` (inf -> NaN)."""
    if isinstance(history, pd.DataFrame):
        df = history.copy()
    else:
        df = pd.DataFrame([{"generation": h.generation, "best_bic": h.best_bic, "mean_bic": h.mean_bic,
                            "best_so_far_bic": h.best_so_far_bic, "restarted": h.restarted,
                            "elapsed": h.elapsed} for h in history])
    if df.empty:
        return pd.DataFrame(columns=["generation", "best_bic", "mean_bic", "best_so_far_bic", "restarted"])
    for c in ("best_bic", "mean_bic", "best_so_far_bic"):
        df[c] = pd.to_numeric(df[c], errors="coerce").replace([np.inf, -np.inf], np.nan)
    df["restarted"] = df["restarted"].astype(bool)
    return df[["generation", "best_bic", "mean_bic", "best_so_far_bic", "restarted"]]


def robust_range(values: np.ndarray, headroom: float = 1.0) -> tuple[float, float] | None:
    """An axis range that outliers above cannot flatten: ``(low, high)``, or None without finite values.

    From the lowest value to the upper quartile plus ``headroom`` times the distance between
    them: a monotone curve fits whole, a few values orders of magnitude above the rest do not
    set the scale (draw them clipped and marked).
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    lo, q3 = float(v.min()), float(np.quantile(v, 0.75))
    spread = q3 - lo if q3 > lo else max(1.0, 0.05 * abs(q3))
    return lo - 0.05 * spread, q3 + headroom * spread


def fitness_view(df: pd.DataFrame) -> tuple[float, float] | None:
    """The BIC range of the fitness chart: set by the best curves (best so far, best of generation).

    Generation means, which a few wild kernels can throw to 10⁶ while the best is −600, do not
    set it: above it they are clipped and marked.
    """
    return robust_range(np.concatenate([df.best_so_far_bic.to_numpy(dtype=float), df.best_bic.to_numpy(dtype=float)]))


def fitness_figure(history: Sequence[GenerationStats] | pd.DataFrame, title: str = "Fitness (BIC, lower is better)"
                   ) -> go.Figure:
    """Best so far, best and mean of each generation; the axis follows the best curves (:func:`fitness_view`)."""
    df = fitness_data(history)
    view = fitness_view(df)
    mean_shown = df.mean_bic
    clipped = pd.Series(False, index=df.index)
    if view is not None:
        clipped = df.mean_bic > view[1]
        mean_shown = df.mean_bic.where(~clipped, view[1])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=df.generation, y=df.best_so_far_bic, name="best so far", mode="lines",
                             line=dict(color="#111", width=2)))
    fig.add_trace(go.Scatter(x=df.generation, y=df.best_bic, name="best of generation", mode="lines+markers",
                             line=dict(color=_COLORS["train"]), marker=dict(size=5)))
    fig.add_trace(go.Scatter(x=df.generation, y=mean_shown, name="mean of generation", mode="lines",
                             line=dict(color=_COLORS["other"], dash="dot"), customdata=df.mean_bic,
                             hovertemplate="generation %{x}<br>mean BIC %{customdata:.4g}<extra></extra>"))
    if clipped.any():
        fig.add_trace(go.Scatter(x=df.generation[clipped], y=mean_shown[clipped], mode="markers",
                                 name="mean above the chart", customdata=df.mean_bic[clipped],
                                 marker=dict(symbol="triangle-up", size=9, color=_COLORS["other"]),
                                 hovertemplate="generation %{x}<br>mean BIC %{customdata:.4g} (off the chart)"
                                               "<extra></extra>"))
    for g in df.generation[df.restarted]:
        fig.add_vline(x=g, line_color="#ff7f0e", line_dash="dot", opacity=0.7)
    if df.restarted.any():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="restart",
                                 line=dict(color="#ff7f0e", dash="dot")))
    fig.update_layout(title=title, xaxis_title="generation", yaxis_title="BIC", height=340,
                      margin=dict(l=10, r=10, t=40, b=10), legend=_LEGEND)
    if view is not None:
        fig.update_yaxes(range=list(view))
    return fig


def fitness_compare_figure(histories: Mapping[str, pd.DataFrame | Sequence[GenerationStats]]) -> go.Figure:
    """Best-so-far BIC of several runs on one chart.

    The axis is :func:`robust_range` of every run's curve (a first generation of wild kernels
    would otherwise flatten the rest); points above it are clipped and marked.
    """
    frames = {label: fitness_data(h) for label, h in histories.items()}
    values = np.concatenate([f.best_so_far_bic.to_numpy(dtype=float) for f in frames.values()] or [np.zeros(0)])
    view = robust_range(values)
    top = None if view is None else view[1]
    fig = go.Figure()
    for label, df in frames.items():
        y = df.best_so_far_bic if top is None else df.best_so_far_bic.clip(upper=top)
        symbols = ["triangle-up" if top is not None and v > top else "circle" for v in df.best_so_far_bic]
        fig.add_trace(go.Scatter(x=df.generation, y=y, mode="lines+markers", name=label,
                                 marker=dict(symbol=symbols), customdata=df.best_so_far_bic,
                                 hovertemplate=f"{label}<br>generation %{{x}}<br>best BIC %{{customdata:.4g}}"
                                               "<extra></extra>"))
    fig.update_layout(title="Best BIC so far", xaxis_title="generation", yaxis_title="BIC", height=380,
                      margin=dict(l=10, r=10, t=40, b=10))
    if view is not None:
        fig.update_yaxes(range=list(view))
    return fig


# --- kernel trees -------------------------------------------------------------------------------


#: Tree labels' font size (px) at any tree size: a wide tree gets a wider chart, not smaller labels.
TREE_FONT = 12
#: Width of one character of a tree label, in font sizes (an upper bound for the labels' sans-serif digits
#: and lower-case letters), and the space kept free around each label (px).
TREE_CHAR_WIDTH = 0.62
TREE_LABEL_PAD = 10
#: Vertical distance between two levels of a tree, in font sizes.
TREE_LEVEL_HEIGHT = 3.2
#: Width (px) a tree chart opens at, at most, before its default depth folds it (:func:`tree_fold_depth`).
TREE_MAX_WIDTH = 1400
_TREE_MARGIN = dict(l=16, r=16, t=16, b=16)
_FOLDED = " …"


#: Operators drawn as their sign in a tree (the name is in the hover text).
_TREE_SYMBOLS = {"add": "+", "multiply": "×"}


def _subtree_text(node: tuple) -> str:
    """A folded subtree for its hover text: its formula, or its prefix form where it is no covariance."""
    tokens = tuple(flatten(node))
    try:
        return Kernel(tokens).infix
    except Exception:  # a map (euc, spectral) or a distance: no formula of its own
        return " ".join(tokens)


def tree_layout(kernel: Kernel, theta: Sequence[float] | None = None, max_depth: int | None = None,
                font_size: float = TREE_FONT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Node positions for drawing a tree, in px, so that no two labels overlap.

    Each subtree gets a horizontal span as wide as the larger of its root's label (with
    :data:`TREE_LABEL_PAD`) and its children's spans side by side; children are packed left to
    right and centred under their parent, and a node sits at the centre of its span. Spans of one
    level never overlap and every label lies within its own span, so no two labels of a level
    overlap; levels are :data:`TREE_LEVEL_HEIGHT` font sizes apart, so labels of two levels do not
    either. y is minus the depth.

    Parameters
    ----------
    kernel : Kernel
    theta : sequence of float, optional
        Log slot values, shown in the hover text.
    max_depth : int, optional
        Fold the tree at this depth: a node there with children is drawn as a leaf labelled
        ``"symbol …"`` (``folded`` True), its subtree in its hover text.
    font_size : float
        The labels' size in px (their widths: :func:`tree_label_width`).

    Returns
    -------
    nodes : DataFrame
        ``id, label, kind, x, y, depth, hover, folded, token, value, span0, span1`` (``label`` is the
        grammar symbol, ``+`` and ``×`` for ``add`` and ``multiply``; ``token`` the symbol itself;
        ``value`` a slot's value, NaN for other nodes; ``x`` and the span ``[span0, span1]`` in px from the
        tree's left edge), in prefix order.
    edges : DataFrame
        ``parent, child``.
    """
    values = dict(zip(kernel.slots, theta, strict=True)) if theta is not None else {}
    nodes: list[dict] = []
    edges: list[tuple[int, int]] = []

    def label_of(tok: str, folded: bool) -> str:
        return _TREE_SYMBOLS.get(tok, tok) + (_FOLDED if folded else "")

    widths: dict[int, float] = {}

    def measure(node: tuple, depth: int) -> float:
        """Width of the subtree's span (memoised by the node's identity)."""
        tok, children = node
        folded = bool(children) and max_depth is not None and depth >= max_depth
        own = tree_label_width(label_of(tok, folded), font_size) + TREE_LABEL_PAD
        below = 0.0 if folded else sum(measure(c, depth + 1) for c in children)
        widths[id(node)] = w = max(own, below)
        return w

    def place(node: tuple, depth: int, left: float) -> int:
        tok, children = node
        my_id = len(nodes)
        nodes.append({})
        folded = bool(children) and max_depth is not None and depth >= max_depth
        width = widths[id(node)]
        if not folded and children:
            below = sum(widths[id(c)] for c in children)
            at = left + (width - below) / 2  # children centred under their parent
            for c in children:
                cid = place(c, depth + 1, at)
                edges.append((my_id, cid))
                at += widths[id(c)]
        kind = symbol(tok).kind
        hover = tok if tok not in _TREE_SYMBOLS else f"{_TREE_SYMBOLS[tok]} ({tok})"
        if is_slot(tok) and tok in values:
            hover = f"{tok} = {math.exp(values[tok]):.4g}"
        if folded:
            hover = f"folded: {_subtree_text(node)}"
        nodes[my_id] = {"id": my_id, "label": label_of(tok, folded), "kind": kind, "x": left + width / 2,
                        "y": -depth, "depth": depth, "hover": hover, "folded": folded, "token": tok,
                        "value": math.exp(values[tok]) if is_slot(tok) and tok in values else math.nan,
                        "span0": left, "span1": left + width}
        return my_id

    root = _nest(kernel.tokens)
    measure(root, 0)
    place(root, 0, 0.0)
    return pd.DataFrame(nodes), pd.DataFrame(edges, columns=["parent", "child"])


def tree_label_width(label: str, font_size: float = TREE_FONT) -> float:
    """Width (px) a tree label takes at most, without its padding."""
    return len(label) * TREE_CHAR_WIDTH * font_size


def tree_geometry(nodes: pd.DataFrame, font_size: float = TREE_FONT) -> dict[str, float]:
    """How :func:`tree_figure` sizes a tree (:func:`tree_layout`) from its width and depth: px per level
    (``dy``), the plot area (``plot_width``: the root's span; ``plot_height``) and the figure (``width``,
    ``height``, with margins)."""
    depth = int(nodes.depth.max()) if len(nodes) else 0
    pw = float(nodes.span1.max()) if len(nodes) else 40.0
    dy = TREE_LEVEL_HEIGHT * font_size
    ph = (depth + 1) * dy
    return {"dy": dy, "depth": depth, "plot_width": pw, "plot_height": ph,
            "width": pw + _TREE_MARGIN["l"] + _TREE_MARGIN["r"], "height": ph + _TREE_MARGIN["t"] + _TREE_MARGIN["b"]}


def tree_label_boxes(nodes: pd.DataFrame, font_size: float = TREE_FONT) -> pd.DataFrame:
    """Each label's box in the plot area, in px: ``x0, x1, y0, y1`` (y down), as :func:`tree_figure`
    draws them (centred on the node, ``font_size`` high)."""
    g = tree_geometry(nodes, font_size)
    cy = (-nodes.y + 0.5) * g["dy"]
    half = pd.Series([tree_label_width(str(lab), font_size) / 2 for lab in nodes.label], index=nodes.index)
    return pd.DataFrame({"label": nodes.label, "x0": nodes.x - half, "x1": nodes.x + half,
                         "y0": cy - font_size / 2, "y1": cy + font_size / 2})


def tree_fold_depth(kernel: Kernel, max_width: float = TREE_MAX_WIDTH, font_size: float = TREE_FONT) -> int | None:
    """The depth to fold a tree at so that its chart is at most ``max_width`` px wide (None: it fits
    unfolded). At least depth 1."""
    nodes, _ = tree_layout(kernel, font_size=font_size)
    if tree_geometry(nodes, font_size)["width"] <= max_width:
        return None
    for d in range(int(nodes.depth.max()) - 1, 0, -1):
        folded, _ = tree_layout(kernel, max_depth=d, font_size=font_size)
        if tree_geometry(folded, font_size)["width"] <= max_width:
            return d
    return 1


def tree_outline(kernel: Kernel, theta: Sequence[float] | None = None, indent: str = "  ") -> str:
    """The tree as indented text, one node a line (a slot with its value when ``theta`` is given)::

        add
          multiply
            ...
    """
    nodes, _ = tree_layout(kernel, theta)
    return "\n".join(indent * int(d) + str(t) + (f" = {v:.4g}" if math.isfinite(v) else "")
                     for t, d, v in zip(nodes.token, nodes.depth, nodes.value, strict=True))


_KIND_COLORS = {"nestable": "#1f5f9f", "not_nestable": "#b35900", "slot": "#227a22", "constant": "#6a3d9a",
                "argument": "#8c564b"}


def tree_figure(kernel: Kernel, theta: Sequence[float] | None = None, title: str | None = None,
                max_depth: int | None = None, font_size: float = TREE_FONT) -> go.Figure:
    """The expression tree, sized from its width and depth so that no two labels overlap.

    Every label is ``font_size`` px; a subtree takes the width its labels need (:func:`tree_layout`), a
    level :data:`TREE_LEVEL_HEIGHT` font sizes (:func:`tree_geometry`): the figure's ``width`` and
    ``height`` follow, and its axes are fixed to them (1 unit = 1 px), so that the boxes of
    :func:`tree_label_boxes` are where the labels are drawn. Plotly's zoom and pan move around a
    large tree; ``max_depth`` folds it (:func:`tree_layout`). Colours tell the kinds of symbol apart
    (the legend).
    """
    nodes, edges = tree_layout(kernel, theta, max_depth=max_depth, font_size=font_size)
    g = tree_geometry(nodes, font_size)
    ex, ey = [], []
    for p, c in edges.itertuples(index=False):
        # From under the parent's label to above the child's: lines never cross a label.
        off = 0.5 * font_size / g["dy"] + 0.05
        ex += [nodes.x[p], nodes.x[c], None]
        ey += [nodes.y[p] - off, nodes.y[c] + off, None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#c8c8c8", width=1), hoverinfo="skip",
                             showlegend=False))
    for kind, d in nodes.groupby("kind", sort=False):
        color = _KIND_COLORS.get(str(kind), "#555")
        fig.add_trace(go.Scatter(x=d.x, y=d.y, mode="text", text=d.label, textposition="middle center",
                                 hovertext=d.hover, hoverinfo="text", name=str(kind).replace("_", " "),
                                 textfont=dict(size=font_size, color=color, family="Arial, sans-serif")))
    title_h = 30 if title else 0
    legend_h = 30
    fig.update_layout(title=dict(text=title, x=0, xanchor="left", font=dict(size=14)) if title else None,
                      width=max(320, round(g["width"])), height=round(g["height"]) + title_h + legend_h,
                      xaxis=dict(visible=False, range=[0, g["plot_width"]]),
                      yaxis=dict(visible=False, range=[-g["depth"] - 0.5, 0.5]),
                      margin=dict(l=_TREE_MARGIN["l"], r=_TREE_MARGIN["r"] + max(0, 320 - round(g["width"])),
                                  t=_TREE_MARGIN["t"] + title_h, b=_TREE_MARGIN["b"] + legend_h),
                      legend=dict(orientation="h", yanchor="top", y=-0.02 if g["height"] > 200 else -0.1,
                                  xanchor="left", x=0, font=dict(size=11)),
                      plot_bgcolor="white", dragmode="pan")
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


def components_data(model: FittedModel, ds: Dataset, n_grid: int = 300, extend: float = 0.1
                    ) -> tuple[list, float, pd.Series | np.ndarray, object]:
    """The fitted kernel's additive components (:func:`evocov_core.present.decompose.decompose`) on a grid.

    Returns the components (largest explained variance first; means and SDs in the data's
    units, without the data's mean), the noise SD, the grid's display x (dates for dates) and
    the display x of the last training point. The grid runs over the data and ``extend`` of
    its range beyond. The components condition on the training points the kernel was fitted on
    (:meth:`FittedModel.conditioning`: on a long series, its subset of data).
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
    return comps, noise, _display_x(ds, grid), _display_x(ds, np.array([split_value(ds)]))[0]


def component_figure(component, x_display: pd.Series | np.ndarray, split: float | None = None,
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


# --- model choice and model average -------------------------------------------------------------


def _num_or_nan(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v) if math.isfinite(v) else math.nan


def selection_data(selection: Sequence[Mapping]) -> pd.DataFrame:
    """The candidates a search chose its kernel among, lowest BIC first.

    ``selection`` is a search's ``selection`` rows (:func:`evocov_core.search.select.choose_model`,
    stored in a run's ``extra``). Missing or non-finite scores become NaN.

    Returns
    -------
    DataFrame
        One row per candidate: ``BIC rank, kernel, q, BIC, tail score, tail RMSE, origins CRPS,
        weight, test RMSE, valid, chosen`` (``origins CRPS``: the mean CRPS of its forecasts from
        the rolling origins, for the choices that score them; ``valid``: a positive
        semi-definite covariance; runs stored before the check count as valid).
    """
    cols = ["BIC rank", "kernel", "q", "BIC", "tail score", "tail RMSE", "origins CRPS", "weight", "test RMSE",
            "valid", "chosen"]
    rows = [{
        "BIC rank": int(r.get("rank") or i + 1),
        "kernel": str(r.get("expression") or r.get("canonical") or ""),
        "q": int(r["q"]) if isinstance(r.get("q"), int) else None,
        "BIC": _num_or_nan(r.get("bic")),
        "tail score": _num_or_nan(r.get("tail_score")),
        "tail RMSE": _num_or_nan(r.get("tail_rmse")),
        "origins CRPS": _num_or_nan(r.get("origins_crps")),
        "weight": _num_or_nan(r.get("weight")),
        "test RMSE": _num_or_nan(r.get("test_rmse")),
        "valid": r.get("valid") is not False,
        "chosen": bool(r.get("chosen")),
    } for i, r in enumerate(selection)]
    return pd.DataFrame(rows, columns=cols).sort_values("BIC rank", kind="stable").reset_index(drop=True)


def average_members_data(ensemble: Sequence[Mapping]) -> pd.DataFrame:
    """The kernels of a model average, heaviest first.

    ``ensemble`` is a run's stored ``ensemble``: ``{"weight": w, "kernel": <kernel-file dict>}``
    entries. Weights are shown normalised to sum 1.

    Returns
    -------
    DataFrame
        ``weight, kernel, q, BIC, test RMSE``.
    """
    cols = ["weight", "kernel", "q", "BIC", "test RMSE"]
    rows = []
    for e in ensemble:
        doc = e.get("kernel") or {}
        sc = doc.get("scores") or {}
        rows.append({"weight": _num_or_nan(e.get("weight")),
                     "kernel": str(doc.get("infix") or doc.get("expression") or ""),
                     "q": doc.get("q"), "BIC": _num_or_nan(sc.get("bic")),
                     "test RMSE": _num_or_nan(sc.get("test_rmse"))})
    df = pd.DataFrame(rows, columns=cols)
    total = df["weight"].sum()
    if len(df) and total > 0:
        df["weight"] = df["weight"] / total
    return df.sort_values("weight", ascending=False, kind="stable").reset_index(drop=True)


# --- Pareto plots --------------------------------------------------------------------------------


def pareto_front(q: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Mask of points not dominated in (q, err), both minimised (NaN never on the front)."""
    q = np.asarray(q, dtype=float)
    err = np.asarray(err, dtype=float)
    ok = np.isfinite(q) & np.isfinite(err)
    front = np.zeros(q.shape, dtype=bool)
    idx = np.flatnonzero(ok)
    for i in idx:
        dominated = np.any((q[idx] <= q[i]) & (err[idx] <= err[i]) & ((q[idx] < q[i]) | (err[idx] < err[i])))
        front[i] = not dominated
    return front


def pareto_data(records: pd.DataFrame) -> pd.DataFrame:
    """Evaluated kernels with a finite test RMSE, with an ``on_front`` column.

    ``records`` has at least ``q``, ``test_rmse``, ``infix``, ``canonical`` (e.g. from
    :meth:`RunStore.evaluations` or a list of :class:`EvalRecord` dicts). Keeps the
    input row order and an ``row`` column pointing back to it.
    """
    if records is None or len(records) == 0:
        return pd.DataFrame(columns=["row", "q", "test_rmse", "infix", "on_front"])
    df = records.copy()
    df["row"] = np.arange(len(df))
    df["test_rmse"] = pd.to_numeric(df["test_rmse"], errors="coerce")
    df = df[np.isfinite(df.test_rmse)]
    df["on_front"] = pareto_front(df.q.to_numpy(), df.test_rmse.to_numpy())
    return df


def pareto_figure(pdata: pd.DataFrame, title: str = "Test RMSE against hyperparameter count",
                  reference: tuple[int, float] | None = None, log_y: bool = True, reference_name: str = "original",
                  levels: Sequence[tuple[str, float]] = ()) -> go.Figure:
    """Scatter of test RMSE vs q; the front in red; hover shows the expression.

    ``reference`` = (q, rmse) of a reference kernel, drawn as a black triangle named
    ``reference_name`` with guide lines (the paper's Figure 4). ``levels`` are ``(name, test RMSE)``
    of forecasts that are no kernel of the plot (AutoETS's, a combined forecast), each a horizontal
    line across it with a legend entry: the first dashed grey, the second dotted green, … (non-finite
    ones are left out, their style kept for the next). ``customdata`` holds ``row``.
    """
    fig = go.Figure()
    rng = np.random.default_rng(0)
    for on, name, color in ((False, "evaluated", _COLORS["other"]), (True, "Pareto front", _COLORS["front"])):
        d = pdata[pdata.on_front == on] if len(pdata) else pdata
        if not len(d):
            continue
        jitter = rng.uniform(-0.15, 0.15, len(d)) if not on else np.zeros(len(d))
        fig.add_trace(go.Scatter(
            x=d.q + jitter, y=d.test_rmse, mode="markers", name=name, customdata=d.row,
            hovertext=[f"q={q}<br>RMSE={r:.4g}<br>{s[:120]}" for q, r, s in zip(d.q, d.test_rmse, d.infix,
                                                                                   strict=True)],
            hoverinfo="text", marker=dict(size=9 if on else 6, color=color, opacity=0.9 if on else 0.5)))
    if reference is not None and reference[1] is not None and math.isfinite(reference[1]):
        q0, r0 = reference
        fig.add_trace(go.Scatter(x=[q0], y=[r0], mode="markers", name=reference_name,
                                 marker=dict(symbol="triangle-up", size=14, color=_COLORS["base"])))
        fig.add_hline(y=r0, line_color=_COLORS["base"], line_width=1)
        fig.add_vline(x=q0, line_color=_COLORS["base"], line_width=1)
    qs = [float(v) for v in pdata.q] if len(pdata) else []
    if reference is not None:
        qs.append(float(reference[0]))
    lo, hi = (min(qs) - 0.5, max(qs) + 0.5) if qs else (0.0, 1.0)
    for (name, level), dash in zip(levels, ("dash", "dot", "dashdot", "longdash"), strict=False):
        if level is None or not math.isfinite(level):
            continue
        fig.add_trace(go.Scatter(x=[lo, hi], y=[level, level], mode="lines", name=name, hoverinfo="name+y",
                                 line=dict(color="#555" if dash == "dash" else _COLORS["mean"], width=1.5, dash=dash)))
    fig.update_layout(title=title, xaxis_title="hyperparameters q", yaxis_title="test RMSE", height=420,
                      margin=dict(l=10, r=10, t=40, b=10), legend=_LEGEND,
                      yaxis_type="log" if log_y else "linear", clickmode="event+select")
    return fig


def explorer_figure(records: pd.DataFrame, base_q: int, base_rmse: float | None) -> go.Figure:
    """The paper's Figure 4: mutants' test RMSE against q, the original marked."""
    return pareto_figure(pareto_data(records), title="Mutations: test RMSE against q",
                         reference=(base_q, base_rmse if base_rmse is not None else math.nan))


# --- hyperparameters -------------------------------------------------------------------------


def hyperparameter_table(kernel: Kernel, theta: Sequence[float], log_noise: float, norm: Normalisation
                         ) -> pd.DataFrame:
    """One row per slot (plus noise): value in model units and, for single-role slots,
    in data units (lengthscales, periods, change widths in x units; shift, change location and
    window centre as x positions)."""
    roles = slot_roles(kernel)
    sx = norm.x_scale[0]
    rows = []
    for s, t in zip(kernel.slots, theta, strict=True):
        v = math.exp(t)
        r = sorted(roles[s])
        data_value: str = ""
        if r == ["lengthscale"]:
            data_value = f"lengthscale {v * sx:.4g} (x units)"
        elif r == ["frequency"]:
            data_value = f"period {2 * math.pi / v * sx:.4g} (x units)"
        elif r in (["shift"], ["location"], ["window_centre"]):
            data_value = f"at x = {norm.x_offset[0] + (v - 1.0) * sx:.6g}"
        elif r == ["damping"]:
            data_value = f"trend damps within {v * sx:.4g} (x units)"
        elif r in (["steepness"], ["window_width"]):
            data_value = f"{r[0].replace('_', ' ')} {v * sx:.4g} (x units)"
        rows.append({"hyperparameter": s, "roles": ", ".join(r) or "-", "value": v, "log value": t,
                     "in data units": data_value})
    nv = math.exp(log_noise)
    rows.append({"hyperparameter": "noise", "roles": "noise variance", "value": nv, "log value": log_noise,
                 "in data units": f"noise std {math.sqrt(nv) * norm.y_std:.4g} (y units)"})
    return pd.DataFrame(rows)
