"""Bayesian model averaging of fitted kernels: a predictive mixture.

For kernels ``k = 1..K`` with predictive means ``μ_k`` and variances ``v_k`` at the same
inputs and weights ``w_k`` (summing to 1), the mixture ``Σ_k w_k N(μ_k, v_k)`` has

    mean      μ = Σ_k w_k μ_k
    variance  v = Σ_k w_k (v_k + μ_k²) − μ²

Weights come from BIC (``w_k ∝ exp(−BIC_k/2)``, the usual approximation of the model
evidence) or from a validation score in log-likelihood units (``w_k ∝ exp(s_k)``, e.g.
the posterior LML of a held-out tail).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import FitResult

__all__ = ["bic_weights", "ensemble_predict", "ensemble_test_rmse", "mixture", "score_weights"]

Array = NDArray[np.float64]


def _normalise(log_w: Array) -> Array:
    log_w = np.asarray(log_w, dtype=np.float64)
    finite = np.isfinite(log_w)
    if not finite.any():
        raise ValueError("no finite weight: nothing to average")
    w = np.zeros_like(log_w)
    w[finite] = np.exp(log_w[finite] - log_w[finite].max())
    return w / w.sum()


def score_weights(scores: ArrayLike) -> Array:
    """Weights ``∝ exp(score)`` for scores in log-likelihood units (−inf gets 0)."""
    return _normalise(np.asarray(scores, dtype=np.float64))


def bic_weights(bics: ArrayLike) -> Array:
    """Weights ``∝ exp(−BIC/2)`` (+inf gets 0)."""
    return _normalise(-0.5 * np.asarray(bics, dtype=np.float64))


def mixture(means: ArrayLike, variances: ArrayLike, weights: ArrayLike) -> tuple[Array, Array]:
    """Mean and variance of a Gaussian mixture, pointwise.

    Parameters
    ----------
    means, variances : array_like of shape (K, m)
    weights : array_like of shape (K,)
        Non-negative, summing to 1.

    Returns
    -------
    mean, variance : ndarray of shape (m,)
    """
    mu = np.atleast_2d(np.asarray(means, dtype=np.float64))
    var = np.atleast_2d(np.asarray(variances, dtype=np.float64))
    w = np.asarray(weights, dtype=np.float64)
    if mu.shape != var.shape or w.shape != (mu.shape[0],):
        raise ValueError(f"shapes differ: means {mu.shape}, variances {var.shape}, weights {w.shape}")
    if np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):
        raise ValueError("weights must be non-negative and sum to 1")
    mean = w @ mu
    second = w @ (var + mu * mu)
    return mean, np.clip(second - mean * mean, 0.0, None)


def ensemble_predict(data: FitData, ensemble: Sequence[tuple[FitResult, float]], X_new: ArrayLike,
                     *, with_noise: bool = True) -> tuple[Array, Array]:
    """Predictive mean and variance of the mixture at ``X_new`` (model units).

    Parameters
    ----------
    data : FitData
        The training data the fits were made on.
    ensemble : sequence of (FitResult, weight)
    X_new : array_like of shape (m, d)
    with_noise : bool
        Add each kernel's noise variance (a new observation rather than the latent f).

    Returns
    -------
    mean, variance : ndarray of shape (m,), model units
    """
    X_new = np.asarray(X_new, dtype=np.float64).reshape(-1, data.X.shape[1])
    means, variances, weights = [], [], []
    for fit, w in ensemble:
        if w <= 0:
            continue
        post = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise, X_new,
                         jitter=fit.jitter)
        means.append(post.mean)
        variances.append(post.var + (fit.noise_variance if with_noise else 0.0))
        weights.append(w)
    if not weights:
        raise ValueError("the ensemble is empty")
    w = np.asarray(weights)
    return mixture(means, variances, w / w.sum())


def ensemble_test_rmse(data: FitData, ensemble: Sequence[tuple[FitResult, float]]) -> float | None:
    """Test RMSE (original units) of the mixture's mean; None without test data or ensemble."""
    if not ensemble or data.X_test is None or data.y_test is None or not len(data.y_test):
        return None
    # The mixture's mean is the weighted mean of the members' means: no variances needed.
    X_test = np.asarray(data.X_test, dtype=np.float64).reshape(-1, data.X.shape[1])
    used = [(fit, w) for fit, w in ensemble if w > 0]
    if not used:
        raise ValueError("the ensemble is empty")
    w = np.asarray([w for _, w in used])
    means = [posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise, X_test,
                       jitter=fit.jitter, mean_only=True).mean for fit, _ in used]
    with np.errstate(over="ignore", invalid="ignore"):
        mean = (w / w.sum()) @ np.atleast_2d(np.asarray(means, dtype=np.float64))  # as mixture() computes it
    value = rmse(data.y_test, mean * data.y_std + data.y_mean)
    return value if math.isfinite(value) else None
