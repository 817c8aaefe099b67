"""Datasets: CSV validation, the TSDL train/test split, dates, normalisation."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest

from evocov_core.data import (
    MIN_TRAIN_POINTS,
    DataError,
    Dataset,
    Normalisation,
    bundled_datasets,
    dataset_from_frame,
    dates_to_decimal_years,
    load_bundled,
    load_csv,
    load_tsdl,
    read_table,
    split_mask,
    validate_split,
)


def _csv(rows, header="x,y"):
    return (header + "\n" + "".join(f"{a},{b}\n" for a, b in rows)).encode()


def _series(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(i, round(float(v), 6)) for i, v in enumerate(rng.standard_normal(n))]


# --- the published TSDL split ------------------------------------------------------------------


@pytest.mark.shared
def test_tsdl_split_reproduces_splits_csv(tsdl_dir):
    """All 13 series: n, n_train, n_test, the boundary x values and the test y values match splits.csv."""
    splits = pd.read_csv(tsdl_dir / "splits.csv")
    assert len(splits) == 13
    for row in splits.itertuples():
        ds = load_tsdl(tsdl_dir / row.file)
        raw = pd.read_csv(tsdl_dir / row.file, float_precision="round_trip")  # the file's digits, exactly
        assert (ds.n, ds.n_train, ds.n_test) == (row.n, row.n_train, row.n_test), row.file
        # The CSVs store the training part first: the test y values are the last n_test rows.
        np.testing.assert_array_equal(np.sort(ds.y_test), np.sort(raw["y"].to_numpy()[-row.n_test:]),
                                      err_msg=row.file)
        assert ds.X_train[:, 0].max() == pytest.approx(row.last_train_x, abs=1e-6), row.file
        assert ds.X_test[:, 0].min() == pytest.approx(row.first_test_x, abs=1e-6), row.file
        assert ds.X_train[:, 0].max() <= row.x_cutoff < ds.X_test[:, 0].min()


@pytest.mark.shared
def test_tsdl_internet_is_sorted_and_keeps_repeats(tsdl_dir):
    """06-internet is stored unsorted with 8 repeated x values: loading sorts it and keeps every row."""
    ds = load_tsdl(tsdl_dir / "06-internet.csv")
    raw = pd.read_csv(tsdl_dir / "06-internet.csv")
    assert ds.n == len(raw) == 1000
    assert np.all(np.diff(ds.x[:, 0]) >= 0)
    assert len(raw) - raw["x"].nunique() == 8
    assert any("sorted" in note for note in ds.notes)
    np.testing.assert_array_equal(np.sort(ds.y), np.sort(raw["y"].to_numpy()))


@pytest.mark.shared
def test_tsdl_split_is_not_by_count(tsdl_dir):
    """Births (irregular sampling) has 893 training points of 1000, not 900."""
    ds = load_tsdl(tsdl_dir / "12-births.csv")
    assert ds.n_train == 893 and ds.n_train != int(0.9 * ds.n)


def test_split_rule_is_by_x_range():
    """test = x in the last 10 % of the x-range; a point exactly at the cut-off is training."""
    x = np.r_[np.arange(19.0), 100.0]  # cutoff 90: only x = 100 is test (a count rule would take 2)
    ds = Dataset.from_arrays(x, np.arange(20.0))
    assert ds.n_test == 1 and ds.X_test[0, 0] == 100.0
    ds = Dataset.from_arrays(np.arange(11.0), np.arange(11.0))  # cutoff 0 + 0.9 * 10 = 9
    np.testing.assert_array_equal(ds.X_test[:, 0], [10.0])
    assert 9.0 in ds.X_train[:, 0]
    mask = split_mask(np.arange(11.0)[:, None], 0.5)
    np.testing.assert_array_equal(mask, np.arange(11) <= 5)
    assert split_mask(np.arange(11.0)[:, None], 0.0).all()


@pytest.mark.parametrize("f", [-0.1, 1.0, 1.5])
def test_split_fraction_validated(f):
    """The test fraction must lie in [0, 1)."""
    with pytest.raises(DataError, match="test fraction"):
        Dataset.from_arrays(np.arange(20.0), np.arange(20.0), test_fraction=f)


def test_with_test_fraction_changes_split_and_normalisation():
    """A new test fraction recomputes the split and the normalisation."""
    ds = Dataset.from_arrays(np.arange(21.0), np.arange(21.0) ** 2)
    ds2 = ds.with_test_fraction(0.5)
    assert ds2.n_test == 10 and ds2.test_fraction == 0.5
    assert ds2.norm.x_scale == (10.0,) and ds.norm.x_scale == (18.0,)


def test_training_part_needs_two_points():
    """A split leaving fewer than two training points is refused."""
    x = np.r_[0.0, np.linspace(99.5, 100, 11)]
    with pytest.raises(DataError, match="fewer than 2 points"):
        Dataset.from_arrays(x, np.arange(12.0), test_fraction=0.5)


# --- from_arrays --------------------------------------------------------------------------------


def test_from_arrays_sorts_unsorted_input():
    """Unsorted rows are sorted by x (y follows) and a note says so."""
    rng = np.random.default_rng(1)
    x = rng.permutation(15).astype(float)
    y = 2 * x + 1
    ds = Dataset.from_arrays(x, y)
    np.testing.assert_array_equal(ds.x[:, 0], np.arange(15.0))
    np.testing.assert_array_equal(ds.y, 2 * np.arange(15.0) + 1)
    assert any("sorted" in n for n in ds.notes)
    assert Dataset.from_arrays(np.arange(15.0), y).notes == ()


def test_from_arrays_averages_duplicates():
    """Repeated x values are averaged by default (with a note) and kept in 'keep' mode."""
    x = [0, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    y = [0, 1, 2, 6, 2, 3, 4, 5, 6, 7, 8, 9, 11]
    ds = Dataset.from_arrays(x, y)
    np.testing.assert_array_equal(ds.x[:, 0], np.arange(10.0))
    assert ds.y[1] == pytest.approx(3.0) and ds.y[9] == pytest.approx(10.0)
    assert any("3 repeated x values" in n and "averaged" in n for n in ds.notes)
    kept = Dataset.from_arrays(x, y, duplicates="keep")
    assert kept.n == 13 and not any("repeated" in n for n in kept.notes)
    np.testing.assert_array_equal(kept.y[1:4], [1, 2, 6])  # stable order among equal x
    with pytest.raises(ValueError, match="duplicates"):
        Dataset.from_arrays(x, y, duplicates="drop")


def test_from_arrays_validation():
    """Shape mismatch, non-finite values, too few points and constant x are refused with reasons."""
    with pytest.raises(DataError, match="x has 12 rows but y has 11"):
        Dataset.from_arrays(np.arange(12.0), np.arange(11.0))
    y = np.arange(12.0)
    y[3] = np.nan
    with pytest.raises(DataError, match=r"1 rows have missing or infinite values \(rows 4\)"):
        Dataset.from_arrays(np.arange(12.0), y)
    x = np.arange(12.0)
    x[5] = np.inf
    with pytest.raises(DataError, match="missing or infinite"):
        Dataset.from_arrays(x, np.arange(12.0))
    with pytest.raises(DataError, match="only 9 usable points; at least 10 are needed"):
        Dataset.from_arrays(np.arange(9.0), np.arange(9.0))
    with pytest.raises(DataError, match="only 5 usable points"):  # 12 rows, 5 distinct x
        Dataset.from_arrays(np.repeat(np.arange(5.0), [3, 3, 2, 2, 2]), np.arange(12.0))
    with pytest.raises(DataError, match="all x values are equal"):
        Dataset.from_arrays(np.ones(12), np.arange(12.0), duplicates="keep")


def test_multidimensional_inputs():
    """d > 1 inputs are sorted by the first column and normalised per dimension."""
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 10, (30, 2))
    ds = Dataset.from_arrays(X, X[:, 0] + X[:, 1])
    assert ds.x.shape == (30, 2) and np.all(np.diff(ds.x[:, 0]) >= 0)
    Xm = ds.norm.x_to_model(ds.X_train)
    np.testing.assert_allclose(Xm.min(axis=0), [1, 1])
    np.testing.assert_allclose(Xm.max(axis=0), [2, 2])


# --- reading CSV files ------------------------------------------------------------------------------


def test_load_csv_basic(tmp_path):
    """A two-column numeric CSV loads with its column names and values."""
    path = tmp_path / "series.csv"
    path.write_bytes(_csv(_series(20), header="t,value"))
    ds = load_csv(path)
    assert ds.name == "series" and ds.n == 20 and ds.x_label == "t" and ds.y_label == "value"
    np.testing.assert_array_equal(ds.x[:, 0], np.arange(20.0))


def test_load_csv_other_delimiters():
    """Semicolon- and tab-separated files are read (the delimiter is sniffed)."""
    rows = _series(12)
    for sep in (";", "\t"):
        text = "x" + sep + "y\n" + "".join(f"{a}{sep}{b}\n" for a, b in rows)
        ds = load_csv(io.BytesIO(text.encode()))
        np.testing.assert_allclose(ds.y, [b for _, b in rows])


def test_single_column_csv_uses_row_numbers():
    """A CSV with one numeric column uses the row number as x (guess_columns' documented rule)."""
    values = [float(v) for v in np.random.default_rng(3).integers(100, 200, 15)]
    data = ("passengers\n" + "".join(f"{v}\n" for v in values)).encode()
    ds = load_csv(io.BytesIO(data))
    assert ds.x_label == "row" and ds.y_label == "passengers"
    np.testing.assert_array_equal(ds.y, values)


@pytest.mark.parametrize("content", [b"", b"\n\n"])
def test_empty_csv_message(content, tmp_path):
    """An empty file is refused with a message saying it is empty."""
    with pytest.raises(DataError, match="empty"):
        read_table(content)
    path = tmp_path / "empty.csv"
    path.write_bytes(content)
    with pytest.raises(DataError, match="empty"):
        load_csv(path)


def test_empty_csv_refused():
    """An empty file is at least refused with a DataError (whatever the wording)."""
    with pytest.raises(DataError):
        read_table(b"")


def test_header_only():
    """A header without rows is refused."""
    with pytest.raises(DataError, match="header but no data rows"):
        read_table(b"x,y\n")


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        bytes(range(256)) * 4,
        np.random.default_rng(4).bytes(4096),
    ],
    ids=["png", "all-bytes", "random"],
)
def test_binary_file_refused(data):
    """Binary content is refused as not a readable CSV."""
    with pytest.raises(DataError, match="not a readable CSV file"):
        read_table(data)


def test_missing_file_and_folder(tmp_path):
    """A missing path and a folder are refused with their own messages."""
    with pytest.raises(DataError, match="no such file"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a folder"):
        read_table(tmp_path)


def test_no_numeric_column():
    """A table without numbers is refused."""
    with pytest.raises(DataError, match="no numeric column"):
        load_csv(io.BytesIO(b"name,colour\n" + b"".join(b"a%d,red\n" % i for i in range(12))))


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "", "abc"])
def test_non_finite_values_refused_with_line(bad):
    """Missing, non-numeric and infinite values are refused, naming the file line and the option that
    keeps them; missing="keep" (or drop_missing) keeps the row as a point not observed."""
    rows = _series(15)
    rows[5] = (5, bad)
    data = _csv(rows)
    with pytest.raises(DataError, match=r"1 rows have missing, non-numeric or infinite values \(file lines 7\)"
                       r".*--missing keep"):
        load_csv(io.BytesIO(data))
    for kept in (load_csv(io.BytesIO(data), drop_missing=True), load_csv(io.BytesIO(data), missing="keep")):
        assert kept.n == 14 and 5.0 not in kept.x[:, 0]
        assert any("1 rows have no value (file lines 7): kept as points not observed" in n for n in kept.notes)


def test_fewer_than_ten_points():
    """Nine points are too few."""
    with pytest.raises(DataError, match="only 9 usable points; at least 10 are needed"):
        load_csv(io.BytesIO(_csv(_series(9))))
    assert load_csv(io.BytesIO(_csv(_series(10)))).n == 10


def test_too_many_points_unless_subsampled():
    """More than max_points is refused (with the cost explained) unless subsample=True."""
    data = _csv(_series(50))
    with pytest.raises(DataError, match="50 points is more than the maximum of 20"):
        load_csv(io.BytesIO(data), max_points=20)
    ds = load_csv(io.BytesIO(data), max_points=20, subsample=True)
    assert ds.n == 20
    assert any("subsampled from 50 to 20" in n for n in ds.notes)
    assert ds.x[0, 0] == 0.0 and ds.x[-1, 0] == 49.0  # evenly spaced, ends kept
    assert ds.n_test >= 1 and ds.n_train >= 2
    assert load_csv(io.BytesIO(data), max_points=None).n == 50


def test_file_bigger_than_max_bytes(tmp_path):
    """Bytes and files above max_bytes are refused before parsing."""
    data = _csv(_series(200))
    with pytest.raises(DataError, match="above the limit"):
        read_table(data, max_bytes=len(data) - 1)
    assert read_table(data, max_bytes=len(data)).shape == (200, 2)
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    with pytest.raises(DataError, match="above the limit"):
        read_table(path, max_bytes=1000)


def test_size_message_is_consistent():
    """The size message states a limit below the file size it reports."""
    with pytest.raises(DataError) as info:
        read_table(b"a" * 1_600_000, max_bytes=1_500_000)
    size, limit = map(float, re.findall(r"([0-9.]+) MB", str(info.value)))
    assert size > limit


# --- dates -------------------------------------------------------------------------------------------


def test_monthly_dates_are_an_exact_grid():
    """First-of-month dates become year + (month − 1)/12 exactly: a regular grid."""
    dates = pd.date_range("1990-01-01", periods=30, freq="MS")
    text = "date,v\n" + "".join(f"{d:%Y-%m-%d},{i}\n" for i, d in enumerate(dates))
    ds = load_csv(io.BytesIO(text.encode()))
    assert ds.x_kind == "date" and ds.x_label == "date"
    expected = np.array([d.year + (d.month - 1) / 12 for d in dates])
    np.testing.assert_array_equal(ds.x[:, 0], expected)


def test_daily_dates_use_days_since_1970():
    """Other dates become 1970 + days/365.2425."""
    s = pd.Series(pd.to_datetime(["1970-01-01", "1970-01-11", "2000-03-15"]))
    np.testing.assert_allclose(dates_to_decimal_years(s), [1970.0, 1970 + 10 / 365.2425,
                                                           1970 + (pd.Timestamp("2000-03-15").value / 8.64e13)
                                                           / 365.2425])


def test_load_bundled_airline():
    """The default bundled dataset: 144 monthly points from January 1949, split 129/15 like TSDL airline."""
    ds = load_bundled("airline")
    assert ds.n == 144 and ds.x_kind == "date"
    assert ds.x[0, 0] == 1949.0 and ds.x[-1, 0] == pytest.approx(1960 + 11 / 12)
    np.testing.assert_allclose(np.diff(ds.x[:, 0]), 1 / 12, rtol=1e-9)
    assert (ds.n_train, ds.n_test) == (129, 15)
    assert ds.y_label == "passengers (thousands)"  # the catalog's units, not the bare column name
    with pytest.raises(DataError, match="no bundled dataset"):
        load_bundled("nope")


def test_every_bundled_dataset_loads():
    """Every dataset of data/catalog.json loads with its catalogued size, sorted, without changes."""
    catalog = bundled_datasets()
    assert catalog[0]["name"] == "airline"
    for entry in catalog:
        ds = load_bundled(entry["name"])
        assert ds.n == entry["n"], entry["name"]
        assert ds.x_kind == entry["x_kind"] == "date"
        assert np.all(np.diff(ds.x[:, 0]) > 0)
        assert ds.notes == (), (entry["name"], ds.notes)
        assert np.all(np.isfinite(ds.y))
        assert ds.y_label == entry["y_label"], entry["name"]


# --- normalisation ------------------------------------------------------------------------------------


def test_normalisation_maps_training_part():
    """Training x spans [1, 2]; training y has mean 0 and std 1; maps round-trip."""
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(1900, 2000, 40))
    y = 50 + 10 * rng.standard_normal(40)
    ds = Dataset.from_arrays(x, y)
    nm = ds.norm
    Xm = nm.x_to_model(ds.X_train)
    assert Xm.min() == pytest.approx(1.0) and Xm.max() == pytest.approx(2.0)
    assert nm.x_to_model(ds.X_test).min() > 2.0
    ym = nm.y_to_model(ds.y_train)
    assert ym.mean() == pytest.approx(0.0, abs=1e-12) and ym.std() == pytest.approx(1.0)
    np.testing.assert_allclose(nm.y_from_model(nm.y_to_model(ds.y)), ds.y, rtol=1e-14)
    np.testing.assert_allclose(nm.std_from_model(np.ones(3)), np.full(3, np.std(ds.y_train)))
    assert Normalisation.from_dict(nm.to_dict()) == nm
    # 1-D input is accepted and treated as one column.
    np.testing.assert_allclose(nm.x_to_model(ds.X_train[:, 0]), Xm)


def test_normalisation_degenerate():
    """Constant y gets std 1 instead of a division by zero."""
    nm = Normalisation.fit(np.arange(5.0)[:, None], np.full(5, 3.0))
    assert nm.y_std == 1.0 and nm.y_mean == 3.0


def test_dataset_from_frame_column_errors():
    """Unknown columns and x == y are refused with the available columns named."""
    df = pd.DataFrame({"a": np.arange(12.0), "b": np.arange(12.0)})
    with pytest.raises(DataError, match=r"no column named 'c'; columns are \['a', 'b'\]"):
        dataset_from_frame(df, "a", "c")
    with pytest.raises(DataError, match="no column named 'z'"):
        dataset_from_frame(df, "z", "b")
    with pytest.raises(DataError, match="different columns"):
        dataset_from_frame(df, "a", "a")
    ds = dataset_from_frame(df, None, "b")
    assert ds.x_label == "row"



def test_text_value_column_is_named_not_replaced():
    """A last column of text is not silently replaced by the x column: the error names it and shows values."""
    rows = "".join(f"{1990 + i},=cmd|'/c calc'!A{i}\n" for i in range(12))
    with pytest.raises(DataError, match=r"last column 'value' is not numeric \(values such as \"=cmd"):
        load_csv(io.BytesIO(f"year,value\n{rows}".encode()))
    # Picking a numeric column on purpose still works.
    rows = "".join(f"{1990 + i},{i * 1.5},note {i}\n" for i in range(12))
    ds = load_csv(io.BytesIO(f"year,sales,comment\n{rows}".encode()), x="year", y="sales")
    assert ds.y_label == "sales" and ds.n == 12


@pytest.mark.parametrize("column", ["y", "x"])
def test_values_whose_squares_overflow_are_refused(column):
    """1e300 would pass every check and fail at the end of a search; it is refused up front with advice."""
    x = np.arange(20.0) + (1e300 if column == "x" else 0.0)
    y = (1.0 + 0.1 * np.sin(x)) * (1e300 if column == "y" else 1.0)
    frame = pd.DataFrame({"t": x, "v": y})
    with pytest.raises(DataError, match=r"values up to 1(\.1)?e\+300.*overflow.*divide it by 1e297"):
        dataset_from_frame(frame, "t", "v")


@pytest.mark.parametrize("f", [0.5, 0.95, 1.0, -0.01])
def test_validate_split_refuses_a_test_fraction_outside_0_to_half(f):
    with pytest.raises(DataError, match=r"refused: it must be at least 0 and below 0\.5"):
        validate_split(f)


def test_validate_split_refuses_fewer_than_ten_training_points():
    validate_split(0.0)
    validate_split(0.49, MIN_TRAIN_POINTS)
    with pytest.raises(DataError, match="leaves 9 training points; at least 10 are needed") as err:
        validate_split(0.3, 9)
    assert "\n" not in str(err.value)
    ds = Dataset.from_arrays(np.arange(13.0), np.sin(np.arange(13.0)), test_fraction=0.3)
    with pytest.raises(DataError, match="leaves 9 training"):
        validate_split(ds.test_fraction, ds.n_train)


def test_long_series_load_whole_by_default():
    """Fits use a subset of data above a search's fit_points: a 30,000-point table needs no subsampling."""
    from evocov_core.data import MAX_POINTS

    data = _csv(_series(30_000))
    ds = load_csv(io.BytesIO(data))
    assert ds.n == 30_000 and not ds.notes and MAX_POINTS >= 200_000


def test_a_day_first_column_is_read_day_first_throughout():
    """01/02/2020 is ambiguous; 13/01/2020 is not: the whole column takes the one format that reads
    every value, instead of a value-by-value guess that scrambles the order of the days."""
    days = pd.date_range("2020-01-01", periods=30, freq="D")
    text = "date,y\n" + "".join(f"{d:%d/%m/%Y},{i}\n" for i, d in enumerate(days))
    ds = load_csv(io.BytesIO(text.encode()), test_fraction=0.1)
    assert ds.x_kind == "date" and not ds.notes  # nothing needed sorting
    np.testing.assert_allclose(ds.x[:, 0], dates_to_decimal_years(pd.Series(days)))
    np.testing.assert_array_equal(ds.y, np.arange(30.0))


@pytest.mark.parametrize("stamps", [
    [f"2020-01-01T{h:02d}:00:00+01:00" for h in range(24)],
    [f"2020-01-01T{h:02d}:00:00Z" for h in range(24)],
    # a daylight-saving change inside the column: +01:00, then +02:00
    [f"2021-03-28T{h:02d}:00:00+01:00" for h in range(2)] + [f"2021-03-28T{h:02d}:00:00+02:00" for h in range(3, 24)],
], ids=["offset", "utc", "dst"])
def test_times_with_an_offset_are_read_in_utc(stamps):
    text = "time,y\n" + "".join(f"{s},{i}\n" for i, s in enumerate(stamps))
    ds = load_csv(io.BytesIO(text.encode()), test_fraction=0.1)
    utc = pd.Series(pd.to_datetime(stamps, utc=True).tz_localize(None))
    np.testing.assert_allclose(ds.x[:, 0], dates_to_decimal_years(utc))
    assert np.all(np.diff(ds.x[:, 0]) > 0)  # an hour apart each, the DST change included


def test_values_that_barely_vary_are_refused_and_spread_survives_scaling():
    """Below 1e-100 variances underflow: refused with the factor to rescale by. Normalisation keeps
    the spread of small values instead of squaring them to a zero standard deviation."""
    y = np.sin(np.arange(30) / 3.0)
    with pytest.raises(DataError, match=r"varies by only \d\.\d+e-301 .* multiply it by 1e301"):
        dataset_from_frame(pd.DataFrame({"x": np.arange(30.0), "y": y * 1e-300}), "x", "y", test_fraction=0.1)
    norm = Normalisation.fit(np.arange(30.0)[:, None], y * 1e-200)
    assert norm.y_std == pytest.approx(np.std(y) * 1e-200, rel=1e-12)


def test_inputs_with_another_number_of_columns_than_the_normalisation_are_refused():
    norm = Normalisation((0.0, 0.0), (1.0, 1.0), 0.0, 1.0)
    with pytest.raises(DataError, match=r"the inputs have 1 column\(s\) but the normalisation .* has 2"):
        norm.x_to_model(np.arange(5.0))


@pytest.mark.parametrize(("text", "message"), [
    ("x,y\n" + "".join(f'{i},"1,{i:03d}"\n' for i in range(12)), r"column 'y' holds numbers written with commas"),
    ("x,y\n" + "".join(f"{i},{i % 2 == 0}\n" for i in range(12)), r"values such as 'True', 'False'"),
], ids=["thousands", "booleans"])
def test_what_is_not_a_number_is_named(text, message):
    with pytest.raises(DataError, match=message):
        load_csv(io.BytesIO(text.encode()), test_fraction=0.1)


def test_decimal_commas_between_semicolons_and_a_file_without_header_are_read_and_said():
    """A spreadsheet's `;`-separated file with 0,5 for one half is read as numbers; a file whose first
    line is data keeps that line; both say so in the notes."""
    ds = load_csv(io.BytesIO(("t;value\n" + "".join(f"{i};{i % 7},5\n" for i in range(30))).encode()),
                  test_fraction=0.1)
    assert ds.y_label == "value" and list(ds.y[:3]) == [0.5, 1.5, 2.5]
    assert any("decimal commas" in n for n in ds.notes)
    ds = load_csv(io.BytesIO("".join(f"{i},{(i * 7) % 5}\n" for i in range(30)).encode()), test_fraction=0.1)
    assert ds.n == 30 and ds.x[0, 0] == 0.0 and ds.y_label == "column 2"
    assert any("no header line" in n for n in ds.notes)


def test_thousands_points_beside_decimal_commas_are_read_as_groups():
    """In a `;` file written in a European locale, 1.234,5 is 1234.5 and 1.000 is a thousand; a column that
    mixes 1.5 and 2,5 is not guessed at."""
    rows = "".join(f"{i};{1000 + 250 * i:_d},{i % 10}\n".replace("_", ".") for i in range(30))
    ds = load_csv(io.BytesIO(("t;value\n" + rows + "30;1.000\n").encode()), test_fraction=0.1)
    assert list(ds.y[:2]) == [1000.0, 1250.1] and ds.y[-1] == 1000.0
    assert any("1.234,5 as 1234.5" in n for n in ds.notes)
    mixed = "t;value\n" + "".join(f"{i};{i}.5\n" if i % 2 else f"{i};{i},5\n" for i in range(30))
    with pytest.raises(DataError, match="not numeric"):
        load_csv(io.BytesIO(mixed.encode()), test_fraction=0.1)


def test_a_preamble_of_comment_lines_is_skipped_and_said():
    """A provider's `#` preamble (NOAA's CO2 files start with 40 such lines) is skipped; pandas' messages
    keep the file's own line numbers; a file of comments alone is refused."""
    body = "t,ppm\n" + "".join(f"{1958 + i / 12:.4f},{315 + np.sin(i):.2f}\n" for i in range(30))
    ds = load_csv(io.BytesIO(("# NOAA GML\n#\n\n# columns: t, ppm\n" + body).encode()), test_fraction=0.1)
    assert ds.n == 30 and ds.y_label == "ppm" and ds.x_label == "t"
    assert any("first 4 line(s)" in n and "comments" in n for n in ds.notes)
    with pytest.raises(DataError, match="line 5, saw 3"):
        read_table(b"# one\n# two\nx,y\n1,2\n3,4,5\n")
    with pytest.raises(DataError, match="only comment lines"):
        read_table(b"# nothing\n\n# here\n")
    assert read_table(b"x,y\n1,2\n3,4\n").attrs["notes"] == []


def test_numbers_are_read_back_exactly_as_written():
    """A series written with full precision and read again has the same bits (pandas' default parser can be one
    unit in the last place off, and a search amplifies that into another kernel)."""
    from evocov_core.data.table import read_table

    y = np.random.default_rng(0).standard_normal(500) * 10.0 ** np.random.default_rng(1).integers(-5, 6, 500)
    text = "x,y\n" + "\n".join(f"{i},{float(v)!r}" for i, v in enumerate(y))
    assert np.array_equal(read_table(text.encode()).y.to_numpy(), y)
