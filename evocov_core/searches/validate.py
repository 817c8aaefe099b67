"""Rolling-origin validation of a fitted kernel: how well it forecasts from earlier points in time.

A search ranks kernels by BIC, a score of fit to the training range; the user asks for a
forecast beyond it. The model choice therefore asks the user's question of the data the search
has, several times over: for each *origin* ``o`` (a share of the training x-range), the kernel
conditioned on the points up to the origin forecasts the next ``horizon`` of the range, and the
forecast is scored by the continuous ranked probability score of its predictive normal
(mean, latent variance + noise) against the points there. Scores are in model units (outputs
standardised), so origins and kernels are comparable.

To rank candidates the hyperparameters are the kernel's full-data values: a refit at each
origin would cost one fit per origin and candidate, which a 60 s budget cannot pay on 1,000
points. The forecast from an early origin still shows what a kernel does beyond the data it is
conditioned on: a trend that bends away, a variance that collapses or explodes, a cycle that
fades. To calibrate the returned kernel's spread (:func:`calibrate`) its errors must be out of
sample, so there it is refitted at each origin: four fits of one kernel.

One origin at ``1 − horizon`` with a refit is the tail score of :mod:`evocov_core.searches.select`;
the study of these rules is ``bench/bench_choice.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.fitting.calibration import CALIBRATIONS, Calibration, rms_scale
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import DEFAULT_ORIGINS, FitData, crps_normal_points, normal_logpdf
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, OptimConfig, fit_kernel
from evocov_core.language.evaluate import Inputs

if TYPE_CHECKING:  # pragma: no cover
    from evocov_core.fitting.fits import Executor

__all__ = [
    "CALIBRATIONS",
    "DEFAULT_ORIGINS",
    "Calibration",
    "OriginScores",
    "OriginWindow",
    "calibration_from_errors",
    "has_origin_stages",
    "origin_masks",
    "origin_scores",
    "origin_stage",
    "origin_windows",
    "rms_scale",
    "spread_scale",
    "stacking_weights",
    "tail_errors",
    "tail_forecast",
]




@dataclass(frozen=True)
class OriginScores:
    """A kernel's forecasts from several origins, scored.

    Attributes
    ----------
    origins : tuple of float
        The origins that had points on both sides.
    crps : tuple of float
        Mean CRPS of each origin's forecast (model units; +inf where it could not be computed).
    log_density : tuple of float
        Sum of the marginal log predictive densities of each origin's targets (−inf where not).
    n_targets : tuple of int
    z : ndarray of shape (sum of n_targets,)
        Standardised forecast errors ``(y − μ)/σ`` of every target, origin by origin (NaN where
        an origin failed): how well the predictive spread is calibrated (:func:`spread_scale`).
    log_p : ndarray of shape (sum of n_targets,)
        The marginal log predictive density of every target, in the same order (−inf where an
        origin failed): what predictive weights are fitted on (:func:`stacking_weights`).
    mean : ndarray of shape (sum of n_targets,)
        The predictive mean at every target, in the same order (model units; NaN where an origin
        failed): what a forecast combination is chosen on (:mod:`evocov_core.forecast.combination`).
    """

    origins: tuple[float, ...]
    crps: tuple[float, ...]
    log_density: tuple[float, ...]
    n_targets: tuple[int, ...]
    z: NDArray[np.float64] = field(default_factory=lambda: np.empty(0), compare=False)
    log_p: NDArray[np.float64] = field(default_factory=lambda: np.empty(0), compare=False)
    mean: NDArray[np.float64] = field(default_factory=lambda: np.empty(0), compare=False)

    @property
    def mean_crps(self) -> float:
        """The mean over origins (+inf when none could be scored)."""
        return float(np.mean(self.crps)) if self.crps else math.inf

    @property
    def total_log_density(self) -> float:
        return float(np.sum(self.log_density)) if self.log_density else -math.inf

    def window_means(self, data: FitData) -> list[NDArray[np.float64]]:
        """:attr:`mean` split origin by origin, in the original units of ``data`` (the data scored):
        one array of shape (n_targets[i],) per origin."""
        return np.split(self.mean * data.y_std + data.y_mean, np.cumsum(self.n_targets)[:-1])


class OriginWindow(NamedTuple):
    """One origin's split of the training points (a tuple: ``for o, head, target in windows``).

    Attributes
    ----------
    origin : float
        The origin, a share of the training x-range.
    head : ndarray of bool, shape (n,)
        The points up to the origin: what the forecast is conditioned on.
    target : ndarray of bool, shape (n,)
        The points in the ``horizon`` after it: what the forecast is scored on.
    """

    origin: float
    head: NDArray[np.bool_]
    target: NDArray[np.bool_]


def origin_windows(data: FitData, origins: Sequence[float] | None = None, horizon: float | None = None
                   ) -> tuple[OriginWindow, ...]:
    """The origins of ``origins`` that have at least two points before them and one in the
    ``horizon`` after, each as ``(origin, head mask, target mask)`` over the training points
    (masks of shape (n,)); ``origins`` default to ``data.origins`` and ``horizon`` to
    ``data.split_fraction`` (a forecast horizon's, :func:`~evocov_core.fitting.metrics.horizon_origins`)."""
    return origin_masks(data.X[:, 0], data.origins if origins is None else origins,
                        data.split_fraction if horizon is None else horizon)


def origin_masks(x: ArrayLike, origins: Sequence[float] = DEFAULT_ORIGINS, horizon: float = 0.1
                 ) -> tuple[OriginWindow, ...]:
    """:func:`origin_windows` over the times ``x`` (shape (n,)) of any training points: those of a
    long series' every point, not only of the subset a search fits (any affine units of time)."""
    x = np.asarray(x, dtype=np.float64)
    lo, span = float(x.min()), float(np.ptp(x))
    out = []
    for o in origins:
        cut, end = lo + o * span, lo + min(1.0, o + horizon) * span
        head = x <= cut
        target = (x > cut) & (x <= end)
        if head.sum() >= 2 and target.any():
            out.append(OriginWindow(float(o), head, target))
    return tuple(out)


def origin_scores(data: FitData, fit: FitResult, *, origins: Sequence[float] | None = None,
                  horizon: float | None = None, refit: OptimConfig | None = None,
                  seed: Sequence[int] = (0,), deadline: float | None = None,
                  refits: Sequence[FitResult | None] | None = None) -> OriginScores:
    """Score ``fit``'s forecasts from each origin (module docstring).

    Parameters
    ----------
    data : FitData
        The training data the fit was made on (model units; ``X`` of shape (n, d), time first).
    fit : FitResult
        A fitted kernel (values, noise and jitter).
    origins : sequence of float, optional
        Shares of the training x-range in (0, 1) (default ``data.origins``).
    horizon : float, optional
        Share of the range each forecast covers (default ``data.split_fraction``).
    refit : OptimConfig, optional
        Refit the kernel on each origin's head first (from the full-data values, seeded by
        ``(*seed, origin index)``), so that the forecast errors are out of sample: what a
        predictive spread is calibrated on (:func:`spread_scale`). Without it, the full-data values.
    seed : sequence of int
    deadline : float, optional
        Wall-clock time (``time.time()``) by which each refit stops with what it has.
    refits : sequence of FitResult or None, optional
        Refits made elsewhere (the model choice's, through its executor), one per window of
        :func:`origin_windows` in order; ``refit`` is then not used. A failed or missing refit
        forecasts with the full-data values.

    Returns
    -------
    OriginScores
        Never raises for numerical reasons: an origin that fails scores +inf / −inf.
    """
    windows = origin_windows(data, origins, horizon)
    if refits is not None and len(refits) != len(windows):
        raise ValueError(f"{len(refits)} refits for {len(windows)} origins")
    kept, crps, logd, counts, zs, lps, mus = [], [], [], [], [], [], []
    for j, (o, head, target) in enumerate(windows):
        f = None
        if refits is not None:
            f = refits[j]
        elif refit is not None:
            rng = np.random.default_rng(np.random.SeedSequence([*seed, j]))
            f = fit_kernel(fit.kernel, data.subset(head), refit, rng, fit.start(), deadline=deadline)
        if f is not None and f.ok:
            theta, log_noise, jitter = np.asarray(f.theta, dtype=np.float64), f.log_noise, f.jitter
        else:
            theta, log_noise, jitter = np.asarray(fit.theta, dtype=np.float64), fit.log_noise, fit.jitter
        noise = math.exp(log_noise) + jitter
        kept.append(o)
        counts.append(int(target.sum()))
        try:
            with np.errstate(all="ignore"):
                post = posterior(fit.kernel, Inputs(data.X[head]), data.y[head], theta, log_noise,
                                 data.X[target], jitter=jitter)
                sd = np.sqrt(post.var + noise)
                yt = data.y[target]
                c = float(np.mean(crps_normal_points(yt, post.mean, sd)))
                z = (yt - post.mean) / sd
                lp = normal_logpdf(yt, post.mean, sd)
                ld = float(np.sum(lp))
                mu = np.asarray(post.mean, dtype=np.float64)
        except NUMERIC_ERRORS:
            c, ld, z = math.inf, -math.inf, np.full(int(target.sum()), np.nan)
            lp, mu = np.full(z.size, -np.inf), np.full(z.size, np.nan)
        mus.append(np.where(np.isfinite(mu), mu, np.nan))
        zs.append(np.where(np.isfinite(z), z, np.nan))
        lps.append(np.where(np.isfinite(lp), lp, -np.inf))
        crps.append(c if math.isfinite(c) else math.inf)
        logd.append(ld if math.isfinite(ld) else -math.inf)
    return OriginScores(tuple(kept), tuple(crps), tuple(logd), tuple(counts),
                        np.concatenate(zs) if zs else np.empty(0), np.concatenate(lps) if lps else np.empty(0),
                        np.concatenate(mus) if mus else np.empty(0))


def spread_scale(z: NDArray[np.float64], level: float = 0.95, *, min_points: int = 10) -> float:
    """The factor on a predictive standard deviation that makes ``level`` of the validation errors
    fall inside the central interval: ``quantile_level(|z|) / Φ⁻¹((1 + level)/2)``, never below 1
    (a forecast is not made more confident than the GP says) and 1 with fewer than ``min_points``
    finite errors.

    Parameters
    ----------
    z : ndarray of shape (m,)
        Standardised forecast errors (:attr:`OriginScores.z`).
    """
    from scipy.special import ndtri

    a = np.abs(np.asarray(z, dtype=np.float64))
    a = a[np.isfinite(a)]
    if a.size < min_points:
        return 1.0
    return max(1.0, float(np.quantile(a, level)) / float(ndtri(0.5 + level / 2.0)))


def calibration_from_errors(z: NDArray[np.float64], rule: str) -> Calibration:
    """The calibration that standardised out-of-sample errors ``z`` (shape (m,), NaN where a forecast
    failed) call for: :func:`rms_scale` of them, made by ``rule``."""
    return Calibration(rms_scale(z), rule, int(np.isfinite(z).sum()))


def tail_forecast(data: FitData, head_fit: FitResult) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The head fit's predictive mean and standard deviation (latent and noise) at the tail's
    inputs (``data.split``), shapes (m,), model units. Numerical failures raise."""
    sp = data.split
    post = posterior(head_fit.kernel, sp.inputs_t, sp.y_t, np.asarray(head_fit.theta), head_fit.log_noise, sp.X_v,
                     jitter=head_fit.jitter)
    return post.mean, np.sqrt(post.var + math.exp(head_fit.log_noise) + head_fit.jitter)


def stacking_weights(log_p: NDArray[np.float64], *, max_iter: int = 1000, tol: float = 1e-9) -> NDArray[np.float64]:
    """Weights of the mixture of K predictive distributions that maximise the summed log score
    of held-out points (stacking of predictive distributions, Yao et al. 2018), by the EM
    iteration for mixture weights (each step raises the objective, which is concave in the weights).

    Parameters
    ----------
    log_p : ndarray of shape (K, m)
        Log predictive density of each of ``m`` held-out points under each candidate (−inf where
        a candidate's forecast failed). Points no candidate scores are left out.

    Returns
    -------
    ndarray of shape (K,)
        Non-negative weights summing to 1; uniform when no point is scored by any candidate.
    """
    lp = np.asarray(log_p, dtype=np.float64)
    k = lp.shape[0]
    lp = np.where(np.isfinite(lp), lp, -np.inf)
    lp = lp[:, np.isfinite(lp).any(axis=0)]
    w = np.full(k, 1.0 / k)
    if lp.shape[1] == 0:
        return w
    p = np.exp(lp - lp.max(axis=0))  # each point's densities relative to its best candidate
    for _ in range(max_iter):
        resp = w[:, None] * p
        resp /= resp.sum(axis=0)
        new = resp.mean(axis=1)
        if np.max(np.abs(new - w)) < tol:
            return new
        w = new
    return w


def tail_errors(data: FitData, head_fit: FitResult) -> NDArray[np.float64]:
    """Standardised errors of the head fit's forecast of the tail (``data.split``)."""
    try:
        with np.errstate(all="ignore"):
            mean, sd = tail_forecast(data, head_fit)
            z = (data.split.y_v - mean) / sd
    except NUMERIC_ERRORS:
        return np.empty(0)
    return np.where(np.isfinite(z), z, np.nan)


def origin_stage(origin: float) -> str:
    """The name of the stage that refits on the training points up to ``origin``."""
    return f"origin:{origin:g}"


def has_origin_stages(executor: Executor | None) -> bool:
    """Whether ``executor`` refits at the origins (:func:`~evocov_core.searches.select.needs_origin_stages`)."""
    return executor is not None and any(str(s).startswith("origin:") for s in executor.stages)
