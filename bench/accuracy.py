"""``bench accuracy`` and ``bench accuracy-report``: what a dashboard user gets, on the 13 TSDL series.

Each trial is one budgeted EvoCov search with the settings a dashboard user gets
(``preset("quick")`` or ``preset("standard")``, a time budget of 60 s or 300 s) on one
series at the published split, with one seed (seeds ``0 … K−1``) and one *variant*: the
preset itself (``full``) or the preset with one part turned off (:data:`VARIANTS`), so
that an ablation table shows what each part contributes.

Trials run **one after another** in this process, each search with ``--workers``
processes of its own, so that no two searches share the cores and every wall time is
honest; the wall time is measured around :func:`~evocov_core.searches.run_search`
(process pool start included) and its **wall ratio** is wall / budget.

The output folder holds::

    run.json       every invocation (command, start, end, wall, machine, settings of each variant)
    trials.csv     one row per finished trial (appended and synced as each ends)
    kernels/       <series>__<variant>__seed<k>.json, the returned kernel (evocov_core.runs.kernel_file format)
    classical.csv  the classical forecasters on each series, made once by the report
                   (:mod:`bench.common`)
    report.md      per-series table, ablation table, summary lines, every trial

A trial is done when its row says ``ok`` and its kernel file exists, or the search fitted
nothing (``no_kernel``); rows with ``error`` are run again. Rerunning the same command only
runs what is missing; a folder holds one set of settings per variant (a rerun with other
settings, e.g. another budget, is refused).

Scores, per series and variant, over the seeds: the median test RMSE (original units) of
the returned model, of the Bayesian model average (BMA, the search's ensemble) and of the
lowest-BIC kernel, each divided by the best published RMSE of the series
(``evocov_paper_rmse.csv``'s ``best_published``); the returned model's also by the paper's
EvoCov mean (``evocov_lml_mean``). A trial that fitted nothing counts as an infinite RMSE.
Per variant, over the series: the geometric mean of those median ratios
(``accuracy_geomean``), the worst (``worst_ratio``), the number above 3
(``series_over_3x``) and the largest wall ratio of any trial (``max_wall_ratio``).

Each trial also records the returned kernel's predictive scores on the test part
(``coverage_95``, the share of test points inside its 95 % interval, and ``crps``; the
predictive normal of latent variance + noise; older trials have none). The summary adds, per
variant (:func:`trial_summary`): each single trial's ratio to the reference RMSE, as a
geometric mean over all trials (``single_run_geomean``), its 90th percentile
(``single_run_p90``), the worst (``worst_single``) and the geometric mean over the series of
the per-series median (``median5_geomean``); the pooled coverage (``coverage_95``, over
``coverage_trials`` trials); and ``vs_autoets``, ``vs_autoarima``, ``vs_autotheta``,
``vs_snaive``: the geometric mean over the series of (median over the seeds of our test
RMSE) / that classical forecaster's test RMSE on the same split.

Trials also record the test RMSE of the forecast the search returned (``forecast_test_rmse``)
and what it was (``forecast``: ``kernel``, or ``kernel 0.62 + AutoTheta 0.38``… when the search
weighed the kernel's forecast with classical ones, ``kernel + AutoTheta``… in folders made before
weights: :mod:`evocov_core.forecast.combination`). Where they do, a
second line per variant (:func:`forecast_line`) gives that forecast's single-run figures
(``forecast_single_run_geomean``…), its RMSE paired against the kernel's own
(``forecast_paired``, ``forecast_paired_se_log``) and ``forecast_combined=K/N``. The summary's
other figures stay the kernel's.

A folder of series without published results (the development corpus,
``bench/corpus/series``: no ``evocov_paper_rmse.csv``) is judged against AutoETS on the same
split instead, and every summary key is prefixed ``corpus_`` (``corpus_single_run_geomean=…``).
"""

from __future__ import annotations

import json
import math
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bench.common import (
    COUNTED,
    BenchError,
    ResultFile,
    TrialStatus,
    append_run,
    command_line,
    fmt,
    geomean,
    load_series,
    machine_info,
    md_table,
    now_iso,
    read_runs,
    resolve_series,
    run_headers,
    update_run,
    write_text_atomic,
)
from evocov_core.compute.provenance import git_state
from evocov_core.data import Dataset

__all__ = [
    "BUDGETS",
    "OVER",
    "TRIAL_COLUMNS",
    "TRIAL_KEY",
    "VARIANTS",
    "AccuracyReport",
    "Summary",
    "TrialSpec",
    "TrialSummary",
    "ablation_table",
    "accuracy",
    "accuracy_report",
    "done_keys",
    "forecast_line",
    "headline_table",
    "kernel_goal_line",
    "kernel_path",
    "kernel_weight",
    "parse_variants",
    "pending_trials",
    "read_trials",
    "readme_table",
    "reference_rmse",
    "references",
    "run_trial",
    "series_table",
    "settings_differences",
    "summarize",
    "summary_line",
    "trial_rmse",
    "trial_summary",
    "trials_file",
    "upgrade_trials_file",
    "variant_config",
]

#: The dashboard's budgeted presets.
BUDGETS = ("quick", "standard")

#: A series counts in ``series_over_3x`` when its median ratio to the best published RMSE exceeds this.
OVER = 3.0


@dataclass(frozen=True)
class Variant:
    """A benchmark variant: overrides on top of the budget's preset.

    Attributes
    ----------
    overrides : mapping
        Settings changed on the preset (``SearchConfig.with_``).
    description : str
        What is turned off, for the report.
    preset : str or None
        Another preset to start from (None: the ``--budget`` one, with its time budget).
    timed : bool
        False: the search runs without a time budget (``time_budget = 0``; its wall ratio
        is still against the ``--budget`` seconds).
    """

    overrides: Mapping[str, object] = field(default_factory=dict)
    description: str = ""
    preset: str | None = None
    timed: bool = True


#: The variants: ``full`` is what a dashboard user gets; each other turns one part off.
VARIANTS: dict[str, Variant] = {
    "full": Variant({}, "the preset as the dashboard runs it"),
    "no-screen": Variant({"screen_points": 0}, "no screening fits on a subset of the points before the full fits "
                         "(the preset screens only series longer than its screen_points)"),
    "no-seed": Variant({"seed_fraction": 0.0, "p_expand": 0.0},
                       "no seeded initial population, no expansion of good kernels"),
    "reseed-restarts": Variant({"reseed_restarts": True}, "one part added, not removed: every restart's "
                               "population is seeded with GPSS structures too, not only the first one"),
    "naive-seeds": Variant({"naive_seeds": True}, "one part added, not removed: every search begins with the GP "
                           "forms of seasonal naive (PER x M12) and of the random walk with drift (M12 + LIN), "
                           "offered to the model choice whatever their BIC, as long series always do"),
    "no-select": Variant({"select_top": 1}, "return the lowest-BIC kernel (no selection among the top ones)"),
    "no-cache": Variant({"cache_fits": False}, "no cache of fitted kernels"),
    "no-bounds": Variant({"data_bounds": False}, "no hyperparameter bounds from the data"),
    "no-changepoints": Variant({"families": (), "changepoints_by_expansion": False},
                               "the paper's grammar: no change-point operator (random trees, mutations or GPSS "
                               "expansions S -> CP(S, B), CP(B, S) use it otherwise)"),
    "cp-everywhere": Variant({"changepoints_by_expansion": False},
                             "change points drawn anywhere: random trees and mutations use the operator too, "
                             "not only the expansions (the quick preset's way until the corpus study of "
                             "bench/results/corpus/quick-35-cpexp; measured worse at standard)"),
    "cp-by-expansion": Variant({"changepoints_by_expansion": True},
                               "change points made only by GPSS expansions S -> CP(S, B), CP(B, S), as in ABCD "
                               "(random trees and mutations do not draw them; both presets' way)"),
    "promote-15": Variant({"promote_fraction": 0.15}, "half the full fits on long series: the best 15 % of a "
                          "screened batch (not 30 %) are fitted on all the data, so more candidates and "
                          "generations fit in the budget (series longer than screen_points only)"),
    "seed-m12": Variant({"seed_bases": ("SE", "PER", "LIN", "RQ", "M12")}, "one part added, not removed: the "
                        "Matérn-1/2 (Ornstein-Uhlenbeck) kernel among the bases of the seeded structures and of the "
                        "GPSS expansions, a level that wanders (its forecast stays near the last values, with a "
                        "spread that grows)"),
    "refit-origins": Variant({"choice": "refit_origins"}, "one part changed: the returned kernel chosen by "
                             "its forecasts from four earlier origins (60-90 % of the training range), each "
                             "candidate refitted at each origin, instead of with its fitted values (the same "
                             "margin for the exponential-smoothing forms)"),
    "tail-choice": Variant({"choice": "tail", "form_margin": 1.0}, "one part changed: the returned kernel chosen "
                           "by one refit on the first 90 % of the training range scored on the last 10 %, with no "
                           "preference for the exponential-smoothing forms (the preset before issue 55's choice)"),
    "no-form-margin": Variant({"form_margin": 1.0}, "one part changed: no preference for the exponential-smoothing "
                              "forms in the choice of origins (a lower CRPS wins by any margin)"),
    # The presets' families (change points) and one more.
    "with-changewindows": Variant({"families": ("changepoint", "changewindow")}, "one part added, not removed: "
                                  "ABCD's change-window operator in the grammar (off in the presets until it is "
                                  "shown to help)"),
    "no-ets": Variant({"ets_seeds": False}, "no exponential-smoothing seeds (SES, Holt, damped Holt, "
                      "Holt-Winters) in the first population: the preset before issue 55"),
    "with-statespace": Variant({"families": ("changepoint", "statespace")}, "one part added, not removed: random "
                               "trees and mutations also draw the state-space operations (local level, local "
                               "trend, damped trend)"),
    "seed-evals-20": Variant({"seed_evals": 20}, "one part changed: on series fitted with screening (more than "
                             "screen_points), each unscreened seed's fit (the exponential-smoothing and naive "
                             "forms) stops after 20 metric evaluations, not max_evals, leaving the search more "
                             "of its budget"),
    "map-corpus": Variant({"priors": "corpus"}, "one part changed: every fit is a posterior mode under the "
                          "hyperparameter priors learned on the development corpus (fitting.priors.CORPUS_PRIOR, "
                          "python -m bench.learn_priors), and BIC is taken at that mode"),
    "before": Variant({}, "the previous default, preset('quick-fixed') (paper operators, no cache, no screening, "
                      "no seeds, no data bounds, lowest BIC returned), stopped by the same time budget",
                      preset="quick-fixed"),
    "fixed-quick": Variant({}, "the previous default: preset('quick-fixed'), fixed counts, no time budget",
                           preset="quick-fixed", timed=False),
}

TRIAL_COLUMNS = [
    "series", "variant", "seed", "budget", "status", "n_train", "n_test", "budget_s", "wall_s", "wall_ratio",
    "elapsed_s", "test_rmse", "bma_test_rmse", "bic_test_rmse", "q", "bic", "ensemble_size", "n_evaluations",
    "n_screen_fits", "generations", "expression", "infix", "kernel_file", "host", "finished", "reason",
    "coverage_95", "crps", "forecast_test_rmse", "forecast",
]
TRIAL_KEY = ["series", "variant", "seed"]


# --- settings --------------------------------------------------------------------------------


def parse_variants(text: str | Sequence[str]) -> list[str]:
    """Variant names from a comma-separated string (``all``: every variant), checked.

    Raises
    ------
    BenchError
        For an unknown or empty list.
    """
    items = [v.strip() for v in (text.split(",") if isinstance(text, str) else text) if v.strip()]
    if items == ["all"]:
        return list(VARIANTS)
    bad = [v for v in items if v not in VARIANTS]
    if bad or not items:
        raise BenchError(f"unknown variant(s) {', '.join(bad) or '(none)'}; choose from {', '.join(VARIANTS)} "
                         "or all")
    return list(dict.fromkeys(items))


def budget_seconds(budget: str, time_budget: float | None = None) -> float:
    """The seconds of a search: ``time_budget`` when given, else the preset's ``config.time_budget``."""
    if budget not in BUDGETS:
        raise BenchError(f"--budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    if time_budget is not None:
        if not (math.isfinite(time_budget) and time_budget > 0):
            raise BenchError(f"--time-budget must be a positive number of seconds, got {time_budget}")
        return float(time_budget)
    seconds = getattr(_preset(budget), "time_budget", 0.0)
    if not seconds:  # 0 = no limit
        raise BenchError(f"preset({budget!r}) has no time budget; pass --time-budget SECONDS")
    return float(seconds)


def _preset(name: str) -> Any:
    from evocov_core.searches import preset

    try:
        return preset(name)
    except ValueError as exc:  # ConfigError: the preset does not exist (yet)
        raise BenchError(f"preset {name!r}: {exc}") from None


def variant_config(variant: str, budget: str, time_budget: float | None = None) -> Any:
    """The :class:`~evocov_core.searches.SearchConfig` of a variant under a budget.

    Parameters
    ----------
    variant : str
        A key of :data:`VARIANTS`.
    budget : {"quick", "standard"}
        The dashboard preset the variant starts from.
    time_budget : float, optional
        Seconds per search, instead of the preset's.

    Raises
    ------
    BenchError
        For an unknown variant or budget, or a setting the search does not have.
    """
    if variant not in VARIANTS:
        parse_variants(variant)  # raises with the list of names
    v = VARIANTS[variant]
    seconds = budget_seconds(budget, time_budget)
    config = _preset(v.preset or budget)
    try:
        if v.timed:
            config = config.with_(time_budget=seconds)
        elif getattr(config, "time_budget", 0):
            config = config.with_(time_budget=0.0)  # 0 = no limit
        return config.with_(**v.overrides)
    except (TypeError, ValueError) as exc:  # unknown field (TypeError) or ConfigError
        raise BenchError(f"variant {variant!r}: cannot apply {dict(v.overrides)} to the search settings: "
                         f"{exc}") from None


# --- result files and resuming ------------------------------------------------------------------


def read_trials(out: Path) -> pd.DataFrame:
    """The trials of an accuracy folder: one row per (series, variant, seed), the last one written.

    Every reader of ``trials.csv`` goes through here (the scripts in ``bench/`` too): a trial
    rerun after an error appends a row, and only that row counts.
    """
    return trials_file(out).read()


def trials_file(out: Path) -> ResultFile:
    """The ``trials.csv`` of an accuracy folder."""
    return ResultFile(Path(out) / "trials.csv", TRIAL_COLUMNS, TRIAL_KEY)


def upgrade_trials_file(out: Path) -> bool:
    """Give an older ``trials.csv`` (its header a prefix of :data:`TRIAL_COLUMNS`) today's columns.

    Columns added since are left empty in its rows (the report shows ``-``), so that a folder made
    by an older version can be resumed. Returns whether the file was rewritten.
    """
    import csv
    import io

    path = Path(out) / "trials.csv"
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0] if rows else []
    if header == TRIAL_COLUMNS or header != TRIAL_COLUMNS[:len(header)]:
        return False  # today's, or another layout (ResultFile refuses to append to it)
    buf = io.StringIO(newline="")
    w = csv.writer(buf)  # as ResultFile writes: minimal quoting, \r\n
    w.writerow(TRIAL_COLUMNS)
    pad = [""] * (len(TRIAL_COLUMNS) - len(header))
    w.writerows(r + pad if r else r for r in rows[1:])
    write_text_atomic(path, buf.getvalue())
    return True


def kernel_path(series: str, variant: str, seed: int) -> str:
    """Kernel file of a trial, relative to the output folder."""
    return f"kernels/{series}__{variant}__seed{seed}.json"


def records_path(series: str, variant: str, seed: int) -> str:
    """Full-fit records of a trial (``--records``), relative to the output folder."""
    return f"records/{series}__{variant}__seed{seed}.csv.gz"


def records_frame(records: Iterable[Any]) -> pd.DataFrame:
    """The search's records without the kernels screened out on the subset (one row per full fit).

    The columns are those of ``search --records`` (:meth:`EvalRecord.to_dict`); screened-out
    kernels carry no full-data fit.
    """
    from evocov_core.fitting.optimize import FitStatus

    rows = [r.to_dict() for r in records if r.status != FitStatus.SCREENED_OUT]
    return pd.DataFrame(rows)


def done_keys(out: Path) -> set[tuple[str, str, int]]:
    """``(series, variant, seed)`` of the finished trials of a folder.

    Finished: status ``ok`` with its kernel file present, or ``no_kernel``. Error rows
    and ``ok`` rows whose kernel file was deleted are not (they are run again).
    """
    out = Path(out)

    def done(row: dict) -> bool:
        if row.get("status") == TrialStatus.NO_KERNEL:
            return True
        return row.get("status") == TrialStatus.OK and (out / str(row.get("kernel_file"))).is_file()

    return trials_file(out).keys(done)  # type: ignore[return-value]


def pending_trials(series: Iterable[str], variants: Iterable[str], seeds: int,
                   done: set[tuple[str, str, int]], first_seed: int = 0) -> list[tuple[str, str, int]]:
    """The trials still to run, in running order: seed, then variant, then series.

    With this order an interrupted run has already covered every series with the first
    seeds, so its report is useful.

    Parameters
    ----------
    series, variants : iterable of str
    seeds : int
        K: seeds ``first_seed … K−1``.
    done : set of tuple
        Keys of the finished trials (:func:`done_keys`).
    first_seed : int
        The first seed (more seeds of a run, in a folder of their own).
    """
    series, variants = list(series), list(variants)
    return [(s, v, k) for k in range(first_seed, seeds) for v in variants for s in series if (s, v, k) not in done]


# --- one trial -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialSpec:
    """One trial: a series, a variant and a seed, with its settings."""

    series: str
    variant: str
    seed: int
    budget: str
    budget_s: float
    config: Any
    dataset: Dataset
    workers: int = 2

    @property
    def key(self) -> tuple[str, str, int]:
        """``(series, variant, seed)``: the trial's identity in ``trials.csv``."""
        return (self.series, self.variant, self.seed)


def run_trial(spec: TrialSpec, *, search: Callable[..., Any] | None = None) -> dict:
    """Run one search; returns ``{"row": trials.csv row, "kernel": kernel-file dict or None,
    "records": the search's records (``EvalRecord``) or None}``.

    Parameters
    ----------
    spec : TrialSpec
    search : callable, optional
        ``search(data, config, seed=, workers=, dataset=)``; default
        :func:`evocov_core.forecast.stage.search_and_forecast` (the search and its forecast).

    Notes
    -----
    Never raises for a failed search: the exception becomes a row with status ``error``
    (run again on the next invocation). ``KeyboardInterrupt`` does propagate.
    """
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import finite_or_none
    from evocov_core.runs.kernel_file import kernel_file_dict

    if search is None:
        from evocov_core.forecast.stage import search_and_forecast as search
    ds = spec.dataset
    row: dict = {"series": spec.series, "variant": spec.variant, "seed": spec.seed, "budget": spec.budget,
                 "n_train": ds.n_train, "n_test": ds.n_test, "budget_s": spec.budget_s, "host": socket.gethostname()}
    doc = None
    records = None
    t0 = None
    try:
        data = FitData.from_dataset(ds, split_fraction=spec.config.metric_split,
                                    max_points=spec.config.fit_points)
        t0 = time.perf_counter()
        out = search(data, spec.config, seed=spec.seed, workers=spec.workers, dataset=ds)
        wall = time.perf_counter() - t0
        from evocov_core.forecast.stage import ForecastResult

        forecast = out if isinstance(out, ForecastResult) else None  # a plain search: the kernel's own forecast
        result = forecast.search if forecast is not None else out
        row.update(wall_s=round(wall, 3), wall_ratio=round(wall / spec.budget_s, 4),
                   elapsed_s=round(float(result.elapsed), 3), n_evaluations=result.n_evaluations,
                   n_screen_fits=getattr(result, "n_screen_fits", None), generations=len(result.history))
        records = tuple(getattr(result, "records", ()))
        best = result.best
        if best is None or not best.ok:
            row.update(status=TrialStatus.NO_KERNEL, reason="no kernel could be fitted")
        else:
            ensemble = tuple(getattr(result, "ensemble", ()) or ())
            bma = None
            if ensemble:
                from evocov_core.fitting.averaging import ensemble_test_rmse

                bma = ensemble_test_rmse(data, ensemble)
            best_bic = getattr(result, "best_bic", None) or best
            row.update(status=TrialStatus.OK, test_rmse=best.test_rmse, bma_test_rmse=bma,
                       bic_test_rmse=best_bic.test_rmse, q=best.q, bic=best.bic, ensemble_size=len(ensemble),
                       expression=best.kernel.prefix,
                       infix=best.kernel.infix, kernel_file=kernel_path(spec.series, spec.variant, spec.seed),
                       **_predictive_scores(best, ds, getattr(result, "calibration", None)))
            combination = forecast.combination if forecast is not None else None
            if forecast is not None:
                row.update(forecast_test_rmse=forecast.test_rmse(ds), forecast=combination.label)
            doc = kernel_file_dict(best, ds.norm, dataset=spec.series, n_test=ds.n_test, n_train=ds.n_train,
                                   test_fraction=ds.test_fraction, calibration=getattr(result, "calibration", None),
                                   combination=combination,
                                   extra_scores={"variant": spec.variant, "seed": spec.seed, "budget": spec.budget,
                                                 "budget_seconds": spec.budget_s, "seconds": round(wall, 3),
                                                 "evaluations": result.n_evaluations,
                                                 "bma_test_rmse": finite_or_none(bma),
                                                 "forecast_test_rmse": finite_or_none(row.get("forecast_test_rmse"))})
    except Exception as exc:  # one failed trial must not stop the benchmark
        if t0 is not None and "wall_s" not in row:
            wall = time.perf_counter() - t0
            row.update(wall_s=round(wall, 3), wall_ratio=round(wall / spec.budget_s, 4))
        row.update(status=TrialStatus.ERROR, reason=f"{type(exc).__name__}: {exc}"[:500])
    row["finished"] = now_iso()
    return {"row": row, "kernel": doc, "records": records}


def _predictive_scores(best: Any, ds: Dataset, calibration: Any = None) -> dict[str, float | None]:
    """``coverage_95`` and ``crps`` of the returned kernel's predictive normal (latent variance + noise),
    its spread scaled by the search's ``calibration``."""
    from evocov_core.fitting.model import FittedModel
    from evocov_core.fitting.optimize import finite_or_none
    from evocov_core.present.compare import forecast_scores

    if ds.n_test == 0 or ds.x.shape[1] != 1:
        return {}
    spread = calibration.spread if calibration is not None else 1.0
    s = forecast_scores(FittedModel.from_fit(best, ds.norm, ds.n_train, spread), ds)
    return {"coverage_95": finite_or_none(s.coverage_95), "crps": finite_or_none(s.crps)}




# --- the command ---------------------------------------------------------------------------------


class AccuracyReport(NamedTuple):
    """What :func:`accuracy` and :func:`accuracy_report` produce."""

    path: Path
    """``report.md``."""
    summary: list[str]
    """The summary lines, one per variant (``variant=NAME accuracy_geomean=… …``)."""


def _json_norm(d: object) -> object:
    return json.loads(json.dumps(d, sort_keys=True, default=str))


def settings_differences(recorded: Mapping[str, object], now: Mapping[str, object]) -> list[str]:
    """The settings in which a recorded variant differs from what it runs today, sorted.

    A setting the record does not have (added to the search later) counts as unchanged when
    today's value is the setting's default: the search then behaves as it did.
    """
    from dataclasses import MISSING, fields

    from evocov_core.searches import SearchConfig

    defaults = _json_norm({f.name: f.default for f in fields(SearchConfig) if f.default is not MISSING})
    before, after = _json_norm(dict(recorded)), _json_norm(dict(now))
    for k in set(after) - set(before):  # type: ignore[arg-type]
        if k in defaults and after[k] == defaults[k]:  # type: ignore[index]
            before[k] = after[k]  # type: ignore[index]
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))  # type: ignore[union-attr]


def _check_settings(runs: list[dict], settings: dict[str, dict], out: Path) -> None:
    """Refuse to resume a variant whose recorded settings differ from today's (:func:`settings_differences`)."""
    for variant, cfg in settings.items():
        before = next((r["settings"][variant] for r in reversed(runs) if variant in r.get("settings", {})), None)
        if before is None:
            continue
        diff = settings_differences(before, cfg)
        if diff:
            raise BenchError(f"{out} holds variant {variant!r} with other settings (differing: {', '.join(diff)}; "
                             "another budget, or did the preset change?); use another --out")


def accuracy(data_dir: Path, out: Path, *, budget: str = "quick", time_budget: float | None = None,
             seeds: int = 3, series: str | Sequence[str] | None = None, workers: int = 2,
             variants: str | Sequence[str] = "full", records: bool = False,
             argv: Sequence[str] | None = None, log: Callable[[str], None] | None = None,
             first_seed: int = 0) -> AccuracyReport:
    """Run (or resume) the accuracy benchmark into ``out``, then write its report.

    Parameters
    ----------
    data_dir : Path
        The 13 TSDL series (``NN-name.csv``, ``splits.csv``, ``evocov_paper_rmse.csv``).
    out : Path
        Output folder (created; reused to resume).
    budget : {"quick", "standard"}
        The dashboard preset and its time budget.
    time_budget : float, optional
        Seconds per search instead of the preset's.
    seeds : int
        K: seeds ``first_seed … K−1`` per series and variant.
    series : str or sequence of str, optional
        Subset of the series (names, numbers or short names; default all).
    workers : int
        Processes of each search (searches never run at the same time).
    variants : str or sequence of str
        Keys of :data:`VARIANTS` (comma-separated), or ``all``.
    records : bool
        Also write each trial's full fits to ``records/`` (:func:`records_path`), for
        post-hoc studies of which kernel to return (``bench/bench_candidates.py``).
    argv : sequence of str, optional
        The command line, for the records (default ``sys.argv[1:]``).
    log : callable, optional
        Progress lines (default: standard error).
    first_seed : int
        The first seed: ``--first-seed 1 --seeds 2`` adds seed 1 of a run whose seed 0 is in
        another folder (made with other settings, so not resumable into it).

    Returns
    -------
    AccuracyReport
        The report's path and summary lines.

    Raises
    ------
    BenchError
        For bad arguments, missing data or a folder made with other settings.
    """
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if seeds < 1:
        raise BenchError(f"--seeds must be at least 1, got {seeds}")
    if not 0 <= first_seed < seeds:
        raise BenchError(f"--first-seed must be at least 0 and below --seeds ({seeds}), got {first_seed}")
    if workers < 1:
        raise BenchError(f"--workers must be at least 1, got {workers}")
    names_v = parse_variants(variants)
    seconds = budget_seconds(budget, time_budget)
    data_dir, out = Path(data_dir).resolve(), Path(out)
    names = resolve_series(data_dir, series)
    if (data_dir / "evocov_paper_rmse.csv").is_file():
        reference_rmse(data_dir)  # fail now, not after hours, if the reference file is malformed
    configs = {v: variant_config(v, budget, time_budget) for v in names_v}
    settings = {v: c.to_dict() for v, c in configs.items()}
    datasets = {s: load_series(data_dir, s) for s in names}
    out.mkdir(parents=True, exist_ok=True)
    _check_settings(read_runs(out / "run.json"), settings, out)
    if upgrade_trials_file(out):
        say(f"{out}/trials.csv: upgraded to today's columns (empty in its older rows)")
    (out / "kernels").mkdir(exist_ok=True)

    todo = pending_trials(names, names_v, seeds, done_keys(out), first_seed)
    total = len(names) * len(names_v) * (seeds - first_seed)
    argv = list(sys.argv[1:] if argv is None else argv)
    run = {"command": command_line(argv), "argv": argv, "started": now_iso(), "budget": budget,
           "budget_s": seconds, "time_budget_override": time_budget, "seeds": seeds, "first_seed": first_seed,
           "series": names,
           "variants": names_v, "workers": workers, "data_dir": str(data_dir), "settings": settings,
           "machine": machine_info(), "git": git_state()}
    run_index = append_run(out / "run.json", run)
    timed = sum(VARIANTS[v].timed for _, v, _ in todo)
    say(f"bench accuracy: {len(todo)} trials to run, {total - len(todo)} already done; budget {budget} "
        f"({seconds:g} s per search, {workers} worker(s) each): about {timed * seconds / 60:.0f} min"
        + (" plus the untimed variants" if timed < len(todo) else "") + f"; out {out}")
    rf = trials_file(out)
    t0 = time.perf_counter()
    count, completed = 0, False
    try:
        for i, (s, v, k) in enumerate(todo, 1):
            spec = TrialSpec(s, v, k, budget, seconds, configs[v], datasets[s], workers)
            res = run_trial(spec)
            row, doc = res["row"], res["kernel"]
            if doc is not None:
                from evocov_core.runs.kernel_file import dump_kernel_file

                write_text_atomic(out / row["kernel_file"], dump_kernel_file(doc))
            if records and res.get("records") is not None:
                path = out / records_path(s, v, k)
                path.parent.mkdir(exist_ok=True)
                tmp = path.with_name(path.name + ".tmp")
                records_frame(res["records"]).to_csv(tmp, index=False, compression="gzip")
                tmp.replace(path)
            rf.append(row)
            count += 1
            say(f"[{i}/{len(todo)}] {s} {v} seed {k}: {row['status']} rmse={fmt(row.get('test_rmse'))} "
                f"bma={fmt(row.get('bma_test_rmse'))} q={row.get('q', '-')} wall {fmt(row.get('wall_s'), 3)} s "
                f"(×{fmt(row.get('wall_ratio'), 3)}) fits={row.get('n_evaluations', '-')}"
                + (f" forecast={row['forecast']} {fmt(row.get('forecast_test_rmse'))}"
                   if str(row.get("forecast", "kernel")) not in ("kernel", "nan") else "")
                + (f" ({row.get('reason')})" if row["status"] != TrialStatus.OK else ""))
        completed = True
    finally:  # also on Ctrl-C; a killed process leaves its record without an end (shown as interrupted)
        run.update(finished=now_iso(), wall_seconds=round(time.perf_counter() - t0, 2), trials_run=count,
                   trials_skipped=total - len(todo), interrupted=not completed)
        update_run(out / "run.json", run_index, run)
    return accuracy_report(out, data_dir=data_dir, log=say)


# --- tables ------------------------------------------------------------------------------------------


def reference_rmse(data_dir: Path) -> pd.DataFrame:
    """``best_published`` and ``evocov_lml_mean`` of ``evocov_paper_rmse.csv``, indexed by series."""
    path = Path(data_dir) / "evocov_paper_rmse.csv"
    if not path.is_file():
        raise BenchError(f"{path} not found: it holds the reference RMSEs (a folder of series without it, such as "
                         "bench/corpus/series, is judged against AutoETS); pass --data-dir")
    df = pd.read_csv(path).set_index("dataset")
    missing = [c for c in ("best_published", "evocov_lml_mean") if c not in df.columns]
    if missing:
        raise BenchError(f"{path} lacks column(s) {', '.join(missing)}")
    return df[["best_published", "evocov_lml_mean"]].apply(pd.to_numeric, errors="coerce")


def _numeric(trials: pd.DataFrame, cols: Iterable[str]) -> pd.DataFrame:
    t = trials.copy()
    for c in cols:
        t[c] = pd.to_numeric(t[c], errors="coerce") if c in t else np.nan
    return t


SERIES_COLUMNS = ["trials", "failed", "rmse", "ratio", "paper_ratio", "bma_rmse", "bma_ratio", "bic_rmse",
                  "bic_ratio", "wall_s", "max_wall_ratio", "fits", "screen_fits", "generations", "q"]


def _finished(trials: pd.DataFrame, variant: str, columns: Iterable[str]) -> pd.DataFrame:
    """A variant's finished trials (status in :data:`COUNTED`), ``columns`` numeric, and the RMSE of
    the returned and lowest-BIC kernels infinite where the trial failed or has none."""
    t = _numeric(trials, columns)
    if t.empty:
        return t
    t = t[(t["variant"] == variant) & t["status"].isin(COUNTED)].copy()
    failed = t["status"] != TrialStatus.OK
    for col in ("test_rmse", "bic_test_rmse", "forecast_test_rmse"):
        if col in t:
            t.loc[failed | t[col].isna(), col] = math.inf
    return t


def series_table(trials: pd.DataFrame, refs: pd.DataFrame, variant: str = "full") -> pd.DataFrame:
    """Per-series scores of one variant, over its finished trials (status ``ok`` or ``no_kernel``).

    Columns (medians over the seeds unless said): ``trials``; ``failed`` (``no_kernel``
    trials, whose RMSE counts as infinite); ``rmse`` of the returned model, ``ratio`` =
    rmse / best published, ``paper_ratio`` = rmse / the paper's EvoCov LML mean;
    ``bma_rmse``, ``bma_ratio`` (over the seeds with an ensemble); ``bic_rmse``,
    ``bic_ratio`` (the lowest-BIC kernel); ``wall_s``; ``max_wall_ratio`` (the largest);
    ``fits`` (``n_evaluations``), ``screen_fits``, ``generations``, ``q``.

    Parameters
    ----------
    trials : DataFrame
        Rows of ``trials.csv``.
    refs : DataFrame
        :func:`reference_rmse`.
    variant : str
    """
    num = ["test_rmse", "bma_test_rmse", "bic_test_rmse", "wall_s", "wall_ratio", "n_evaluations",
           "n_screen_fits", "generations", "q"]
    t = _finished(trials, variant, num)
    if t.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS, index=pd.Index([], name="series"))
    g = t.groupby("series")
    tab = pd.DataFrame({
        "trials": g.size(),
        "failed": g["status"].agg(lambda s: int((s != TrialStatus.OK).sum())),
        "rmse": g["test_rmse"].median(),
        "bma_rmse": g["bma_test_rmse"].median(),
        "bic_rmse": g["bic_test_rmse"].median(),
        "wall_s": g["wall_s"].median(),
        "max_wall_ratio": g["wall_ratio"].max(),
        "fits": g["n_evaluations"].median(),
        "screen_fits": g["n_screen_fits"].median(),
        "generations": g["generations"].median(),
        "q": g["q"].median(),
    })
    tab.index.name = "series"
    best = refs["best_published"].reindex(tab.index)
    tab["ratio"] = tab["rmse"] / best
    tab["paper_ratio"] = tab["rmse"] / refs["evocov_lml_mean"].reindex(tab.index)
    tab["bma_ratio"] = tab["bma_rmse"] / best
    tab["bic_ratio"] = tab["bic_rmse"] / best
    return tab[SERIES_COLUMNS].sort_index()


class Summary(NamedTuple):
    """The summary of one variant over its series."""

    accuracy_geomean: float
    """Geometric mean over the series of the per-series median ratio (inf when one is inf)."""
    worst_ratio: float
    """The largest per-series median ratio."""
    series_over_3x: int
    """Series whose median ratio exceeds :data:`OVER`."""
    max_wall_ratio: float
    """The largest wall / budget of any trial."""
    n_series: int
    """Series with a ratio (those without a reference RMSE are left out)."""


def summarize(table: pd.DataFrame, column: str = "ratio") -> Summary:
    """Summarise a :func:`series_table` on one of its ratio columns (``ratio``, ``bma_ratio``, ...).

    Series whose ratio is missing (no reference, or no BMA in any seed) are left out.
    """
    nan = math.nan
    r = pd.to_numeric(table[column], errors="coerce").dropna().to_numpy(dtype=float) if len(table) else np.array([])
    wall = pd.to_numeric(table["max_wall_ratio"], errors="coerce").dropna() if len(table) else pd.Series(dtype=float)
    max_wall = float(wall.max()) if len(wall) else nan
    if r.size == 0:
        return Summary(nan, nan, 0, max_wall, 0)
    return Summary(geomean(r), float(r.max()), int((r > OVER).sum()), max_wall, int(r.size))


class TrialSummary(NamedTuple):
    """One variant's single trials, its coverage, and its RMSE against the classical forecasters."""

    single_run_geomean: float
    """Geometric mean over every finished trial of its test RMSE / the reference RMSE of its series."""
    single_run_p90: float
    """The 90th percentile of those ratios (linear between order statistics; inf when it reaches a failed trial)."""
    worst_single: float
    """The largest of those ratios."""
    median5_geomean: float
    """Geometric mean over the series of the per-series median of those ratios."""
    coverage_95: float
    """Share of the test points inside the GP's 95 % interval, pooled over the trials that have it."""
    coverage_trials: int
    """Trials with a coverage (older trials have none)."""
    vs: dict[str, float]
    """Per :data:`~bench.common.VS_KEYS` key: geometric mean over the series the
    baseline forecast of (median over the seeds of our test RMSE) / its test RMSE."""


def _quantile(q: np.ndarray, p: float) -> float:
    """The ``p`` quantile, linear between order statistics; inf when it leans on an infinite one."""
    q = np.sort(q)
    pos = p * (len(q) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if math.isinf(q[hi]) and hi > lo:
        return math.inf
    return float(q[lo] + (q[hi] - q[lo]) * (pos - lo)) if hi > lo else float(q[lo])


def trial_summary(trials: pd.DataFrame, refs: pd.DataFrame, variant: str,
                  classical: pd.DataFrame | None = None) -> TrialSummary:
    """Single-trial ratios, pooled coverage and ``vs_*`` of one variant (:class:`TrialSummary`).

    Parameters
    ----------
    trials : DataFrame
        Rows of ``trials.csv``; finished trials count (a failed one as an infinite RMSE).
    refs : DataFrame
        Reference RMSE per series in ``best_published`` (:func:`reference_rmse`, or AutoETS's on a
        folder of series without published results); series without one are left out of the ratios.
    variant : str
    classical : DataFrame, optional
        :func:`~bench.common.classical_scores`; without it ``vs`` is NaN.
    """
    from bench.common import VS_KEYS

    nan = math.nan
    t = _finished(trials, variant, ["test_rmse", "coverage_95", "n_test"])
    vs = dict.fromkeys(VS_KEYS.values(), nan)
    if t.empty:
        return TrialSummary(nan, nan, nan, nan, nan, 0, vs)
    ref = refs["best_published"].reindex(t["series"]).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = t["test_rmse"].to_numpy(dtype=float) / ref
    has = np.isfinite(ref) & (ref > 0)
    r = pd.Series(ratio[has], index=t["series"].to_numpy()[has])
    single = (geomean(r.to_numpy()), _quantile(r.to_numpy(), 0.9), float(r.max())) if len(r) else (
        nan, nan, nan)
    median5 = geomean(r.groupby(level=0).median().to_numpy()) if len(r) else nan
    cov = t[(t["status"] == TrialStatus.OK) & t["coverage_95"].notna() & t["n_test"].notna()]
    pooled = float((cov["coverage_95"] * cov["n_test"]).sum() / cov["n_test"].sum()) if len(cov) else nan
    if classical is not None and len(classical):
        ours = t.groupby("series")["test_rmse"].median()
        for model, key in VS_KEYS.items():
            base = classical[(classical["model"] == model) & (classical["status"] == "ok")]
            base = base.set_index("series")["test_rmse"].astype(float)
            both = pd.concat([ours, base], axis=1, keys=["ours", "base"], join="inner").dropna()
            both = both[both["base"] > 0]
            if len(both):
                vs[key] = geomean((both["ours"] / both["base"]).to_numpy(dtype=float))
    return TrialSummary(*single, median5, pooled, len(cov), vs)


def forecast_line(trials: pd.DataFrame, refs: pd.DataFrame, variant: str, prefix: str = "") -> str | None:
    """``variant=NAME forecast_single_run_geomean=… forecast_single_run_p90=… forecast_worst_single=…
    forecast_median5_geomean=… forecast_paired=… forecast_paired_se_log=… forecast_combined=K/N``: the
    single-run figures of the forecast the search returned (the kernel's, or its weighted average with
    classical forecasts: :mod:`evocov_core.forecast.combination`), its test RMSE paired trial by trial against the
    kernel's own (geometric mean, standard error of the mean log) and the trials whose forecast was not the
    kernel's own; None when no trial of ``variant`` recorded a forecast (older folders)."""
    if "forecast_test_rmse" not in trials or not len(trials):
        return None
    has = trials[(trials["variant"] == variant) & pd.to_numeric(trials["forecast_test_rmse"], errors="coerce").notna()]
    if has.empty:
        return None
    t = _finished(trials, variant, ["test_rmse", "forecast_test_rmse"])
    t = t[t.index.isin(has.index) | (t["status"] != TrialStatus.OK)]
    ref = refs["best_published"].reindex(t["series"]).to_numpy(dtype=float)
    ok = np.isfinite(ref) & (ref > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = pd.Series(t["forecast_test_rmse"].to_numpy(dtype=float)[ok] / ref[ok], index=t["series"].to_numpy()[ok])
        lr = np.log(t["forecast_test_rmse"].to_numpy(dtype=float) / t["test_rmse"].to_numpy(dtype=float))
    lr = lr[np.isfinite(lr)]
    se = float(np.std(lr, ddof=1) / math.sqrt(lr.size)) if lr.size > 1 else math.nan
    combined = int((has["forecast"].astype(str) != "kernel").sum())  # an average, or the classical ones alone
    items = [("single_run_geomean", geomean(r.to_numpy()) if len(r) else math.nan),
             ("single_run_p90", _quantile(r.to_numpy(), 0.9) if len(r) else math.nan),
             ("worst_single", float(r.max()) if len(r) else math.nan),
             ("median5_geomean", geomean(r.groupby(level=0).median().to_numpy()) if len(r) else math.nan),
             ("paired", math.exp(float(lr.mean())) if lr.size else math.nan), ("paired_se_log", se)]
    return (f"variant={variant} " + " ".join(f"{prefix}forecast_{k}={fmt(v, 4, missing='nan')}" for k, v in items)
            + f" {prefix}forecast_combined={combined}/{len(has)}")


def kernel_weight(forecast: object) -> float:
    """The kernel's weight in a trial's recorded forecast: ``"kernel"`` is 1, ``"kernel 0.41 + AutoETS
    0.35 + AutoTheta 0.24"`` is 0.41, a forecast without the kernel 0; NaN when none was recorded."""
    text = str(forecast).strip() if isinstance(forecast, str) else ""
    if not text:
        return math.nan
    if text == "kernel":
        return 1.0
    for part in text.split("+"):
        name, _, w = part.strip().rpartition(" ")
        if name == "kernel":
            try:
                return float(w)
            except ValueError:
                return math.nan
    return 0.0


def kernel_goal_line(trials: pd.DataFrame, refs: pd.DataFrame, variant: str) -> str | None:
    """On a corpus (ratios to AutoETS), the figures issue 55 judges: ``variant=NAME
    corpus_kernel_vs_autoets=… corpus_kernel_p90=… corpus_kernel_worst=… corpus_forecast_vs_autoets=…
    corpus_kernel_weight=…``: the kernel alone and the returned forecast, geometric mean of single runs
    over AutoETS, the kernel's 90th percentile and worst single run, and the kernel's mean weight in the
    forecast (1 where the forecast is the kernel's alone). None without finished trials."""
    t = _finished(trials, variant, ["test_rmse"])
    if t.empty:
        return None
    ref = refs["best_published"].reindex(t["series"]).to_numpy(dtype=float)
    ok = np.isfinite(ref) & (ref > 0)
    kern = t["test_rmse"].to_numpy(dtype=float)[ok] / ref[ok]
    fc = (pd.to_numeric(t["forecast_test_rmse"], errors="coerce").to_numpy(dtype=float)[ok] / ref[ok]
          if "forecast_test_rmse" in t else np.full(kern.shape, np.nan))
    fc = fc[np.isfinite(fc)]
    w = np.array([kernel_weight(v) for v in t["forecast"]], dtype=float) if "forecast" in t else np.array([])
    w = w[np.isfinite(w)]
    items = [("kernel_vs_autoets", geomean(kern) if kern.size else math.nan),
             ("kernel_p90", _quantile(kern, 0.9) if kern.size else math.nan),
             ("kernel_worst", float(kern.max()) if kern.size else math.nan),
             ("forecast_vs_autoets", geomean(fc) if fc.size else math.nan),
             ("kernel_weight", float(w.mean()) if w.size else math.nan)]
    return f"variant={variant} " + " ".join(f"corpus_{k}={fmt(v, 4, missing='nan')}" for k, v in items)


def summary_line(variant: str, summary: Summary, trials: TrialSummary | None = None, prefix: str = "") -> str:
    """``variant=NAME accuracy_geomean=… worst_ratio=… series_over_3x=… max_wall_ratio=…``, then with
    ``trials`` ``single_run_geomean=… single_run_p90=… worst_single=… median5_geomean=… coverage_95=…
    coverage_trials=… vs_autoets=… vs_autoarima=… vs_autotheta=… vs_snaive=…``; every key but ``variant``
    after ``prefix`` (``corpus_`` on a folder of series judged against AutoETS)."""
    def num(v: float, digits: int = 4) -> str:
        return fmt(v, digits, missing="nan")

    items = [("accuracy_geomean", num(summary.accuracy_geomean)), ("worst_ratio", num(summary.worst_ratio)),
             ("series_over_3x", str(summary.series_over_3x)), ("max_wall_ratio", num(summary.max_wall_ratio))]
    if trials is not None:
        items += [("single_run_geomean", num(trials.single_run_geomean)),
                  ("single_run_p90", num(trials.single_run_p90)), ("worst_single", num(trials.worst_single)),
                  ("median5_geomean", num(trials.median5_geomean)), ("coverage_95", num(trials.coverage_95, 3)),
                  ("coverage_trials", str(trials.coverage_trials)), *((k, num(v)) for k, v in trials.vs.items())]
    return f"variant={variant} " + " ".join(f"{prefix}{k}={v}" for k, v in items)


def _variants_present(trials: pd.DataFrame) -> list[str]:
    present = set(trials["variant"]) if len(trials) else set()
    return [v for v in VARIANTS if v in present] + sorted(v for v in present if v not in VARIANTS)


ABLATION_COLUMNS = ["series", "trials", "failed", "geomean", "worst", "over_3x", "bma_geomean", "bma_worst",
                    "bma_over_3x", "bic_geomean", "max_wall_ratio", "median_fits", "vs_full", "pairs",
                    "vs_full_paired"]


def trial_rmse(trials: pd.DataFrame, variant: str) -> pd.Series:
    """Test RMSE of the returned model per (series, seed) of a variant's finished trials (failed: inf).

    Parameters
    ----------
    trials : DataFrame
        Rows of ``trials.csv`` (:func:`trials_file`).
    variant : str

    Returns
    -------
    Series
        Indexed by (series, seed); a ``no_kernel`` trial or a missing RMSE is ``inf``, trials
        whose status is not in :data:`COUNTED` are left out.
    """
    t = _finished(trials, variant, ["test_rmse"])
    if t.empty:
        return pd.Series(dtype=float)
    return t.set_index(["series", "seed"])["test_rmse"].astype(float)


def ablation_table(trials: pd.DataFrame, refs: pd.DataFrame, variants: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per variant: :func:`summarize` of the returned model, the BMA and the lowest-BIC kernel.

    ``vs_full`` is the geometric mean, over the series both have, of the variant's median
    ratio over ``full``'s (above 1: the variant forecasts worse; 1 for ``full``).
    ``vs_full_paired`` is the same over the ``pairs`` trials (series, seed) both have, trial
    by trial: the fair comparison when the variants ran different numbers of seeds.
    """
    variants = list(variants) if variants is not None else _variants_present(trials)
    tables = {v: series_table(trials, refs, v) for v in variants}
    full = tables["full"] if "full" in tables else series_table(trials, refs, "full")
    rows = {}
    for v, tab in tables.items():
        s, b, c = summarize(tab), summarize(tab, "bma_ratio"), summarize(tab, "bic_ratio")
        vs = math.nan
        if len(full) and len(tab):
            both = pd.concat([tab["ratio"], full["ratio"]], axis=1, keys=["v", "f"], join="inner").dropna()
            vs = geomean((both["v"] / both["f"]).to_numpy(dtype=float))
        pairs = pd.concat([trial_rmse(trials, v), trial_rmse(trials, "full")], axis=1, keys=["v", "f"],
                          join="inner").dropna()
        with np.errstate(invalid="ignore", divide="ignore"):
            q = (pairs["v"] / pairs["f"]).to_numpy(dtype=float, copy=True)
        q[np.isinf(pairs["v"].to_numpy()) & np.isinf(pairs["f"].to_numpy())] = 1.0  # both failed: a tie
        paired = geomean(q)
        rows[v] = {"series": s.n_series, "trials": int(tab["trials"].sum()) if len(tab) else 0,
                   "failed": int(tab["failed"].sum()) if len(tab) else 0,
                   "geomean": s.accuracy_geomean, "worst": s.worst_ratio, "over_3x": s.series_over_3x,
                   "bma_geomean": b.accuracy_geomean, "bma_worst": b.worst_ratio, "bma_over_3x": b.series_over_3x,
                   "bic_geomean": c.accuracy_geomean, "max_wall_ratio": s.max_wall_ratio,
                   "median_fits": float(tab["fits"].median()) if len(tab) else math.nan, "vs_full": vs,
                   "pairs": len(pairs), "vs_full_paired": paired}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=ABLATION_COLUMNS)
    out.index.name = "variant"
    return out


# --- report --------------------------------------------------------------------------------------------


def _f(v: object, digits: int = 3) -> str:
    """A ratio for a table: :func:`~bench.common.fmt` with fixed decimals."""
    return fmt(v, digits, fixed=True)


def _notes(v: object) -> list[str]:
    """A run record's notes: none, one text, or a list of texts."""
    return [] if not v else [str(v)] if isinstance(v, str) else [str(x) for x in v]  # type: ignore[union-attr]


def _commands(runs: list[dict], trials: pd.DataFrame) -> list[str]:
    from bench.common import invocation_walls

    lines = ["## Commands", ""]
    walls = invocation_walls(runs, trials) if runs else []
    described = []
    for r, (wall, cut) in zip(runs, walls, strict=True):
        if cut:
            ended = f"interrupted, last trial {wall:.0f} s after the start"
        elif r.get("interrupted"):
            ended = f"interrupted at {r.get('finished')}, wall {fmt(wall)} s"
        else:
            ended = f"finished {r.get('finished')}, wall {fmt(wall)} s"
        described.append(f"started {r.get('started')}, {ended}; budget {r.get('budget')} ({fmt(r.get('budget_s'))} s "
                         f"per search), seeds {r.get('seeds')}, variants {', '.join(r.get('variants', []))}, "
                         f"{r.get('workers')} worker(s) per search; trials run {r.get('trials_run', '?')}, already "
                         f"done {r.get('trials_skipped', '?')}"
                         + "".join(f"\n\n{note}" for note in _notes(r.get("relabelled"))))
    lines += run_headers(runs, described, machine_intro=["## Machine", "", "At the start of the last invocation:", ""])
    return lines


def _series_section(tab: pd.DataFrame, variant: str, trials: pd.DataFrame, classical: pd.DataFrame,
                    corpus: bool) -> list[str]:
    from evocov_core.forecast.classical import MODELS

    t = _finished(trials, variant, ["coverage_95", "n_test"])
    t = t[(t["status"] == TrialStatus.OK) & t["coverage_95"].notna()] if len(t) else t
    cov = ((t["coverage_95"] * t["n_test"]).groupby(t["series"]).sum() / t.groupby("series")["n_test"].sum()
           if len(t) else pd.Series(dtype=float))
    base = {m: (classical[classical["model"] == m].set_index("series")["test_rmse"] if len(classical)
                else pd.Series(dtype=float)) for m in MODELS}
    rows = [[s, int(r["trials"]), fmt(r["rmse"]), _f(r["ratio"]), *([] if corpus else [_f(r["paper_ratio"])]),
             fmt(r["bma_rmse"]), _f(r["bma_ratio"]), _f(r["bic_ratio"]), _f(cov.get(s, math.nan), 2),
             *(fmt(base[m].get(s, math.nan)) for m in MODELS),
             fmt(r["wall_s"], 3), _f(r["max_wall_ratio"], 2), fmt(r["fits"], 4), fmt(r["generations"], 3),
             fmt(r["q"], 3)]
            for s, r in tab.iterrows()]
    ref = ("ratio = RMSE / AutoETS's test RMSE on the same split (these series have no published results)"
           if corpus else "ratio = RMSE / best published RMSE of the series; paper = RMSE / the EvoCov paper's "
           "mean (LML)")
    return [f"## Per series, variant `{variant}`", "",
            f"Medians over the seeds. {ref}; BMA = the search's model average; BIC = the lowest-BIC kernel; "
            "coverage = share of the test points inside the returned kernel's 95 % interval, pooled over the seeds "
            "that recorded it; then the test RMSE of each classical forecaster on the same split "
            "(`classical.csv`; `-`: no forecast, see that file's reason); wall ratio = wall / budget (the largest "
            "over the seeds); fits = kernels fitted.", "",
            md_table(["series", "seeds", "test RMSE", "ratio", *([] if corpus else ["paper ratio"]), "BMA RMSE",
                      "BMA ratio", "BIC ratio", "coverage", *MODELS, "wall s", "max wall ratio", "fits",
                      "generations", "q"], rows), ""]


def _ablation_section(abl: pd.DataFrame, per_variant: dict[str, pd.DataFrame]) -> list[str]:
    lines = ["## Ablation", "",
             "One row per variant, over its series: geometric mean (gmean) of the per-series median ratio to the "
             "best published RMSE, the worst, the number over 3×, for the returned model, the BMA and the lowest-BIC "
             "kernel; the largest wall ratio of any trial; vs full = geometric mean over the shared series of the "
             "variant's median ratio / full's (above 1: the variant forecasts worse); paired = the same trial by "
             "trial over the (series, seed) pairs both ran (the fair one when they ran different seeds).", "",
             md_table(["variant", "series", "trials", "failed", "gmean", "worst", "> 3×", "BMA gmean", "BMA worst",
                       "BMA > 3×", "BIC gmean", "max wall ratio", "median fits", "vs full", "pairs", "paired"],
                      [[v, int(r["series"]), int(r["trials"]), int(r["failed"]), _f(r["geomean"]), _f(r["worst"]),
                        int(r["over_3x"]), _f(r["bma_geomean"]), _f(r["bma_worst"]), int(r["bma_over_3x"]),
                        _f(r["bic_geomean"]), _f(r["max_wall_ratio"], 2), fmt(r["median_fits"], 4), _f(r["vs_full"]),
                        int(r["pairs"]), _f(r["vs_full_paired"])]
                       for v, r in abl.iterrows()]), "",
             md_table(["variant", "what changes"],
                      [[v, f"{VARIANTS[v].description}: "
                        + (f"`{dict(VARIANTS[v].overrides)}`" if VARIANTS[v].overrides else "no override")]
                       for v in abl.index if v in VARIANTS], "ll"), ""]
    if len(per_variant) > 1:
        series = sorted({s for t in per_variant.values() for s in t.index})
        lines += ["Median ratio to the best published RMSE per series and variant:", "",
                  md_table(["series", *per_variant],
                           [[s, *(_f(t["ratio"].get(s, math.nan)) for t in per_variant.values())] for s in series]),
                  ""]
    return lines


def _trial_rows(trials: pd.DataFrame) -> list[str]:
    rows = []
    for r in trials.sort_values(["variant", "series", "seed"]).to_dict("records"):
        infix = r.get("infix")
        infix = "" if not isinstance(infix, str) else infix
        kernel = ("`" + (infix if len(infix) <= 80 else infix[:77] + "…").replace("|", "\\|") + "`") if infix else "-"
        rows.append([r["series"], r["variant"], int(r["seed"]), r["status"], fmt(r.get("test_rmse")),
                     fmt(r.get("bma_test_rmse")), fmt(r.get("bic_test_rmse")), _f(r.get("coverage_95"), 2),
                     fmt(r.get("crps")), fmt(r.get("q"), 3),
                     fmt(r.get("wall_s"), 3), _f(r.get("wall_ratio"), 2), fmt(r.get("n_evaluations"), 6),
                     fmt(r.get("n_screen_fits"), 6), fmt(r.get("generations"), 4), kernel])
    return ["## Trials", "",
            md_table(["series", "variant", "seed", "status", "test RMSE", "BMA RMSE", "BIC RMSE", "coverage", "CRPS",
                      "q", "wall s", "wall ratio", "fits", "screen fits", "generations", "returned kernel"], rows,
                     "lllrrrrrrrrrrrrl"), ""]


#: Published methods in the comparison tables (``published_rmse.csv``'s ``method``).
README_METHODS = ("GPSS", "ABCD-accuracy")
#: Classical forecasters in the comparison tables (``classical.csv``'s ``model``).
README_CLASSICAL = ("AutoETS", "AutoARIMA", "AutoTheta")


def references(out: Path, data_dir: Path, series: Sequence[str], *, classical: bool = True,
               log: Callable[[str], None] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The reference RMSE of each series, the classical forecasters' scores, and whether ``data_dir`` is a corpus.

    On the 13 TSDL series (``evocov_paper_rmse.csv`` in ``data_dir``) the reference is the best
    published RMSE. A folder of series without it (the development corpus, ``bench/corpus/series``)
    has no published results: the reference is AutoETS's test RMSE on the same split, and the paper's
    mean is NaN.

    Parameters
    ----------
    out : Path
        The accuracy folder (its ``classical.csv`` is read, and completed).
    data_dir : Path
    series : sequence of str
        The series of the trials.
    classical : bool
        False: no classical forecasts (none made, none read; a corpus then has no reference).
    log : callable, optional

    Returns
    -------
    tuple
        ``(refs, classical, corpus)``: :func:`reference_rmse`-like frame indexed by series,
        :func:`~bench.common.classical_scores`, True on a corpus.

    Raises
    ------
    BenchError
        ``data_dir`` has neither ``evocov_paper_rmse.csv`` nor series.
    """
    from bench.common import CLASSICAL_COLUMNS, classical_scores

    data_dir = Path(data_dir)
    corpus = not (data_dir / "evocov_paper_rmse.csv").is_file()
    if corpus and not (data_dir.is_dir() and any(data_dir.glob("[0-9][0-9]-*.csv"))):
        reference_rmse(data_dir)  # raises: no reference and no series
    table = (classical_scores(out, data_dir, series, log=log) if classical
             else pd.DataFrame(columns=CLASSICAL_COLUMNS))
    if not corpus:
        return reference_rmse(data_dir), table, False
    ets = table[(table["model"] == "AutoETS") & (table["status"] == "ok")].set_index("series")["test_rmse"]
    refs = pd.DataFrame({"best_published": ets.astype(float), "evocov_lml_mean": math.nan},
                        index=pd.Index(ets.index, name="dataset"))
    return refs, table, True


def readme_table(out: Path, data_dir: Path, variant: str = "full") -> str:
    """One folder's comparison table (``accuracy-report --readme``; the README's, of several folders, is
    :func:`headline_table`): per series, our median test RMSE (returned model)
    beside the EvoCov paper's mean, the published GPSS and ABCD results and the classical
    forecasters AutoETS, AutoARIMA and AutoTheta on the same split (``OUT/classical.csv``, made
    when missing).

    Parameters
    ----------
    out : Path
        A bench accuracy folder.
    data_dir : Path
        Holds the series, ``evocov_paper_rmse.csv`` and ``published_rmse.csv``.
    variant : str
    """
    refs = reference_rmse(data_dir)
    pub = pd.read_csv(Path(data_dir) / "published_rmse.csv")
    pub = pub[pub.method.isin(README_METHODS)].pivot_table(index="dataset", columns="method", values="rmse")
    trials = trials_file(Path(out)).read()
    table = series_table(trials, refs, variant)
    _, classical, _ = references(out, data_dir, list(table.index))
    ok = classical[classical["status"] == "ok"] if len(classical) else classical
    base = ok.pivot_table(index="series", columns="model", values="test_rmse") if len(ok) else pd.DataFrame()
    rows = []
    for series, r in table.iterrows():
        best = refs.loc[series, "best_published"]
        cells = [series, f"{fmt(r['rmse'])} ({fmt(r['rmse'] / best, 2, fixed=True)}×)",
                 fmt(refs.loc[series, "evocov_lml_mean"])]
        for source, methods in ((pub, README_METHODS), (base, README_CLASSICAL)):
            cells += [fmt(source.loc[series, m]) if series in source.index and m in source.columns
                      and np.isfinite(source.loc[series, m]) else "–" for m in methods]
        rows.append(cells)
    s = summarize(table)
    vs = trial_summary(trials, refs, variant, classical).vs
    head = ["series", "EvoCov here (× best published)", "EvoCov paper (mean)", *README_METHODS, *README_CLASSICAL]
    gm, worst = fmt(s.accuracy_geomean, 2, fixed=True), fmt(s.worst_ratio, 2, fixed=True)
    return md_table(head, rows) + (f"\n\nGeometric mean of the ratios to the best published: {gm}; worst {worst}; "
                                   f"series over 3×: {s.series_over_3x}.\n\nAgainst the classical forecasters "
                                   "(geometric mean over the series of our RMSE / theirs): "
                                   + ", ".join(f"{k}={fmt(v, 3, missing='nan')}" for k, v in vs.items()) + ".")


def headline_table(folders: Mapping[str, Path], data_dir: Path, variant: str = "full") -> str:
    """The README's "How good is it" table: several accuracy folders side by side, and the references.

    Per series: each folder's median test RMSE over its seeds (returned model) with its ratio to
    the best published RMSE, then the EvoCov paper's mean, the published GPSS and ABCD results
    and the classical forecasters AutoETS, AutoARIMA and AutoTheta on the same split
    (``classical.csv`` of the first folder, made when missing). Then, on the ratios to the best
    published: the geometric mean over the series of the per-series median, the worst series and
    the series over 3×, for every column; and for each folder its single trials (:func:`trial_summary`):
    geometric mean over all trials, 90th percentile, worst. Runs nothing else.

    Parameters
    ----------
    folders : mapping of str to Path
        Column label (e.g. ``quick (60 s)``) to a bench accuracy folder, in column order.
    data_dir : Path
        Holds the series, ``evocov_paper_rmse.csv`` and ``published_rmse.csv``.
    variant : str
    """
    refs = reference_rmse(data_dir)
    best = refs["best_published"]
    pub = pd.read_csv(Path(data_dir) / "published_rmse.csv")
    pub = pub[pub.method.isin(README_METHODS)].pivot_table(index="dataset", columns="method", values="rmse")
    tables, singles = {}, {}
    for label, out in folders.items():
        trials = trials_file(Path(out)).read()
        tables[label] = series_table(trials, refs, variant)
        singles[label] = trial_summary(trials, refs, variant)
    series = sorted(set().union(*(t.index for t in tables.values())))
    _, classical, _ = references(next(iter(folders.values())), data_dir, series)
    ok = classical[classical["status"] == "ok"] if len(classical) else classical
    base = ok.pivot_table(index="series", columns="model", values="test_rmse") if len(ok) else pd.DataFrame()
    others = {"EvoCov paper (mean)": refs["evocov_lml_mean"],
              **{m: pub[m] if m in pub.columns else pd.Series(dtype=float) for m in README_METHODS},
              **{m: base[m] if m in base.columns else pd.Series(dtype=float) for m in README_CLASSICAL}}
    rows = []
    for s in series:
        cells = [s]
        for tab in tables.values():
            cells.append(f"{fmt(tab.loc[s, 'rmse'])} ({fmt(tab.loc[s, 'ratio'], 2, fixed=True)}×)" if s in tab.index
                         else "–")
        cells += [fmt(col.get(s, math.nan), missing="–") for col in others.values()]
        rows.append(cells)

    def over_series(ratios: pd.Series) -> Summary:
        r = ratios.reindex(series)
        if r.isna().any():  # a reference missing on a series: no summary (it would not be comparable)
            return Summary(math.nan, math.nan, 0, math.nan, 0)
        return summarize(pd.DataFrame({"ratio": r, "max_wall_ratio": math.nan}))

    sums = [summarize(tab) for tab in tables.values()] + [over_series(col / best) for col in others.values()]
    n_others = len(others)
    bold = "**{}**".format
    rows += [[bold("geometric mean over the series") + " (ours: median of the seeds)",
              *(bold(fmt(x.accuracy_geomean, 2, fixed=True, missing="–")) for x in sums)],
             ["worst series", *(fmt(x.worst_ratio, 2, fixed=True, missing="–") for x in sums)],
             ["series over 3×", *(str(x.series_over_3x) if x.n_series else "–" for x in sums)],
             [bold("single run: geometric mean over all trials"),
              *(bold(fmt(t.single_run_geomean, 2, fixed=True)) for t in singles.values()), *["–"] * n_others],
             ["single run: 90th percentile", *(fmt(t.single_run_p90, 2, fixed=True) for t in singles.values()),
              *["–"] * n_others],
             ["single run: worst", *(fmt(t.worst_single, 2, fixed=True) for t in singles.values()),
              *["–"] * n_others]]
    head = ["series", *(f"EvoCov {label}" for label in folders), *others]
    return md_table(head, rows)


def accuracy_report(out: Path, *, data_dir: Path | None = None, classical: bool = True,
                    log: Callable[[str], None] | None = None) -> AccuracyReport:
    """(Re)write ``report.md`` of an accuracy folder from its ``trials.csv``, ``run.json`` and ``classical.csv``.

    The classical forecasters' scores are made once per series and kept in ``classical.csv``
    (:mod:`~bench.common`); every other number comes from the folder's
    files. On a folder of series without published results (:func:`references`) the ratios are
    to AutoETS and every summary key is prefixed ``corpus_``.

    Parameters
    ----------
    out : Path
        The folder.
    data_dir : Path, optional
        Where the series and ``evocov_paper_rmse.csv`` are (default: the one recorded in ``run.json``).
    classical : bool
        False: leave the classical forecasters out (no ``vs_*``, and no ratios on a corpus).
    log : callable, optional
        A line per series whose classical forecasts are made now.

    Returns
    -------
    AccuracyReport
        The report's path and the summary line of each variant.
    """
    out = Path(out)
    rf = trials_file(out)
    runs = read_runs(out / "run.json")
    if not runs and not rf.path.is_file():
        raise BenchError(f"{out} has no run.json nor trials.csv: not a bench accuracy folder")
    if data_dir is None:
        data_dir = next((Path(r["data_dir"]) for r in reversed(runs) if r.get("data_dir")), None)
        if data_dir is None:
            raise BenchError(f"{out}/run.json records no data folder; pass --data-dir")
    trials = rf.read()
    if len(trials):
        trials["seed"] = pd.to_numeric(trials["seed"], errors="coerce").astype(int)
    names = sorted(set(trials["series"])) if len(trials) else []
    refs, base, corpus = references(out, Path(data_dir), names, classical=classical, log=log)
    prefix = "corpus_" if corpus else ""
    variants = _variants_present(trials)
    per_variant = {v: series_table(trials, refs, v) for v in variants}
    summary = [summary_line(v, summarize(per_variant[v]), trial_summary(trials, refs, v, base), prefix)
               for v in variants]
    summary += [line for v in variants if (line := forecast_line(trials, refs, v, prefix))]
    if corpus:
        summary += [line for v in variants if (line := kernel_goal_line(trials, refs, v))]
    last = runs[-1] if runs else {}
    where = (f"one of the {len(names)} series of `{data_dir}` (a development corpus: no published results) at "
             "its split" if corpus else "one of the 13 TSDL series at the published split")
    ref = "AutoETS's test RMSE on the same split" if corpus else "the best published RMSE"
    lines = [f"# EvoCov accuracy at the dashboard's budget `{last.get('budget', '?')}` "
             f"({fmt(last.get('budget_s'))} s per search)", "",
             "Regenerate this report from the folder's files with "
             f"`python -m bench accuracy-report --out {out}`.", "",
             f"Each trial: one EvoCov search with the dashboard's settings on {where} (checked against "
             "`splits.csv`), one seed, one variant; trials ran one after another, "
             "each search with its own worker processes, and the wall time is measured around the search. "
             "A trial that fitted nothing counts as an infinite RMSE; the untimed `fixed-quick` variant's wall "
             "ratio is against the same budget.", "",
             "## Summary", "", "Returned model, median over the seeds, then over the series "
             f"(ratio to {ref}; over 3× = ratio > {OVER:g}). Then each single trial's ratio: geometric mean "
             "over all trials, 90th percentile, the worst, and the geometric mean over the series of their "
             "median (`median5`); the share of the test points inside the returned kernel's 95 % interval, "
             "pooled over the `coverage_trials` trials that recorded it; and `vs_*`, the geometric mean over the "
             "series of our median test RMSE / that classical forecaster's (`classical.csv`)"
             + (": every key prefixed `corpus_`" if corpus else "") + ". A `forecast_` line, where the trials "
             "recorded it, gives the same single-run figures for the forecast the search returned (the kernel's, or "
             "its average with classical forecasts weighted by their errors from four earlier origins: "
             "`evocov_core/forecast/combination.py`), that forecast's test RMSE paired trial by trial against the "
             "kernel's own (geometric mean and the standard error of the mean log), and how many trials returned "
             "another forecast than the kernel's own:", "",
             "```", *(summary or ["(no finished trial yet)"]), "```", ""]
    n_err = int((trials["status"] == TrialStatus.ERROR).sum()) if len(trials) else 0
    if n_err:
        lines += [f"{n_err} trial(s) ended with an error (left out of the scores; rerun the command to retry "
                  "them): see the trial list.", ""]
    lines += _commands(runs, trials)
    if variants:
        main_v = "full" if "full" in per_variant else variants[0]
        lines += _series_section(per_variant[main_v], main_v, trials, base, corpus)
        lines += _ablation_section(ablation_table(trials, refs, variants), per_variant)
        lines += _trial_rows(trials)
    else:
        lines += ["No finished trial yet: no tables.", ""]
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return AccuracyReport(path, summary)
