"""Property-based test of the CSV reader (issue 58): any file ends in a dataset or in one line of DataError.

Hypothesis writes CSV files of every kind the reader meets or may be sent: delimiters, quoting,
byte-order marks and encodings, line ends, comment preambles, dates in many formats, decimal
commas, thousands separators, missing, NaN and infinite values, empty and very long fields (up to
1 MB), ragged rows, many columns and stray bytes. Each must be read, as the command line and the
Data page read it, into a :class:`~evocov_core.data.Dataset` or refused with a
:class:`~evocov_core.data.DataError` of one line, never another exception, and within the
profile's deadline (tests/conftest.py: derandomised in CI, 10 s an example, where each takes
milliseconds).
"""

from __future__ import annotations

import csv
import datetime as dt
import io

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from evocov_core.data import (
    MAX_COLUMNS,
    MAX_VALUE_CHARS,
    DataError,
    Dataset,
    dataset_from_frame,
    date_columns,
    guess_columns,
    numeric_columns,
    read_table,
)
from evocov_core.data.table import _long_runs

DATE_FORMATS = ["%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S+01:00",
                "%Y-%m-%dT%H:%M:%SZ", "%d.%m.%Y", "%Y%m%d", "%b %Y", "%d %B %Y", "%Y-%m", "%Y/%m/%d",
                "%Y Q{q}", "%d-%b-%y"]
KINDS = ["int", "float", "date", "decimal comma", "thousands", "text", "empty", "special", "long", "junk"]
#: Lengths of the very long fields: past a number's or a date's, past the reader's limit, 1 MB.
LONG = [65, 500, 10_001, 200_000, 1_000_000]


def _date(day: int, fmt: str) -> str:
    d = dt.datetime(1990, 1, 1) + dt.timedelta(days=day, hours=day % 24)
    return d.strftime(fmt.replace("{q}", str((d.month - 1) // 3 + 1)))


@st.composite
def cells(draw: st.DrawFn, kind: str, row: int, fmt: str) -> str:
    """One field of a column of ``kind``, in row ``row`` (dates increase with the row, mostly)."""
    if kind == "int":
        return str(draw(st.integers(-10**6, 10**6)))
    if kind == "float":
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False, width=64)))
    if kind == "date":
        return _date(row * draw(st.sampled_from([1, 7, 31, 92])) + draw(st.integers(0, 2)), fmt)
    if kind == "decimal comma":
        return f"{draw(st.integers(-999, 999))},{draw(st.integers(0, 99))}"
    if kind == "thousands":
        return f"{draw(st.integers(1, 999))}.{draw(st.integers(0, 999)):03d},{draw(st.integers(0, 9))}"
    if kind == "text":
        return draw(st.text(max_size=12))
    if kind == "empty":
        return ""
    if kind == "special":
        return draw(st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "NA", "null", "", "1e308", "1e-320",
                                     "True", "0x1F", "1_000", "-0", "+5", " 7 ", "1e400"]))
    if kind == "long":
        return draw(st.sampled_from("9a\",;\n ")) * draw(st.sampled_from(LONG))
    return draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=30))  # junk, quotes and newlines included


@st.composite
def csv_files(draw: st.DrawFn) -> bytes:
    """The bytes of one CSV file: half of them a table that should be read (a date or number column,
    numbers, a header, one encoding), the other half anything."""
    clean = draw(st.booleans())
    sep = draw(st.sampled_from([",", ";", "\t", "|"]))
    fmt = draw(st.sampled_from(DATE_FORMATS))
    if clean:
        n_cols, n_rows = draw(st.integers(1, 4)), draw(st.integers(10, 200))
        values = ["int", "float", "special"] + (["decimal comma", "thousands"] if sep != "," else [])
        kinds = [draw(st.sampled_from(["date", "int", "text", "empty", "long"])) for _ in range(n_cols - 1)]
        kinds.append(draw(st.sampled_from(values)))
    else:
        n_cols = draw(st.one_of(st.integers(1, 4), st.sampled_from([12, MAX_COLUMNS + 1])))
        n_rows = draw(st.one_of(st.integers(0, 15), st.sampled_from([30, 200])))
        kinds = [draw(st.sampled_from(KINDS)) for _ in range(min(n_cols, 4))]
    # Columns past the fourth repeat the first four (a long field only once), so wide files stay cheap to draw.
    kinds = [kinds[j % len(kinds)] if j < 4 or kinds[j % len(kinds)] != "long" else "int" for j in range(n_cols)]
    long_at = draw(st.integers(0, max(n_rows - 1, 0)))  # a "long" column holds one long field, at this row
    rows: list[list[str]] = []
    if clean or draw(st.booleans()):
        names = ["date", "x", "y", "value", "", "1.5", "2020-01-01", "a,b", "é", "sales (€)"]
        rows.append([draw(st.sampled_from(names[:4] if clean else names)) + str(j) for j in range(n_cols)])
    for i in range(n_rows):
        row: list[str] = []
        for j, kind in enumerate(kinds):
            k = kind if kind != "long" or i == long_at else "float"
            row.append(draw(cells(k, i, fmt)) if j < 4 or k == "long" else row[j % 4])
        if not clean and draw(st.integers(0, 19)) == 0:  # a ragged row now and then
            row = row[:-1] if draw(st.booleans()) else [*row, "extra"]
        rows.append(row)
    out = io.StringIO()
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]))
    csv.writer(out, delimiter=sep, quoting=quoting, lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"]))
               ).writerows(rows)
    text = out.getvalue()
    if draw(st.booleans()):
        text = draw(st.sampled_from(["# a preamble\n#\n", "\n\n", "# only\n"])) + text
    if not clean and draw(st.integers(0, 4)) == 0:  # stray characters somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=5)) + text[at:]
    if draw(st.booleans()):
        text = "\ufeff" + text
    encodings = ["utf-8", "utf-16"] if clean else ["utf-8", "utf-16", "latin-1", "cp1252"]
    return text.encode(draw(st.sampled_from(encodings)), errors="replace")


def _read_as_the_command_line_and_the_data_page_do(data: bytes) -> Dataset:
    df = read_table(data)
    numeric_columns(df), date_columns(df)  # the Data page lists both before guessing
    x, y = guess_columns(df)
    return dataset_from_frame(df, x, y, max_points=None)


@settings(max_examples=80)
@given(csv_files())
# Found by this test: rows with one more field than the header made pandas label the rows with their first
# field, and dates of such a frame met a misaligned index (an IndexingError, not a DataError).
@example(b"0,0,1990-01-01,1990-01-01,0\n" + b"".join(b"0,0,1990-01-%02d,1990-01-01,0,0\n" % d for d in range(1, 13)))
def test_any_csv_ends_in_a_dataset_or_a_one_line_error(data: bytes) -> None:
    try:
        ds = _read_as_the_command_line_and_the_data_page_do(data)
    except DataError as exc:
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, message
        event("refused: " + " ".join(message.split()[:4]))  # --hypothesis-show-statistics lists the outcomes
    else:
        event("read")
        assert ds.n >= 10 and np.all(np.isfinite(ds.y)) and np.all(np.isfinite(ds.x))


def _runs_by_hand(data: bytes, sep: str) -> tuple[bool, list[tuple[int, int]]]:
    runs, start = [], 0
    for i in range(len(data) + 1):
        if i == len(data) or data[i] in (sep + "\n\r").encode():
            runs.append((start, i - start))
            start = i + 1
    long = [(s, n) for s, n in runs if n > MAX_VALUE_CHARS]
    return bool(long), [(s, n) for s, n in long if all(b in b"0123456789.,eE+-_ \"'" for b in data[s:s + n])]


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["1", "a", "12e5", ",", ";", "\n", "\r", '"']), st.integers(1, 90)),
                max_size=12),
       st.sampled_from([",", ";"]), st.integers(1, 300))
def test_the_scan_for_long_fields_is_the_same_block_by_block(pieces, sep, chunk) -> None:
    """The vectorised scan of :func:`_long_runs`, in blocks of any size, finds the runs a plain loop does."""
    data = "".join(text * k for text, k in pieces).encode()
    assert _long_runs(data, sep, chunk=chunk) == _runs_by_hand(data, sep)
