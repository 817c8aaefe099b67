"""Datasets: CSV loading and validation, the train/test split and the normalisation.

Conventions
-----------
* ``x`` is stored as floats in the data's own units. Dates become decimal years:
  ``year + (month − 1)/12`` when every date is the first of a month (so monthly series
  are an exact regular grid), otherwise ``1970 + days since 1970-01-01 / 365.2425``.
* The split is the one of the published TSDL benchmark: **test = every point whose x
  lies in the last ``test_fraction`` of the x-range**
  (``cutoff = min + (1 − f)(max − min)``, train ``x ≤ cutoff``). With f = 0.1 it
  reproduces ``../shared/data/tsdl/splits.csv`` exactly.
* Normalisation (fitted on the training part only): ``x̃ = 1 + (x − x_min)/(x_max − x_min)``
  per input dimension, so training inputs span [1, 2]. Unit range keeps lengthscales and
  periods on one scale across data sets; the origin one range before the data lets a
  positive ``dot_prod`` shift put a linear trend's zero anywhere from one range before
  the first point (GPSS's own prior for its location). ``ỹ = (y − mean)/std``. Every
  prediction and score leaves the engine in original units.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from pandas.tseries.api import guess_datetime_format

__all__ = [
    "DATA_DIR",
    "MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_FIELD_CHARS",
    "MAX_FILE_MB",
    "MAX_POINTS",
    "MAX_ROWS",
    "MAX_VALUE_CHARS",
    "DataError",
    "Dataset",
    "Normalisation",
    "bundled_datasets",
    "load_bundled",
    "load_csv",
    "load_tsdl",
    "read_table",
    "validate_split",
]

Array = NDArray[np.float64]

#: The project's bundled datasets (``data/`` at the repository root).


def _bundled_dir() -> Path:
    """The bundled datasets: ``data/`` of a clone, else the installed package ``evocov_data``."""
    clone = Path(__file__).resolve().parent.parent / "data"
    if (clone / "catalog.json").is_file():
        return clone
    try:
        from importlib.resources import files

        installed = Path(str(files("evocov_data")))
    except ModuleNotFoundError:
        return clone
    return installed if (installed / "catalog.json").is_file() else clone


DATA_DIR = _bundled_dir()

MIN_POINTS = 10
#: Largest magnitude accepted in a column: squares of 1e150 already overflow float64.
MAX_ABS_VALUE = 1e100
#: Smallest standard deviation of a column to model (below it, variances underflow).
MIN_SPREAD = 1e-100
#: The most points a table may give unless the caller says otherwise (the Data page's default).
#: Fits never use more than a search's ``fit_points`` of them (an exact GP on a subset of the
#: data, :mod:`evocov_core.fitting.subset`), so this bounds only reading, drawing and forecasting:
#: 200,000 half-hourly points are eleven years.
MAX_POINTS = 200_000
#: The former name of :data:`MAX_POINTS`.
DEFAULT_MAX_POINTS = MAX_POINTS

# What the reader accepts, the command line and the dashboard alike (:func:`read_table`); a file past
# one of these limits is refused with the limit named. Each bounds the cost of reading: the work is
# linear in the file's size, and never more than one pass of pandas' parsers over a column.
#: The largest file in MB (2**20 bytes, as Streamlit counts them): ``server.maxUploadSize`` of
#: ``.streamlit/config.toml`` is this number. 50 MB holds 2,000,000 rows of ``2020-01-01,123.45``.
MAX_FILE_MB = 50
#: :data:`MAX_FILE_MB` in bytes.
MAX_BYTES = MAX_FILE_MB * 1024 * 1024
#: The most data rows (ten times :data:`MAX_POINTS`: longer tables are refused, not thinned).
MAX_ROWS = 2_000_000
#: The most columns: a time series table has a handful; 1,000 leaves room for wide exports.
MAX_COLUMNS = 1_000
#: The longest field, in characters (a note or a label may be long; a number or a date never is).
MAX_FIELD_CHARS = 10_000
#: The longest field read as a number or a date: a longer one makes its column text, at once.
MAX_VALUE_CHARS = 64
#: How many of a column's first values decide whether it holds numbers, dates or decimal commas.
SNIFF_VALUES = 200


class DataError(ValueError):
    """Input data cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Normalisation:
    """Affine maps between original and model units (fitted on training data).

    ``x̃ = 1 + (x − x_offset)/x_scale`` per dimension, ``ỹ = (y − y_mean)/y_std``.
    """

    x_offset: tuple[float, ...]
    x_scale: tuple[float, ...]
    y_mean: float
    y_std: float

    @classmethod
    def fit(cls, X: Array, y: Array) -> Normalisation:
        lo = X.min(axis=0)
        span = X.max(axis=0) - lo
        span = np.where(span > 0, span, 1.0)
        mean = float(np.mean(y))
        std = spread(y)
        return cls(tuple(map(float, lo)), tuple(map(float, span)), mean, std if std > 0 else 1.0)

    def x_to_model(self, X: ArrayLike) -> Array:
        """Inputs (n, d) in original units -> model units."""
        A = np.asarray(X, dtype=np.float64)
        if A.ndim == 1:
            A = A[:, None]
        if A.shape[1] != len(self.x_offset):
            # Broadcasting would turn one input column into as many as the normalisation has.
            raise DataError(f"the inputs have {A.shape[1]} column(s) but the normalisation (of the kernel "
                            f"file, or of the data it was fitted on) has {len(self.x_offset)}")
        return 1.0 + (A - np.asarray(self.x_offset)) / np.asarray(self.x_scale)

    def y_to_model(self, y: ArrayLike) -> Array:
        return (np.asarray(y, dtype=np.float64) - self.y_mean) / self.y_std

    def y_from_model(self, y: ArrayLike) -> Array:
        return np.asarray(y, dtype=np.float64) * self.y_std + self.y_mean

    def std_from_model(self, s: ArrayLike) -> Array:
        return np.asarray(s, dtype=np.float64) * self.y_std

    def to_dict(self) -> dict:
        return {
            "x_offset": list(self.x_offset),
            "x_scale": list(self.x_scale),
            "y_mean": self.y_mean,
            "y_std": self.y_std,
            "x_model": "x_model = 1 + (x - x_offset) / x_scale",
            "y_model": "y_model = (y - y_mean) / y_std",
        }

    @classmethod
    def from_dict(cls, d: dict) -> Normalisation:
        return cls(tuple(map(float, d["x_offset"])), tuple(map(float, d["x_scale"])),
                   float(d["y_mean"]), float(d["y_std"]))


#: The least training points a search may learn from, and the test fraction a split must stay below.
MIN_TRAIN_POINTS = 10
MAX_TEST_FRACTION = 0.5


def validate_split(test_fraction: float, n_train: int | None = None) -> None:
    """Refuse a split no search should learn from, with a :class:`DataError` of one line.

    The one check of the command line and the dashboard's Data page: a test fraction must
    lie in ``[0, MAX_TEST_FRACTION)`` (the training part is the larger), and the training
    part must hold at least :data:`MIN_TRAIN_POINTS` points. Call it with the fraction alone
    before splitting, and with ``n_train`` once the split is made.

    Parameters
    ----------
    test_fraction : float
        Fraction of the x-range held out as test (see :func:`split_mask`).
    n_train : int, optional
        Training points the split leaves.

    Raises
    ------
    DataError
        Saying what is wrong and what to change.
    """
    f = float(test_fraction)
    if not (0.0 <= f < MAX_TEST_FRACTION):
        raise DataError(f"test fraction {f:g} refused: it must be at least 0 and below {MAX_TEST_FRACTION:g}, "
                        "so that the training part is the larger")
    if n_train is not None and n_train < MIN_TRAIN_POINTS:
        raise DataError(f"test fraction {f:g} leaves {n_train} training point{'s' if n_train != 1 else ''}; "
                        f"at least {MIN_TRAIN_POINTS} are needed: lower the test fraction")


def split_mask(x: Array, test_fraction: float) -> NDArray[np.bool_]:
    """Training mask by the x-range rule (first input column)."""
    if not (0.0 <= test_fraction < 1.0):
        raise DataError(f"test fraction must be in [0, 1), got {test_fraction}")
    t = x[:, 0]
    lo, hi = float(t.min()), float(t.max())
    cutoff = lo + (1.0 - test_fraction) * (hi - lo)
    return t <= cutoff


def units_mismatch(fitted: Normalisation, data: Normalisation) -> str | None:
    """How far data normalised by ``data`` lie from those ``fitted`` was made on, or None when near.

    A kernel's hyperparameters live in the model units of the data it was fitted on: there its
    training values have mean 0 and spread 1, and its inputs run from 1 to 2. Other data in those
    units with a mean beyond ±5, a spread or an input span off by more than 10×, or inputs
    starting more than 10 spans away, are data the kernel has never seen.
    """
    if len(fitted.x_offset) != len(data.x_offset):
        return f"it has {len(fitted.x_offset)} input column(s), these data {len(data.x_offset)}"
    mean = (data.y_mean - fitted.y_mean) / fitted.y_std
    ratio = data.y_std / fitted.y_std
    if abs(mean) > 5 or not 0.1 <= ratio <= 10:
        return (f"in its units these data's values have mean {mean:.3g} and spread {ratio:.3g} "
                "(0 and 1 on its own data)")
    columns = zip(fitted.x_offset, fitted.x_scale, data.x_offset, data.x_scale, strict=True)
    for j, (o1, s1, o2, s2) in enumerate(columns):
        start, span = 1.0 + (o2 - o1) / s1, s2 / s1
        if abs(start - 1.0) > 10 or not 0.1 <= span <= 10:
            col = f"input {j + 1}" if len(fitted.x_offset) > 1 else "the input"
            return f"in its units {col} runs from {start:.3g} to {start + span:.3g} (1 to 2 on its own data)"
    return None

@dataclass(frozen=True)
class Dataset:
    """A regression data set with its train/test split and normalisation.

    Attributes
    ----------
    name : str
    x : ndarray of shape (n, d)
        Inputs in original units (decimal years for dates), sorted by the first column.
    y : ndarray of shape (n,)
    train : ndarray of bool, shape (n,)
        Training mask; the rest is the test part.
    x_label, y_label : str
    x_kind : str
        ``"number"`` or ``"date"`` (x holds decimal years).
    notes : tuple of str
        What loading changed (sorted, duplicates averaged, rows dropped, subsampled).
    test_fraction : float
    """

    name: str
    x: Array
    y: Array
    train: NDArray[np.bool_]
    x_label: str = "x"
    y_label: str = "y"
    x_kind: str = "number"
    notes: tuple[str, ...] = ()
    test_fraction: float = 0.1
    norm: Normalisation = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if int(self.train.sum()) < 2:
            raise DataError("the training part has fewer than 2 points; lower the test fraction")
        object.__setattr__(self, "norm", Normalisation.fit(self.x[self.train], self.y[self.train]))

    @classmethod
    def from_arrays(
        cls,
        x: ArrayLike,
        y: ArrayLike,
        *,
        name: str = "data",
        test_fraction: float = 0.1,
        duplicates: str = "average",
        x_label: str = "x",
        y_label: str = "y",
        x_kind: str = "number",
        notes: tuple[str, ...] = (),
        min_points: int = MIN_POINTS,
    ) -> Dataset:
        """Validate, sort and split.

        Parameters
        ----------
        x : array_like of shape (n,) or (n, d)
        y : array_like of shape (n,)
        duplicates : {"average", "keep"}
            Repeated x values: average their y (and say so), or keep every point.
        """
        X = np.asarray(x, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        Y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.shape[0] != Y.shape[0]:
            raise DataError(f"x has {X.shape[0]} rows but y has {Y.shape[0]}")
        bad = ~np.isfinite(Y) | ~np.all(np.isfinite(X), axis=1)
        if bad.any():
            rows = ", ".join(str(i + 1) for i in np.flatnonzero(bad)[:5])
            more = "…" if bad.sum() > 5 else ""
            raise DataError(f"{int(bad.sum())} rows have missing or infinite values (rows {rows}{more})")
        extra: list[str] = list(notes)
        order = np.argsort(X[:, 0], kind="stable")
        if np.any(order != np.arange(len(order))):
            extra.append("rows were not sorted by x; sorted them")
            X, Y = X[order], Y[order]
        rows = X.shape[0]
        # One input column sorted strictly upwards repeats no x: skip np.unique's sort of rows (1 s at 10⁶).
        if duplicates not in ("average", "keep"):
            raise ValueError("duplicates must be 'average' or 'keep'")
        distinct = X.shape[1] == 1 and bool(np.all(np.diff(X[:, 0]) > 0))
        if duplicates == "average" and not distinct:
            keys, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
            if keys.shape[0] < X.shape[0]:
                inverse = inverse.reshape(-1)
                Y = np.bincount(inverse, weights=Y) / counts
                extra.append(f"{X.shape[0] - keys.shape[0]} repeated x values: averaged their y")
                X = keys
        if X.shape[0] < min_points:
            why = (f" ({rows} rows, whose repeated x values were averaged: is the x column the right one?)"
                   if X.shape[0] < rows else "")
            raise DataError(f"only {X.shape[0]} usable point{'s' * (X.shape[0] != 1)}{why}; at least "
                            f"{min_points} are needed")
        if float(np.ptp(X[:, 0])) <= 0:
            raise DataError("all x values are equal")
        return cls(name, X, Y, split_mask(X, test_fraction), x_label, y_label, x_kind,
                   tuple(extra), test_fraction)

    # --- views ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_train(self) -> int:
        return int(self.train.sum())

    @property
    def n_test(self) -> int:
        return self.n - self.n_train

    @property
    def X_train(self) -> Array:
        return self.x[self.train]

    @property
    def y_train(self) -> Array:
        return self.y[self.train]

    @property
    def X_test(self) -> Array:
        return self.x[~self.train]

    @property
    def y_test(self) -> Array:
        return self.y[~self.train]

    def with_test_fraction(self, test_fraction: float) -> Dataset:
        """Same data, new split (and normalisation)."""
        return replace(self, train=split_mask(self.x, test_fraction), test_fraction=test_fraction)

    def subsample(self, max_points: int) -> Dataset:
        """Keep ``max_points`` evenly spaced points (by position), both parts thinned alike.

        GP cost grows as n³: halving n makes each fit about 8x faster, at the price of
        the detail between kept points.
        """
        if self.n <= max_points:
            return self
        idx = np.unique(np.round(np.linspace(0, self.n - 1, max_points)).astype(int))
        note = f"subsampled from {self.n} to {idx.size} evenly spaced points"
        return Dataset.from_arrays(self.x[idx], self.y[idx], name=self.name, test_fraction=self.test_fraction,
                                   duplicates="keep", x_label=self.x_label, y_label=self.y_label,
                                   x_kind=self.x_kind, notes=(*self.notes, note))


# --- reading files ---------------------------------------------------------------


def spread(y: ArrayLike) -> float:
    """The standard deviation of ``y``; below 1e-140, where squares lose their digits, computed on
    ``y`` scaled to at most 1 about its mean, so that values of 1e-200 keep their spread."""
    a = np.asarray(y, dtype=np.float64)
    if a.size == 0:
        return 0.0
    plain = float(np.std(a))
    if plain >= 1e-140:
        return plain
    dev = a - np.mean(a)
    scale = float(np.max(np.abs(dev)))
    return scale * float(np.std(dev / scale)) if scale > 0 else 0.0


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


def _looks_like_dates(s: pd.Series) -> bool:
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


def _mb(n: float) -> str:
    # MB of 2**20 bytes, as Streamlit's maxUploadSize counts them: the limit reads "50 MB" in both.
    return f"{n / 2**20:.3g} MB"


def _delimiter(head: str) -> str:
    """The delimiter of a CSV from its first lines: the most frequent of , ; tab | in the
    header that also appears in the next line (comma when the file has one column)."""
    lines = [ln for ln in head.splitlines() if ln.strip()][:5]
    if not lines:
        return ","
    best, count = ",", 0
    for d in (",", ";", "\t", "|"):
        c = lines[0].count(d)
        if c > count and (len(lines) == 1 or lines[1].count(d) > 0):
            best, count = d, c
    return best


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")


def _lines(text: str, pos: int) -> Iterator[str]:
    """The lines of ``text`` from ``pos`` on, one at a time (the header is read without splitting the file),
    each with its end: ``\n``, ``\r\n`` or ``\r`` (old Macs' and some exports')."""
    for match in _LINE.finditer(text, pos):
        if match.group():
            yield match.group()


def _first_record(text: str, pos: int, sep: str) -> list[str] | None:
    """The fields of the first record from ``pos`` (the header line), or None when csv cannot read it."""
    try:
        return next(csv.reader(_lines(text, pos), delimiter=sep, skipinitialspace=True), [])
    except csv.Error as exc:
        if "field limit" in str(exc):  # csv's own limit, 131,072 characters, is above ours
            raise DataError(f"line {text.count(chr(10), 0, pos) + 1} holds a field longer than "
                            f"{MAX_FIELD_CHARS:,} characters, the limit of a field; a table of numbers and "
                            "dates has none: is this the right file?") from None
        return None


#: The bytes a number is written with, quotes and spaces around it included.
_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[list(b"0123456789.,eE+-_ \"'")] = True


def _long_runs(data: bytes, sep: str, chunk: int = 1 << 22) -> tuple[bool, list[tuple[int, int]]]:
    """Whether ``data`` has a run of bytes between separators and line ends longer than a number or a
    date can be (:data:`MAX_VALUE_CHARS`), and (offset, length) of the first 10,000 such runs made of
    number bytes alone: fields that pandas may have read as numbers though no number is so long.

    One vectorised pass, block by block, so that memory stays bounded whatever the file.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    stops = [ord(c) for c in sep + "\n\r"]
    has_long, numbers = False, []
    start, carry = 0, 0  # the open run's first byte, and how many of its bytes so far are no number's
    for lo in range(0, arr.size, chunk):
        block = arr[lo:lo + chunk]
        ends = np.flatnonzero((block == stops[0]) | (block == stops[1]) | (block == stops[2])) + lo
        starts = np.concatenate(([start], ends[:-1] + 1))
        long = np.flatnonzero(ends - starts > MAX_VALUE_CHARS)
        if long.size:  # rare but in files with notes: only then count the bytes that are no number's
            has_long = True
            other = np.concatenate(([0], np.cumsum(~_NUMBER_BYTES[block], dtype=np.int32)))
            s0, e0 = starts[long], ends[long]
            bad = other[e0 - lo] - other[np.maximum(s0 - lo, 0)] + np.where(s0 < lo, carry, 0)
            numbers += [(int(s), int(e - s)) for s, e in zip(s0[bad == 0], e0[bad == 0], strict=True)][:10_000]
        if ends.size:
            start, carry = int(ends[-1]) + 1, 0
        # The open run's bytes in this block (their total over blocks is the run's length).
        carry += int(np.count_nonzero(~_NUMBER_BYTES[arr[max(start, lo):lo + block.size]]))
    if arr.size - start > MAX_VALUE_CHARS:
        has_long = True
        if carry == 0:
            numbers.append((start, arr.size - start))
    return has_long, numbers[:10_000]


def _number_fields(data: bytes, runs: list[tuple[int, int]], sep: str) -> Iterator[tuple[int, int, int]]:
    """(file line, column index, length) of each run of :func:`_long_runs`: the line by counting line ends
    once from the top, the column by counting separators before the run on its line."""
    line, pos = 1, 0
    for offset, length in runs:
        line += data.count(b"\n", pos, offset)
        pos = offset
        begin = data.rfind(b"\n", 0, offset) + 1
        yield line, data.count(sep.encode(), begin, offset), length


def _decode(raw: bytes) -> str:
    """UTF-8 (with or without a byte-order mark), or UTF-16 with its mark (Excel's "Unicode text")."""
    try:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return raw.decode("utf-16")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError("not a readable CSV file (it is not UTF-8 text)") from None


def _read_bytes(source: str | Path | IO[bytes] | IO[str] | bytes, max_bytes: int | None) -> bytes:
    """The file's bytes, refused above ``max_bytes`` before more than that is read."""
    if isinstance(source, (str, Path)):
        p = Path(source)
        if not p.exists():
            raise DataError(f"no such file: {p}")
        if p.is_dir():
            raise DataError(f"{p} is a folder, not a CSV file")
        if max_bytes is not None and p.stat().st_size > max_bytes:
            raise DataError(f"file is {_mb(p.stat().st_size)}, above the limit of {_mb(max_bytes)}")
        raw = p.read_bytes()
    elif isinstance(source, bytes):
        raw = source
    else:
        # One byte past the limit is enough to refuse: a stream is not read to its end.
        content = source.read() if max_bytes is None else source.read(max_bytes + 1)
        raw = content.encode("utf-8") if isinstance(content, str) else content
    if max_bytes is not None and len(raw) > max_bytes:
        size = len(raw)
        if isinstance(source, io.BufferedIOBase | io.RawIOBase) and source.seekable():
            # Only the limit's worth was read: the rest's size, told without reading it.
            with contextlib.suppress(OSError, ValueError):
                here = source.tell()
                size += source.seek(0, io.SEEK_END) - here
        raise DataError(f"file is {_mb(size)}, above the limit of {_mb(max_bytes)}")
    return raw


def read_table(
    source: str | Path | IO[bytes] | IO[str] | bytes,
    *,
    max_bytes: int | None = MAX_BYTES,
    max_rows: int = MAX_ROWS,
    max_columns: int = MAX_COLUMNS,
) -> pd.DataFrame:
    """Read a CSV into a DataFrame with clear errors for files that are not tables.

    The delimiter (comma, semicolon, tab or bar) is taken from the header line. Leading lines that
    start with ``#`` (a data provider's preamble, as NOAA's CO2 files have) are skipped, and with
    ``;`` or tab between fields decimal commas are read as numbers (``1.234,5`` as 1234.5). What
    was changed is listed in ``df.attrs["notes"]``; columns holding a field longer than a number
    or a date can be (:data:`MAX_VALUE_CHARS`) are text, listed with the line of their longest
    field in ``df.attrs["long_fields"]``.

    Reading costs time linear in the file's size: pandas' C parser reads the file once, and
    numbers, dates and decimal commas are sniffed on the first :data:`SNIFF_VALUES` values of a
    column. A file past a limit is refused with the limit named: above ``max_bytes``
    (:data:`MAX_BYTES`), ``max_rows`` (:data:`MAX_ROWS`) or ``max_columns``
    (:data:`MAX_COLUMNS`), or with a field longer than :data:`MAX_FIELD_CHARS` characters.

    Parameters
    ----------
    source : path, bytes or file object
        The CSV file.
    max_bytes : int or None, optional
        The largest file accepted (None: no limit).
    max_rows, max_columns : int, optional
        The most data rows and columns accepted.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DataError
        Saying in one line why the file cannot be read.
    """
    raw = _read_bytes(source, max_bytes)
    text = _decode(raw)
    if not text.strip():
        raise DataError("the file is empty")
    if "\x00" in text:
        raise DataError("not a readable CSV file (it looks binary)")
    notes: list[str] = []
    skip, start = _preamble(text)
    if skip:
        notes.append(f"the first {skip} line(s) start with '#' (or are blank) and were skipped as comments")
        if not text[start:].strip():
            raise DataError("the file holds only comment lines (lines that start with '#') and no table")
    sep = _delimiter(text[start:start + 4096])
    first = _first_record(text, start, sep)
    if first is not None and len(first) > max_columns:
        raise DataError(f"the file has {len(first):,} columns, above the limit of {max_columns:,}: keep the "
                        "columns to model (a date or x column and the values) and try again")
    # The first line is data, not names (a file saved without a header): decided on the header's own
    # fields, so that the file is parsed once.
    headless = bool(first) and all(_is_number(c) or (i == 0 and _is_date(c)) for i, c in enumerate(first))
    try:
        with warnings.catch_warnings():
            # "Columns have mixed types": such a column is read as text, as it should be.
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            # skiprows, not slicing, so that pandas' messages keep the file's own line numbers.
            df = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, skiprows=skip,
                             header=None if headless else "infer", nrows=max_rows + 1)
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty") from None
    except (pd.errors.ParserError, csv.Error, ValueError, OverflowError) as exc:
        raise DataError(f"not a readable CSV file ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(df.index, pd.RangeIndex):
        # Rows with one more field than the header: pandas takes each row's first field as its label.
        df = df.reset_index(drop=True)
        notes.append("the rows have one more field than the header line: the first field of each row was "
                     "taken as its label and left out")
    if headless:
        df.columns = [f"column {i + 1}" for i in range(df.shape[1])]
        notes.append("the file has no header line: its first line was read as data, the columns named "
                     + ", ".join(repr(c) for c in df.columns))
    if df.shape[0] == 0:
        raise DataError("the file has a header but no data rows")
    if df.shape[0] > max_rows:
        raise DataError(f"the file has more than {max_rows:,} rows, the limit: subsample or split it and try again")
    if df.shape[1] > max_columns:
        raise DataError(f"the file has {df.shape[1]:,} columns, above the limit of {max_columns:,}: keep the "
                        "columns to model (a date or x column and the values) and try again")
    df.columns = [str(c).strip() for c in df.columns]
    longest = max((len(c) for c in df.columns), default=0)
    if longest > MAX_FIELD_CHARS:
        raise DataError(f"line {skip + 1} holds a field of {longest:,} characters, above the limit of "
                        f"{MAX_FIELD_CHARS:,} characters a field; a table of numbers and dates has none: is this "
                        "the right file?")
    long_fields: dict[str, tuple[int, int]] = {}
    data = raw if not raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else text.encode("utf-8")
    has_long, number_runs = _long_runs(data, sep)
    # Pandas reads some numbers of any length as floats (1.11e99 for a hundred 1s): such a field makes its
    # column text, as a long field of text does below; past the limit of a field, the file is refused.
    first_data_line = skip + (1 if headless else 2)
    for line, j, n in _number_fields(data, number_runs, sep):
        c = df.columns[j] if line >= first_data_line and j < df.shape[1] else None
        if c is None or df[c].dtype == object or c in long_fields:
            continue
        if n > MAX_FIELD_CHARS:
            raise DataError(f"line {line} holds a field of {n:,} characters (column {c!r}), above the limit of "
                            f"{MAX_FIELD_CHARS:,} characters a field; a table of numbers and dates has none: is "
                            "this the right file?")
        long_fields[c] = (line, n)
    # Without quotes no field spans lines, so when no run between separators is longer than a number or a
    # date can be, no field is either: the usual file is not measured field by field.
    short = '"' not in text and not has_long
    for c in df.columns:
        col = df[c]
        if col.dtype != object or short:
            continue
        lengths = col.str.len()  # NaN for what is not text (missing values, numbers of a mixed column)
        if not bool(lengths.notna().any()) or int(lengths.max()) <= MAX_VALUE_CHARS:
            continue
        row = int(np.nanargmax(lengths.to_numpy(dtype=np.float64)))
        line, n = skip + row + (1 if headless else 2), int(lengths.iloc[row])
        if n > MAX_FIELD_CHARS:
            raise DataError(f"line {line} holds a field of {n:,} characters (column {c!r}), above the limit of "
                            f"{MAX_FIELD_CHARS:,} characters a field; a table of numbers and dates has none: is "
                            "this the right file?")
        long_fields[c] = (line, n)
    if sep != ",":
        # With ; or tab between fields (as spreadsheets in many locales save), 0,5 is one half.
        for c in df.columns:
            col = df[c]
            if (col.dtype == object and c not in long_fields and _comma_numbers(col.head(SNIFF_VALUES))
                    and _comma_numbers(col)):
                text_col = col.astype(str).str.strip()
                grouped = bool(text_col.str.contains(".", regex=False).any())
                # A point between digit groups is a thousands separator here (1.234,5): _comma_numbers
                # has checked that every point sits between groups of three.
                df[c] = pd.to_numeric(text_col.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
                                      .where(col.notna()), errors="coerce")
                notes.append(f"column {c!r} has decimal commas: read as numbers (0,5 as 0.5"
                             + ("; 1.234,5 as 1234.5)" if grouped else ")"))
    df.attrs["notes"] = notes
    df.attrs["long_fields"] = long_fields
    return df


#: A number written with a decimal comma: 12,5 or -0,25 or 3, or with points between groups of three
#: digits (1.234,5 or 1.234.567).
_DECIMAL_COMMA = r"[+-]?(\d{1,3}(\.\d{3})+(,\d*)?|\d+(,\d*)?|,\d+)([eE][+-]?\d+)?"


def _preamble(text: str) -> tuple[int, int]:
    """(lines, characters) of the leading lines that are comments (``#``) or blank, counted only when
    one is a comment."""
    k, pos, comment, start = 0, 0, False, 0
    while pos < len(text):  # line by line from the top: a 100,000-row file is not split to read its head
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end].strip()
        if line and not line.startswith("#"):
            break
        comment = comment or bool(line)
        k, pos = k + 1, end + 1
    if comment:
        start = min(pos, len(text))
    return (k, start) if comment else (0, 0)


def _comma_numbers(col: pd.Series) -> bool:
    """Whether a text column's values are numbers once a comma in them is a point (0,5), some having one."""
    text = col.dropna().astype(str).str.strip()
    return (not text.empty and bool(text.str.fullmatch(_DECIMAL_COMMA).all())
            and bool(text.str.contains(",", regex=False).any()))


def _is_number(name: object) -> bool:
    text = str(name)
    if len(text) > MAX_VALUE_CHARS:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_date(name: object) -> bool:
    text = str(name).strip()
    if len(text) > MAX_VALUE_CHARS or not any(ch.isdigit() for ch in text):
        return False
    formats = _date_formats([text])
    return bool(formats) and formats[0][1] == 1.0


def _long_field(df: pd.DataFrame, column: str) -> tuple[int, int] | None:
    """(file line, characters) of the longest field of a column of text longer than a number or a date
    can be: from :func:`read_table`'s ``long_fields``, else from the column's first values."""
    known = df.attrs.get("long_fields")
    if isinstance(known, dict):  # read_table measured every field
        return known.get(column)
    s = df[column]
    if s.dtype != object:
        return None
    lengths = s.head(SNIFF_VALUES).astype(str).str.len()
    if lengths.empty or int(lengths.max()) <= MAX_VALUE_CHARS:
        return None
    row = int(lengths.to_numpy().argmax())
    return row + 2, int(lengths.iloc[row])  # +2: header and 1-based, as dataset_from_frame counts lines


def numeric_columns(df: pd.DataFrame) -> list[str]:
    """Columns that are numbers (or mostly numbers).

    A column of text is numbers when more than 90 % of its first :data:`SNIFF_VALUES` values are
    numbers (and they are not dates); a field longer than :data:`MAX_VALUE_CHARS` makes it text.
    """
    out = []
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_bool_dtype(s) or _long_field(df, c) is not None:
            continue
        if pd.api.types.is_numeric_dtype(s):
            out.append(c)
            continue
        head = s.to_numpy()[:SNIFF_VALUES]
        share = float(pd.notna(pd.to_numeric(head, errors="coerce")).mean()) if len(head) else 0.0
        if share > 0.9 and not _looks_like_dates(s):
            out.append(c)
    return out


def date_columns(df: pd.DataFrame) -> list[str]:
    """Columns of dates (sniffed on their first values, see :func:`parse_dates`)."""
    return [c for c in df.columns if _long_field(df, c) is None and _looks_like_dates(df[c])]


def _samples(s: pd.Series, k: int = 3) -> str:
    """A few of a column's values that are not numbers, quoted and shortened, for messages."""
    s = s.head(SNIFF_VALUES)  # what decided the column is text: a message never reads the whole column
    bad = s[pd.to_numeric(s, errors="coerce").isna() & s.notna()].astype(str).unique()[:k]
    if len(bad) == 0:  # e.g. True/False, which pandas reads as numbers but a model should not
        bad = s.dropna().astype(str).unique()[:k]
    return ", ".join(repr(v if len(v) <= 30 else v[:30] + "…") for v in bad)


def _decimal_comma_hint(df: pd.DataFrame) -> str:
    """A hint when a text column reads as numbers once its decimal commas are points (``0,5``)."""
    for c in df.columns:
        col = df[c]
        head = col.dropna().head(50)
        if not pd.api.types.is_numeric_dtype(col) and _comma_numbers(head):
            first = str(head.iloc[0])
            return (f"; column {c!r} holds numbers written with commas ({first!r}): save the file with "
                    "plain numbers (a decimal point, no thousands separator), or with ; between fields")
    return ""


def guess_columns(df: pd.DataFrame) -> tuple[str | None, str]:
    """Default (x, y): a date or first numeric column for x (None: row number), last numeric for y.

    The values are expected in the last column (the usual layout, ``date,value``). When that
    column is text, no other column is substituted for it: a :class:`DataError` names it and
    shows some of its values (or the line of a field longer than any number, which made it
    text), so the user picks the column to model. Columns are sniffed on their first values
    (:func:`numeric_columns`, :func:`date_columns`): the cost does not grow with the rows.
    """
    nums = numeric_columns(df)
    if not nums:
        raise DataError("no numeric column to model; the file needs at least one column of numbers"
                        + _decimal_comma_hint(df))
    dates = date_columns(df)
    last = df.columns[-1] if len(df.columns) else None
    if last is not None and last not in nums and last not in dates and len(df.columns) > 1:
        long = _long_field(df, last)
        if long is not None:
            raise DataError(
                f"the last column {last!r} is not numeric (line {long[0]} holds a field of {long[1]:,} characters, "
                f"longer than any number or date, {MAX_VALUE_CHARS}); "
                f"choose the column to model{' among ' + ', '.join(map(repr, nums)) if nums else ''} "
                "(Data page: value column; command line: --y NAME), or fix the file")
        raise DataError(
            f"the last column {last!r} is not numeric (values such as {_samples(df[last])}"
            f"{_decimal_comma_hint(df[[last]])}); "
            f"choose the column to model{' among ' + ', '.join(map(repr, nums)) if nums else ''} "
            "(Data page: value column; command line: --y NAME), or fix the file")
    if dates:
        return dates[0], nums[-1]
    if len(nums) == 1:
        return None, nums[0]
    return nums[0], nums[-1]


def dataset_from_frame(
    df: pd.DataFrame,
    x: str | None,
    y: str,
    *,
    name: str = "upload",
    test_fraction: float = 0.1,
    max_points: int | None = MAX_POINTS,
    subsample: bool = False,
    drop_missing: bool = False,
    duplicates: str = "average",
) -> Dataset:
    """Build a :class:`Dataset` from two columns of a table, validating everything.

    ``x=None`` uses the row number. Date columns become decimal years. More than
    ``max_points`` points are refused (None: no limit), or with ``subsample`` thinned to
    that many evenly spaced points.
    """
    if y not in df.columns:
        raise DataError(f"no column named {y!r}; columns are {list(df.columns)}")
    if x is not None and x not in df.columns:
        raise DataError(f"no column named {x!r}; columns are {list(df.columns)}")
    if x == y:
        raise DataError("x and y must be different columns")
    notes: list[str] = list(df.attrs.get("notes", ()))  # what reading the file changed (read_table)
    yv = pd.to_numeric(df[y], errors="coerce")
    if yv.notna().sum() == 0:
        raise DataError(f"column {y!r} has no numbers (values such as {_samples(df[y])})")
    if x is None:
        xv = pd.Series(np.arange(len(df), dtype=np.float64))
        kind, x_label = "number", "row"
    elif _looks_like_dates(df[x]):
        parsed = parse_dates(df[x]).reset_index(drop=True)  # aligned with xv whatever the frame's index
        xv = pd.Series(np.full(len(df), np.nan))
        ok = parsed.notna()
        xv[ok] = dates_to_decimal_years(parsed[ok])
        kind, x_label = "date", x
    else:
        xv = pd.to_numeric(df[x], errors="coerce")
        kind, x_label = "number", x
    xa = xv.to_numpy(dtype=np.float64)
    ya = yv.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(xa) | ~np.isfinite(ya)
    if bad.any():
        if not drop_missing:
            rows = ", ".join(str(i + 2) for i in np.flatnonzero(bad)[:5])  # +2: header and 1-based
            more = "…" if bad.sum() > 5 else ""
            raise DataError(
                f"{int(bad.sum())} rows have missing, non-numeric or infinite values "
                f"(file lines {rows}{more}); fix them or allow dropping them"
            )
        notes.append(f"dropped {int(bad.sum())} rows with missing or non-finite values")
        xa, ya = xa[~bad], ya[~bad]
    for label, col, arr in (("x", x, xa), ("value", y, ya)):
        big = float(np.max(np.abs(arr), initial=0.0))
        if big > MAX_ABS_VALUE:
            raise DataError(
                f"{label} column {col or 'row'!r} has values up to {big:.3g}: squares and variances of such "
                "numbers overflow floating point; rescale the column (e.g. divide it by "
                f"1e{int(format(big, 'e').split('e')[1]) - 3}) and try again")
    small = spread(ya)
    if 0 < small < MIN_SPREAD:
        raise DataError(
            f"column {y!r} varies by only {small:.3g} (standard deviation): variances of such numbers "
            "underflow floating point; rescale the column (e.g. multiply it by "
            f"1e{-int(format(small, 'e').split('e')[1])}) and try again")
    ds = Dataset.from_arrays(xa, ya, name=name, test_fraction=test_fraction, duplicates=duplicates,
                             x_label=x_label, y_label=y, x_kind=kind, notes=tuple(notes))
    if max_points is not None and ds.n > max_points:
        if not subsample:
            raise DataError(
                f"{ds.n:,} points is more than the maximum of {max_points:,}: fits use an exact GP on at most "
                "a search's fit-points setting of them anyway (a subset of the data), but reading, drawing and "
                "forecasting every point get slower with more; subsample or raise the maximum"
            )
        ds = ds.subsample(max_points)
    return ds


def load_csv(path: str | Path | IO, x: str | None = None, y: str | None = None, **kwargs: object) -> Dataset:
    """Load a CSV file into a :class:`Dataset` (columns guessed when not given)."""
    df = read_table(path)
    if y is None:
        gx, y = guess_columns(df)
        if x is None:
            x = gx
    name = Path(path).stem if isinstance(path, (str, Path)) else "upload"
    return dataset_from_frame(df, x, y, name=str(kwargs.pop("name", name)), **kwargs)  # type: ignore[arg-type]


# --- bundled and benchmark data ------------------------------------------------------


def bundled_datasets(data_dir: Path = DATA_DIR) -> list[dict]:
    """The catalog of bundled datasets (``data/catalog.json``), default first."""
    with open(data_dir / "catalog.json", encoding="utf-8") as fh:
        return json.load(fh)


def load_bundled(name: str, *, test_fraction: float = 0.1, data_dir: Path = DATA_DIR) -> Dataset:
    """Load one bundled dataset by catalog name."""
    for entry in bundled_datasets(data_dir):
        if entry["name"] == name:
            df = read_table(data_dir / entry["file"])
            ds = dataset_from_frame(df, entry["x"], entry["y"], name=name, test_fraction=test_fraction,
                                    max_points=None)
            # The catalog's label carries the units ("passengers (thousands)"); the column has none.
            return replace(ds, y_label=str(entry.get("y_label") or entry["y"]))
    raise DataError(f"no bundled dataset named {name!r}")


def load_tsdl(path: str | Path, *, test_fraction: float = 0.1) -> Dataset:
    """Load a TSDL benchmark series (columns ``x,y``) exactly as published.

    Repeated x values are kept (the internet series has 8) so that the split and the
    test points match ``splits.csv``; rows are stably sorted by x. x is time in fractional
    years (the data's README), so its label is ``year``: periods and lengths read from a
    fitted kernel are then said in months and years.
    """
    df = read_table(path)
    ds = dataset_from_frame(df, "x", "y", name=Path(path).stem, test_fraction=test_fraction,
                            max_points=None, duplicates="keep")
    return replace(ds, x_label="year")
