"""The classical forecasts a forecast combination is chosen with, made beside the search.

:mod:`evocov_core.forecast.combination` says what is chosen and why. Here the forecasts are made:

* The classical models (``config.combine``) are fitted, in one child process
  (:func:`~evocov_core.forecast.classical.classical_forecasts_many`), on the whole training part and on the
  points before each origin of :func:`~evocov_core.searches.validate.origin_windows`. They start
  with the search, in a thread that only waits on the child, so that their seconds overlap the
  search's instead of following it; on short series they take a few seconds of one core.
* **The horizon, not the test part.** From the whole training part each model forecasts the
  ``horizon`` steps that follow it (the steps asked for, else :func:`guard_steps`), and as many more as
  a test part has: a model fitted on the same points forecasts the same first steps whatever the
  number asked. The guard and the choice read only the training part and those ``horizon`` steps, so
  that a search on the training part alone forecasts exactly as a search on the same points with a
  test part behind them; the test part's forecasts are the first ``n_test`` steps, for scoring.
* The kernel's forecasts from the same origins are the interval calibration's out-of-sample
  refits (:attr:`~evocov_core.searches.common.SearchResult.origins`): no further fit.
* After the search, :meth:`ClassicalBeside.choose` waits for the classical forecasts until the
  time budget ends, stops the child if they are not ready, and weighs the members
  (:func:`~evocov_core.forecast.combination.weigh_members`), leaving the kernel out when its forecast of
  the horizon leaves the classical forecasts' intervals (the guard:
  :func:`~evocov_core.forecast.combination.interval_excess`), and leaving out a member that has no
  forecast of the horizon.

Long series (fitted on a subset) are combined with ``config.long_combine``'s models. There the
search makes no refits at the origins (each costs seconds), so the kernel forecasts from each
origin with its fitted values, conditioned on the subset the search would fit of the points before
it (:meth:`ClassicalBeside.choose` with ``fit``); the classical models see the last
:data:`LONG_POINTS` points before each origin and before the horizon. Classical models need one
input (time) and a training part that precedes any test part; other data keep the kernel's forecast.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.classical import ClassicalForecasts, classical_forecasts_many
from evocov_core.forecast.combination import (
    KERNEL,
    POWER,
    SHORT_KERNEL_WEIGHT,
    Combination,
    equal_members,
    guard_reason,
    weigh_members,
)
from evocov_core.forecast.steps import future_x, step_grid
from evocov_core.searches.validate import OriginScores, OriginWindow, origin_masks, origin_windows

__all__ = ["LONG_POINTS", "ORIGIN_TIME_LIMIT", "Chosen", "ClassicalBeside", "combined_test_mean", "eligibility",
           "forecast_test_rmse", "guard_steps", "kernel_future_mean", "kernel_test_mean", "origin_datasets",
           "steps_after"]

#: Seconds each classical model may take on each data set (the whole training part and each
#: origin's head). AutoETS and AutoTheta take under 1 s on 1,300 points (``bench/results/``
#: ``bench_classical.md``); a model that is slower than this is left out of the choice.
ORIGIN_TIME_LIMIT = 10.0
#: Training points the classical models see on long series, before each origin and before the test
#: part (the last ones). On the long-series development set MSTL and AutoETS forecast as well from
#: 2,000 as from 10,000 (geometric mean 0.98) in 1.8 s a fit against 6.2 s
#: (``bench/results/bench_long_classical__long-dev.md``).
LONG_POINTS = 2000


def guard_steps(n_train: int) -> int:
    """The steps after the training part the guard checks when no horizon is asked: a ninth of the
    training points, at least 1 (the test part a 10 % split would leave)."""
    return max(1, round(n_train / 9))


def steps_after(ds: Dataset, steps: int) -> np.ndarray:
    """The inputs (original units, shape (steps,)) of the ``steps`` steps after ``ds``'s training part,
    continuing its spacing as :func:`~evocov_core.forecast.steps.future_x` continues a series'."""
    train = dataclasses.replace(ds, x=ds.X_train, y=ds.y_train, train=np.ones(ds.n_train, dtype=bool),
                                test_fraction=0.0, notes=())
    return future_x(train, min(steps, train.n)) if steps <= train.n else _extend(future_x(train, train.n), steps)


def _extend(x: np.ndarray, steps: int) -> np.ndarray:
    """``x`` (regular steps) continued to ``steps`` values at its last spacing."""
    step = float(x[-1] - x[-2]) if x.size > 1 else 1.0
    return np.concatenate([x, x[-1] + step * np.arange(1, steps - x.size + 1)])


def eligibility(ds: Dataset, data: FitData) -> str:
    """Why the forecast of a search on ``data`` (made from ``ds``) cannot be combined; empty when it can."""
    if ds.x.shape[1] != 1:
        return "classical forecasters take one input (time)"
    if (not data.on_subset and data.n != ds.n_train) or not np.all(ds.train[:ds.n_train]):
        return "classical forecasters need a training part that precedes the test part"
    if not _windows(ds, data):
        return "no earlier origin has points on both sides"
    return ""


def _recent(head: np.ndarray, n: int) -> np.ndarray:
    """The last ``n`` points of the mask ``head`` (shape (m,))."""
    idx = np.flatnonzero(head)
    out = np.zeros_like(head)
    out[idx[max(0, idx.size - n):]] = True
    return out


def _windows(ds: Dataset, data: FitData) -> tuple[OriginWindow, ...]:
    """The origins' windows over every training point of ``ds``: the search's own
    (:func:`~evocov_core.searches.validate.origin_windows`) unless it fits a subset."""
    if not data.on_subset:
        return origin_windows(data)
    return origin_masks(ds.X_train[:, 0], data.origins, data.split_fraction)


def origin_datasets(ds: Dataset, data: FitData,
                    windows: Sequence[OriginWindow] | None = None, steps: int | None = None
                    ) -> tuple[Dataset, list[Dataset]]:
    """What the classical models are fitted on beside a search on ``data`` (made from ``ds``): the
    whole training part followed by ``steps`` steps to forecast, and each origin's head with that
    origin's targets as its test part (``windows``: the search's origins, :func:`origin_windows` or, on
    long series, over every training point). On long series each sees only the last
    :data:`LONG_POINTS` points before the origin or the steps: on up to 10,000 AutoETS takes 3-11 s a
    fit, and a search makes five.

    Returns
    -------
    full : Dataset
        The training part of ``ds`` (or its last points, long series) with ``steps`` steps after it as
        a test part whose y is unknown (NaN; default: ``ds``'s own test part, as it is).
    cuts : list of Dataset
        One per window, in order.
    """
    windows = _windows(ds, data) if windows is None else windows
    x, y = ds.X_train, ds.y_train
    last = LONG_POINTS if data.on_subset else ds.n_train
    cuts = [dataclasses.replace(ds, x=x[keep], y=y[keep], train=head[keep], notes=())
            for _, head, target in windows for keep in [_recent(head, last) | target]]
    if steps is None:
        whole = np.ones(ds.n, dtype=bool)
        whole[:max(0, ds.n_train - last)] = False  # the training part precedes the test part (eligibility)
        full = ds if whole.all() else dataclasses.replace(ds, x=ds.x[whole], y=ds.y[whole], train=ds.train[whole],
                                                           notes=())
        return full, cuts
    keep = slice(max(0, ds.n_train - last), ds.n_train)
    ahead = steps_after(ds, steps)
    full = dataclasses.replace(ds, x=np.concatenate([x[keep], ahead[:, None]]),
                               y=np.concatenate([y[keep], np.full(steps, np.nan)]),
                               train=np.arange(x[keep].shape[0] + steps) < x[keep].shape[0], notes=())
    return full, cuts


def _first_steps(cf: ClassicalForecasts, steps: int, x: np.ndarray) -> ClassicalForecasts:
    """The forecasts of ``cf`` cut to their first ``steps`` steps, labelled ``x`` (shape (steps,)): a
    model's forecast of a step does not depend on how many steps it was asked for."""
    def cut(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[:steps].copy()

    return dataclasses.replace(cf, x=np.asarray(x, dtype=np.float64).copy(), forecasts=tuple(
        dataclasses.replace(f, mean=cut(f.mean), lower=cut(f.lower), upper=cut(f.upper)) for f in cf.forecasts))


def _test_steps(ds: Dataset) -> int:
    """Steps after ``ds``'s training part up to its last test point (its test points where they have no gap)."""
    if ds.n_test == 0:
        return 0
    return step_grid(ds.X_train[:, 0], ds.X_test[:, 0], ds.x_kind).horizon


def _at_points(cf: ClassicalForecasts, ds: Dataset) -> ClassicalForecasts:
    """The forecasts of ``cf`` (of the steps after ``ds``'s training part) at ``ds``'s test points: its first
    ``n_test`` steps where the test points are those steps, else read off the steps they fall on (a test part
    with gaps, its points at their own times: :func:`~evocov_core.forecast.steps.step_grid`)."""
    x = ds.X_test[:, 0]
    grid = step_grid(ds.X_train[:, 0], x, ds.x_kind)
    if grid.regular:
        return _first_steps(cf, x.shape[0], x)
    ahead = grid.test - grid.train[-1]

    def at(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else np.interp(ahead, np.arange(1, a.size + 1, dtype=np.float64), a)

    return dataclasses.replace(cf, x=np.asarray(x, dtype=np.float64).copy(), forecasts=tuple(
        dataclasses.replace(f, mean=at(f.mean), lower=at(f.lower), upper=at(f.upper)) for f in cf.forecasts))


class Chosen(NamedTuple):
    """What :meth:`ClassicalBeside.choose` returns.

    Attributes
    ----------
    combination : Combination
    classical : ClassicalForecasts or None
        The classical forecasts of the data's test part from the whole training part (None when none were
        made or there is no test part): what a test RMSE of the weighted average is made of.
    future : ClassicalForecasts or None
        Their forecasts of the ``horizon`` steps after the training part (None when none were made): what
        the guard read, and the members of the forecast when the training part is all the data.
    """

    combination: Combination
    classical: ClassicalForecasts | None = None
    future: ClassicalForecasts | None = None


class ClassicalBeside:
    """The classical forecasts of the horizon after the whole training part and of each origin's head,
    made in a background thread from construction on (module docstring).

    Parameters
    ----------
    ds : Dataset
        The user's data (original units).
    data : FitData
        What the search fits (:func:`~evocov_core.searches.search_data` of ``ds``).
    models : sequence of str
        Classical models (:data:`~evocov_core.forecast.classical.MODELS`); empty: nothing is made.
    time_limit : float
        Seconds per model and data set.
    horizon : int, optional
        Steps after the training part the forecast is for (default :func:`guard_steps` of the
        training points): what the guard checks and what :attr:`Chosen.future` holds.
    in_process : bool
        Fit the models here and now, before returning, with no child process and no time limit
        (:func:`~evocov_core.forecast.classical.classical_forecasts_many`'s ``in_process``): for a panel's
        worker, which forecasts many short series on one core.
    season_lengths : sequence of int, optional
        The models' seasons in steps (default: read from the x spacing,
        :func:`~evocov_core.fitting.seasons.infer_seasons`).
    origins : bool
        Fit the models on each origin's head too (their errors there weigh the members); False when the
        weights are equal (:meth:`choose` with ``power=0``), which needs only the whole training part.
    """

    def __init__(self, ds: Dataset, data: FitData, models: Sequence[str], time_limit: float = ORIGIN_TIME_LIMIT,
                 *, horizon: int | None = None, in_process: bool = False,
                 season_lengths: Sequence[int] | None = None, origins: bool = True) -> None:
        self.models = tuple(models)
        self.reason = eligibility(ds, data) if self.models else ""
        if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer))
                                    or horizon < 1):
            raise ValueError(f"the horizon must be a whole number of steps, at least 1; got {horizon!r}")
        self.horizon = int(horizon) if horizon is not None else guard_steps(ds.n_train)
        self._data, self._ds = data, ds
        self._stop = threading.Event()
        self._out: tuple[ClassicalForecasts, ...] | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._windows = _windows(ds, data) if self.models and not self.reason else ()
        self._targets = [ds.y_train[target] for _, _, target in self._windows]
        self.future_x = steps_after(ds, self.horizon) if self._windows else np.empty(0)
        if not self._windows:
            return
        seasons = infer_seasons(ds, season_lengths)
        full, cuts = origin_datasets(ds, data, self._windows, steps=max(self.horizon, _test_steps(ds)))
        if not origins:
            cuts = []  # equal weights: the errors at the origins weigh nothing

        def work() -> None:
            try:
                self._out = classical_forecasts_many([full, *cuts], season_lengths=seasons.lengths or (1,),
                                                     time_limit=time_limit, models=self.models,
                                                     should_stop=self._stop.is_set, in_process=in_process)
            except BaseException as exc:  # re-raised in the caller's thread by choose()
                self._error = exc

        self._thread = threading.Thread(target=work, name="classical-beside", daemon=True)
        if in_process:
            work()  # here and now: the thread is never started, and choose() finds it done
        else:
            self._thread.start()

    def cancel(self) -> None:
        """Stop the child (the search was cancelled)."""
        self._stop.set()
        if self._thread is not None and self._thread.ident is not None:
            self._thread.join()

    def choose(self, origins: OriginScores | None, *, until: float | None = None,
               kernel_mean: np.ndarray | None = None, power: float = POWER, guard: bool = True,
               fit: FitResult | None = None, short: int = 0) -> Chosen:
        """Wait for the classical forecasts (until wall-clock time ``until``, then stop them) and
        weigh the kernel and them by their forecasts from the origins.

        Parameters
        ----------
        origins : OriginScores or None
            The returned kernel's out-of-sample forecasts from the origins
            (:attr:`~evocov_core.searches.common.SearchResult.origins`). Not used on long series.
        until : float, optional
            ``time.time()`` after which the forecasts still running are stopped.
        kernel_mean : ndarray of shape (horizon,), optional
            The returned kernel's forecast of the horizon at :attr:`future_x` (original units,
            :func:`kernel_future_mean`): what the guard checks against the classical forecasts'
            intervals. None: no guard.
        power : float
            :func:`~evocov_core.forecast.combination.weigh_members`'s power; 0: equal weights
            (:func:`~evocov_core.forecast.combination.equal_members`), which read no origin.
        guard : bool
            Leave the kernel out when ``kernel_mean`` lies more than
            :data:`~evocov_core.forecast.combination.GUARD_HALF_WIDTHS` half-widths outside every classical
            member's 95 % interval at some step.
        fit : FitResult, optional
            On long series, the returned kernel: it forecasts from each origin with its fitted
            values (:meth:`fitted_origin_means`).
        short : int
            On a series of at most this many training points the kernel's weight is held at
            :data:`~evocov_core.forecast.combination.SHORT_KERNEL_WEIGHT` (0: never).

        Returns
        -------
        Chosen
            The combination (the kernel alone with a reason when no choice could be made) and the
            classical forecasts of the test part and of the horizon.
        """
        if not self.models:
            return Chosen(Combination())
        if self.reason:
            return Chosen(Combination(reason=self.reason))
        assert self._thread is not None
        if self._thread.ident is not None:  # started (not run in process)
            self._thread.join(None if until is None else max(0.0, until - time.time()))
        if self._thread.is_alive():
            self._stop.set()  # the child is killed within 0.1 s; its models are "cancelled"
            self._thread.join()
        if self._error is not None:
            raise self._error
        whole, *cuts = self._out or (None,)
        ds, windows = self._ds, self._windows
        future = None if whole is None else _first_steps(whole, self.horizon, self.future_x)
        test = None if whole is None or ds.n_test == 0 else _at_points(whole, ds)

        def chosen(combination: Combination) -> Chosen:
            return Chosen(combination, test, future)

        ok = {m: f for m in self.models if future is not None and (f := future.get(m)) is not None and f.ok}
        failed = tuple(m for m in self.models if m not in ok)  # no forecast of the horizon: weight 0
        why = guard_reason(kernel_mean, [ok[m] for m in self.models if m in ok]) if guard else ""
        exclude = failed + ((KERNEL,) if why else ())
        unavailable = "; ".join((future.get(m).reason if future is not None and future.get(m) is not None
                                 else f"{m}: not run") or f"{m}: no forecast" for m in failed)
        if power == 0:
            return chosen(equal_members(self.models, exclude=exclude, guard=why, unavailable=unavailable))
        if self._data.on_subset:
            if fit is None or not fit.ok:
                return chosen(Combination(reason="no fitted kernel to forecast from earlier origins"))
            kernel = self.fitted_origin_means(fit)
        elif origins is None:
            return chosen(Combination(reason="the kernel's forecasts from earlier origins were not made within the "
                                             "budget"))
        elif len(origins.n_targets) != len(windows):
            return chosen(Combination(reason="the kernel's forecasts from earlier origins are incomplete"))
        else:
            kernel = [m if m.size and np.all(np.isfinite(m)) else None for m in origins.window_means(self._data)]
        if len(cuts) != len(windows):
            return chosen(Combination(reason="the kernel's forecasts from earlier origins are incomplete"))
        classical = [{f.name: f.mean for f in c.forecasts if f.ok} for c in cuts]
        n = ds.n_train
        held = (f"on {n} training points the errors from the earlier origins are too few to trust more"
                if n <= short else "")
        combination = weigh_members(kernel, classical, self._targets, self.models, power=power, exclude=exclude,
                                    guard=why, max_kernel_weight=SHORT_KERNEL_WEIGHT if held else 1.0, held=held,
                                    unavailable=unavailable)
        if self._data.on_subset:
            combination = dataclasses.replace(combination, refitted=False)
        return chosen(combination)

    def fitted_origin_means(self, fit: FitResult) -> list[np.ndarray | None]:
        """The kernel's forecast of each origin's target points (original units; None where it fails
        numerically), with ``fit``'s values, conditioned on the points before the origin, or on the
        subset of them a search would fit (:meth:`~evocov_core.fitting.model.FittedModel.from_fit`)."""
        from evocov_core.fitting.model import FittedModel  # model imports the search package

        ds, out = self._ds, []
        x, y = ds.X_train, ds.y_train
        for _, head, target in self._windows:
            try:
                with np.errstate(all="ignore"):
                    m = FittedModel.from_fit(fit, ds.norm, int(head.sum())).predict_mean(x[head], y[head], x[target])
            except NUMERIC_ERRORS:
                m = None
            out.append(m if m is not None and np.all(np.isfinite(m)) else None)
        return out


def combined_test_mean(combination: Combination, kernel_mean: np.ndarray,
                       classical: ClassicalForecasts | None) -> np.ndarray | None:
    """The search's forecast of the test part (shape (h,)): ``kernel_mean`` or, when the combination
    averages, its average with the classical members' forecasts (None when one is missing)."""
    if not combination.combined:
        return np.asarray(kernel_mean, dtype=np.float64)
    if classical is None:
        return None
    return combination.mean(kernel_mean, {f.name: f.mean for f in classical.forecasts if f.ok})


def kernel_test_mean(fit: FitResult | None, ds: Dataset) -> np.ndarray | None:
    """The predictive mean of the fitted kernel ``fit`` on ``ds``'s test part (shape (h,), original
    units); None when it has no fitted values or its posterior fails numerically."""
    if fit is None or not fit.ok:
        return None
    from evocov_core.fitting.model import FittedModel  # model imports the search package

    try:
        with np.errstate(all="ignore"):
            return FittedModel.from_fit(fit, ds.norm, ds.n_train).predict_mean(ds.X_train, ds.y_train, ds.X_test)
    except NUMERIC_ERRORS:
        return None


def kernel_future_mean(fit: FitResult | None, ds: Dataset, x: np.ndarray) -> np.ndarray | None:
    """The predictive mean of the fitted kernel ``fit`` at inputs ``x`` (shape (h,), original units) after
    ``ds``'s training part, conditioned on the training part (original units); None when it has no fitted
    values or its posterior fails numerically. What the guard checks (:meth:`ClassicalBeside.choose`)."""
    if fit is None or not fit.ok:
        return None
    from evocov_core.fitting.model import FittedModel  # model imports the search package

    try:
        with np.errstate(all="ignore"):
            return FittedModel.from_fit(fit, ds.norm, ds.n_train).predict_mean(ds.X_train, ds.y_train,
                                                                                np.asarray(x)[:, None])
    except NUMERIC_ERRORS:
        return None


def forecast_test_rmse(best: FitResult | None, combination: Combination, classical: ClassicalForecasts | None,
                       ds: Dataset) -> float | None:
    """Test RMSE (original units) of the forecast a search returns: its combination's when that averages
    (:func:`combined_test_mean`), else the returned kernel's own (``best``); None without one."""
    if best is None or not best.ok or ds.n_test == 0:
        return None
    if not combination.combined:
        return best.test_rmse
    mean = combined_test_mean(combination, kernel_test_mean(best, ds), classical)
    return None if mean is None else rmse(ds.y[~ds.train], mean)
