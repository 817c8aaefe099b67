"""The fast empirical PSD check of the paper's section 4.1.2.

A kernel is evaluated on ``w`` random data sets, each with its own random
hyperparameters, and rejected at the first covariance matrix ``C`` that

1. is not finite (overflow, ``1/0``, ``sqrt`` of a negative),
2. is not symmetric: ``max|C − Cᵀ| > sym_tol · max(1, max|C|)``,
3. has a negative diagonal entry ``c_ii < −eig_tol · max(1, max|C|)``, or
4. has an eigenvalue ``λ_min < −eig_tol · max(1, λ_max)``.

Passing is necessary, not sufficient, for positive semi-definiteness. The relative
tolerance ``eig_tol = 1e-8`` sits far above the rounding error of ``eigvalsh`` on
these small matrices (about ``n·ε·λ_max ≈ 1e-14``), and far below the eigenvalues of a
truly indefinite kernel.

Each data set has ``n_points`` inputs drawn uniformly from the box the model sees
(the normalised training inputs span [1, 2]; the box adds a margin for
extrapolation), plus one near-duplicate point, which exposes kernels that fail at
small distances. Hyperparameters are drawn log-uniformly from ``theta_range``, a
moderate range where evaluation is numerically meaningful.

A tree the fused loop knows (:mod:`evocov_core.language.fused`), on inputs of one
dimension, is checked in one compiled call over its data sets
(:mod:`evocov_core.language._psd_loop`): the same draws, tests and eigenvalues, with
the same outcome, about 2.5 times faster; any other tree runs the loop below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType

import numpy as np

from evocov_core.language import compiled, fused
from evocov_core.language.evaluate import Inputs
from evocov_core.language.evaluate import covariance as _walk_covariance
from evocov_core.language.kernel import Kernel

__all__ = ["PSDConfig", "PSDReport", "check_psd"]


@dataclass(frozen=True)
class PSDConfig:
    """Settings of the PSD check (paper default ``w = 20``)."""

    w: int = 20
    n_points: int = 24
    d: int = 1
    box: tuple[float, float] = (0.8, 2.4)
    theta_range: tuple[float, float] = (-2.0, 2.0)
    sym_tol: float = 1e-10
    eig_tol: float = 1e-8


@dataclass(frozen=True)
class PSDReport:
    """Outcome of :func:`check_psd`.

    Attributes
    ----------
    ok : bool
    condition : str
        ``"ok"``, ``"not finite"``, ``"asymmetric"``, ``"negative diagonal"``,
        ``"negative eigenvalue"`` or ``"eigenvalues did not converge"``.
    detail : str
        Human-readable description with the offending numbers.
    dataset : int
        Index of the failing data set (-1 when ok).
    min_eigenvalue : float
        Smallest relative eigenvalue seen (``λ_min / max(1, λ_max)``) over the data sets checked.
    """

    ok: bool
    condition: str
    detail: str
    dataset: int = -1
    min_eigenvalue: float = field(default=float("nan"))

    def __str__(self) -> str:
        return "PSD check passed" if self.ok else f"not PSD ({self.condition}): {self.detail}"


def covariance(kernel: Kernel, inputs: Inputs, theta: np.ndarray) -> np.ndarray:
    """K on one random data set: the fused loop's (:mod:`evocov_core.language.fused`), else the compiled tree's
    (:mod:`evocov_core.language.compiled`, the stack walk's floats), else the walk's.

    Returns
    -------
    ndarray of shape (n, n)
    """
    C = fused.covariance(kernel, inputs, theta)
    if C is None:
        C = compiled.covariance(kernel, inputs, theta)
    return _walk_covariance(kernel, inputs, theta) if C is None else C


def check_psd(kernel: Kernel, rng: np.random.Generator, config: PSDConfig = PSDConfig()) -> PSDReport:
    """Run the empirical PSD check on ``config.w`` random data sets.

    Parameters
    ----------
    kernel : Kernel
    rng : numpy.random.Generator
        Source of the random inputs and hyperparameters.
    config : PSDConfig

    Returns
    -------
    PSDReport
    """
    tree = fused.psd_tree(kernel, config.d)
    if tree is not None:
        return _check_fused(tree, kernel.n_params, rng, config)
    lo, hi = config.box
    worst = np.inf
    for k in range(config.w):
        X = rng.uniform(lo, hi, size=(config.n_points, config.d))
        X[-1] = X[0] + 1e-6 * (hi - lo)  # a near-duplicate pair
        theta = rng.uniform(*config.theta_range, size=kernel.n_params)
        C = covariance(kernel, Inputs(X, toeplitz=False), theta)
        if not np.all(np.isfinite(C)):
            return _failed("not finite", k, worst)
        scale = max(1.0, float(np.max(np.abs(C))))
        asym = float(np.max(np.abs(C - C.T)))
        if asym > config.sym_tol * scale:
            return _failed("asymmetric", k, worst, asym)
        dmin = float(np.min(np.diag(C)))
        if dmin < -config.eig_tol * scale:
            return _failed("negative diagonal", k, worst, dmin)
        try:
            # Halve before adding: C + C.T overflows when entries are near the largest float.
            lam = np.linalg.eigvalsh(0.5 * C + 0.5 * C.T)
        except np.linalg.LinAlgError:
            # LAPACK's eigensolver did not converge (entries spanning hundreds of orders of
            # magnitude): such a kernel cannot be used safely either.
            return _failed("eigenvalues did not converge", k, worst)
        rel = float(lam[0] / max(1.0, lam[-1]))
        worst = min(worst, rel)
        if rel < -config.eig_tol:
            return _failed("negative eigenvalue", k, worst, float(lam[0]), float(lam[-1]))
    return PSDReport(True, "ok", f"passed on {config.w} random data sets", -1, worst)


# Each failed condition's message, filled with the data set k and up to two numbers a, b.
_DETAILS = {
    "not finite": "non-finite covariance on data set {k}",
    "asymmetric": "max|C - C^T| = {a:.3g} on data set {k}",
    "negative diagonal": "min diagonal = {a:.3g} on data set {k}",
    "eigenvalues did not converge": "the eigenvalue solver failed on data set {k}",
    "negative eigenvalue": "min eigenvalue = {a:.3g} (max {b:.3g}) on data set {k}",
}


def _failed(condition: str, k: int, worst: float, a: float = float("nan"), b: float = float("nan")) -> PSDReport:
    return PSDReport(False, condition, _DETAILS[condition].format(k=k, a=a, b=b), k, worst)


@lru_cache(maxsize=1)
def _psd_loop() -> ModuleType:
    from evocov_core.language import _psd_loop  # imports Numba: only when a tree is checked

    return _psd_loop


def _check_fused(tree: fused.Fused, n_params: int, rng: np.random.Generator, config: PSDConfig) -> PSDReport:
    """:func:`check_psd` in one compiled call over the data sets (:func:`evocov_core.language._psd_loop.scan`).

    The draws are the loop's: each data set's ``n_points · d`` inputs, then its ``n_params`` hyperparameters,
    ``low + (high − low) · u`` as ``Generator.uniform`` computes them. They are drawn for every data set at
    once; when data set ``k`` fails, the generator is put back where the loop would leave it, after data set
    ``k``'s draws, so that what the caller draws next is the same.
    """
    lo, hi = config.box
    t_lo, t_hi = config.theta_range
    w, n, d = config.w, config.n_points, config.d
    per = n * d + n_params
    state = rng.bit_generator.state
    U = rng.random((w, per))
    Xs = lo + (hi - lo) * U[:, : n * d].reshape(w, n, d)
    Xs[:, -1] = Xs[:, 0] + 1e-6 * (hi - lo)  # a near-duplicate pair
    thetas = np.exp(t_lo + (t_hi - t_lo) * U[:, n * d:])
    loop = _psd_loop()
    k, code, a, b, worst = loop.scan(tree.table, tree.consts, Xs, thetas, tree.n_full, tree.n_row,
                                     config.sym_tol, config.eig_tol)
    if k < 0:
        return PSDReport(True, "ok", f"passed on {config.w} random data sets", -1, worst)
    if k < w - 1:
        rng.bit_generator.state = state
        rng.random((k + 1) * per)
    return _failed(loop.CONDITIONS[code], k, worst, a, b)
