"""A self-contained HTML report of a fitted kernel: forecast, components, residual checks, formula.

``python -m evocov_core report --kernel K.json --data D.csv --out report.html`` writes one file
that opens offline (Plotly's JavaScript is embedded once, no other resource is fetched):

0. in short: one line per additive component (the sentences of 2.) and the noise;
1. the data and the forecast (predictive mean and ±2σ), with the forecasts of an SE kernel and
   of a short GPSS search fitted on the same training data, and those of the classical
   forecasters (seasonal naive, AutoETS, AutoARIMA, AutoTheta, MSTL: :mod:`evocov_core.forecast.classical`)
   over the test range, drawn dashed over it; a table comparing the three GPs
   (:func:`evocov_core.present.gp_comparison.compare_with_baselines`: expression, hyperparameters, BIC, the
   tail score of the model choice, test RMSE), and one comparing every forecast of the test
   part (:func:`evocov_core.present.compare.compare`: test RMSE, 95 % coverage, CRPS, interval score,
   seconds, status);
2. one figure and one sentence per additive component (:mod:`evocov_core.present.decompose`), largest
   share of the variance first, and the noise;
3. residual checks on the training data: standardised residuals ``(y − μ)/σ`` of the
   leave-nothing-out posterior, their autocorrelation (bars outside ±2/√n suggest structure
   the kernel missed) and a normal Q-Q plot;
4. the kernel: the simplified formula (:mod:`evocov_core.language.simplify`), the stored expression,
   the hyperparameters in the data's units, the scores of the kernel file.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scipy.stats import norm as normal

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.model import FittedModel, shared_posteriors
from evocov_core.fitting.optimize import finite_or_none
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, ClassicalForecasts
from evocov_core.language.simplify import simplified
from evocov_core.present.compare import Comparison, compare
from evocov_core.present.decompose import kernel_summary
from evocov_core.present.figures import (
    MAX_DRAWN,
    WEBGL_FROM,
    comparison_forecasts_data,
    component_figure,
    components_data,
    extrapolation_data,
    extrapolation_figure,
    hyperparameter_table,
    minmax_indices,
)
from evocov_core.present.glance import verdict, weight_sentence
from evocov_core.present.gp_comparison import Compared, FittedBaseline, compare_with_baselines
from evocov_core.runs.kernel_file import KernelFile

__all__ = ["comparison_table", "forecast_table_html", "report_html", "residual_checks"]


#: Training points the residual checks read, at most: the most recent ones of a longer series.
RESIDUAL_POINTS = 5000
#: Points of the normal Q-Q plot drawn, at most (evenly along the sorted residuals, both ends kept).
QQ_DRAWN = 1000


def residual_checks(model: FittedModel, ds: Dataset, max_lag: int = 24, max_points: int = RESIDUAL_POINTS
                    ) -> dict[str, np.ndarray]:
    """Standardised training residuals, their autocorrelation up to ``max_lag`` and Q-Q points.

    On a series of more than ``max_points`` training points, the residuals are those of the
    most recent ``max_points`` (contiguous, so the autocorrelation keeps its meaning): each
    needs a predictive variance, O(m²) for an exact GP on m points, and 90,000 of them would
    take minutes for a chart that shows no more.

    Returns ``x``, ``residual`` (n,), ``lags``, ``acf`` (max_lag,), ``theoretical``, ``sample``
    (sorted residuals against normal quantiles), ``n_total`` (training points).
    """
    X, y = ds.X_train[-max_points:], ds.y_train[-max_points:]  # sorted by x: the most recent
    pred = model.predict(ds.X_train, ds.y_train, X)
    r = (y - pred.mean) / np.where(pred.std > 0, pred.std, 1.0)
    rc = r - r.mean()
    denom = float(rc @ rc) or 1.0
    lags = np.arange(1, min(max_lag, r.size - 1) + 1)
    acf = np.array([float(rc[:-k] @ rc[k:]) / denom for k in lags])
    n = r.size
    theoretical = normal.ppf((np.arange(1, n + 1) - 0.5) / n)
    return {"x": X[:, 0], "residual": r, "lags": lags, "acf": acf, "theoretical": theoretical,
            "sample": np.sort(r), "n_total": np.array(ds.n_train)}


def _residual_figures(chk: dict[str, np.ndarray], ds: Dataset, max_points: int = MAX_DRAWN,
                      qq_points: int = QQ_DRAWN) -> list[go.Figure]:
    """Residuals against x, their autocorrelation, their normal Q-Q plot.

    What is drawn is thinned, never what is computed (the autocorrelation and its count use
    every residual): the residuals against x from :func:`~evocov_core.present.figures.minmax_indices`
    (at most ``max_points``, every peak kept), the Q-Q plot at most ``qq_points`` evenly along
    the sorted residuals (the same rule on a sorted array: the first and last of each stretch,
    so both tails' extremes are drawn).
    """
    n = chk["residual"].size
    shown = minmax_indices(chk["residual"], max_points)
    qq = minmax_indices(chk["sample"], qq_points)
    trace = go.Scattergl if n >= WEBGL_FROM else go.Scatter
    f1 = go.Figure(trace(x=chk["x"][shown], y=chk["residual"][shown], mode="markers", marker=dict(size=4)))
    f1.update_layout(title="Standardised residuals on the training data", height=260,
                     xaxis_title=str(ds.x_label), yaxis_title="(y − μ)/σ")
    f2 = go.Figure(go.Bar(x=chk["lags"], y=chk["acf"]))
    band = 2 / math.sqrt(max(n, 1))
    for v in (band, -band):
        f2.add_hline(y=v, line_dash="dot", line_color="#888")
    f2.update_layout(title="Autocorrelation of the residuals (dotted: ±2/√n)", height=260, xaxis_title="lag")
    f3 = go.Figure([trace(x=chk["theoretical"][qq], y=chk["sample"][qq], mode="markers", marker=dict(size=4),
                          name="residuals"),
                    go.Scatter(x=chk["theoretical"][[0, -1]], y=chk["theoretical"][[0, -1]], mode="lines",
                               name="normal",  # a straight line: its two ends
                               line=dict(dash="dot", color="#888"))])
    f3.update_layout(title="Normal Q-Q plot of the residuals", height=300, xaxis_title="normal quantile",
                     yaxis_title="residual", showlegend=False)
    return [f1, f2, f3]


def comparison_table(rows: list[Compared]) -> pd.DataFrame:
    """The comparison as a table: one row per model (numbers NaN where they do not exist)."""
    def num(v: float | None) -> float:
        return float(v) if v is not None and math.isfinite(v) else math.nan

    return pd.DataFrame({
        "model": [r.name for r in rows],
        "expression": [r.expression or "–" for r in rows],
        "hyperparameters (q)": [r.q if r.q is not None else "–" for r in rows],
        "BIC (training)": [num(r.bic) for r in rows],
        "tail score": [num(r.tail_score) for r in rows],
        "test RMSE": [num(r.test_rmse) for r in rows],
        "how": [r.note for r in rows],
    })




def _comparison_html(rows: list[Compared], ds: Dataset) -> str:
    model = rows[0].model if rows else None
    on_subset = model is not None and model.approximation is not None and not model.approximation.exact
    table = comparison_table(rows).drop(columns="how")  # said under the table: it is prose
    if ds.n_test == 0:
        table = table.drop(columns="test RMSE")
    if table["tail score"].isna().all():
        table = table.drop(columns="tail score")
    out = table.to_html(index=False, border=0, classes="hp comparison", na_rep="–",
                        float_format=lambda v: f"{v:.5g}")
    # The same numbers, full precision, for programs that read the report.
    data = json.dumps([{"model": r.name, "expression": r.expression, "q": r.q, "bic": finite_or_none(r.bic),
                        "tail_score": finite_or_none(r.tail_score), "test_rmse": finite_or_none(r.test_rmse),
                        "note": r.note}
                       for r in rows]).replace("</", "<\\/")
    out += f'<script type="application/json" id="evocov-comparison">{data}</script>'
    notes = "".join(f"<li><b>{html.escape(r.name)}</b>: {html.escape(r.note)}</li>" for r in rows if r.note)
    return ("<h2>Against the baselines</h2><p>The same training data, the same units: BIC = −2·LML + q·log n "
            "(lower is better); tail score: log-likelihood of the last 10 % of the training range "
            + ("given the rest at the fitted values (no refit: a long series)" if on_subset else
               "after a refit on the rest, as the search chooses its kernel")
            + " (higher is better)"
            + ("; test RMSE on the held-out part" if ds.n_test else "") + ".</p>" + out
            + (f'<ul class="notes">{notes}</ul>' if notes else ""))


_FORECAST_HEADERS = {"method": "method", "kind": "kind", "test_rmse": "test RMSE", "coverage_95": "95 % coverage",
                     "crps": "CRPS", "interval_score": "interval score", "seconds": "seconds", "status": "status"}


def forecast_table_html(comparison: Comparison, ds: Dataset) -> str:
    """The forecast comparison (:func:`evocov_core.present.compare.compare`) as a report section.

    A table (the best test RMSE in bold), the same numbers as JSON
    (``<script id="evocov-forecast-comparison">``) for programs, the seasons the classical
    models used and every reason and setting in a list.
    """
    esc = html.escape
    t = comparison.table
    shown = t[list(_FORECAST_HEADERS)].rename(columns=_FORECAST_HEADERS)
    # A share, as the Results page writes it ("93 %"); the JSON below keeps the fraction.
    shown["95 % coverage"] = [f"{v:.0%}" if isinstance(v, float) and math.isfinite(v) else None
                              for v in t["coverage_95"]]
    body = shown.to_html(index=False, border=0, classes="hp forecasts", na_rep="–",
                         float_format=lambda v: f"{v:.4g}")
    for method in t.loc[t["best"], "method"]:  # bold the best row's name
        cell = f"<td>{esc(method)}</td>"
        body = body.replace(cell, f"<td><b>{esc(method)}</b> (best)</td>", 1)
    records = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
               for row in t.to_dict(orient="records")]
    data = json.dumps(records, default=lambda v: v.item() if hasattr(v, "item") else str(v)).replace("</", "<\\/")
    body += f'<script type="application/json" id="evocov-forecast-comparison">{data}</script>'
    notes = []
    cf = comparison.classical
    if cf is not None:
        notes.append(f"<li>Seasons, in steps: {esc(cf.seasons.describe())}"
                     + "".join(f"; {esc(n)}" for n in cf.seasons.notes) + "</li>")
    for _, row in t.iterrows():
        text = row["reason"] or (row["details"] if row["kind"] == "classical" else "")
        if text:
            notes.append(f"<li><b>{esc(row['method'])}</b>: {esc(text)}</li>")
    ok = t[t["test_rmse"].notna()]
    lead = ""
    if len(ok) and ds.n_test:
        best = ok.loc[ok["test_rmse"].idxmin()]
        mine = t.loc[t["method"] == "this kernel", "test_rmse"]
        lead = (f"<p>Lowest test RMSE: <b>{esc(best['method'])}</b> ({best['test_rmse']:.4g})"
                + (f"; this kernel {float(mine.iloc[0]):.4g}" if len(mine) and math.isfinite(mine.iloc[0]) else "")
                + ".</p>")
    return ("<h2>Against classical forecasters</h2><p>Every method forecasts the test part from the training part "
            "alone: the GPs above and statsforecast's seasonal naive, AutoETS, AutoARIMA, AutoTheta and MSTL "
            "(drawn dashed in the forecast; a click on a legend entry hides it). Coverage is the share of test "
            "points inside the 95 % interval (0.95 is calibrated); CRPS and the interval score (α = 0.05) score "
            "the whole predictive, in the data's units, lower is better. A GP predicts a normal; a classical "
            "model's CRPS is that of the normal its 95 % interval implies. Classical models see the points as "
            "consecutive steps.</p>" + lead + body + (f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""))


def report_html(kf: KernelFile, ds: Dataset, *, title: str | None = None, baseline_budget: float = 20.0,
                seed: int = 0, workers: int | None = 1, classical: bool = True,
                season_lengths: Sequence[int] | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
                classical_done: ClassicalForecasts | None = None, se_done: FittedBaseline | None = None,
                gpss_done: FittedBaseline | None = None) -> str:
    """The report as one HTML document (Plotly embedded once; opens with no network).

    ``baseline_budget`` seconds go to the GPSS baseline (0 leaves it out; the SE baseline takes
    seconds); ``seed`` seeds both, so the same inputs give the same report. ``classical``
    adds the classical forecasters (one input only), each within ``time_limit`` seconds, with
    ``season_lengths`` (steps) or the seasons read from the x spacing; ``classical_done``, those
    forecasts made already, are used instead (:func:`~evocov_core.present.compare.compare`); ``se_done`` and
    ``gpss_done``, GP baselines fitted already (the dashboard's SE fit, a finished GPSS run), are
    scored as they are instead of fitted again
    (:func:`~evocov_core.present.gp_comparison.compare_with_baselines`; ``gpss_done`` replaces the GPSS search).

    Each GP is factorised once on its training points for all its predictions
    (:func:`~evocov_core.fitting.model.shared_posteriors`); the baselines' curves are means only (drawn
    dashed, no band); charts draw at most :data:`~evocov_core.present.figures.MAX_DRAWN` points per
    trace (:func:`~evocov_core.present.figures.minmax_indices`), every number is computed on every point.
    """
    with shared_posteriors():
        return _report_html(kf, ds, title=title, baseline_budget=baseline_budget, seed=seed, workers=workers,
                            classical=classical, season_lengths=season_lengths, time_limit=time_limit,
                            classical_done=classical_done, se_done=se_done, gpss_done=gpss_done)


class _Plots:
    """Figures as HTML fragments: the first carries plotly.js inline, the others reuse it."""

    def __init__(self) -> None:
        self.first = True

    def __call__(self, fig: go.Figure) -> str:
        # The figures' 10 px margins suit the dashboard's theme; on a plain page the tick labels and axis
        # titles need the room plotly.js can make for them.
        fig.update_xaxes(automargin=True)
        fig.update_yaxes(automargin=True)
        out = fig.to_html(full_html=False, include_plotlyjs="inline" if self.first else False,
                          config={"displaylogo": False})
        self.first = False
        return out


_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}"
          "code{background:#f4f4f4;padding:2px 4px;word-break:break-all}table.hp{border-collapse:collapse}"
          "table.hp td,table.hp th{padding:2px 8px;border-bottom:1px solid #ddd}"
          "table.comparison,table.forecasts{font-size:0.9em}ul.notes{font-size:0.85em;color:#555}"
          "p.formula{overflow-x:auto;max-width:100%}"
          "div.verdict{border:1px solid #ccc;border-radius:6px;padding:0 1em;margin:1em 0;background:#fafafa}")


def _report_html(kf: KernelFile, ds: Dataset, *, title: str | None, baseline_budget: float, seed: int,
                 workers: int | None, classical: bool, season_lengths: Sequence[int] | None, time_limit: float,
                 classical_done: ClassicalForecasts | None, se_done: FittedBaseline | None,
                 gpss_done: FittedBaseline | None) -> str:
    model = kf.model(fallback_norm=ds.norm)
    pred = extrapolation_data(model, ds, extend=0.1)
    comparison: Comparison | None = None
    if ds.x.shape[1] == 1:
        comparison = compare(kf, ds, baseline_budget=baseline_budget, seed=seed, season_lengths=season_lengths,
                             time_limit=time_limit, workers=workers, classical=classical,
                             classical_done=classical_done, se_done=se_done, gpss_done=gpss_done)
        compared = list(comparison.baselines)
    else:
        compared = compare_with_baselines(kf, ds, baseline_budget=baseline_budget, seed=seed, workers=workers,
                                          se_done=se_done, gpss_done=gpss_done)
    others = [(f"{r.name} mean", extrapolation_data(r.model, ds, extend=0.1, band=False)) for r in compared[1:]
              if r.model is not None and ds.x.shape[1] == 1]
    lines = comparison_forecasts_data(comparison, ds) if comparison is not None and classical else None
    forecast = extrapolation_figure(pred, ds, others=others, forecasts=lines)
    comps, noise_sd, xs, split = components_data(model, ds) if ds.x.shape[1] == 1 else ([], float("nan"), [], None)
    plot = _Plots()
    esc = html.escape
    name = title or f"EvoCov report: {ds.name}"
    parts = _head_html(kf, ds, model, name, comparison, comps, noise_sd)
    both = kf.combination.combined and lines is not None and bool((lines["kind"] == "combined").any())
    parts.append("<h2>Forecast</h2><p>The data (training, test), the predictive mean and its ±2σ band"
                 + (", and dashed, the means of the baselines below" if others or lines is not None else "") + "."
                 + (f" The search's forecast (dotted) averages the kernel's own forecast (solid) with classical "
                    f"ones: {esc(weight_sentence(kf.combination))}" if both else "") + "</p>"
                 + plot(forecast))
    parts.append(_comparison_html(compared, ds))
    if comparison is not None and comparison.classical is not None:
        parts.append(forecast_table_html(comparison, ds))
    parts += _components_html(comps, noise_sd, xs, split, ds, plot)
    parts += _residuals_html(model, ds, plot)
    parts.append(_kernel_html(kf, model))
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(name)}</title>"
            f"<style>{_STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>")


def _head_html(kf: KernelFile, ds: Dataset, model: FittedModel, name: str, comparison: Comparison | None,
               comps: list, noise_sd: float) -> list[str]:
    """The report's title, what the data and the fit are, and the verdict at a glance."""
    esc = html.escape
    parts = [f"<h1>{esc(name)}</h1>"]
    rmse = model.test_rmse(ds)
    parts.append(f"<p>{ds.n_train:,} training points, {ds.n_test:,} test points of <b>{esc(str(ds.y_label))}</b> "
                 f"against <b>{esc(str(ds.x_label))}</b>; q = {kf.kernel.q} hyperparameters"
                 + (f"; test RMSE {rmse:.4g}" if rmse is not None else "") + ".</p>")
    approx = model.approximation
    if approx is not None and not approx.exact:
        parts.append(f'<p class="approximation">Fitted with an exact GP on {approx.n_used:,} of {approx.n_total:,} '
                     f"training points: the most recent {approx.recent:,} and {approx.history:,} spread over the "
                     "earlier history (a subset of data). Forecasts, components and the baselines below condition "
                     "on the same points.</p>")
    calibrated = kf.calibration.describe()
    if calibrated:
        parts.append(f'<p class="calibration">{esc(calibrated)}</p>')
    combined = kf.combination.describe()
    if combined:
        parts.append(f'<p class="combination">{esc(combined)}'
                     + (" Its test RMSE is the <i>forecast</i> row of the comparison with classical forecasters."
                        if kf.combination.combined else "") + "</p>")
    glance = verdict(comparison.table if comparison is not None and ds.n_test else None, kf.combination,
                     kernel_summary(comps, "years" if ds.x_kind == "date" else str(ds.x_label)) if comps else None,
                     n_test=ds.n_test)
    parts.append('<div class="verdict"><h2>At a glance</h2><ul>'
                 + "".join(f"<li><b>{esc(label)}.</b> {esc(text)}</li>" for label, text in glance.lines())
                 + "</ul></div>")
    if comps:
        short = "".join(f"<li>{esc(c.sentence[0].upper() + c.sentence[1:])} ({c.explained:.0%} of the variance)"
                        "</li>" for c in comps)
        parts.append(f"<p>In short, the kernel says the series is the sum of:</p><ul>{short}"
                     f"<li>noise with standard deviation {noise_sd:.3g} {esc(str(ds.y_label))}.</li></ul>")
    return parts


def _components_html(comps: list, noise_sd: float, xs: object, split: object, ds: Dataset,
                     plot: _Plots) -> list[str]:
    """The kernel's terms, each with its figure, and the noise."""
    esc = html.escape
    parts = ["<h2>What the kernel says</h2><p>The kernel written as a sum of terms (products distributed "
             "over sums); each term is an independent part of the series. Shares are of the training "
             "data's variance; each sentence is read from the term's kernel function.</p>"]
    for i, c in enumerate(comps):
        parts.append(f"<h3>{i + 1}. {esc(c.sentence[0].upper() + c.sentence[1:])} "
                     f"({c.explained:.0%} of the variance)</h3>")
        parts.append(plot(component_figure(c, xs, split)))
        parts.append(f"<p><code>{esc(c.kernel.infix)}</code></p>")
    if comps:
        parts.append(f"<h3>Noise</h3><p>Standard deviation {noise_sd:.4g} {esc(str(ds.y_label))}.</p>")
    return parts


def _residuals_html(model: FittedModel, ds: Dataset, plot: _Plots) -> list[str]:
    """The residual checks: how many autocorrelations stand out, and their figures."""
    chk = residual_checks(model, ds)
    outside = int(np.sum(np.abs(chk["acf"]) > 2 / math.sqrt(max(chk["residual"].size, 1))))
    which = (f" Residuals of the most recent {chk['residual'].size:,} of the {ds.n_train:,} training points."
             if chk["residual"].size < ds.n_train else "")
    parts = [f"<h2>Residual checks</h2><p>{outside} of {chk['acf'].size} autocorrelations lie outside "
             f"±2/√n (about 1 in 20 would by chance).{which}</p>"]
    parts += [plot(f) for f in _residual_figures(chk, ds)]
    return parts


def _kernel_html(kf: KernelFile, model: FittedModel) -> str:
    """The kernel's forms, its hyperparameters and the scores its file holds."""
    esc = html.escape
    k = kf.kernel
    scores = {key: v for key, v in kf.scores.items() if isinstance(v, (int, float)) and v is not None}
    table = hyperparameter_table(k, model.theta, model.log_noise, model.norm)
    return ("<h2>The kernel</h2>"
            f'<p class="formula">Simplified (for reading): <code>{esc(str(simplified(k)))}</code></p>'
            f'<p class="formula">As stored: <code>{esc(k.infix)}</code></p>'
            f'<p class="formula">Expression: <code>{esc(k.prefix)}</code></p>'
            + pd.DataFrame(table).to_html(index=False, border=0, classes="hp")
            + ("<p>Scores in the kernel file: " + ", ".join(f"{esc(a)} = {b:.6g}" for a, b in scores.items())
               + "</p>" if scores else ""))
