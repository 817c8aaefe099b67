"""The charts of one kernel: its expression tree, laid out so that no two labels overlap, and the table of
its hyperparameters in model and data units."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from evocov_core.data.dataset import Normalisation
from evocov_core.language.grammar import is_slot, symbol
from evocov_core.language.kernel import Kernel, _nest, flatten, slot_roles

__all__ = [
    "TREE_FONT",
    "TREE_MAX_WIDTH",
    "hyperparameter_table",
    "tree_figure",
    "tree_fold_depth",
    "tree_geometry",
    "tree_label_boxes",
    "tree_label_width",
    "tree_layout",
    "tree_outline",
]


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
