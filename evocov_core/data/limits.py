"""What the data layer accepts: the limits of a file, a table and a data set, and :class:`DataError`,
the one-line refusal of what lies past them.

Every limit here is read by the reader (:func:`evocov_core.data.table.read_table`), the column sniffers
and :class:`~evocov_core.data.dataset.Dataset`; the command line and the dashboard show the same
numbers, so they live in one place.
"""

from __future__ import annotations

__all__ = [
    "MAX_ABS_VALUE",
    "MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_FIELD_CHARS",
    "MAX_FILE_MB",
    "MAX_POINTS",
    "MAX_ROWS",
    "MAX_TEST_FRACTION",
    "MAX_VALUE_CHARS",
    "MIN_POINTS",
    "MIN_SPREAD",
    "MIN_TRAIN_POINTS",
    "SNIFF_VALUES",
    "DataError",
]


class DataError(ValueError):
    """Input data cannot be used; the message says why and what to do."""


# --- a data set -------------------------------------------------------------------------------------------

#: The fewest usable points a data set may hold.
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
#: The least training points a search may learn from, and the test fraction a split must stay below.
MIN_TRAIN_POINTS = 10
MAX_TEST_FRACTION = 0.5

# --- a file -----------------------------------------------------------------------------------------------
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
