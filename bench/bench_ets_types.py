"""Where the kernel loses to AutoETS: the series grouped by the model AutoETS chooses there.

A diagnosis for issue 55, not a rule. AutoETS chooses, by AICc on the training part, an error
(additive ``A`` or multiplicative ``M``: noise that grows with the level), a trend (``N``, ``A``,
damped ``Ad``) and a season (``N``, ``A``, ``M``). The GP forms of the searches' seeds write the
additive models; a multiplicative season is written as a product with a periodic term, but every
kernel has one constant noise variance. This script refits AutoETS on each series' training part as
the product does (statsforecast, the season the folder's ``classical.csv`` records, none above
``SETTINGS["AutoETS"]``' longest season; its last training points), records the model it
chooses, and reports the kernel's and the forecast's test RMSE over AutoETS's, grouped by that model's
error and trend: the geometric mean over the series of each series' mean log ratio over its seeds,
with the standard error of that mean. Nothing here is used by a search.

Usage (from the repository root; a minute)::

    python -m bench.bench_ets_types --folder bench/results/corpus/quick-59-oc-s0 \\
        --folder bench/results/corpus/quick-59-oc-s1 --data-dir bench/corpus/series --name corpus

Writes ``bench/results/bench_ets_types__<name>.md`` and ``….csv`` (one row per series).
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, folders_trials, limit_threads, write_report
from bench.bench_choice import add_folder_study_args, folder_setup
from bench.common import load_series, md_table
from evocov_core.data import Dataset
from evocov_core.forecast.classical import SETTINGS

#: What the product gives AutoETS: its longest season and its last training points.
ETS = SETTINGS["AutoETS"]


def primary_season(seasons: str) -> int:
    """The season AutoETS is given from a ``classical.csv`` ``seasons`` cell ("none", "12", "7, 365"):
    the first, or 1 when there is none or it is longer than statsforecast's ETS fits."""
    first = str(seasons).split(",")[0].strip()
    m = int(first) if first.isdigit() else 1
    return m if 1 < m <= (ETS.max_season or m) else 1


def ets_parts(method: str) -> tuple[str, str, str]:
    """``"ETS(M,Ad,N)"`` -> ``("M", "Ad", "N")``: error, trend, season."""
    inner = method.strip()
    if not (inner.startswith("ETS(") and inner.endswith(")")):
        raise ValueError(f"not an ETS model name: {method!r}")
    parts = tuple(p.strip() for p in inner[4:-1].split(","))
    if len(parts) != 3:
        raise ValueError(f"not an ETS model name: {method!r}")
    return parts  # type: ignore[return-value]


def autoets_method(y: np.ndarray, season: int) -> str:
    """The model statsforecast's AutoETS chooses on ``y`` (its last points, as the product fits it)."""
    from statsforecast.models import AutoETS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = AutoETS(season_length=season).fit(np.asarray(y, dtype=np.float64)[-(ETS.max_train or 0):])
    return str(fit.model_["method"])


def twin_ratio(ds: Dataset, season: int, error: str, trend: str, seasonal: str) -> float:
    """Test RMSE of ETS with AutoETS's trend and season but the other error (``A`` for ``M``) over that of
    AutoETS's own model, both fitted as :func:`autoets_method` fits (NaN where statsforecast refuses the
    model): how much of AutoETS's lead comes from its error's form alone."""
    from statsforecast.models import AutoETS

    y = np.asarray(ds.y[ds.train], dtype=np.float64)[-(ETS.max_train or 0):]
    h = int((~ds.train).sum())
    out = []
    for err in (error, "M" if error == "A" else "A"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = AutoETS(season_length=season, model=err + trend[0] + seasonal, damped=trend == "Ad")
                mean = model.fit(y).predict(h)["mean"]
        except ValueError:  # statsforecast forbids some combinations (additive error, multiplicative season)
            return math.nan
        out.append(float(np.sqrt(np.mean((mean - ds.y[~ds.train]) ** 2))))
    return out[1] / out[0]


def grouped(per_series: pd.DataFrame, by: list[str]) -> list[list[str]]:
    """Rows of the report's table: per group, its series, and the kernel's and the forecast's geometric
    mean ratio to AutoETS with the standard error of the mean log."""
    rows = []
    for key, g in per_series.groupby(by):
        cells = [" ".join(key) if isinstance(key, tuple) else str(key), str(len(g))]
        for col in ("log_kernel", "log_forecast", "log_twin"):
            v = g[col].dropna()
            se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else math.nan
            cells.append(f"{math.exp(v.mean()):.3f} ({se:.3f})" if len(v) else "-")
        rows.append(cells)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_ets_types")
    args = ap.parse_args()
    threads = limit_threads()
    data_dir, _config = folder_setup(args.folder[0], args.data_dir, args.variant)
    trials = folders_trials(args.folder, args.variant)
    classical = pd.read_csv(args.folder[0] / "classical.csv")
    ets = classical[classical.model == "AutoETS"].set_index("series")
    trials = trials.assign(log_kernel=np.log(trials.test_rmse / trials.series.map(ets.test_rmse)),
                           log_forecast=np.log(trials.forecast_test_rmse / trials.series.map(ets.test_rmse)))
    rows = []
    for series, g in trials.groupby("series"):
        ds = load_series(data_dir, series)
        method = autoets_method(ds.y[ds.train], primary_season(ets.seasons[series]))
        error, trend, season = ets_parts(method)
        twin = twin_ratio(ds, primary_season(ets.seasons[series]), error, trend, season)
        rows.append({"series": series, "n_train": int(ds.train.sum()), "autoets": method, "error": error,
                     "trend": trend, "season": season, "seeds": len(g),
                     "log_kernel": float(g.log_kernel.mean()), "log_forecast": float(g.log_forecast.mean()),
                     "log_twin": math.log(twin) if twin > 0 else math.nan})
    per = pd.DataFrame(rows)
    name = args.name or args.folder[0].name
    per.to_csv(RESULTS_DIR / f"bench_ets_types__{name}.csv", index=False)
    head = ["AutoETS chooses", "series", "kernel × AutoETS (SE)", "forecast × AutoETS (SE)",
            "the other error × AutoETS (SE)"]
    tables = [md_table(head, grouped(per, by), "lrrrr") for by in (["error"], ["error", "trend"], ["season"])]
    write_report(f"bench_ets_types__{name}", "Where the kernel loses to AutoETS, by the model AutoETS chooses", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(args.folder) > 1)} {', '.join(f'`{f}`' for f in args.folder)}, variant `{args.variant}`, "
        f"{len(per)} series, {len(trials)} trials.", *tables], threads)


if __name__ == "__main__":
    main()
