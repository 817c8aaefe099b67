"""Which kernel a search returns: the one that best predicts the end of the training range.

BIC ranks kernels during the search (the paper's fitness) but rewards fit to the training
range, not extrapolation. So, with ``select_top = K > 1``, the K lowest-BIC distinct
kernels of a run are each refitted on the first ``1 − metric_split`` of the training
x-range (the *head*; one L-BFGS-B run from their full-data values) and scored by the
posterior log-likelihood of the held-out last part (the *tail*) given the head: the same
question the user asks of the forecast, asked of data the search has. The best tail
score is returned (refitted on all the training data, as found by the search); the test
part is never used. The scores also weight a Bayesian model average of the K kernels
(:mod:`evocov_core.averaging`), offered beside the single kernel.

Each candidate is also checked for a predictive variance that explodes over the forecast
horizon (:func:`horizon_spread`): its standard deviation one tenth of the training span
beyond the data, in units of the data's standard deviation, is reported and flagged above
:data:`EXPLODING_SPREAD` (flagged, not penalised: the tail score already pays for such a
forecast through its log-determinant).

Evidence: ``bench/results/bench_select.md`` (post hoc, 39 quick runs: lower test RMSE in
17, higher in 12, geometric-mean RMSE ratio 0.85 for K = 5) and
``bench/results/accuracy/`` (``variant=no-select``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..averaging import bic_weights, score_weights
from ..gp import NumericalFailure, posterior
from ..metrics import FitData, metric_value
from ..optimize import FitResult
from ..parallel import Executor, Task
from .common import StopCheck

__all__ = ["EXPLODING_SPREAD", "choose_model", "horizon_spread", "tail_score"]

#: Kernels with less than this weight are left out of the model average.
MIN_WEIGHT = 1e-4
#: A forecast standard deviation above this many data standard deviations is flagged.
EXPLODING_SPREAD = 3.0
_NUMERIC = (NumericalFailure, FloatingPointError, ArithmeticError, np.linalg.LinAlgError)


def tail_score(data: FitData, head_fit: FitResult | None) -> float:
    """Posterior LML of the tail given the head at the head fit's values (−inf if it fails)."""
    if head_fit is None or not head_fit.ok or data.split is None:
        return -math.inf
    try:
        with np.errstate(all="ignore"):
            value = metric_value("posterior_lml", head_fit.kernel, data, head_fit.z)
    except _NUMERIC:
        return -math.inf
    return value if math.isfinite(value) else -math.inf


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
    except _NUMERIC:
        return math.inf
    return value if math.isfinite(value) else math.inf


def choose_model(data: FitData, candidates: Sequence[FitResult], executor: Executor, *, seed: int,
                 deadline: float | None = None, should_stop: StopCheck | None = None
                 ) -> tuple[FitResult | None, tuple[dict, ...], tuple[tuple[FitResult, float], ...]]:
    """Choose among ``candidates`` (lowest BIC first) by their tail score.

    Parameters
    ----------
    data : FitData
        The search's training data (with its train-train/train-test split).
    candidates : sequence of FitResult
        Distinct kernels, lowest BIC first.
    executor : Executor
        With the ``head`` stage (:func:`~evocov_core.search.stages.search_stages`).
    seed : int
    deadline : float, optional
        Wall-clock time by which the refits stop.
    should_stop : callable, optional

    Returns
    -------
    chosen : FitResult or None
        The best tail score (the lowest BIC when no refit could be scored).
    rows : tuple of dict
        One per candidate: rank, expression, q, bic, tail_score, tail_rmse, weight, chosen,
        horizon_sd (:func:`horizon_spread`) and exploding (above :data:`EXPLODING_SPREAD`).
    ensemble : tuple of (FitResult, float)
        The model average: kernels with their weights (tail scores; BIC without any).
    """
    cands = [f for f in candidates if f is not None and f.ok]
    if not cands:
        return None, (), ()
    if len(cands) == 1 or data.split is None or "head" not in getattr(executor, "stages", ()):
        return cands[0], (), ()
    tasks = [Task(f.kernel.tokens, (seed, 7919, i), f.start(), stage="head", deadline=deadline)
             for i, f in enumerate(cands)]
    heads = executor.map(tasks, should_stop)
    scores = np.array([tail_score(data, h) for h in heads])
    if np.isfinite(scores).any():
        best = int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))
        weights = score_weights(scores)
    else:
        best = 0
        weights = bic_weights([f.bic for f in cands])
    spreads = [horizon_spread(data, f) for f in cands]
    rows = tuple({
        "rank": i + 1,
        "expression": f.kernel.infix,
        "canonical": f.kernel.canonical,
        "q": f.q,
        "bic": f.bic,
        "tail_score": float(scores[i]),
        "tail_rmse": heads[i].test_rmse if heads[i] is not None else None,
        "test_rmse": f.test_rmse,
        "weight": float(weights[i]),
        "chosen": i == best,
        "horizon_sd": spreads[i],
        "exploding": spreads[i] > EXPLODING_SPREAD,
    } for i, f in enumerate(cands))
    ensemble = tuple((f, float(w)) for f, w in zip(cands, weights, strict=True) if w >= MIN_WEIGHT)
    total = sum(w for _, w in ensemble)
    return cands[best], rows, tuple((f, w / total) for f, w in ensemble)
