"""The empirical PSD check as one compiled call over its data sets (importing this module imports Numba).

:func:`scan` runs :mod:`evocov_core.language.psd`'s four tests on each random data set in turn, with the fused
tree (:mod:`evocov_core.language._fused_loops`) for K and LAPACK's ``dsyevd`` (scipy's, the routine
``numpy.linalg.eigvalsh`` calls) for its eigenvalues. The tests, their order and their arithmetic are
``check_psd``'s, so the two agree on every outcome (``tests/language/test_psd.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

from evocov_core.language._fused_loops import F1, F2, I2, forward
from evocov_core.language._lapack import routine

__all__ = ["CONDITIONS", "scan"]

#: What :func:`scan` finds, by its code: :class:`evocov_core.language.psd.PSDReport`'s conditions.
CONDITIONS = ("ok", "not finite", "asymmetric", "negative diagonal", "eigenvalues did not converge",
              "negative eigenvalue")
OK, NOT_FINITE, ASYMMETRIC, NEGATIVE_DIAGONAL, NO_CONVERGENCE, NEGATIVE_EIGENVALUE = range(len(CONDITIONS))

_dsyevd = routine("dsyevd", 11)
_F3 = types.Array(types.float64, 3, "C", readonly=True)

#: scan(table, consts, Xs, thetas, n_full, n_row, sym_tol, eig_tol) -> (data set, condition, a, b, worst)
SCAN = types.Tuple((types.int64, types.int64, types.float64, types.float64, types.float64))(
    I2, F1, _F3, F2, types.int64, types.int64, types.float64, types.float64)


@numba.njit(cache=True, nogil=True)
def _eigenvalues(A, lam, work, iwork):
    """``dsyevd``'s eigenvalues (ascending, into ``lam``) of the symmetric ``A`` (overwritten); LAPACK's info."""
    n = A.shape[0]
    jobz = np.array([ord("N")], np.uint8)
    uplo = np.array([ord("L")], np.uint8)
    nn = np.array([n], np.int32)
    lwork = np.array([work.shape[0]], np.int32)
    liwork = np.array([iwork.shape[0]], np.int32)
    info = np.zeros(1, np.int32)
    _dsyevd(jobz.ctypes, uplo.ctypes, nn.ctypes, A.ctypes, nn.ctypes, lam.ctypes, work.ctypes, lwork.ctypes,
            iwork.ctypes, liwork.ctypes, info.ctypes)
    return info[0]


@numba.njit(cache=True, nogil=True)
def _workspace(n):
    """The workspaces ``dsyevd`` asks for at ``n`` (its query, as numpy makes it)."""
    A = np.zeros((n, n))
    lam = np.empty(n)
    work = np.empty(1)
    iwork = np.empty(1, np.int32)
    jobz = np.array([ord("N")], np.uint8)
    uplo = np.array([ord("L")], np.uint8)
    nn = np.array([n], np.int32)
    query = np.array([-1], np.int32)
    info = np.zeros(1, np.int32)
    _dsyevd(jobz.ctypes, uplo.ctypes, nn.ctypes, A.ctypes, nn.ctypes, lam.ctypes, work.ctypes, query.ctypes,
            iwork.ctypes, query.ctypes, info.ctypes)
    return np.empty(max(1, int(work[0]))), np.empty(max(1, int(iwork[0])), np.int32)


@numba.njit(SCAN, cache=True, nogil=True, error_model="numpy")
def scan(table, consts, Xs, thetas, n_full, n_row, sym_tol, eig_tol):
    """The first data set ``k`` (of ``Xs`` (w, n, 1) and ``thetas`` (w, p), θ itself) that fails, its condition
    (an index of :data:`CONDITIONS`) and two numbers for the message, and the smallest relative
    eigenvalue seen before it; ``k`` is -1 when every data set passes."""
    w, n, _ = Xs.shape
    none = np.zeros((0, 0))
    no_lags = np.zeros((0, 0), np.int64)
    D = np.empty((n, n))
    C = np.empty((n, n))
    A = np.empty((n, n))
    lam = np.empty(n)
    work, iwork = _workspace(n)
    worst = math.inf
    for k in range(w):
        X = Xs[k]
        for i in range(n):
            for j in range(n):
                diff = X[i, 0] - X[j, 0]
                D[i, j] = diff * diff
            D[i, i] = 0.0
        V, _, S = forward(table, consts, thetas[k], X, D, none, none, none, no_lags, n_full, n_row)
        if table[0, 8]:
            C[:, :] = V[table[0, 13] if table[0, 11] else table[0, 12]]
        else:
            C[:, :] = S[0]
        big = 0.0
        for i in range(n):
            for j in range(n):
                if not math.isfinite(C[i, j]):
                    return k, NOT_FINITE, math.nan, math.nan, worst
                big = max(big, abs(C[i, j]))
        scale = max(1.0, big)
        asym = 0.0
        for i in range(n):
            for j in range(n):
                asym = max(asym, abs(C[i, j] - C[j, i]))
        if asym > sym_tol * scale:
            return k, ASYMMETRIC, asym, math.nan, worst
        dmin = math.inf
        for i in range(n):
            dmin = min(dmin, C[i, i])
        if dmin < -eig_tol * scale:
            return k, NEGATIVE_DIAGONAL, dmin, math.nan, worst
        for i in range(n):
            for j in range(n):
                A[i, j] = 0.5 * C[i, j] + 0.5 * C[j, i]
        if _eigenvalues(A, lam, work, iwork) != 0:
            return k, NO_CONVERGENCE, math.nan, math.nan, worst
        rel = lam[0] / max(1.0, lam[n - 1])
        worst = min(worst, rel)
        if rel < -eig_tol:
            return k, NEGATIVE_EIGENVALUE, lam[0], lam[n - 1], worst
    return -1, OK, math.nan, math.nan, worst
