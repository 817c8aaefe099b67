"""A panel: many series in one long table, statsforecast's ``unique_id, ds, y``, split into series.

Each series keeps its own times. ``ds`` holds dates (read as decimal years, as a single series' dates
are: :mod:`evocov_core.data.dates`) or numbers (steps). With numbers and a ``season_length`` m, time is
``ds / m``, so that a season is one unit: monthly steps with m = 12 and quarterly ones with m = 4 are read
as months and quarters of a year (the kernel's seasonal seeds and the classical members find the season),
and m = 1 as years. A missing ``y`` (empty, NaN) is a point not observed: it is dropped, and the kernel
conditions on the points that were observed, at their own times.

Errors in the table as a whole (a missing column, a duplicated ``(unique_id, ds)``, a ``y`` that is not a
number, a ``ds`` that is neither dates nor numbers) raise :class:`~evocov_core.data.DataError` with one line
that names the column and the first offending row. Problems of one series (too short, constant, no value
at all) are not errors here: the series gets a named fallback (:mod:`evocov_core.panel.series`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from evocov_core.data.dates import dates_to_decimal_years, looks_like_dates, parse_dates
from evocov_core.data.limits import DataError

__all__ = ["COLUMNS", "Panel", "PanelSeries", "future_values", "guess_panel_columns", "panel_from_frame"]

Array = NDArray[np.float64]

#: statsforecast's long format: the series' name, its time stamp and its value.
COLUMNS = ("unique_id", "ds", "y")
_GUESSES = {"unique_id": ("unique_id", "id", "series", "series_id", "item", "item_id", "sku", "key", "name"),
            "ds": ("ds", "date", "time", "timestamp", "datetime", "period", "t", "month", "week", "day"),
            "y": ("y", "value", "target", "sales", "demand", "count", "volume", "amount")}


@dataclass(frozen=True, eq=False)
class PanelSeries:
    """One series of a panel.

    Attributes
    ----------
    uid : str
        Its ``unique_id``.
    x : ndarray of shape (n,)
        The times of its observed points, sorted (decimal years for dates; ``ds / season_length`` for numbers).
    y : ndarray of shape (n,)
        Its observed values.
    ds : ndarray of shape (n,)
        The observed points' ``ds`` as given (datetime64 or float).
    missing : int
        Rows whose ``y`` (or a covariate) was missing (dropped).
    c : ndarray of shape (n, k), optional
        The panel's covariates at the observed points (None without covariates).
    """

    uid: str
    x: Array
    y: Array
    ds: np.ndarray
    missing: int = 0
    c: Array | None = None


@dataclass(frozen=True, eq=False)
class Panel:
    """A long table split into series.

    Attributes
    ----------
    series : tuple of PanelSeries
        In the order of their first row.
    ds_kind : str
        ``"date"`` or ``"number"``.
    season_length : int or None
        Steps in a season (numbers only; None: time is ``ds`` itself).
    columns : tuple of str
        The table's ``unique_id``, ``ds`` and ``y`` columns.
    covariates : tuple of str
        Columns with known futures (:mod:`evocov_core.forecast.covariates`): each series' ``c``.
    """

    series: tuple[PanelSeries, ...]
    ds_kind: str
    season_length: int | None
    columns: tuple[str, str, str] = COLUMNS
    covariates: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.series)

    @property
    def x_kind(self) -> str:
        """The kind of time a single series' :class:`~evocov_core.data.Dataset` gets."""
        return "date" if self.ds_kind == "date" else "number"

    @property
    def x_label(self) -> str:
        """``"year"`` when a unit of time is a season of steps (so that seasons are read as a calendar's)."""
        return "year" if self.ds_kind == "number" and self.season_length else "x"

    def to_ds(self, x: ArrayLike) -> np.ndarray:
        """Times (this panel's x units) back to ``ds`` values: datetime64 for dates, numbers otherwise."""
        from evocov_core.data.dates import decimal_years_to_dates

        a = np.asarray(x, dtype=np.float64)
        if self.ds_kind == "date":
            months = a * 12
            if a.size and np.all(np.isfinite(a)) and np.allclose(months, np.round(months), rtol=0.0, atol=1e-6):
                # The exact month grid (month starts read as year + (month - 1)/12): month starts again.
                m = np.round(months).astype(np.int64)
                return np.array([f"{v // 12:04d}-{v % 12 + 1:02d}-01" for v in m], dtype="datetime64[ns]")
            return np.asarray(decimal_years_to_dates(a).round("s"), dtype="datetime64[ns]")
        out = a * (self.season_length or 1)
        rounded = np.round(out)
        if np.all(np.isfinite(out)) and np.all(np.abs(out - rounded) < 1e-6):
            return rounded.astype(np.int64)  # whole steps stay whole numbers, as they were given
        return out



def guess_panel_columns(df: pd.DataFrame) -> tuple[str | None, str | None, str | None]:
    """The columns of ``df`` that most likely hold ``unique_id``, ``ds`` and ``y``: statsforecast's names
    first, then common names (case-insensitive), then for ``ds`` a column of dates; None where nothing fits."""
    lower = {str(c).strip().lower(): c for c in df.columns}
    picked: list[str | None] = []
    for role in COLUMNS:
        hit = next((lower[n] for n in _GUESSES[role] if n in lower and lower[n] not in picked), None)
        if hit is None and role == "ds":
            hit = next((c for c in df.columns if c not in picked and looks_like_dates(df[c])), None)
        if hit is None and role == "y":
            hit = next((c for c in reversed(df.columns) if c not in picked
                        and pd.api.types.is_numeric_dtype(df[c])), None)
        picked.append(hit)
    return picked[0], picked[1], picked[2]


def _row(i: int) -> str:
    return f"row {i + 2}"  # the header is line 1 of a CSV


def panel_from_frame(df: pd.DataFrame, *, id_col: str | None = None, ds_col: str | None = None,
                     y_col: str | None = None, season_length: int | None = None,
                     covariates: tuple[str, ...] | list[str] = ()) -> Panel:
    """Split a long table into series.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per series and time stamp.
    id_col, ds_col, y_col : str, optional
        The columns holding ``unique_id``, ``ds`` and ``y`` (default: guessed, :func:`guess_panel_columns`).
    season_length : int, optional
        Steps in a season when ``ds`` holds numbers (12 for monthly steps, 4 quarterly, 1 yearly).
    covariates : sequence of str
        Columns of numbers with known futures (a row missing one is a point not observed).

    Returns
    -------
    Panel

    Raises
    ------
    DataError
        One line naming the column and the first row at fault.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"a panel is a table (a pandas DataFrame), got {type(df).__name__}")
    if season_length is not None and (isinstance(season_length, bool) or int(season_length) != season_length
                                      or season_length < 1):
        raise DataError(f"the season length must be a whole number of steps, at least 1; got {season_length!r}")
    guessed = guess_panel_columns(df)
    cols = [given if given is not None else g for given, g in zip((id_col, ds_col, y_col), guessed, strict=True)]
    for role, c in zip(COLUMNS, cols, strict=True):
        if c is None:
            raise DataError(f"no {role} column: name the columns unique_id, ds and y, or say which column holds "
                            f"the {role} (columns: {', '.join(map(str, df.columns[:10]))})")
        if c not in df.columns:
            raise DataError(f"no column {c!r} for {role} (columns: {', '.join(map(str, df.columns[:10]))})")
    if len(set(cols)) < 3:
        raise DataError(f"unique_id, ds and y must be three different columns; got {', '.join(map(str, cols))}")
    uid_c, ds_c, y_c = cols
    if len(df) == 0:
        raise DataError("the table has no rows")
    ids = df[uid_c]
    if ids.isna().any():
        raise DataError(f"column {uid_c!r} (unique_id) is empty in {_row(int(np.flatnonzero(ids.isna())[0]))}")
    ids = ids.astype(str)
    y = _values(df[y_c], y_c)
    ds_raw = df[ds_c]
    if ds_raw.isna().any():
        raise DataError(f"column {ds_c!r} (ds) is empty in {_row(int(np.flatnonzero(ds_raw.isna())[0]))}: every "
                        "row needs its time; leave y empty for a point not observed")
    if pd.api.types.is_numeric_dtype(ds_raw) and not pd.api.types.is_bool_dtype(ds_raw):
        kind = "number"
        stamps = ds_raw.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(stamps)
        if bad.any():
            where = _row(int(np.flatnonzero(bad)[0]))
            raise DataError(f"column {ds_c!r} (ds) holds a value that is not finite in {where}")
        x = stamps / float(season_length or 1)
        ds_values: np.ndarray = stamps
    else:
        parsed = parse_dates(ds_raw)
        if parsed.isna().any():
            i = int(np.flatnonzero(parsed.isna().to_numpy())[0])
            numbers = pd.to_numeric(ds_raw, errors="coerce")
            hint = (" (numbers written as text: write them as plain numbers)" if numbers.notna().mean() > 0.9
                    else "")
            raise DataError(f"column {ds_c!r} (ds) holds {str(ds_raw.iloc[i])[:40]!r} in {_row(i)}, which is neither "
                            f"a date nor a number{hint}; nothing was guessed in its place")
        if season_length is not None:
            raise DataError("a season length applies to ds given as numbers; with dates the calendar gives the "
                            "seasons (leave --season-length out)")
        kind = "date"
        x = dates_to_decimal_years(parsed)
        ds_values = parsed.to_numpy(dtype="datetime64[ns]")
    cov = _covariates(df, covariates, cols)
    y = np.where(np.all(np.isfinite(cov), axis=1), y, np.nan)  # a row without its covariates is not observed
    frame = pd.DataFrame({"uid": ids.to_numpy(), "x": x, "y": y, "row": np.arange(len(df))})
    dup = frame.duplicated(["uid", "x"], keep="first")
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"series {frame.uid.iloc[i]!r} has two rows at ds {str(ds_raw.iloc[i])[:40]} ({_row(i)} "
                        "repeats an earlier one): each (unique_id, ds) must appear once")
    series = []
    for uid, g in frame.groupby("uid", sort=False):
        g = g.sort_values("x", kind="stable")
        seen = np.isfinite(g.y.to_numpy())
        series.append(PanelSeries(str(uid), g.x.to_numpy()[seen], g.y.to_numpy()[seen],
                                  ds_values[g.row.to_numpy()][seen], int((~seen).sum()),
                                  cov[g.row.to_numpy()][seen] if covariates else None))
    return Panel(tuple(series), kind, int(season_length) if season_length is not None else None,
                 (str(uid_c), str(ds_c), str(y_c)), tuple(map(str, covariates)))


def _covariates(df: pd.DataFrame, names: tuple[str, ...] | list[str], cols: list) -> Array:
    """The covariate columns as numbers, shape (rows, k) (NaN where missing); one-line errors for a column that is
    absent, named twice or one of unique_id, ds and y, or that holds text."""
    out = np.empty((len(df), len(names)))
    for j, c in enumerate(names):
        if c not in df.columns:
            raise DataError(f"no covariate column {c!r} (columns: {', '.join(map(str, df.columns[:10]))})")
        if c in cols or list(names).count(c) > 1:
            raise DataError(f"covariate column {c!r} is named twice (as unique_id, ds, y or another covariate)")
        out[:, j] = _values(df[c], c, "covariate")
    return out


def future_values(panel: Panel, table: pd.DataFrame, h: int) -> dict[str, tuple[Array, Array]]:
    """Each series' next ``h`` times and its covariates there, from a table of future values (statsforecast's
    ``X_df``: the panel's unique_id and ds columns, and one column per covariate).

    Returns
    -------
    dict of str to (ndarray of shape (h,), ndarray of shape (h, k))
        For every series of ``panel``: the first ``h`` times of ``table`` after its last observation (the
        panel's x units) and the covariates' values at them.

    Raises
    ------
    DataError
        A column absent, a time that cannot be read, a value missing or not a number (naming its column and
        row), or a series with fewer than ``h`` future rows.
    """
    uid_c, ds_c, _ = panel.columns
    for c in (uid_c, ds_c, *panel.covariates):
        if c not in table.columns:
            have = ", ".join(map(str, table.columns[:10]))
            raise DataError(f"the future values have no column {c!r} (columns: {have}): they need {uid_c}, {ds_c} "
                            "and every covariate")
    cov = _covariates(table, panel.covariates, [uid_c, ds_c])
    bad = np.flatnonzero(~np.all(np.isfinite(cov), axis=1))
    if bad.size:
        j = int(np.flatnonzero(~np.isfinite(cov[bad[0]]))[0])
        raise DataError(f"the future value of covariate {panel.covariates[j]!r} is missing in {_row(int(bad[0]))} "
                        f"(series {table[uid_c].iloc[bad[0]]!s}, {ds_c} {table[ds_c].iloc[bad[0]]!s}): a forecast "
                        "needs every covariate at every step")
    if panel.ds_kind == "date":
        parsed = parse_dates(table[ds_c])
        if parsed.isna().any():
            i = int(np.flatnonzero(parsed.isna().to_numpy())[0])
            raise DataError(f"column {ds_c!r} of the future values holds {str(table[ds_c].iloc[i])[:40]!r} in "
                            f"{_row(i)}, which is not a date")
        x = dates_to_decimal_years(parsed)
    else:
        x = pd.to_numeric(table[ds_c], errors="coerce").to_numpy(dtype=np.float64) / float(panel.season_length or 1)
    ids = table[uid_c].astype(str).to_numpy()
    out: dict[str, tuple[Array, Array]] = {}
    for s in panel.series:
        last = float(s.x[-1]) if s.x.size else -np.inf
        mine = np.flatnonzero((ids == s.uid) & (x > last))
        mine = mine[np.argsort(x[mine], kind="stable")][:h]
        if mine.size < h:
            raise DataError(f"series {s.uid!r} has {mine.size} rows of future values after its last observation; "
                            f"a forecast of {h} steps needs {h}")
        out[s.uid] = (x[mine], cov[mine])
    return out


def _values(col: pd.Series, name: str, role: str = "y") -> Array:
    """``y`` (or a covariate: ``role``) as floats (NaN where empty); a value that is text and not a number is an
    error."""
    if pd.api.types.is_bool_dtype(col):
        col = col.astype(np.float64) if role != "y" else col  # a flag 0/1 is a covariate's number
    if pd.api.types.is_bool_dtype(col):
        raise DataError(f"column {name!r} (y) holds true/false values, not numbers")
    if pd.api.types.is_numeric_dtype(col):
        out = col.to_numpy(dtype=np.float64)
    else:
        text = col.astype("string").str.strip()
        out_s = pd.to_numeric(text.replace({"": None}), errors="coerce")
        bad = out_s.isna() & text.notna() & (text != "") & ~text.str.lower().isin(["nan", "na", "null", "none"])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"column {name!r} ({role}) holds {str(col.iloc[i])[:40]!r} in {_row(i)}, which is not a "
                            "number (leave it empty for a point not observed)")
        out = out_s.to_numpy(dtype=np.float64)
    inf = np.isinf(out)
    if inf.any():
        raise DataError(f"column {name!r} ({role}) holds an infinite value in {_row(int(np.flatnonzero(inf)[0]))}")
    return out
