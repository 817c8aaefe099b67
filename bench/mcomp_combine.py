"""Fixed combinations of an M-competition run's forecasts, post hoc (issue 70): which averaging rule would have
forecast best on the same series, with nothing rerun.

A ``bench mcomp`` folder keeps every method's forecast of every series (``forecasts.csv.gz``: the mean and the
80 % and 95 % bounds). Here each rule of :data:`RULES` averages its members' forecasts with equal weights (the
intervals as the product pools them: a mixture of the members' normals, each read off its 95 % interval,
:func:`evocov_core.forecast.combination.linear_pool_interval`) and is scored as the benchmark scores a method
(:func:`bench.mcomp.score`). A rule of one member is that method as it ran. Reported per rule: fev's aggregation
against AutoETS, the per-series MASE paired against the product's forecast (``EvoCov``) with the standard error
of the log, sMAPE, pooled coverage, and the 99th percentile of the per-series MASE ratio to AutoETS's.

The kernel a rule averages is the one the run returned under its own preset (its search had the CPU that
preset's forecast stage left it): a rule that changes what the forecast stage fits is measured here up to that.

    python -m bench mcomp-combine --out bench/results/mcomp/<folder>

writes ``<folder>/combine.md`` and prints its summary line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import BenchError, md_table
from bench.mcomp import REFERENCE, Forecast, McSeries, _ratios, fev_ratio, load_set, read_forecasts, score
from evocov_core.fitting.metrics import Z95
from evocov_core.forecast.combination import linear_pool_interval

__all__ = ["RULES", "combine", "main_mcomp_combine", "rule_forecast", "rule_scores"]

Z80 = 1.2815515655446004  # the normal's 90 % quantile: an 80 % interval's half-width in sds

#: Rule name -> the methods it averages with equal weights.
RULES: dict[str, tuple[str, ...]] = {
    "EvoCov": ("EvoCov",),
    "kernel + AutoETS + AutoARIMA + AutoTheta": ("EvoCov-kernel", "AutoETS", "AutoARIMA", "AutoTheta"),
    "kernel + AutoETS + AutoTheta": ("EvoCov-kernel", "AutoETS", "AutoTheta"),
    "kernel + CoraniGP + AutoETS + AutoARIMA + AutoTheta": ("EvoCov-kernel", "CoraniGP", "AutoETS", "AutoARIMA",
                                                            "AutoTheta"),
    "Mean(ETS,ARIMA,Theta)": ("Mean(ETS,ARIMA,Theta)",),
    "EvoCov-kernel": ("EvoCov-kernel",),
    "AutoETS": ("AutoETS",),
}


def rule_forecast(members: Sequence[Forecast]) -> Forecast:
    """The equal-weight average of ``members`` (each of shape (h,)): the means averaged, the bounds those of
    the mixture of their normals (a member's sd read off its 95 % interval). One member: itself."""
    if len(members) == 1:
        return members[0]
    w = np.full(len(members), 1.0 / len(members))
    means = np.array([m.mean for m in members])
    sds = np.array([(m.hi_95 - m.lo_95) / (2 * Z95) for m in members])
    lo95, hi95 = linear_pool_interval(w, means, sds, 0.95)
    lo80, hi80 = linear_pool_interval(w, means, sds, 0.80)
    return Forecast(w @ means, lo80, hi80, lo95, hi95)


def rule_scores(series: Sequence[McSeries], forecasts: pd.DataFrame,
                rules: Mapping[str, Sequence[str]] = RULES) -> pd.DataFrame:
    """One row per series and rule that has every member's forecast: ``stratum, unique_id, method`` (the rule's
    name), ``h`` and :func:`bench.mcomp.score`'s metrics."""
    by_id = {s.unique_id: s for s in series}
    rows = []
    for uid, g in forecasts.groupby("unique_id", sort=True):
        s = by_id.get(str(uid))
        if s is None:
            continue
        have = {m: f.sort_values("ds") for m, f in g.groupby("method")}
        for name, members in rules.items():
            if any(m not in have or len(have[m]) != s.h for m in members):
                continue
            parts = [Forecast(*(have[m][c].to_numpy(dtype=np.float64) for c in Forecast._fields)) for m in members]
            rows.append({"stratum": s.stratum, "unique_id": s.unique_id, "method": name, "h": s.h,
                         **score(s, rule_forecast(parts))})
    return pd.DataFrame(rows)


def _log_ratios(scores: pd.DataFrame, method: str, ref: str) -> pd.Series:
    """The finite logs of the per-series MASE ratios (:func:`bench.mcomp._ratios`): a MASE of 0 has none."""
    with np.errstate(divide="ignore"):
        r = np.log(_ratios(scores, "mase", method, ref))
    return r[np.isfinite(r)]


def _paired(scores: pd.DataFrame, method: str, ref: str) -> tuple[float, float]:
    r = _log_ratios(scores, method, ref)
    if len(r) < 2:
        return math.nan, math.nan
    return float(np.exp(r.mean())), float(r.std(ddof=1) / math.sqrt(len(r)))


def summary(scores: pd.DataFrame, reference: str = "EvoCov") -> pd.DataFrame:
    """Per rule, over the series every rule scored: fev against AutoETS, paired MASE against ``reference``
    (and its SE), sMAPE, the coverages pooled over the test points (as ``bench mcomp``'s report pools them),
    and the p99 of the per-series MASE ratio to AutoETS's."""
    full = scores.groupby("unique_id")["method"].nunique()
    common = scores[scores["unique_id"].isin(full[full == scores["method"].nunique()].index)]
    out = []
    for name in dict.fromkeys(common["method"]):
        _, fev = fev_ratio(common, name, REFERENCE)
        ratio, se = _paired(common, name, reference)
        q = _log_ratios(common, name, REFERENCE)
        rows = common[common["method"] == name]
        out.append({"rule": name, "n": len(rows), "fev_vs_autoets": fev, f"paired_vs_{reference}": ratio,
                    "se_log": se, "smape": rows["smape"].mean(),
                    "cover_80": float(np.average(rows["cover_80"], weights=rows["h"])),
                    "cover_95": float(np.average(rows["cover_95"], weights=rows["h"])),
                    "ratio_p99": float(np.exp(np.percentile(q, 99))) if len(q) else math.nan})
    return pd.DataFrame(out)


def combine(out: Path, which: str = "M3") -> pd.DataFrame:
    """Score :data:`RULES` on the forecasts of the folder ``out``, write ``out/combine.md`` and return the summary."""
    forecasts = read_forecasts(out)
    forecasts = forecasts[forecasts["set"] == which]
    if forecasts.empty:
        raise BenchError(f"{out} holds no forecasts of {which} (forecasts.csv.gz)")
    table = summary(rule_scores(load_set(which), forecasts))
    rows = [[r.rule, f"{r.n}", f"{r.fev_vs_autoets:.3f}", f"{r.paired_vs_EvoCov:.3f} ({r.se_log:.3f})",
             f"{r.smape:.2f}", f"{r.cover_80:.3f}", f"{r.cover_95:.3f}", f"{r.ratio_p99:.2f}"]
            for r in table.itertuples()]
    text = (f"# Fixed combinations of {out.name}, post hoc\n\n"
            f"`python -m bench mcomp-combine --out {out}` (bench/mcomp_combine.py): each rule averages its members' "
            "forecasts with equal weights; the series every rule scored.\n\n"
            + md_table(["rule", "n", "MASE ÷ AutoETS (fev)", "paired MASE ÷ EvoCov (SE of the log)", "sMAPE",
                        "cover 80", "cover 95", "MASE ratio p99"], rows) + "\n")
    (out / "combine.md").write_text(text, encoding="utf-8")
    return table


def main_mcomp_combine(a: object) -> int:
    """``python -m bench mcomp-combine``: write ``combine.md`` and print one summary line."""
    table = combine(Path(a.out), a.set)  # type: ignore[attr-defined]
    print(" ".join(f"{r.rule.replace(' ', '')}_fev={r.fev_vs_autoets:.4f}" for r in table.itertuples()))
    return 0
