"""The classical forecasters' test scores on each series of a benchmark, computed once per folder.

``bench accuracy-report`` sets our test RMSE beside SeasonalNaive, AutoETS, AutoARIMA,
AutoTheta and MSTL (:mod:`evocov_core.forecast.classical`) on the same split. They are deterministic,
so each series' forecasts are made once and kept in the output folder::

    classical.csv   series, checksum, n_train, n_test, model, status, test_rmse, coverage_95, crps,
                    interval_score, seconds, time_limit, seasons, settings, reason

one row per series and model, keyed by the series and the **checksum** (SHA-256) of its CSV
file: a row is reused while the file is the same, and made again when it changes. A model that
never ran (its process did not start: statsforecast missing, a machine too busy) is not kept,
so the next report tries again; a model that failed or ran out of time on the data is kept,
with its one-line reason.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from bench.common import ResultFile, load_series
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, MODELS

__all__ = ["CLASSICAL_COLUMNS", "VS_KEYS", "classical_file", "classical_scores", "series_checksum"]

CLASSICAL_COLUMNS = ["series", "checksum", "n_train", "n_test", "model", "status", "test_rmse", "coverage_95", "crps",
                     "interval_score", "seconds", "time_limit", "seasons", "settings", "reason"]

#: The summary key of our RMSE against each baseline (``vs_autoets=…``), in the report's order.
VS_KEYS = {"AutoETS": "vs_autoets", "AutoARIMA": "vs_autoarima", "AutoTheta": "vs_autotheta",
           "SeasonalNaive": "vs_snaive"}


def series_checksum(path: Path) -> str:
    """``"sha256:<hex>"`` of a series file's bytes (the prefix keeps it text in a CSV)."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def classical_file(out: Path) -> ResultFile:
    """``OUT/classical.csv``: one row per (series, model), the last one written."""
    return ResultFile(Path(out) / "classical.csv", CLASSICAL_COLUMNS, ["series", "model"])


def _rows(data_dir: Path, series: str, checksum: str, time_limit: float) -> list[dict]:
    from evocov_core.forecast.classical import classical_forecasts
    from evocov_core.present.compare import forecast_comparison

    ds = load_series(data_dir, series)
    fc = classical_forecasts(ds, time_limit=time_limit)
    table = forecast_comparison(ds, None, classical=fc).table
    seasons = ", ".join(map(str, fc.seasons.lengths)) or "none"
    out = []
    for r in table.to_dict("records"):
        never_ran = r["status"] in ("failed", "timeout") and not math.isfinite(r["seconds"])
        if never_ran:  # the child did not start: try again next time
            continue
        out.append({"series": series, "checksum": checksum, "n_train": ds.n_train, "n_test": ds.n_test,
                    "model": r["method"], "status": r["status"], "test_rmse": r["test_rmse"],
                    "coverage_95": r["coverage_95"], "crps": r["crps"], "interval_score": r["interval_score"],
                    "seconds": r["seconds"], "time_limit": time_limit, "seasons": seasons,
                    "settings": r["details"], "reason": r["reason"]})
    return out


def classical_scores(out: Path, data_dir: Path, series: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT,
                     log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The classical forecasters' scores on each series, from ``OUT/classical.csv`` or made now (and kept).

    Parameters
    ----------
    out : Path
        The benchmark's output folder.
    data_dir : Path
        The series (``NN-name.csv`` and ``splits.csv``: the published split, checked).
    series : sequence of str
        Series names; one whose file is not in ``data_dir`` has no rows.
    time_limit : float
        Seconds per model, for the series computed now.
    log : callable, optional
        A line per series computed.

    Returns
    -------
    DataFrame
        Columns :data:`CLASSICAL_COLUMNS`, one row per series and model (scores NaN where the
        model gave no forecast; ``status`` and ``reason`` say why).
    """
    rf = classical_file(out)
    have = rf.read()
    kept = []
    for s in series:
        path = Path(data_dir) / f"{s}.csv"
        if not path.is_file():
            continue
        checksum = series_checksum(path)
        rows = have[(have["series"] == s) & (have["checksum"] == checksum)] if len(have) else have
        if set(rows["model"]) >= set(MODELS):
            kept.append(rows)
            continue
        if log is not None:
            log(f"classical forecasters on {s}…")
        new = _rows(Path(data_dir), s, checksum, time_limit)
        for row in new:
            rf.append(row)
        kept.append(pd.DataFrame(new, columns=CLASSICAL_COLUMNS))
    kept = [k for k in kept if len(k)]
    table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=CLASSICAL_COLUMNS)
    for c in ("test_rmse", "coverage_95", "crps", "interval_score", "seconds", "time_limit"):
        table[c] = pd.to_numeric(table[c], errors="coerce")
    return table.reset_index(drop=True)
