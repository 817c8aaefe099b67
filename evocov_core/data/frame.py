"""From a table to a :class:`~evocov_core.data.dataset.Dataset`: which columns hold numbers or dates,
the columns to model by default, and the checks of two chosen columns.

Columns are sniffed on their first :data:`~evocov_core.data.limits.SNIFF_VALUES` values, so the cost
does not grow with the rows; every refusal is a :class:`~evocov_core.data.limits.DataError` that names
the column and what to change.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from evocov_core.data.dataset import Dataset, spread
from evocov_core.data.dates import dates_to_decimal_years, looks_like_dates, parse_dates
from evocov_core.data.limits import MAX_ABS_VALUE, MAX_POINTS, MAX_VALUE_CHARS, MIN_SPREAD, SNIFF_VALUES, DataError
from evocov_core.data.table import comma_numbers, read_table

#: What a row without a value means (:func:`dataset_from_frame`'s ``missing``): the table is refused,
#: or the row is a point not observed.
MISSING = ("refuse", "keep")

__all__ = ["MISSING", "dataset_from_frame", "date_columns", "guess_columns", "load_csv", "numeric_columns"]


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
        if share > 0.9 and not looks_like_dates(s):
            out.append(c)
    return out


def date_columns(df: pd.DataFrame) -> list[str]:
    """Columns of dates (sniffed on their first values, see :func:`parse_dates`)."""
    return [c for c in df.columns if _long_field(df, c) is None and looks_like_dates(df[c])]


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
        if not pd.api.types.is_numeric_dtype(col) and comma_numbers(head):
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
    missing: str = "refuse",
    covariates: tuple[str, ...] | list[str] = (),
) -> Dataset:
    """Build a :class:`Dataset` from two columns of a table, validating everything.

    ``x=None`` uses the row number. Date columns become decimal years. More than
    ``max_points`` points are refused (None: no limit), or with ``subsample`` thinned to
    that many evenly spaced points.

    ``missing`` says what a row whose value is empty, not a number or infinite means:
    ``"refuse"`` (the default) refuses the table with a :class:`DataError` naming the file lines;
    ``"keep"`` keeps it as a point not observed: the row leaves the data, and every other point
    keeps its own x (with ``x=None``, its own row number), so the model conditions on the observed
    points at their true times and the gap stays a gap (a note says how many). A row whose x cannot
    be read is left out too, and a note names the column. ``drop_missing=True`` is
    ``missing="keep"`` (its former name).

    ``covariates`` names columns of numbers known in advance (temperature, a price, a holiday flag):
    they become x's columns 2 to d, after time (:attr:`Dataset.covariates`,
    :mod:`evocov_core.forecast.covariates`). A row with a covariate missing is a row with its value
    missing: refused, or with ``missing="keep"`` left out.
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
    xa, kind, x_label = _x_values(df, x)
    ya = yv.to_numpy(dtype=np.float64)
    cov = _covariate_columns(df, covariates, x, y)
    if cov.shape[1]:
        ya = np.where(np.all(np.isfinite(cov), axis=1), ya, np.nan)  # a row without its covariates is not usable
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {', '.join(MISSING)}; got {missing!r}")
    keep = drop_missing or missing == "keep"
    bad_x, bad_y = ~np.isfinite(xa), ~np.isfinite(ya)
    bad = bad_x | bad_y
    if bad.any():
        if not keep:
            rows = ", ".join(str(i + 2) for i in np.flatnonzero(bad)[:5])  # +2: header and 1-based
            more = "…" if bad.sum() > 5 else ""
            raise DataError(
                f"{int(bad.sum())} rows have missing, non-numeric or infinite values "
                f"(file lines {rows}{more}); fix them, or keep them as points not observed "
                "(command line: --missing keep; Python: missing='keep'; Data page: Keep missing values)"
            )
        notes.extend(_missing_notes(bad_x, bad_y, x))
        xa, ya, cov = xa[~bad], ya[~bad], cov[~bad]
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
    ds = Dataset.from_arrays(np.column_stack([xa, cov]) if cov.shape[1] else xa, ya, name=name,
                             test_fraction=test_fraction, duplicates=duplicates, x_label=x_label, y_label=y,
                             x_kind=kind, notes=tuple(notes), covariates=tuple(map(str, covariates)))
    if max_points is not None and ds.n > max_points:
        if not subsample:
            raise DataError(
                f"{ds.n:,} points is more than the maximum of {max_points:,}: fits use an exact GP on at most "
                "a search's fit-points setting of them anyway (a subset of the data), but reading, drawing and "
                "forecasting every point get slower with more; subsample or raise the maximum"
            )
        ds = ds.subsample(max_points)
    return ds


def _x_values(df: pd.DataFrame, x: str | None) -> tuple[np.ndarray, str, str]:
    """Column ``x`` of ``df`` as numbers of shape (rows,) (NaN where unreadable; dates as decimal years, the
    row number when ``x`` is None), its kind (``"date"`` or ``"number"``) and its label."""
    if x is None:
        return np.arange(len(df), dtype=np.float64), "number", "row"
    if looks_like_dates(df[x]):
        parsed = parse_dates(df[x]).reset_index(drop=True)  # aligned with xv whatever the frame's index
        xv = pd.Series(np.full(len(df), np.nan))
        ok = parsed.notna()
        xv[ok] = dates_to_decimal_years(parsed[ok])
        return xv.to_numpy(dtype=np.float64), "date", x
    return pd.to_numeric(df[x], errors="coerce").to_numpy(dtype=np.float64), "number", x


def _covariate_columns(df: pd.DataFrame, names: tuple[str, ...] | list[str], x: str | None, y: str) -> np.ndarray:
    """The covariate columns ``names`` of ``df`` as numbers, shape (rows, k) (NaN where a value is missing or
    not a number); a :class:`DataError` for a column that is absent, is x or y, or holds no numbers."""
    out = np.empty((len(df), len(names)))
    for j, c in enumerate(names):
        if c not in df.columns:
            raise DataError(f"no covariate column named {c!r}; columns are {list(df.columns)}")
        if c in (x, y) or list(names).count(c) > 1:
            raise DataError(f"covariate column {c!r} is named twice (as x, y or another covariate)")
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(v).any():
            raise DataError(f"covariate column {c!r} has no numbers (values such as {_samples(df[c])})")
        out[:, j] = v
    return out


def _missing_notes(bad_x: np.ndarray, bad_y: np.ndarray, x: str | None) -> list[str]:
    """What ``missing="keep"`` did, for :attr:`Dataset.notes`: rows without a value, rows without a
    readable x (each mask of shape (rows,))."""
    def lines(mask: np.ndarray) -> str:
        idx = np.flatnonzero(mask)
        return ", ".join(str(i + 2) for i in idx[:5]) + ("…" if idx.size > 5 else "")  # +2: header, 1-based

    out = []
    only_y = bad_y & ~bad_x
    if only_y.any():
        out.append(f"{int(only_y.sum())} rows have no value (file lines {lines(only_y)}): kept as points not "
                   "observed, the others at their own x")
    if bad_x.any():
        out.append(f"dropped {int(bad_x.sum())} rows whose x in column {x!r} cannot be read "
                   f"(file lines {lines(bad_x)})")
    return out


def load_csv(path: str | Path | IO, x: str | None = None, y: str | None = None, **kwargs: object) -> Dataset:
    """Load a CSV file into a :class:`Dataset` (columns guessed when not given: x a date column, else the first
    numeric one besides y and the covariates, else the row number; y the last numeric column)."""
    df = read_table(path)
    if y is None:
        gx, y = guess_columns(df)
        if x is None:
            x = gx
    elif x is None:  # y chosen: x is still a date column, else the first numeric one besides y and the covariates
        others = set(kwargs.get("covariates") or ()) | {y}  # type: ignore[arg-type]
        x = next((c for c in [*date_columns(df), *numeric_columns(df)] if c not in others), None)
    if x is None:
        _say_row_number(df, y, kwargs.get("covariates") or ())  # type: ignore[arg-type]
    name = Path(path).stem if isinstance(path, (str, Path)) else "upload"
    return dataset_from_frame(df, x, y, name=str(kwargs.pop("name", name)), **kwargs)  # type: ignore[arg-type]


def _say_row_number(df: pd.DataFrame, y: str, covariates: tuple[str, ...] | list[str]) -> None:
    """When x falls back to the row number while a column of text could have been the time, say so in the
    table's notes (a time column that cannot be read is said, not guessed around)."""
    text = [c for c in df.columns if c != y and c not in covariates and c not in numeric_columns(df)
            and c not in date_columns(df)]
    if text:
        c = text[0]
        df.attrs["notes"] = [*df.attrs.get("notes", ()),
                             f"column {c!r} holds values such as {_samples(df[c])}, neither numbers nor dates, so x "
                             "is the row number; if it is the time, write it as numbers or dates (or choose x: --x)"]
