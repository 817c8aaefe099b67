"""Dates: whether a column holds dates, which one format reads it, and decimal years.

``x`` is stored as floats in the data's own units. Dates become decimal years:
``year + (month − 1)/12`` when every date is the first of a month (so monthly series
are an exact regular grid), otherwise ``1970 + days since 1970-01-01 / 365.2425``.

A column is sniffed on its first :data:`~evocov_core.data.limits.SNIFF_VALUES` values and then
read whole with one format in vectorised passes: the cost does not grow with the number of
formats tried, nor does a column of text ever call pandas' date parser.
"""

from __future__ import annotations

import re
import warnings
from datetime import datetime

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from pandas.tseries.api import guess_datetime_format

from evocov_core.data.limits import MAX_VALUE_CHARS, SNIFF_VALUES

__all__ = ["dates_to_decimal_years", "days_to_decimal_years", "decimal_years_to_dates", "is_date", "looks_like_dates",
           "parse_dates"]

Array = NDArray[np.float64]


#: Formats tried after pandas' guess from a column's first values (which reads numeric dates of
#: every order, with times and zones, but no month names), when the values hold letters.
_MONTH_NAME_FORMATS = ("%b %Y", "%B %Y", "%Y %b", "%Y %B", "%b-%Y", "%b-%y", "%Y-%b", "%d %b %Y", "%d %B %Y",
                       "%b %d, %Y", "%B %d, %Y", "%d-%b-%Y", "%d-%b-%y", "%b %d %Y", "%d.%b.%Y")

#: Quarters as statistics offices write them (``2020Q1``, ``2020-Q1``, ``2020 q1``): our own pseudo-format,
#: read as the quarter's first day (so that quarterly series are an exact grid of decimal years).
_QUARTER = "quarter"
_QUARTER_RE = r"^(\d{4})\s*-?\s*[Qq]([1-4])$"


#: What ISO 8601 as pandas reads it may look like (``2020``, ``2020-01``, ``20200101``, times, zones):
#: a quick test of a column's first value before pandas reads its sample.
_ISO_RE = re.compile(r"\d{4}(-\d{2}(-\d{2})?|\d{4})?([T ]\d{2}(:?\d{2}(:?\d{2}([.,]\d+)?)?)?)?\s*"
                     r"(Z|[+-]\d{2}(:?\d{2})?)?")


def _fits(value: str, fmt: str) -> bool:
    """Whether one value may be read with ``fmt``: a quick test in plain Python (a few µs), so that a
    column of text costs no call of pandas' parser; pandas decides on the whole sample."""
    if fmt == "ISO8601":
        return _ISO_RE.fullmatch(value) is not None
    if fmt == _QUARTER:
        return re.fullmatch(_QUARTER_RE, value) is not None
    try:
        datetime.strptime(value, fmt)
    except ValueError:
        # Pandas reads more digits of a second's fraction (%f) than Python: let pandas decide.
        return "%f" in fmt
    return True


def _date_candidates(sample: list[str]) -> list[str]:
    """Formats that may read a column of dates, from its first three distinct values that hold a digit
    (a stray ``n/a`` does not decide), each format fitting one of them at least: pandas' guess month
    first, then day first (``01/02/2020``), ISO 8601 (of any precision), then quarters and month names."""
    first: list[str] = []
    for value in sample:  # a column of one value repeated is not read to its end
        if value not in first and _DIGIT.search(value):
            first.append(value)
            if len(first) == 3:
                break
    out: list[str] = []
    with warnings.catch_warnings():
        # "Parsing dates in %d/%m/%Y format when dayfirst=False": the order of guesses is ours.
        warnings.simplefilter("ignore", UserWarning)
        for value in first:
            for dayfirst in (False, True):
                try:
                    fmt = guess_datetime_format(value, dayfirst=dayfirst)
                except (ValueError, TypeError, OverflowError):
                    fmt = None
                if fmt and fmt not in out:
                    out.append(fmt)
    out += ["ISO8601", _QUARTER]
    if any(re.search("[A-Za-z]{3}", v) for v in first):
        out += [f for f in _MONTH_NAME_FORMATS if f not in out]
    return [f for f in out if any(_fits(v, f) for v in first)]


def _parse_with(values: pd.Series, fmt: str) -> pd.Series:
    """``values`` read with one format, vectorised (NaT where a value does not fit it), in UTC."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if fmt == _QUARTER:
                parts = values.astype(str).str.extract(_QUARTER_RE)
                months = (pd.to_numeric(parts[1]) - 1) * 3 + 1
                return pd.to_datetime(pd.DataFrame({"year": pd.to_numeric(parts[0]), "month": months, "day": 1}),
                                      errors="coerce", utc=True)
            return pd.to_datetime(values, format=fmt, errors="coerce", utc=True)
    except (ValueError, TypeError, OverflowError):  # a format pandas cannot use at all
        return pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")


def _text_sample(s: pd.Series) -> list[str] | None:
    """The first :data:`SNIFF_VALUES` values of a column that are not missing, as stripped text; None
    when there are none or one is longer than a number or a date can be (the column is text)."""
    values = s.to_numpy()
    sample = [str(v).strip() for v in values[np.flatnonzero(pd.notna(values))[:SNIFF_VALUES]]]
    if not sample or max(map(len, sample)) > MAX_VALUE_CHARS:
        return None
    return sample


def _date_formats(sample: list[str], enough: float = 1.1) -> list[tuple[str, float]]:
    """(format, share of the sample it reads) of the candidate formats that read some of it, in the
    order of :func:`_date_candidates` (ties keep that order: month first before day first). The
    first format that reads more than ``enough`` of the sample ends the list (a quick yes)."""
    if sum(1 for v in sample if _DIGIT.search(v)) <= 0.9 * len(sample):  # every date holds a digit
        return []
    candidates = _date_candidates(sample)
    if not candidates:  # the usual column of text: no call of pandas' parser
        return []
    text = pd.Series(sample, dtype=object)
    found = []
    for fmt in candidates:
        share = float(_parse_with(text, fmt).notna().mean())
        if share > 0:
            found.append((fmt, share))
        if share > enough:
            break
    return sorted(found, key=lambda fs: -fs[1])


_DIGIT = re.compile(r"\d")


def parse_dates(values: pd.Series) -> pd.Series:
    """Date strings or datetimes -> naive UTC timestamps (NaT where a value is no date).

    One format for the whole column, so that a column is never read partly month first and partly
    day first: ``01/02/2020`` is 1 February unless another value (``13/01/2020``) only reads day
    first, and then every value is read day first. The format is chosen on the column's first
    :data:`SNIFF_VALUES` values (pandas' guess from the first ones, month first then day first,
    ISO 8601, quarters such as ``2020Q1``, then formats with month names); the whole column is then
    read with it in one vectorised call, never value by value. When a value does not fit, the other
    formats that read the whole sample are tried, and the one that reads the most values is kept.
    Times with an offset or a zone (``+01:00``, ``Z``, a daylight-saving change) are converted to UTC.
    """
    if pd.api.types.is_datetime64_any_dtype(values):
        return _naive_utc(values)
    sample = _text_sample(values)
    formats = [] if sample is None else _date_formats(sample)
    present = int(values.notna().sum())
    stripped: pd.Series | None = None
    best = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    best_count = -1
    for fmt, share in formats[:3]:  # at most three formats, each read in vectorised passes over the column
        if share < formats[0][1]:
            break
        d = _parse_with(values, fmt)
        if int(d.notna().sum()) < present:
            # Some value does not fit as it is: read again as stripped text ("2020-01-01 " fits); a column
            # read whole at once (the usual file) is never copied.
            if stripped is None:
                stripped = values.astype(str).str.strip().where(values.notna())
            d = _parse_with(stripped, fmt)
        count = int(d.notna().sum())
        if count > best_count:
            best, best_count = d, count
        if count == present:
            break
    return _naive_utc(best)


def _naive_utc(d: pd.Series) -> pd.Series:
    """Timestamps with a zone -> the same instants in UTC, without a zone (others as they are)."""
    return d.dt.tz_convert("UTC").dt.tz_localize(None) if getattr(d.dt, "tz", None) is not None else d


def dates_to_decimal_years(values: pd.Series) -> Array:
    """Dates -> decimal years (exact monthly grid when every date is a month start)."""
    d = _naive_utc(pd.to_datetime(values))
    if bool((d.dt.day == 1).all()) and bool((d.dt.hour == 0).all()):
        return (d.dt.year + (d.dt.month - 1) / 12.0).to_numpy(dtype=np.float64)
    return days_to_decimal_years(pd.DatetimeIndex(d))


def days_to_decimal_years(d: pd.DatetimeIndex) -> Array:
    """Timestamps (naive, UTC) -> decimal years on the day-based scale, never the monthly grid."""
    days = (d - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
    return 1970.0 + np.asarray(days, dtype=np.float64) / 365.2425


def decimal_years_to_dates(x: ArrayLike) -> pd.DatetimeIndex:
    """Inverse of the day-based branch of :func:`dates_to_decimal_years` (for plotting)."""
    days = (np.asarray(x, dtype=np.float64) - 1970.0) * 365.2425
    return pd.Timestamp("1970-01-01") + pd.to_timedelta(days, unit="D")


def looks_like_dates(s: pd.Series) -> bool:
    """Whether a column holds dates: one format reads more than 90 % of its first values."""
    if pd.api.types.is_numeric_dtype(s):
        return False
    if pd.api.types.is_datetime64_any_dtype(s):
        return True
    sample = _text_sample(s)
    if sample is None:
        return False
    formats = _date_formats(sample, enough=0.9)
    return bool(formats) and formats[0][1] > 0.9


def is_date(name: object) -> bool:
    """Whether one value (a header field) reads whole as a date: a headless file's first line."""
    text = str(name).strip()
    if len(text) > MAX_VALUE_CHARS or not any(ch.isdigit() for ch in text):
        return False
    formats = _date_formats([text])
    return bool(formats) and formats[0][1] == 1.0
