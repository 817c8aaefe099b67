"""The steps after a series: where a forecast past the data lies, and how a user reads those times.

The next ``h`` steps continue the data's median spacing from the last observed x (:func:`future_x`): the
next 12 months of a monthly series, the next 48 half-hours, the next trading days (weekdays) of a
business-day series. For dates on the exact monthly grid the labels are month starts
(:func:`future_labels`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from evocov_core.data.dataset import Dataset
from evocov_core.data.dates import days_to_decimal_years, decimal_years_to_dates
from evocov_core.data.limits import DataError
from evocov_core.fitting.metrics import median_step

__all__ = ["MAX_HORIZON", "future_labels", "future_x"]

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


def _business_daily(ds: Dataset) -> bool:
    """Daily dates at midnight, none on a Saturday or Sunday, with weekends skipped: stock prices,
    exchange rates, working-day counts."""
    days = decimal_years_to_dates(ds.x[:, 0]).round("s")
    if ds.n < 10 or abs(median_step(ds.x[:, 0]) * 365.2425 - 1) > 1e-3 or (days != days.normalize()).any():
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


