"""Chart data and Plotly figures (evocov_core.present.figures): the Pareto front, extrapolation bands, tree
layout, series split, fitness curves, hyperparameter table, and the traces each figure builder draws.
No browser: figures are inspected as plotly objects."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.model import FittedModel
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose
from evocov_core.present.figures import (
    TREE_FONT,
    TREE_MAX_WIDTH,
    explorer_figure,
    extrapolation_data,
    extrapolation_figure,
    fitness_compare_figure,
    fitness_data,
    fitness_figure,
    hyperparameter_table,
    pareto_data,
    pareto_figure,
    pareto_front,
    series_data,
    series_figure,
    split_value,
    tree_figure,
    tree_fold_depth,
    tree_geometry,
    tree_label_boxes,
    tree_label_width,
    tree_layout,
    tree_outline,
)
from evocov_core.searches.common import GenerationStats

FORMS = Path(__file__).resolve().parents[1] / "fixtures" / "kernel_forms.json"


@pytest.fixture(scope="module")
def ds() -> Dataset:
    rng = np.random.default_rng(17)
    x = np.linspace(2000.0, 2004.0, 30)
    y = 50 + 2.0 * (x - 2000) + np.sin(2 * np.pi * x) + 0.2 * rng.standard_normal(x.size)
    return Dataset.from_arrays(x, y, name="toy", test_fraction=0.2, x_label="year", y_label="level")


@pytest.fixture(scope="module")
def model(ds) -> FittedModel:
    """SE with fixed values (amplitude 1, lengthscale 0.3, noise 0.01 in model units): no fitting."""
    return FittedModel(compose("SE"), (0.0, math.log(0.3)), math.log(0.01), 0.0, ds.norm)


def _dominated_by_definition(q, err, i) -> bool:
    return any(q[j] <= q[i] and err[j] <= err[i] and (q[j] < q[i] or err[j] < err[i]) for j in range(len(q))
               if np.isfinite(q[j]) and np.isfinite(err[j]))


# --- Pareto front ----------------------------------------------------------------------------------------


def test_pareto_front_small_case():
    q = np.array([1, 2, 2, 3, 1, 4, 5, 2])
    err = np.array([5.0, 3.0, 4.0, 1.0, 5.0, 1.0, 0.5, np.nan])
    front = pareto_front(q, err)
    # (1, 5) twice: equal points do not dominate each other; (2, 4) is beaten by (2, 3); (4, 1) by
    # (3, 1); (5, 0.5) is the only point that low; NaN is never on the front.
    assert front.tolist() == [True, True, False, True, True, False, True, False]


def test_pareto_front_matches_the_definition_on_random_points():
    rng = np.random.default_rng(3)
    q = rng.integers(2, 12, 60).astype(float)
    err = rng.lognormal(0.0, 1.0, 60)
    err[::13] = np.inf
    front = pareto_front(q, err)
    want = [bool(np.isfinite(err[i])) and not _dominated_by_definition(q, err, i) for i in range(60)]
    assert front.tolist() == want
    # On a front sorted by q the error strictly decreases (ties in q keep one error value).
    f = sorted({(q[i], err[i]) for i in np.flatnonzero(front)})
    assert all(a[0] < b[0] and a[1] > b[1] for a, b in itertools.pairwise(f))
    assert front.any()


def test_pareto_data_keeps_rows_with_a_finite_rmse_in_order():
    records = pd.DataFrame({"q": [4, 5, 3, 2, 6], "test_rmse": [1.0, None, 0.5, 2.0, "bad"],
                            "infix": list("abcde"), "canonical": list("ABCDE")})
    df = pareto_data(records)
    assert list(df.row) == [0, 2, 3]  # pointers back to the input rows, input order kept
    assert list(df.infix) == ["a", "c", "d"]
    assert list(df.on_front) == [False, True, True]  # (4, 1.0) is beaten by (3, 0.5)
    empty = pareto_data(records.iloc[:0])
    assert list(empty.columns) == ["row", "q", "test_rmse", "infix", "on_front"] and empty.empty


def test_pareto_figure_traces():
    records = pd.DataFrame({"q": [2, 3, 4, 5], "test_rmse": [3.0, 1.0, 2.0, 0.5], "infix": list("abcd"),
                            "canonical": list("abcd")})
    pdata = pareto_data(records)
    fig = pareto_figure(pdata, reference=(4, 1.5))
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    assert names == ["evaluated", "Pareto front", "original"]
    front = fig.data[1]
    assert list(front.x) == [2, 3, 5]  # no jitter on the front
    assert list(front.customdata) == [0, 1, 3]
    assert list(fig.data[0].customdata) == [2]
    assert abs(fig.data[0].x[0] - 4) <= 0.15  # evaluated points are jittered sideways only
    assert list(fig.data[2].x) == [4] and list(fig.data[2].y) == [1.5]
    assert fig.layout.yaxis.type == "log"
    assert pareto_figure(pdata, log_y=False).layout.yaxis.type == "linear"
    assert [t.name for t in pareto_figure(pareto_data(records.iloc[:0])).data] == []


def test_pareto_figure_draws_the_chosen_kernel_and_reference_levels():
    records = pd.DataFrame({"q": [2, 3, 4, 5], "test_rmse": [3.0, 1.0, 2.0, 0.5], "infix": list("abcd"),
                            "canonical": list("abcd")})
    fig = pareto_figure(pareto_data(records), reference=(4, 1.5), reference_name="chosen kernel",
                        levels=[("AutoETS", 1.2), ("the forecast (kernel 0.41 + AutoETS 0.59)", 0.9)])
    names = [t.name for t in fig.data]
    assert names == ["evaluated", "Pareto front", "chosen kernel", "AutoETS",
                     "the forecast (kernel 0.41 + AutoETS 0.59)"]
    ets, fc = fig.data[3], fig.data[4]
    assert list(ets.y) == [1.2, 1.2] and ets.line.dash == "dash" and fc.line.dash == "dot"
    assert list(ets.x) == [1.5, 5.5]  # across every q drawn
    # A level not known yet (AutoETS still running) is left out; the next keeps its own style.
    fig = pareto_figure(pareto_data(records), levels=[("AutoETS", math.nan), ("the forecast", 0.9)])
    assert [t.name for t in fig.data][-1] == "the forecast" and fig.data[-1].line.dash == "dot"
    assert "AutoETS" not in [t.name for t in fig.data]


def test_explorer_figure_marks_the_original_only_with_an_rmse():
    records = pd.DataFrame({"q": [2, 3], "test_rmse": [3.0, 1.0], "infix": ["a", "b"], "canonical": ["a", "b"]})
    assert [t.name for t in explorer_figure(records, 3, 2.0).data][-1] == "original"
    assert "original" not in [t.name for t in explorer_figure(records, 3, None).data]


# --- extrapolation ---------------------------------------------------------------------------------------


def test_extrapolation_band_is_mean_plus_minus_two_sd(ds, model):
    df = extrapolation_data(model, ds, n_grid=50, extend=0.5)
    assert list(df.columns) == ["x", "x_value", "mean", "lower", "upper", "std"]
    x = ds.x[:, 0]
    # The grid runs from the first x to half a range beyond the last and contains every data x.
    assert df.x_value.iloc[0] == x.min()
    assert df.x_value.iloc[-1] == pytest.approx(x.max() + 0.5 * np.ptp(x))
    assert np.all(np.diff(df.x_value) > 0)
    assert set(x) <= set(df.x_value)
    assert 50 <= len(df) <= 50 + len(x)
    np.testing.assert_allclose(df.lower, df["mean"] - 2 * df["std"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(df.upper, df["mean"] + 2 * df["std"], rtol=0, atol=1e-9)
    assert np.all(df["std"] > 0)
    assert np.all((df.lower < df["mean"]) & (df["mean"] < df.upper))
    pred = model.predict(ds.X_train, ds.y_train, df.x_value.to_numpy())
    np.testing.assert_allclose(df["mean"], pred.mean, rtol=1e-12)
    np.testing.assert_allclose(df["std"], pred.std, rtol=1e-12)
    # The band widens away from the training data: far beyond the last point it is widest.
    assert df["std"].iloc[-1] > df["std"][df.x_value <= ds.X_train.max()].max()


def test_extrapolation_on_dates_and_refused_in_two_dimensions(ds, model):
    dated = Dataset.from_arrays(ds.x[:, 0], ds.y, test_fraction=0.2, x_kind="date")
    df = extrapolation_data(model, dated, n_grid=10)
    assert pd.api.types.is_datetime64_any_dtype(df.x)
    assert df.x.iloc[0].year == 2000 and df.x.iloc[-1].year == 2004
    rng = np.random.default_rng(0)
    two = Dataset.from_arrays(np.column_stack([np.arange(20.0), rng.standard_normal(20)]), rng.standard_normal(20))
    with pytest.raises(ValueError, match="one input dimension"):
        extrapolation_data(model, two)


def test_extrapolation_figure_traces(ds, model):
    df = extrapolation_data(model, ds, n_grid=20)
    fig = extrapolation_figure(df, ds, title="forecast")
    assert [t.name for t in fig.data] == [None, "±2σ", "predictive mean", "train", "test"]
    assert fig.data[1].fill == "tonexty"
    assert list(fig.data[0].y) == list(df.upper) and list(fig.data[1].y) == list(df.lower)
    assert len(fig.data[3].x) == ds.n_train and len(fig.data[4].x) == ds.n_test
    # Beside a combined forecast, the kernel's own is named as such and the combined one drawn dotted.
    x = ds.X_test[:, 0]
    lines = pd.DataFrame({"method": ["forecast (kernel 0.41 + AutoETS 0.59)"] * len(x) + ["AutoETS"] * len(x),
                          "kind": ["combined"] * len(x) + ["classical"] * len(x), "x": np.concatenate([x, x]),
                          "x_value": np.concatenate([x, x]), "mean": np.zeros(2 * len(x)),
                          "lower": np.nan, "upper": np.nan})
    names = [t.name for t in extrapolation_figure(df, ds, forecasts=lines).data]
    assert "the kernel's own forecast" in names and "predictive mean" not in names
    assert "the forecast (kernel 0.41 + AutoETS 0.59)" in names and "AutoETS (classical)" in names
    only_classical = lines[lines.kind == "classical"]
    assert "predictive mean" in [t.name for t in extrapolation_figure(df, ds, forecasts=only_classical).data]
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].x0 == split_value(ds)  # the split line
    assert fig.layout.title.text == "forecast"


# --- the series and its split -------------------------------------------------------------------------------


def test_series_data_and_figure(ds):
    df = series_data(ds)
    assert list(df.part).count("train") == ds.n_train and list(df.part).count("test") == ds.n_test
    assert split_value(ds) == ds.X_train[:, 0].max() < ds.X_test[:, 0].min()
    fig = series_figure(ds)
    assert [t.name for t in fig.data] == [f"train ({ds.n_train})", f"test ({ds.n_test})"]
    assert fig.layout.title.text == "toy" and fig.layout.xaxis.title.text == "year"
    whole = Dataset.from_arrays(ds.x[:, 0], ds.y, test_fraction=0.0)
    fig = series_figure(whole)
    assert len(fig.data) == 1 and len(fig.layout.shapes) == 0  # no test part, no split line


# --- tree layout -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expr", ["SE", ["+", "SE", "PER"], ["*", "LIN", ["+", "RQ", "C"]]])
def test_tree_layout_places_every_node_below_its_parent(expr):
    k = compose(expr)
    nodes, edges = tree_layout(k)
    assert list(nodes.id) == list(range(len(k.tokens)))
    assert list(nodes.token) == list(k.tokens)  # ids in prefix order
    assert list(nodes.label) == [{"add": "+", "multiply": "×"}.get(t, t) for t in k.tokens]
    assert len(edges) == len(nodes) - 1  # a tree
    assert sorted(edges.child) == list(range(1, len(nodes)))  # every node but the root has one parent
    assert nodes.y[0] == 0 and nodes.depth[0] == 0
    assert (nodes.y == -nodes.depth).all()
    for p, c in edges.itertuples(index=False):
        assert nodes.y[c] == nodes.y[p] - 1
    children = edges.groupby("parent").child.apply(list)
    for p, cs in children.items():
        # Children side by side, centred under their parent, inside its span; a node at its span's centre.
        assert nodes.span0[p] <= nodes.span0[cs[0]] and nodes.span1[cs[-1]] <= nodes.span1[p] + 1e-9
        assert all(nodes.span1[a] == pytest.approx(nodes.span0[b]) for a, b in itertools.pairwise(cs))
        assert nodes.span0[cs[0]] - nodes.span0[p] == pytest.approx(nodes.span1[p] - nodes.span1[cs[-1]])
    assert np.allclose(nodes.x, (nodes.span0 + nodes.span1) / 2)
    # Each span holds its own label and padding.
    assert (nodes.span1 - nodes.span0 >= [tree_label_width(lab) + 10 - 1e-9 for lab in nodes.label]).all()
    leaves = nodes[~nodes.id.isin(edges.parent)]
    assert (np.diff(leaves.x) > 0).all() and nodes.span0.min() == 0  # left to right, in prefix order
    assert set(nodes.kind) <= {"nestable", "not_nestable", "slot", "constant", "argument"}
    assert set(nodes.token[nodes.kind == "slot"]) == set(k.slots)


def test_tree_layout_hover_shows_slot_values():
    k = compose(["+", "SE", "PER"])
    theta = [0.1 * (i + 1) for i in range(k.n_params)]
    nodes, _ = tree_layout(k, theta)
    for slot, t in zip(k.slots, theta, strict=True):
        hovers = set(nodes.hover[nodes.token == slot])
        assert hovers == {f"{slot} = {math.exp(t):.4g}"}
    assert set(nodes.hover[nodes.kind != "slot"]) == {t if lab == t else f"{lab} ({t})" for lab, t in
                                                      zip(nodes.label[nodes.kind != "slot"],
                                                          nodes.token[nodes.kind != "slot"], strict=True)}
    with pytest.raises(ValueError):
        tree_layout(k, theta[:-1])


def test_tree_figure_traces():
    k = compose(["+", "SE", "PER"])
    nodes, edges = tree_layout(k)
    fig = tree_figure(k, title="tree")
    assert fig.data[0].mode == "lines"
    assert len(fig.data[0].x) == 3 * len(edges)  # a segment and a gap per edge
    kinds = set(nodes.kind.unique())
    assert {t.name for t in fig.data[1:]} == {kd.replace("_", " ") for kd in kinds}
    assert sum(len(t.x) for t in fig.data[1:]) == len(nodes)
    # The legend sits under the tree, clear of the title above it (issue 13).
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"
    # Every label at the same size, whatever the tree's size: a wider tree gets a wider chart instead.
    wide = compose(["+", ["*", "SE", "PER"], ["*", "RQ", "LIN"], ["*", "SE", "PER"], "RQ"])
    assert {t.textfont.size for t in fig.data[1:]} == {t.textfont.size for t in tree_figure(wide).data[1:]} == {
        TREE_FONT}
    assert tree_figure(wide).layout.width > fig.layout.width
    g = tree_geometry(tree_layout(wide)[0])
    assert tree_figure(wide).layout.height >= g["plot_height"]


def _widest_test_kernel() -> Kernel:
    """The kernel of the test data (tests/fixtures/kernel_forms.json) whose tree has the most leaves."""
    forms = json.loads(FORMS.read_text(encoding="utf-8"))
    return max((Kernel(tuple(f["tokens"])) for f in forms), key=_n_leaves)


def _n_leaves(k: Kernel, max_depth: int | None = None) -> int:
    nodes, edges = tree_layout(k, max_depth=max_depth)
    return int((~nodes.id.isin(edges.parent)).sum())


def _intersections(boxes: pd.DataFrame) -> list[tuple[str, str]]:
    out = []
    b = boxes.to_dict("records")
    for i, j in itertools.combinations(range(len(b)), 2):
        p, q = b[i], b[j]
        if p["x0"] < q["x1"] and q["x0"] < p["x1"] and p["y0"] < q["y1"] and q["y0"] < p["y1"]:
            out.append((p["label"], q["label"]))
    return out


@pytest.mark.parametrize("max_depth", [None, 3, 1])
def test_no_two_tree_labels_overlap_on_the_widest_tree(max_depth):
    """Label boxes from the positions the figure draws (its axis ranges and plot area, in px) and the font
    size: on the widest tree of the test data, unfolded and folded, no two intersect."""
    k = _widest_test_kernel()
    nodes, _ = tree_layout(k, max_depth=max_depth)
    assert _n_leaves(k) >= 30  # really a wide tree
    fig = tree_figure(k, max_depth=max_depth)
    m = fig.layout.margin
    pw, ph = fig.layout.width - m.l - m.r, fig.layout.height - m.t - m.b
    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    drawn = []
    for t in fig.data[1:]:
        size = t.textfont.size
        for x, y, lab in zip(t.x, t.y, t.text, strict=True):
            cx, cy = (x - x0) / (x1 - x0) * pw, (y1 - y) / (y1 - y0) * ph
            half = tree_label_width(str(lab), size) / 2
            drawn.append({"label": lab, "x0": cx - half, "x1": cx + half, "y0": cy - size / 2, "y1": cy + size / 2})
    drawn = pd.DataFrame(drawn)
    assert len(drawn) == len(nodes)
    assert _intersections(drawn) == []
    # tree_label_boxes says the same as the figure.
    boxes = tree_label_boxes(nodes).sort_values(["y0", "x0"]).reset_index(drop=True)
    drawn = drawn.sort_values(["y0", "x0"]).reset_index(drop=True)
    assert np.allclose(boxes[["x0", "x1", "y0", "y1"]], drawn[["x0", "x1", "y0", "y1"]], atol=1.0)  # px rounding
    # A label never touches its neighbour: the closest two on one level are a padding apart.
    for _, level in drawn.groupby("y0"):
        level = level.sort_values("x0")
        gaps = level.x0.to_numpy()[1:] - level.x1.to_numpy()[:-1]
        assert gaps.size == 0 or gaps.min() >= 0


def test_a_tree_too_wide_opens_folded_and_folding_keeps_the_top():
    k = _widest_test_kernel()
    full, _ = tree_layout(k)
    narrow = 800
    assert tree_geometry(full)["width"] > narrow
    d = tree_fold_depth(k, max_width=narrow)
    assert d is not None and 1 <= d < int(full.depth.max())
    folded, edges = tree_layout(k, max_depth=d)
    assert tree_geometry(folded)["width"] <= narrow < tree_geometry(tree_layout(k, max_depth=d + 1)[0])["width"]
    assert tree_fold_depth(k) is None or tree_geometry(full)["width"] > TREE_MAX_WIDTH
    assert int(folded.depth.max()) == d and len(edges) == len(folded) - 1
    assert folded.folded.any() and all(lab.endswith(" …") for lab in folded.label[folded.folded])
    assert all(h.startswith("folded: ") for h in folded.hover[folded.folded])
    top = full[full.depth < d]
    assert list(folded.token[folded.depth < d]) == list(top.token)  # the top of the tree as it was
    assert tree_fold_depth(compose(["+", "SE", "PER"])) is None  # a small tree is not folded


def test_tree_outline_is_the_tree_indented():
    k = compose(["+", "SE", "PER"])
    theta = [0.1 * (i + 1) for i in range(k.n_params)]
    lines = tree_outline(k, theta).splitlines()
    assert len(lines) == len(k.tokens)
    nodes, _ = tree_layout(k)
    for line, tok, depth in zip(lines, nodes.token, nodes.depth, strict=True):
        assert line.startswith("  " * depth + tok) and not line.startswith("  " * depth + " ")
    assert lines[0] == "add"
    slot = k.slots[0]
    assert any(line.strip() == f"{slot} = {math.exp(theta[0]):.4g}" for line in lines)


# --- fitness curves ---------------------------------------------------------------------------------------


def _history() -> list[GenerationStats]:
    return [GenerationStats(1, 30.0, 40.0, 30.0, 4, 0, False, 0.1),
            GenerationStats(2, math.inf, math.inf, 30.0, 4, 4, True, 0.2),
            GenerationStats(3, 20.0, 25.0, 20.0, 4, 1, False, 0.3)]


def test_fitness_data_from_stats_and_from_the_store_frame():
    df = fitness_data(_history())
    assert list(df.columns) == ["generation", "best_bic", "mean_bic", "best_so_far_bic", "restarted"]
    assert list(df.generation) == [1, 2, 3]
    assert df.best_bic.isna().tolist() == [False, True, False]  # inf -> NaN
    assert df.restarted.dtype == bool and df.restarted.tolist() == [False, True, False]
    stored = pd.DataFrame({"run_id": "r", "generation": [1, 2], "best_bic": [5.0, None], "mean_bic": [6.0, 7.0],
                           "best_so_far_bic": [5.0, 5.0], "restarted": [0, 1]})
    df = fitness_data(stored)
    assert df.best_bic.isna().tolist() == [False, True] and df.restarted.tolist() == [False, True]
    assert fitness_data([]).empty and "best_so_far_bic" in fitness_data([]).columns


def test_fitness_figures():
    fig = fitness_figure(_history())
    assert [t.name for t in fig.data] == ["best so far", "best of generation", "mean of generation", "restart"]
    assert list(fig.data[0].y) == [30.0, 30.0, 20.0]
    assert [s.x0 for s in fig.layout.shapes] == [2]  # one restart line
    calm = fitness_figure(_history()[:1])
    assert "restart" not in [t.name for t in calm.data] and len(calm.layout.shapes) == 0
    cmp = fitness_compare_figure({"a": _history(), "b": _history()[:2]})
    assert [t.name for t in cmp.data] == ["a", "b"]
    assert list(cmp.data[1].y) == [30.0, 30.0]


# --- hyperparameters --------------------------------------------------------------------------------------


def test_hyperparameter_table_in_data_units(ds):
    k = compose(["+", "SE", ["+", "PER", "LIN"]])
    rng = np.random.default_rng(1)
    theta = rng.uniform(-1, 1, k.n_params)
    table = hyperparameter_table(k, theta, math.log(0.04), ds.norm).set_index("hyperparameter")
    assert list(table.index) == [*k.slots, "noise"]
    np.testing.assert_allclose(table.loc[list(k.slots), "value"], np.exp(theta))
    sx = ds.norm.x_scale[0]
    by_role = {r: s for s, r in table.roles.items()}
    ls = by_role["lengthscale"]
    assert table.loc[ls, "in data units"] == f"lengthscale {math.exp(theta[k.slots.index(ls)]) * sx:.4g} (x units)"
    fr = by_role["frequency"]
    period = 2 * math.pi / math.exp(theta[k.slots.index(fr)]) * sx
    assert table.loc[fr, "in data units"] == f"period {period:.4g} (x units)"
    sh = by_role["shift"]
    at = ds.norm.x_offset[0] + (math.exp(theta[k.slots.index(sh)]) - 1.0) * sx
    assert table.loc[sh, "in data units"] == f"at x = {at:.6g}"
    assert table.loc["noise", "value"] == pytest.approx(0.04)
    assert table.loc["noise", "in data units"] == f"noise std {0.2 * ds.norm.y_std:.4g} (y units)"


def test_fitness_chart_stays_readable_when_the_mean_explodes():
    """Issue 13.1: generation means of 2e6 while the best is about −600 must not flatten the best curve."""
    best = [-420.0, -500.0, -560.0, -590.0, -597.0]
    means = [-300.0, 2e6, 5e5, -450.0, 3e6]
    hist = [GenerationStats(g + 1, b, m, min(best[: g + 1]), 40, 0, False, float(g)) for g, (b, m) in
            enumerate(zip(best, means, strict=True))]
    fig = fitness_figure(hist)
    lo, hi = fig.layout.yaxis.range
    assert lo <= -597.0 and -420.0 <= hi < 0.0  # the axis is set by the best curves, not by 3e6
    mean = next(t for t in fig.data if t.name == "mean of generation")
    assert max(mean.y) <= hi and list(mean.customdata) == means  # drawn clipped, true values on hover
    marks = next(t for t in fig.data if t.name == "mean above the chart")
    above = [(g + 1, m) for g, m in enumerate(means) if m > hi]
    assert {2, 3, 5} <= {g for g, _ in above} and 4 not in {g for g, _ in above}  # −450 is on the chart
    assert list(zip(marks.x, marks.customdata, strict=True)) == above
    calm = fitness_figure(_history())
    assert "mean above the chart" not in [t.name for t in calm.data]  # nothing clipped when nothing is wild
    # Runs comparison: a wild first generation does not flatten the others.
    wild = [GenerationStats(1, 1e6, 1e6, 1e6, 4, 0, False, 0.1), *hist[1:]]
    cmp = fitness_compare_figure({"wild": wild, "calm": hist})
    top = cmp.layout.yaxis.range[1]
    assert top < 1e5 and cmp.data[0].y[0] == top and cmp.data[0].marker.symbol[0] == "triangle-up"


def test_components_on_a_grid_in_data_units(ds):
    """Components of a fitted SE + PER + LIN: their means add up to the model's mean minus the data mean."""
    from evocov_core.fitting.model import FittedModel
    from evocov_core.present.figures import component_figure, components_data

    k = compose(["+", "SE", ["+", "PER", "LIN"]])
    theta = tuple(np.full(k.n_params, math.log(0.5)))
    model = FittedModel(k, theta, math.log(0.05), 0.0, ds.norm)
    comps, noise, xs, split = components_data(model, ds, n_grid=50)
    assert len(comps) == 3 and len(xs) == 50 and noise == pytest.approx(math.sqrt(0.05) * ds.norm.y_std)
    grid = np.linspace(ds.x[:, 0].min(), ds.x[:, 0].max() * 1.0 + 0.1 * np.ptp(ds.x[:, 0]), 50)
    pred = model.predict(ds.X_train, ds.y_train, grid[:, None])
    np.testing.assert_allclose(sum(c.mean for c in comps) + ds.norm.y_mean, pred.mean, rtol=1e-7, atol=1e-7)
    fig = component_figure(comps[0], xs, split)
    assert len(fig.data) == 2 and len(fig.layout.shapes) == 1


# --- long series: what is drawn ---------------------------------------------------------------------


def test_minmax_indices_keep_every_bucket_extreme_and_the_ends() -> None:
    from evocov_core.present.figures import minmax_indices

    rng = np.random.default_rng(3)
    y = np.cumsum(rng.standard_normal(100_000))
    y[[17, 54_321]] = [y.max() + 50, y.min() - 50]  # a lone spike and a lone trough
    idx = minmax_indices(y, 4000)
    assert idx.size <= 4000 and np.all(np.diff(idx) > 0)
    assert {0, y.size - 1, 17, 54_321} <= set(idx.tolist())
    # Every stretch between two kept points stays inside the envelope that the kept points draw:
    # each bucket's lowest and highest values are among them.
    edges = np.linspace(0, y.size, (4000 - 2) // 2 + 1).astype(int)
    kept = set(idx.tolist())
    for a, b in itertools.pairwise(edges):
        assert a + int(np.argmin(y[a:b])) in kept and a + int(np.argmax(y[a:b])) in kept
    assert np.array_equal(minmax_indices(y[:300], 4000), np.arange(300))  # short: everything
    y[5:9] = np.nan
    assert not np.isnan(y[minmax_indices(y, 100)]).any()


def _long_dataset(n: int = 30_000) -> Dataset:
    t = np.arange(n) / 48.0
    y = np.sin(2 * np.pi * t) + 0.01 * t + np.random.default_rng(0).standard_normal(n) * 0.1
    return Dataset.from_arrays(2000 + t / 365.25, y, name="long", x_kind="date", x_label="time")


def test_long_series_are_drawn_thinned_with_webgl() -> None:
    from evocov_core.present.figures import MAX_DRAWN, minmax_indices

    big = _long_dataset()
    fig = series_figure(big)
    assert [type(t) for t in fig.data] == [go.Scattergl, go.Scattergl]  # WebGL from 1,000 points
    assert len(fig.data[1].x) == 3000 and "drawn" not in fig.data[1].name  # the test part: every point
    assert len(fig.data[0].x) <= MAX_DRAWN and "27,000" in fig.data[0].name and "drawn" in fig.data[0].name
    assert max(fig.data[0].y) == big.y_train.max() and min(fig.data[0].y) == big.y_train.min()
    assert len(minmax_indices(big.y, 10)) <= 10


def test_a_long_series_forecast_chart_opens_on_its_test_part(ds, model) -> None:
    from evocov_core.present.charts.style import _display_x
    from evocov_core.present.figures import extrapolation_grid, forecast_window

    big = _long_dataset()  # 27,000 training points, 3,000 test points
    grid = extrapolation_grid(big, 400)
    mean = np.interp(grid, big.x[:, 0], big.y)
    pred = pd.DataFrame({"x": _display_x(big, grid), "x_value": grid, "mean": mean, "lower": mean - 1,
                         "upper": mean + 1, "std": np.ones_like(mean)})
    fig = extrapolation_figure(pred, big)
    lo, hi = forecast_window(big)
    x = big.x[:, 0]
    assert hi == x.max() and np.sum((x >= lo) & big.train) == big.n_test  # as much history as forecast
    assert [pd.Timestamp(v) for v in fig.layout.xaxis.range] == list(_display_x(big, np.array([lo, hi])))
    train = next(t for t in fig.data if (t.name or "").startswith("train"))
    # Inside the window every training point is drawn; before it the history is thinned.
    drawn = pd.Series(pd.to_datetime(train.x))
    inside = _display_x(big, x[(x >= lo) & big.train])
    assert set(inside) <= set(drawn) and len(drawn) < big.n_train
    y_lo, y_hi = fig.layout.yaxis.range
    window_y = big.y[x >= lo]
    assert y_lo < window_y.min() - 0.5 and y_hi > window_y.max() + 0.5  # the band fits...
    assert y_lo > big.y.min() + 2  # ...and the y axis is not scaled to the whole history's trend
    # A short series is shown whole.
    assert forecast_window(ds) is None
    small = extrapolation_figure(extrapolation_data(model, ds, n_grid=20), ds)
    assert small.layout.xaxis.range is None and small.layout.yaxis.range is None


def test_the_extrapolation_of_a_long_series_predicts_at_a_bounded_number_of_points() -> None:
    from evocov_core.present.figures import DETAIL_POINTS, extrapolation_grid

    big = _long_dataset()
    grid = extrapolation_grid(big, 400)
    assert grid.size <= 400 + DETAIL_POINTS
    # The detail sits around the end of the training part, where the forecast starts.
    split = split_value(big)
    near = big.x[:, 0][np.abs(big.x[:, 0] - split) < 1e-9 + 10 / 365.25]
    assert set(near.tolist()) <= set(grid.tolist())
    small = Dataset.from_arrays(np.arange(50.0), np.sin(np.arange(50.0)))
    assert set(small.x[:, 0].tolist()) <= set(extrapolation_grid(small, 40).tolist())
