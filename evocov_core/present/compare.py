"""One table of forecasts of the test part: a GP kernel, the GP baselines and classical forecasters.

Every method forecasts the same test points from the same training part, and is scored the
same way in the data's units (:mod:`evocov_core.fitting.metrics`): test RMSE of the mean, coverage of
the 95 % interval, CRPS and the interval score (α = 0.05).

* A **GP** (a kernel file, the SE and GPSS baselines of :mod:`evocov_core.searches.gp_baselines`) predicts
  a normal at each test point: the posterior mean and the latent variance plus the noise
  variance (:meth:`~evocov_core.fitting.model.FittedModel.predict`). Its interval is mean ± 1.96 σ
  and its CRPS the normal's closed form.
* A **classical** forecaster (:mod:`evocov_core.forecast.classical`) gives a mean and a 95 % interval.
  Its CRPS is that of the normal the interval implies: centred on the mean, with
  σ = (upper − lower) / (2 · 1.96). That is exact for the models' normal intervals and an
  approximation otherwise.

:func:`forecast_comparison` is a pure function of the forecasts it is given; :func:`compare`
fits everything (seeded) and calls it: ``compare(kernel_file, dataset)`` is the whole thing.
A page that computes the rows in the background gives the ones not ready yet as ``running``
rows (:meth:`~evocov_core.present.gp_comparison.Compared.waiting`,
:func:`~evocov_core.forecast.classical.running_forecasts`). :func:`forecast_scores` scores one GP's
forecast alone (the accuracy benchmark's coverage and CRPS columns).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from evocov_core.compute.timed import one_line
from evocov_core.data.dataset import Dataset
from evocov_core.fitting.gp import NumericalFailure
from evocov_core.fitting.metrics import Z95, coverage, crps_normal, interval_score, rmse
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.forecast.classical import (
    DEFAULT_TIME_LIMIT,
    ClassicalForecast,
    ClassicalForecasts,
    classical_forecasts,
)
from evocov_core.forecast.combination import Combination
from evocov_core.present.gp_comparison import Compared, FittedBaseline, compare_with_baselines
from evocov_core.runs.kernel_file import KernelFile

__all__ = ["COLUMNS", "Z95", "Comparison", "ForecastScores", "MethodForecast", "compare", "forecast_comparison",
           "forecast_scores"]

Array = NDArray[np.float64]


#: The table's columns, in order.
COLUMNS = ("method", "kind", "test_rmse", "coverage_95", "crps", "interval_score", "seconds", "status", "reason",
           "best", "details")


@dataclass(frozen=True)
class MethodForecast:
    """One method's forecast of the test part, for drawing it.

    Attributes
    ----------
    method : str
        ``"this kernel"``, ``"SE"``, ``"GPSS"``, ``"AutoARIMA"``...
    kind : str
        ``"GP"``, ``"classical"`` or ``"combined"`` (the search's forecast when it averages the
        kernel's with classical ones).
    x : ndarray of shape (h,)
        Test inputs, original units.
    mean : ndarray of shape (h,) or None
        None when the method has no forecast (failed, timed out, skipped).
    lower, upper : ndarray of shape (h,) or None
        The 95 % interval.
    sd : ndarray of shape (h,) or None
        Predictive standard deviation: a GP's, or the one a classical interval implies.
    """

    method: str
    kind: str
    x: Array
    mean: Array | None
    lower: Array | None
    upper: Array | None
    sd: Array | None


@dataclass(frozen=True)
class Comparison:
    """The comparison table and what it was made from.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per method, columns :data:`COLUMNS`: ``method``, ``kind`` (GP / classical),
        ``test_rmse``, ``coverage_95`` (share of test points inside the 95 % interval),
        ``crps``, ``interval_score``, ``seconds``, ``status`` (ok, failed, timeout, skipped,
        running), ``reason`` (one line when not ok), ``best`` (True on the lowest test RMSE),
        ``details`` (the kernel, or the seasons and points a classical model saw). Numbers
        are NaN where they do not exist.
    forecasts : tuple of MethodForecast
        In the table's order.
    baselines : tuple of Compared
        The GP rows (this kernel first) with their BIC and tail scores, when :func:`compare`
        fitted them.
    classical : ClassicalForecasts or None
    """

    table: pd.DataFrame
    forecasts: tuple[MethodForecast, ...]
    baselines: tuple[Compared, ...] = ()
    classical: ClassicalForecasts | None = None


class _Made(NamedTuple):
    """A forecast of the comparison with how it went (a tuple: ``fc, status, reason = _gp(...)``).

    Attributes
    ----------
    forecast : MethodForecast
    status : str
        ``ok``, ``failed``, ``running`` or ``skipped``.
    reason : str
        Why it is not ``ok`` (empty when it is).
    """

    forecast: MethodForecast
    status: str
    reason: str


def _gp(method: str, model: FittedModel | ModelAverage | None, ds: Dataset, why: str,
        status: str = "") -> _Made:
    """The GP's forecast of the test part, its status and reason."""
    x = ds.X_test[:, 0].copy()
    none = MethodForecast(method, "GP", x, None, None, None, None)
    if status in ("running", "skipped"):
        return _Made(none, status, why)
    if model is None:
        return _Made(none, "failed", f"{method}: {why or 'no model'}")
    try:
        with np.errstate(all="ignore"):
            pred = model.predict(ds.X_train, ds.y_train, ds.X_test)
    except (NumericalFailure, np.linalg.LinAlgError, ArithmeticError) as exc:
        return _Made(none, "failed", f"{method}: {one_line(exc)}")
    if not (np.all(np.isfinite(pred.mean)) and np.all(np.isfinite(pred.std))):
        return _Made(none, "failed", f"{method}: the forecast is not finite")
    half = Z95 * pred.std
    return _Made(MethodForecast(method, "GP", x, pred.mean, pred.mean - half, pred.mean + half, pred.std), "ok", "")


def _classical(f: ClassicalForecast, x: Array) -> MethodForecast:
    sd = None
    if f.lower is not None and f.upper is not None:
        sd = np.maximum(f.upper - f.lower, 0.0) / (2 * Z95)  # the normal the interval implies
    return MethodForecast(f.name, "classical", x, f.mean, f.lower, f.upper, sd)


class _Scores(NamedTuple):
    """A forecast's scores on the test part (NaN where the forecast lacks what one needs).

    Attributes
    ----------
    test_rmse, coverage_95, crps, interval_score : float
        As the columns of :class:`ForecastScores`.
    """

    test_rmse: float
    coverage_95: float
    crps: float
    interval_score: float


_NO_SCORES = _Scores(math.nan, math.nan, math.nan, math.nan)


def _scores(y: Array, fc: MethodForecast) -> _Scores:
    """test RMSE, coverage, CRPS, interval score (NaN where the forecast lacks what they need)."""
    if fc.mean is None or not y.size:
        return _NO_SCORES
    err = rmse(y, fc.mean)
    crps = crps_normal(y, fc.mean, fc.sd) if fc.sd is not None else math.nan
    if fc.lower is None or fc.upper is None:
        return _Scores(err, math.nan, crps, math.nan)
    return _Scores(err, coverage(y, fc.lower, fc.upper), crps, interval_score(y, fc.lower, fc.upper, 0.05))


def _num(v: float | None) -> float:
    return float(v) if v is not None and math.isfinite(v) else math.nan


def _combined(combination: Combination, kernel: MethodForecast, kernel_status: str,
              classical: ClassicalForecasts | None) -> _Made:
    """The search's forecast when it averages the kernel's with classical ones: a point forecast (no
    interval), with the status of the parts it is made of."""
    method = f"forecast ({combination.label})"
    none = MethodForecast(method, "combined", kernel.x, None, None, None, None)
    if (kernel_status != "ok" or kernel.mean is None) and combination.member_weights[0] > 0:
        return _Made(none, "failed", f"{method}: the kernel has no forecast")
    if classical is None:
        return _Made(none, "skipped", f"{method}: the classical forecasts were not made")
    parts = [classical.get(m) for m in combination.models]
    if any(f is not None and f.status == "running" for f in parts):
        return _Made(none, "running", "")
    missing = [m for m, f in zip(combination.models, parts, strict=True) if f is None or not f.ok]
    if missing:
        return _Made(none, "failed", f"{method}: {' and '.join(missing)} has no forecast")
    mean = combination.mean(kernel.mean, {f.name: f.mean for f in parts if f is not None})
    return _Made(MethodForecast(method, "combined", kernel.x, mean, None, None, None), "ok", "")


def forecast_comparison(ds: Dataset, kernel: KernelFile | FittedModel | None, *,
                        baselines: Sequence[Compared] = (),
                        classical: ClassicalForecasts | None = None, kernel_seconds: float | None = None,
                        combination: Combination | None = None) -> Comparison:
    """The comparison table of a kernel, GP baselines and classical forecasts on ``ds``'s test part.

    Pure: the same inputs give the same table. Nothing is fitted here but the posteriors of
    the given GP models.

    Parameters
    ----------
    ds : Dataset
        One input column; its test part is what every method forecast.
    kernel : KernelFile, FittedModel or None
        The kernel compared (row ``"this kernel"``); a kernel file's values are read in its own
        normalisation (else ``ds``'s). None: no such row (the classical forecasters alone).
    baselines : sequence of Compared
        Further GP rows, e.g. ``compare_with_baselines(...)[1:]`` (SE, GPSS); a row without a
        model is a failed row with its note as the reason, unless its ``status`` says
        ``running`` or ``skipped``.
    classical : ClassicalForecasts, optional
        From :func:`~evocov_core.forecast.classical.classical_forecasts` on the same ``ds``.
    kernel_seconds : float, optional
        The kernel's cost (e.g. its search's seconds), for the ``seconds`` column.
    combination : Combination, optional
        Whether the search's forecast averaged the kernel's with classical forecasts
        (:mod:`evocov_core.forecast.combination`; default: a kernel file's own). When it did, a row
        ``forecast (kernel 0.6 + …)`` (kind ``combined``) follows the kernel's: the weighted average of
        its forecast and those of ``classical``, a point forecast without an interval.

    Returns
    -------
    Comparison
    """
    if ds.x.shape[1] != 1:
        raise ValueError("the forecast comparison is for one input (time)")
    if classical is not None and (classical.x.shape != (ds.n_test,)
                                  or not np.array_equal(classical.x, ds.X_test[:, 0])):
        raise ValueError("the classical forecasts are for another test part than this data set's")
    if combination is None and isinstance(kernel, KernelFile):
        combination = kernel.combination
    model = (kernel if kernel is None or isinstance(kernel, FittedModel)
             else kernel.model(fallback_norm=ds.norm))
    y = ds.y_test
    rows: list[dict] = []
    forecasts: list[MethodForecast] = []

    def add(fc: MethodForecast, status: str, reason: str, seconds: float | None, details: str) -> None:
        err, cov, crps, score = _scores(y, fc) if status == "ok" else _NO_SCORES
        rows.append({"method": fc.method, "kind": fc.kind, "test_rmse": err, "coverage_95": cov, "crps": crps,
                     "interval_score": score, "seconds": _num(seconds), "status": status, "reason": reason,
                     "best": False, "details": details})
        forecasts.append(fc)

    if model is not None:
        own, status, reason = _gp("this kernel", model, ds, "")
        add(own, status, reason, kernel_seconds, model.kernel.infix)
        if combination is not None and combination.combined:
            add(*_combined(combination, own, status, classical), kernel_seconds,
                "equal-weight average, chosen on four earlier origins" if not combination.weights
                else "weighted by the errors from four earlier origins")
    for row in baselines:
        add(*_gp(row.name, row.model, ds, row.note, row.status), row.seconds, row.expression)
    if classical is not None:
        for f in classical.forecasts:
            add(_classical(f, classical.x), f.status, f.reason, f.seconds, f.settings)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    finite = table["test_rmse"].notna()
    if finite.any():
        table.loc[finite & (table["test_rmse"] == table.loc[finite, "test_rmse"].min()), "best"] = True
    return Comparison(table, tuple(forecasts), tuple(baselines), classical)


class ForecastScores(NamedTuple):
    """How one forecast of a test part scores (NaN where it cannot be scored)."""

    test_rmse: float
    coverage_95: float
    """Share of the test points inside the 95 % interval."""
    crps: float
    interval_score: float
    status: str
    """``ok`` or ``failed``."""
    reason: str


def forecast_scores(model: FittedModel | ModelAverage, ds: Dataset) -> ForecastScores:
    """Test RMSE, 95 % coverage, CRPS and interval score of a GP's forecast of ``ds``'s test part.

    The predictive normal at each test point: the posterior mean, and the latent variance
    plus the noise variance (:meth:`~evocov_core.fitting.model.FittedModel.predict`), in the data's
    units. Never raises for numerical trouble: a forecast that cannot be made is ``failed``
    with NaN scores.

    Parameters
    ----------
    model : FittedModel or ModelAverage
    ds : Dataset
        One input column, with a test part.

    Returns
    -------
    ForecastScores
    """
    fc, status, reason = _gp("model", model, ds, "")
    if status != "ok":
        return ForecastScores(math.nan, math.nan, math.nan, math.nan, status, reason.removeprefix("model: "))
    return ForecastScores(*_scores(ds.y_test, fc), status, "")


def compare(kf: KernelFile, ds: Dataset, *, baseline_budget: float = 20.0, seed: int = 0,
            season_lengths: Sequence[int] | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
            workers: int | None = 1, classical: bool = True,
            classical_done: ClassicalForecasts | None = None, se_done: FittedBaseline | None = None,
            gpss_done: FittedBaseline | None = None) -> Comparison:
    """Fit the SE and GPSS baselines and the classical forecasters on ``ds``, and compare with ``kf``.

    Parameters
    ----------
    kf : KernelFile
    ds : Dataset
        One input column, split into training and test parts.
    baseline_budget : float
        Seconds for the GPSS search (0 leaves it out; the SE fit is always made).
    seed : int
        Seeds the GP baselines (the classical models are deterministic): same inputs, same table.
    season_lengths : sequence of int, optional
        Seasons for the classical models, in steps (default: read from the x spacing).
    time_limit : float
        Seconds per classical model.
    workers : int or None
        Processes for the GPSS search (1 = in this process; the classical forecasters then run
        at the same time, in their own child process).
    classical : bool
        False leaves the classical forecasters out.
    classical_done : ClassicalForecasts, optional
        The classical forecasts of ``ds`` made already (the dashboard's Results page runs them
        in the background): used as they are, with their own seasons and time limit, instead of
        fitting them again (27 s on the 100,000-point series of ``bench_dashboard_long``).
    se_done, gpss_done : FittedBaseline, optional
        GP baselines fitted already, scored as they are
        (:func:`~evocov_core.present.gp_comparison.compare_with_baselines`).

    Returns
    -------
    Comparison
        With ``baselines`` (this kernel, SE, GPSS: BIC, tail score) and ``classical``.
    """
    fc = classical_done
    pending: Future | None = None
    if classical and fc is None:
        # The classical models run in a child process of their own (:func:`classical_forecasts`), so a
        # thread here waits for them while this one fits the GPs in-process: on two cores the classical
        # forecasters (23 s on the 100,000-point series of bench_dashboard_long) no longer add to the
        # baselines' time. With GPSS workers of its own, the cores are taken: one after the other.
        run = partial(classical_forecasts, ds, season_lengths=season_lengths, time_limit=time_limit)
        if workers == 1:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evocov-classical")
            pending = pool.submit(run)
            pool.shutdown(wait=False)
        else:
            fc = run()
    rows = compare_with_baselines(kf, ds, baseline_budget=baseline_budget, seed=seed, workers=workers,
                                  se_done=se_done, gpss_done=gpss_done)
    if pending is not None:  # (should the baselines raise, the thread ends on its own)
        fc = pending.result()
    out = forecast_comparison(ds, rows[0].model or kf, baselines=rows[1:], classical=fc,
                              kernel_seconds=rows[0].seconds, combination=kf.combination)
    return Comparison(out.table, out.forecasts, tuple(rows), fc)
