"""What the Panel page and the Data page's long-table tab compute: no Streamlit here.

The settings typed as ``name=value`` pairs (:func:`settings_from_text`), what a long table's series will get
(:func:`series_notes`), the table of a run (:func:`series_rows`), and a panel series as a run of the store
that the Results page opens as it opens a single search (:func:`register_series_run`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dashboard.panel_runs import FUTURE, TABLE, PanelRequest, PanelRuns
from dashboard.state import FUTURE_VALUES
from evocov_core.data import DataError, Dataset, read_table
from evocov_core.panel.series import MIN_SEARCH_POINTS
from evocov_core.panel.table import Panel, future_values, panel_from_frame
from evocov_core.runs.store import RunStore
from evocov_core.searches import ConfigError, RunStatus, preset
from evocov_core.searches.config import settings, with_derived

__all__ = ["SPARK_POINTS", "format_eta", "panel_of_run", "register_series_run", "series_dataset", "series_notes",
           "series_rows", "settings_from_text"]

#: Observed points a sparkline draws before the forecast.
SPARK_POINTS = 48
_SETTINGS = {name: (typ, meta) for name, typ, meta in settings()}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _value(name: str, typ: Any, meta: Any, text: str) -> Any:
    """One setting's value from its text, by its type and choices; ValueError says why not."""
    if typ is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"{name} is true or false, not {text!r}")
    if typ is tuple:
        items = tuple(v for v in re.split(r"[,+]", text) if v)
        bad = [v for v in items if meta.choices and v not in meta.choices]
        if bad:
            raise ValueError(f"{name} takes {', '.join(meta.choices)}; not {', '.join(bad)}")
        return items
    if meta.choices is not None:
        if text not in meta.choices:
            raise ValueError(f"{name} is one of {', '.join(meta.choices)}; not {text!r}")
        return text
    try:
        v = int(text) if typ is int else float(text)
    except ValueError:
        raise ValueError(f"{name} is {'a whole number' if typ is int else 'a number'}, not {text!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite")
    return v


def settings_from_text(text: str, preset_name: str) -> dict[str, Any]:
    """Search settings from ``name=value`` pairs (``population=6 mu=2 combine=AutoETS,AutoTheta``), checked
    over ``preset_name`` as a run checks them.

    Names are :class:`~evocov_core.searches.SearchConfig`'s, as the command line's options (``--d-min 2`` is
    ``d-min=2`` or ``d_min=2``). The time budget is not one of them here: the page has its own box.

    Raises
    ------
    ValueError
        One line: an unknown name, a value of the wrong kind, or settings the search refuses together.
    """
    out: dict[str, Any] = {}
    for token in re.split(r"[\s;]+", text.strip()):
        if not token:
            continue
        name, eq, value = token.partition("=")
        name = name.lstrip("-").replace("-", "_").lower()
        if not eq or not name or not value:
            raise ValueError(f"{token!r} is not name=value (for example population=20)")
        if name == "time_budget":
            raise ValueError("set the time budget with Seconds per series")
        if name not in _SETTINGS:
            raise ValueError(f"unknown setting {name!r} (the names of `python -m evocov_core search --help`, "
                             "such as population, generations, mu, max_evals)")
        out[name] = _value(name, *_SETTINGS[name], value)
    try:
        preset(preset_name, **with_derived(dict(out)))
    except (ConfigError, TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    return out


def format_eta(seconds: float) -> str:
    """``"0:42"``, ``"1:02:03"``; ``"—"`` when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "—"
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _names(uids: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(uids[:most])
    return shown + (f" and {len(uids) - most} more" if len(uids) > most else "")


def series_notes(panel: Panel) -> list[str]:
    """What the series a run cannot search get, one sentence per kind (empty when every series is searched)."""
    none = [s.uid for s in panel.series if s.y.size == 0]
    one = [s.uid for s in panel.series if s.y.size == 1]
    short = [s.uid for s in panel.series if 2 <= s.y.size < MIN_SEARCH_POINTS]
    flat = [s.uid for s in panel.series if s.y.size >= MIN_SEARCH_POINTS and float(np.ptp(s.y)) == 0.0]
    missing = sum(s.missing for s in panel.series)
    notes = []
    if one:
        notes.append(f"{len(one)} series with a single observed point ({_names(one)}): that value is its forecast, "
                     "with no interval (a fallback; its row says so)")
    if short:
        notes.append(f"{len(short)} series with fewer than {MIN_SEARCH_POINTS} observed points ({_names(short)}): "
                     "seasonal naive instead of a search (a fallback; the row says so)")
    if flat:
        notes.append(f"{len(flat)} constant series ({_names(flat)}): seasonal naive instead of a search")
    if none:
        notes.append(f"{len(none)} series without any value ({_names(none)}): no forecast, and the row says so")
    if missing:
        notes.append(f"{missing:,} empty values of y are points not observed: each series is searched on the points "
                     "it has, at their own times")
    return notes


def panel_of_run(runs: PanelRuns, run_id: str) -> Panel:
    """The panel of a run, read from its folder's table as its worker read it."""
    request = runs.status(run_id).request
    return panel_from_frame(read_table(runs.folder(run_id) / TABLE), id_col=request.id_col, ds_col=request.ds_col,
                            y_col=request.y_col, season_length=request.season_length,
                            covariates=tuple(request.covariates))


def series_rows(series: pd.DataFrame, forecasts: pd.DataFrame | None,
                observed: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The Panel page's table: one row per series of ``series.csv``.

    ``spark`` is the last :data:`SPARK_POINTS` observed values then the forecast's (the product's mean).
    """
    means: dict[str, list[float]] = {}
    if forecasts is not None and len(forecasts):
        for uid, g in forecasts.groupby("unique_id", sort=False):
            means[str(uid)] = [float(v) for v in g["EvoCov"] if math.isfinite(v)]
    rows = []
    for r in series.itertuples(index=False):
        uid = str(r.unique_id)
        history = [float(v) for v in np.asarray(observed.get(uid, ()), dtype=float)[-SPARK_POINTS:]]
        rows.append({"series": uid, "spark": history + means.get(uid, []), "status": str(r.status),
                     "kernel": r.kernel if isinstance(r.kernel, str) and r.kernel else "—",
                     "forecast by": str(r.forecast) if isinstance(r.forecast, str) else "",
                     "holdout ÷ AutoETS": float(r.holdout_ratio),
                     "kernel holdout ÷ AutoETS": float(r.holdout_kernel_ratio),
                     "points": int(r.n), "missing": int(r.missing), "BIC": float(r.bic), "seconds": float(r.seconds),
                     "why": r.reason if isinstance(r.reason, str) else ""})
    return pd.DataFrame(rows, columns=["series", "spark", "status", "kernel", "forecast by", "holdout ÷ AutoETS",
                                       "kernel holdout ÷ AutoETS", "points", "missing", "BIC", "seconds", "why"])


def series_dataset(panel: Panel, uid: str, y_label: str) -> Dataset:
    """A panel's series as its search saw it: every observed point (with the panel's covariates there, x's
    columns 2 to d), no test part."""
    s = next(s for s in panel.series if s.uid == uid)
    x = np.column_stack([s.x, s.c]) if panel.covariates and s.c is not None else s.x
    return Dataset.from_arrays(x, s.y, name=uid, test_fraction=0.0, x_kind=panel.x_kind, x_label=panel.x_label,
                               y_label=y_label, min_points=1, covariates=panel.covariates if x.ndim == 2 else ())


def series_run_id(run_id: str, uid: str) -> str:
    """The store's id of a panel series' run: the same for every click, every session and every server."""
    return hashlib.sha1(f"panel\0{run_id}\0{uid}".encode()).hexdigest()[:12]


def register_series_run(store: RunStore, runs: PanelRuns, run_id: str, uid: str, kernel_file: str,
                        seconds: float) -> str | None:
    """Put a panel series into the run store as a finished search (its data and its kernel file), so that the
    Results page shows it as it shows a single search; returns its run id (None without its kernel file).

    The run is made once (its id is :func:`series_run_id`); a run deleted on the Runs page is made again.
    """
    rid = series_run_id(run_id, uid)
    if store.get_run(rid) is not None:
        return rid
    text = runs.kernel_text(run_id, kernel_file)
    if text is None:
        return None
    request: PanelRequest = runs.status(run_id).request
    panel = panel_of_run(runs, run_id)
    ds = series_dataset(panel, uid, request.y_col)
    extra = {}
    if panel.covariates:  # the future values the panel forecast it with: the Results page forecasts with them too
        try:
            fx, fc = future_values(panel, read_table(runs.folder(run_id) / FUTURE), request.h)[uid]
            extra[FUTURE_VALUES] = {"file": f"the future values of panel {run_id}", "names": list(panel.covariates),
                                    "x": fx.tolist(), "c": fc.tolist()}
        except (DataError, OSError, KeyError):  # (the run read them; a folder changed since): uploaded again
            pass
    doc = json.loads(text)
    config = preset(request.preset, **with_derived(dict(request.settings)))
    try:
        store.create_run(rid, kind="search", algorithm=str(config.algorithm), dataset=ds,
                         settings=config.to_dict(), seed=request.seed, label=f"Panel {run_id} · {uid}",
                         status=RunStatus.FINISHED, extra=extra)
    except sqlite3.IntegrityError:  # another session made it a moment ago
        return rid
    evaluations = (doc.get("scores") or {}).get("evaluations")
    store.finish_run(rid, RunStatus.FINISHED, best_doc=doc, elapsed=seconds if math.isfinite(seconds) else None,
                     n_evaluations=int(evaluations) if isinstance(evaluations, int) else None)
    return rid
