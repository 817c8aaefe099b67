"""Classical forecasters fitted on the user's training data: the baselines a forecaster trusts.

Five models of `statsforecast <https://nixtlaverse.nixtla.io/statsforecast/>`_ (not written
here), each forecasting the test part of a :class:`~evocov_core.data.Dataset` from its training
part, with a 95 % prediction interval:

=================  ===========================================================================
``SeasonalNaive``  the value one season earlier (the last value, without a season)
``AutoETS``        exponential smoothing, error / trend / season chosen by AICc
``AutoARIMA``      (seasonal) ARIMA, orders chosen stepwise by AICc
``AutoTheta``      the Theta family, chosen by in-sample MSE
``MSTL``           several seasons removed by LOESS (STL), the rest forecast by ``AutoETS(ZZN)``;
                   run where the data have two seasons (statsforecast's model for several) or one
                   longer than 24 steps (statsforecast's ETS ignores such a season)
=================  ===========================================================================

**Steps, not x.** Classical methods see the series as consecutive steps. A series whose points
lie on consecutive steps (its median spacing; business days on a business-day series) is given as
it is, and the forecast horizon is the number of test points, ``h = ds.n_test``. A series with gaps
(missing values kept as points not observed, :func:`evocov_core.data.dataset_from_frame`) is given an
**interpolated copy**: every step of the training range, each gap a straight line between the
points on its sides; the models forecast the steps up to the last test point, and each test point
reads the step it falls on (a straight line between two steps for a time between them:
:func:`evocov_core.forecast.steps.step_grid`). The ``settings`` line says how many steps were filled.
Seasons come from the x spacing (:func:`evocov_core.fitting.seasons.infer_seasons`) unless given.

**Time limits.** Each model has one (default :data:`DEFAULT_TIME_LIMIT`, 30 s). The models run
one after another in a child process (:func:`evocov_core.compute.timed.run_with_time_limits`) that
imports statsforecast once; a model still running at its limit is killed with the child, is
recorded as ``timeout`` ("AutoARIMA: no result within 30 s"), and a new child serves the
models left. statsforecast is imported only there, never by ``import evocov_core``.

**Long series.** What each model sees by default (:data:`SETTINGS`), from timings on a
shared 2-core machine (``bench/results/bench_classical.md``):

* ``AutoARIMA``: its fit time grows with the season and the length together (a known
  statsforecast behaviour), so: the last 1000 training points; statsforecast's own ``approximation=None``
  (R's rule: conditional sums of squares while choosing orders when n > 150 or the season is
  longer than 12; on 540 points with season 48, 222 s → 8 s); for seasons over 12 steps,
  seasonal AR and MA orders of at most 1 (R's default 2 puts 2 × season states in the Kalman
  filter: on 1000 points with season 24 or 48, 9-43 s → 1-6 s, similar test RMSE); and a
  season only up to 96 steps (8 s at 96, 46-56 s at 168).
* ``AutoTheta``: the last 5000 points (63 s on 17,520, under 4 s on 4000).
* ``AutoETS`` and ``MSTL``: the last 10,000 points (on 100,000: 17 s and 70 s).
* ``SeasonalNaive``: everything (it reads the last season).

A model that cannot use a season on what it sees (fewer than two seasons, or a season above
its maximum) is fitted without it, and its ``settings`` say so.

Every outcome is a :class:`ClassicalForecast` with a status (``ok``, ``timeout``, ``failed``,
``skipped``) and a one-line reason; nothing here raises for numerical trouble. While
:func:`classical_forecasts` runs elsewhere (a page's background process),
:func:`running_forecasts` gives the rows to show meanwhile, each ``running``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from evocov_core.compute.timed import TimedResult, one_line, run_with_time_limits
from evocov_core.data.dataset import Dataset
from evocov_core.fitting.seasons import Seasons, infer_seasons
from evocov_core.forecast.steps import StepGrid, step_grid

__all__ = ["COMBINE_MODELS", "DEFAULT_TIME_LIMIT", "LEVEL", "MODELS", "SETTINGS", "ClassicalForecast",
           "ClassicalForecasts", "ModelSettings", "classical_forecasts", "classical_forecasts_many",
           "import_statsforecast", "running_forecasts"]

Array = NDArray[np.float64]

#: Seconds each model may take. The slowest default measured (AutoARIMA, season 96, 1000
#: points) took up to 9 s on a busy 2-core machine: 30 s leaves three times that, and five
#: models cannot hold a user more than 2.5 minutes.
DEFAULT_TIME_LIMIT = 30.0
#: The prediction interval, in percent.
LEVEL = 95
MODELS = ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta", "MSTL")
#: Models fitted only to study them as members of the forecast combination
#: (``bench/bench_classical_members.py``: they gained on the development corpus and lost on TSDL, so
#: no preset uses them); not shown among the classical forecasters, not accepted in a kernel file.
COMBINE_MODELS = ("AutoCES", "DynamicOptimizedTheta")
#: Seasons above this many steps: statsforecast's ETS ignores them; MSTL takes over.
LONG_SEASON = 24
#: AutoARIMA's seasonal AR and MA orders stay at most 1 for seasons above this many steps.
ARIMA_SHORT_SEASON = 12


@dataclass(frozen=True)
class ModelSettings:
    """How one model is fitted here.

    Attributes
    ----------
    max_train : int or None
        It sees the last ``max_train`` training points (None: all).
    max_season : int or None
        Longest season it is given (None: any); a longer one is left out.
    why : str
        Why the season is left out, for the ``settings`` line.
    """

    max_train: int | None = None
    max_season: int | None = None
    why: str = ""


SETTINGS: dict[str, ModelSettings] = {
    "SeasonalNaive": ModelSettings(),
    "AutoETS": ModelSettings(10_000, LONG_SEASON, "statsforecast's ETS fits seasons of at most 24 steps"),
    "AutoARIMA": ModelSettings(1_000, 96, "seasonal ARIMA is too slow on seasons over 96 steps"),
    "AutoTheta": ModelSettings(5_000),
    "MSTL": ModelSettings(10_000),
    "AutoCES": ModelSettings(5_000),
    "DynamicOptimizedTheta": ModelSettings(5_000),
}


@dataclass(frozen=True)
class ClassicalForecast:
    """One classical model's forecast of the test part, or why there is none.

    Attributes
    ----------
    name : str
        ``"AutoARIMA"``...
    mean : ndarray of shape (h,) or None
        Point forecast (None unless ``ok``).
    lower, upper : ndarray of shape (h,) or None
        The 95 % prediction interval (None when the model gives none).
    status : str
        ``"ok"``, ``"timeout"``, ``"failed"`` or ``"skipped"``; ``"running"`` in
        :func:`running_forecasts`.
    reason : str
        One line when not ``ok``: ``"AutoARIMA: no result within 30 s"``.
    seconds : float
        Fit and forecast time in the child process (NaN when skipped).
    settings : str
        What was fitted: ``"season 12; 129 points"``.
    """

    name: str
    mean: Array | None
    lower: Array | None
    upper: Array | None
    status: str
    reason: str
    seconds: float
    settings: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class ClassicalForecasts:
    """Every classical model's forecast of one data set's test part.

    Attributes
    ----------
    x : ndarray of shape (h,)
        Test inputs (original units) the forecasts are for, one per step.
    seasons : Seasons
    forecasts : tuple of ClassicalForecast
        In the order the models were asked for.
    startup : tuple of float
        Seconds each child process took to start and import statsforecast (one child, and
        one more after each timeout).
    """

    x: Array
    seasons: Seasons
    forecasts: tuple[ClassicalForecast, ...]
    startup: tuple[float, ...] = ()

    def get(self, name: str) -> ClassicalForecast | None:
        """The forecast of model ``name``, or None."""
        return next((f for f in self.forecasts if f.name == name), None)


# --- in the child process ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    name: str
    seasons: tuple[int, ...]  # (1,) for none; several for MSTL
    y: Array
    h: int


def import_statsforecast() -> None:
    """Import statsforecast once per process, off every model's clock (a child's, or a panel worker's
    before its first series: about 1-2 s, once)."""
    try:
        import statsforecast.models  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"statsforecast cannot be imported ({exc}); pip install 'statsforecast>=2.1'") from None


def _model(name: str, seasons: tuple[int, ...]) -> object:
    from statsforecast import models as sf

    m = seasons[0]
    if name == "SeasonalNaive":
        return sf.SeasonalNaive(season_length=m)
    if name == "AutoETS":
        return sf.AutoETS(season_length=m)
    if name == "AutoARIMA":
        # Seasonal AR/MA orders up to 2 put 2m states in the Kalman filter: above 12 steps, 1.
        long = {"max_P": 1, "max_Q": 1} if m > ARIMA_SHORT_SEASON else {}
        return sf.AutoARIMA(season_length=m, approximation=None, **long)
    if name == "AutoTheta":
        return sf.AutoTheta(season_length=m)
    if name == "AutoCES":
        return sf.AutoCES(season_length=m)
    if name == "DynamicOptimizedTheta":
        return sf.DynamicOptimizedTheta(season_length=m)
    if name == "MSTL":
        return sf.MSTL(season_length=list(seasons), trend_forecaster=sf.AutoETS(model="ZZN"))
    raise ValueError(f"unknown model {name!r}")


class _Forecast(NamedTuple):
    """A model's forecast, each of shape (h,) (None where the model gave none).

    Attributes
    ----------
    mean : ndarray
    lower, upper : ndarray or None
        The 95 % interval.
    """

    mean: Array | None
    lower: Array | None
    upper: Array | None


def _forecast(task: _Task) -> _Forecast:
    """Mean, lower and upper of the 95 % interval, each of shape (h,) (run in the child)."""
    out = _model(task.name, task.seasons).forecast(y=task.y, h=task.h, level=[LEVEL])

    def flat(key: str) -> Array | None:
        return None if out.get(key) is None else np.asarray(out[key], dtype=np.float64).reshape(-1)

    return _Forecast(flat("mean"), flat(f"lo-{LEVEL}"), flat(f"hi-{LEVEL}"))


# --- in this process ------------------------------------------------------------------------------


class _Plan(NamedTuple):
    """How a model is run on a series (:func:`_plan`).

    Attributes
    ----------
    seasons : tuple of int
        The seasons given to the model (``(1,)``: none).
    points : int
        The training points it sees (the last ones).
    settings : str
        The settings line shown with its forecast.
    """

    seasons: tuple[int, ...]
    points: int
    settings: str


def _plan(name: str, seasons: Seasons, n: int) -> _Plan | str:
    """How model ``name`` is run on ``n`` training points with ``seasons``, or why it is skipped."""
    cfg = SETTINGS[name]
    used = min(n, cfg.max_train) if cfg.max_train else n
    points = f"the last {used} of {n} points" if used < n else f"{n} points"
    if name == "MSTL":
        fit = tuple(m for m in seasons.lengths if used >= 2 * m)
        if len(fit) < 2 and not (fit and fit[0] > LONG_SEASON):
            here = ", ".join(map(str, fit)) or "none"
            return f"MSTL: needs two seasons, or one longer than {LONG_SEASON} steps (here: {here})"
        return _Plan(fit, used, f"seasons {', '.join(map(str, fit))}; {points}")
    m = seasons.primary
    if m <= 1:
        return _Plan((1,), used, f"no season; {points}")
    if cfg.max_season is not None and m > cfg.max_season:
        return _Plan((1,), used, f"no season ({cfg.why}); {points}")
    if used < 2 * m:
        return _Plan((1,), used, f"no season (fewer than two seasons of {m}); {points}")
    orders = " (seasonal AR and MA orders at most 1)" if name == "AutoARIMA" and m > ARIMA_SHORT_SEASON else ""
    return _Plan((m,), used, f"season {m}{orders}; {points}")


def _call_here(task: _Task) -> TimedResult:
    """One model fitted in this process, timed; what statsforecast raises on the data is a ``failed`` result
    (as in the child of :func:`~evocov_core.compute.timed.run_with_time_limits`)."""
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statsforecast's convergence warnings: the child silences them too
            value = _forecast(task)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError) as exc:
        return TimedResult("failed", None, one_line(exc), time.perf_counter() - t0)
    return TimedResult("ok", value, "", time.perf_counter() - t0)


def _record(name: str, settings: str, h: int, result: TimedResult) -> ClassicalForecast:
    if result.status != "ok":
        return ClassicalForecast(name, None, None, None, result.status, f"{name}: {result.reason}", result.seconds,
                                 settings)
    mean, lo, hi = result.value
    if mean.shape != (h,) or not np.all(np.isfinite(mean)):
        return ClassicalForecast(name, None, None, None, "failed",
                                 f"{name}: the forecast is not {h} finite numbers", result.seconds, settings)
    if lo is None or hi is None or lo.shape != (h,) or hi.shape != (h,) or not (
            np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        lo = hi = None
        settings += "; no prediction interval"
    return ClassicalForecast(name, mean, lo, hi, "ok", "", result.seconds, settings)


def _skipped(name: str, reason: str) -> ClassicalForecast:
    return ClassicalForecast(name, None, None, None, "skipped", reason, math.nan)


def classical_forecasts(ds: Dataset, *, season_lengths: Sequence[int] | None = None,
                        time_limit: float | Mapping[str, float] = DEFAULT_TIME_LIMIT,
                        models: Sequence[str] = MODELS, should_stop: Callable[[], bool] | None = None,
                        progress: Callable[[ClassicalForecast], None] | None = None) -> ClassicalForecasts:
    """Forecast the test part of ``ds`` from its training part with each classical model.

    A plain function of picklable arguments: a page can run it in a thread or a background
    process. The models run in one child process (see the module docstring); deterministic,
    so there is no seed.

    Parameters
    ----------
    ds : Dataset
        One input column (time), with a test part: h = ``ds.n_test`` steps are forecast.
    season_lengths : sequence of int, optional
        Seasons in steps (first = primary), instead of those read from the x spacing.
    time_limit : float or mapping of str to float
        Seconds per model: one for all, or per model name (missing: :data:`DEFAULT_TIME_LIMIT`).
    models : sequence of str
        Which of :data:`MODELS`, in this order.
    should_stop : callable, optional
        Polled while a model runs; True stops (the models left are ``skipped``, "cancelled").
    progress : callable, optional
        Called with each :class:`ClassicalForecast` as it is ready.

    Returns
    -------
    ClassicalForecasts
        One :class:`ClassicalForecast` per model, in ``models`` order.

    Raises
    ------
    ValueError
        An unknown model, a time limit that is not positive, a season length below 1.
    """
    return classical_forecasts_many([ds], season_lengths=season_lengths, time_limit=time_limit, models=models,
                                    should_stop=should_stop, progress=progress)[0]


def classical_forecasts_many(datasets: Sequence[Dataset], *, season_lengths: Sequence[int] | None = None,
                             time_limit: float | Mapping[str, float] = DEFAULT_TIME_LIMIT,
                             models: Sequence[str] = MODELS, should_stop: Callable[[], bool] | None = None,
                             progress: Callable[[ClassicalForecast], None] | None = None,
                             in_process: bool = False) -> tuple[ClassicalForecasts, ...]:
    """:func:`classical_forecasts` of several data sets, every model of every one in the same child
    process: statsforecast is imported once (about 2 s), not once per data set. The forecasts from
    earlier origins of one series (:mod:`evocov_core.forecast.beside`) are made so.

    Parameters are :func:`classical_forecasts`'s; ``time_limit`` is per model and data set. Returns
    one :class:`ClassicalForecasts` per data set, in order (``startup``: the shared child's).

    ``in_process``: fit the models in this process, one after another, with no child and no time
    limit (a model that raises is ``failed`` with its reason). For a process that forecasts many short
    series (a panel's worker): there a child's start and import of statsforecast cost seconds a series,
    the models milliseconds. ``startup`` is then the import's seconds (0 once imported).
    """
    unknown = [m for m in models if m not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown classical model {unknown[0]!r}; choose among {', '.join(MODELS)}")
    limits = {m: float(time_limit.get(m, DEFAULT_TIME_LIMIT) if isinstance(time_limit, Mapping) else time_limit)
              for m in models}
    bad = [f"{m}: {v:g}" for m, v in limits.items() if not (v > 0 and math.isfinite(v))]
    if bad:
        raise ValueError(f"time limits must be positive seconds; got {bad[0]}")
    rows: list[dict[str, ClassicalForecast]] = [{} for _ in datasets]
    tasks: list[tuple[int, str, str, int, _Task]] = []  # (data set, model, settings, h, task)
    heads: list[tuple[Array, Seasons]] = []
    grids: dict[int, StepGrid] = {}  # the data sets with gaps: their steps

    def record(k: int, f: ClassicalForecast) -> None:
        f = _read(f, grids.get(k))  # a series with gaps: its forecasts of the steps read at its test points
        rows[k][f.name] = f
        if progress is not None:
            progress(f)

    for k, ds in enumerate(datasets):
        x = ds.X_test[:, 0].copy() if ds.x.shape[1] == 1 else np.empty(0)
        seasons = (infer_seasons(ds, season_lengths) if ds.x.shape[1] == 1
                   else Seasons(1, source="not a time series"))
        heads.append((x, seasons))
        h, n = ds.n_test, ds.n_train
        if ds.x.shape[1] != 1 or h == 0:
            why = (f"classical forecasters take one input (time); these data have {ds.x.shape[1]}"
                   if ds.x.shape[1] != 1 else "there are no test points to forecast")
            for m in models:
                record(k, _skipped(m, f"{m}: {why}"))
            continue
        y = np.ascontiguousarray(ds.y_train, dtype=np.float64)
        filled = ""
        grid = step_grid(ds.X_train[:, 0], x, ds.x_kind)
        if not grid.regular:
            grids[k] = grid
            y, h, n = grid.fill(y), grid.horizon, grid.train[-1] + 1
            filled = f"; {grid.gaps} steps without a point filled by straight lines" if grid.gaps else ""
        for m in models:
            plan = _plan(m, seasons, n)
            if isinstance(plan, str):
                record(k, _skipped(m, plan))
            else:
                fit, used, settings = plan
                tasks.append((k, m, settings + filled, h, _Task(m, fit, y[n - used:], h)))

    def done(i: int, result: TimedResult) -> None:
        k, name, settings, h, _ = tasks[i]
        record(k, _skipped(name, f"{name}: cancelled") if result.status == "cancelled"
               else _record(name, settings, h, result))

    startup: tuple[float, ...] = ()
    if tasks and in_process:
        t0 = time.perf_counter()
        import_statsforecast()
        startup = (time.perf_counter() - t0,)
        for i, task in enumerate(tasks):
            if should_stop is not None and should_stop():
                done(i, TimedResult("cancelled"))
                continue
            done(i, _call_here(task[-1]))
    elif tasks:
        run = run_with_time_limits(_forecast, [t[-1] for t in tasks], [limits[t[1]] for t in tasks],
                                   setup=import_statsforecast, should_stop=should_stop, on_result=done)
        startup = run.startup
    return tuple(ClassicalForecasts(x, seasons, tuple(rows[k][m] for m in models), startup)
                 for k, (x, seasons) in enumerate(heads))


def _read(f: ClassicalForecast, grid: StepGrid | None) -> ClassicalForecast:
    """``f``, a forecast of ``grid``'s steps, at the test points (:meth:`StepGrid.read`); as it is without a grid."""
    if grid is None or not f.ok:
        return f
    lo, hi = (None, None) if f.lower is None or f.upper is None else (grid.read(f.lower), grid.read(f.upper))
    return ClassicalForecast(f.name, grid.read(f.mean), lo, hi, f.status, f.reason, f.seconds, f.settings)


def running_forecasts(ds: Dataset, *, season_lengths: Sequence[int] | None = None,
                      models: Sequence[str] = MODELS, failed: str | None = None) -> ClassicalForecasts:
    """What :func:`classical_forecasts` will return, before it has: one ``running`` row per model.

    Cheap (no model is fitted, statsforecast is not imported): a page shows these rows, and
    the seasons the models will be given, while the forecasts are computed in the background.

    Parameters
    ----------
    ds : Dataset
    season_lengths : sequence of int, optional
        As :func:`classical_forecasts`'s.
    models : sequence of str
    failed : str, optional
        The background computation itself failed (its process died, statsforecast is missing):
        every row is ``failed`` with this one line as its reason, after the model's name.

    Returns
    -------
    ClassicalForecasts
        Every forecast ``running`` (or ``failed``), without numbers; ``startup`` empty.

    Raises
    ------
    ValueError
        An unknown model or a season length below 1.
    """
    unknown = [m for m in models if m not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown classical model {unknown[0]!r}; choose among {', '.join(MODELS)}")
    if ds.x.shape[1] != 1:
        return ClassicalForecasts(np.empty(0), Seasons(1, source="not a time series"),
                                  tuple(_skipped(m, f"{m}: classical forecasters take one input (time)")
                                        for m in models))
    seasons = infer_seasons(ds, season_lengths)
    status, why = ("running", "") if failed is None else ("failed", " ".join(failed.split()))
    rows = tuple(ClassicalForecast(m, None, None, None, status, f"{m}: {why}" if why else "", math.nan)
                 for m in models)
    return ClassicalForecasts(ds.X_test[:, 0].copy(), seasons, rows)
