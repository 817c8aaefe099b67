"""Many series at once: :func:`forecast_panel`, parallel over series, resumable, every series forecast.

A panel is a long table (statsforecast's ``unique_id, ds, y``; :mod:`evocov_core.panel.table`). Each
series is one job (:func:`~evocov_core.panel.series.forecast_series`): a search on its observed points
with the panel's preset and settings, and the forecast of the ``h`` steps after it, or a named fallback.
Jobs run in local processes (default: one per core), in this process (``workers=1``) or on a Dask cluster
(``scheduler``), one series a task, with nothing installed on the workers: the same forecasts wherever
they run, since a job depends on its own series, the settings and the seed only.

With ``out`` the run keeps a folder (:mod:`evocov_core.panel.store`): each series is written as it
finishes, a run that is interrupted or killed resumes when called again with the same arguments (the
finished series are read, not redone), and ``forecasts.csv``, ``series.csv`` and one kernel file per
series are written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evocov_core.data.limits import DataError
from evocov_core.fitting.priors import HyperPrior
from evocov_core.panel.series import LEVELS, SeriesJob, SeriesOutcome, Status, forecast_series
from evocov_core.panel.store import PanelStore, atomic_write, parts_in_order
from evocov_core.panel.table import Panel, future_values, panel_from_frame

__all__ = ["FORECAST_COLUMNS", "NAME", "PRIOR_SAMPLE", "SERIES_COLUMNS", "PanelProgress", "PanelResult",
           "forecast_panel", "learn_prior", "panel_jobs"]

#: The method's name in the forecasts' columns (statsforecast's convention: one column per model).
NAME = "EvoCov"
#: ``forecasts.csv``: statsforecast's shape for the product's forecast, then the kernel's own.
FORECAST_COLUMNS = ("unique_id", "ds", NAME, *(f"{NAME}-{s}-{lv}" for lv in LEVELS for s in ("lo", "hi")),
                    f"{NAME}-kernel", *(f"{NAME}-kernel-{s}-{lv}" for lv in LEVELS for s in ("lo", "hi")))
#: ``series.csv``: one row per series.
SERIES_COLUMNS = ("unique_id", "status", "reason", "n", "missing", "kernel", "kernel_infix", "bic", "forecast",
                  "holdout_ratio", "holdout_kernel_ratio", "cpu_s", "seconds", "kernel_file")


@dataclass(frozen=True)
class PanelProgress:
    """Where a panel run is: what a progress bar shows.

    Attributes
    ----------
    done, total : int
        Series finished (read from a resumed folder included) and in the panel.
    resumed : int
        Of ``done``, those read from the folder of an earlier run.
    uid : str
        The series that just finished ("" for the first report).
    status : str
    elapsed : float
        Seconds since this call started.
    eta : float
        Seconds left, by this call's pace so far (NaN before its first series).
    """

    done: int
    total: int
    resumed: int
    uid: str
    status: str
    elapsed: float
    eta: float


@dataclass(frozen=True, eq=False)
class PanelResult:
    """What :func:`forecast_panel` returns.

    Attributes
    ----------
    forecasts : pandas.DataFrame
        One row per series and step, columns :data:`FORECAST_COLUMNS`: ``EvoCov`` is the product's
        forecast (the kernel's, or its weighted average with classical forecasts, or a series' fallback)
        with 80 % and 95 % intervals; ``EvoCov-kernel...`` the kernel's own (NaN without a kernel).
    series : pandas.DataFrame
        One row per series, columns :data:`SERIES_COLUMNS`: the kernel in words and in infix, its BIC, who
        forecasts with which weights, the status (``ok``, ``fallback``, ``no_data``, ``error``) and its
        reason, the forecast's and the kernel's RMSE on the series' last ``h`` points refitted without them ÷
        AutoETS's (:func:`~evocov_core.panel.series.holdout_ratios`), the CPU seconds.
    out : Path or None
        The run's folder.
    resumed : int
        Series read from an earlier run's folder.
    """

    forecasts: pd.DataFrame
    series: pd.DataFrame
    out: Path | None = None
    resumed: int = 0

    @property
    def errors(self) -> int:
        """Series whose job raised (status ``error``): a bug to report, not a property of the data."""
        return int((self.series["status"] == Status.ERROR).sum())


def _fingerprint(panel: Panel) -> str:
    h = hashlib.sha256()
    for s in panel.series:
        h.update(s.uid.encode("utf-8") + b"\0")
        h.update(np.ascontiguousarray(s.x, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(s.y, dtype=np.float64).tobytes())
    return h.hexdigest()


def _step(panel: Panel) -> float:
    """The panel's usual step in its x units (the median of the series' median steps)."""
    steps = [float(np.median(np.diff(s.x))) for s in panel.series if s.x.size > 1]
    return float(np.median(steps)) if steps else 1.0 / float(panel.season_length or 1)


def panel_jobs(panel: Panel, h: int, *, preset: str, seed: int, settings: Mapping[str, Any],
               describe: Callable[[Any, Any], str | None] | None = None,
               futures: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None) -> list[SeriesJob]:
    """One :class:`~evocov_core.panel.series.SeriesJob` per series of ``panel``, in its order (``futures``: each
    series' future times and covariates, :func:`~evocov_core.panel.table.future_values`)."""
    step = _step(panel)
    seasons = (panel.season_length,) if panel.season_length and panel.season_length > 1 else ()
    futures = futures or {}
    return [SeriesJob(s.uid, s.x, s.y, panel.x_kind, panel.x_label, h, preset, dict(settings), seed, seasons,
                      s.missing, step, describe, covariates=panel.covariates, c=s.c,
                      future_x=futures[s.uid][0] if s.uid in futures else None,
                      future_c=futures[s.uid][1] if s.uid in futures else None) for s in panel.series]


#: Series the panel's priors are learned on, at most (a seeded draw among those a search can serve).
PRIOR_SAMPLE = 100


def _estimates(job: SeriesJob) -> list[tuple[str, float]]:
    """One series' role estimates for the panel's priors (:func:`~evocov_core.panel.priors.role_estimates`)."""
    from evocov_core.data.dataset import Dataset
    from evocov_core.panel.priors import role_estimates
    from evocov_core.searches import preset, search_data
    from evocov_core.searches.config import with_derived

    config = preset(job.preset, **with_derived({**job.settings, "priors": "none"}))
    ds = Dataset.from_arrays(job.x, job.y, name=job.uid, test_fraction=0.0, x_kind=job.x_kind, x_label=job.x_label)
    return role_estimates(search_data(ds, config), config.optim, job.seed)


def learn_prior(jobs: Sequence[SeriesJob], runner: Any, *, sample: int = PRIOR_SAMPLE, seed: int = 0) -> HyperPrior:
    """The panel's prior (:mod:`evocov_core.panel.priors`) from up to ``sample`` of ``jobs``' series that a search
    can serve, drawn with ``seed``, fitted on ``runner``."""
    from evocov_core.panel.priors import prior_from_estimates
    from evocov_core.panel.series import MIN_SEARCH_POINTS

    able = [j for j in jobs if len(j.y) >= MIN_SEARCH_POINTS and float(np.ptp(j.y)) > 0]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1013]))
    pick = sorted(rng.choice(len(able), size=min(sample, len(able)), replace=False).tolist()) if able else []
    return prior_from_estimates(runner.map(_estimates, [able[i] for i in pick]))


def _prior_doc(prior: HyperPrior) -> dict:
    return {"roles": [list(r) for r in prior.roles], "noise": list(prior.noise) if prior.noise else None}


def _prior_from_doc(doc: Mapping[str, Any]) -> HyperPrior:
    roles = tuple((str(r), float(m), float(sd)) for r, m, sd in doc["roles"])
    noise = doc.get("noise")
    return HyperPrior(roles, None if noise is None else (float(noise[0]), float(noise[1])), "panel")


def _check(h: object, preset: str, settings: Mapping[str, Any]) -> None:
    from evocov_core.searches import preset as make_preset
    from evocov_core.searches.config import ConfigError, SearchConfig, with_derived

    if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 1 <= h <= 10_000:
        raise DataError(f"the horizon must be a whole number of steps from 1 to 10,000; got {h!r}")
    unknown = sorted(set(settings) - set(SearchConfig.__dataclass_fields__))
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    make_preset(preset, **with_derived(dict(settings)))  # refuses an invalid setting now, not in every job


def forecast_panel(df: pd.DataFrame, h: int, *, preset: str = "panel", seed: int = 0, budget: float | None = None,
                   season_length: int | None = None, id_col: str | None = None, ds_col: str | None = None,
                   y_col: str | None = None, workers: int | None = None, scheduler: str | None = None,
                   out: str | Path | None = None, progress: Callable[[PanelProgress], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, covariates: Sequence[str] = (),
                   describe: Callable[[Any, Any], str | None] | None = None, panel_priors: bool = False,
                   X_df: pd.DataFrame | None = None, **settings: Any) -> PanelResult:
    """Forecast every series of a long table ``h`` steps ahead, each with its own kernel.

    Parameters
    ----------
    df : pandas.DataFrame
        statsforecast's long format: ``unique_id``, ``ds`` (dates, or numbers of steps), ``y`` (other
        names: ``id_col``, ``ds_col``, ``y_col``; guessed when not given). An empty ``y`` is a point not
        observed.
    h : int
        Steps to forecast after each series' last observation.
    preset : str
        A search preset (:data:`evocov_core.searches.PRESETS`); ``panel`` (default) gives each series a
        short time budget.
    seed : int
        Every series' search uses it.
    budget : float, optional
        Seconds of one core per series (the preset's ``time_budget``).
    season_length : int, optional
        Steps in a season when ``ds`` holds numbers (12: monthly, 4: quarterly, 1: yearly).
    workers : int, optional
        Local processes, one series each at a time (default: every core; 1: in this process).
    scheduler : str, optional
        A Dask scheduler's address: one task per series on its workers.
    out : path, optional
        A folder that keeps the run (module docstring): resumed when it holds the same run.
    progress : callable, optional
        Called with a :class:`PanelProgress` once at the start and after each series.
    should_stop : callable, optional
        Polled between series; True stops the run (the folder keeps what is finished).
    describe : callable, optional
        ``describe(model, dataset)``: the kernel in words for ``series.csv`` (a module-level function; the front
        door ``evocov_core.forecast_panel`` and the command line give the presentation layer's).
    panel_priors : bool
        Learn hyperparameter priors from the panel's own series first (up to :data:`PRIOR_SAMPLE` of them;
        :mod:`evocov_core.panel.priors`), and fit every series' kernels under them (``priors="panel"``). With
        ``out``, the learned prior is kept there (``prior.json``) and a resumed run reads it.
    covariates, X_df : sequence of str, pandas.DataFrame
        Columns of ``df`` with known futures (:mod:`evocov_core.forecast.covariates`), and their future values
        as statsforecast takes them (``unique_id``, ``ds``, the covariates; ``h`` rows a series, whose times
        the forecast is at: :func:`~evocov_core.panel.table.future_values`).
    **settings
        Search settings over the preset's (``population=20``...).

    Returns
    -------
    PanelResult

    Raises
    ------
    evocov_core.data.DataError
        The table cannot be read as a panel, a bad horizon, or ``out`` holds another run (one line).
    evocov_core.searches.ConfigError
        An unknown or invalid setting.
    """
    from evocov_core.compute.runners import make_runner
    from evocov_core.searches.config import current_settings

    t0 = time.perf_counter()
    settings = current_settings(_with_budget(settings, budget))  # earlier versions' names, today's
    if panel_priors:
        settings = {**settings, "priors": "none"}  # checked without the prior it will learn
    _check(h, preset, settings)
    # Each kernel is chosen, and the forecast's members weighed, by forecasts of the h steps asked for.
    settings = {"horizon": int(h), **settings}
    panel = panel_from_frame(df, id_col=id_col, ds_col=ds_col, y_col=y_col, season_length=season_length,
                             covariates=tuple(covariates))
    futures = _futures(panel, X_df, int(h))
    jobs = panel_jobs(panel, int(h), preset=preset, seed=seed, settings=settings, describe=describe, futures=futures)
    order = [j.uid for j in jobs]
    kept = {**settings, **({"panel_priors": True} if panel_priors else {}), **_covariates_kept(panel)}
    store = None if out is None else _store(out, panel, int(h), preset, seed, kept)
    parts: dict[str, dict] = {} if store is None else {u: p for u, p in store.done().items() if u in set(order)}
    resumed = len(parts)
    tick = _reporter(progress, parts, resumed, len(jobs), t0)

    def finished(i: int, outcome: SeriesOutcome) -> None:
        parts[outcome.uid] = (store.save(outcome.uid, outcome.x, outcome.forecast, outcome.row, outcome.kernel_file)
                              if store is not None else _part(outcome))
        tick(outcome.uid, str(outcome.row["status"]))

    tick("", "")
    todo = [j for j in jobs if j.uid not in parts]
    if todo:
        with make_runner(workers=workers, scheduler=scheduler, modules=("evocov_core.panel.series",)) as runner:
            if panel_priors:
                prior = _panel_prior(store, jobs, runner, seed)
                todo = [dataclasses.replace(j, prior=prior, settings={**j.settings, "priors": "panel"}) for j in todo]
            runner.map(forecast_series, todo, should_stop=should_stop, on_result=finished)
    result = _assemble(panel, order, parts, resumed, store)
    if store is not None:
        atomic_write(store.root / "forecasts.csv", result.forecasts.to_csv(index=False))
        atomic_write(store.root / "series.csv", result.series.to_csv(index=False))
    return result


def _with_budget(settings: dict[str, Any], budget: float | None) -> dict[str, Any]:
    """``settings`` with ``time_budget`` the ``budget`` seconds (refused unless positive), or as they are."""
    if budget is None:
        return settings
    if not (isinstance(budget, (int, float)) and budget > 0 and math.isfinite(budget)):
        raise DataError(f"the budget must be positive seconds; got {budget!r}")
    return {**settings, "time_budget": float(budget)}


def _covariates_kept(panel: Panel) -> dict[str, list[str]]:
    """What a run's folder records of its covariates (none: nothing, as before they existed)."""
    return {"covariates": list(panel.covariates)} if panel.covariates else {}


def _futures(panel: Panel, table: pd.DataFrame | None, h: int) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """Each series' future times and covariates (:func:`~evocov_core.panel.table.future_values`); None without
    covariates. A :class:`DataError` when the panel has covariates and ``table`` is None."""
    if not panel.covariates:
        return None
    if table is None:
        raise DataError(f"the covariates {', '.join(panel.covariates)} need their future values (X_df; command line: "
                        "--future FILE): unique_id, ds and each covariate for the h steps after each series")
    return future_values(panel, table, h)


def _panel_prior(store: PanelStore | None, jobs: Sequence[SeriesJob], runner: Any, seed: int) -> HyperPrior:
    """The panel's learned prior: read from the run's folder, else learned (and kept there)."""
    import json

    path = None if store is None else store.root / "prior.json"
    if path is not None and path.exists():
        return _prior_from_doc(json.loads(path.read_text(encoding="utf-8")))
    prior = learn_prior(jobs, runner, seed=seed)
    if path is not None:
        atomic_write(path, json.dumps(_prior_doc(prior), indent=1) + "\n")
    return prior


def _store(out: str | Path, panel: Panel, h: int, preset: str, seed: int, settings: Mapping[str, Any]) -> PanelStore:
    """The run's folder, whose manifest is what makes the run: settings and the data's fingerprint."""
    _upgrade_manifest(Path(out) / "panel.json")
    return PanelStore(out, {"h": h, "preset": preset, "seed": int(seed), "settings": dict(sorted(settings.items())),
                            "season_length": panel.season_length, "ds_kind": panel.ds_kind,
                            "columns": list(panel.columns), "series": len(panel), "data": _fingerprint(panel)})


def _upgrade_manifest(path: Path) -> None:
    """Rewrite a run's manifest that an earlier version wrote with the grammar's booleans in today's names
    (``families``), so that the run resumes; any other manifest is left as it is, for the store to judge."""
    import json

    from evocov_core.searches.config import ConfigError, current_settings

    try:
        have = json.loads(path.read_text(encoding="utf-8"))
        settings = have["settings"]
        upgraded = current_settings(settings)
    except (OSError, ValueError, KeyError, TypeError, ConfigError):
        return
    if upgraded != settings:
        atomic_write(path, json.dumps({**have, "settings": dict(sorted(upgraded.items()))}, indent=1) + "\n")


def _reporter(progress: Callable[[PanelProgress], None] | None, parts: Mapping[str, dict], resumed: int, total: int,
              t0: float) -> Callable[[str, str], None]:
    """What reports each finished series to ``progress``, with the ETA at this call's pace."""
    started = time.perf_counter()

    def tick(uid: str, status: str) -> None:
        if progress is None:
            return
        ran = len(parts) - resumed
        eta = (time.perf_counter() - started) / ran * (total - len(parts)) if ran else math.nan
        progress(PanelProgress(len(parts), total, resumed, uid, status, time.perf_counter() - t0, eta))

    return tick


def _part(outcome: SeriesOutcome) -> dict:
    return {"uid": outcome.uid, "x": outcome.x, "forecast": outcome.forecast,
            "row": {**outcome.row, "kernel_file": ""}, "kernel": None}


def _assemble(panel: Panel, order: list[str], parts: Mapping[str, dict], resumed: int,
              store: PanelStore | None) -> PanelResult:
    frames, rows = [], []
    for part in parts_in_order(parts, order):
        x = np.asarray(part["x"], dtype=np.float64)
        fc = {k: np.asarray(v, dtype=np.float64) for k, v in part["forecast"].items()}
        frame = {"unique_id": part["uid"], "ds": panel.to_ds(x), NAME: fc["mean"]}
        for lv in LEVELS:
            frame[f"{NAME}-lo-{lv}"], frame[f"{NAME}-hi-{lv}"] = fc[f"lo-{lv}"], fc[f"hi-{lv}"]
        frame[f"{NAME}-kernel"] = fc["kernel-mean"]
        for lv in LEVELS:
            for side in ("lo", "hi"):
                frame[f"{NAME}-kernel-{side}-{lv}"] = fc[f"kernel-{side}-{lv}"]
        frames.append(pd.DataFrame(frame))
        rows.append({c: part["row"].get(c, "") for c in SERIES_COLUMNS})
    forecasts = (pd.concat(frames, ignore_index=True) if frames
                 else pd.DataFrame({c: pd.Series(dtype=float) for c in FORECAST_COLUMNS}))
    series = pd.DataFrame(rows, columns=list(SERIES_COLUMNS))
    return PanelResult(forecasts[list(FORECAST_COLUMNS)], series, None if store is None else store.root, resumed)
