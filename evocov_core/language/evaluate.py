"""The stack evaluator: ``K(X1, X2)``, its diagonal, and gradients with respect to θ.

Everything here is a pure function of (kernel, inputs, theta).

``theta`` is the vector of **natural logarithms** of the kernel's slot values, ordered
as :attr:`evocov_core.language.kernel.Kernel.slots`; gradients are with respect to it.

How it is fast
--------------
* :class:`Inputs` holds the data-only work (squared distances, dot products, row sums)
  computed once per data set and reused by every kernel and optimiser step.
* ``spectral`` maps the *n* inputs to ``[sin(θp·x), cos(θp·x)]``; its squared distance
  and dot product are then small matrix products (``2d − 2 F Fᵀ``): no trigonometry on
  n×n arrays (PERF_NOTES: sin/cos cost 8-10 ns an element, exp about 1).
* Subtrees without slots evaluate to Python scalars and broadcast.
* For a stationary tree (no ``dot_prod`` or change operator) on 1-D inputs, K depends
  on the lag ``|x − x'|`` only. When the n² pairs have few distinct lags (a regular
  grid, or dates of monthly or daily data, whose lags repeat), the tree is evaluated
  once per distinct lag and expanded: a Toeplitz matrix on a full grid, a gather
  otherwise (:class:`Inputs` finds the lags). The reverse pass reduces the n×n adjoint
  to one sum per lag and walks back through the same row, so gradients cost O(n²)
  once, not per node. In a tree that is not stationary (``LIN × (SE + PER)``), each
  maximal stationary subtree of three or more operators is evaluated on the row and
  expanded where its parent reads it (mixed geometry; :func:`_row_subtrees`).
* Gradients are reverse mode: :func:`covariance_vjp` returns K and a function mapping an
  adjoint ``G = ∂f/∂K`` to ``∂f/∂θ`` in one backward walk, whatever the number of
  hyperparameters. The LML gradient (GPML eq. 5.9) is ``½ tr((ααᵀ − K⁻¹) ∂K/∂θ)``, i.e.
  the VJP of ``G = ½(ααᵀ − K⁻¹)``.

Numerical conventions (documented, not hidden)
----------------------------------------------
* ``sq_dist`` of ``spectral`` features is clipped at 0 and its diagonal set to exactly 0
  for K(X, X), removing rounding noise of ``2 − 2(sin² + cos²)``.
* Where a derivative is infinite at a point the function is not differentiable
  (``sqrt`` and ``power`` at 0), the gradient contribution there is taken as 0 (the
  one-sided limit of a typical use such as ``sqrt(sq_dist)``).
* Non-finite values (overflow in ``exp``, ``1/0``, ``sqrt`` of a negative) are returned
  as they are; :mod:`evocov_core.fitting.gp` turns them into a failed fit with a reason.

Threads: the evaluator calls BLAS (matrix products). Every process that evaluates kernels
runs :func:`evocov_core.compute.setup.prepare_process` first (one BLAS thread): on 2-core machines
a 2-thread OpenBLAS was measured up to 2000x slower than one thread when the other core is busy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from evocov_core.language.grammar import CONSTANTS, arity, is_slot
from evocov_core.language.kernel import NON_STATIONARY, Kernel

__all__ = [
    "Inputs",
    "covariance",
    "covariance_diag",
    "covariance_jacobian",
    "covariance_vjp",
]

Array = NDArray[np.float64]


# --------------------------------------------------------------------------------------
# Inputs: θ-independent data


class _Pair:
    """Geometry of one input pair (X1, X2), with lazily cached data-only arrays.

    ``mode`` is ``"cross"`` for the n×m matrix, or ``"elementwise"`` for the n
    values k(x_i, x_i) (used for the diagonal).
    """

    __slots__ = ("X1", "X2", "_sqdist", "mode", "zero_diag")

    def __init__(self, X1: Array, X2: Array, zero_diag: bool, mode: str = "cross") -> None:
        self.X1 = X1
        self.X2 = X2
        self.zero_diag = zero_diag
        self.mode = mode
        self._sqdist: Array | None = None

    @property
    def d(self) -> int:
        return self.X1.shape[1]

    def gram(self, F1: Array, F2: Array) -> Array:
        """``F1 F2ᵀ`` (n×m), or the row-wise products (n×1) in elementwise mode."""
        if self.mode == "elementwise":
            return np.einsum("ij,ij->i", F1, F2)[:, None]
        return F1 @ F2.T

    def clear_diag(self, z: Array) -> None:
        """Set the entries that pair a point with itself to exactly 0."""
        if not self.zero_diag:
            return
        if self.mode == "elementwise":
            z.fill(0.0)
        else:
            np.fill_diagonal(z, 0.0)

    @property
    def sqdist(self) -> Array:
        if self._sqdist is None:
            if self.mode == "elementwise":
                s = np.zeros((self.X1.shape[0], 1))
            elif self.d == 1:
                s = np.square(self.X1 - self.X2.T)
            else:
                from scipy.spatial.distance import cdist

                s = cdist(self.X1, self.X2, "sqeuclidean")
            self.clear_diag(s)
            s.flags.writeable = False
            self._sqdist = s
        return self._sqdist


def _as_2d(X: ArrayLike, name: str) -> Array:
    A = np.asarray(X, dtype=np.float64)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2:
        raise ValueError(f"{name} must be an array of shape (n, d), got shape {A.shape}")
    return np.ascontiguousarray(A)


def _lattice(x: Array, rtol: float = 1e-7) -> tuple[float, NDArray[np.intp]] | None:
    """If sorted 1-D ``x`` lies on a lattice ``x_0 + k·h`` (integer k, gaps allowed), (h, k).

    ``rtol`` bounds ``|x − x_0 − k·h|/h``: with 1e-7 the kernel sees lags exact to 1e-7 of
    a step, far below any lengthscale a fit can resolve.
    """
    n = x.shape[0]
    if n < 3 or np.any(np.diff(x) <= 0):
        return None
    h = float(np.min(np.diff(x)))
    k = np.rint((x - x[0]) / h)
    if k[-1] <= 0:
        return None
    h = float((x[-1] - x[0]) / k[-1])  # refine the step over the whole span
    ki = np.rint((x - x[0]) / h).astype(np.intp)
    if np.max(np.abs((x - x[0]) / h - ki)) > rtol or ki[-1] > 10 * n:
        return None
    return h, ki


def _distinct_lags(x: Array, rtol: float = 1e-7, max_share: float = 1 / 8
                   ) -> tuple[Array, NDArray[np.intp]] | None:
    """The distinct lags ``|x_i − x_j|`` of 1-D ``x`` and each pair's index into them.

    Lags are rounded to ``q = rtol·(smallest positive gap)``, so the kernel sees each lag
    to within ``q/2`` (as on a lattice: far below any lengthscale a fit can resolve).
    Returns None when there are more than ``max_share·n²`` distinct lags (irregular
    inputs: evaluating the tree per lag would save too little to pay for the gather).

    Returns
    -------
    lags : ndarray of shape (m,)
        Ascending; ``lags[0] == 0`` (the diagonal).
    index : ndarray of shape (n, n)
        ``lags[index[i, j]] ≈ |x_i − x_j|``.
    """
    n = x.shape[0]
    gaps = np.diff(np.sort(x))
    positive = gaps[gaps > 0]
    if n < 3 or positive.size == 0:
        return None
    q = rtol * float(positive.min())
    codes = np.rint(np.abs(x[:, None] - x[None, :]) / q)
    if codes.max() > 2.0**52:  # beyond the integers a float holds exactly
        return None
    values, index = np.unique(codes, return_inverse=True)
    if values.size > max_share * n * n:
        return None
    index = index.reshape(n, n).astype(np.intp, copy=False)
    index.flags.writeable = False
    return values * q, index


class Inputs:
    """Data-only quantities for evaluating kernels on ``(X1, X2)``; build once, reuse.

    Parameters
    ----------
    X1 : array_like of shape (n, d) or (n,)
    X2 : array_like of shape (m, d) or (m,), optional
        Omit for the symmetric training matrix K(X1, X1).
    toeplitz : bool
        Allow the lag fast path for stationary trees when ``X2`` is omitted and ``X1`` is
        1-D. Then K depends on the lag ``|x_i − x_j|`` only, and the tree is evaluated
        once per distinct lag (one row) and K expanded from it:

        * ``X1`` sorted on a lattice ``x_0 + k·h`` (integer k): as a Toeplitz matrix
          when no lattice point is missing, by a gather ``row[|k_i − k_j|]`` otherwise
          (e.g. monthly data with missing months);
        * otherwise, when the n² lags take at most n²/8 distinct values once rounded to
          1e-7 of the smallest gap (:func:`_distinct_lags`; e.g. months or days given as
          decimal years, whose steps vary with the month's or year's length): by a
          gather ``row[index_ij]``.
    """

    def __init__(self, X1: ArrayLike, X2: ArrayLike | None = None, *, toeplitz: bool = True) -> None:
        A = _as_2d(X1, "X1")
        self.symmetric = X2 is None
        B = A if X2 is None else _as_2d(X2, "X2")
        if A.shape[1] != B.shape[1]:
            raise ValueError(f"X1 has {A.shape[1]} input dimensions but X2 has {B.shape[1]}")
        self.X1 = A
        self.X2 = B
        self.full = _Pair(A, B, zero_diag=self.symmetric)
        self.row: _Pair | None = None
        self.lags: NDArray[np.intp] | None = None  # lattice index k_i of each point
        self.expansion = "none"
        self._lag_matrix: NDArray[np.intp] | None = None
        if toeplitz and self.symmetric and A.shape[1] == 1:
            # Row of K over every lag: pairs (x_0, x_0 + lag); [0, 0] is a diagonal.
            lat = _lattice(A[:, 0])
            if lat is not None:
                h, k = lat
                self.row = _Pair(A[:1], (A[0, 0] + h * np.arange(k[-1] + 1))[:, None], zero_diag=True)
                self.lags = k
                self.expansion = "toeplitz" if k[-1] == A.shape[0] - 1 else "gather"
            elif (distinct := _distinct_lags(A[:, 0])) is not None:
                lag_values, self._lag_matrix = distinct
                self.row = _Pair(A[:1], A[0, 0] + lag_values[:, None], zero_diag=True)
                self.expansion = "gather"

    @property
    def shape(self) -> tuple[int, int]:
        return self.X1.shape[0], self.X2.shape[0]

    def pair_for(self, kernel: Kernel) -> tuple[_Pair, bool]:
        """The geometry to evaluate ``kernel`` on, and whether it is a lag row."""
        if self.row is not None and kernel.is_stationary:
            return self.row, True
        return self.full, False

    @property
    def lag_matrix(self) -> NDArray[np.intp]:
        """Index into the lag row of each pair (n×n), for the gather expansion."""
        if self._lag_matrix is None:
            assert self.lags is not None
            L = np.abs(self.lags[:, None] - self.lags[None, :])
            L.flags.writeable = False
            self._lag_matrix = L
        return self._lag_matrix

    def expand(self, row: Array) -> Array:
        """Full K (n×n) from its lag row."""
        if self.expansion == "toeplitz":
            return _toeplitz(row)
        return np.take(row, self.lag_matrix)

    def reduce(self, G: Array) -> Array:
        """Adjoint of :meth:`expand`: ``c_l = Σ_{|k_i−k_j|=l} G_ij``, shape batch + (1, n_lags)."""
        if self.expansion == "toeplitz":
            return _diagonal_sums(G)
        assert self.row is not None
        n_lags = self.row.X2.shape[0]
        L = self.lag_matrix.ravel()
        flat = G.reshape(-1, L.size)
        c = np.stack([np.bincount(L, weights=g, minlength=n_lags) for g in flat])
        return c.reshape((*G.shape[:-2], 1, n_lags))


def _inputs(inputs: Inputs | ArrayLike, X2: ArrayLike | None = None) -> Inputs:
    if isinstance(inputs, Inputs):
        if X2 is not None:
            raise ValueError("pass X2 when building Inputs, not with a ready Inputs")
        return inputs
    return Inputs(inputs, X2)


# --------------------------------------------------------------------------------------
# Compiled programs


@dataclass(frozen=True)
class _Program:
    tokens: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    slot_pos: tuple[int, ...]  # position in theta for slot nodes, -1 otherwise
    has_param: tuple[bool, ...]  # subtree depends on theta
    n_params: int
    # Nodes of the maximal stationary subtrees worth evaluating on the lag row when the
    # whole tree is not stationary (see _row_subtrees), and the roots of those subtrees.
    row_node: tuple[bool, ...] = ()
    row_roots: frozenset[int] = frozenset()


@lru_cache(maxsize=8192)
def _compile(tokens: tuple[str, ...]) -> _Program:
    slots = sorted({t for t in tokens if is_slot(t)}, key=lambda s: int(s[2:]))
    pos = {s: i for i, s in enumerate(slots)}
    n = len(tokens)
    children: list[tuple[int, ...]] = [()] * n
    stack: list[int] = []
    for i in range(n - 1, -1, -1):
        k = arity(tokens[i])
        if k:
            children[i] = tuple(stack[-1 : -k - 1 : -1])
            del stack[-k:]
        stack.append(i)
    has_param = [False] * n
    for i in range(n - 1, -1, -1):
        has_param[i] = is_slot(tokens[i]) or any(has_param[c] for c in children[i])
    row_node, row_roots = _row_subtrees(tokens, children)
    return _Program(
        tokens=tokens,
        children=tuple(children),
        slot_pos=tuple(pos.get(t, -1) for t in tokens),
        has_param=tuple(has_param),
        n_params=len(slots),
        row_node=row_node,
        row_roots=row_roots,
    )


# A stationary subtree is evaluated on the lag row inside a non-stationary tree only when
# it has at least this many operators: its expansion (a gather) and the reduction of its
# adjoint cost about two n×n passes, which a subtree like ``sq_dist(euc(x), θ)`` (one
# pass over cached distances) does not repay.
_MIN_ROW_OPS = 3


def _row_subtrees(tokens: tuple[str, ...], children: list[tuple[int, ...]]
                  ) -> tuple[tuple[bool, ...], frozenset[int]]:
    """Maximal stationary covariance subtrees of a non-stationary tree, with ≥ _MIN_ROW_OPS operators.

    Returns a flag per node (inside such a subtree) and the subtrees' roots; both empty
    when the whole tree is stationary (it is then evaluated on the row as a whole) or
    when no subtree qualifies.
    """
    n = len(tokens)
    stationary = [True] * n
    has_x = [False] * n
    n_ops = [0] * n
    for i in range(n - 1, -1, -1):
        ch = children[i]
        stationary[i] = tokens[i] not in NON_STATIONARY and all(stationary[c] for c in ch)
        has_x[i] = tokens[i] == "x" or any(has_x[c] for c in ch)
        n_ops[i] = (1 if ch else 0) + sum(n_ops[c] for c in ch)
    if stationary[0]:
        return (), frozenset()
    flags = [False] * n
    roots: list[int] = []
    todo = [0]
    while todo:
        i = todo.pop()
        # x, euc and spectral take their geometry from the covariance that reads them.
        if (stationary[i] and has_x[i] and n_ops[i] >= _MIN_ROW_OPS
                and tokens[i] not in ("x", "euc", "spectral")):
            roots.append(i)
            stack = [i]
            while stack:
                j = stack.pop()
                flags[j] = True
                stack.extend(children[j])
        else:
            todo.extend(children[i])
    if not roots:
        return (), frozenset()
    return tuple(flags), frozenset(roots)


class _Feat:
    """Value of a TPair node: identity (``euc``) or spectral features."""

    __slots__ = ("F1", "F2", "dF1", "dF2", "omega", "pos", "spectral")

    def __init__(self, spectral: bool, omega: float = 0.0, pos: int = -1,
                 F1: Array | None = None, F2: Array | None = None) -> None:
        self.spectral = spectral
        self.omega = omega
        self.pos = pos
        self.F1 = F1
        self.F2 = F2
        self.dF1: Array | None = None
        self.dF2: Array | None = None

    def derivatives(self, pair: _Pair) -> tuple[Array, Array]:
        """∂F/∂ω for both sides: ``[x·cos(ωx), −x·sin(ωx)]``."""
        if self.dF1 is None:
            d = pair.d
            assert self.F1 is not None and self.F2 is not None
            self.dF1 = np.hstack((pair.X1 * self.F1[:, d:], -pair.X1 * self.F1[:, :d]))
            if self.F2 is self.F1:
                self.dF2 = self.dF1
            else:
                self.dF2 = np.hstack((pair.X2 * self.F2[:, d:], -pair.X2 * self.F2[:, :d]))
        assert self.dF2 is not None
        return self.dF1, self.dF2


def _features(X: Array, omega: float) -> Array:
    a = X * omega
    return np.hstack((np.sin(a), np.cos(a)))


# --------------------------------------------------------------------------------------
# The operators: one table entry per primitive, forward and reverse rules side by side


class _Walk:
    """State of one evaluation: node values, which of them this pass owns, and, on the
    reverse walk, the adjoints and the gradient.

    ``theta`` holds natural (exponentiated) slot values. ``tape`` means a reverse walk
    will follow, so values it reads must not be overwritten in place.
    """

    __slots__ = ("adjs", "grad", "inputs", "owned", "pair", "prog", "row_vals", "tape", "theta", "vals")

    def __init__(self, prog: _Program, pair: _Pair, theta: Array, tape: bool,
                 inputs: Inputs | None = None) -> None:
        self.prog = prog
        self.pair = pair  # geometry of the node being evaluated
        self.theta = theta
        self.tape = tape
        self.vals: list[object] = [None] * len(prog.tokens)
        self.owned = [False] * len(prog.tokens)  # vals[i] is a fresh array this pass may overwrite
        self.adjs: list[object] = []
        self.grad: Array = np.zeros(0)
        # Mixed geometry (inputs given): the roots of row subtrees hold their expanded n×n
        # value in ``vals`` (what their parent reads) and their lag-row value here.
        self.inputs = inputs
        self.row_vals: dict[int, object] = {}

    def clobberable(self, c: int) -> bool:
        """May node ``c``'s value be overwritten by its parent?"""
        if not self.owned[c]:
            return False
        return not self.tape or not self.prog.has_param[c] or not _OPS[self.prog.tokens[c]].reads_output

    def slot(self, c: int) -> int:
        """Position in θ of the slot node ``c`` (an operator's Hyper argument)."""
        return self.prog.slot_pos[c]


Forward = Callable[[_Walk, int, tuple[int, ...]], object]
Reverse = Callable[[_Walk, int, tuple[int, ...], Any], None]


@dataclass(frozen=True)
class _Op:
    """One primitive of the grammar as the evaluator sees it.

    Attributes
    ----------
    forward : callable
        ``forward(walk, i, children) -> value`` of node ``i`` from its children's values
        (``walk.vals``); may write into a child's buffer when ``walk.clobberable`` allows.
    reverse : callable
        ``reverse(walk, i, children, adjoint)``: given ``∂f/∂value_i``, adds the
        children's adjoints to ``walk.adjs`` (only children with slots below them) and
        the slot gradients (∂f/∂log θ) to ``walk.grad``.
    reads_output : bool
        The reverse rule reads the node's own value, so a parent must not overwrite it
        in place while a tape is kept.
    """

    forward: Forward
    reverse: Reverse
    reads_output: bool = False


# --- nestable operators on covariance values -----------------------------------------


def _binary(ufunc: np.ufunc, reads_operands: bool) -> Forward:
    def forward(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
        a, b = w.vals[ch[0]], w.vals[ch[1]]
        hp_ = w.prog.has_param
        # multiply's reverse rule reads each operand to form the other's adjoint.
        ok_a = w.clobberable(ch[0]) and (not reads_operands or not w.tape or not hp_[ch[1]])
        ok_b = w.clobberable(ch[1]) and (not reads_operands or not w.tape or not hp_[ch[0]])
        if ok_a and _is_mat(a) and (not _is_mat(b) or b.shape == a.shape):  # type: ignore[union-attr]
            return ufunc(a, b, out=a)
        if ok_b and _is_mat(b) and (not _is_mat(a) or a.shape == b.shape):  # type: ignore[union-attr]
            return ufunc(b, a, out=b)
        return ufunc(a, b)
    return forward


def _add_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    for c in ch:
        if w.prog.has_param[c]:
            w.adjs[c] = _down(a, w.vals[i], w.vals[c])


def _multiply_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    u, v = w.vals[ch[0]], w.vals[ch[1]]
    if w.prog.has_param[ch[0]]:
        w.adjs[ch[0]] = _down(a * v, w.vals[i], u)
    if w.prog.has_param[ch[1]]:
        w.adjs[ch[1]] = _down(a * u, w.vals[i], v)


def _unary(ufunc: np.ufunc, reads_input: bool = False) -> Forward:
    def forward(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
        a = w.vals[ch[0]]
        if _is_mat(a):
            if w.clobberable(ch[0]) and not (reads_input and w.tape and w.prog.has_param[ch[0]]):
                return ufunc(a, out=a)
            return ufunc(a)
        return ufunc(a)
    return forward


_reciprocal = _unary(np.reciprocal)


def _div_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    a = w.vals[ch[0]]
    if _is_mat(a):
        return _reciprocal(w, i, ch)
    return 1.0 / a if a != 0 else np.inf  # type: ignore[operator]


def _exp_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    w.adjs[ch[0]] = a * w.vals[i]


def _square_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    w.adjs[ch[0]] = a * (2.0 * w.vals[ch[0]])  # type: ignore[operator]


def _sqrt_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    z = np.asarray(w.vals[i])
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(z > 0, 0.5 / z, 0.0)  # 0 where sqrt is not differentiable (see module notes)
    w.adjs[ch[0]] = a * dz


def _div_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    w.adjs[ch[0]] = a * -(np.asarray(w.vals[i]) ** 2)


def _power_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    a, th = w.vals[ch[0]], w.vals[ch[1]]
    if _is_mat(a) and w.clobberable(ch[0]) and not w.tape:
        return np.power(a, th, out=a)
    return np.power(a, th)


def _power_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    base = np.asarray(w.vals[ch[0]])
    z = np.asarray(w.vals[i])
    th = float(w.vals[ch[1]])  # type: ignore[arg-type]
    # dz/dbase = th·base**(th − 1) = th·z / base and dz/dlog th = th·z·log(base): a division
    # and a log, not a second power (power is the costliest primitive: forward and reverse
    # took about 40 % of a search's time on a series of 909 points).
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if np.all(base > 0):  # the usual case (RQ's 1 + r²/(2αℓ²)): no masks
            az = a * z
            if w.prog.has_param[ch[0]]:
                w.adjs[ch[0]] = az / base * th
            gz = az * np.log(base)
        else:
            if w.prog.has_param[ch[0]]:
                w.adjs[ch[0]] = a * np.where(base != 0, th * z / base, 0.0)
            gz = a * np.where(base > 0, z * np.log(np.where(base > 0, base, 1.0)), 0.0)
    w.grad[..., w.slot(ch[1])] += (_sum2(gz) if _is_mat(w.vals[i]) else gz) * th


def _identity_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    return w.vals[ch[0]]


def _identity_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    w.adjs[ch[0]] = a  # hp(θ): the slot leaf below adds a·θ to its gradient


# --- input transforms and the data-dependent covariances ----------------------------------


def _euc_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    return _Feat(False)


def _spectral_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    pair = w.pair
    om = float(w.vals[ch[1]])  # type: ignore[arg-type]
    F1 = _features(pair.X1, om)
    F2 = F1 if pair.X2 is pair.X1 else _features(pair.X2, om)
    return _Feat(True, om, w.slot(ch[1]), F1, F2)


def _no_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    """Feature maps: their θ is differentiated by the covariance that reads them."""


def _sq_dist_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    f: _Feat = w.vals[ch[0]]  # type: ignore[assignment]
    pair = w.pair
    inv = 1.0 / float(w.vals[ch[1]]) ** 2  # type: ignore[arg-type]
    if f.spectral:
        # (2d − 2 F1F2ᵀ)/l²: the factor goes on the small n×2d side of the product.
        z = pair.gram(f.F1, f.F2 * (-2.0 * inv))  # type: ignore[arg-type, operator]
        z += 2.0 * pair.d * inv
        np.maximum(z, 0.0, out=z)
        pair.clear_diag(z)
        return z
    return pair.sqdist * inv


def _sq_dist_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    f: _Feat = w.vals[ch[0]]  # type: ignore[assignment]
    z: Array = w.vals[i]  # type: ignore[assignment]
    # z ∝ θl⁻²: ∂z/∂log θl = −2 z.
    w.grad[..., w.slot(ch[1])] += -2.0 * _sum2(a * z)
    if f.spectral and w.prog.has_param[ch[0]]:
        lval = float(w.vals[ch[1]])  # type: ignore[arg-type]
        # z = (2d − 2G)/θl²  ⇒  ∂z/∂ω = −2/θl² ∂G/∂ω
        w.grad[..., f.pos] += (-2.0 / lval**2) * _spectral_grad(w.pair, f, a) * f.omega


def _dot_prod_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    # (x̂ − s)·(x̂' − s)/l as one matrix product of shifted features: no n×n passes
    # beyond the product itself.
    S1, S2 = _shifted(w.pair, w.vals[ch[0]], float(w.vals[ch[1]]))  # type: ignore[arg-type]
    return w.pair.gram(S1 * (1.0 / float(w.vals[ch[2]])), S2)  # type: ignore[arg-type]


def _dot_prod_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    # z = S1 S2ᵀ / l with S = x̂ − s.
    f: _Feat = w.vals[ch[0]]  # type: ignore[assignment]
    z: Array = w.vals[i]  # type: ignore[assignment]
    s = float(w.vals[ch[1]])  # type: ignore[arg-type]
    l_ = float(w.vals[ch[2]])  # type: ignore[arg-type]
    S1, S2 = _shifted(w.pair, f, s)
    rows = a.sum(axis=-1)  # batch + (n,)
    cols = a.sum(axis=-2)  # batch + (m,)
    # ∂z_ij/∂s = −(Σ_k S1_ik + Σ_k S2_jk)/l
    dz_ds = -(rows @ S1.sum(axis=1) + cols @ S2.sum(axis=1)) / l_
    w.grad[..., w.slot(ch[1])] += dz_ds * s
    w.grad[..., w.slot(ch[2])] += -_sum2(a * z)
    if f.spectral and w.prog.has_param[ch[0]]:
        dF1, dF2 = f.derivatives(w.pair)
        w.grad[..., f.pos] += (_lowrank_grad(a, S1, S2, dF1, dF2) / l_) * f.omega


def _switches(pair: _Pair, loc: float, width: float) -> tuple[Array, Array]:
    """σ((x₁ − θc)/θs) for both sides of the pair (shared when X2 is X1), shape (n,), (m,)."""
    s1 = expit((pair.X1[:, 0] - loc) / width)
    return s1, (s1 if pair.X2 is pair.X1 else expit((pair.X2[:, 0] - loc) / width))


def _gate_fwd(w: _Walk, ch: tuple[int, ...], s1: Array, s2: Array) -> Array:
    """``(1 − s)(1 − s')ᵀ ⊙ u + s s'ᵀ ⊙ v`` for weights ``s`` (n,), ``s'`` (m,): change point and window."""
    pair = w.pair
    before = pair.gram((1.0 - s1)[:, None], (1.0 - s2)[:, None])  # (1 − σ)(1 − σ')
    after = pair.gram(s1[:, None], s2[:, None])  # σσ'
    before *= w.vals[ch[1]]
    after *= w.vals[ch[2]]
    before += after
    return before


def _gate_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any, s1: Array, s2: Array,
              derivs: tuple[tuple[int, Array, Array], ...]) -> None:
    """Reverse rule of :func:`_gate_fwd`; ``derivs`` holds, per slot child, ∂s/∂log θ for both sides (n, 1), (m, 1)."""
    pair, hp_ = w.pair, w.prog.has_param
    u, v = w.vals[ch[1]], w.vals[ch[2]]
    c1, c2 = (1.0 - s1)[:, None], (1.0 - s2)[:, None]
    o1, o2 = s1[:, None], s2[:, None]
    if hp_[ch[1]]:
        w.adjs[ch[1]] = _down(a * pair.gram(c1, c2), w.vals[i], u)
    if hp_[ch[2]]:
        w.adjs[ch[2]] = _down(a * pair.gram(o1, o2), w.vals[i], v)
    au, av = a * u, a * v
    # ∂z = (∂s s'ᵀ + s ∂s'ᵀ) ⊙ v − (∂s (1 − s')ᵀ + (1 − s) ∂s'ᵀ) ⊙ u.
    for k, d1, d2 in derivs:
        w.grad[..., w.slot(k)] += _lowrank_grad(av, o1, o2, d1, d2) - _lowrank_grad(au, c1, c2, d1, d2)


def _changepoint_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    s1, s2 = _switches(w.pair, float(w.vals[ch[3]]), float(w.vals[ch[4]]))  # type: ignore[arg-type]
    return _gate_fwd(w, ch, s1, s2)


def _changepoint_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    # z = (1 − s)(1 − s')ᵀ ⊙ u + s s'ᵀ ⊙ v,  s = σ(r), r = (x − θc)/θs.
    pair = w.pair
    loc, width = float(w.vals[ch[3]]), float(w.vals[ch[4]])  # type: ignore[arg-type]
    s1, s2 = _switches(pair, loc, width)
    # ∂s/∂log θc = −s(1 − s)·θc/θs and ∂s/∂log θs = −s(1 − s)·r.
    r1 = (pair.X1[:, :1] - loc) / width
    r2 = r1 if pair.X2 is pair.X1 else (pair.X2[:, :1] - loc) / width
    g1, g2 = (s1 * (1.0 - s1))[:, None], (s2 * (1.0 - s2))[:, None]
    _gate_rev(w, i, ch, a, s1, s2, ((ch[3], g1 * (-loc / width), g2 * (-loc / width)),
                                    (ch[4], -g1 * r1, -g2 * r2)))


def _window_parts(X: Array, centre: float, width: float, steep: float) -> tuple[Array, Array, Array, Array]:
    """For inputs X (n, d): the window weight ω = p·q and its factors, p = σ((x₁ − a)/θs),
    q = σ((b − x₁)/θs) = 1 − σ((x₁ − b)/θs), with the scaled distances to the edges; each (n, 1)."""
    x = X[:, :1]
    ua = (x - (centre - 0.5 * width)) / steep
    ub = ((centre + 0.5 * width) - x) / steep
    p, q = expit(ua), expit(ub)
    return p * q, p, q, np.stack((ua, ub))


def _windows(pair: _Pair, centre: float, width: float, steep: float):
    one = _window_parts(pair.X1, centre, width, steep)
    return one, (one if pair.X2 is pair.X1 else _window_parts(pair.X2, centre, width, steep))


def _changewindow_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    (o1, *_), (o2, *_) = _windows(w.pair, *(float(w.vals[c]) for c in ch[3:6]))  # type: ignore[arg-type]
    return _gate_fwd(w, ch, o1[:, 0], o2[:, 0])


def _window_derivs(parts: tuple[Array, Array, Array, Array], centre: float, width: float, steep: float
                   ) -> tuple[Array, Array, Array]:
    """∂ω/∂log θc, ∂ω/∂log θw, ∂ω/∂log θs, each (n, 1).

    With ω = pq, ∂p/∂a = −p(1 − p)/θs, ∂q/∂b = q(1 − q)/θs, a = θc − θw/2, b = θc + θw/2:
    ∂ω/∂θc = ω(p − q)/θs, ∂ω/∂θw = ω(2 − p − q)/(2θs), ∂ω/∂θs = −ω((1 − p)u_a + (1 − q)u_b)/θs.
    """
    om, p, q, (ua, ub) = parts
    return (om * (p - q) * (centre / steep), om * (2.0 - p - q) * (0.5 * width / steep),
            -om * ((1.0 - p) * ua + (1.0 - q) * ub))


def _changewindow_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    centre, width, steep = (float(w.vals[c]) for c in ch[3:6])  # type: ignore[arg-type]
    one, two = _windows(w.pair, centre, width, steep)
    d1 = _window_derivs(one, centre, width, steep)
    d2 = d1 if two is one else _window_derivs(two, centre, width, steep)
    _gate_rev(w, i, ch, a, one[0][:, 0], two[0][:, 0], tuple(zip(ch[3:6], d1, d2, strict=True)))


# --- the state-space forms: local level, local trend, damped trend ------------------------


def _times(pair: _Pair) -> tuple[Array, Array]:
    """Time from the first training input, ``t = max(x₁ − 1, 0)``, for both sides of the pair,
    shaped to broadcast to the pair's value: (n, 1) and (1, m), or (n, 1) twice elementwise."""
    t1 = np.maximum(pair.X1[:, :1] - 1.0, 0.0)
    t2 = t1 if pair.X2 is pair.X1 else np.maximum(pair.X2[:, :1] - 1.0, 0.0)
    return t1, (t2 if pair.mode == "elementwise" else t2.T)


def _wiener_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    t1, t2 = _times(w.pair)
    return np.minimum(t1, t2)


def _iwiener_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    # ∫₀^t ∫₀^t' min(u, v) du dv = m²M/2 − m³/6 = m²(3M − m)/6 with m = min(t, t'), M = max(t, t').
    t1, t2 = _times(w.pair)
    m = np.minimum(t1, t2)
    z = np.maximum(t1, t2)
    z *= 3.0
    z -= m
    z *= m
    z *= m
    z *= 1.0 / 6.0
    return z


# Taylor coefficients of φ(u) = e^(−u) − 1 + u and ψ(u) = (2 + u)e^(−u) − 2 + u (= 2φ − uφ') from
# u², below _SERIES_BELOW: there e^(−u) − 1 + u cancels to a few digits; the series' first
# omitted term is below 1e-17 of the value.
_SERIES_BELOW = 0.1
_PHI = tuple((-1.0) ** k / math.factorial(k) for k in range(2, 14))
_PSI = tuple((-1.0) ** (k + 1) * (k - 2) / math.factorial(k) for k in range(3, 15))


def _series(u: Array, coefs: tuple[float, ...], lowest: int) -> Array:
    acc = np.full_like(u, coefs[-1])
    for c in coefs[-2::-1]:
        acc *= u
        acc += c
    return acc * u**lowest


def _phi(u: Array) -> Array:
    """``e^(−u) − 1 + u`` for ``u ≥ 0`` without cancellation."""
    small = u < _SERIES_BELOW
    out = np.expm1(-u)
    out += u
    if small.any():
        out[small] = _series(u[small], _PHI, 2)
    return out


def _psi(u: Array) -> Array:
    """``(2 + u)e^(−u) − 2 + u`` for ``u ≥ 0`` without cancellation: ``τ²ψ(t/τ)`` summed as in
    :func:`_damped_fwd` is ``∂k/∂log τ``."""
    small = u < _SERIES_BELOW
    e = np.exp(-u)
    out = (2.0 + u) * e - 2.0 + u
    if small.any():
        out[small] = _series(u[small], _PSI, 3)
    return out


def _damped_terms(pair: _Pair, tau: float, f: Callable[[Array], Array]) -> Array:
    """``τ² [f(t/τ) + f(t'/τ) − f(|t − t'|/τ)]`` over the pair."""
    t1, t2 = _times(pair)
    a1, a2 = t1 / tau, t2 / tau
    z = f(np.abs(a1 - a2))
    np.negative(z, out=z)
    z += f(a1)
    z += f(a2)
    z *= tau * tau
    return z


def _damped_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    # Integrated stationary OU slope, unit variance, time constant τ:
    # ∫₀^t ∫₀^t' e^(−|u−v|/τ) du dv = τ² [φ(t/τ) + φ(t'/τ) − φ(|t − t'|/τ)].
    return _damped_terms(w.pair, float(w.vals[ch[1]]), _phi)  # type: ignore[arg-type]


def _damped_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    # ∂/∂log τ of τ² Σ ±φ(u), u = s/τ: τ² Σ ±(2φ(u) − uφ'(u)) = τ² Σ ±ψ(u).
    dz = _damped_terms(w.pair, float(w.vals[ch[1]]), _psi)  # type: ignore[arg-type]
    w.grad[..., w.slot(ch[1])] += _sum2(a * dz)


#: Every operator of the grammar (:mod:`evocov_core.language.grammar`): a new primitive is one
#: entry here (and its symbol there). ``reads_output``: exp (z), sqrt (1/(2z)), div (−z²),
#: power (z log w), sq_dist (−2z) and dot_prod (−z) read their own value going back.
_OPS: dict[str, _Op] = {
    "add": _Op(_binary(np.add, reads_operands=False), _add_rev),
    "multiply": _Op(_binary(np.multiply, reads_operands=True), _multiply_rev),
    "exp": _Op(_unary(np.exp), _exp_rev, reads_output=True),
    "sqrt": _Op(_unary(np.sqrt), _sqrt_rev, reads_output=True),
    "div": _Op(_div_fwd, _div_rev, reads_output=True),
    "square": _Op(_unary(np.square, reads_input=True), _square_rev),  # reverse reads the input (2w)
    "power": _Op(_power_fwd, _power_rev, reads_output=True),
    "hp": _Op(_identity_fwd, _identity_rev),
    "euc": _Op(_euc_fwd, _no_rev),
    "spectral": _Op(_spectral_fwd, _no_rev),
    "sq_dist": _Op(_sq_dist_fwd, _sq_dist_rev, reads_output=True),
    "dot_prod": _Op(_dot_prod_fwd, _dot_prod_rev, reads_output=True),
    "changepoint": _Op(_changepoint_fwd, _changepoint_rev),  # reverse reads its operands, not z
    "changewindow": _Op(_changewindow_fwd, _changewindow_rev),  # likewise
    "wiener": _Op(_wiener_fwd, _no_rev),  # no slot: nothing to differentiate
    "iwiener": _Op(_iwiener_fwd, _no_rev),
    "damped": _Op(_damped_fwd, _damped_rev),  # reverse recomputes from the inputs
}


def _forward(prog: _Program, pair: _Pair, theta: Array, tape: bool, inputs: Inputs | None = None) -> _Walk:
    """Evaluate every node bottom-up; ``walk.vals`` holds the node values (prefix order).

    With ``inputs`` that have a lag row and a non-stationary tree on the full ``pair``,
    the program's row subtrees are evaluated on the row and expanded where their parent
    reads them (mixed geometry).

    Without ``tape`` every operator writes into a child's buffer when it owns one (one
    n×n pass, no new array) and children are released as soon as their parent is
    evaluated; with ``tape`` only where the reverse walk will not need the overwritten
    value.
    """
    w = _Walk(prog, pair, theta, tape, inputs)
    toks, kids, vals, owned = prog.tokens, prog.children, w.vals, w.owned
    mixed = inputs is not None and inputs.row is not None and bool(prog.row_roots)
    row_pair = inputs.row if mixed and inputs is not None else pair
    for i in range(len(toks) - 1, -1, -1):
        ch = kids[i]
        if mixed:
            w.pair = row_pair if prog.row_node[i] else pair
        if not ch:
            p = prog.slot_pos[i]
            tok = toks[i]
            vals[i] = theta[p] if p >= 0 else (w.pair if tok == "x" else CONSTANTS[tok])
            continue
        out = _OPS[toks[i]].forward(w, i, ch)
        if mixed and i in prog.row_roots and _is_mat(out):
            assert inputs is not None
            w.row_vals[i] = out
            out = inputs.expand(out[0])
        vals[i] = out
        owned[i] = _is_mat(out)
        if not tape:
            for c in ch:  # release children early: lower peak memory
                vals[c] = None
    return w


def _to_matrix(v: object, shape: tuple[int, int]) -> Array:
    if isinstance(v, np.ndarray) and v.ndim == 2:
        return v
    return np.full(shape, float(v))  # type: ignore[arg-type]


def _sum2(a: Array) -> Array:
    """Sum over the last two (matrix) axes, keeping batch axes."""
    return a.sum(axis=(-2, -1))


def _backward(w: _Walk, seed: Array, batch: tuple[int, ...]) -> Array:
    """Reverse walk (parents before children): ∂f/∂log θ for a root adjoint ``seed``.

    ``seed`` has shape ``batch + (n, m)``. Scalar nodes carry adjoints of shape
    ``batch``; matrix nodes ``batch + (n, m)``. The walk's values are left as they are,
    so one forward pass serves any number of reverse walks.
    """
    prog = w.prog
    toks, kids = prog.tokens, prog.children
    w.grad = np.zeros((*batch, prog.n_params))
    w.adjs = [None] * len(toks)
    w.adjs[0] = seed if _is_mat(w.vals[0]) else _sum2(seed)
    mixed = bool(w.row_vals)
    full_pair = w.pair
    for i in range(len(toks)):
        a = w.adjs[i]
        if a is None:
            continue
        w.adjs[i] = None  # free memory as we go
        ch = kids[i]
        if mixed and prog.row_node[i]:
            if i in w.row_vals:
                # Root of a row subtree: its parent saw the expansion; reduce the adjoint
                # to the row and walk the subtree on the row (restoring vals afterwards,
                # so the forward pass can serve another reverse walk).
                assert w.inputs is not None and w.inputs.row is not None
                expanded = w.vals[i]
                w.vals[i] = w.row_vals[i]
                w.pair = w.inputs.row
                _OPS[toks[i]].reverse(w, i, ch, w.inputs.reduce(a))
                w.vals[i] = expanded
                w.pair = full_pair
                continue
            w.pair = w.inputs.row  # type: ignore[union-attr]
        elif mixed:
            w.pair = full_pair
        if ch:
            _OPS[toks[i]].reverse(w, i, ch, a)
        elif prog.slot_pos[i] >= 0:
            # Leaf slot reached through ``hp`` or ``power``: a holds ∂f/∂θ.
            p = prog.slot_pos[i]
            w.grad[..., p] += a * w.theta[p]
    w.pair = full_pair
    grad, w.adjs, w.grad = w.grad, [], np.zeros(0)
    return grad


def _is_mat(v: object) -> bool:
    return isinstance(v, np.ndarray) and v.ndim == 2


def _down(adj: Array, parent: object, child: object) -> Array:
    """Pass an adjoint from a parent to a child, summing when the child is a scalar."""
    if _is_mat(parent) and not _is_mat(child):
        return _sum2(adj)
    return adj


def _lowrank_grad(a: Array, P1: Array, P2: Array, dP1: Array, dP2: Array) -> Array:
    """``sum(a ⊙ ∂(P1 P2ᵀ))`` for ``∂P = dP``: ``sum(dP1 ⊙ a P2) + sum(dP2 ⊙ aᵀ P1)``."""
    return _sum2((a @ P2) * dP1) + _sum2((np.swapaxes(a, -1, -2) @ P1) * dP2)


def _spectral_grad(pair: _Pair, f: _Feat, a: Array) -> Array:
    """``sum(a ⊙ ∂(F1 F2ᵀ)/∂ω)``."""
    dF1, dF2 = f.derivatives(pair)
    assert f.F1 is not None and f.F2 is not None
    if pair.mode == "elementwise":  # pragma: no cover - diagonals are not differentiated
        raise NotImplementedError
    return _lowrank_grad(a, f.F1, f.F2, dF1, dF2)


def _shifted(pair: _Pair, f: _Feat, shift: float) -> tuple[Array, Array]:
    """Features minus the dot-product shift, both sides (shared when X2 is X1)."""
    A1, A2 = (f.F1, f.F2) if f.spectral else (pair.X1, pair.X2)
    assert A1 is not None and A2 is not None
    S1 = A1 - shift
    return S1, (S1 if A2 is A1 else A2 - shift)


# --------------------------------------------------------------------------------------
# Toeplitz helpers


def _toeplitz(row: Array) -> Array:
    """Symmetric Toeplitz matrix with first row ``row`` (C-contiguous copy)."""
    n = row.shape[0]
    buf = np.concatenate((row[:0:-1], row))
    return as_strided(buf[n - 1 :], shape=(n, n), strides=(-buf.strides[0], buf.strides[0])).copy()


def _diagonal_sums(A: Array) -> Array:
    """``c_k = Σ_{|i−j|=k} A_ij`` for a (batch of) square matrices; shape batch + (1, n).

    The VJP of the Toeplitz expansion: ``Σ_ij A_ij t_{|i−j|} = Σ_k c_k t_k``.
    """
    n = A.shape[-1]
    batch = A.shape[:-2]
    P = np.zeros((*batch, n, 2 * n))
    P[..., :n] = A
    st = P.strides
    upper = as_strided(P, shape=(*batch, n, n), strides=(*st[:-2], st[-2] + st[-1], st[-1])).sum(axis=-2)
    P[..., :n] = np.swapaxes(A, -1, -2)
    lower = as_strided(P, shape=(*batch, n, n), strides=(*st[:-2], st[-2] + st[-1], st[-1])).sum(axis=-2)
    c = upper + lower
    c[..., 0] *= 0.5
    return c[..., None, :]


# --------------------------------------------------------------------------------------
# Public API


def _natural(theta: ArrayLike, prog: _Program) -> Array:
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    if t.shape[0] != prog.n_params:
        raise ValueError(f"theta has {t.shape[0]} values but the kernel has {prog.n_params} slots")
    with np.errstate(over="ignore"):
        return np.exp(t)


def covariance(kernel: Kernel, inputs: Inputs | ArrayLike, theta: ArrayLike,
               X2: ArrayLike | None = None) -> Array:
    """Covariance matrix ``K[i, j] = k(x1_i, x2_j)``.

    Parameters
    ----------
    kernel : Kernel
    inputs : Inputs or array_like of shape (n, d)
        Prebuilt :class:`Inputs` (reused across calls) or ``X1``.
    theta : array_like of shape (p,)
        Log slot values, ordered as ``kernel.slots``.
    X2 : array_like of shape (m, d), optional
        Second input set when ``inputs`` is an array; omit for K(X1, X1).

    Returns
    -------
    K : ndarray of shape (n, m)
    """
    inp = _inputs(inputs, X2)
    prog = _compile(kernel.tokens)
    th = _natural(theta, prog)
    pair, is_row = inp.pair_for(kernel)
    with np.errstate(all="ignore"):
        vals = _forward(prog, pair, th, tape=False, inputs=None if is_row else inp).vals
    if is_row:
        return inp.expand(_to_matrix(vals[0], (1, pair.X2.shape[0]))[0])
    # Node values are fresh arrays (never the cached data), so no copy is needed.
    return _to_matrix(vals[0], inp.shape)


def covariance_diag(kernel: Kernel, X: ArrayLike, theta: ArrayLike) -> Array:
    """Diagonal ``k(x_i, x_i)`` without forming K.

    Returns
    -------
    ndarray of shape (n,)
    """
    A = _as_2d(X, "X")
    prog = _compile(kernel.tokens)
    th = _natural(theta, prog)
    pair = _Pair(A, A, zero_diag=True, mode="elementwise")
    with np.errstate(all="ignore"):
        vals = _forward(prog, pair, th, tape=False).vals
    return _to_matrix(vals[0], (A.shape[0], 1))[:, 0].copy()


def covariance_vjp(kernel: Kernel, inputs: Inputs | ArrayLike, theta: ArrayLike
                   ) -> tuple[Array, Callable[[Array], Array]]:
    """K and its vector-Jacobian product.

    Returns
    -------
    K : ndarray of shape (n, m)
    vjp : callable
        ``vjp(G)`` with ``G`` of shape (n, m) — or a batch ``(..., n, m)`` — returns
        ``Σ_ij G_ij ∂K_ij/∂theta`` of shape (p,) (or ``(..., p)``): the gradient of
        any scalar f(K) whose derivative with respect to K is G. Gradients are with
        respect to the *log* slot values.
    """
    inp = _inputs(inputs)
    prog = _compile(kernel.tokens)
    th = _natural(theta, prog)
    pair, is_row = inp.pair_for(kernel)
    with np.errstate(all="ignore"):
        walk = _forward(prog, pair, th, tape=True, inputs=None if is_row else inp)
    vals = walk.vals
    n, m = inp.shape
    if is_row:
        K = inp.expand(_to_matrix(vals[0], (1, pair.X2.shape[0]))[0])
    else:
        K = _to_matrix(vals[0], (n, m))
        if vals[0] is K and _OPS[prog.tokens[0]].reads_output:
            K = K.copy()  # the reverse walk reads the root value; callers may overwrite K

    def vjp(G: ArrayLike) -> Array:
        Ga = np.asarray(G, dtype=np.float64)
        if Ga.shape[-2:] != (n, m):
            raise ValueError(f"adjoint must end in shape {(n, m)}, got {Ga.shape}")
        batch = Ga.shape[:-2]
        if prog.n_params == 0:
            return np.zeros((*batch, 0))
        seed = inp.reduce(Ga) if is_row else Ga
        with np.errstate(all="ignore"):
            return _backward(walk, seed, batch)

    return K, vjp


def covariance_jacobian(kernel: Kernel, inputs: Inputs | ArrayLike, theta: ArrayLike,
                        X2: ArrayLike | None = None) -> tuple[Array, Array]:
    """K and the full Jacobian ``dK/dtheta`` (log slot values).

    Computed as one batched reverse pass over the n·m unit adjoints, so it costs
    O((n·m)²) memory: meant for tests and small inputs. Metric gradients use
    :func:`covariance_vjp` instead.

    Returns
    -------
    K : ndarray of shape (n, m)
    dK : ndarray of shape (n, m, p)
    """
    inp = _inputs(inputs, X2)
    K, vjp = covariance_vjp(kernel, inp, theta)
    n, m = K.shape
    basis = np.eye(n * m).reshape(n * m, n, m)
    J = vjp(basis)  # (n*m, p)
    return K, J.reshape(n, m, -1)
