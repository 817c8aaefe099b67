"""Datasets: reading tables, checking them, the train/test split and the normalisation.

The layer just above :mod:`evocov_core.compute`: it knows nothing of kernels. Its modules, each one idea:

* :mod:`~evocov_core.data.limits`: what is accepted (file size, rows, columns, points) and
  :class:`DataError`, the one-line refusal of everything else;
* :mod:`~evocov_core.data.table`: the bounded CSV reader :func:`read_table`;
* :mod:`~evocov_core.data.dates`: dates sniffed, parsed and turned into decimal years;
* :mod:`~evocov_core.data.frame`: from a table's columns to a :class:`Dataset` (:func:`guess_columns`,
  :func:`dataset_from_frame`, :func:`load_csv`);
* :mod:`~evocov_core.data.dataset`: :class:`Dataset`, the split (:func:`split_mask`) and
  :class:`Normalisation` to model units;
* :mod:`~evocov_core.data.bundled`: the bundled datasets (:data:`DATA_DIR`) and the TSDL series.

Every public name is importable from here (``from evocov_core.data import Dataset``), as it was when
the layer was one module.
"""

from __future__ import annotations

from evocov_core.data.bundled import DATA_DIR, bundled_datasets, load_bundled, load_tsdl
from evocov_core.data.dataset import Dataset, Normalisation, split_mask, spread, units_mismatch, validate_split
from evocov_core.data.dates import (
    dates_to_decimal_years,
    days_to_decimal_years,
    decimal_years_to_dates,
    parse_dates,
)
from evocov_core.data.frame import dataset_from_frame, date_columns, guess_columns, load_csv, numeric_columns
from evocov_core.data.limits import (
    MAX_ABS_VALUE,
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_FIELD_CHARS,
    MAX_FILE_MB,
    MAX_POINTS,
    MAX_ROWS,
    MAX_TEST_FRACTION,
    MAX_VALUE_CHARS,
    MIN_POINTS,
    MIN_SPREAD,
    MIN_TRAIN_POINTS,
    SNIFF_VALUES,
    DataError,
)
from evocov_core.data.table import read_table

__all__ = [
    "DATA_DIR",
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
    "Dataset",
    "Normalisation",
    "bundled_datasets",
    "dataset_from_frame",
    "date_columns",
    "dates_to_decimal_years",
    "days_to_decimal_years",
    "decimal_years_to_dates",
    "guess_columns",
    "load_bundled",
    "load_csv",
    "load_tsdl",
    "numeric_columns",
    "parse_dates",
    "read_table",
    "split_mask",
    "spread",
    "units_mismatch",
    "validate_split",
]
