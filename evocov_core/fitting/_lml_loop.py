"""The log marginal likelihood and its gradient as one compiled call (importing this module imports Numba).

:func:`lml_grad` runs the fused tree (:mod:`evocov_core.language._fused_loops`), expands the lag row, and
factorises, solves and inverts with the LAPACK routines scipy's own wrappers call (``dpotrf``, ``dpotrs``,
``dpotri``, through ``scipy.linalg.cython_lapack``), so the factor is the one :func:`~evocov_core.fitting.gp.
factorize` computes; what it saves is the Python between them. It tries the factorisation without jitter
only: when that fails, or anything is not finite, it says so and the caller takes the general path, which
owns the jitter ladder and the reasons a fit fails.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

from evocov_core.language._fused_loops import F1, F2, I2, forward, reverse
from evocov_core.language._lapack import routine

_dpotrf = routine("dpotrf", 5)
_dpotrs = routine("dpotrs", 8)
_dpotri = routine("dpotri", 5)
_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True)
def _upper_sum(W):
    t = 0.0
    for i in range(W.shape[0]):
        for j in range(i + 1, W.shape[0]):
            t += W[i, j]
    return t


_SIGNATURE = types.Tuple((types.float64, types.Array(types.float64, 1, "C"), types.boolean))(
    I2, F1, F1, F2, F2, F2, F2, F2, I2, types.int64, types.int64, F1, types.float64, types.boolean)


@numba.njit(_SIGNATURE, cache=True, nogil=True, error_model="numpy")
def lml_grad(table, consts, log_theta, Xf, Df, Xr1, Xr2, Dr, lags, n_full, n_row, y, log_noise,
             want_grad):
    """LML and its gradient with respect to ``[log θ, log noise]`` (p + 1,), and whether the call succeeded.

    The tree's arguments are :class:`evocov_core.language.fused.FusedCall`'s. Returns ``(value, grad, ok)``;
    ``ok`` is False when the factorisation without jitter failed or a value is not finite.
    """
    n = y.shape[0]
    p = log_theta.shape[0]
    theta = np.exp(log_theta)
    noise = math.exp(log_noise)
    grad = np.zeros(p + 1)
    V, R, S = forward(table, consts, theta, Xf, Df, Xr1, Xr2, Dr, lags, n_full, n_row)
    K = np.empty((n, n))
    if table[0, 8]:
        K[:, :] = V[table[0, 13] if table[0, 11] else table[0, 12]]
    else:
        K[:, :] = S[0]
    for i in range(n):
        K[i, i] += noise
    # K is symmetric and C-ordered: LAPACK's lower triangle in Fortran order is its upper one here.
    uplo = np.array([ord("L")], np.uint8)
    nn = np.array([n], np.int32)
    one = np.array([1], np.int32)
    info = np.zeros(1, np.int32)
    _dpotrf(uplo.ctypes, nn.ctypes, K.ctypes, nn.ctypes, info.ctypes)
    if info[0] != 0:
        return math.nan, grad, False
    log_det = 0.0
    for i in range(n):
        log_det += math.log(K[i, i])
    alpha = y.copy()
    _dpotrs(uplo.ctypes, nn.ctypes, one.ctypes, K.ctypes, nn.ctypes, alpha.ctypes, nn.ctypes, info.ctypes)
    fit = 0.0
    for i in range(n):
        fit += y[i] * alpha[i]
    value = -0.5 * fit - log_det - 0.5 * n * _LOG_2PI
    if not math.isfinite(value):
        return value, grad, False
    if not want_grad:
        return value, grad, True
    _dpotri(uplo.ctypes, nn.ctypes, K.ctypes, nn.ctypes, info.ctypes)
    if info[0] != 0:
        return value, grad, False
    # W = ½(ααᵀ − K_y⁻¹), both triangles (dpotri filled the upper one of this C-ordered array).
    W = np.empty((n, n))
    trace = 0.0
    for i in range(n):
        for j in range(i, n):
            w = 0.5 * (alpha[i] * alpha[j] - K[i, j])
            W[i, j] = w
            W[j, i] = w
        trace += W[i, i]
    grad[p] = trace * noise
    if p == 0:
        return value, grad, True
    if table[0, 8]:
        seed = W
    else:
        seed = np.full((1, 1), trace + 2.0 * _upper_sum(W))
    grad[:p] = reverse(table, theta, Xf, Xr1, Xr2, lags, V, R, S, seed)
    for i in range(p + 1):
        if not math.isfinite(grad[i]):
            return value, grad, False
    return value, grad, True
