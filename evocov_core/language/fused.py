"""Fused kernel trees: K and its reverse pass as one compiled loop over the tree, for short series.

On the short series of a panel (15-150 points) a tree's evaluation is bound by numpy's cost per call, a few
microseconds a node forward and back, not by arithmetic: a stationary tree on a regular grid is evaluated on
its lag row, 19 numbers at M3's median yearly length. Here a tree becomes a table of integer codes
(:class:`Fused`), and one Numba function walks it (:mod:`evocov_core.language._fused_loops`): every node's
value into a tape, then, for an adjoint ``G``, every node's adjoint and ``Σ_ij G_ij ∂K_ij/∂log θ``. The
geometry is the walk's: the whole tree on the lag row, the full pair, or both (a non-stationary tree's
stationary subtrees on the row, expanded where their parent reads them). The rules are the walk's, elementwise
and in a fixed order, so the floats agree with the walk's to rounding (``tests/language/test_fused.py``), and
are the same on every x86-64-v3 processor.

Fused are the operators of the paper's Table 2, change points and the state-space forms, on the training
inputs (one symmetric set) of at most :data:`FUSED_MAX_N` points. A tree with any other operation (change
windows, ``cos``: a new operation needs no code here) and other inputs run
:mod:`~evocov_core.language.compiled`'s steps or the walk. The log marginal likelihood that uses it
is :func:`evocov_core.fitting.gp.lml_and_grad`. Numba is imported on first use, and compiles once per machine
(the compiled code is cached beside the module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.language.grammar import CONSTANTS
from evocov_core.language.program import _compile

if TYPE_CHECKING:
    from evocov_core.language.inputs import Inputs
    from evocov_core.language.kernel import Kernel

__all__ = ["FUSED_MAX_N", "Fused", "FusedCall", "covariance", "covariance_vjp", "fused"]

Array = NDArray[np.float64]

#: Largest training set the fused loop serves: above it the factorisation's n³ dominates, and the numpy path's
#: whole-array calls are as fast.
FUSED_MAX_N = 128

# The loop's codes (evocov_core.language._fused_loops), by token; slots and constants are recognised apart.
_CODES: dict[str, int] = {
    "x": 2, "hp": 3, "euc": 4, "spectral": 5, "sq_dist": 6, "dot_prod": 7, "add": 8, "multiply": 9, "exp": 10,
    "sqrt": 11, "div": 12, "square": 13, "power": 14, "changepoint": 15, "wiener": 16, "iwiener": 17,
    "damped": 18,
}
_SLOT, _CONST = 0, 1
_ARRAY_VALUED = frozenset({"sq_dist", "dot_prod", "changepoint", "wiener", "iwiener", "damped"})
_NO_VALUE = frozenset({"x", "euc", "spectral", "hp"})


@dataclass(frozen=True)
class Fused:
    """A kernel tree as the fused loop's table, for one geometry.

    Attributes
    ----------
    table : ndarray of shape (N, 14), int64
        One row a node, prefix order; columns :data:`evocov_core.language._fused_loops.COLUMNS`.
    consts : ndarray of shape (N,)
        The constants' values (0 elsewhere).
    n_params : int
    n_full, n_row : int
        Slabs of the full pair's tape and of the lag row's.
    """

    table: NDArray[np.int64]
    consts: Array
    n_params: int
    n_full: int
    n_row: int


@lru_cache(maxsize=4096)
def _build(tokens: tuple[str, ...], geometry: str) -> Fused | None:
    """The table of ``tokens`` evaluated on ``geometry``: ``"row"`` (the whole tree on the lag row),
    ``"mixed"`` (its row subtrees there) or ``"full"``; None when a token is not fused."""
    prog = _compile(tokens)
    n = len(tokens)
    table = np.full((n, 14), -1, dtype=np.int64)
    consts = np.zeros(n)
    mat = [False] * n
    for i in range(n - 1, -1, -1):
        tok, ch = tokens[i], prog.children[i]
        if prog.slot_pos[i] >= 0:
            code = _SLOT
        elif tok in CONSTANTS:
            code = _CONST
            consts[i] = CONSTANTS[tok]
        elif tok in _CODES:
            code = _CODES[tok]
        else:
            return None
        if tok in _ARRAY_VALUED:
            mat[i] = True
        elif tok == "power":
            mat[i] = mat[ch[0]]
        elif tok not in _NO_VALUE and ch:
            mat[i] = any(mat[c] for c in ch)
        table[i, 0] = code
        table[i, 1:1 + len(ch)] = ch
        table[i, 7] = prog.slot_pos[i]
    on_row = [geometry == "row" or (geometry == "mixed" and prog.row_node[i]) for i in range(n)]
    roots = {0} if geometry == "row" else set(prog.row_roots) if geometry == "mixed" else set()
    n_full = n_row = 0
    for i in range(n):
        table[i, 8], table[i, 9], table[i, 10] = mat[i], prog.has_param[i], on_row[i]
        table[i, 11] = mat[i] and i in roots
        if mat[i]:
            if on_row[i]:
                table[i, 12], n_row = n_row, n_row + 1
            else:
                table[i, 12], n_full = n_full, n_full + 1
            if table[i, 11]:
                table[i, 13], n_full = n_full, n_full + 1
    table.flags.writeable = False
    consts.flags.writeable = False
    return Fused(table, consts, prog.n_params, n_full, n_row)


@dataclass(frozen=True)
class FusedCall:
    """What the loops read for one tree on one set of inputs: the table and the geometry's arrays.

    Attributes
    ----------
    tree : Fused
    Xf : ndarray of shape (n, d)
        The inputs.
    Df : ndarray of shape (n, n)
        Their squared distances.
    Xr1, Xr2, Dr : ndarray of shape (1, d), (m, d), (1, m)
        The lag row's pair and its squared distances (0 rows when the inputs have no lag row).
    lags : ndarray of shape (n, n), int64
        Each pair's position on the lag row ((0, 0) when there is none).
    """

    tree: Fused
    Xf: Array
    Df: Array
    Xr1: Array
    Xr2: Array
    Dr: Array
    lags: NDArray[np.int64]


_NO_ROW = np.zeros((0, 0))
_NO_LAGS = np.zeros((0, 0), dtype=np.int64)
for _a in (_NO_ROW, _NO_LAGS):
    _a.flags.writeable = False


def fused(kernel: Kernel, inputs: Inputs) -> FusedCall | None:
    """The fused loop's arguments for ``kernel`` on the symmetric training ``inputs``; None when the tree
    has an operator the loop does not know, or the inputs are not one symmetric set of at most
    :data:`FUSED_MAX_N` points."""
    if not inputs.symmetric or inputs.shape[0] > FUSED_MAX_N:
        return None
    row = inputs.row
    if row is None:
        geometry = "full"
    elif kernel.is_stationary:
        geometry = "row"
    else:
        geometry = "mixed" if _compile(kernel.tokens).row_roots else "full"
    tree = _build(kernel.tokens, geometry)
    if tree is None:
        return None
    full = inputs.full
    if geometry == "full":
        return FusedCall(tree, full.X1, full.sqdist, _NO_ROW, _NO_ROW, _NO_ROW, _NO_LAGS)
    assert row is not None
    return FusedCall(tree, full.X1, full.sqdist, row.X1, row.X2, row.sqdist, inputs.lag_matrix)


def psd_tree(kernel: Kernel, d: int) -> Fused | None:
    """The table of ``kernel`` on the PSD check's random data sets (:mod:`evocov_core.language.psd`: one
    symmetric set of scattered points, the full pair); None when a token is not fused or ``d`` is not 1."""
    return _build(kernel.tokens, "full") if d == 1 else None


@lru_cache(maxsize=1)
def _loops() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The two compiled loops (Numba compiles them on first use and caches them on disk)."""
    from evocov_core.language import _fused_loops

    return _fused_loops.forward, _fused_loops.reverse


def run_forward(call: FusedCall, log_theta: Array) -> tuple[Array, Array, Array, Array]:
    """The tapes ``V, R, S`` of :func:`evocov_core.language._fused_loops.forward`, and θ itself (p,)."""
    forward, _ = _loops()
    t = call.tree
    theta = np.exp(log_theta)
    V, R, S = forward(t.table, t.consts, theta, call.Xf, call.Df, call.Xr1, call.Xr2, call.Dr, call.lags,
                      t.n_full, t.n_row)
    return V, R, S, theta


def _root(call: FusedCall, V: Array, S: Array) -> Array:
    table = call.tree.table
    if not table[0, 8]:
        n = call.Xf.shape[0]
        return np.full((n, n), S[0])
    return V[table[0, 13] if table[0, 11] else table[0, 12]].copy()


def _log_theta(theta: ArrayLike, n_params: int) -> Array:
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    if t.shape[0] != n_params:
        raise ValueError(f"theta has {t.shape[0]} values but the kernel has {n_params} slots")
    return t


def covariance(kernel: Kernel, inputs: Inputs, theta: ArrayLike) -> Array | None:
    """``K(X, X)`` (n, n) from the fused loop; None when the tree or the inputs are not fused (:func:`fused`).

    ``theta`` (p,) holds the log slot values.
    """
    call = fused(kernel, inputs)
    if call is None:
        return None
    V, _, S, _ = run_forward(call, _log_theta(theta, call.tree.n_params))
    return _root(call, V, S)


def covariance_vjp(kernel: Kernel, inputs: Inputs, theta: ArrayLike
                   ) -> tuple[Array, Callable[[Array], Array]] | None:
    """K (n, n) and ``vjp(G) = Σ_ij G_ij ∂K_ij/∂log θ`` (p,) for ``G`` (n, n); None when not fused."""
    call = fused(kernel, inputs)
    if call is None:
        return None
    V, R, S, theta_ = run_forward(call, _log_theta(theta, call.tree.n_params))
    K = _root(call, V, S)

    def vjp(G: Array) -> Array:
        _, reverse = _loops()
        t = call.tree
        seed = np.ascontiguousarray(G, dtype=np.float64) if t.table[0, 8] else np.full((1, 1), float(np.sum(G)))
        return reverse(t.table, theta_, call.Xf, call.Xr1, call.Xr2, call.lags, V, R, S, seed)

    return K, vjp
