"""The charts of a search: its fitness curves, the candidates it chose its kernel among and the members of a
model average, and the Pareto plot of test error against the number of hyperparameters (with the
explorer's mutants)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evocov_core.present.charts.style import _COLORS, _LEGEND
from evocov_core.searches.common import GenerationStats

__all__ = [
    "average_members_data",
    "explorer_figure",
    "fitness_compare_figure",
    "fitness_data",
    "fitness_figure",
    "fitness_view",
    "pareto_data",
    "pareto_figure",
    "pareto_front",
    "robust_range",
    "selection_data",
]


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


# --- model choice and model average -------------------------------------------------------------


def _num_or_nan(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v) if math.isfinite(v) else math.nan


def selection_data(selection: Sequence[Mapping]) -> pd.DataFrame:
    """The candidates a search chose its kernel among, lowest BIC first.

    ``selection`` is a search's ``selection`` rows (:func:`evocov_core.searches.select.choose_model`,
    stored in a run's ``extra``). Missing or non-finite scores become NaN.

    Returns
    -------
    DataFrame
        One row per candidate: ``BIC rank, kernel, q, BIC, tail score, tail RMSE, origins CRPS,
        state-space form, weight, test RMSE, valid, chosen`` (``origins CRPS``: the mean CRPS of its
        forecasts from the rolling origins, for the choices that score them; ``state-space form``:
        it holds a level, trend or damped trend, False in runs stored before the column; ``valid``: a
        positive semi-definite covariance; runs stored before the check count as valid).
    """
    cols = ["BIC rank", "kernel", "q", "BIC", "tail score", "tail RMSE", "origins CRPS", "state-space form", "weight",
            "test RMSE", "valid", "chosen"]
    rows = [{
        "BIC rank": int(r.get("rank") or i + 1),
        "kernel": str(r.get("expression") or r.get("canonical") or ""),
        "q": int(r["q"]) if isinstance(r.get("q"), int) else None,
        "BIC": _num_or_nan(r.get("bic")),
        "tail score": _num_or_nan(r.get("tail_score")),
        "tail RMSE": _num_or_nan(r.get("tail_rmse")),
        "origins CRPS": _num_or_nan(r.get("origins_crps")),
        "state-space form": bool(r.get("statespace")),
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
