"""The steps after a series: where a forecast past the data lies, and how a user reads those times.

The next ``h`` steps continue the data's median spacing from the last observed x (:func:`future_x`): the
next 12 months of a monthly series, the next 48 half-hours, the next trading days (weekdays) of a
business-day series. For dates on the exact monthly grid the labels are month starts
(:func:`future_labels`).

Classical forecasters see consecutive steps, not x: :func:`step_grid` says where a series' points lie on its
regular steps (its median spacing; business days for a business-day series), so that a series with gaps
gets a copy with each gap filled by a straight line between its neighbours and its test points are read
off the steps they fall on (:mod:`evocov_core.forecast.classical`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from evocov_core.data.dataset import Dataset
from evocov_core.data.dates import dates_to_decimal_years, days_to_decimal_years, decimal_years_to_dates, parse_dates
from evocov_core.data.limits import DataError
from evocov_core.fitting.metrics import median_step

__all__ = ["MAX_HORIZON", "StepGrid", "future_labels", "future_times", "future_x", "step_grid", "times_of"]

Array = NDArray[np.float64]

#: The most steps forecast at once. Past a series' own length an extrapolation says little, so the
#: horizon is also at most the number of observed points.
MAX_HORIZON = 10_000


def future_x(ds: Dataset, horizon: int) -> Array:
    """The ``horizon`` x values after the last observation, at the data's median step (whole
    months on the monthly grid; the next weekdays for data on business days).

    Parameters
    ----------
    ds : Dataset
        One input column (time).
    horizon : int
        Steps, from 1 to min(:data:`MAX_HORIZON`, ``ds.n``).

    Returns
    -------
    ndarray of shape (horizon,)
        In the data's units (decimal years for dates).

    Raises
    ------
    DataError
        Several input columns, or a horizon out of range.
    """
    if ds.x.shape[1] != 1:
        raise DataError(f"a forecast past the data needs one input (time); these data have {ds.x.shape[1]}")
    top = min(MAX_HORIZON, ds.n)
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or not 1 <= horizon <= top:
        raise DataError(f"the horizon must be a whole number of steps from 1 to {top:,} (at most the "
                        f"{ds.n:,} observed points and {MAX_HORIZON:,}); got {horizon!r}")
    step = median_step(ds.x[:, 0])
    last = float(ds.x[:, 0].max())
    if ds.x_kind == "date" and _monthly(ds):
        months = round(last * 12) + np.arange(1, horizon + 1) * round(step * 12)
        return months / 12.0  # the exact grid dates_to_decimal_years writes for month starts
    if ds.x_kind == "date" and _business_daily(ds):
        # Trading and working days: the next weekdays, not Saturdays and Sundays the data never have.
        last_day = decimal_years_to_dates([last])[0].round("D")
        return days_to_decimal_years(pd.bdate_range(last_day + pd.Timedelta(days=1), periods=horizon))
    return last + step * np.arange(1, horizon + 1, dtype=np.float64)


def future_times(ds: Dataset, at: object) -> Array:
    """Times after the last observation of ``ds`` at which a forecast is asked, in the data's units.

    Parameters
    ----------
    ds : Dataset
        One input column (time).
    at : array_like of shape (h,)
        Numbers in the data's units (decimal years for dates), or, for date data, dates as text
        (``"2024-03-15"``) or datetimes; any spacing, in any order.

    Returns
    -------
    ndarray of shape (h,)
        Sorted, each after the last observed x.

    Raises
    ------
    DataError
        Several input columns, none or more than :data:`MAX_HORIZON` times, a time that cannot be read,
        or one at or before the last observation.
    """
    if ds.x.shape[1] != 1:
        raise DataError(f"a forecast past the data needs one input (time); these data have {ds.x.shape[1]}")
    return np.sort(times_of(ds, at))


def times_of(ds: Dataset, at: object) -> Array:
    """:func:`future_times` in the order given (shape (h,)), x's first column (time) read whatever x's width."""
    values = pd.Series(np.atleast_1d(np.asarray(at, dtype=object)).ravel())
    if not 1 <= values.size <= MAX_HORIZON:
        raise DataError(f"give 1 to {MAX_HORIZON:,} times to forecast at; got {values.size:,}")
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    if ds.x_kind == "date" and not np.all(np.isfinite(x)):
        parsed = parse_dates(values.astype(str)) if not pd.api.types.is_datetime64_any_dtype(values) else values
        parsed = pd.Series(pd.to_datetime(parsed, errors="coerce"))
        x = np.full(values.size, np.nan)
        ok = parsed.notna().to_numpy()
        if ok.any():
            x[ok] = dates_to_decimal_years(parsed[ok])
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        kind = "a date or a number" if ds.x_kind == "date" else "a number"
        raise DataError(f"the time {values.iloc[bad[0]]!r} to forecast at is not {kind}")
    last = float(ds.x[:, 0].max())
    early = np.flatnonzero(x <= last)
    if early.size:
        raise DataError(f"the time {values.iloc[early[0]]!r} to forecast at is not after the last observation "
                        f"({future_labels(ds, np.array([last]))[0]}); predict the points inside the data instead")
    return x


def _business_daily(ds: Dataset) -> bool:
    """Daily dates at midnight, none on a Saturday or Sunday, with weekends skipped: stock prices,
    exchange rates, working-day counts."""
    return _business_days(ds.x[:, 0])


def _business_days(x: Array) -> bool:
    """:func:`_business_daily` of the decimal-year dates ``x`` (shape (n,))."""
    days = decimal_years_to_dates(x).round("s")
    if x.size < 10 or abs(median_step(x) * 365.2425 - 1) > 1e-3 or (days != days.normalize()).any():
        return False
    gaps = np.diff(days.asi8) // 86_400_000_000_000
    return bool((days.dayofweek < 5).all() and (gaps == 3).any())


def _monthly(ds: Dataset) -> bool:
    """Dates on the exact month-start grid (``year + (month − 1)/12``), stepping whole months."""
    x12 = ds.x[:, 0] * 12
    return bool(np.allclose(x12, np.round(x12), rtol=0.0, atol=1e-6)) and median_step(ds.x[:, 0]) * 12 >= 1 - 1e-9


def future_labels(ds: Dataset, x: Array) -> pd.Series:
    """The x values of a forecast as a user reads them: ISO dates (month starts on the monthly grid,
    else to the second) for date data, else the numbers."""
    if ds.x_kind != "date":
        return pd.Series(np.asarray(x, dtype=np.float64))
    if _monthly(ds):
        m = np.round(np.asarray(x) * 12).astype(np.int64)
        return pd.Series([f"{v // 12:04d}-{v % 12 + 1:02d}-01" for v in m])
    return pd.Series(decimal_years_to_dates(x).round("s").strftime("%Y-%m-%d %H:%M:%S")).str.replace(
        " 00:00:00", "", regex=False)




@dataclass(frozen=True)
class StepGrid:
    """Where the points of a series lie on its regular steps (:func:`step_grid`).

    Attributes
    ----------
    train : ndarray of int, shape (n_train,)
        The step of each training point, the first at 0, strictly increasing.
    test : ndarray of shape (n_test,)
        The step of each test point (after ``train[-1]``; a fraction between two steps where a point
        lies between them).
    """

    train: NDArray[np.int64]
    test: Array

    @property
    def regular(self) -> bool:
        """No gap: the training points are consecutive steps and the test points the steps after them."""
        n = self.train.size
        return bool(np.array_equal(self.train, np.arange(n)) and np.allclose(self.test, n + np.arange(self.test.size),
                                                                             rtol=0.0, atol=1e-9))

    @property
    def gaps(self) -> int:
        """Steps of the training range with no point: what :meth:`fill` fills."""
        return int(self.train[-1] + 1 - self.train.size) if self.train.size else 0

    @property
    def horizon(self) -> int:
        """Steps after the training part up to the last test point's (at least 1)."""
        return max(1, int(np.ceil(float(self.test.max()) - self.train[-1] - 1e-9))) if self.test.size else 1

    def fill(self, y: Array) -> Array:
        """The training values ``y`` (shape (n_train,)) on every step from 0 to ``train[-1]``, each gap a
        straight line between its neighbours: shape (train[-1] + 1,)."""
        return np.interp(np.arange(self.train[-1] + 1, dtype=np.float64), self.train.astype(np.float64), y)

    def read(self, forecast: Array) -> Array:
        """A forecast of the :attr:`horizon` steps after the training part (shape (horizon,)) at the test points
        (shape (n_test,)): the step's value, or a straight line between two steps (the first step's value
        before it)."""
        steps = self.train[-1] + np.arange(1, forecast.size + 1, dtype=np.float64)
        return np.interp(self.test, steps, forecast)


def step_grid(x_train: Array, x_test: Array, x_kind: str = "number") -> StepGrid:
    """The steps of the training points ``x_train`` (shape (n_train,), sorted) and of the test points
    ``x_test`` (shape (n_test,), sorted, after them).

    A step is the training points' median spacing. Each spacing counts as the whole number of steps it
    is nearest to (at least 1), so months of 28 to 31 days are one step each and a spacing of two steps
    is one step without a point. Test points count the same way, but keep a fraction where they lie
    more than a fifth of a step away from a whole step (a forecast asked at any time). Dates on
    business days (none on a weekend, weekends skipped) count business days: a weekend is no gap.

    Parameters
    ----------
    x_train : ndarray of shape (n_train,)
        At least one point.
    x_test : ndarray of shape (n_test,)
    x_kind : str
        ``"date"`` when x holds decimal years.

    Returns
    -------
    StepGrid
    """
    xt = np.asarray(x_train, dtype=np.float64)
    xs = np.asarray(x_test, dtype=np.float64)
    both = np.concatenate([xt, xs])
    if x_kind == "date" and xt.size >= 10 and _business_days(xt):
        days = decimal_years_to_dates(both).round("D").to_numpy().astype("datetime64[D]")
        pos = np.busday_count(days[0], days, weekmask="1111100").astype(np.float64)
        return StepGrid(pos[:xt.size].astype(np.int64), pos[xt.size:])
    step = median_step(xt) if xt.size > 1 else 1.0
    ratio = np.diff(both) / step
    whole = np.maximum(1.0, np.round(ratio))
    near = np.abs(ratio - np.round(ratio)) <= 0.2
    counted = np.where(near | (np.arange(ratio.size) < xt.size - 1), whole, np.maximum(ratio, 0.0))
    pos = np.concatenate([[0.0], np.cumsum(counted)])
    return StepGrid(pos[:xt.size].astype(np.int64), pos[xt.size:])
