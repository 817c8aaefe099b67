"""GP regression with zero mean and white noise: Cholesky, LML, its gradient, posterior.

All functions here work in model units (see :mod:`evocov_core.data`).

Jitter policy (explicit, recorded)
----------------------------------
``K_y = K + (σ² + j) I``. The Cholesky is tried with ``j = 0``; if it fails, with
``j = r · mean(diag K_y)`` for ``r`` in :data:`JITTER_LADDER` (1e-10, 1e-8, 1e-6), and the
``j`` that worked is returned and stored beside the noise variance, so a prediction
reuses exactly the matrix that was scored. If every rung fails the kernel is
reported as not positive definite; nothing raises out of this module for numerical
reasons: failures are :class:`NumericalFailure` values with a :class:`FitStatus` and a
reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import blas, cho_solve, lapack, solve_triangular

from evocov_core.language import compiled, fused
from evocov_core.language.evaluate import Inputs, covariance, covariance_diag, covariance_vjp
from evocov_core.language.kernel import Kernel

__all__ = [
    "JITTER_LADDER",
    "Factor",
    "FitStatus",
    "LMLGradient",
    "NumericalFailure",
    "condition",
    "factorize",
    "inverse_from_factor",
    "lml",
    "lml_and_grad",
    "load_fused_loop",
    "posterior",
    "predict_conditioned",
]

Array = NDArray[np.float64]

#: Relative jitter levels tried, in order, after a plain Cholesky fails.
JITTER_LADDER = (1e-10, 1e-8, 1e-6)
LOG_2PI = math.log(2.0 * math.pi)


class FitStatus(StrEnum):
    """How fitting one kernel ended: the ``status`` of a fit and of its stored record.

    Defined here, beside :class:`NumericalFailure` which carries the first two failure
    codes, because :mod:`evocov_core.fitting.optimize` imports this module and not the reverse.
    A ``StrEnum``: members equal their values, so the run store, CSV and JSON files hold
    the same strings as before the enum, and rows read back compare equal to members.
    """

    OK = "ok"
    #: The covariance, the noise or the metric had NaN or infinite values.
    NON_FINITE = "non_finite"
    #: Not positive definite, even with the largest jitter.
    CHOLESKY_FAILED = "cholesky_failed"
    #: No point could be evaluated for another arithmetic or linear-algebra reason.
    OPTIMISER_FAILED = "optimiser_failed"
    #: Fitted only on a search's screening subset and not promoted (never selected).
    SCREENED_OUT = "screened_out"


class NumericalFailure(Exception):
    """A kernel could not be evaluated; ``status`` says how, the message why."""

    def __init__(self, status: FitStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = FitStatus(status)
        self.reason = reason

    def __reduce__(self) -> tuple[type[NumericalFailure], tuple[FitStatus, str]]:
        # Raised in a worker process, it crosses back pickled; the default would call it with one argument.
        return type(self), (self.status, self.reason)


@dataclass(frozen=True)
class Factor:
    """Cholesky factor of ``K_y = K + (noise + jitter) I``.

    Attributes
    ----------
    L : ndarray of shape (n, n)
        Lower-triangular factor (Fortran order; the upper triangle holds garbage).
    jitter : float
        Extra diagonal added beyond the noise variance.
    """

    L: Array
    jitter: float

    @property
    def log_det(self) -> float:
        return 2.0 * float(np.log(self.L.diagonal()).sum())

    def solve(self, b: Array) -> Array:
        """``K_y⁻¹ b`` for b of shape (n,) or (n, k)."""
        if b.ndim == 1:
            x, _ = lapack.dpotrs(self.L, b[:, None], lower=1)
            return x[:, 0]
        return cho_solve((self.L, True), b, check_finite=False)


def factorize(K: Array, noise: float, *, overwrite: bool = False,
              rebuild: Callable[[], Array] | None = None) -> Factor:
    """Cholesky of ``K + noise·I`` with the documented jitter ladder.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric covariance. LAPACK reads one triangle: the upper one of a C-ordered K
        (its transpose is factorised in place as a Fortran-ordered lower triangle).
    noise : float
        White-noise variance.
    overwrite : bool
        Factorise in place, saving an n×n copy. A failed attempt then destroys K,
        so a retry with jitter needs ``rebuild``, a function returning K again.

    Raises
    ------
    NumericalFailure
        ``non_finite`` when K has NaN/inf, ``cholesky_failed`` when no jitter level works.
    """
    if not math.isfinite(noise):
        raise NumericalFailure(FitStatus.NON_FINITE, "noise variance is not finite")
    diagonal = K.diagonal()
    with np.errstate(over="ignore"):  # finite entries near 1e308 overflow the mean: rejected below
        # np.mean's sum and division, without its wrappers (a few µs, which count at n = 19).
        mean_diag = (float(diagonal.sum()) / diagonal.shape[0] if diagonal.shape[0] else math.nan) + noise
    if not math.isfinite(mean_diag):
        raise NumericalFailure(FitStatus.NON_FINITE,
                               "covariance matrix has NaN or infinite entries, or a diagonal whose mean overflows")
    for rung, rel in enumerate((0.0, *JITTER_LADDER)):
        if rung and overwrite:
            if rebuild is None:
                break
            K = rebuild()
        if rung == 1 and not np.isfinite(K).all():
            # Checked only after a failure: NaN/inf make dpotrf fail or leave NaN on L's diagonal.
            raise NumericalFailure(FitStatus.NON_FINITE, "covariance matrix has NaN or infinite entries")
        # K.T of a symmetric C-ordered K is Fortran-ordered: LAPACK works in place.
        A = K.T if overwrite else np.array(K.T, order="F", copy=True)
        jitter = rel * abs(mean_diag)
        np.einsum("ii->i", A)[...] += noise + jitter
        L, info = lapack.dpotrf(A, lower=1, clean=0, overwrite_a=1)
        if info == 0 and math.isfinite(np.einsum("ii->", L)):
            return Factor(L, jitter)
    raise NumericalFailure(
        FitStatus.CHOLESKY_FAILED,
        f"covariance matrix is not positive definite, even with jitter {JITTER_LADDER[-1]:g}·mean(diag)",
    )


def _raw_inverse(f: Factor) -> Array:
    inv, info = lapack.dpotri(f.L, lower=1, overwrite_c=0)
    if info != 0:  # pragma: no cover - only after a successful potrf
        raise NumericalFailure(FitStatus.CHOLESKY_FAILED, f"dpotri failed ({info})")
    return inv


def inverse_from_factor(f: Factor) -> Array:
    """``K_y⁻¹`` (symmetric, full) from its Cholesky factor, with LAPACK ``dpotri``."""
    inv = _raw_inverse(f)
    # dpotri fills the lower triangle; the upper still holds the factor. Mirror it.
    out = np.tril(inv)
    out += np.tril(inv, -1).T
    return out


@lru_cache(maxsize=16)
def _folding_mask(n: int) -> Array:
    """1 on the diagonal, 2 below it, 0 above (read-only)."""
    m = np.tril(np.full((n, n), 2.0), -1)
    np.fill_diagonal(m, 1.0)
    m.flags.writeable = False
    return m


def folded_lml_adjoint(f: Factor, alpha: Array) -> Array:
    """``W = ½(ααᵀ − K_y⁻¹)`` folded onto its lower triangle (off-diagonal doubled).

    Because ``∂K/∂θ`` is symmetric, ``Σ_ij W_ij ∂K_ij = Σ_ij W^fold_ij ∂K_ij``, and the
    folded form needs no mirroring of ``dpotri``'s half-filled output: one pass.
    """
    W = _raw_inverse(f)
    W *= -0.5
    # Rank-1 update of the lower triangle only, in place (BLAS dsyr; W is Fortran-ordered).
    W = blas.dsyr(0.5, alpha, lower=1, a=W, overwrite_a=1)
    W *= _folding_mask(W.shape[0])
    return W


def _lml_value(f: Factor, y: Array, alpha: Array) -> float:
    # GPML Algorithm 2.1, lines 2-7 (eq. 5 of the paper).
    return float(-0.5 * y @ alpha - 0.5 * f.log_det - 0.5 * y.shape[0] * LOG_2PI)


_MAX_LOG = math.log(np.finfo(np.float64).max)


@lru_cache(maxsize=1)
def _lml_loop() -> Callable[..., tuple[float, Array, bool]]:
    from evocov_core.fitting._lml_loop import lml_grad  # imports Numba: only when a short series is fitted

    return lml_grad


def load_fused_loop(n: int | None = None) -> None:
    """Compile the fused loops of short series (the LML's and the PSD check's), or load them from their cache
    (once a process): a search of ``n`` training points calls it before its clock starts, so that a new
    machine's one compile (20-40 s) is not taken from its budget.

    Above :data:`~evocov_core.language.fused.FUSED_MAX_N` points (``n`` not None) it does nothing: such a
    search never fits with the loop, and its PSD checks load their scan within the budget (about a second,
    which its command's wall time then includes once, not on top of the budget)."""
    if n is not None and n > fused.FUSED_MAX_N:
        return
    _lml_loop()
    import evocov_core.language._psd_loop  # noqa: F401 - the PSD check's scan, compiled as it is imported


def _fused_lml(kernel: Kernel, inputs: Inputs, y: Array, theta: Array, log_noise: float,
               want_grad: bool) -> tuple[float, Array] | None:
    """LML (and its gradient) from one compiled call (:mod:`evocov_core.language.fused`), or None when
    the tree or the inputs are not fused, or when the factorisation needs jitter or a value is not finite:
    the general path then decides what happens."""
    call = fused.fused(kernel, inputs)
    if call is None:
        return None
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    tree = call.tree
    if t.shape[0] != tree.n_params or not log_noise < _MAX_LOG:
        return None  # the general path raises the error, or fails the candidate
    value, grad, ok = _lml_loop()(tree.table, tree.consts, t, call.Xf, call.Df, call.Xr1, call.Xr2, call.Dr,
                                  call.lags, tree.n_full, tree.n_row, np.ascontiguousarray(y, dtype=np.float64),
                                  log_noise, want_grad)
    return (value, grad) if ok else None


def lml(kernel: Kernel, inputs: Inputs, y: Array, theta: Array, log_noise: float) -> tuple[float, float]:
    """Log marginal likelihood and the jitter used.

    Parameters
    ----------
    kernel : Kernel
    inputs : Inputs
        Training inputs (symmetric).
    y : ndarray of shape (n,)
    theta : ndarray of shape (p,)
        Log slot values.
    log_noise : float
        Log noise variance.
    """
    done = _fused_lml(kernel, inputs, y, theta, log_noise, want_grad=False)
    if done is not None:
        return done[0], 0.0
    K = compiled.covariance(kernel, inputs, theta)
    if K is None:
        K = covariance(kernel, inputs, theta)
    f = factorize(K, math.exp(log_noise), overwrite=True,
                  rebuild=lambda: covariance(kernel, inputs, theta))
    alpha = f.solve(y)
    return _lml_value(f, y, alpha), f.jitter


class LMLGradient(NamedTuple):
    """What :func:`lml_and_grad` returns (a tuple: ``value, grad, jitter = lml_and_grad(...)``).

    Attributes
    ----------
    value : float
        The log marginal likelihood.
    grad : ndarray of shape (p + 1,)
        Its gradient with respect to ``[theta, log_noise]``.
    jitter : float
        The jitter the Cholesky factorisation needed (0 when none).
    """

    value: float
    grad: Array
    jitter: float


def lml_and_grad(kernel: Kernel, inputs: Inputs, y: Array, theta: Array, log_noise: float) -> LMLGradient:
    """LML and its gradient with respect to ``[theta, log_noise]`` (GPML eq. 5.9).

    ``∂LML/∂θ_j = ½ tr((ααᵀ − K_y⁻¹) ∂K/∂θ_j)``, computed as one reverse pass of the
    adjoint ``W = ½(ααᵀ − K_y⁻¹)`` through the kernel tree.
    """
    done = _fused_lml(kernel, inputs, y, theta, log_noise, want_grad=True)
    if done is not None:
        return LMLGradient(done[0], done[1], 0.0)
    K, vjp = compiled.covariance_vjp(kernel, inputs, theta) or covariance_vjp(kernel, inputs, theta)
    noise = math.exp(log_noise)
    f = factorize(K, noise, overwrite=True, rebuild=lambda: covariance(kernel, inputs, theta))
    alpha = f.solve(y)
    value = _lml_value(f, y, alpha)
    W = folded_lml_adjoint(f, alpha)
    g = np.empty(kernel.n_params + 1)
    g[:-1] = vjp(W)
    g[-1] = float(W.trace()) * noise
    return LMLGradient(value, g, f.jitter)


@dataclass(frozen=True)
class Posterior:
    """Predictive distribution at new inputs (model units).

    Attributes
    ----------
    mean : ndarray of shape (m,)
    var : ndarray of shape (m,)
        Variance of the latent f (add the noise for a new observation).
    cov : ndarray of shape (m, m) or None
        Full latent covariance, when requested.
    """

    mean: Array
    var: Array
    cov: Array | None = None


#: Rows of ``X_new`` per block in :func:`posterior`: the cross-covariance stays ≤ this × n.
POSTERIOR_BLOCK = 4096


def posterior(kernel: Kernel, X_train: Array | Inputs, y: Array, theta: Array, log_noise: float,
              X_new: Array, *, jitter: float | None = None, full_cov: bool = False,
              mean_only: bool = False) -> Posterior:
    """Posterior of f at ``X_new`` given training data (paper eq. 3).

    ``jitter`` reuses a known jitter (from a fit); ``None`` applies the ladder. Without
    ``full_cov``, ``X_new`` is processed in blocks of :data:`POSTERIOR_BLOCK` rows, so that
    predicting 100,000 points from 2,000 needs no 1.6 GB matrix. ``mean_only`` skips the
    variance (returned as NaN), an n²·m triangular solve: what a test RMSE needs.
    """
    inputs = X_train if isinstance(X_train, Inputs) else Inputs(X_train)
    f, alpha = condition(kernel, inputs, y, theta, log_noise, jitter=jitter)
    X_new = np.asarray(X_new, dtype=np.float64)
    if X_new.ndim == 1:
        X_new = X_new[:, None]
    if full_cov:
        Ks = covariance(kernel, Inputs(X_new, inputs.X1), theta)  # (m, n)
        with np.errstate(over="ignore", invalid="ignore"):
            V = solve_triangular(f.L, Ks.T, lower=True, check_finite=False)  # (n, m)
            C = covariance(kernel, Inputs(X_new, toeplitz=False), theta) - V.T @ V
            mean = Ks @ alpha
        return Posterior(mean, np.clip(np.diag(C).copy(), 0.0, None), C)
    return predict_conditioned(kernel, inputs, f, alpha, theta, X_new, mean_only=mean_only)


def condition(kernel: Kernel, inputs: Inputs, y: Array, theta: Array, log_noise: float, *,
              jitter: float | None = None) -> tuple[Factor, Array]:
    """The Cholesky factor of ``K + σ²I`` on the training ``inputs`` and ``α = (K + σ²I)⁻¹ y``
    (shape (n,)): what every prediction from these data shares (:func:`posterior`).
    ``jitter`` reuses a known jitter (from a fit); ``None`` applies the ladder."""
    K = covariance(kernel, inputs, theta)
    noise = math.exp(log_noise)
    if jitter is None:
        f = factorize(K, noise)
    else:
        f = factorize(K, noise + jitter)
        f = Factor(f.L, jitter + f.jitter)
    return f, f.solve(y)


def predict_conditioned(kernel: Kernel, inputs: Inputs, factor: Factor, alpha: Array, theta: Array,
                        X_new: Array, *, mean_only: bool = False) -> Posterior:
    """Posterior mean and latent variance at ``X_new`` (m, d) from :func:`condition`'s ``factor``
    and ``alpha``, in blocks of :data:`POSTERIOR_BLOCK` rows (variance NaN with ``mean_only``)."""
    means, variances = [], []
    for i in range(0, max(1, X_new.shape[0]), POSTERIOR_BLOCK):
        Xb = X_new[i:i + POSTERIOR_BLOCK]
        Ks = covariance(kernel, Inputs(Xb, inputs.X1), theta)  # (b, n)
        # A kernel fitted on the training range can overflow far from it: the mean and variance
        # there come out inf or NaN, which callers check (a candidate's test RMSE becomes None).
        with np.errstate(over="ignore", invalid="ignore"):
            means.append(Ks @ alpha)
            if mean_only:
                continue
            V = solve_triangular(factor.L, Ks.T, lower=True, check_finite=False)  # (n, b)
            variances.append(covariance_diag(kernel, Xb, theta) - np.einsum("ij,ij->j", V, V))
    mean = np.concatenate(means)
    if mean_only:
        return Posterior(mean, np.full(mean.shape, np.nan))
    return Posterior(mean, np.clip(np.concatenate(variances), 0.0, None))
