"""Which kernel a search returns: the one that best predicts the end of the training range.

BIC ranks kernels during the search (the paper's fitness) but rewards fit to the training
range, not extrapolation. So, with ``select_top = K > 1``, the K lowest-BIC distinct
kernels of a run are each refitted on the first ``1 − metric_split`` of the training
x-range (the *head*; one L-BFGS-B run from their full-data values) and scored by the
posterior log-likelihood of the held-out last part (the *tail*) given the head: the same
question the user asks of the forecast, asked of data the search has. The best tail
score is returned (refitted on all the training data, as found by the search); the test
part is never used. The scores also weight a Bayesian model average of the K kernels
(:mod:`evocov_core.fitting.averaging`), offered beside the single kernel.

Each candidate is also checked for a predictive variance that explodes over the forecast
horizon (:func:`horizon_spread`): its standard deviation one tenth of the training span
beyond the data, in units of the data's standard deviation, is reported and flagged above
:data:`EXPLODING_SPREAD` (flagged, not penalised: the tail score already pays for such a
forecast through its log-determinant).

A candidate whose forecast leaves the range of the training values by more than that range's width
within the horizon (:func:`forecast_reach`, :data:`REACH`: a pole past the data, a quartic trend) is
left out the same way. A candidate whose covariance is not positive semi-definite on the training inputs and a
forecast grid beyond them (:func:`indefiniteness`: its most negative eigenvalue against the
noise variance, above :data:`INDEFINITE`) is left out of the choice and of the average,
unless every candidate is. The PSD check of a new tree is empirical, on random inputs; a
fit can still find values where the noise term masks a negative direction of K, and such a
kernel's likelihood and forecast are meaningless (seen on Unemployment: a test RMSE 20× that
of the lowest-BIC kernel, ``bench/results/accuracy/quick-reseed/``).

Evidence: ``bench/results/bench_select.md`` (post hoc, 39 quick runs: lower test RMSE in
17, higher in 12, geometric-mean RMSE ratio 0.85 for K = 5) and
``bench/results/accuracy/`` (``variant=no-select``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import eigvalsh, lapack

from evocov_core.compute.runners import StopCheck
from evocov_core.fitting.averaging import bic_weights, score_weights
from evocov_core.fitting.fits import Executor, Task
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, log_density, metric_value
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, OptimConfig
from evocov_core.language.evaluate import Inputs, covariance
from evocov_core.language.grammar import has_statespace
from evocov_core.searches.validate import (
    CALIBRATIONS,
    DEFAULT_ORIGINS,
    Calibration,
    OriginScores,
    OriginWindow,
    calibration_from_errors,
    has_origin_stages,
    origin_scores,
    origin_stage,
    origin_windows,
    spread_scale,
    tail_errors,
    tail_forecast,
)

if TYPE_CHECKING:  # pragma: no cover
    from evocov_core.searches.config import SearchConfig

__all__ = ["CHOICE_RULES", "EXPLODING_SPREAD", "INDEFINITE", "REACH", "ChoiceRule", "ModelChoice", "calibrate",
           "calibrate_returned", "calibrate_scored", "choice_description", "choice_refits", "choice_rule",
           "choose_model", "forecast_reach", "horizon_spread", "indefiniteness", "needs_head_stage",
           "needs_origin_stages", "tail_score"]


@dataclass(frozen=True)
class ChoiceRule:
    """What one rule of the model choice does: the refits it makes, how it scores and weighs the candidates.

    Attributes
    ----------
    refits : {"head", "origins", "none"}
        Each candidate refitted on the head of the training range (scored on its tail), at each origin of
        :func:`~evocov_core.searches.validate.origin_windows`, or not at all.
    score : {"tail", "crps", "density", "bic"}
        What chooses (higher is better): the tail's posterior LML (:func:`tail_score`), minus the origins'
        mean CRPS, the origins' summed log predictive density, or minus BIC.
    weigh : {"tail", "density", "bic"}
        What weighs the model average: the tail score, the origins' density, or BIC (``exp(−BIC/2)``).
    form_margin : bool
        Whether the preference for the exponential-smoothing forms (``form_margin`` < 1) applies.
    fitted_calibration : bool
        On data fitted on a subset, whether the chosen kernel's spread is calibrated by the origins'
        forecasts with its fitted values (no refit there), whatever ``calibration`` asks.
    how : str
        The choice in words, for :func:`choice_description` (``{split}``: the held-out share).
    """

    refits: str
    score: str
    weigh: str
    form_margin: bool
    fitted_calibration: bool
    how: str


_ORIGINS_TEXT = "forecasts from four earlier points in time (60-90 % of the training range, the next {split} each; "
#: Every rule of the model choice (the settings' ``choice`` and ``long_choice``): the one table of them.
CHOICE_RULES: dict[str, ChoiceRule] = {
    "tail": ChoiceRule("head", "tail", "tail", False, False,
                       "the one that best predicts the last {split} of the training range after a refit on the rest"),
    "origins": ChoiceRule("none", "crps", "density", True, True,
                          "the one whose " + _ORIGINS_TEXT + "its fitted values) have the lowest mean CRPS"),
    "origins_density": ChoiceRule("none", "density", "density", False, True,
                                  "the one whose " + _ORIGINS_TEXT + "its fitted values) are the most likely"),
    "refit_origins": ChoiceRule("origins", "crps", "density", True, False,
                                "the one whose " + _ORIGINS_TEXT + "refitted on the points before each) have the "
                                "lowest mean CRPS"),
    "bic": ChoiceRule("none", "bic", "bic", False, True, "the lowest-BIC one"),
}


def choice_rule(config: SearchConfig, on_subset: bool) -> str:
    """The rule a search with ``config`` chooses by: ``long_choice`` on data fitted on a subset, else ``choice``."""
    return str(config.long_choice if on_subset else config.choice)


def choice_refits(config: SearchConfig, on_subset: bool) -> tuple[int, int]:
    """Refits the model choice makes: per candidate (one on the head, one per origin, or none), and of the
    returned kernel for its calibration from the origins (none on a subset, where a refit costs seconds, and
    none beyond the choice's own when the choice refits at the origins)."""
    spec = CHOICE_RULES[choice_rule(config, on_subset)]
    per_candidate = {"head": 1, "origins": 0 if on_subset else len(DEFAULT_ORIGINS), "none": 0}[spec.refits]
    calib = len(DEFAULT_ORIGINS) if (config.calibration == "origins" and spec.refits != "origins"
                                     and not on_subset) else 0
    return per_candidate, calib

#: Kernels with less than this weight are left out of the model average.
MIN_WEIGHT = 1e-4
#: A forecast standard deviation above this many data standard deviations is flagged.
EXPLODING_SPREAD = 3.0
#: A most negative eigenvalue of K larger than this share of the noise variance makes a candidate invalid.
INDEFINITE = 0.01
#: A candidate whose forecast leaves the training values' range by more than this many times the range's width
#: within the horizon (:func:`forecast_reach`) is left out of the choice, as an indefinite one is.
REACH = 1.0
#: Forecast grid of :func:`indefiniteness`: at most this many points.
_GRID_POINTS = 200
#: Above this many points (data and grid), :func:`indefiniteness` tries a Cholesky first.
EIG_MAX_POINTS = 1100


def needs_origin_stages(data: FitData, config: SearchConfig) -> bool:
    """Whether a search refits kernels at the origins of
    :func:`~evocov_core.searches.validate.origin_windows` through its executor: every candidate with
    ``choice="refit_origins"``, the returned kernel with ``calibration="origins"`` (its four refits
    then run in parallel on the workers). Not on data fitted on a subset, where a refit costs seconds."""
    if data.on_subset:
        return False
    refits_at_origins = CHOICE_RULES[choice_rule(config, False)].refits == "origins"
    return (refits_at_origins and config.select_top > 1 and data.split is not None) or config.calibration == "origins"


def needs_head_stage(data: FitData, config: SearchConfig) -> bool:
    """Whether the model choice refits its candidates on the head of the training range
    (:func:`head_stage`): with ``select_top > 1`` and a split, but not on data fitted on a subset
    whose ``long_choice`` reads the fitted values (every rule but ``tail``); there the head's data,
    built for nothing, cost 0.4 s of a search's budget at 2,000 fit points."""
    if config.select_top <= 1 or data.split is None:
        return False
    return not data.on_subset or CHOICE_RULES[choice_rule(config, True)].refits == "head"


def tail_score(data: FitData, head_fit: FitResult | None, *, marginal: bool = False) -> float:
    """Posterior LML of the tail given the head at the head fit's values (−inf if it fails).

    With ``marginal``, the sum of each tail point's marginal log predictive density instead: how
    well the forecast from the head predicts every point of the tail, each on its own. The joint
    density factors into one-step-ahead predictions inside the tail (only its first point is
    forecast from the head alone), so on a long series, whose tail holds hundreds of points a few
    steps apart, it rewards kernels that track the last few points and forgets what a forecast
    days ahead needs (:func:`choose_model` uses it there).
    """
    if head_fit is None or not head_fit.ok or data.split is None:
        return -math.inf
    try:
        with np.errstate(all="ignore"):
            if marginal:
                value = log_density(data.split.y_v, *tail_forecast(data, head_fit))
            else:
                value = metric_value("posterior_lml", head_fit.kernel, data, head_fit.z)
    except NUMERIC_ERRORS:
        return -math.inf
    return value if math.isfinite(value) else -math.inf


def choice_description(rule: str, k: int, split: float = 0.1, form_margin: float = 1.0) -> str:
    """One sentence for users: how the returned kernel was chosen among the ``k`` lowest-BIC ones (and,
    with ``form_margin`` < 1 under a rule it applies to, one on the preference for the state-space forms)."""
    spec = CHOICE_RULES[rule]
    if spec.score == "bic":
        return f"The search ranks kernels by BIC; the returned kernel is the lowest-BIC one of the {k} compared."
    how = spec.how.format(split=f"{split:.0%}")
    text = f"The search ranks kernels by BIC; the returned kernel is, among the {k} lowest-BIC ones, {how}."
    if form_margin < 1.0 and spec.form_margin:
        text += (" A kernel without a level, trend or damped trend of the exponential-smoothing forms wins over "
                 f"the best one with them only when its CRPS is below {form_margin:.0%} of that one's.")
    return text


def horizon_spread(data: FitData, fit: FitResult, horizon: float = 0.1) -> float:
    """Predictive standard deviation ``horizon`` training spans beyond the last input, in data SDs.

    Outputs are standardised in model units, so this is the ratio of the forecast's spread
    to the data's; +inf when it cannot be computed.
    """
    x = data.X.copy()[-1:]
    x[0, 0] = float(data.X[:, 0].max()) + horizon * data.span
    try:
        with np.errstate(all="ignore"):
            post = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise, x,
                             jitter=fit.jitter)
        value = math.sqrt(float(post.var[0]) + fit.noise_variance)
    except NUMERIC_ERRORS:
        return math.inf
    return value if math.isfinite(value) else math.inf


def _forecast_grid(data: FitData, horizon: float) -> np.ndarray:
    """Up to :data:`_GRID_POINTS` inputs spanning ``horizon`` training spans beyond the last input (shape (m, d))."""
    last = data.X[np.argmax(data.X[:, 0])]
    step = data.step if math.isfinite(data.step) and data.step > 0 else data.span / max(data.n - 1, 1)
    m = int(min(_GRID_POINTS, max(1, math.ceil(horizon * data.span / step))))
    grid = np.repeat(last[None, :], m, axis=0)
    grid[:, 0] = last[0] + np.linspace(horizon * data.span / m, horizon * data.span, m)
    return grid


def forecast_reach(data: FitData, fit: FitResult, horizon: float = 0.1) -> float:
    """How far a fit's forecast leaves the range of the training values, in widths of that range.

    The predictive mean (conditioned on every training point, the fitted values) over a grid of ``horizon``
    training spans beyond the last input, its largest distance outside ``[min y, max y]`` divided by
    ``max y − min y``. 0 when it stays inside; +inf when it cannot be computed. A kernel with a pole (a
    division by a linear term that crosses zero past the data) or a high power of a trend scores tens or
    hundreds; a trend carried on at its pace stays about the horizon's share of the range. What the guard of
    the forecast combination asks of the kernel against classical models' intervals, asked of the kernel
    alone (:mod:`evocov_core.forecast.combination`).
    """
    lo, hi = float(np.min(data.y)), float(np.max(data.y))
    width = hi - lo if hi > lo else 1.0
    try:
        with np.errstate(all="ignore"):
            mean = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise,
                             _forecast_grid(data, horizon), jitter=fit.jitter, mean_only=True).mean
    except NUMERIC_ERRORS:
        return math.inf
    if not np.all(np.isfinite(mean)):
        return math.inf
    return float(np.max(np.maximum(0.0, np.maximum(lo - mean, mean - hi)))) / width


def indefiniteness(data: FitData, fit: FitResult, horizon: float = 0.1) -> float:
    """How far a fit's covariance is from positive semi-definite, in units of its noise variance.

    The kernel's covariance over the training inputs and a grid of up to 200 points spanning
    ``horizon`` training spans beyond the last input (at the sampling step) is symmetrised,
    and its most negative eigenvalue is divided by the noise variance (plus jitter). 0 for a
    PSD matrix, +inf when it cannot be computed. Round-off, and kernels whose slightly
    negative directions the noise dominates, stay below :data:`INDEFINITE`: at most 0.0022
    over the 650 candidates of 130 ``quick`` trials (``bench/results/accuracy/quick-reseed/``),
    against 3.8 for the one that forecast nonsense.

    Above :data:`EIG_MAX_POINTS` points (long series), a Cholesky of
    ``K + INDEFINITE·(noise + jitter)·I`` comes first: it succeeds exactly when the most negative
    eigenvalue is above ``−INDEFINITE`` noise variances, and costs a tenth of the eigenvalue;
    then the value itself is not computed and NaN is returned (valid). The eigenvalue is
    computed only when it fails.

    Parameters
    ----------
    data : FitData
        Training inputs ``X`` of shape (n, d), model units.
    fit : FitResult
        A fitted kernel (its ``theta``, ``noise_variance`` and ``jitter``).
    horizon : float
        Length of the forecast grid, in training spans.
    """
    grid = _forecast_grid(data, horizon)
    try:
        with np.errstate(all="ignore"):
            X = np.vstack([data.X, grid])
            # Above EIG_MAX_POINTS no search for distinct lags: the grid is off the data's lattice, so the
            # search would sort every one of the n² lags (0.8 s at 2,200 points) to give up.
            K = covariance(fit.kernel, Inputs(X, toeplitz=X.shape[0] <= EIG_MAX_POINTS), np.asarray(fit.theta))
            K = 0.5 * K + 0.5 * K.T  # halves first: entries near the largest float must not overflow
            if not np.all(np.isfinite(K)):
                return math.inf
            if K.shape[0] > EIG_MAX_POINTS:
                A = np.array(K, order="F")
                np.einsum("ii->i", A)[...] += INDEFINITE * (fit.noise_variance + fit.jitter)
                _, info = lapack.dpotrf(A, lower=1, clean=0, overwrite_a=1)
                if info == 0:
                    return math.nan
            low = float(eigvalsh(K, subset_by_index=[0, 0], check_finite=False)[0])
    except NUMERIC_ERRORS:
        return math.inf
    return max(0.0, -low) / (fit.noise_variance + fit.jitter)


@dataclass(frozen=True)
class ModelChoice:
    """What :func:`choose_model` returns.

    Attributes
    ----------
    chosen : FitResult or None
        The best tail (or origins) score (the lowest BIC when none could be scored); None without
        a candidate.
    rows : tuple of dict
        One per candidate: rank, expression, canonical, statespace (holds a state-space term), q, bic,
        tail_score, tail_rmse, origins_crps, spread_scale, test_rmse, weight, chosen,
        horizon_sd (:func:`horizon_spread`), exploding (above :data:`EXPLODING_SPREAD`),
        indefinite (:func:`indefiniteness`), reach (:func:`forecast_reach`) and valid (not above
        :data:`INDEFINITE`, reach at most :data:`REACH`; the others are neither chosen nor averaged, unless
        no candidate is valid, when all are eligible as before the checks). Empty when there was nothing to
        compare.
    ensemble : tuple of (FitResult, float)
        The model average: kernels with their weights (tail scores; BIC without any).
    calibration : Calibration
        Of the chosen kernel's spread (``rule`` says which was made; ``none`` when no candidate).
    origins : OriginScores or None
        The chosen kernel's forecasts from the origins that calibrated it, when they were out of
        sample (its refits there); None otherwise. What a forecast combination is chosen on
        (:mod:`evocov_core.forecast.combination`).
    """

    chosen: FitResult | None
    rows: tuple[dict, ...] = ()
    ensemble: tuple[tuple[FitResult, float], ...] = ()
    calibration: Calibration = field(default_factory=Calibration)
    origins: OriginScores | None = None


@dataclass(frozen=True)
class _Scored:
    """The candidates' scores under one rule, index-aligned with them.

    ``raw`` ranks them (higher is better); ``weigh`` is the log weight of each in the model average.
    ``valid``: not above :data:`INDEFINITE` (NaN, a Cholesky that proved it within the bound, is valid) and a
    forecast that stays within :data:`REACH` (``reach``, :func:`forecast_reach`).
    """

    heads: list[FitResult | None]
    origins: list[OriginScores | None]
    indefinite: list[float]
    valid: np.ndarray
    raw: np.ndarray
    weigh: np.ndarray
    reach: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class _Refits:
    """How the choice's refits run: through ``executor`` by ``deadline`` (or ``end`` for the
    calibration's), each at most ``refit`` (``refit_cost`` seconds), stopped by ``should_stop``."""

    executor: Executor
    seed: int
    deadline: float | None
    should_stop: StopCheck | None
    refit: OptimConfig | None
    end: float | None
    refit_cost: float


def choose_model(data: FitData, candidates: Sequence[FitResult], executor: Executor, *, seed: int,
                 deadline: float | None = None, should_stop: StopCheck | None = None, rule: str = "tail",
                 calibration: str = "none", refit: OptimConfig | None = None, end: float | None = None,
                 refit_cost: float = 0.0, form_margin: float = 1.0) -> ModelChoice:
    """Choose among ``candidates`` (lowest BIC first) by their tail score, or by their forecasts
    from several origins; calibrate the chosen kernel's predictive spread.

    Parameters
    ----------
    data : FitData
        The search's training data (with its train-train/train-test split).
    candidates : sequence of FitResult
        Distinct kernels, lowest BIC first.
    executor : Executor
        With the ``head`` stage (:func:`~evocov_core.searches.stages.search_stages`).
    seed : int
    deadline : float, optional
        Wall-clock time by which the refits stop.
    should_stop : callable, optional
    rule : str
        A key of :data:`CHOICE_RULES`:
        ``tail``: the refit on the head scored on the tail (module docstring; on a long series by
        the tail's marginal densities, :func:`tail_score`). ``origins``: the
        lowest mean CRPS of the forecasts from the origins of
        :func:`~evocov_core.searches.validate.origin_scores` (full-data values, no refit); the
        model average is weighted by the likelihood of those forecasts. ``refit_origins``: the
        same, each candidate refitted at each origin first (the executor's ``origin:…``
        stages, :func:`~evocov_core.searches.stages.search_stages`), so that every forecast is
        out of sample; the chosen kernel's spread is calibrated on those forecasts' errors
        (``calibration="origins"`` then costs no further fit). On data fitted on a subset (a
        long series, where a refit costs seconds) it is ``tail``. ``origins_density``: as ``origins``,
        scored by the summed log predictive density of those forecasts (the model average's weights)
        instead of their CRPS. ``bic``: the lowest BIC (the model average weighted by BIC). On data
        fitted on a subset, ``origins``, ``origins_density`` and ``bic`` calibrate the
        chosen kernel's spread, whatever ``calibration`` asks, by its forecasts from the origins
        with its fitted values (no refit there: the errors are partly in sample).
    calibration : {"none", "tail", "origins"}
        How the chosen kernel's spread is calibrated (:func:`calibrate`):
        ``tail`` reuses its head refit (with ``rule="tail"``), ``origins`` refits it with ``refit``
        at four origins (on the executor's origin stages when it has them), or falls back to ``tail``
        when less than half of their estimated seconds is left before ``end`` (wall-clock time):
        ``refit_cost`` (one refit at its cap of evaluations) scaled by the evaluations the head
        refits took, times the rounds of refits (:func:`calibrate_returned`).
    refit, end, refit_cost : optional
        See ``calibration``.
    form_margin : float
        With ``rule`` ``origins`` or ``refit_origins``: a chosen kernel without a state-space term
        (:func:`~evocov_core.language.grammar.has_statespace`: the exponential-smoothing seeds' level,
        trend and damped trend, and kernels evolved from them) is returned only when its mean CRPS is
        below ``form_margin`` times that of the best eligible candidate with one; else that candidate
        is. 1 (the default): no preference.

    Returns
    -------
    ModelChoice
        The chosen kernel, the candidates' rows, the model average and the chosen kernel's
        calibration (see its attributes).
    """
    if rule not in CHOICE_RULES:
        raise ValueError(f"rule must be one of {', '.join(CHOICE_RULES)}, got {rule!r}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}")
    cands = [f for f in candidates if f is not None and f.ok]
    if not cands:
        return ModelChoice(None)
    run = _Refits(executor, seed, deadline, should_stop, refit, end, refit_cost)
    windows = origin_windows(data) if CHOICE_RULES[rule].refits == "origins" else ()
    if CHOICE_RULES[rule].refits == "origins" and (data.on_subset or not windows):
        rule = "tail"  # a refit at the origins costs seconds on a subset, and needs origins
    spec = CHOICE_RULES[rule]
    stages = executor.stages
    if spec.refits == "origins" and any(origin_stage(o) not in stages for o, _, _ in windows):
        raise ValueError("choice='refit_origins' needs an executor with the origin stages: make it with "
                         "search_executor(data, config) or pass search_stages(data, config)")
    if len(cands) == 1 or data.split is None or (spec.refits == "head" and "head" not in stages):
        calib, scored = calibrate_returned(data, cands[0], None, calibration, refit, seed, end, refit_cost,
                                           executor, should_stop)
        return ModelChoice(cands[0], calibration=calib, origins=scored)
    if not 0.0 < form_margin <= 1.0:
        raise ValueError(f"form_margin must be in (0, 1], got {form_margin!r}")
    sc = _score(data, cands, spec, windows, run)
    best, weights = _pick(cands, sc, form_margin if spec.form_margin else 1.0)
    ensemble = tuple((f, float(w)) for f, w in zip(cands, weights, strict=True) if w >= MIN_WEIGHT)
    total = sum(w for _, w in ensemble)
    rows = _rows(data, cands, sc, weights, best, spec)
    calib, scored = _calibrate_chosen(data, cands, sc, best, spec, calibration, run)
    return ModelChoice(cands[best], rows, tuple((f, w / total) for f, w in ensemble), calib, scored)


def _score(data: FitData, cands: list[FitResult], spec: ChoiceRule, windows: Sequence[OriginWindow],
           run: _Refits) -> _Scored:
    """Refit the candidates as the rule needs (on the head, or at each origin) and score them."""
    heads: list[FitResult | None] = [None] * len(cands)
    origins: list[OriginScores | None] = [None] * len(cands)
    if spec.refits == "head":
        tasks = [Task(f.kernel.tokens, (run.seed, 7919, i), f.start(), stage="head", deadline=run.deadline)
                 for i, f in enumerate(cands)]
        heads = run.executor.map(tasks, run.should_stop)
    indef = [indefiniteness(data, f) for f in cands]
    reach = [forecast_reach(data, f, data.split_fraction) for f in cands]
    # NaN indefiniteness: a Cholesky proved it within the bound.
    valid = np.array([not v > INDEFINITE and r <= REACH for v, r in zip(indef, reach, strict=True)])
    if spec.refits == "origins":
        m = len(windows)
        tasks = [Task(f.kernel.tokens, (run.seed, 7937, i, j), f.start(), stage=origin_stage(o),
                      deadline=run.deadline)
                 for i, f in enumerate(cands) for j, (o, _, _) in enumerate(windows)]
        refits = run.executor.map(tasks, run.should_stop)
        origins = [origin_scores(data, f, refits=refits[i * m:(i + 1) * m]) for i, f in enumerate(cands)]
    elif spec.score in ("crps", "density"):
        origins = [origin_scores(data, f) for f in cands]
    # Higher is better for every score, as the tail score is.
    scores = {
        "tail": lambda: np.array([tail_score(data, h, marginal=data.on_subset) for h in heads]),
        "bic": lambda: np.array([-f.bic if math.isfinite(f.bic) else -math.inf for f in cands]),
        "crps": lambda: np.array([-o.mean_crps for o in origins]),  # type: ignore[union-attr]
        "density": lambda: np.array([o.total_log_density for o in origins]),  # type: ignore[union-attr]
    }
    raw = scores[spec.score]()
    weigh = raw if spec.weigh == spec.score else scores[spec.weigh]()
    if spec.weigh == "bic":
        weigh = weigh / 2.0  # BIC weights: exp(−BIC/2)
    return _Scored(heads, origins, indef, valid, raw, weigh, reach)


def _pick(cands: list[FitResult], sc: _Scored, form_margin: float = 1.0) -> tuple[int, np.ndarray]:
    """The index of the best eligible candidate and the model average's weights.

    ``form_margin`` < 1 (``raw`` a minus CRPS): the best candidate with a state-space term instead of
    a better one without, unless that one's CRPS is below ``form_margin`` times its own."""
    eligible = sc.valid if sc.valid.any() else np.ones_like(sc.valid)  # none valid: choose among all, as before
    scores = np.where(eligible, sc.raw, -np.inf)
    if np.isfinite(scores).any():
        best = int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))
        if form_margin < 1.0 and not has_statespace(cands[best].kernel.tokens):
            forms = np.array([has_statespace(f.kernel.tokens) for f in cands]) & np.isfinite(scores)
            # The forms forecast as exponential smoothing does; an evolved kernel must be clearly ahead.
            if forms.any():
                form = int(np.argmax(np.where(forms, scores, -np.inf)))
                if not -scores[best] < form_margin * -scores[form]:
                    best = form
        try:
            weights = score_weights(np.where(eligible, sc.weigh, -np.inf))
        except ValueError:  # no finite likelihood of the origins' forecasts: weigh by the scores
            weights = score_weights(scores)
    else:
        best = int(np.argmax(eligible))  # the lowest eligible BIC
        weights = bic_weights([f.bic if ok else math.inf for f, ok in zip(cands, eligible, strict=True)])
    return best, weights


def _rows(data: FitData, cands: list[FitResult], sc: _Scored, weights: np.ndarray, best: int,
          spec: ChoiceRule) -> tuple[dict, ...]:
    """One row per candidate (:attr:`ModelChoice.rows`)."""
    spreads = [horizon_spread(data, f) for f in cands]
    heads, origins = sc.heads, sc.origins
    return tuple({
        "rank": i + 1,
        "expression": f.kernel.infix,
        "canonical": f.kernel.canonical,
        "statespace": has_statespace(f.kernel.tokens),
        "q": f.q,
        "bic": f.bic,
        "tail_score": float(sc.raw[i]) if spec.score == "tail" else math.nan,
        "tail_rmse": heads[i].test_rmse if heads[i] is not None else None,  # type: ignore[union-attr]
        "origins_crps": origins[i].mean_crps if origins[i] is not None else math.nan,  # type: ignore[union-attr]
        "spread_scale": spread_scale(origins[i].z) if origins[i] is not None else math.nan,  # type: ignore[union-attr]
        "test_rmse": f.test_rmse,
        "weight": float(weights[i]),
        "chosen": i == best,
        "horizon_sd": spreads[i],
        "exploding": spreads[i] > EXPLODING_SPREAD,
        "indefinite": float(sc.indefinite[i]),
        "reach": float(sc.reach[i]) if sc.reach else math.nan,
        "valid": bool(sc.valid[i]),
    } for i, f in enumerate(cands))


def _calibrate_chosen(data: FitData, cands: list[FitResult], sc: _Scored, best: int, spec: ChoiceRule,
                      calibration: str, run: _Refits) -> tuple[Calibration, OriginScores | None]:
    """Calibrate the chosen kernel's spread, reusing what the choice computed where it can."""
    origins = sc.origins
    if spec.refits == "origins" and calibration == "origins":
        return calibration_from_errors(origins[best].z, "origins"), origins[best]  # type: ignore[union-attr]
    if spec.fitted_calibration and data.on_subset and calibration != "none":
        # A refit costs seconds here: the origins' forecasts with the fitted values.
        z = (origins[best] or origin_scores(data, cands[best])).z
        return calibration_from_errors(z, "origins_fitted"), None
    # The head refits are the same kind of fit as the origins' (one L-BFGS-B run from the full-data
    # values on most of the points): the evaluations they took estimate the origins' better than
    # the cap does.
    refit_cost = run.refit_cost
    evals = [h.n_evals for h in sc.heads if h is not None and h.ok and h.n_evals > 0]
    if evals and run.refit is not None:
        refit_cost *= min(1.0, float(np.median(evals)) / run.refit.max_evals)
    calib, scored = calibrate_returned(data, cands[best], sc.heads[best], calibration, run.refit, run.seed, run.end,
                                       refit_cost, run.executor, run.should_stop)
    if calib.rule == "none" and calibration != "none" and origins[best] is not None:
        # No time left for the refits and no head refit to fall back on (the choice of origins makes none):
        # the origins' forecasts the choice scored, with the fitted values, rather than no calibration.
        return calibration_from_errors(origins[best].z, "origins_fitted"), None  # type: ignore[union-attr]
    return calib, scored


def calibrate(data: FitData, fit: FitResult, rule: str, *, head_fit: FitResult | None = None,
              refit: OptimConfig | None = None, seed: Sequence[int] = (0,),
              deadline: float | None = None) -> Calibration:
    """:func:`calibrate_scored`'s calibration alone."""
    return calibrate_scored(data, fit, rule, head_fit=head_fit, refit=refit, seed=seed, deadline=deadline)[0]


def calibrate_scored(data: FitData, fit: FitResult, rule: str, *, head_fit: FitResult | None = None,
                     refit: OptimConfig | None = None, seed: Sequence[int] = (0,),
                     deadline: float | None = None) -> tuple[Calibration, OriginScores | None]:
    """Learn the factor on ``fit``'s predictive spread from its out-of-sample forecast errors.

    ``tail``: the kernel refitted on the head of the training range (``head_fit``, the model
    choice's refit: no extra fit) forecasts the tail. ``origins``: refitted (``refit``) at each
    of :data:`DEFAULT_ORIGINS`, it forecasts the next tenth of the range; errors pooled. The
    factor is :func:`rms_scale` of the standardised errors. Evidence (the development corpus and
    TSDL, ``bench/bench_calibration.py``): the GP's own 95 % intervals cover 87 % of the
    corpus' test points; learned from the origins, 94 %.

    Parameters
    ----------
    data : FitData
        The training data ``fit`` was fitted on (model units).
    fit : FitResult
    rule : {"none", "tail", "origins"}
    head_fit : FitResult, optional
        ``fit``'s kernel refitted on the head (``tail``; without it, no calibration).
    refit : OptimConfig, optional
        The origins' refits (``origins``; without it, the full-data values: errors in sample).
    seed : sequence of int
    deadline : float, optional
        Wall-clock time by which the origins' refits stop.

    Returns
    -------
    calibration : Calibration
        Never raises for numerical reasons (a forecast that fails adds no errors).
    scores : OriginScores or None
        With ``origins``, the forecasts from the origins the factor was learned from (out of sample
        when ``refit`` is given): what a forecast combination is chosen on.
    """
    if rule not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {rule!r}")
    if rule == "none" or not fit.ok:
        return Calibration(), None
    if rule == "tail":
        if head_fit is None or not head_fit.ok or data.split is None:
            return Calibration(), None
        return calibration_from_errors(tail_errors(data, head_fit), rule), None
    scores = origin_scores(data, fit, refit=refit, seed=seed, deadline=deadline)
    return calibration_from_errors(scores.z, rule), scores


def calibrate_returned(data: FitData, fit: FitResult, head_fit: FitResult | None, calibration: str,
                       refit: OptimConfig | None, seed: int, end: float | None, refit_cost: float,
                       executor: Executor | None = None, should_stop: StopCheck | None = None
                       ) -> tuple[Calibration, OriginScores | None]:
    """:func:`calibrate_scored` for the kernel a search returns.

    ``origins`` refits the kernel at each origin, through ``executor`` when it has the origin
    stages (:func:`~evocov_core.searches.stages.needs_origin_stages`: the refits run in parallel
    on its workers, each stopped at ``end``, and a replay repeats them), else one after another
    in this process. It falls back to ``tail`` (``head_fit``, the model choice's refit, when there
    is one) when less than half of the refits' estimated seconds (``refit_cost`` seconds per refit,
    times one round per worker or, in this process, one per origin) is left before ``end``
    (wall-clock time), or when none was made (a cancelled run, or a replay of a run that fell back).
    """
    n = len(DEFAULT_ORIGINS)
    rounds = math.ceil(n / max(1, executor.workers)) if executor is not None and has_origin_stages(executor) else n
    # The estimate counts every refit at its cap of evaluations and each stops at ``end`` with what it
    # has: half of it left is enough for refits that move most of the way from the full-data values.
    left = math.inf if end is None else end - time.time()
    if calibration == "origins" and (refit is None or 0.5 * rounds * refit_cost > left):
        calibration = "tail"
    windows = origin_windows(data) if calibration == "origins" and executor is not None else ()
    stages = executor.stages if executor is not None else frozenset()
    if not windows or any(origin_stage(o) not in stages for o, _, _ in windows):
        return calibrate_scored(data, fit, calibration, head_fit=head_fit, refit=refit, seed=(seed, 7927),
                                deadline=end)
    tasks = [Task(fit.kernel.tokens, (seed, 7927, j), fit.start(), stage=origin_stage(o), deadline=end)
             for j, (o, _, _) in enumerate(windows)]
    refits = executor.map(tasks, should_stop)
    if not any(r is not None for r in refits):
        return calibrate_scored(data, fit, "tail", head_fit=head_fit)
    scores = origin_scores(data, fit, refits=refits)
    return calibration_from_errors(scores.z, "origins"), scores
