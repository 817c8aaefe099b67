"""The classical forecasts a forecast combination is chosen with, made beside the search.

:mod:`evocov_core.forecast.combination` says what is chosen and why. Here the forecasts are made:

* The classical models (``config.combine``) are fitted, in one child process
  (:func:`~evocov_core.forecast.classical.classical_forecasts_many`), on the whole training part and on the
  points before each origin of :func:`~evocov_core.search.validate.origin_windows`. They start
  with the search, in a thread that only waits on the child, so that their seconds overlap the
  search's instead of following it; on short series they take a few seconds of one core.
* The kernel's forecasts from the same origins are the interval calibration's out-of-sample
  refits (:attr:`~evocov_core.search.common.SearchResult.origins`): no further fit.
* After the search, :meth:`ClassicalBeside.choose` waits for the classical forecasts until the
  time budget ends, stops the child if they are not ready, and weighs the members
  (:func:`~evocov_core.forecast.combination.weigh_members`), leaving the kernel out when its forecast of
  the test part leaves the classical forecasts' intervals (the guard:
  :func:`~evocov_core.forecast.combination.interval_excess`).

Long series (fitted on a subset) are combined with ``config.long_combine``'s models. There the
search makes no refits at the origins (each costs seconds), so the kernel forecasts from each
origin with its fitted values, conditioned on the subset the search would fit of the points before
it (:meth:`ClassicalBeside.choose` with ``fit``); the classical models see the last
:data:`LONG_POINTS` points before each origin and before the test part. Classical models need one
input (time) and a training part that precedes the test part; other data keep the kernel's forecast.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence

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
    guard_reason,
    weigh_members,
)
from evocov_core.search.common import SearchResult
from evocov_core.search.validate import DEFAULT_ORIGINS, OriginScores, OriginWindow, origin_masks, origin_windows

__all__ = ["LONG_POINTS", "ORIGIN_TIME_LIMIT", "ClassicalBeside", "combined_test_mean", "eligibility",
           "forecast_test_rmse", "kernel_test_mean",
           "origin_datasets"]

#: Seconds each classical model may take on each data set (the whole training part and each
#: origin's head). AutoETS and AutoTheta take under 1 s on 1,300 points (``bench/results/``
#: ``bench_classical.md``); a model that is slower than this is left out of the choice.
ORIGIN_TIME_LIMIT = 10.0
#: Training points the classical models see on long series, before each origin and before the test
#: part (the last ones). On the long-series development set MSTL and AutoETS forecast as well from
#: 2,000 as from 10,000 (geometric mean 0.98) in 1.8 s a fit against 6.2 s
#: (``bench/results/bench_long_classical__long-dev.md``).
LONG_POINTS = 2000


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
    (:func:`~evocov_core.search.validate.origin_windows`) unless it fits a subset."""
    if not data.on_subset:
        return origin_windows(data)
    return origin_masks(ds.X_train[:, 0], DEFAULT_ORIGINS, data.split_fraction)


def origin_datasets(ds: Dataset, data: FitData,
                    windows: Sequence[OriginWindow] | None = None
                    ) -> tuple[Dataset, list[Dataset]]:
    """What the classical models are fitted on beside a search on ``data`` (made from ``ds``): the
    whole training part with its test part, and each origin's head with that origin's targets as its
    test part (``windows``: the search's origins, :func:`origin_windows` or, on long series, over
    every training point). On long series each sees only the last :data:`LONG_POINTS` points before
    the origin or the test part: on up to 10,000 AutoETS takes 3-11 s a fit, and a search makes five.

    Returns
    -------
    full : Dataset
        ``ds``, or its last points (long series).
    cuts : list of Dataset
        One per window, in order.
    """
    windows = _windows(ds, data) if windows is None else windows
    x, y = ds.X_train, ds.y_train
    last = LONG_POINTS if data.on_subset else ds.n_train
    cuts = [dataclasses.replace(ds, x=x[keep], y=y[keep], train=head[keep], notes=())
            for _, head, target in windows for keep in [_recent(head, last) | target]]
    whole = np.ones(ds.n, dtype=bool)
    whole[:max(0, ds.n_train - last)] = False  # the training part precedes the test part (eligibility)
    full = ds if whole.all() else dataclasses.replace(ds, x=ds.x[whole], y=ds.y[whole], train=ds.train[whole],
                                                       notes=())
    return full, cuts


class ClassicalBeside:
    """The classical forecasts of the whole training part and of each origin's head, made in a
    background thread from construction on (module docstring).

    Parameters
    ----------
    ds : Dataset
        The user's data (original units).
    data : FitData
        What the search fits (:func:`~evocov_core.search.search_data` of ``ds``).
    models : sequence of str
        Classical models (:data:`~evocov_core.forecast.classical.MODELS`); empty: nothing is made.
    time_limit : float
        Seconds per model and data set.
    """

    def __init__(self, ds: Dataset, data: FitData, models: Sequence[str], time_limit: float = ORIGIN_TIME_LIMIT):
        self.models = tuple(models)
        self.reason = eligibility(ds, data) if self.models else ""
        self._data, self._ds = data, ds
        self._stop = threading.Event()
        self._out: tuple[ClassicalForecasts, ...] | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._windows = _windows(ds, data) if self.models and not self.reason else ()
        self._targets = [ds.y_train[target] for _, _, target in self._windows]
        if not self._windows:
            return
        seasons = infer_seasons(ds)
        full, cuts = origin_datasets(ds, data, self._windows)

        def work() -> None:
            try:
                self._out = classical_forecasts_many([full, *cuts], season_lengths=seasons.lengths or (1,),
                                                     time_limit=time_limit, models=self.models,
                                                     should_stop=self._stop.is_set)
            except BaseException as exc:  # re-raised in the caller's thread by choose()
                self._error = exc

        self._thread = threading.Thread(target=work, name="classical-beside", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the child (the search was cancelled)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def choose(self, origins: OriginScores | None, *, until: float | None = None,
               kernel_mean: np.ndarray | None = None, power: float = POWER, guard: bool = True,
               fit: FitResult | None = None, short: int = 0) -> tuple[Combination, ClassicalForecasts | None]:
        """Wait for the classical forecasts (until wall-clock time ``until``, then stop them) and
        weigh the kernel and them by their forecasts from the origins.

        Parameters
        ----------
        origins : OriginScores or None
            The returned kernel's out-of-sample forecasts from the origins
            (:attr:`~evocov_core.search.common.SearchResult.origins`). Not used on long series.
        until : float, optional
            ``time.time()`` after which the forecasts still running are stopped.
        kernel_mean : ndarray of shape (h,), optional
            The returned kernel's forecast of the test part (original units): what the guard checks
            against the classical forecasts' intervals. None: no guard.
        power : float
            :func:`~evocov_core.forecast.combination.weigh_members`'s power.
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
        combination : Combination
            The kernel alone with a reason when no choice could be made.
        classical : ClassicalForecasts or None
            The classical forecasts of the test part from the whole training part (None when none
            were made): what the weighted average is made of.
        """
        if not self.models:
            return Combination(), None
        if self.reason:
            return Combination(reason=self.reason), None
        assert self._thread is not None
        self._thread.join(None if until is None else max(0.0, until - time.time()))
        if self._thread.is_alive():
            self._stop.set()  # the child is killed within 0.1 s; its models are "cancelled"
            self._thread.join()
        if self._error is not None:
            raise self._error
        full, *cuts = self._out or (None,)
        windows = self._windows
        if self._data.on_subset:
            if fit is None or not fit.ok:
                return Combination(reason="no fitted kernel to forecast from earlier origins"), full
            kernel = self.fitted_origin_means(fit)
        elif origins is None:
            return Combination(reason="the kernel's forecasts from earlier origins were not made within the "
                                      "budget"), full
        elif len(origins.n_targets) != len(windows):
            return Combination(reason="the kernel's forecasts from earlier origins are incomplete"), full
        else:
            kernel = [m if m.size and np.all(np.isfinite(m)) else None for m in origins.window_means(self._data)]
        if len(cuts) != len(windows):
            return Combination(reason="the kernel's forecasts from earlier origins are incomplete"), full
        classical = [{f.name: f.mean for f in c.forecasts if f.ok} for c in cuts]
        ok = {m: f for m in self.models if full is not None and (f := full.get(m)) is not None and f.ok}
        failed = tuple(m for m in self.models if m not in ok)  # no forecast of the test part: weight 0
        why = guard_reason(kernel_mean, [ok[m] for m in self.models if m in ok]) if guard else ""
        exclude = failed + ((KERNEL,) if why else ())
        n = self._ds.n_train
        held = (f"on {n} training points the errors from the earlier origins are too few to trust more"
                if n <= short else "")
        combination = weigh_members(kernel, classical, self._targets, self.models, power=power, exclude=exclude,
                                    guard=why, max_kernel_weight=SHORT_KERNEL_WEIGHT if held else 1.0, held=held)
        if self._data.on_subset:
            combination = dataclasses.replace(combination, refitted=False)
        return combination, full

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


def forecast_test_rmse(result: SearchResult, ds: Dataset) -> float | None:
    """Test RMSE (original units) of the forecast a search returns: its combination's when that
    averages (:func:`combined_test_mean`), else the returned kernel's own; None without one."""
    best = result.best
    if best is None or not best.ok or ds.n_test == 0:
        return None
    if not result.combination.combined:
        return best.test_rmse
    mean = combined_test_mean(result.combination, kernel_test_mean(best, ds), result.classical)
    return None if mean is None else rmse(ds.y[~ds.train], mean)
