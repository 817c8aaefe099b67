"""A VFE / SGPR prototype (Titsias 2009) for any kernel the evaluator builds: the study of
``docs/long-series.md``, not a path of the package.

Inducing inputs ``Z`` (m of them, here on a regular grid over the training range) stand in
for the n training inputs. The collapsed variational bound on the log marginal likelihood is

    F = log N(y | 0, Q + σ²I) − tr(K − Q) / (2σ²),      Q = K_nm K_mm⁻¹ K_mn,

computed in O(n m²) time and O(n m) memory with ``A = L⁻¹ K_mn / σ`` (``L L^T = K_mm``),
``B = I + A Aᵀ = L_B L_Bᵀ`` and ``c = L_B⁻¹ A y / σ``:

    F = −n/2 log 2π − Σ log diag L_B − n/2 log σ² − yᵀy/(2σ²) + cᵀc/2 − Σ_i k(x_i, x_i)/(2σ²) + ‖A‖²/2.

Its gradient goes through the evaluator's vector-Jacobian products of the two covariance
matrices it builds (``covariance_vjp`` of ``Inputs(Z, X)`` and of ``Inputs(Z)``), with the
adjoints (α = (Q + σ²I)⁻¹ y, P = K_mm⁻¹ K_mn, so Pα = σ L⁻ᵀ A α):

    ∂F/∂K_mn = (Pα) αᵀ + L⁻ᵀ (A − B⁻¹A) / σ,
    ∂F/∂K_mm = −(Pα)(Pα)ᵀ/2 − L⁻ᵀ (B − 2I + B⁻¹) L⁻¹ / 2,
    ∂F/∂σ²   = −tr((Q + σ²I)⁻¹)/2 + αᵀα/2 + (Σ_i k(x_i, x_i) − σ²‖A‖²)/(2σ⁴),
               tr((Q + σ²I)⁻¹) = (n − m + tr B⁻¹)/σ²;

the diagonal term's gradient ``Σ_i ∂k(x_i, x_i)/∂θ`` is taken by central differences of
``covariance_diag`` (O(n) per slot: the evaluator has no diagonal vjp). With Z = X and no
jitter, Q = K and F is the exact LML (``tests/test_bench_studies.py`` checks it, and the
gradient against finite differences). The predictive mean is ``K_*m P α``.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize

from evocov_core.language.evaluate import Inputs, covariance, covariance_diag, covariance_vjp
from evocov_core.language.kernel import Kernel

__all__ = ["VFEParts", "fit_vfe", "grid_inducing", "vfe_lml", "vfe_lml_and_grad", "vfe_predict_mean"]

Array = NDArray[np.float64]
LOG_2PI = math.log(2 * math.pi)

#: Jitter on K_mm, relative to the mean of its diagonal (the inducing inputs of a grid may be
#: closer than the kernel's lengthscale, which makes K_mm singular to working precision).
JITTER = 1e-6


def grid_inducing(X: Array, m: int) -> Array:
    """``m`` inducing inputs evenly spaced over the range of ``X[:, 0]``, shape (m, 1)."""
    x = np.asarray(X, dtype=np.float64)[:, 0]
    return np.linspace(float(x.min()), float(x.max()), m)[:, None]


@dataclass(frozen=True)
class VFEParts:
    """The bound's intermediate results at one point (what the gradient and the prediction reuse)."""

    value: float
    L: Array
    """Cholesky factor of K_mm + jitter, shape (m, m), lower."""
    A: Array
    """L⁻¹ K_mn / σ, shape (m, n)."""
    LB: Array
    """Cholesky factor of B = I + A Aᵀ, shape (m, m), lower."""
    p_alpha: Array
    """P α = K_mm⁻¹ K_mn (Q + σ²I)⁻¹ y, shape (m,)."""
    alpha: Array
    """(Q + σ²I)⁻¹ y, shape (n,)."""
    trace_diag: float
    """Σ_i k(x_i, x_i)."""


def _parts(Kmm: Array, Kmn: Array, diag_sum: float, y: Array, noise: float, jitter: float) -> VFEParts:
    m, n = Kmn.shape
    sigma = math.sqrt(noise)
    Kj = Kmm + jitter * max(float(np.mean(np.diag(Kmm))), 1e-300) * np.eye(m)
    L = np.linalg.cholesky(Kj)
    A = solve_triangular(L, Kmn, lower=True, check_finite=False) / sigma
    B = np.eye(m) + A @ A.T
    LB = np.linalg.cholesky(B)
    Ay = A @ y
    c = solve_triangular(LB, Ay, lower=True, check_finite=False) / sigma
    a2 = float(np.sum(A * A))
    value = (-0.5 * n * LOG_2PI - float(np.sum(np.log(np.diag(LB)))) - 0.5 * n * math.log(noise)
             - 0.5 * float(y @ y) / noise + 0.5 * float(c @ c) - 0.5 * diag_sum / noise + 0.5 * a2)
    # α = (y − Aᵀ B⁻¹ A y) / σ²
    binv_ay = cho_solve((LB, True), Ay, check_finite=False)
    alpha = (y - A.T @ binv_ay) / noise
    p_alpha = sigma * solve_triangular(L, A @ alpha, lower=True, trans="T", check_finite=False)
    return VFEParts(value, L, A, LB, p_alpha, alpha, diag_sum)


def vfe_lml(kernel: Kernel, X: Array, y: Array, Z: Array, theta: Array, log_noise: float,
            jitter: float = JITTER) -> float:
    """The collapsed VFE bound F (see the module docstring).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray of shape (n, d)
        Training inputs (model units).
    y : ndarray of shape (n,)
    Z : ndarray of shape (m, d)
        Inducing inputs.
    theta : ndarray of shape (p,)
        Log slot values.
    log_noise : float
    jitter : float
        Added to K_mm's diagonal, times its mean.
    """
    theta = np.asarray(theta, dtype=np.float64)
    Kmm = covariance(kernel, Inputs(Z), theta)
    Kmn = covariance(kernel, Inputs(Z, X), theta)
    d = float(np.sum(covariance_diag(kernel, X, theta)))
    return _parts(Kmm, Kmn, d, np.asarray(y, dtype=np.float64), math.exp(log_noise), jitter).value


def _diag_grad(kernel: Kernel, X: Array, theta: Array, h: float = 1e-6) -> Array:
    """Σ_i ∂k(x_i, x_i)/∂θ_j by central differences (O(n) per slot)."""
    g = np.empty(theta.shape[0])
    for j in range(theta.shape[0]):
        e = np.zeros_like(theta)
        e[j] = h
        g[j] = (np.sum(covariance_diag(kernel, X, theta + e)) - np.sum(covariance_diag(kernel, X, theta - e))) / (2 * h)
    return g


def vfe_lml_and_grad(kernel: Kernel, X: Array, y: Array, Z: Array, theta: Array, log_noise: float,
                     jitter: float = JITTER) -> tuple[float, Array]:
    """F and its gradient with respect to ``[theta, log_noise]`` (log slot values, log noise variance).

    Returns
    -------
    value : float
    grad : ndarray of shape (p + 1,)
    """
    theta = np.asarray(theta, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    noise = math.exp(log_noise)
    sigma = math.sqrt(noise)
    Kmm, vjp_mm = covariance_vjp(kernel, Inputs(Z), theta)
    Kmn, vjp_mn = covariance_vjp(kernel, Inputs(Z, X), theta)
    d = float(np.sum(covariance_diag(kernel, X, theta)))
    pr = _parts(Kmm, Kmn, d, y, noise, jitter)
    m, n = Kmn.shape
    L, A, LB = pr.L, pr.A, pr.LB
    binv_a = cho_solve((LB, True), A, check_finite=False)                    # B⁻¹ A, (m, n)
    G_mn = np.outer(pr.p_alpha, pr.alpha)
    G_mn += solve_triangular(L, A - binv_a, lower=True, trans="T", check_finite=False) / sigma
    B = np.eye(m) + A @ A.T
    binv = cho_solve((LB, True), np.eye(m), check_finite=False)
    inner = B - 2 * np.eye(m) + binv
    Linv_t_inner = solve_triangular(L, inner, lower=True, trans="T", check_finite=False)   # L⁻ᵀ (·)
    G_mm = -0.5 * np.outer(pr.p_alpha, pr.p_alpha)
    G_mm -= 0.5 * solve_triangular(L, Linv_t_inner.T, lower=True, trans="T", check_finite=False).T
    g = np.empty(kernel.n_params + 1)
    g[:-1] = vjp_mn(G_mn) + vjp_mm(G_mm) - 0.5 * _diag_grad(kernel, X, theta) / noise
    a2 = float(np.sum(A * A))
    tr_inv = (n - m + float(np.trace(binv))) / noise
    dF_ds = -0.5 * tr_inv + 0.5 * float(pr.alpha @ pr.alpha) + 0.5 * (d - noise * a2) / noise ** 2
    g[-1] = dF_ds * noise
    return pr.value, g


def vfe_predict_mean(kernel: Kernel, X: Array, y: Array, Z: Array, theta: Array, log_noise: float, X_new: Array,
                     jitter: float = JITTER, block: int = 4096) -> Array:
    """The VFE predictive mean ``K_*m P α`` at ``X_new`` (model units), shape (k,)."""
    theta = np.asarray(theta, dtype=np.float64)
    Kmm = covariance(kernel, Inputs(Z), theta)
    Kmn = covariance(kernel, Inputs(Z, X), theta)
    pr = _parts(Kmm, Kmn, 0.0, np.asarray(y, dtype=np.float64), math.exp(log_noise), jitter)
    out = [covariance(kernel, Inputs(X_new[i:i + block], Z), theta) @ pr.p_alpha
           for i in range(0, X_new.shape[0], block)]
    return np.concatenate(out) if out else np.zeros(0)


def fit_vfe(kernel: Kernel, X: Array, y: Array, Z: Array, z0: Array, bounds: list[tuple[float, float]],
            max_evals: int) -> tuple[Array, float, int]:
    """Maximise F over ``[theta, log_noise]`` from ``z0`` with L-BFGS-B, at most ``max_evals`` evaluations.

    Returns
    -------
    z : ndarray of shape (p + 1,)
        The best point seen.
    value : float
        F there.
    evals : int
    """
    best = [-math.inf, np.asarray(z0, dtype=np.float64).copy()]
    count = [0]

    class _Done(Exception):
        pass

    def fun(z: Array) -> tuple[float, Array]:
        if count[0] >= max_evals:
            raise _Done
        count[0] += 1
        try:
            f, g = vfe_lml_and_grad(kernel, X, y, Z, z[:-1], float(z[-1]))
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            return 1e30, np.zeros_like(z)
        if not (math.isfinite(f) and np.all(np.isfinite(g))):
            return 1e30, np.zeros_like(z)
        if f > best[0]:
            best[0], best[1] = f, z.copy()
        return -f, -g

    with contextlib.suppress(_Done):
        minimize(fun, best[1], jac=True, method="L-BFGS-B", bounds=bounds,
                 options={"maxfun": max_evals, "maxiter": max_evals})
    return best[1], float(best[0]), count[0]
