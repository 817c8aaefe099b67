"""The compiled loops of :mod:`evocov_core.language.fused` (importing this module imports Numba).

A tree is a table (:data:`COLUMNS`), one row a node in prefix order. Each array-valued node owns a slab of a
tape: of ``V`` (n, n) on the full pair, or of ``R`` (1, m) on the lag row; a row subtree's root also owns a
slab of ``V`` for its expansion, which its parent reads. ``forward`` fills the tapes and ``S`` (a slot's θ, a
constant, a spectral map's ω, a scalar node's value); ``reverse`` walks the nodes parent before child, gives
each child the adjoint of its value, reduces an expanded root's adjoint onto its lag row, and adds each
slot's ``∂f/∂log θ``. The rules and their special cases (``div`` of a scalar 0, ``sqrt``'s derivative at 0,
``power`` of a base that is not positive, the spectral distance clipped at 0 with its diagonal exactly 0,
the damped trend's series near 0) are the walk's, in :mod:`evocov_core.language.operators`. No fast-math:
every sum runs in index order, so the floats are the same on every x86-64-v3 processor.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

# Codes (evocov_core.language.fused maps tokens to them).
SLOT, CONST, X, HP, EUC, SPECTRAL, SQ_DIST, DOT_PROD = 0, 1, 2, 3, 4, 5, 6, 7
ADD, MUL, EXP, SQRT, DIV, SQUARE, POWER = 8, 9, 10, 11, 12, 13, 14
CHANGEPOINT, WIENER, IWIENER, DAMPED = 15, 16, 17, 18

#: The table's columns: the code, six children (-1 when absent), the slot's position in θ, whether the value
#: is an array, whether it depends on θ, whether it is evaluated on the lag row, whether it is a row
#: subtree's root, its slab (of V or R), and a root's slab of V for its expansion.
COLUMNS = ("code", "c0", "c1", "c2", "c3", "c4", "c5", "pos", "mat", "param", "row", "root", "slab", "xslab")
_CODE, _C0, _C1, _C2, _C3, _C4, _C5, _POS, _MAT, _PARAM, _ROW, _ROOT, _SLAB, _XSLAB = range(14)

# φ(u) = e^(−u) − 1 + u and ψ(u) = (2 + u)e^(−u) − 2 + u by their Taylor series below 0.1 (operators.py).
_SERIES_BELOW = 0.1
_PHI = np.array([(-1.0) ** k / math.factorial(k) for k in range(2, 14)])
_PSI = np.array([(-1.0) ** (k + 1) * (k - 2) / math.factorial(k) for k in range(3, 15)])

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


def _ro(dtype: types.Type, ndim: int) -> types.Array:
    # Read-only, C-ordered: writable arrays convert to it, so one compiled version serves every caller.
    return types.Array(dtype, ndim, "C", readonly=True)


F1, F2, I2 = _ro(types.float64, 1), _ro(types.float64, 2), _ro(types.int64, 2)
_F3 = types.Array(types.float64, 3, "C")
_F1W = types.Array(types.float64, 1, "C")
#: forward(table, consts, theta, Xf, Df, Xr1, Xr2, Dr, lags, n_full, n_row) -> V, R, S
FORWARD = types.Tuple((_F3, _F3, _F1W))(I2, F1, F1, F2, F2, F2, F2, F2, I2, types.int64, types.int64)


@_jit
def _series(u, coefs, lowest):
    acc = coefs[coefs.shape[0] - 1]
    for k in range(coefs.shape[0] - 2, -1, -1):
        acc = acc * u + coefs[k]
    return acc * u ** lowest


@_jit
def _phi(u):
    if u < _SERIES_BELOW:
        return _series(u, _PHI, 2)
    return math.expm1(-u) + u


@_jit
def _psi(u):
    if u < _SERIES_BELOW:
        return _series(u, _PSI, 3)
    return (2.0 + u) * math.exp(-u) - 2.0 + u


@_jit
def _features(X, om):
    """``[sin(ωx), cos(ωx)]`` (n, 2d) and its derivative in ω, ``[x cos(ωx), −x sin(ωx)]``."""
    n, d = X.shape
    F = np.empty((n, 2 * d))
    dF = np.empty((n, 2 * d))
    for a in range(n):
        for k in range(d):
            s = math.sin(X[a, k] * om)
            c = math.cos(X[a, k] * om)
            F[a, k] = s
            F[a, d + k] = c
            dF[a, k] = X[a, k] * c
            dF[a, d + k] = -X[a, k] * s
    return F, dF


@_jit
def _geometry(table, i, Xf, Df, Xr1, Xr2, Dr):
    """The pair node ``i`` is evaluated on: both sides and their squared distances."""
    if table[i, _ROW]:
        return Xr1, Xr2, Dr
    return Xf, Xf, Df


@_jit
def _value(table, c, parent_row, V, R):
    """Node ``c``'s array value as a parent on the full pair (``parent_row`` False) or the row reads it; given
    the adjoint tapes (same layout), where the adjoint of that value goes."""
    if table[c, _ROOT] and not parent_row:
        return V[table[c, _XSLAB]]
    if table[c, _ROW]:
        return R[table[c, _SLAB]]
    return V[table[c, _SLAB]]



@_jit
def _times(X1, X2):
    t1 = np.empty(X1.shape[0])
    t2 = np.empty(X2.shape[0])
    for a in range(X1.shape[0]):
        t1[a] = max(X1[a, 0] - 1.0, 0.0)
    for b in range(X2.shape[0]):
        t2[b] = max(X2[b, 0] - 1.0, 0.0)
    return t1, t2


@_jit
def _side_terms(t, tau, derivative):
    """φ(t/τ) (or ψ(t/τ), the derivative's term) for each time of one side."""
    out = np.empty(t.shape[0])
    for a in range(t.shape[0]):
        out[a] = _psi(t[a] / tau) if derivative else _phi(t[a] / tau)
    return out


@_jit
def _switch(X, loc, width):
    s = np.empty(X.shape[0])
    for a in range(X.shape[0]):
        s[a] = 1.0 / (1.0 + math.exp(-((X[a, 0] - loc) / width)))
    return s


@_jit
def _scalar_value(code, u, v):
    """A node whose value is a scalar: its children's values ``u`` (and ``v``) are scalars too."""
    if code == ADD:
        return u + v
    if code == MUL:
        return u * v
    if code == EXP:
        return math.exp(u)
    if code == SQRT:
        return math.sqrt(u) if u >= 0.0 else math.nan
    if code == SQUARE:
        return u * u
    if code == DIV:
        return 1.0 / u if u != 0.0 else math.inf
    return u ** v  # POWER


@_jit
def _data_value(table, i, out, X1, X2, D, V, R, S):
    """The value of a node that reads the inputs (distances, dot products, change points, time forms)."""
    code = table[i, _CODE]
    c0, c1, c2 = table[i, _C0], table[i, _C1], table[i, _C2]
    row = table[i, _ROW] != 0
    rows, cols = out.shape
    if code == SQ_DIST:
        inv = 1.0 / S[c1] ** 2
        if table[c0, _CODE] == EUC:
            for a in range(rows):
                for b in range(cols):
                    out[a, b] = D[a, b] * inv
        else:
            P1, _ = _features(X1, S[c0])
            P2, _ = _features(X2, S[c0])
            two_d = float(P1.shape[1])
            for a in range(rows):
                for b in range(cols):
                    g = 0.0
                    for k in range(P1.shape[1]):
                        g += P1[a, k] * P2[b, k]
                    z = (two_d - 2.0 * g) * inv
                    out[a, b] = z if z > 0.0 else 0.0
            for a in range(min(rows, cols)):
                out[a, a] = 0.0
    elif code == DOT_PROD:
        s, l_ = S[c1], S[c2]
        if table[c0, _CODE] == EUC:
            A1, A2 = X1, X2
        else:
            A1, _ = _features(X1, S[c0])
            A2, _ = _features(X2, S[c0])
        for a in range(rows):
            for b in range(cols):
                g = 0.0
                for k in range(A1.shape[1]):
                    g += (A1[a, k] - s) * (A2[b, k] - s)
                out[a, b] = g / l_
    elif code == CHANGEPOINT:
        s1 = _switch(X1, S[table[i, _C3]], S[table[i, _C4]])
        s2 = _switch(X2, S[table[i, _C3]], S[table[i, _C4]])
        mu, mv = table[c1, _MAT] != 0, table[c2, _MAT] != 0
        u = _value(table, c1, row, V, R) if mu else out
        v = _value(table, c2, row, V, R) if mv else out
        for a in range(rows):
            for b in range(cols):
                x = u[a, b] if mu else S[c1]
                y = v[a, b] if mv else S[c2]
                out[a, b] = (1.0 - s1[a]) * (1.0 - s2[b]) * x + s1[a] * s2[b] * y
    elif code in (WIENER, IWIENER, DAMPED):
        t1, t2 = _times(X1, X2)
        if code == DAMPED:
            tau = S[c1]
            p1, p2 = _side_terms(t1, tau, False), _side_terms(t2, tau, False)
            for a in range(rows):
                for b in range(cols):
                    out[a, b] = (p1[a] + p2[b] - _phi(abs(t1[a] / tau - t2[b] / tau))) * (tau * tau)
        else:
            for a in range(rows):
                for b in range(cols):
                    lo, hi = min(t1[a], t2[b]), max(t1[a], t2[b])
                    out[a, b] = lo if code == WIENER else (3.0 * hi - lo) * lo * lo * (1.0 / 6.0)


@_jit
def _arith_value(table, i, out, V, R, S):
    """The value of an arithmetic node with an array among its children."""
    code = table[i, _CODE]
    c0, c1 = table[i, _C0], table[i, _C1]
    row = table[i, _ROW] != 0
    rows, cols = out.shape
    if code in (ADD, MUL):
        m0, m1 = table[c0, _MAT] != 0, table[c1, _MAT] != 0
        u = _value(table, c0, row, V, R) if m0 else out
        v = _value(table, c1, row, V, R) if m1 else out
        su, sv = S[c0], S[c1]
        for a in range(rows):
            for b in range(cols):
                x = u[a, b] if m0 else su
                y = v[a, b] if m1 else sv
                out[a, b] = x + y if code == ADD else x * y
    elif code in (EXP, SQRT, SQUARE, DIV):
        w = _value(table, c0, row, V, R)
        for a in range(rows):
            for b in range(cols):
                x = w[a, b]
                if code == EXP:
                    out[a, b] = math.exp(x)
                elif code == SQRT:
                    out[a, b] = math.sqrt(x) if x >= 0.0 else math.nan
                elif code == SQUARE:
                    out[a, b] = x * x
                else:
                    out[a, b] = 1.0 / x
    elif code == POWER:
        w = _value(table, c0, row, V, R)
        th = S[c1]
        for a in range(rows):
            for b in range(cols):
                out[a, b] = w[a, b] ** th


@numba.njit(FORWARD, cache=True, nogil=True, error_model="numpy")
def forward(table, consts, theta, Xf, Df, Xr1, Xr2, Dr, lags, n_full, n_row):
    """Every node's value: the slabs ``V`` (n_full, n, n) and ``R`` (n_row, 1, m), and ``S`` (N,) for
    scalars; each row subtree's root also expanded into its slab of ``V``."""
    N = table.shape[0]
    n = Xf.shape[0]
    m = Xr2.shape[0]
    V = np.empty((n_full, n, n))
    R = np.empty((n_row, 1, m))
    S = np.zeros(N)
    for i in range(N - 1, -1, -1):
        code = table[i, _CODE]
        c0, c1 = table[i, _C0], table[i, _C1]
        row = table[i, _ROW] != 0
        if code == SLOT:
            S[i] = theta[table[i, _POS]]
            continue
        if code == CONST:
            S[i] = consts[i]
            continue
        if code == HP:
            S[i] = S[c0]
            continue
        if code == SPECTRAL:
            S[i] = S[c1]
            continue
        if code in (X, EUC):
            continue
        if not table[i, _MAT]:  # a scalar node: constants and slots only below it
            S[i] = _scalar_value(code, S[c0], S[c1] if c1 >= 0 else 0.0)
            continue
        out = R[table[i, _SLAB]] if row else V[table[i, _SLAB]]
        X1, X2, D = _geometry(table, i, Xf, Df, Xr1, Xr2, Dr)
        if code in (SQ_DIST, DOT_PROD, CHANGEPOINT, WIENER, IWIENER, DAMPED):
            _data_value(table, i, out, X1, X2, D, V, R, S)
        else:
            _arith_value(table, i, out, V, R, S)
        if table[i, _ROOT]:
            expanded = V[table[i, _XSLAB]]
            for a in range(n):
                for b in range(n):
                    expanded[a, b] = out[0, lags[a, b]]
    return V, R, S


#: reverse(table, theta, Xf, Xr1, Xr2, lags, V, R, S, seed) -> ∂/∂log θ (p,); the seed is the adjoint of
#: the root's value on the full pair (n, n), or (1, 1) holding its sum when the root is a scalar.
REVERSE = _F1W(I2, F1, F2, F2, F2, I2, _F3, _F3, _F1W, F2)



@_jit
def _reverse_scalar(table, i, AS, S, grad):
    """The adjoints of a scalar node's children (scalars too) and its slots' gradient."""
    code = table[i, _CODE]
    c0, c1 = table[i, _C0], table[i, _C1]
    a = AS[i]
    if code == ADD:
        AS[c0] = a
        AS[c1] = a
    elif code == MUL:
        AS[c0] = a * S[c1]
        AS[c1] = a * S[c0]
    elif code == EXP:
        AS[c0] = a * S[i]
    elif code == SQRT:
        AS[c0] = a * (0.5 / S[i] if S[i] > 0.0 else 0.0)
    elif code == SQUARE:
        AS[c0] = a * (2.0 * S[c0])
    elif code == DIV:
        AS[c0] = a * -(S[i] * S[i])
    elif code == POWER:
        base, z, th = S[c0], S[i], S[c1]
        AS[c0] = a * (th * z / base) if base != 0.0 else 0.0
        if base > 0.0:
            grad[table[c1, _POS]] += a * z * math.log(base) * th


@_jit
def _reverse_arith(table, i, A, z, V, R, S, AV, AR, AS, grad):
    """The adjoints of an arithmetic node's children, for its adjoint ``A`` and value ``z``."""
    code = table[i, _CODE]
    c0, c1 = table[i, _C0], table[i, _C1]
    row = table[i, _ROW] != 0
    rows, cols = A.shape
    if code in (ADD, MUL):
        for side in range(2):
            c = c0 if side == 0 else c1
            o = c1 if side == 0 else c0
            if not table[c, _PARAM]:
                continue
            mo = table[o, _MAT] != 0
            ov = _value(table, o, row, V, R) if mo else A
            if table[c, _MAT]:
                ac = _value(table, c, row, AV, AR)
                for a in range(rows):
                    for b in range(cols):
                        if code == ADD:
                            ac[a, b] = A[a, b]
                        else:
                            ac[a, b] = A[a, b] * (ov[a, b] if mo else S[o])
            else:
                t = 0.0
                for a in range(rows):
                    for b in range(cols):
                        if code == ADD:
                            t += A[a, b]
                        else:
                            t += A[a, b] * (ov[a, b] if mo else S[o])
                AS[c] = t
    elif code in (EXP, SQRT, SQUARE, DIV):
        w = _value(table, c0, row, V, R)
        ac = _value(table, c0, row, AV, AR)
        for a in range(rows):
            for b in range(cols):
                if code == EXP:
                    d = z[a, b]
                elif code == SQRT:
                    d = 0.5 / z[a, b] if z[a, b] > 0.0 else 0.0
                elif code == SQUARE:
                    d = 2.0 * w[a, b]
                else:
                    d = -(z[a, b] * z[a, b])
                ac[a, b] = A[a, b] * d
    elif code == POWER:
        th = S[c1]
        w = _value(table, c0, row, V, R)
        ac = _value(table, c0, row, AV, AR)
        gz = 0.0
        for a in range(rows):
            for b in range(cols):
                base, zz, adj = w[a, b], z[a, b], A[a, b]
                if table[c0, _PARAM]:
                    ac[a, b] = adj * (th * zz / base) if base != 0.0 else 0.0
                if base > 0.0:
                    gz += adj * zz * math.log(base)
        grad[table[c1, _POS]] += gz * th


@_jit
def _reverse_data(table, i, A, z, X1, X2, S, grad):
    """The slots' gradient of a node that reads the inputs (distances, dot products, the damped trend)."""
    code = table[i, _CODE]
    c0, c1, c2 = table[i, _C0], table[i, _C1], table[i, _C2]
    rows, cols = A.shape
    if code == SQ_DIST:
        t = 0.0
        for a in range(rows):
            for b in range(cols):
                t += A[a, b] * z[a, b]
        grad[table[c1, _POS]] += -2.0 * t
        if table[c0, _CODE] == SPECTRAL and table[c0, _PARAM]:
            om, l_ = S[c0], S[c1]
            P1, dP1 = _features(X1, om)
            P2, dP2 = _features(X2, om)
            g = 0.0
            for a in range(rows):
                for b in range(cols):
                    h = 0.0
                    for k in range(P1.shape[1]):
                        h += dP1[a, k] * P2[b, k] + P1[a, k] * dP2[b, k]
                    g += A[a, b] * h
            grad[table[table[c0, _C1], _POS]] += (-2.0 / l_ ** 2) * g * om
    elif code == DOT_PROD:
        s, l_ = S[c1], S[c2]
        spectral = table[c0, _CODE] == SPECTRAL
        if spectral:
            A1, dA1 = _features(X1, S[c0])
            A2, dA2 = _features(X2, S[c0])
        else:
            A1, dA1, A2, dA2 = X1, X1, X2, X2
        dim = A1.shape[1]
        ds = 0.0
        dl = 0.0
        dom = 0.0
        for a in range(rows):
            r1 = 0.0
            for k in range(dim):
                r1 += A1[a, k] - s
            for b in range(cols):
                r2 = 0.0
                h = 0.0
                for k in range(dim):
                    r2 += A2[b, k] - s
                    if spectral:
                        h += dA1[a, k] * (A2[b, k] - s) + (A1[a, k] - s) * dA2[b, k]
                adj = A[a, b]
                ds += adj * (r1 + r2)
                dl += adj * z[a, b]
                dom += adj * h
        grad[table[c1, _POS]] += -ds / l_ * s
        grad[table[c2, _POS]] += -dl
        if spectral and table[c0, _PARAM]:
            grad[table[table[c0, _C1], _POS]] += dom / l_ * S[c0]
    elif code == DAMPED:
        tau = S[c1]
        t1, t2 = _times(X1, X2)
        q1, q2 = _side_terms(t1, tau, True), _side_terms(t2, tau, True)
        t = 0.0
        for a in range(rows):
            for b in range(cols):
                t += A[a, b] * ((q1[a] + q2[b] - _psi(abs(t1[a] / tau - t2[b] / tau))) * (tau * tau))
        grad[table[c1, _POS]] += t


@_jit
def _reverse_changepoint(table, i, A, X1, X2, V, R, S, AV, AR, AS, grad):
    """A change point's operands' adjoints and its location's and width's gradient."""
    c1, c2 = table[i, _C1], table[i, _C2]
    row = table[i, _ROW] != 0
    rows, cols = A.shape
    c3, c4 = table[i, _C3], table[i, _C4]
    loc, width = S[c3], S[c4]
    s1 = _switch(X1, loc, width)
    s2 = _switch(X2, loc, width)
    mu, mv = table[c1, _MAT] != 0, table[c2, _MAT] != 0
    u = _value(table, c1, row, V, R) if mu else A
    v = _value(table, c2, row, V, R) if mv else A
    au_mat, av_mat = table[c1, _PARAM] and mu, table[c2, _PARAM] and mv
    adj_u = _value(table, c1, row, AV, AR) if au_mat else A
    adj_v = _value(table, c2, row, AV, AR) if av_mat else A
    su = 0.0
    sv = 0.0
    gc = 0.0
    gs = 0.0
    for a in range(rows):
        g1 = s1[a] * (1.0 - s1[a])
        r1 = (X1[a, 0] - loc) / width
        for b in range(cols):
            g2 = s2[b] * (1.0 - s2[b])
            r2 = (X2[b, 0] - loc) / width
            adj = A[a, b]
            before = (1.0 - s1[a]) * (1.0 - s2[b])
            after = s1[a] * s2[b]
            if au_mat:
                adj_u[a, b] = adj * before
            else:
                su += adj * before
            if av_mat:
                adj_v[a, b] = adj * after
            else:
                sv += adj * after
            x = u[a, b] if mu else S[c1]
            y = v[a, b] if mv else S[c2]
            # ∂z = (∂s s' + s ∂s')·v − (∂s (1 − s') + (1 − s) ∂s')·u, per slot.
            dc1, dc2 = g1 * (-loc / width), g2 * (-loc / width)
            ds1, ds2 = -g1 * r1, -g2 * r2
            gc += adj * (y * (dc1 * s2[b] + s1[a] * dc2) - x * (dc1 * (1.0 - s2[b]) + (1.0 - s1[a]) * dc2))
            gs += adj * (y * (ds1 * s2[b] + s1[a] * ds2) - x * (ds1 * (1.0 - s2[b]) + (1.0 - s1[a]) * ds2))
    if table[c1, _PARAM] and not mu:
        AS[c1] = su
    if table[c2, _PARAM] and not mv:
        AS[c2] = sv
    grad[table[c3, _POS]] += gc
    grad[table[c4, _POS]] += gs


@numba.njit(REVERSE, cache=True, nogil=True, error_model="numpy")
def reverse(table, theta, Xf, Xr1, Xr2, lags, V, R, S, seed):
    """``Σ_ij seed_ij ∂K_ij/∂log θ`` (p,) for the tapes of :func:`forward`."""
    N = table.shape[0]
    n = Xf.shape[0]
    grad = np.zeros(theta.shape[0])
    AV = np.empty_like(V)
    AR = np.empty_like(R)
    AS = np.zeros(N)
    if table[0, _MAT]:
        _value(table, 0, False, AV, AR)[:, :] = seed
    else:
        AS[0] = seed[0, 0]
    for i in range(N):
        if not table[i, _PARAM]:
            continue
        code = table[i, _CODE]
        row = table[i, _ROW] != 0
        if code == SLOT:
            p = table[i, _POS]
            grad[p] += AS[i] * theta[p]
            continue
        if code == HP:
            AS[table[i, _C0]] = AS[i]
            continue
        if not table[i, _MAT]:
            _reverse_scalar(table, i, AS, S, grad)
            continue
        if table[i, _ROOT]:  # reduce the expanded value's adjoint onto the lag row
            full = AV[table[i, _XSLAB]]
            ar = AR[table[i, _SLAB]]
            ar[:, :] = 0.0
            for a_ in range(n):
                for b in range(n):
                    ar[0, lags[a_, b]] += full[a_, b]
        A = AR[table[i, _SLAB]] if row else AV[table[i, _SLAB]]
        z = R[table[i, _SLAB]] if row else V[table[i, _SLAB]]
        if code in (ADD, MUL, EXP, SQRT, SQUARE, DIV, POWER):
            _reverse_arith(table, i, A, z, V, R, S, AV, AR, AS, grad)
        elif code == CHANGEPOINT:
            X1, X2, _ = _geometry(table, i, Xf, Xf, Xr1, Xr2, Xr2)
            _reverse_changepoint(table, i, A, X1, X2, V, R, S, AV, AR, AS, grad)
        else:
            X1, X2, _ = _geometry(table, i, Xf, Xf, Xr1, Xr2, Xr2)
            _reverse_data(table, i, A, z, X1, X2, S, grad)
    return grad
