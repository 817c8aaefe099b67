"""Season lengths, in steps, for the classical forecasters: read from the spacing of x.

Classical forecasters (:mod:`evocov_core.forecast.classical`) see a series as consecutive steps and
need its seasons as whole numbers of steps. EvoCov stores dates as decimal years
(:mod:`evocov_core.data`: ``year + (month − 1)/12`` for month starts, otherwise
``1970 + days/365.2425``), and the TSDL series give x in decimal years too (``x_label ==
"year"``), so the median step of x, in years, says what the data are:

============  =================  ==========================================
median step   data               seasons (steps)
============  =================  ==========================================
1 year        annual             none (1)
1/4 year      quarterly          4
1/12 year     monthly            12
7 days        weekly             52
1 day         daily              7, and 365
1 day         business days      5 (one gap in five or more is 3 days: weekends)
1 hour        hourly             24, 168
30 min        half-hourly        48, 336
15 min        quarter-hourly     96, 672
5 min         five-minute        288, 2016
============  =================  ==========================================

A step matches a row when it is within ``tolerance`` (10 %) of it: months of 28-31 days and
a few missing points still read as monthly. Plain numbers (and steps in no row) take the
period of the strongest periodogram peak of the training data
(:func:`evocov_core.fitting.spectrum.periodogram_peaks`) in whole steps, when that peak is clear
(:data:`CLEAR_PEAK`), else no season. Seasons given by the user win over all of this.

Whatever their source, a season that the training part cannot support (fewer than two full
seasons of points) is dropped, with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.spectrum import periodogram_peaks

__all__ = ["CLEAR_PEAK", "Seasons", "calendar_periods", "infer_seasons", "is_years", "parse_seasons"]

DAY = 1.0 / 365.2425  # one day in decimal years (evocov_core.data's day-based dates)

#: (step in years, what the data are, season lengths in steps), longest step first.
CALENDAR: tuple[tuple[float, str, tuple[int, ...]], ...] = (
    (1.0, "annual", ()),
    (1 / 4, "quarterly", (4,)),
    (1 / 12, "monthly", (12,)),
    (7 * DAY, "weekly", (52,)),
    (DAY, "daily", (7, 365)),
    (DAY / 24, "hourly", (24, 168)),
    (DAY / 48, "half-hourly", (48, 336)),
    (DAY / 96, "quarter-hourly", (96, 672)),
    (DAY / 288, "five-minute", (288, 2016)),
)

#: A periodogram peak is a season when it holds at least this share of the power of the
#: strongest 8 peaks and twice the runner-up's (measured: white noise 0.16-0.19, a sine at
#: SNR 1 above 0.5).
CLEAR_PEAK = 0.3


@dataclass(frozen=True)
class Seasons:
    """Season lengths of a series, in steps.

    Attributes
    ----------
    primary : int
        The main season (1: none).
    secondary : tuple of int
        Further seasons (e.g. 365 beside 7 for daily data), each a whole number of steps.
    step : float
        Median spacing of the training x (x units; decimal years for dates).
    source : str
        Where they come from: ``"monthly dates"``, ``"periodogram"``, ``"given"``...
    notes : tuple of str
        Seasons dropped and why, irregular spacing: one sentence each.
    """

    primary: int
    secondary: tuple[int, ...] = ()
    step: float = math.nan
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def lengths(self) -> tuple[int, ...]:
        """Every season longer than one step, primary first (empty: no season)."""
        return tuple(m for m in (self.primary, *self.secondary) if m > 1)

    def describe(self) -> str:
        """One line, e.g. ``"12 (monthly dates)"`` or ``"none (no clear periodogram peak)"``."""
        what = ", ".join(map(str, self.lengths)) or "none"
        return f"{what} ({self.source})" if self.source else what


def is_years(ds: Dataset) -> bool:
    """Whether x holds decimal years: dates, or a TSDL-style ``year`` column."""
    return ds.x_kind == "date" or str(ds.x_label).strip().lower() == "year"


def _median_step(x: NDArray[np.float64]) -> tuple[float, float]:
    """Median positive gap of sorted x, and the share of gaps more than 10 % away from it."""
    gaps = np.diff(np.sort(x))
    gaps = gaps[gaps > 0]
    if not gaps.size:
        return math.nan, 0.0
    step = float(np.median(gaps))
    return step, float(np.mean(np.abs(gaps - step) > 0.1 * step))


def _calendar(x: NDArray[np.float64], step: float, tolerance: float) -> tuple[str, tuple[int, ...]] | None:
    """What the data are and their seasons, when the step is in :data:`CALENDAR`."""
    for years, label, seasons in CALENDAR:
        if abs(step - years) <= tolerance * years:
            if label == "daily":
                gaps = np.diff(np.sort(x)) / DAY
                if np.mean(np.abs(gaps - 3.0) < 0.5) > 0.15:  # Friday to Monday: a five-day week
                    return "business-day", (5,)
            return label, seasons
    return None


def _periodogram(x: NDArray[np.float64], y: NDArray[np.float64], step: float) -> tuple[str, tuple[int, ...]]:
    omegas, weights = periodogram_peaks(x, y)
    if not len(omegas):
        return "no periodogram peak", ()
    runner_up = float(weights[1]) if len(weights) > 1 else 0.0
    if weights[0] < CLEAR_PEAK or weights[0] < 2 * runner_up:
        return "no clear periodogram peak", ()
    steps = round(2 * math.pi / float(omegas[0]) / step)
    if steps < 2:
        return "no periodogram peak of 2 steps or more", ()
    return "periodogram", (steps,)


def calendar_periods(ds: Dataset, *, tolerance: float = 0.1) -> tuple[float, ...]:
    """The calendar seasons of a dated series' training part, in x units (decimal years), exactly.

    The seasons of :data:`CALENDAR` for its step (daily data: a week and a year), as lengths of
    time rather than whole steps: a year is 365.2425 days, not 365 steps, and a business-day
    series' week is 7 days (5 steps). Empty when x is not in years or the step is in no row.

    Parameters
    ----------
    ds : Dataset
        One input column (time) or more (the first is read).
    tolerance : float
        As in :func:`infer_seasons`.

    Returns
    -------
    tuple of float
        Periods in decimal years, in the order of :data:`CALENDAR`'s seasons (shortest first).
    """
    if not is_years(ds):
        return ()
    x = ds.X_train[:, 0]
    step, _ = _median_step(x)
    known = _calendar(x, step, tolerance) if math.isfinite(step) else None
    if known is None:
        return ()
    label, seasons = known
    nominal = 7 * DAY / 5 if label == "business-day" else next(y for y, lab, _ in CALENDAR if lab == label)
    # 365 days is a year, give or take the quarter day that a long record's phase needs.
    return tuple(1.0 if abs(m * nominal - 1.0) < 0.01 else m * nominal for m in seasons)


def infer_seasons(ds: Dataset, season_lengths: Sequence[int] | None = None, *, tolerance: float = 0.1) -> Seasons:
    """Season lengths of the training part of ``ds``, in steps (see the module docstring).

    Parameters
    ----------
    ds : Dataset
        One input column (time); only the training part is read.
    season_lengths : sequence of int, optional
        Given seasons (first = primary): they win over the inferred ones. 1 means none.
    tolerance : float
        Relative distance of the median step to a calendar step that still matches it.

    Returns
    -------
    Seasons
        With notes for seasons dropped (fewer than two full seasons in the training part) and
        for irregular spacing.

    Raises
    ------
    ValueError
        A given season length below 1.
    """
    x = ds.X_train[:, 0]
    n = x.size
    step, off = _median_step(x)
    notes: list[str] = []
    if season_lengths:
        bad = [m for m in season_lengths if int(m) != m or m < 1]
        if bad:
            raise ValueError(f"season lengths must be whole numbers of steps, at least 1; got {bad[0]}")
        source, found = "given", tuple(int(m) for m in season_lengths)
    else:
        known = _calendar(x, step, tolerance) if is_years(ds) and math.isfinite(step) else None
        if known is not None:
            source, found = f"{known[0]} {'dates' if ds.x_kind == 'date' else 'steps'}", known[1]
        elif math.isfinite(step):
            source, found = _periodogram(x, ds.y_train, step)
        else:
            source, found = "no step", ()
    if off > 0.1 and not source.startswith("business"):  # weekends are the business days' only gaps
        notes.append(f"{off:.0%} of the steps differ from the median step by more than 10 %: "
                     "the classical forecasters get a copy on regular steps, each gap filled by a straight line")
    kept: list[int] = []
    for m in dict.fromkeys(found):  # in order, once each
        if m <= 1:
            continue
        if n < 2 * m:
            notes.append(f"season {m} dropped: the {n} training points hold fewer than two full seasons")
        else:
            kept.append(m)
    return Seasons(kept[0] if kept else 1, tuple(kept[1:]), step, source, tuple(notes))


def parse_seasons(text: str) -> tuple[int, ...] | None:
    """Season lengths typed by a person: ``"12"``, ``"7, 365"`` or ``"7 365"``; empty: None (infer them).

    ``"1"`` or ``"none"`` means no season (the models are fitted without one).

    Returns
    -------
    tuple of int or None
        For :func:`infer_seasons`'s ``season_lengths`` (main season first).

    Raises
    ------
    ValueError
        One line, for anything but whole numbers of at least 1.
    """
    words = text.replace(",", " ").replace(";", " ").split()
    if not words:
        return None
    if [w.lower() for w in words] == ["none"]:
        return (1,)
    out = []
    for w in words:
        try:
            m = int(w)
        except ValueError:
            raise ValueError(f"seasons are whole numbers of steps, e.g. 12 or 7, 365; got {w!r}") from None
        if m < 1:
            raise ValueError(f"a season is at least 1 step (1: none); got {m}")
        out.append(m)
    return tuple(out)
