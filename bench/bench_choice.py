"""Which rule should choose the kernel a search returns? Post hoc, on the records of budgeted searches.

Conclusion first: see ``bench/results/bench_choice__<folder>.md`` (its summary lines) and
``docs/studies.md``.

A budgeted search returns, of its 5 lowest-BIC distinct kernels, the one whose refit on the first
90 % of the training range best predicts the last 10 % (``evocov_core/search/select.py``). A
single tail decides, and it can decide wrongly (issue 27). This script replays other rules on the
full fits each trial recorded (``bench accuracy --records``); the search itself is unchanged, so
a rule's result is exactly what the search would have returned with it (less the time the rule
itself costs, which the search would have lost):

``preset``
    what the search returned (``trials.csv``);
``bic``
    the lowest BIC;
``bma``
    the search's model average (``trials.csv``);
``origins-K``
    of the K lowest-BIC kernels, the one whose forecasts from four earlier origins (60, 70, 80
    and 90 % of the training range, each over the next 10 %; full-data values, no refit) have the
    lowest mean CRPS (``evocov_core/search/validate.py``);
``origins-K-avg``
    the mixture of the K kernels weighted by the likelihood of those forecasts;
``origins-K-top3``
    the equal-weight mixture of the 3 best by that CRPS;
``diverse-δ``, ``diverse-δ-mix``, ``oracle-diverse-δ`` (``--diverse``)
    the tail choice, and the equal mixture, over 5 kernels whose forecasts differ by at least δ
    (:func:`diverse_rules`);
``origins-refit-K`` (``--refit``)
    as ``origins-K``, each kernel refitted at each origin first (one L-BFGS-B run from its
    full-data values, as the tail rule's refit), so that every forecast is out of sample
    (``choice = "refit_origins"`` in the search); ``+front`` adds the BIC-vs-q front, and
    ``-logd``, ``-late``, ``-avg``, ``-top3`` are the variants of :func:`refit_rules`;
``stack-refit-K``, ``stack-refit-5+front``, ``stack-diverse-δ`` (``--refit``)
    the mixture of those candidates whose weights maximise the summed log density of their
    refitted rolling-origin forecasts (stacking, :func:`stacked_rmse`).

The test part is never used to choose. The test RMSE of a single kernel is the recorded one;
of a mixture, that of its mean. Ratios are to the reference RMSE of the series: the best
published (TSDL, ``evocov_paper_rmse.csv``) or AutoETS fitted on the same training part
(the development corpus; ``evocov_core.forecast.classical``).

Usage (from the repository root)::

    python -m bench.bench_choice --folder bench/results/corpus/quick-before --data-dir bench/corpus/series

``--variant`` replays another variant's trials (``cp-by-expansion`` in the folders made before it
became the preset), ``--name`` names the report (two folders may share a name).

A ``bench long`` folder (its trials keep their records beside the kernel files) is replayed the
same way, on the fit points the searches used; its reference is the better of seasonal naive and
MSTL, and it adds the rules on the search's own candidate set (the spectral and naive seeds
whatever their BIC, :meth:`~evocov_core.search.candidates.Candidates.top`): ``tail-set`` (the tail
score with the candidates' full-data values: the preset's choice when its head refits are cut to
one evaluation, as on long series at ``quick``), ``origins-set``, ``origins-set-avg``,
``origins-set-logd`` (by the forecasts' summed log density), ``bic-set`` and ``oracle-set``::

    python -m bench.bench_choice --folder bench/results/long/quick-naive-seeds

Writes ``bench/results/bench_choice__<folder name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, folders_trials, limit_threads, map_jobs, parse_tuple, write_report
from bench.accuracy import read_trials, variant_config
from bench.common import TrialStatus, geomean, load_series, md_table
from bench.long import load_long
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, coverage, crps_normal, rmse
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, FitStatus, OptimConfig, fit_kernel
from evocov_core.runs.kernel_file import load_kernel_file, parse_expression
from evocov_core.search.select import INDEFINITE, indefiniteness, tail_score
from evocov_core.search.stages import head_stage
from evocov_core.search.validate import OriginScores, origin_scores, spread_scale, stacking_weights

KS = (5, 10, 20)


def distinct_fits(records: pd.DataFrame) -> pd.DataFrame:
    """The lowest-BIC full fit of each canonical kernel, lowest BIC first."""
    ok = records[(records.status == FitStatus.OK) & np.isfinite(records.bic)]
    return ok.sort_values("bic", kind="stable").drop_duplicates("canonical").reset_index(drop=True)


def as_fit(row: pd.Series, n: int) -> FitResult:
    """A recorded full fit as a :class:`FitResult` (its expression parsed, never evaluated)."""
    return FitResult(kernel=parse_expression(row.expression), theta=parse_tuple(row.theta),
                     log_noise=float(row.log_noise), jitter=float(row.jitter), status=FitStatus.OK, reason="",
                     metric="lml", metric_value=float(row.metric_value), lml=float(row.lml), bic=float(row.bic),
                     q=int(row.q), n=n, n_evals=0, seconds=0.0, test_rmse=float(row.test_rmse))


def mixture_rmse(data: FitData, fits: list[FitResult], weights: np.ndarray) -> float:
    """Test RMSE (original units) of the weighted mixture's mean."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    means = []
    for f in fits:
        with np.errstate(all="ignore"):
            means.append(posterior(f.kernel, data.inputs, data.y, np.asarray(f.theta), f.log_noise, data.X_test,
                                   jitter=f.jitter, mean_only=True).mean)
    mean = w @ np.asarray(means)
    return rmse(data.y_test, mean * data.y_std + data.y_mean)


def predictive_on_test(data: FitData, fit: FitResult, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Test outputs, predictive means and standard deviations (latent + noise, times ``scale``),
    original units."""
    with np.errstate(all="ignore"):
        post = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise, data.X_test,
                         jitter=fit.jitter)
    mu = post.mean * data.y_std + data.y_mean
    sd = np.sqrt(post.var + fit.noise_variance + fit.jitter) * data.y_std * scale
    return np.asarray(data.y_test, dtype=np.float64), mu, sd


def interval_quality(data: FitData, fit: FitResult, scale: float = 1.0) -> tuple[float, float]:
    """Coverage of the 95 % interval and mean CRPS (original units) on the test part, the
    predictive standard deviation multiplied by ``scale``."""
    y, mu, sd = predictive_on_test(data, fit, scale)
    return coverage(y, mu - 1.96 * sd, mu + 1.96 * sd), crps_normal(y, mu, sd)


def front(fits: pd.DataFrame) -> list[int]:
    """Rows of ``fits`` (lowest BIC first) with a lower BIC than every row with fewer hyperparameters."""
    out, best = [], math.inf
    for i in fits.sort_values(["q", "bic"], kind="stable").index:
        if fits.bic[i] < best:
            out.append(int(i))
            best = fits.bic[i]
    return out


def replay(records: pd.DataFrame, data: FitData, preset: FitResult | None = None, refit=None,
           seed: int = 0, refitted: dict[int, OriginScores] | None = None) -> dict[str, float]:
    """Each rule's test RMSE on one trial (module docstring); for single kernels also the 95 %
    coverage and CRPS, as the GP gives them and with the spread scaled by the rolling-origin
    errors (``cov:``/``crps:`` and ``cov-cal:``/``crps-cal:`` keys). ``refitted`` (by row of
    :func:`distinct_fits`) receives the refitted origins' scores, for :func:`diverse_rules`."""
    fits = distinct_fits(records)
    cands = [as_fit(fits.loc[i], data.n) for i in range(min(max(KS), len(fits)))]
    scores = [origin_scores(data, f) for f in cands]
    crps = np.array([s.mean_crps for s in scores])
    logd = np.array([s.total_log_density for s in scores])
    out = {"bic": cands[0].test_rmse if cands else math.nan}

    def intervals(rule: str, fit: FitResult, z: np.ndarray) -> None:
        cov, cr = interval_quality(data, fit)
        out[f"cov:{rule}"], out[f"crps:{rule}"] = cov, cr
        cov, cr = interval_quality(data, fit, spread_scale(z))
        out[f"cov-cal:{rule}"], out[f"crps-cal:{rule}"] = cov, cr

    if cands:
        intervals("bic", cands[0], scores[0].z)
    if preset is not None:
        intervals("preset", preset, origin_scores(data, preset).z)
        if refit is not None:
            z = origin_scores(data, preset, refit=refit, seed=(seed, 1)).z
            cov, cr = interval_quality(data, preset, spread_scale(z))
            out["cov-cal-refit:preset"], out["crps-cal-refit:preset"] = cov, cr
    # The BIC-vs-q front (small kernels) beside the five lowest BIC, scored by the origins.
    pool = sorted(set(range(min(5, len(fits)))) | set(front(fits)))
    pool_fits = {i: (cands[i] if i < len(cands) else as_fit(fits.loc[i], data.n)) for i in pool}
    pool_fits.update({i: cands[i] for i in range(min(5, len(cands)))})
    pool_scores = {i: (scores[i] if i < len(scores) else origin_scores(data, pool_fits[i])) for i in pool}
    pc = np.array([pool_scores[i].mean_crps for i in pool])
    if pc.size and np.isfinite(pc).any():
        best = pool[int(np.argmin(np.where(np.isfinite(pc), pc, np.inf)))]
        out["origins-5+front"] = pool_fits[best].test_rmse
    if refit is not None:
        pool_fits.update({i: cands[i] for i in range(min(10, len(cands)))})
        refitted = {} if refitted is None else refitted
        refitted.update({i: origin_scores(data, f, refit=refit, seed=(seed, 2, i)) for i, f in pool_fits.items()})
        top5, top10 = list(range(min(5, len(cands)))), list(range(min(10, len(cands))))
        for name, rows in (("origins-refit-5", top5), ("origins-refit-5+front", pool), ("origins-refit-10", top10)):
            rc = np.array([refitted[i].mean_crps for i in rows])
            if rc.size and np.isfinite(rc).any():
                out[name] = pool_fits[rows[int(np.argmin(np.where(np.isfinite(rc), rc, np.inf)))]].test_rmse
        if top5:
            out.update(refit_rules(data, [cands[i] for i in top5], [refitted[i] for i in top5]))
        for name, rows in (("stack-refit-5", top5), ("stack-refit-10", top10), ("stack-refit-5+front", pool)):
            if rows:
                out[name] = stacked_rmse(data, [pool_fits[i] for i in rows], [refitted[i] for i in rows])
    for k in KS:
        c, ld = crps[:k], logd[:k]
        if not len(c):
            continue
        pick = int(np.argmin(np.where(np.isfinite(c), c, np.inf))) if np.isfinite(c).any() else 0
        out[f"origins-{k}"] = cands[pick].test_rmse
        intervals(f"origins-{k}", cands[pick], scores[pick].z)
        finite = np.isfinite(ld)
        if finite.any():
            w = np.where(finite, np.exp(ld - ld[finite].max()), 0.0)
            keep = np.flatnonzero(w > 1e-4 * w.max())
            out[f"origins-{k}-avg"] = mixture_rmse(data, [cands[i] for i in keep], w[keep])
        top = [int(i) for i in np.argsort(np.where(np.isfinite(c), c, np.inf))[:3]]
        out[f"origins-{k}-top3"] = mixture_rmse(data, [cands[i] for i in top], np.ones(len(top)))
        out[f"oracle-{k}"] = float(np.nanmin([f.test_rmse for f in cands[:k]]))
    return out


def stacked_rmse(data: FitData, fits: list[FitResult], scores: list) -> float:
    """Test RMSE of the mixture of ``fits`` whose weights maximise the log score of their refitted
    rolling-origin forecasts (:func:`~evocov_core.search.validate.stacking_weights`)."""
    w = stacking_weights(np.array([s.log_p for s in scores]))
    keep = np.flatnonzero(w > 1e-4 * w.max())
    return mixture_rmse(data, [fits[i] for i in keep], w[keep])


def refit_rules(data: FitData, cands: list[FitResult], scores: list) -> dict[str, float]:
    """Variants of the refitted rolling-origin choice on the K lowest-BIC kernels: by the summed
    log density of the forecasts (``-logd``), by the CRPS of the two latest origins only
    (``-late``), the likelihood-weighted mixture (``-avg``) and the equal mixture of the three
    best by CRPS (``-top3``)."""
    out: dict[str, float] = {}
    crps = np.array([s.mean_crps for s in scores])
    logd = np.array([s.total_log_density for s in scores])
    late = np.array([np.mean([c for o, c in zip(s.origins, s.crps, strict=True) if o >= 0.75] or [math.inf])
                     for s in scores])
    if np.isfinite(logd).any():
        out["origins-refit-5-logd"] = cands[int(np.argmax(np.where(np.isfinite(logd), logd, -np.inf)))].test_rmse
        w = np.where(np.isfinite(logd), np.exp(logd - np.max(logd[np.isfinite(logd)])), 0.0)
        keep = np.flatnonzero(w > 1e-4 * w.max())
        out["origins-refit-5-avg"] = mixture_rmse(data, [cands[i] for i in keep], w[keep])
    if np.isfinite(late).any():
        out["origins-refit-5-late"] = cands[int(np.argmin(np.where(np.isfinite(late), late, np.inf)))].test_rmse
    if np.isfinite(crps).any():
        top = [int(i) for i in np.argsort(np.where(np.isfinite(crps), crps, np.inf))[:3]]
        out["origins-refit-5-top3"] = mixture_rmse(data, [cands[i] for i in top], np.ones(len(top)))
    return out


#: Forecast distances (RMS over the horizon, in data standard deviations) below which two kernels
#: count as the same forecast in the ``diverse`` rules.
DELTAS = (0.05, 0.1, 0.2)
#: The ``diverse`` rules look this far down the BIC ranking for distinct forecasts.
DIVERSE_POOL = 40


def horizon_means(data: FitData, fits: list[FitResult], points: int = 50) -> list[np.ndarray | None]:
    """Each fit's predictive mean on a grid over the next tenth of the training span (model units;
    None where it is not finite)."""
    x = data.X[:, 0]
    grid = np.repeat(data.X[np.argmax(x)][None, :], points, axis=0)
    grid[:, 0] = x.max() + np.linspace(0.1 / points, 0.1, points) * np.ptp(x)
    out: list[np.ndarray | None] = []
    for f in fits:
        try:
            with np.errstate(all="ignore"):
                m = posterior(f.kernel, data.inputs, data.y, np.asarray(f.theta), f.log_noise, grid,
                              jitter=f.jitter, mean_only=True).mean
        except NUMERIC_ERRORS:
            m = None
        out.append(m if m is not None and np.all(np.isfinite(m)) else None)
    return out


def diverse_rules(records: pd.DataFrame, data: FitData, optim: OptimConfig, seed: int,
                  refit: OptimConfig | None = None, refitted: dict[int, OriginScores] | None = None
                  ) -> dict[str, float]:
    """The preset's tail choice over 5 candidates whose forecasts differ (``diverse-δ``: going down
    the BIC ranking, a kernel whose mean over the next tenth of the span is within ``δ`` data
    standard deviations, RMS, of one already taken is skipped), the equal mixture of those
    candidates (``diverse-δ-mix``) and the best of them on the test part (``oracle-diverse-δ``).
    ``diverse-0`` is the preset's own candidate set: its tail choice replays the preset. With
    ``refit``, also the stacked mixture of those candidates (``stack-diverse-δ``: weights fitted on
    their refitted rolling-origin forecasts, :func:`stacked_rmse`; those :func:`replay` made already
    come in ``refitted``)."""
    fits = distinct_fits(records)
    cands = [as_fit(fits.loc[i], data.n) for i in range(min(DIVERSE_POOL, len(fits)))]
    means = horizon_means(data, cands)
    head_data, refit = head_stage(data, optim)  # the preset's head refit
    tails: dict[int, float] = {}

    def tail(i: int) -> float:
        if i not in tails:
            h = fit_kernel(cands[i].kernel, head_data, refit, np.random.default_rng([seed, 7919, i]), cands[i].start())
            tails[i] = tail_score(data, h, marginal=data.on_subset)
        return tails[i]

    origin = {} if refitted is None else refitted
    out: dict[str, float] = {}
    for delta in (0.0, *DELTAS):
        taken: list[int] = []
        for i, m in enumerate(means):
            if len(taken) == 5:
                break
            if delta > 0 and m is not None and any(
                    means[j] is not None and np.sqrt(np.mean((m - means[j]) ** 2)) < delta for j in taken):
                continue
            taken.append(i)
        if not taken:
            continue
        valid = [i for i in taken if not indefiniteness(data, cands[i]) > INDEFINITE] or taken
        scores = np.array([tail(i) for i in valid])
        best = valid[int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))] if np.isfinite(scores).any() \
            else valid[0]
        name = f"diverse-{delta:g}"
        out[name] = cands[best].test_rmse
        out[f"{name}-mix"] = mixture_rmse(data, [cands[i] for i in valid], np.ones(len(valid)))
        out[f"oracle-{name}"] = float(np.nanmin([cands[i].test_rmse for i in taken]))
        if refit is not None and delta > 0:
            for i in valid:
                if i not in origin:
                    origin[i] = origin_scores(data, cands[i], refit=refit, seed=(seed, 2, i))
            out[f"stack-{name}"] = stacked_rmse(data, [cands[i] for i in valid], [origin[i] for i in valid])
    return out


def search_set(fits: pd.DataFrame, k: int = 5) -> list[int]:
    """Rows of ``fits`` (lowest BIC first) that the search offered its model choice: the spectral
    seeds take at most ``k`` less :data:`~evocov_core.search.candidates.MIN_SEARCHED` places, as in
    :meth:`~evocov_core.search.candidates.Candidates.top`."""
    from evocov_core.search.candidates import seed_places
    from evocov_core.search.rules import SPECTRAL_SEED

    seeds = [int(i) for i in fits.index if fits.origin[i] == SPECTRAL_SEED]
    others = [int(i) for i in fits.index if fits.origin[i] != SPECTRAL_SEED]
    n_seeds = seed_places(k, len(seeds), len(others))
    return sorted(seeds[:n_seeds] + others[:k - n_seeds])


def set_rules(records: pd.DataFrame, data: FitData) -> dict[str, float]:
    """The rules on the search's own candidate set (:func:`search_set`; module docstring)."""
    fits = distinct_fits(records)
    rows = search_set(fits)
    cands = [as_fit(fits.loc[i], data.n) for i in rows]
    if not cands:
        return {}
    valid = [not indefiniteness(data, f) > INDEFINITE for f in cands]
    valid = valid if any(valid) else [True] * len(cands)
    tails = np.array([tail_score(data, f, marginal=data.on_subset) if ok else -np.inf
                      for f, ok in zip(cands, valid, strict=True)])
    scores = [origin_scores(data, f) for f in cands]
    crps = np.array([sc.mean_crps if ok else np.inf for sc, ok in zip(scores, valid, strict=True)])
    logd = np.array([sc.total_log_density if ok else -np.inf for sc, ok in zip(scores, valid, strict=True)])
    out = {"bic-set": cands[int(np.argmax(valid))].test_rmse, "oracle-set": float(np.nanmin([f.test_rmse
                                                                                            for f in cands]))}
    if np.isfinite(tails).any():
        out["tail-set"] = cands[int(np.argmax(np.where(np.isfinite(tails), tails, -np.inf)))].test_rmse
    if np.isfinite(crps).any():
        out["origins-set"] = cands[int(np.argmin(np.where(np.isfinite(crps), crps, np.inf)))].test_rmse
    if np.isfinite(logd).any():
        out["origins-set-logd"] = cands[int(np.argmax(np.where(np.isfinite(logd), logd, -np.inf)))].test_rmse
        w = np.where(np.isfinite(logd), np.exp(logd - np.max(logd[np.isfinite(logd)])), 0.0)
        keep = np.flatnonzero(w > 1e-4 * w.max())
        out["origins-set-avg"] = mixture_rmse(data, [cands[i] for i in keep], w[keep])
    return out


def long_setup(folder: Path) -> tuple[object, pd.DataFrame]:
    """A ``bench long`` folder's search settings (the preset of its last run's budget, with its fit
    points) and its trials (the last row of a rerun trial)."""
    from evocov_core.search.config import preset

    last = json.loads((folder / "run.json").read_text(encoding="utf-8"))["runs"][-1]
    config = preset(last["budget"])
    if last.get("fit_points") is not None:
        config = dataclasses.replace(config, fit_points=int(last["fit_points"]))
    return config, pd.read_csv(folder / "trials.csv").drop_duplicates(["series", "seed"], keep="last")


def long_jobs(folder: Path, with_refit: bool, diverse: bool) -> list[tuple]:
    """The jobs of a ``bench long`` folder: its finished trials that kept their records."""
    config, trials = long_setup(folder)
    jobs = []
    for t in trials.itertuples():
        path = folder / "kernels" / f"{t.series}__seed{t.seed}.records.csv"
        if t.status == TrialStatus.OK and path.is_file():
            jobs.append((path, t.series, int(t.seed), float(t.test_rmse), math.nan, folder / str(t.kernel_file),
                         folder / "data", config, with_refit, diverse))
    return jobs


def reference(folder: Path, data_dir: Path, names: list[str]) -> pd.Series:
    """Reference RMSE per series: the best published (TSDL), AutoETS on the same split (the
    folder's ``classical.csv``, made once, as ``bench accuracy-report`` does) or, for a ``bench
    long`` folder, the better of seasonal naive and MSTL (its ``trials.csv``)."""
    if is_long(folder):
        t = pd.read_csv(folder / "trials.csv")
        return t.groupby("series")["best_baseline_rmse"].max().astype(float)
    paper = data_dir / "evocov_paper_rmse.csv"
    if paper.is_file():
        return pd.read_csv(paper).set_index("dataset")["best_published"].astype(float)
    from bench.classical_cache import classical_scores

    table = classical_scores(folder, data_dir, names)
    ets = table[table.model == "AutoETS"].set_index("series")["test_rmse"]
    return pd.to_numeric(ets, errors="coerce")


def add_folder_study_args(ap: argparse.ArgumentParser, script: str,
                          folder_help: str = "a bench accuracy folder") -> None:
    """The arguments of a post hoc study over ``bench accuracy`` folders: ``--folder`` (repeated),
    ``--data-dir``, ``--workers``, ``--name`` (the report's name after ``<script>__``) and ``--variant``."""
    ap.add_argument("--folder", type=Path, required=True, action="append",
                    help=f"{folder_help}; repeated: the seeds of several folders (the first one's data)")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--name", default=None, help=f"the report's name after {script}__")
    ap.add_argument("--variant", default="full", help="the folders' trials of this variant (default full)")


def folder_study_jobs(args: argparse.Namespace, *extra, keep=None) -> tuple[list[Path], pd.DataFrame, list[tuple]]:
    """What :func:`add_folder_study_args`' arguments name: the folders, their trials (``keep``: a filter of
    them) and one job per series, ``(data_dir, config, series, trial records, reference RMSE, *extra)``."""
    folders = list(args.folder)
    variant = getattr(args, "variant", "full")
    data_dir, config = folder_setup(folders[0], args.data_dir, variant)
    trials = folders_trials(folders, variant)
    if keep is not None:
        trials = keep(trials)
    refs = reference(folders[0], data_dir, sorted(trials.series.unique()))
    jobs = [(data_dir, config, s, g.to_dict("records"), float(refs[s]), *extra) for s, g in trials.groupby("series")]
    return folders, trials, jobs


def run_folder_study(args: argparse.Namespace, script: str, series_rows, *extra,
                     keep=None) -> tuple[list[Path], pd.DataFrame, pd.DataFrame, str]:
    """A post hoc folder study's rows: ``series_rows`` over :func:`folder_study_jobs`' jobs (``extra``,
    ``keep`` passed on), on ``args.workers`` processes, written to ``bench/results/<script>__<name>.csv``.
    Returns the folders, their trials, the rows and the report's name."""
    folders, trials, jobs = folder_study_jobs(args, *extra, keep=keep)
    df = pd.DataFrame([r for rows in map_jobs(series_rows, jobs, args.workers) for r in rows])
    name = args.name or folders[0].name
    df.to_csv(RESULTS_DIR / f"{script}__{name}.csv", index=False)
    return folders, trials, df, name


def folder_setup(folder: Path, data_dir: Path | None, variant: str = "full"):
    """The data folder (``data_dir`` or the one the folder's ``run.json`` records) and the
    ``variant``'s settings at the folder's budget."""
    runs = json.loads((folder / "run.json").read_text(encoding="utf-8"))["runs"]
    return Path(data_dir or runs[-1]["data_dir"]).resolve(), variant_config(variant, runs[-1]["budget"])


def is_long(folder: Path) -> bool:
    """A ``bench long`` folder (rather than a ``bench accuracy`` one)."""
    return (folder / "trials.csv").is_file() and (folder / "baselines.csv").is_file()


def trial_data(data_dir: Path, config, series: str) -> FitData:
    """A series' training data as the folder's searches saw them (a long series: on the fit points)."""
    path = data_dir / f"{series}.csv"
    ds = load_long(path) if path.is_file() else load_series(data_dir, series)
    return FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)


def replay_trial(job: tuple) -> list[dict]:
    """One trial's rows (series, seed, rule, rmse): the recorded preset and model average, and every
    replayed rule."""
    path, series, seed, preset_rmse, bma_rmse, kernel_file, data_dir, config, with_refit, diverse = job
    data = trial_data(data_dir, config, series)
    kf = load_kernel_file(kernel_file)
    refit = head_stage(data, config.optim)[1] if with_refit else None
    records = pd.read_csv(path)
    refitted: dict[int, OriginScores] = {}
    res = {"preset": preset_rmse, "bma": bma_rmse, **replay(records, data, kf.to_fit(data.n), refit, seed, refitted)}
    if data.on_subset:
        res.update(set_rules(records, data))
    if diverse:
        res.update(diverse_rules(records, data, config.optim, seed, refit, refitted))
    return [{"series": series, "seed": seed, "rule": r, "rmse": v} for r, v in res.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder made with --records")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--refit", action="store_true", help="also the rules that refit each candidate at each origin "
                    "(slower: four fits per candidate)")
    ap.add_argument("--diverse", action="store_true", help="also the choices among kernels whose forecasts "
                    "differ (a head refit per candidate)")
    ap.add_argument("--name", default=None, help="the report's name after bench_choice__ (default: the folder's)")
    ap.add_argument("--variant", default="full", help="the variant whose trials are replayed (default: full)")
    ap.add_argument("--workers", type=int, default=1, help="trials replayed in parallel processes")
    args = ap.parse_args()
    threads = limit_threads()
    t0 = time.perf_counter()
    long = is_long(args.folder)
    data_dir, config = (args.folder / "data", None) if long else folder_setup(args.folder, args.data_dir, args.variant)
    trials = None if long else read_trials(args.folder).set_index(["series", "variant", "seed"])
    jobs = long_jobs(args.folder, args.refit, args.diverse) if long else []
    for path in [] if long else sorted((args.folder / "records").glob(f"*__{args.variant}__seed*.csv.gz")):
        series, _, seed = path.name[:-len(".csv.gz")].split("__")
        seed = int(seed.removeprefix("seed"))
        t = trials.loc[(series, args.variant, seed)]
        if t.status == TrialStatus.OK:
            jobs.append((path, series, seed, float(t.test_rmse), float(t.bma_test_rmse),
                         args.folder / str(t.kernel_file), data_dir, config, args.refit, args.diverse))
    rows = [row for res in map_jobs(replay_trial, jobs, args.workers) for row in res]
    df = pd.DataFrame(rows)
    quality = df[df.rule.str.contains(":")].copy()
    df = df[~df.rule.str.contains(":")].copy()
    df = df[np.isfinite(df.rmse.astype(float))]  # a long folder's trials have no model average recorded
    refs = reference(args.folder, data_dir, sorted(df.series.unique()))
    df["ratio"] = df.rmse / refs.reindex(df.series).to_numpy()
    name = args.name or args.folder.name
    out_csv = RESULTS_DIR / f"bench_choice__{name}.csv"
    df.to_csv(out_csv, index=False)
    base = df[df.rule == "preset"].set_index(["series", "seed"]).rmse
    table, lines = [], []
    for rule in dict.fromkeys(df.rule):
        d = df[df.rule == rule].set_index(["series", "seed"])
        r = d.ratio.replace([np.inf, -np.inf], np.nan).dropna()
        lr = np.log((d.rmse / base.reindex(d.index)).replace([np.inf, -np.inf], np.nan).dropna())
        med = r.groupby(level="series").median()
        table.append([rule, f"{geomean(r):.3f}", f"{np.percentile(r, 90):.2f}", f"{r.max():.2f}",
                      f"{geomean(med):.3f}", f"{math.exp(lr.mean()):.3f}", f"{lr.std(ddof=1) / math.sqrt(len(lr)):.3f}",
                      f"{int((lr < -1e-9).sum())}/{int((lr > 1e-9).sum())}"])
        lines.append(f"rule={rule} single_run_geomean={geomean(r):.4f} single_run_p90={np.percentile(r, 90):.3f} "
                     f"worst_single={r.max():.3f} median_geomean={geomean(med):.4f} paired={math.exp(lr.mean()):.4f}")
    cal = []
    base_crps = quality[quality.rule == "crps:preset"].set_index(["series", "seed"]).rmse
    for key in dict.fromkeys(quality.rule):
        v = quality[quality.rule == key].set_index(["series", "seed"]).rmse
        if key.startswith("cov"):
            stat = f"{v.mean():.3f}"
        else:  # CRPS is in each series' units: a geometric mean of ratios to the preset's
            stat = f"{geomean((v / base_crps.reindex(v.index)).replace([np.inf, -np.inf], np.nan).dropna()):.3f}"
        cal.append([key, stat, str(v.size)])
        lines.append(f"interval {key}={stat}")
    header = ["rule", "single-run geomean", "p90", "worst", "geomean of per-series medians", "paired vs preset",
              "SE (log)", "lower/higher"]
    sections = [f"Folder `{args.folder}`, data `{data_dir}`, {base.size} trials, "
                f"{time.perf_counter() - t0:.0f} s.", md_table(header, table),
                "Interval quality of single kernels on the test part (mean over trials; `cov` = share of test "
                "points inside the 95 % interval, mean over trials; `crps`: geometric mean of the ratio to the "
                "preset's CRPS; `-cal`: the spread scaled by the rolling-origin errors, "
                "`evocov_core.search.validate.spread_scale`):",
                md_table(["rule", "value", "trials"], cal), "```", *lines, "```"]
    path = write_report(f"bench_choice__{name}", "Model-choice rules, replayed on recorded fits",
                        sections, threads)
    print("\n".join(lines))
    print(f"wrote {path} and {out_csv}")


if __name__ == "__main__":
    main()
