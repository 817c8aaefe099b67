"""A fitted model in original units: kernel + values + normalisation -> predictions.

:class:`FittedModel` is what a kernel file describes and what the dashboard draws:
given the training data (original units) it predicts mean and standard deviation at
any inputs, in original units, with exactly the matrix that was scored (same noise,
same jitter, same normalisation).

:class:`ModelAverage` is a Bayesian model average of several of them (the mixture of
their predictive distributions, :func:`evocov_core.fitting.averaging.mixture`), with the same
``predict`` / ``predict_dataset`` / ``test_rmse`` interface, so the dashboard draws
it like a single model.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.data.dataset import Dataset, Normalisation
from evocov_core.fitting.averaging import mixture
from evocov_core.fitting.gp import Factor, condition, posterior, predict_conditioned
from evocov_core.fitting.metrics import rmse
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, DataSubset, plan_subset
from evocov_core.language.evaluate import Inputs
from evocov_core.language.kernel import Kernel

__all__ = ["FittedModel", "ModelAverage", "Prediction", "average_weights",
           "shared_posteriors"]

Array = NDArray[np.float64]


# --- one factorisation per model and training data, inside shared_posteriors() ---------------------

#: The cache of the innermost :func:`shared_posteriors` block (None: outside every block).
_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("evocov_shared_posteriors", default=None)


@contextlib.contextmanager
def shared_posteriors() -> Iterator[None]:
    """Within this block, :class:`FittedModel` predictions from the same training data share their work.

    A report predicts with one model many times from the same training points: its test RMSE,
    its forecast of the test part with variances, its curve, its residuals. Each
    :func:`~evocov_core.fitting.gp.posterior` builds the training covariance (and its lag tables) and
    factorises it again: on the 2,000 conditioning points of a long series 0.3-0.5 s each
    time. Here the training :class:`~evocov_core.language.evaluate.Inputs` (per training x), the
    Cholesky factor and ``α = K_y⁻¹ y`` (per model and training data) are computed once, and
    the mean and variance at the same new inputs are computed once; the numbers are the same
    as without the block (the same operations on the same matrices). Keys hold a digest of
    every array, so different data never share. The cache lives until the block ends (it holds
    an n × n factor per model: the report's three GPs on 2,000 points, about 100 MB) and
    belongs to the running context (thread), so concurrent pages never share it. Nested
    blocks share the outer cache.
    """
    outer = _SHARED.get()
    token = _SHARED.set({} if outer is None else outer)
    try:
        yield
    finally:
        _SHARED.reset(token)


def _digest(a: Array) -> str:
    a = np.ascontiguousarray(a)
    return f"{a.shape}:{hashlib.blake2b(a.view(np.uint8), digest_size=16).hexdigest()}"


@dataclass
class _Conditioned:
    """What every prediction of one model from one training set shares (model units)."""

    inputs: Inputs
    factor: Factor
    alpha: Array
    #: digest of X_new (model units) -> (mean, latent variance or None)
    at: dict[str, tuple[Array, Array | None]]

    def posterior(self, kernel: Kernel, theta: Array, X_new: Array, *, mean_only: bool
                  ) -> tuple[Array, Array | None]:
        """Mean and latent variance at ``X_new`` (m, d) (None with ``mean_only``) from the shared
        factor (:func:`~evocov_core.fitting.gp.predict_conditioned`), each answer kept for the next call at
        the same inputs."""
        key = _digest(X_new)
        done = self.at.get(key)
        if done is not None and (mean_only or done[1] is not None):
            return done
        post = predict_conditioned(kernel, self.inputs, self.factor, self.alpha, theta, X_new, mean_only=mean_only)
        self.at[key] = (post.mean, None if mean_only else post.var)
        return self.at[key]


@dataclass(frozen=True)
class Prediction:
    """Predictive distribution in original units.

    Attributes
    ----------
    x : ndarray of shape (m, d)
    mean : ndarray of shape (m,)
    std : ndarray of shape (m,)
        Standard deviation of a new observation (latent variance + noise).
    std_f : ndarray of shape (m,)
        Standard deviation of the latent function.
    """

    x: Array
    mean: Array
    std: Array
    std_f: Array


class _PredictsDatasets:
    """``predict_dataset`` and ``test_rmse`` for anything with ``predict(X_train, y_train, X_new)``."""

    def predict(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Prediction:
        raise NotImplementedError

    def predict_mean(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Array:
        """The predictive mean alone, shape (m,): what a test RMSE needs (no variances to compute)."""
        return self.predict(X_train, y_train, X_new).mean

    def predict_dataset(self, ds: Dataset, X_new: ArrayLike | None = None) -> Prediction:
        """Predict at ``X_new`` (default: the test part) from the data set's training part."""
        X = ds.X_test if X_new is None else X_new
        return self.predict(ds.X_train, ds.y_train, X)

    def test_rmse(self, ds: Dataset) -> float | None:
        """RMSE of the predictive (or mixture) mean on the data set's test part (original units).

        Only the mean is computed: on a long test part (10,000 points of a 100,000-point series)
        the variances would cost O(m²) per point for nothing.
        """
        if ds.n_test == 0:
            return None
        return rmse(ds.y_test, self.predict_mean(ds.X_train, ds.y_train, ds.X_test))


@dataclass(frozen=True)
class FittedModel(_PredictsDatasets):
    """Kernel, log slot values, log noise, jitter and the normalisation they live in."""

    kernel: Kernel
    theta: tuple[float, ...]
    log_noise: float
    jitter: float
    norm: Normalisation
    #: The training points it was fitted on (:mod:`evocov_core.fitting.subset`); None: unknown, at most
    #: :data:`~evocov_core.fitting.subset.DEFAULT_MAX_POINTS` of them.
    approximation: DataSubset | None = None
    #: Factor on every predictive standard deviation (:mod:`evocov_core.fitting.calibration`; 1: the GP's own).
    spread: float = 1.0

    @classmethod
    def from_fit(cls, fit: FitResult, norm: Normalisation, n_train: int | None = None,
                 spread: float = 1.0) -> FittedModel:
        """From a fit; ``n_train``: the training points of the data it was fitted on (``fit.n`` of them);
        ``spread``: the search's calibration of it
        (:attr:`evocov_core.searches.SearchResult.calibration`)."""
        if not fit.ok:
            raise ValueError(f"this kernel has no fitted values ({fit.reason})")
        approx = plan_subset(n_train, fit.n if 0 < fit.n < n_train else 0) if n_train is not None else None
        return cls(fit.kernel, tuple(fit.theta), fit.log_noise, fit.jitter, norm, approx, spread)

    def conditioning(self, X_train: ArrayLike) -> NDArray[np.bool_]:
        """Which of the training points (original units) a prediction conditions on.

        The same rule as the fit (:meth:`DataSubset.mask`): every point, or on a long series
        the subset the kernel was fitted on.

        Parameters
        ----------
        X_train : array_like of shape (n, d) or (n,)
        """
        X = np.asarray(X_train, dtype=np.float64)
        x = X[:, 0] if X.ndim == 2 else X
        a = self.approximation
        limit = DEFAULT_MAX_POINTS if a is None else (0 if a.exact else a.n_used)
        return plan_subset(x.shape[0], limit).mask(x)

    def _shared(self, X_train: ArrayLike, y_train: ArrayLike) -> _Conditioned | None:
        """The shared factorisation of this model on these training data, inside :func:`shared_posteriors`."""
        cache = _SHARED.get()
        if cache is None:
            return None
        keep = self.conditioning(X_train)
        Xt = self.norm.x_to_model(X_train)[keep]
        yt = self.norm.y_to_model(y_train)[keep]
        xkey = ("inputs", _digest(Xt))
        key = ("model", self.kernel.prefix, self.theta, self.log_noise, self.jitter, xkey[1], _digest(yt))
        hit = cache.get(key)
        if hit is None:
            inputs = cache.get(xkey)
            if inputs is None:
                inputs = cache[xkey] = Inputs(Xt)
            f, alpha = condition(self.kernel, inputs, yt, np.asarray(self.theta), self.log_noise, jitter=self.jitter)
            hit = cache[key] = _Conditioned(inputs, f, alpha, {})
        return hit

    def predict(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Prediction:
        """Posterior at ``X_new`` given training data, all in original units.

        Parameters
        ----------
        X_train : array_like of shape (n, d) or (n,)
        y_train : array_like of shape (n,)
        X_new : array_like of shape (m, d) or (m,)
        """
        Xn = self.norm.x_to_model(X_new)
        shared = self._shared(X_train, y_train)
        if shared is not None:
            m, v = shared.posterior(self.kernel, np.asarray(self.theta), Xn, mean_only=False)
        else:
            keep = self.conditioning(X_train)
            post = posterior(self.kernel, Inputs(self.norm.x_to_model(X_train)[keep]),
                             self.norm.y_to_model(y_train)[keep], np.asarray(self.theta), self.log_noise, Xn,
                             jitter=self.jitter)
            m, v = post.mean, post.var
        noise = math.exp(self.log_noise) + self.jitter
        mean = self.norm.y_from_model(m)
        # The calibration scales kernel and noise alike: same mean, variances times spread².
        std_f = self.norm.std_from_model(self.spread * np.sqrt(v))
        std = self.norm.std_from_model(self.spread * np.sqrt(v + noise))
        X_out = np.asarray(X_new, dtype=np.float64)
        return Prediction(X_out if X_out.ndim == 2 else X_out[:, None], mean, std, std_f)

    def predict_mean(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Array:
        """The posterior mean of :meth:`predict` without its variances, shape (m,), original units."""
        shared = self._shared(X_train, y_train)
        if shared is not None:
            Xn = self.norm.x_to_model(X_new)
            m, _ = shared.posterior(self.kernel, np.asarray(self.theta), Xn, mean_only=True)
            return self.norm.y_from_model(m)
        keep = self.conditioning(X_train)
        post = posterior(self.kernel, Inputs(self.norm.x_to_model(X_train)[keep]),
                         self.norm.y_to_model(y_train)[keep], np.asarray(self.theta), self.log_noise,
                         self.norm.x_to_model(X_new), jitter=self.jitter, mean_only=True)
        return self.norm.y_from_model(post.mean)



# --- Bayesian model average --------------------------------------------------------------------


def average_weights(weights: ArrayLike, n: int | None = None) -> Array:
    """Model-average weights, checked and normalised to sum 1.

    Weights that do not sum to 1 (stored weights are filtered and rounded) are divided by
    their sum; negative, non-finite or all-zero weights are refused.

    Parameters
    ----------
    weights : array_like of shape (K,)
    n : int, optional
        The number of models the weights are for (checked when given).

    Returns
    -------
    ndarray of shape (K,)

    Raises
    ------
    ValueError
        With a message saying which weight is wrong.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or not len(w):
        raise ValueError(f"model-average weights must be a non-empty list of numbers, got shape {w.shape}")
    if n is not None and len(w) != n:
        raise ValueError(f"{len(w)} weights for {n} kernels")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"model-average weight {i + 1} is {float(w[i])}: weights must be finite and >= 0")
    total = float(w.sum())
    if total <= 0:
        raise ValueError("model-average weights are all zero: nothing to average")
    return w / total


@dataclass(frozen=True)
class ModelAverage(_PredictsDatasets):
    """A Bayesian model average: the Gaussian mixture ``Σ_k w_k N(μ_k, σ_k²)`` of fitted models.

    Attributes
    ----------
    members : tuple of FittedModel
        K models, each with its own values and normalisation.
    weights : tuple of float
        K non-negative weights summing to 1 (normalised on construction, see
        :func:`average_weights`).
    """

    members: tuple[FittedModel, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("a model average needs at least one kernel")
        w = average_weights(self.weights, len(self.members))
        object.__setattr__(self, "members", tuple(self.members))
        object.__setattr__(self, "weights", tuple(float(v) for v in w))

    @property
    def k(self) -> int:
        """The number of kernels."""
        return len(self.members)

    def predict(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Prediction:
        """Mixture mean and standard deviations at ``X_new``, all in original units.

        Each member predicts with :meth:`FittedModel.predict`; the mixture of their
        observation distributions gives ``std``, of their latent distributions ``std_f``.

        Parameters
        ----------
        X_train : array_like of shape (n, d) or (n,)
        y_train : array_like of shape (n,)
        X_new : array_like of shape (m, d) or (m,)

        Returns
        -------
        Prediction
            ``mean``, ``std``, ``std_f`` of shape (m,).
        """
        used = [(m, w) for m, w in zip(self.members, self.weights, strict=True) if w > 0]
        preds = [m.predict(X_train, y_train, X_new) for m, _ in used]
        w = average_weights([w for _, w in used])
        mu = np.stack([p.mean for p in preds])
        # Centre on the mixture mean before the second moment: data far from zero would
        # otherwise lose the variance to cancellation (E[y²] − E[y]²).
        centre = w @ mu
        mean_c, var = mixture(mu - centre, np.stack([p.std**2 for p in preds]), w)
        _, var_f = mixture(mu - centre, np.stack([p.std_f**2 for p in preds]), w)
        return Prediction(preds[0].x, centre + mean_c, np.sqrt(var), np.sqrt(var_f))

    def predict_mean(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Array:
        """The mixture mean ``Σ_k w_k μ_k`` alone, shape (m,) (no member computes a variance)."""
        used = [(m, w) for m, w in zip(self.members, self.weights, strict=True) if w > 0]
        w = average_weights([w for _, w in used])
        return w @ np.stack([m.predict_mean(X_train, y_train, X_new) for m, _ in used])
