"""The bounded CSV reader: :func:`read_table` turns a file (a path, bytes or an upload) into a DataFrame,
or refuses it with a :class:`~evocov_core.data.limits.DataError` of one line.

Reading costs time linear in the file's size and never more than one pass of pandas' C parser: the
delimiter, a preamble of comments, a missing header, fields too long to be numbers and decimal commas
are found on the text's head or in vectorised passes over its bytes. The limits of a file (size, rows,
columns, a field's length) are in :mod:`evocov_core.data.limits`.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np
import pandas as pd

from evocov_core.data.dates import is_date
from evocov_core.data.limits import (
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_FIELD_CHARS,
    MAX_ROWS,
    MAX_VALUE_CHARS,
    SNIFF_VALUES,
    DataError,
)

__all__ = ["comma_numbers", "read_table"]


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
        One column per field of the header (``column 1``, ``column 2``... without one), one row
        per data line.

    Raises
    ------
    DataError
        Saying in one line why the file cannot be read.
    """
    raw = _read_bytes(source, max_bytes)
    text = _decode(raw)
    notes: list[str] = []
    layout = _layout(text, max_columns, notes)
    df = _parse(text, layout, max_rows, max_columns, notes)
    long_fields = _long_fields(df, raw, text, layout)
    if layout.sep != ",":
        _read_decimal_commas(df, long_fields, notes)
    df.attrs["notes"] = notes
    df.attrs["long_fields"] = long_fields
    return df


class _Layout(NamedTuple):
    """How a CSV's text is laid out, read from its head before pandas parses it."""

    #: Leading lines that are comments (or blank among comments), skipped.
    skip: int
    #: The character the table starts at, after those lines.
    start: int
    #: The delimiter (:func:`_delimiter`).
    sep: str
    #: The first line is data, not names (a file saved without a header).
    headless: bool


def _layout(text: str, max_columns: int, notes: list[str]) -> _Layout:
    """The preamble, delimiter and header of a CSV's text (what was skipped is added to ``notes``).

    Refuses an empty or binary file, one of comments alone, and a header of more than ``max_columns`` fields.
    """
    if not text.strip():
        raise DataError("the file is empty")
    if "\x00" in text:
        raise DataError("not a readable CSV file (it looks binary)")
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
    headless = bool(first) and all(_is_number(c) or (i == 0 and is_date(c)) for i, c in enumerate(first))
    return _Layout(skip, start, sep, headless)


def _parse(text: str, layout: _Layout, max_rows: int, max_columns: int, notes: list[str]) -> pd.DataFrame:
    """The table in ``text`` as pandas' C parser reads it in one pass, its column names stripped (what was
    changed is added to ``notes``).

    Refuses text pandas cannot read, a table without rows or past ``max_rows`` or ``max_columns``, and a
    header field longer than :data:`MAX_FIELD_CHARS`.
    """
    skip, headless = layout.skip, layout.headless
    try:
        with warnings.catch_warnings():
            # "Columns have mixed types": such a column is read as text, as it should be.
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            # skiprows, not slicing, so that pandas' messages keep the file's own line numbers. Numbers are read
            # back exactly as written (round trip): pandas' default parser can be one unit in the last place off,
            # and a search amplifies that into another kernel (a series written and read again must search alike).
            df = pd.read_csv(io.StringIO(text), sep=layout.sep, skipinitialspace=True, skiprows=skip,
                             header=None if headless else "infer", nrows=max_rows + 1, float_precision="round_trip")
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
    return df


def _long_fields(df: pd.DataFrame, raw: bytes, text: str, layout: _Layout) -> dict[str, tuple[int, int]]:
    """Column -> (file line, characters) of a field in it longer than a number or a date can be
    (:data:`MAX_VALUE_CHARS`): such a column is text. Refuses a field longer than :data:`MAX_FIELD_CHARS`.

    Columns pandas read as numbers are checked on the file's bytes (:func:`_long_runs`), columns of text
    field by field, and only when some run of bytes between separators is long enough to matter.
    """
    skip, headless, sep = layout.skip, layout.headless, layout.sep
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
    return long_fields


def _read_decimal_commas(df: pd.DataFrame, long_fields: dict[str, tuple[int, int]], notes: list[str]) -> None:
    """Columns of text that are numbers written with decimal commas become numbers, in place (said in
    ``notes``). Only for files with ; or tab between fields, as spreadsheets in many locales save them:
    there 0,5 is one half."""
    for c in df.columns:
        col = df[c]
        if (col.dtype == object and c not in long_fields and comma_numbers(col.head(SNIFF_VALUES))
                and comma_numbers(col)):
            text_col = col.astype(str).str.strip()
            grouped = bool(text_col.str.contains(".", regex=False).any())
            # A point between digit groups is a thousands separator here (1.234,5): comma_numbers
            # has checked that every point sits between groups of three.
            df[c] = pd.to_numeric(text_col.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
                                  .where(col.notna()), errors="coerce")
            notes.append(f"column {c!r} has decimal commas: read as numbers (0,5 as 0.5"
                         + ("; 1.234,5 as 1234.5)" if grouped else ")"))


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


class _NumberField(NamedTuple):
    """Where a run of :func:`_long_runs` lies in the file."""

    #: The file line (1-based).
    line: int
    #: The column index (separators before the run on its line).
    column: int
    #: The run's length in bytes.
    length: int


def _number_fields(data: bytes, runs: list[tuple[int, int]], sep: str) -> Iterator[_NumberField]:
    """Each run of :func:`_long_runs` as a :class:`_NumberField`: the line by counting line ends once from
    the top, the column by counting separators before the run on its line."""
    line, pos = 1, 0
    for offset, length in runs:
        line += data.count(b"\n", pos, offset)
        pos = offset
        begin = data.rfind(b"\n", 0, offset) + 1
        yield _NumberField(line, data.count(sep.encode(), begin, offset), length)


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


def comma_numbers(col: pd.Series) -> bool:
    """Whether a text column's values are numbers once a comma in them is a point (0,5), some having one."""
    text = col.dropna().astype(str).str.strip()
    return (not text.empty and bool(text.str.fullmatch(_DECIMAL_COMMA).all())
            and bool(text.str.contains(",", regex=False).any()))


def _is_number(name: object) -> bool:
    """Whether one value (a header field) reads as a number: a headless file's first line."""
    text = str(name)
    if len(text) > MAX_VALUE_CHARS:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True
