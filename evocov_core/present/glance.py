"""Results at a glance: the verdict on a search's forecast, in a few sentences, and table cells.

:func:`verdict` reads the comparison of every forecast of the test part
(:func:`evocov_core.present.compare.forecast_comparison`), the forecast combination
(:class:`~evocov_core.forecast.combination.Combination`) and the kernel's components
(:func:`evocov_core.present.decompose.decompose`) and says, one line each: how the forecast's test RMSE
compares with AutoETS, AutoARIMA and seasonal naive on the same split; how often the test points
fall in its 95 % interval; the kernel in one phrase; who forecasts, with which weights. The
Results page shows it first, the report too. :func:`text_cells` writes numbers for a table with
``—`` where there is none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from evocov_core.fitting.optimize import finite_or_none
from evocov_core.forecast.combination import KERNEL, Combination

__all__ = ["MISSING", "VERDICT_BASELINES", "Verdict", "compared_in_words", "forecast_row", "kernel_phrase",
           "kernel_weight", "text_cells", "verdict", "weight_sentence"]

#: What an empty table cell shows.
MISSING = "—"
#: The classical forecasters the verdict compares the forecast with, and how it names them.
VERDICT_BASELINES = (("AutoETS", "AutoETS"), ("AutoARIMA", "AutoARIMA"), ("SeasonalNaive", "seasonal naive"))




def text_cells(values: Iterable[object], spec: str = ".4g") -> list[str]:
    """Numbers written with ``spec`` for a table, :data:`MISSING` where there is none (None, NaN, ±inf,
    not a number): a table then never shows ``None`` or ``nan``."""
    out = []
    for v in values:
        f = None if isinstance(v, bool) else finite_or_none(v)
        out.append(MISSING if f is None else format(f, spec))
    return out


def _pct(v: float) -> str:
    return f"{round(100 * v)} %"


def compared_in_words(ratio: float, name: str) -> str:
    """``"12 % lower than AutoETS (ratio 0.88)"``: a ratio of test RMSEs (ours over theirs) in words."""
    if abs(ratio - 1.0) < 0.005:
        return f"the same as {name} (ratio {ratio:.2f})"
    word = "lower" if ratio < 1 else "higher"
    return f"{_pct(abs(1.0 - ratio))} {word} than {name} (ratio {ratio:.2f})"


def forecast_row(table: pd.DataFrame, combination: Combination | None = None) -> pd.Series | None:
    """The comparison's row of the search's forecast: the combined one when the forecast averages the
    kernel's with classical forecasts and that row is scored, else the kernel's (``this kernel``)."""
    if combination is not None and combination.combined:
        rows = table[(table["kind"] == "combined") & (table["status"] == "ok")]
        if len(rows):
            return rows.iloc[0]
    rows = table[table["method"] == "this kernel"]
    return rows.iloc[0] if len(rows) else None


def weight_sentence(combination: Combination | None) -> str:
    """Who forecasts, in words: ``"The kernel carries 41 % of the forecast; AutoETS 35 %, AutoTheta 24 %."``,
    ``"The kernel alone forecasts."``, or, when the guard left the kernel out, the members that do."""
    if combination is None or not combination.combined:
        return "The kernel alone forecasts."
    pairs = list(zip(combination.members, combination.member_weights, strict=True))
    others = ", ".join(f"{m} {_pct(w)}" for m, w in pairs[1:] if w > 0)
    kernel_w = pairs[0][1]
    if kernel_w <= 0:
        return (f"The classical members forecast ({others}); the kernel's forecast was left out"
                + (f": {combination.guard}" if combination.guard else "") + ". The kernel still explains the series.")
    return f"The kernel carries {_pct(kernel_w)} of the forecast; {others}."


@dataclass(frozen=True)
class Verdict:
    """The verdict on a search's forecast, one sentence each (None where it cannot be said yet).

    Attributes
    ----------
    forecast : str or None
        Test RMSE against :data:`VERDICT_BASELINES` on the same split.
    coverage : str or None
        Share of the test points inside the 95 % interval.
    kernel : str or None
        The kernel in one phrase (:func:`evocov_core.present.decompose.kernel_summary`).
    who : str
        Who forecasts, with the weights (:func:`weight_sentence`).
    ratios : dict
        Baseline name -> ratio of test RMSEs (ours / theirs), for those scored.
    waiting : tuple of str
        Baselines still running.
    """

    forecast: str | None
    coverage: str | None
    kernel: str | None
    who: str
    ratios: dict
    waiting: tuple[str, ...] = ()

    def lines(self) -> list[tuple[str, str]]:
        """``(label, sentence)`` pairs to show, in order, those that exist."""
        out = [("Forecast", self.forecast), ("Intervals", self.coverage), ("The kernel", self.kernel),
               ("Who forecasts", self.who)]
        return [(k, v) for k, v in out if v]


def verdict(table: pd.DataFrame | None, combination: Combination | None = None, kernel_phrase: str | None = None,
            *, n_test: int = 0, baselines: Sequence[tuple[str, str]] = VERDICT_BASELINES) -> Verdict:
    """The verdict on a search's forecast.

    Parameters
    ----------
    table : DataFrame or None
        :attr:`Comparison.table <evocov_core.present.compare.Comparison.table>` (None: not made, e.g. no test part).
    combination : Combination, optional
        The search's forecast combination (the kernel's own forecast when None).
    kernel_phrase : str, optional
        :func:`~evocov_core.present.decompose.kernel_summary` of the kernel.
    n_test : int
        Test points (for the sentences).
    baselines : sequence of (method, name)
        Rows of ``table`` to compare with, and their names in words.

    Returns
    -------
    Verdict
    """
    who = weight_sentence(combination)
    kernel = f"{kernel_phrase[0].upper()}{kernel_phrase[1:]}." if kernel_phrase else None
    if table is None or not len(table):
        return Verdict(None, None, kernel, who, {})
    row = forecast_row(table, combination)
    mine = finite_or_none(row["test_rmse"]) if row is not None else None
    ratios: dict[str, float] = {}
    words, waiting = [], []
    for method, name in baselines:
        r = table[table["method"] == method]
        if not len(r):
            continue
        theirs = finite_or_none(r.iloc[0]["test_rmse"])
        status = str(r.iloc[0]["status"])
        if status == "running":
            waiting.append(name)
            words.append(f"{name}: running…")
        elif mine is not None and theirs is not None and theirs > 0:
            ratios[name] = mine / theirs
            words.append(compared_in_words(mine / theirs, name))
        else:
            words.append(f"{name}: no forecast ({status})")
    forecast = None
    if mine is not None:
        what = "The forecast" if row is not None and row["kind"] == "combined" else "The kernel's forecast"
        pts = f" over the {n_test} test points" if n_test else ""
        forecast = f"{what}'s test RMSE is {mine:.4g}{pts}" + (": " + "; ".join(words) if words else "")
        forecast += "" if forecast.endswith("…") else "."
    elif row is not None and str(row["status"]) == "running":
        forecast = "The forecast is being scored…"
    coverage = None
    own = table[table["method"] == "this kernel"]
    cov = finite_or_none(own.iloc[0]["coverage_95"]) if len(own) else None
    if cov is not None:
        note = ""
        if cov < 0.8:
            note = ": too narrow, the errors are larger than the intervals say"
        elif cov >= 0.85:
            note = ": about as many as a 95 % interval should hold" if cov <= 0.99 or n_test < 40 else ": wide"
        combined = row is not None and row["kind"] == "combined"
        coverage = (f"{_pct(cov)} of the test points fall inside the kernel's 95 % interval{note}"
                    + (" (the combined forecast is a point forecast: the interval is the kernel's)" if combined else "")
                    + ".")
    return Verdict(forecast, coverage, kernel, who, ratios, tuple(waiting))


def kernel_weight(combination: Combination | None) -> float:
    """The kernel's share of the forecast (1 for its own forecast)."""
    if combination is None or not combination.combined:
        return 1.0
    return float(dict(zip(combination.members, combination.member_weights, strict=True)).get(KERNEL, 0.0))


def kernel_phrase(model: object, ds: object) -> str | None:
    """The kernel in one phrase (:func:`evocov_core.present.decompose.kernel_summary` of its components on ``ds``);
    None for data of more than one input or a kernel whose components cannot be computed."""
    from evocov_core.present.decompose import kernel_summary
    from evocov_core.present.figures import components_data

    if ds.x.shape[1] != 1:  # type: ignore[attr-defined]
        return None
    try:
        comps = components_data(model, ds).components  # type: ignore[arg-type]
    except Exception:  # a numerically broken kernel: no phrase, the page goes on
        return None
    unit = "years" if ds.x_kind == "date" else str(ds.x_label)  # type: ignore[attr-defined]
    return kernel_summary(comps, unit)
