"""One series of a panel: its search and forecast, or a named fallback, as one picklable job.

:func:`forecast_series` is what a panel's worker runs for each series (a module-level function of one
:class:`SeriesJob`, so that a process pool or a Dask worker can run it). It never raises for the series'
sake:

* a series the search can serve gets :func:`~evocov_core.forecast.stage.search_and_forecast` on all its
  observed points (no test part) with the panel's settings, in this process (one core: the panel is
  parallel over series), the classical members fitted here too (no child process: a child's start costs
  seconds, AutoETS and AutoTheta on a short series milliseconds), and the forecast of the ``h`` steps
  after it (:func:`~evocov_core.forecast.future.forecast_future`, reusing those members' forecasts);
* a series it cannot serve (fewer than :data:`MIN_SEARCH_POINTS` observed points, a constant, a horizon
  longer than the series) gets seasonal naive (:data:`FALLBACK`), and its row says why;
* a series with no observed value gets no forecast (NaN), and its row says so;
* an exception that is not the data's (a bug) is caught here only so that the other series go on: the
  row's status is ``error`` with the exception's line, and the panel's caller is told
  (:attr:`evocov_core.panel.run.PanelResult.errors`).
"""

from __future__ import annotations

import math
import resource
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri

from evocov_core.compute.timed import one_line
from evocov_core.data.dataset import Dataset
from evocov_core.data.limits import MIN_POINTS, DataError
from evocov_core.fitting.priors import HyperPrior

__all__ = ["FALLBACK", "LEVELS", "MIN_SEARCH_POINTS", "SeriesJob", "SeriesOutcome", "Status", "forecast_series"]

Array = NDArray[np.float64]

#: The intervals every forecast gives, in percent (statsforecast's ``level``).
LEVELS = (80, 95)
#: A series needs at least this many observed points for a search (a single search's own minimum).
MIN_SEARCH_POINTS = MIN_POINTS
#: The forecast of a series the search cannot serve.
FALLBACK = "SeasonalNaive"


class Status:
    """What a series' row says happened (strings, as ``series.csv`` holds them)."""

    OK = "ok"
    FALLBACK = "fallback"
    NO_DATA = "no_data"
    ERROR = "error"


@dataclass(frozen=True, eq=False)
class SeriesJob:
    """Everything one series' search and forecast need: picklable, seeded, independent of where it runs.

    Attributes
    ----------
    uid : str
    x, y : ndarray of shape (n,)
        Observed times (the panel's units) and values.
    x_kind, x_label : str
        As a :class:`~evocov_core.data.Dataset` takes them (``"date"`` gives calendar seasons;
        ``x_label="year"`` reads numbers as years).
    h : int
        Steps to forecast after the last observation.
    preset : str
        A search preset (:data:`evocov_core.searches.PRESETS`).
    settings : mapping of str to object
        Search settings over the preset's.
    seed : int
    season_lengths : tuple of int
        Seasons given to the classical members and the fallback (empty: read from the spacing).
    missing : int
        Values missing in the table (dropped), for the row.
    step : float
        The panel's usual step (x units): where a one-point series' forecast steps go.
    describe : callable, optional
        ``describe(model, dataset) -> str or None``, the kernel in words for the row (a module-level
        function, picklable by reference; the presentation layer's
        :func:`~evocov_core.present.glance.kernel_phrase` when the front door or the command line runs the panel).
    prior : HyperPrior, optional
        The prior the panel learned from its series (:mod:`evocov_core.panel.priors`), which the setting
        ``priors="panel"`` names: made the process's before the search.
    covariates : tuple of str
        The panel's covariates with known futures (:mod:`evocov_core.forecast.covariates`); empty: none.
    c : ndarray of shape (n, k), optional
        Their values at ``x``.
    future_x : ndarray of shape (h,), optional
        The times the forecast is for (the future table's), instead of the next ``h`` steps.
    future_c : ndarray of shape (h, k), optional
        The covariates' values at ``future_x``.
    """

    uid: str
    x: Array
    y: Array
    x_kind: str
    x_label: str
    h: int
    preset: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    season_lengths: tuple[int, ...] = ()
    missing: int = 0
    step: float = 1.0
    describe: Callable[[Any, Dataset], str | None] | None = None
    prior: HyperPrior | None = None
    covariates: tuple[str, ...] = ()
    c: Array | None = None
    future_x: Array | None = None
    future_c: Array | None = None


@dataclass(frozen=True, eq=False)
class SeriesOutcome:
    """What one series' job returns.

    Attributes
    ----------
    uid : str
    x : ndarray of shape (h,)
        The forecast's times (the panel's units).
    forecast : dict of str to ndarray of shape (h,)
        ``mean``, ``lo-80``, ``hi-80``, ``lo-95``, ``hi-95`` of the product's forecast, and the same keys
        prefixed ``kernel-`` for the kernel's own (NaN where there is no kernel).
    row : dict
        The series' row of ``series.csv`` (:data:`evocov_core.panel.run.SERIES_COLUMNS`).
    kernel_file : str or None
        The kernel file's JSON text (None without a kernel).
    """

    uid: str
    x: Array
    forecast: dict[str, Array]
    row: dict[str, Any]
    kernel_file: str | None = None


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _dataset(job: SeriesJob) -> Dataset:
    return Dataset.from_arrays(job.x, job.y, name=job.uid, test_fraction=0.0, x_kind=job.x_kind,
                               x_label=job.x_label, min_points=1)


def unserved(ds: Dataset, h: int) -> str:
    """Why the search cannot serve the observed series ``ds`` for ``h`` steps; empty when it can."""
    if ds.n < MIN_SEARCH_POINTS:
        return f"{ds.n} observed point{'s' * (ds.n != 1)}: a search needs at least {MIN_SEARCH_POINTS}"
    if float(np.ptp(ds.y)) == 0.0:
        return "the series is constant"
    if h > ds.n:
        return f"the horizon ({h} steps) is longer than the series ({ds.n} points)"
    return ""


def _steps(ds: Dataset, h: int) -> Array:
    """The ``h`` times after the last observation (the data's step; whole steps for a short series)."""
    from evocov_core.forecast.beside import steps_after

    if ds.n >= 2:
        return steps_after(ds, h)
    return float(ds.x[-1, 0]) + np.arange(1, h + 1, dtype=np.float64)


def _normal_intervals(mean: Array, sd: Array, prefix: str = "") -> dict[str, Array]:
    out = {f"{prefix}mean": mean}
    for level in LEVELS:
        z = float(ndtri(0.5 + level / 200))
        out[f"{prefix}lo-{level}"], out[f"{prefix}hi-{level}"] = mean - z * sd, mean + z * sd
    return out


def _nan_kernel(h: int) -> dict[str, Array]:
    return _normal_intervals(np.full(h, np.nan), np.full(h, np.nan), "kernel-")


def _fallback(job: SeriesJob, ds: Dataset | None, why: str, started: tuple[float, float]) -> SeriesOutcome:
    """Seasonal naive on the observed points (NaN without any), with the row saying why."""
    from evocov_core.forecast.classical import classical_forecasts_many

    h = job.h
    if ds is None:
        x = np.full(h, np.nan)
        fc = _normal_intervals(np.full(h, np.nan), np.full(h, np.nan))
        status = Status.NO_DATA
    else:
        x = _steps(ds, h)
        ahead = Dataset(ds.name, np.concatenate([ds.x, x[:, None]]), np.concatenate([ds.y, np.full(h, np.nan)]),
                        np.arange(ds.n + h) < ds.n, ds.x_label, ds.y_label, ds.x_kind, (), 0.0)
        seasons = job.season_lengths if job.season_lengths and ds.n >= 2 * job.season_lengths[0] else (1,)
        got = classical_forecasts_many([ahead], season_lengths=seasons, models=(FALLBACK,), in_process=True)[0]
        f = got.get(FALLBACK)
        if f is not None and f.ok and f.lower is not None and f.upper is not None:
            sd = (f.upper - f.lower) / (2 * float(ndtri(0.975)))
            fc = _normal_intervals(f.mean, sd)
        else:  # one point: its value, with no interval to give
            last = np.full(h, float(ds.y[-1]))
            fc = _normal_intervals(last, np.full(h, 0.0 if float(np.ptp(ds.y)) == 0 else np.nan))
        status = Status.FALLBACK
    fc.update(_nan_kernel(h))
    row = _row(job, status, why, started, n=0 if ds is None else ds.n,
               forecast=f"{FALLBACK} (fallback)" if ds is not None else "none")
    return SeriesOutcome(job.uid, x, fc, row)


def _row(job: SeriesJob, status: str, reason: str, started: tuple[float, float], **values: Any) -> dict[str, Any]:
    wall0, cpu0 = started
    row = {"unique_id": job.uid, "status": status, "reason": reason, "n": values.pop("n", len(job.y)),
           "missing": job.missing, "kernel": "", "kernel_infix": "", "bic": math.nan, "forecast": "",
           "holdout_ratio": math.nan, "holdout_kernel_ratio": math.nan,
           "cpu_s": round(_cpu() - cpu0, 4), "seconds": round(time.perf_counter() - wall0, 4)}
    row.update(values)
    return row


def forecast_series(job: SeriesJob) -> SeriesOutcome:
    """Search and forecast one series of a panel, or give it a named fallback (module docstring).

    Parameters
    ----------
    job : SeriesJob

    Returns
    -------
    SeriesOutcome
        The forecast of the ``job.h`` steps after the series (80 % and 95 % intervals), the kernel's own,
        the series' row and its kernel file.
    """
    from evocov_core.forecast.classical import import_statsforecast

    import_statsforecast()  # once per worker process, before this series' clock: not its cost
    started = (time.perf_counter(), _cpu())
    try:
        return _forecast(job, started)
    except Exception as exc:  # not the data's doing: recorded, and the panel's other series go on
        h = job.h
        fc = _normal_intervals(np.full(h, np.nan), np.full(h, np.nan))
        fc.update(_nan_kernel(h))
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
        return SeriesOutcome(job.uid, np.full(h, np.nan), fc, _row(job, Status.ERROR, one_line(exc) + where, started))


def _forecast(job: SeriesJob, started: tuple[float, float]) -> SeriesOutcome:
    from evocov_core.forecast.future import forecast_future
    from evocov_core.forecast.stage import search_and_forecast
    from evocov_core.runs.kernel_file import dump_kernel_file, parse_kernel_file, search_kernel_file
    from evocov_core.searches import preset, search_data, search_executor
    from evocov_core.searches.config import with_derived

    if len(job.y) == 0:
        return _fallback(job, None, "no observed value", started)
    if len(job.y) == 1:  # one point: its value, at the panel's usual step
        x = float(job.x[0]) + job.step * np.arange(1, job.h + 1, dtype=np.float64)
        fc = _normal_intervals(np.full(job.h, float(job.y[0])), np.full(job.h, np.nan))
        fc.update(_nan_kernel(job.h))
        row = _row(job, Status.FALLBACK, "1 observed point: its value is the forecast, with no interval", started,
                   n=1, forecast="last value (fallback)")
        return SeriesOutcome(job.uid, x, fc, row)
    try:
        ds = _dataset(job)
    except DataError as exc:
        return _fallback(job, None, f"the series cannot be read: {exc}", started)
    why = unserved(ds, job.h)
    if why:
        return _fallback(job, ds, why, started)
    if job.prior is not None:
        from evocov_core.panel.priors import use_panel_prior

        use_panel_prior(job.prior)
    effect = None
    if job.covariates:  # searched on what the covariates leave, along time (forecast.covariates)
        from evocov_core.forecast.covariates import searched_on

        full = Dataset.from_arrays(np.column_stack([job.x, job.c]), job.y, name=job.uid, test_fraction=0.0,
                                   x_kind=job.x_kind, x_label=job.x_label, covariates=job.covariates)
        ds, effect = searched_on(full)
    config = preset(job.preset, **with_derived(dict(job.settings)))
    data = search_data(ds, config)
    with search_executor(data, config, workers=1) as ex:
        result = search_and_forecast(data, config, seed=job.seed, executor=ex, dataset=ds, horizon=job.h,
                                     classical_in_process=True, season_lengths=job.season_lengths or None)
    best = result.search.best
    if best is None or not best.ok:
        return _fallback(job, ds, "no kernel could be fitted" + (" within the budget" if config.time_budget else ""),
                         started)
    doc = search_kernel_file(result, ds, seed=job.seed, config=config)
    if effect is not None:
        doc["covariates"] = effect.to_dict()
    text = dump_kernel_file(doc)
    kf = parse_kernel_file(text)
    future = result.future if result.future is not None and result.horizon == job.h else None
    if effect is None or job.future_x is None or job.future_c is None:
        fc = forecast_future(kf, ds, job.h, classical=future)
    else:
        from evocov_core.forecast.covariates import add_effect

        same = future is not None and future.x.shape == job.future_x.shape and np.allclose(future.x, job.future_x)
        fc = add_effect(forecast_future(kf, ds, classical=future if same else None, at=job.future_x), effect,
                        job.future_c)
    out: dict[str, Array] = {"mean": fc.mean}
    for level in LEVELS:
        out[f"lo-{level}"], out[f"hi-{level}"] = fc.interval(level / 100)
        out[f"kernel-lo-{level}"], out[f"kernel-hi-{level}"] = fc.kernel_interval(level / 100)
    out["kernel-mean"] = fc.kernel_mean
    members = " + ".join(f"{m} {w:.2f}" for m, w in fc.members) if fc.combined else "kernel"
    phrase = (job.describe(kf.model(ds.norm), ds) or "") if job.describe is not None else ""
    reason = result.combination.describe() or ""
    held = holdout_ratios(ds, job, best, config, result.combination)
    row = _row(job, Status.OK, reason, started, n=ds.n, kernel=phrase, kernel_infix=best.kernel.infix,
               bic=float(best.bic), forecast=members, holdout_ratio=held[0], holdout_kernel_ratio=held[1])
    return SeriesOutcome(job.uid, np.asarray(fc.x, dtype=np.float64), out, row, text)


def holdout_ratios(ds: Dataset, job: SeriesJob, best: Any, config: Any, combination: Any) -> tuple[float, float]:
    """How the series' forecast did on its own last ``h`` points, against AutoETS: each refitted without them.

    The kernel is refitted on the points before the last ``h`` (from its fitted values, with the search's
    optimiser) and forecasts them; AutoETS and the combination's classical members are fitted on the same
    points and forecast them too; the forecast is the combination of those with the search's weights.
    Returns the forecast's RMSE on those ``h`` points ÷ AutoETS's, and the kernel's own ÷ AutoETS's (NaN when
    the series is too short to hold ``h`` points out, or a fit fails). A check on points the search saw,
    with hyperparameters and weights chosen on them: not a test, an indication.
    """
    from evocov_core.fitting.model import FittedModel
    from evocov_core.fitting.optimize import NUMERIC_ERRORS, fit_kernel
    from evocov_core.forecast.classical import classical_forecasts_many
    from evocov_core.searches import search_data

    h = job.h
    if ds.n - h < MIN_SEARCH_POINTS:
        return math.nan, math.nan
    head = Dataset(ds.name, ds.x[:-h], ds.y[:-h], np.ones(ds.n - h, dtype=bool), ds.x_label, ds.y_label, ds.x_kind, (),
                   0.0)
    target = ds.y[-h:]
    ahead = Dataset(ds.name, ds.x, np.concatenate([ds.y[:-h], np.full(h, np.nan)]), np.arange(ds.n) < ds.n - h,
                    ds.x_label, ds.y_label, ds.x_kind, (), 0.0)
    models = tuple(dict.fromkeys(("AutoETS", *combination.models)))
    seasons = job.season_lengths if job.season_lengths and head.n >= 2 * job.season_lengths[0] else (1,)
    got = classical_forecasts_many([ahead], season_lengths=seasons, models=models, in_process=True)[0]
    ets = got.get("AutoETS")
    if ets is None or not ets.ok:
        return math.nan, math.nan
    data = search_data(head, config)
    fit = fit_kernel(best.kernel, data, config.optim, np.random.default_rng(job.seed), best.start())
    try:
        with np.errstate(all="ignore"):
            kernel = FittedModel.from_fit(fit, head.norm, head.n).predict_mean(head.X_train, head.y_train, ds.x[-h:])
    except NUMERIC_ERRORS:
        return math.nan, math.nan
    if not fit.ok or not np.all(np.isfinite(kernel)):
        return math.nan, math.nan
    mean = combination.mean(kernel, {f.name: f.mean for f in got.forecasts if f.ok}) if combination.combined else kernel

    def rmse(f: Array | None) -> float:
        return math.nan if f is None else float(np.sqrt(np.mean((np.asarray(f) - target) ** 2)))

    base = rmse(ets.mean)
    if not base > 0:
        return math.nan, math.nan
    return rmse(mean) / base, rmse(kernel) / base
