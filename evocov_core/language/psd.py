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
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    lo, hi = config.box
    worst = np.inf
    for k in range(config.w):
        X = rng.uniform(lo, hi, size=(config.n_points, config.d))
        X[-1] = X[0] + 1e-6 * (hi - lo)  # a near-duplicate pair
        theta = rng.uniform(*config.theta_range, size=kernel.n_params)
        C = covariance(kernel, Inputs(X, toeplitz=False), theta)
        if not np.all(np.isfinite(C)):
            return PSDReport(False, "not finite", f"non-finite covariance on data set {k}", k, worst)
        scale = max(1.0, float(np.max(np.abs(C))))
        asym = float(np.max(np.abs(C - C.T)))
        if asym > config.sym_tol * scale:
            return PSDReport(False, "asymmetric", f"max|C - C^T| = {asym:.3g} on data set {k}", k, worst)
        dmin = float(np.min(np.diag(C)))
        if dmin < -config.eig_tol * scale:
            return PSDReport(False, "negative diagonal", f"min diagonal = {dmin:.3g} on data set {k}", k, worst)
        try:
            # Halve before adding: C + C.T overflows when entries are near the largest float.
            lam = np.linalg.eigvalsh(0.5 * C + 0.5 * C.T)
        except np.linalg.LinAlgError:
            # LAPACK's eigensolver did not converge (entries spanning hundreds of orders of
            # magnitude): such a kernel cannot be used safely either.
            return PSDReport(False, "eigenvalues did not converge",
                             f"the eigenvalue solver failed on data set {k}", k, worst)
        rel = float(lam[0] / max(1.0, lam[-1]))
        worst = min(worst, rel)
        if rel < -config.eig_tol:
            return PSDReport(
                False, "negative eigenvalue",
                f"min eigenvalue = {lam[0]:.3g} (max {lam[-1]:.3g}) on data set {k}", k, worst,
            )
    return PSDReport(True, "ok", f"passed on {config.w} random data sets", -1, worst)
