"""The benchmark harness's shared helpers: the geometric mean, the number format, the trial statuses."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest

from bench import accuracy as acc
from bench.common import COUNTED, ResultFile, TrialStatus, fmt, geomean


def test_geomean_of_ratios() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean(np.array([0.5, 2.0, 1.0])) == pytest.approx(1.0)
    assert geomean(pd.Series([3.0, 3.0, 3.0], index=["a", "b", "c"])) == pytest.approx(3.0)
    assert geomean(x for x in (1.0, 100.0)) == pytest.approx(10.0)  # any iterable
    # Far from 1 it is not the arithmetic mean (a test that a mean of the values would fail).
    assert geomean([1.0, 4.0]) == pytest.approx(2.0) and geomean([1.0, 4.0]) != 2.5


def test_geomean_missing_failed_and_bad_values() -> None:
    assert math.isnan(geomean([]))
    assert math.isnan(geomean([1.0, math.nan, 2.0]))
    assert math.isinf(geomean([1.0, math.inf]))  # a failed trial shows
    assert geomean([0.0, 4.0]) == 0.0
    with pytest.raises(ValueError, match="negative"):
        geomean([2.0, -1.0])


def test_geomean_is_the_one_the_reports_use() -> None:
    """The accuracy summary's geometric mean is the shared one (same bits)."""
    table = pd.DataFrame({"ratio": [2.0, 0.5, 5.0], "max_wall_ratio": [1.0, 1.0, 1.0]},
                         index=["a", "b", "c"])
    assert acc.summarize(table).accuracy_geomean == geomean([2.0, 0.5, 5.0])


def test_fmt_significant_digits_fixed_and_missing() -> None:
    assert fmt(1234.5678) == "1235" and fmt(0.000123456, 3) == "0.000123"
    assert fmt(1.23456, 2, fixed=True) == "1.23" and fmt(2, 3, fixed=True) == "2.000"
    assert fmt(None) == "-" and fmt(math.nan) == "-" and fmt(math.nan, missing="nan") == "nan"
    assert fmt(None, fixed=True) == "-"
    assert fmt(math.inf) == "inf" and fmt(-math.inf, fixed=True) == "-inf"
    assert fmt("n/a") == "n/a" and fmt("n/a", fixed=True) == "-"  # text: as it is, or missing as a ratio
    assert fmt(np.float64(0.98765), 2) == "0.99" and fmt("3.5") == "3.5"


def test_trial_status_equals_the_strings_in_result_files(tmp_path) -> None:
    assert TrialStatus.OK == "ok" and TrialStatus.NO_KERNEL == "no_kernel" and TrialStatus.ERROR == "error"
    assert set(COUNTED) == {"ok", "no_kernel"} and TrialStatus.ERROR not in COUNTED
    rf = ResultFile(tmp_path / "trials.csv", ["key", "status"], ["key"])
    for key, status in (("a", TrialStatus.OK), ("b", TrialStatus.ERROR), ("c", TrialStatus.NO_KERNEL)):
        rf.append({"key": key, "status": status})
    with open(rf.path, newline="", encoding="utf-8") as fh:  # written as the plain values, as before
        assert [r["status"] for r in csv.DictReader(fh)] == ["ok", "error", "no_kernel"]
    read = rf.read()
    assert list(read["status"]) == [TrialStatus.OK, TrialStatus.ERROR, TrialStatus.NO_KERNEL]
    assert rf.keys(lambda r: r["status"] in COUNTED) == {("a",), ("c",)}
