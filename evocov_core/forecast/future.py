"""Forecasts past the last observation: the next steps of a series, as a plan needs them.

A search is judged on its test part; a forecaster then wants the next ``h`` steps after *all*
the data. Here:

* **The steps** continue the data's median spacing from the last observed x
  (:func:`~evocov_core.forecast.steps.future_x`): the next 12 months of a monthly series, the next
  48 half-hours, the next trading days (weekdays) of a business-day series. For dates on the exact
  monthly grid the labels are month starts (:func:`~evocov_core.forecast.steps.future_labels`).
* **The kernel** keeps the hyperparameters it was fitted with (on the training part) and is
  conditioned on every observed point, training and test (on a long series, on the subset its
  fit used: :meth:`evocov_core.fitting.model.FittedModel.conditioning`). Its 95 % interval is the
  calibrated one of the kernel file (:mod:`evocov_core.fitting.calibration`).
* **The search's forecast.** When the search averaged the kernel with classical forecasters
  (:mod:`evocov_core.forecast.combination`), the same members are fitted on the same observed points
  (the last :data:`~evocov_core.forecast.beside.LONG_POINTS` on a long series, as the search did)
  and forecast the same steps, and the recorded weights average them. The guard is applied again
  to the new horizon: a kernel forecast that leaves every member's 95 % interval is left out. The
  interval given with the average is that of the linear pool, the weighted mixture of the
  members' predictive normals (each member's implied by its interval), so that it widens where
  the members disagree.

Nothing here is fitted but the classical members; the kernel's numbers are those of its file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import ndtri

from evocov_core.data.dataset import Dataset, Normalisation
from evocov_core.fitting.metrics import Z95
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import LONG_POINTS
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, ClassicalForecasts, classical_forecasts
from evocov_core.forecast.combination import Combination, linear_pool_interval
from evocov_core.forecast.steps import MAX_HORIZON, future_labels, future_times, future_x

__all__ = [
    "MAX_HORIZON",
    "FutureForecast",
    "default_horizon",
    "forecast_future",
    "future_labels",
    "future_members_data",
    "future_x",
]
# MAX_HORIZON, future_labels and future_x live in evocov_core.forecast.steps (the forecast stage needs them too);
# they stay importable from here, where the dashboard and users found them.

Array = NDArray[np.float64]


class KernelFile(Protocol):
    """What a forecast past the data needs of a search's saved result
    (:class:`evocov_core.runs.kernel_file.KernelFile` is one): its model and its forecast's weights."""

    combination: Combination

    def model(self, fallback_norm: Normalisation | None = None) -> FittedModel: ...

def default_horizon(ds: Dataset) -> int:
    """The steps a forecast covers unless asked: as many as the test part the kernel was judged on,
    else a tenth of the points (at least 1)."""
    return int(min(ds.n_test or max(1, round(0.1 * ds.n)), ds.n, MAX_HORIZON))


@dataclass(frozen=True)
class FutureForecast:
    """The next steps after the data.

    Attributes
    ----------
    x : ndarray of shape (h,)
        In the data's units (decimal years for dates).
    labels : pandas.Series of length h
        ``x`` as a user reads it (:func:`future_labels`).
    mean, lower, upper : ndarray of shape (h,)
        The search's forecast and its 95 % interval: the kernel's, or the weighted average with the
        classical members and the linear pool's interval.
    kernel_mean, kernel_lower, kernel_upper : ndarray of shape (h,)
        The kernel's own forecast and calibrated 95 % interval.
    members : tuple of (str, float)
        What ``mean`` averages, with its weights (``(("kernel", 1.0),)`` for the kernel's own).
    conditioned : int
        Observed points the kernel is conditioned on.
    note : str
        What was done, in a sentence or two, for a page, a report or a file's header.
    member_means, member_sds : ndarray of shape (k, h)
        The predictive normal of each member of ``members``, in its order (a classical member's read off
        its 95 % interval): what :meth:`interval` pools at any level.
    """

    x: Array
    labels: pd.Series
    mean: Array
    lower: Array
    upper: Array
    kernel_mean: Array
    kernel_lower: Array
    kernel_upper: Array
    members: tuple[tuple[str, float], ...]
    conditioned: int
    note: str
    member_means: Array | None = None
    member_sds: Array | None = None

    @property
    def combined(self) -> bool:
        return len(self.members) > 1 or self.members[0][0] != "kernel"

    def interval(self, level: float) -> tuple[Array, Array]:
        """The forecast's central ``level`` interval (e.g. 0.8), each of shape (h,): the weighted mixture of the
        members' normals, or the kernel's own calibrated normal. At 0.95 it is :attr:`lower`, :attr:`upper`."""
        if self.member_means is None or self.member_sds is None:
            return self.kernel_interval(level)
        w = np.array([wi for _, wi in self.members])
        return linear_pool_interval(w, self.member_means, self.member_sds, level)

    def kernel_interval(self, level: float) -> tuple[Array, Array]:
        """The kernel's own central ``level`` interval (each of shape (h,)), from its calibrated normal."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        z = float(ndtri(0.5 + level / 2))
        sd = (self.kernel_upper - self.kernel_mean) / Z95
        return self.kernel_mean - z * sd, self.kernel_mean + z * sd

    def frame(self, x_label: str = "x") -> pd.DataFrame:
        """One row per step: ``x_label``, the forecast and its interval, then the kernel's own."""
        return pd.DataFrame({x_label: self.labels, "forecast": self.mean, "lower_95": self.lower,
                             "upper_95": self.upper, "kernel_mean": self.kernel_mean,
                             "kernel_lower_95": self.kernel_lower, "kernel_upper_95": self.kernel_upper})


def _observed(ds: Dataset) -> Dataset:
    """Every observed point as the training part (no test part)."""
    return dataclasses.replace(ds, train=np.ones(ds.n, dtype=bool), test_fraction=0.0)


def _with_future(observed: Dataset, x: Array, last: int | None) -> Dataset:
    """``observed`` (its last ``last`` points, if given) with ``x`` as a test part whose y is unknown
    (NaN: the classical forecasters read only the training part)."""
    keep = slice(max(0, observed.n - last), None) if last else slice(None)
    return dataclasses.replace(observed, x=np.concatenate([observed.x[keep], x[:, None]]),
                               y=np.concatenate([observed.y[keep], np.full(x.shape[0], np.nan)]),
                               train=np.concatenate([np.ones(observed.x[keep].shape[0], bool),
                                                     np.zeros(x.shape[0], bool)]), notes=())


def forecast_future(kf: KernelFile, ds: Dataset, horizon: int | None = None, *,
                    time_limit: float | Mapping[str, float] = DEFAULT_TIME_LIMIT,
                    classical: ClassicalForecasts | None = None, at: object = None) -> FutureForecast:
    """Forecast the ``horizon`` steps after the last observation of ``ds`` with a search's kernel file.

    Parameters
    ----------
    kf : KernelFile
        The kernel (its own normalisation, calibration and combination are used).
    ds : Dataset
        The observed series, one input column; every point (training and test) is conditioned on.
    horizon : int, optional
        Steps (default :func:`default_horizon`).
    time_limit : float or mapping of str to float
        Seconds per classical member (when the search's forecast averages some).
    classical : ClassicalForecasts, optional
        The members' forecasts of these steps, already made (a page's background run of
        :func:`classical_forecasts` on the same points); by default they are made here.
    at : array_like of shape (h,), optional
        Times to forecast at instead of the next steps: any times after the last observation, at any
        spacing (:func:`~evocov_core.forecast.steps.future_times`: numbers in the data's units, or dates).
        The kernel forecasts at them; the classical members forecast their regular steps up to the last
        and are read at them (:func:`~evocov_core.forecast.steps.step_grid`).

    Returns
    -------
    FutureForecast

    Raises
    ------
    DataError
        Several inputs, or a horizon out of range.
    """
    x = _future(ds, horizon, at)
    h = x.shape[0]
    observed = _observed(ds)
    model = kf.model(fallback_norm=ds.norm)
    pred = model.predict(observed.x, observed.y, x)
    conditioned = int(model.conditioning(observed.x).sum())
    k_lo, k_hi = pred.mean - Z95 * pred.std, pred.mean + Z95 * pred.std
    labels = future_labels(ds, x)
    where = (f"conditioned on all {ds.n:,} observed points" if conditioned == ds.n
             else f"conditioned on {conditioned:,} of the {ds.n:,} observed points (the subset its fit used)")
    kernel_how = f"{where}, with the hyperparameters fitted on the training part"
    what = f"the next {h:,} steps" if at is None else f"the {h:,} times asked"
    own = f"The kernel's forecast of {what}, {kernel_how}"
    comb = kf.combination
    alone = {"member_means": pred.mean[None, :], "member_sds": pred.std[None, :]}
    if not comb.combined:
        return FutureForecast(x, labels, pred.mean, k_lo, k_hi, pred.mean, k_lo, k_hi, (("kernel", 1.0),),
                              conditioned, own + ".", **alone)
    if classical is None:
        classical = classical_forecasts(future_members_data(kf, ds, h, at=at), season_lengths=infer_seasons(ds).lengths
                                        or (1,), time_limit=time_limit, models=comb.models)
    if classical.x.shape != x.shape or not np.allclose(classical.x, x):
        raise ValueError("the classical forecasts are for other steps than these")
    pooled = comb.pool(pred.mean, pred.std, classical.forecasts)
    if pooled.failed:
        return FutureForecast(x, labels, pred.mean, k_lo, k_hi, pred.mean, k_lo, k_hi, (("kernel", 1.0),),
                              conditioned, own + f". The search averaged it with {', '.join(comb.models)}, "
                              f"whose forecasts of these steps failed ({pooled.failed}); this is the kernel's alone.",
                              **alone)
    used, missing = pooled.weights, pooled.missing
    members = " + ".join(f"{m} {wi:.2f}" for m, wi in used)
    pts = min(_members_last(kf) or ds.n, ds.n)
    extra = ""
    if pooled.left_out:
        extra += f" The kernel is left out: {pooled.left_out}."
    if missing:
        extra += (f" {' and '.join(missing)} had no forecast of these steps: the other members share "
                  f"{'its' if len(missing) == 1 else 'their'} weight.")
    note = (f"The search's forecast of {what}: {members}, with the weights the search chose. The "
            f"kernel is {kernel_how}; the classical members are fitted on the last {pts:,} observed "
            f"points. The 95 % interval is the weighted mixture of the members' predictive normals.{extra}")
    return FutureForecast(x, labels, pooled.mean, pooled.lower, pooled.upper, pred.mean, k_lo, k_hi, used,
                          conditioned, note, pooled.means, pooled.sds)


def _future(ds: Dataset, horizon: int | None, at: object) -> Array:
    """The x (shape (h,)) a forecast past ``ds`` is for: the times ``at``, else the next ``horizon`` steps."""
    if at is not None:
        return future_times(ds, at)
    return future_x(ds, default_horizon(ds) if horizon is None else horizon)


def future_members_data(kf: KernelFile, ds: Dataset, horizon: int, at: object = None) -> Dataset:
    """What the classical members of ``kf``'s combination are fitted on for :func:`forecast_future`:
    every observed point of ``ds`` (the last :data:`~evocov_core.forecast.beside.LONG_POINTS` where the
    search fitted its kernel on a subset) with the ``horizon`` future steps as a test part whose y is
    unknown (``at``: the times instead, as :func:`forecast_future`'s). A page runs :func:`classical_forecasts`
    on it in the background."""
    return _with_future(_observed(ds), _future(ds, horizon, at), _members_last(kf))


def _members_last(kf: KernelFile) -> int | None:
    """The last points the classical members see: all (None), or on a long series (its kernel's origin
    forecasts made with its fitted values) the search's :data:`~evocov_core.forecast.beside.LONG_POINTS`."""
    return None if kf.combination.refitted else LONG_POINTS
