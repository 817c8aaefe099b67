"""The five hyperparameter-selection metrics of the paper's section 6.3, test RMSE, and the
scores of a probabilistic forecast (:func:`coverage`, :func:`crps_normal`, :func:`interval_score`).

Every metric is computed in model units on the training data and oriented so that
**higher is better** except RMSE; :func:`loss` flips signs so an optimiser minimises.
``z = [theta, log_noise]`` throughout (log slot values, then the log noise variance).

=================  =====================================================================
``lml``            log p(y | X, θ) (GPML eq. 2.30; the paper's eq. 5)
``loocv``          Σ_i log p(y_i | X, y_−i, θ), closed form from K⁻¹ (GPML eqs. 5.10-5.12):
                   μ_i = y_i − [K⁻¹y]_i/[K⁻¹]_ii, σ_i² = 1/[K⁻¹]_ii; no n refits
``posterior_lml``  log N(y_v; μ_v, Σ_v + σ²I): the GP conditioned on the train-train part
                   scores the train-test part jointly
``sopl``           Σ_{i∈v} log N(y_i; μ_i, Σ_ii + σ²): the same, point by point
                   ("sum of posterior log-likelihoods")
``rmse``           sqrt(mean((y_v − μ_v)²)) on the train-test part (lower is better)
=================  =====================================================================

The train-train / train-test split takes the last ``split_fraction`` of the training
x-range as train-test, the same rule as the published test split, so these metrics
reward extrapolation.

Forecast scores, on the test part in original units (lower is better except coverage, whose
target is the interval's level):

====================  ================================================================
``coverage``          share of the points inside the prediction interval
``crps_normal``       continuous ranked probability score of a normal predictive
``interval_score``    Gneiting & Raftery's (2007) score of a central interval
====================  ================================================================

Gradients: ``lml`` and ``loocv`` have analytic gradients (one reverse pass of an
adjoint matrix through the kernel tree); the other three are used with Powell, as in the
paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular
from scipy.special import ndtr, ndtri

from evocov_core.data.dataset import Dataset, Normalisation, split_mask
from evocov_core.fitting.gp import LOG_2PI, factorize, inverse_from_factor, lml, lml_and_grad
from evocov_core.fitting.seasons import calendar_periods
from evocov_core.fitting.spectrum import periodogram_peaks
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, DataSubset, plan_subset
from evocov_core.language.evaluate import Inputs, covariance, covariance_diag, covariance_vjp
from evocov_core.language.kernel import Kernel

__all__ = [
    "DEFAULT_ORIGINS",
    "GRADIENT_METRICS",
    "MAX_HORIZON_SHARE",
    "METRICS",
    "METRIC_LABELS",
    "SPLIT_METRICS",
    "Z95",
    "FitData",
    "coverage",
    "crps_normal",
    "crps_normal_points",
    "horizon_origins",
    "interval_score",
    "log_density",
    "loss",
    "loss_and_grad",
    "metric_value",
    "normal_logpdf",
    "rmse",
]

#: The earlier points in time from which forecasts are judged when no horizon is given: 60-90 % of the training
#: x-range, each forecasting the next tenth of it.
DEFAULT_ORIGINS = (0.6, 0.7, 0.8, 0.9)
#: The most of the training range a horizon's forecasts from the origins may cover (the rest is what they see).
MAX_HORIZON_SHARE = 0.5


#: The normal quantile of a central 95 % interval.
Z95 = float(ndtri(0.975))

Array = NDArray[np.float64]

METRICS = ("lml", "loocv", "posterior_lml", "sopl", "rmse")
GRADIENT_METRICS = frozenset({"lml", "loocv"})
#: Metrics scored on the train-train / train-test split (``FitData.split``); data without one cannot use them.
SPLIT_METRICS = frozenset({"posterior_lml", "sopl", "rmse"})
METRIC_LABELS = {
    "lml": "LML",
    "loocv": "LOOCV",
    "posterior_lml": "posterior LML",
    "sopl": "SoPL",
    "rmse": "RMSE",
}


@dataclass(frozen=True, eq=False)
class SplitData:
    """Train-train (t) / train-test (v) parts of the training data, model units."""

    X_t: Array
    y_t: Array
    X_v: Array
    y_v: Array
    inputs_t: Inputs
    inputs_vt: Inputs  # cross geometry (v × t)
    inputs_v: Inputs  # symmetric geometry of v


@dataclass(frozen=True, eq=False)
class FitData:
    """Training data in model units with every θ-independent cache a metric needs.

    Build once per data set with :meth:`from_dataset` and reuse for every kernel.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    inputs : Inputs
        Symmetric geometry of X (with a lag row when the lags of 1-D inputs repeat).
    split : SplitData or None
        For ``posterior_lml``, ``sopl`` and ``rmse``.
    X_test : ndarray of shape (m, d) or None
        Test inputs in model units.
    y_test : ndarray of shape (m,) or None
        Test outputs in **original** units.
    y_mean, y_std : float
        Output normalisation, to report test RMSE in original units.
    frequency_peaks : (tuple of float, tuple of float)
        Periodogram peak angular frequencies (model units) and weights, used to start
        frequency slots (:mod:`evocov_core.fitting.spectrum`).
    step : float
        Median spacing of the first input column (model units): the sampling step that
        starting ranges and data-tied bounds are read from. A subset of the data (a
        screening window, the head of a validation split) keeps the full data's step,
        peaks and span so that values carry over between them.
    span : float
        Range of the first input column that bounds are tied to (1 for the training
        data in model units).
    approximation : DataSubset or None
        Which of the data set's training points these are
        (:mod:`evocov_core.fitting.subset`); None when built from arrays directly.
    head : ndarray of bool, shape (n,), or None
        The model choice's head: the train-train part of ``split`` (None without a split).
    calendar : tuple of float
        Angular frequencies (model units) of the calendar's seasons when the first input is a
        date (daily data: a week and a year; :func:`~evocov_core.fitting.seasons.calendar_periods`),
        else empty. A subset keeps them.
    origins : tuple of float
        The earlier points in time, as shares of the training x-range, from which the model choice and the
        forecast's weights judge forecasts of the next ``split_fraction`` of the range
        (:func:`~evocov_core.searches.validate.origin_windows`): :data:`DEFAULT_ORIGINS`, or those of a forecast
        horizon (:func:`horizon_origins`).
    """

    X: Array
    y: Array
    inputs: Inputs
    split: SplitData | None
    X_test: Array | None
    y_test: Array | None
    y_mean: float = 0.0
    y_std: float = 1.0
    split_fraction: float = 0.1
    frequency_peaks: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    step: float = math.nan
    span: float = 1.0
    approximation: DataSubset | None = None
    head: NDArray[np.bool_] | None = None
    calendar: tuple[float, ...] = ()
    origins: tuple[float, ...] = DEFAULT_ORIGINS

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def on_subset(self) -> bool:
        """A subset of a long series' training points (``approximation`` not exact)."""
        return self.approximation is not None and not self.approximation.exact

    @classmethod
    def from_arrays(cls, X: Array, y: Array, *, X_test: Array | None = None, y_test: Array | None = None,
                    y_mean: float = 0.0, y_std: float = 1.0, split_fraction: float = 0.1,
                    head: NDArray[np.bool_] | None = None,
                    frequency_peaks: tuple[tuple[float, ...], tuple[float, ...]] | None = None) -> FitData:
        """From model-unit arrays (test outputs in original units).

        ``head`` overrides the split rule (the first ``1 − split_fraction`` of the x-range);
        ``frequency_peaks`` the periodogram of these arrays.
        """
        X = np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(len(y), -1))
        y = np.asarray(y, dtype=np.float64)
        split = None
        mask = None
        if split_fraction > 0:
            mask = split_mask(X, split_fraction) if head is None else np.asarray(head, dtype=bool)
            if 2 <= mask.sum() < len(y):
                Xt, Xv = X[mask], X[~mask]
                split = SplitData(Xt, y[mask], Xv, y[~mask], Inputs(Xt), Inputs(Xv, Xt), Inputs(Xv))
            else:
                mask = None
        if frequency_peaks is None:
            omegas, weights = periodogram_peaks(X[:, 0], y)
            frequency_peaks = (tuple(map(float, omegas)), tuple(map(float, weights)))
        return cls(X, y, Inputs(X), split, X_test, y_test, y_mean, y_std, split_fraction, frequency_peaks,
                   median_step(X[:, 0]), float(np.ptp(X[:, 0])) if len(y) > 1 else 1.0, None, mask)

    def subset(self, mask: NDArray[np.bool_], *, X_test: Array | None = None, y_test: Array | None = None
               ) -> FitData:
        """The training points where ``mask`` holds, as data of their own (no split metrics).

        Outputs stay in this data's model units and the step, span and periodogram peaks
        are kept, so hyperparameter values and bounds mean the same on both.
        """
        X, y = self.X[mask], self.y[mask]
        return replace(FitData.from_arrays(X, y, X_test=X_test, y_test=y_test, y_mean=self.y_mean,
                                           y_std=self.y_std, split_fraction=0.0,
                                           frequency_peaks=self.frequency_peaks),
                       step=self.step, span=self.span, calendar=self.calendar)

    @classmethod
    def from_dataset(cls, ds: Dataset, *, split_fraction: float = 0.1,
                     max_points: int = DEFAULT_MAX_POINTS, norm: Normalisation | None = None,
                     horizon: int = 0) -> FitData:
        """Normalise a :class:`~evocov_core.data.Dataset` and build the caches.

        Parameters
        ----------
        ds : Dataset
        split_fraction : float
            Held-out share of the training x-range for the split metrics and the model choice.
        max_points : int
            Above this many training points, the data are the subset of
            :func:`~evocov_core.fitting.subset.plan_subset` (0: every point). The periodogram is
            still the whole training series'.
        norm : Normalisation, optional
            The model units (default: the data set's own, ``ds.norm``); a kernel file's, to
            score its values in the units they were fitted in.
        horizon : int
            Steps the forecast is for (0: none given). The origins then forecast that many steps each, the
            last one ending at the end of the training range, and ``split_fraction`` is their share of the range
            (:func:`horizon_origins`); the argument ``split_fraction`` is not used.
        """
        origins = DEFAULT_ORIGINS
        if horizon > 0:
            split_fraction, origins = horizon_origins(ds.n_train, horizon)
        out = cls._from_dataset(ds, split_fraction, max_points, norm)
        return out if horizon <= 0 else replace(out, origins=origins)

    @classmethod
    def _from_dataset(cls, ds: Dataset, split_fraction: float, max_points: int, norm: Normalisation | None
                      ) -> FitData:
        nm = ds.norm if norm is None else norm
        scale = float(nm.x_scale[0])
        calendar = tuple(2.0 * math.pi * scale / p for p in calendar_periods(ds))  # x̃ = 1 + (x − offset)/scale
        X_test = nm.x_to_model(ds.X_test) if ds.n_test else None
        y_test = ds.y_test if ds.n_test else None
        X, y = nm.x_to_model(ds.X_train), nm.y_to_model(ds.y_train)
        plan = plan_subset(ds.n_train, max_points)
        if plan.exact:
            out = cls.from_arrays(X, y, X_test=X_test, y_test=y_test, y_mean=nm.y_mean, y_std=nm.y_std,
                                  split_fraction=split_fraction)
            return replace(out, approximation=plan, calendar=calendar)
        omegas, weights = periodogram_peaks(X[:, 0], y)
        keep = plan.mask(X[:, 0])
        Xs, ys = X[keep], y[keep]
        out = cls.from_arrays(Xs, ys, X_test=X_test, y_test=y_test, y_mean=nm.y_mean, y_std=nm.y_std,
                              split_fraction=split_fraction, head=plan.head_mask(Xs[:, 0], split_fraction),
                              frequency_peaks=(tuple(map(float, omegas)), tuple(map(float, weights))))
        # Bounds and starting ranges are read from the sampling step of the whole series.
        return replace(out, approximation=plan, step=median_step(X[:, 0]), calendar=calendar)


def horizon_origins(n: int, horizon: int) -> tuple[float, tuple[float, ...]]:
    """The share of the training range a ``horizon``-step forecast covers on ``n`` evenly spaced points, and four
    origins from which such forecasts are judged: the last one ``horizon`` steps before the end of the range (its
    forecast ends there), each earlier one a step or a tenth of the range before it, whichever is more, so that a
    short series still has four (rolling-origin evaluation at the forecast's own horizon).

    The share is at most :data:`MAX_HORIZON_SHARE`: on a series shorter than twice the horizon the origins forecast
    the second half of the range.

    Parameters
    ----------
    n : int
        Training points (at least 2).
    horizon : int
        Steps (at least 1).

    Returns
    -------
    share : float
        What each origin forecasts, a share of the training x-range.
    origins : tuple of float
        Four shares of the range, increasing (duplicates and those below 0 dropped).
    """
    if n < 2 or horizon < 1:
        raise ValueError(f"need at least 2 points and a horizon of at least 1 step, got {n} and {horizon}")
    step = 1.0 / (n - 1)
    share = min(MAX_HORIZON_SHARE, horizon * step)
    last = 1.0 - share
    gap = max(step, 0.1 * last)
    origins = sorted({round(last - k * gap, 12) for k in range(4) if last - k * gap > 0})
    return share, tuple(origins)


def median_step(x: Array) -> float:
    """Median positive gap of sorted ``x`` (``1/n`` when there is none)."""
    gaps = np.diff(np.sort(np.asarray(x, dtype=np.float64)))
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if gaps.size else 1.0 / max(len(x), 2)


def _split(data: FitData) -> SplitData:
    if data.split is None:
        raise ValueError("this metric needs a train-train/train-test split: the training data is too small")
    return data.split


class _PosteriorParts(NamedTuple):
    """What the split metrics share: the posterior of the train-test part given the train-train part.

    Attributes
    ----------
    mu : ndarray of shape (m,)
        Posterior mean at the train-test inputs.
    V : ndarray of shape (n, m)
        ``L⁻¹ K_tv``: the posterior covariance is ``K_vv − VᵀV``.
    Kvt : ndarray of shape (m, n)
        Cross-covariance of the train-test and train-train inputs.
    y_v : ndarray of shape (m,)
        The train-test outputs.
    noise : float
        Noise variance plus the jitter the factorisation needed.
    """

    mu: Array
    V: Array
    Kvt: Array
    y_v: Array
    noise: float


def _posterior_parts(kernel: Kernel, data: FitData, z: Array) -> _PosteriorParts:
    """The posterior of the split's train-test part at ``z`` (log slot values, then log noise)."""
    s = _split(data)
    theta, noise = z[:-1], math.exp(z[-1])
    K = covariance(kernel, s.inputs_t, theta)
    f = factorize(K, noise, overwrite=True, rebuild=lambda: covariance(kernel, s.inputs_t, theta))
    alpha = f.solve(s.y_t)
    Kvt = covariance(kernel, s.inputs_vt, theta)
    mu = Kvt @ alpha
    V = solve_triangular(f.L, Kvt.T, lower=True, check_finite=False)
    return _PosteriorParts(mu, V, Kvt, s.y_v, noise + f.jitter)


def _posterior_lml(kernel: Kernel, data: FitData, z: Array) -> float:
    s = _split(data)
    mu, V, _, y_v, noise = _posterior_parts(kernel, data, z)
    C = covariance(kernel, s.inputs_v, z[:-1]) - V.T @ V
    f = factorize(C, noise)
    r = y_v - mu
    a = f.solve(r)
    return float(-0.5 * r @ a - 0.5 * f.log_det - 0.5 * len(r) * LOG_2PI)


def _sopl(kernel: Kernel, data: FitData, z: Array) -> float:
    s = _split(data)
    mu, V, _, y_v, noise = _posterior_parts(kernel, data, z)
    var = covariance_diag(kernel, s.X_v, z[:-1]) - np.einsum("ij,ij->j", V, V) + noise
    if not np.all(np.isfinite(var)) or np.any(var <= 0):
        return -math.inf
    r = y_v - mu
    return float(np.sum(-0.5 * r * r / var - 0.5 * np.log(var) - 0.5 * LOG_2PI))


def _rmse_v(kernel: Kernel, data: FitData, z: Array) -> float:
    mu, _, _, y_v, _ = _posterior_parts(kernel, data, z)
    return rmse(y_v, mu)


class _LOOCVParts(NamedTuple):
    """The leave-one-out pseudo-likelihood and what its gradient reuses.

    Attributes
    ----------
    value : float
        The LOOCV pseudo-log-likelihood.
    A : ndarray of shape (n, n)
        ``K_y⁻¹``.
    alpha : ndarray of shape (n,)
        ``A y``.
    d : ndarray of shape (n,)
        The diagonal of ``A``.
    vjp : callable or None
        The kernel's vector-Jacobian product (None without ``want_grad``).
    noise : float
        The noise variance.
    """

    value: float
    A: Array
    alpha: Array
    d: Array
    vjp: Callable[[Array], Array] | None
    noise: float


def _loocv_parts(kernel: Kernel, data: FitData, z: Array, want_grad: bool) -> _LOOCVParts:
    theta, noise = z[:-1], math.exp(z[-1])
    if want_grad:
        K, vjp = covariance_vjp(kernel, data.inputs, theta)
    else:
        K, vjp = covariance(kernel, data.inputs, theta), None
    f = factorize(K, noise, overwrite=True, rebuild=lambda: covariance(kernel, data.inputs, theta))
    A = inverse_from_factor(f)
    alpha = A @ data.y
    d = np.diagonal(A).copy()
    if np.any(d <= 0):
        raise FloatingPointError("K⁻¹ has a non-positive diagonal")
    value = float(np.sum(0.5 * np.log(d) - 0.5 * alpha**2 / d - 0.5 * LOG_2PI))
    return _LOOCVParts(value, A, alpha, d, vjp, noise)


def _loocv(kernel: Kernel, data: FitData, z: Array) -> float:
    return _loocv_parts(kernel, data, z, want_grad=False).value


def _loocv_and_grad(kernel: Kernel, data: FitData, z: Array) -> tuple[float, Array]:
    """LOOCV and its gradient.

    With A = K_y⁻¹, α = Ay, L = Σ_i ½ log A_ii − α_i²/(2A_ii) + const:
    g_i = ∂L/∂α_i = −α_i/A_ii and h_i = ∂L/∂A_ii = 1/(2A_ii) + α_i²/(2A_ii²).
    From dα = −A dK α and dA = −A dK A, the adjoint of K is
    ``G = −(A g) αᵀ − A diag(h) A``; ``∂L/∂θ = Σ G ⊙ ∂K/∂θ`` (one reverse pass). This is
    GPML eq. 5.13 summed over i, with one n³ product in total instead of one per θ.
    """
    value, A, alpha, d, vjp, noise = _loocv_parts(kernel, data, z, want_grad=True)
    g = -alpha / d
    h = 0.5 / d + 0.5 * alpha**2 / d**2
    G = -np.outer(A @ g, alpha)
    G -= (A * h) @ A
    grad = np.empty(kernel.n_params + 1)
    grad[:-1] = vjp(G)  # type: ignore[misc]  # (want_grad: never None here)
    grad[-1] = float(np.trace(G)) * noise
    return value, grad


def metric_value(name: str, kernel: Kernel, data: FitData, z: Array) -> float:
    """Value of metric ``name`` at ``z`` (natural orientation: RMSE lower, others higher).

    Raises on numerical failure (see :mod:`evocov_core.fitting.gp`); callers catch.
    """
    z = np.asarray(z, dtype=np.float64)
    if name == "lml":
        return lml(kernel, data.inputs, data.y, z[:-1], float(z[-1]))[0]
    if name == "loocv":
        return _loocv(kernel, data, z)
    if name == "posterior_lml":
        return _posterior_lml(kernel, data, z)
    if name == "sopl":
        return _sopl(kernel, data, z)
    if name == "rmse":
        return _rmse_v(kernel, data, z)
    raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")


def loss(name: str, kernel: Kernel, data: FitData, z: Array) -> float:
    """The quantity an optimiser minimises: −metric, or RMSE."""
    v = metric_value(name, kernel, data, z)
    return v if name == "rmse" else -v


def loss_and_grad(name: str, kernel: Kernel, data: FitData, z: Array) -> tuple[float, Array]:
    """Loss and its gradient with respect to ``z`` (``lml`` and ``loocv`` only)."""
    z = np.asarray(z, dtype=np.float64)
    if name == "lml":
        v, g, _ = lml_and_grad(kernel, data.inputs, data.y, z[:-1], float(z[-1]))
    elif name == "loocv":
        v, g = _loocv_and_grad(kernel, data, z)
    else:
        raise ValueError(f"metric {name!r} has no analytic gradient; use Powell")
    return -v, -g


def rmse(y_true: Array, y_pred: Array) -> float:
    """Root mean squared error, ``sqrt(mean((y_true − y_pred)²))``.

    Scaled by the largest error first, so that a forecast that explodes (a candidate kernel
    whose mean reaches 1e160) gives its RMSE, not an overflow warning and ``inf``.
    """
    r = np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))
    if r.size == 0:
        return math.nan
    m = float(np.max(r))
    if not math.isfinite(m) or m == 0.0:
        return m  # 0, inf or NaN (a NaN error makes the RMSE NaN)
    return m * float(np.sqrt(np.mean((r / m) ** 2)))


# --- scores of a probabilistic forecast -------------------------------------------------------


def _same_shape(*arrays: object) -> tuple[Array, ...]:
    out = tuple(np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays)
    if len({a.shape for a in out}) != 1:
        raise ValueError(f"arrays of different lengths: {[a.size for a in out]}")
    return out


def coverage(y: Array, lower: Array, upper: Array) -> float:
    """Share of the points inside their interval: ``mean(1{l_i ≤ y_i ≤ u_i})``.

    A calibrated 95 % interval covers about 0.95 of the points.

    Parameters
    ----------
    y, lower, upper : ndarray of shape (m,)

    Returns
    -------
    float
        In [0, 1]; NaN for m = 0.
    """
    y, lower, upper = _same_shape(y, lower, upper)
    if not y.size:
        return math.nan
    return float(np.mean((lower <= y) & (y <= upper)))


def crps_normal(y: Array, mean: Array, sd: Array) -> float:
    """Mean continuous ranked probability score of normal predictives ``N(μ_i, σ_i²)``.

    Closed form (Gneiting & Raftery 2007, eq. 21), with ``z = (y − μ)/σ``:
    ``CRPS = σ [z (2Φ(z) − 1) + 2φ(z) − 1/√π]``, averaged over the points. In the units of y;
    lower is better; for σ → 0 it tends to the absolute error ``|y − μ|`` (used when σ = 0).

    Parameters
    ----------
    y, mean, sd : ndarray of shape (m,)
        ``sd ≥ 0``.

    Returns
    -------
    float
        NaN for m = 0.
    """
    y, mean, sd = _same_shape(y, mean, sd)
    if not y.size:
        return math.nan
    if np.any(sd < 0):
        raise ValueError("standard deviations must be >= 0")
    err = y - mean
    pos = sd > 0
    score = crps_normal_points(y, mean, np.where(pos, sd, 1.0))
    return float(np.mean(np.where(pos, score, np.abs(err))))


def crps_normal_points(y: Array, mean: Array, sd: Array) -> Array:
    """The CRPS of each normal predictive ``N(μ_i, σ_i²)`` (:func:`crps_normal`'s closed form), shape (m,), for
    ``σ_i > 0``; NaN or inf where ``y``, ``μ`` or ``σ`` is not finite."""
    z = (y - mean) / sd
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return sd * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))


def normal_logpdf(y: Array, mean: Array, sd: Array) -> Array:
    """The log density of each ``y_i`` under ``N(μ_i, σ_i²)``, shape (m,)."""
    z = (y - mean) / sd
    return -0.5 * z * z - np.log(sd) - 0.5 * math.log(2 * math.pi)


def log_density(y: Array, mean: Array, sd: Array) -> float:
    """Sum of the normal log densities of ``y`` under independent marginals ``N(mean, sd²)``."""
    return float(np.sum(normal_logpdf(y, mean, sd)))


def interval_score(y: Array, lower: Array, upper: Array, alpha: float = 0.05) -> float:
    """Mean interval score of central ``(1 − α)`` intervals (Gneiting & Raftery 2007, eq. 43).

    ``S = (u − l) + (2/α)(l − y)·1{y < l} + (2/α)(y − u)·1{y > u}``, averaged over the points:
    the width, plus a penalty for each point outside that grows with its distance. In the units
    of y; lower is better; a proper score, so the best interval is the true ``α/2`` and
    ``1 − α/2`` quantiles.

    Parameters
    ----------
    y, lower, upper : ndarray of shape (m,)
    alpha : float
        0.05 for 95 % intervals.

    Returns
    -------
    float
        NaN for m = 0.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    y, lower, upper = _same_shape(y, lower, upper)
    if not y.size:
        return math.nan
    below = np.maximum(lower - y, 0.0)
    above = np.maximum(y - upper, 0.0)
    return float(np.mean((upper - lower) + (2 / alpha) * (below + above)))
