"""The θ-independent data of an evaluation: :class:`Inputs`, built once per data set and reused by every
kernel and optimiser step.

A pair of input sets ``(X1, X2)`` is a :class:`_Pair`, whose squared distances are computed once and
cached. For the symmetric training matrix on 1-D inputs, :class:`Inputs` also finds the *lag row*: when
the n² pairs have few distinct lags ``|x − x'|`` (a regular grid, or monthly or daily dates whose lags
repeat), a stationary tree is evaluated once per distinct lag and K expanded from that row, as a
Toeplitz matrix on a full grid or by a gather otherwise; :meth:`Inputs.reduce` is the adjoint of that
expansion, for the reverse pass.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, NDArray

__all__ = ["Inputs"]

Array = NDArray[np.float64]


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

    def pair_for(self, stationary: bool) -> tuple[_Pair, bool]:
        """The geometry to evaluate a kernel on, and whether it is a lag row (only a ``stationary`` kernel's can be)."""
        if self.row is not None and stationary:
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


# --- Toeplitz helpers: the expansion of a lag row and its adjoint --------------------------------------


#: Up to this n the Toeplitz expansion and its adjoint use index arrays and workspaces made once per n
#: (:func:`_lag_index`, :func:`_workspace`): at the sizes of short series their per-call set-up cost more
#: than the work.
SMALL_N = 256


@lru_cache(maxsize=16)
def _lag_index(n: int) -> NDArray[np.intp]:
    """The lag index ``|i − j|`` (n×n, read-only) of the Toeplitz expansion, for n ≤ :data:`SMALL_N`."""
    i = np.arange(n)
    lag = np.abs(i[:, None] - i[None, :])
    lag.flags.writeable = False
    return lag


#: Each thread's workspaces of :func:`_diagonal_sums` by n: written at every call, so never shared between
#: threads (a dashboard's sessions fit kernels in threads of one server process).
_WORKSPACES = threading.local()


def _workspace(n: int) -> tuple[Array, Array]:
    """For n ≤ :data:`SMALL_N`, this thread's workspace of :func:`_diagonal_sums`: the left n×n block of an
    n×2n zero matrix, and the view of that matrix whose column k runs along the k-th diagonal."""
    spaces = getattr(_WORKSPACES, "by_n", None)
    if spaces is None:
        spaces = _WORKSPACES.by_n = {}
    if n not in spaces:
        if len(spaces) >= 16:
            spaces.clear()
        P = np.zeros((n, 2 * n))
        st = P.strides
        spaces[n] = (P[:, :n], np.ndarray((n, n), dtype=np.float64, buffer=P, strides=(st[0] + st[1], st[1])))
    return spaces[n]


def _toeplitz(row: Array) -> Array:
    """Symmetric Toeplitz matrix with first row ``row`` (C-contiguous copy)."""
    n = row.shape[0]
    if n <= SMALL_N:
        return np.take(row, _lag_index(n))
    buf = np.concatenate((row[:0:-1], row))
    return as_strided(buf[n - 1 :], shape=(n, n), strides=(-buf.strides[0], buf.strides[0])).copy()


def _diagonal_sums(A: Array) -> Array:
    """``c_k = Σ_{|i−j|=k} A_ij`` for a (batch of) square matrices; shape batch + (1, n).

    The VJP of the Toeplitz expansion: ``Σ_ij A_ij t_{|i−j|} = Σ_k c_k t_k``.
    """
    n = A.shape[-1]
    batch = A.shape[:-2]
    if not batch and n <= SMALL_N:
        # The same sums in the same order (row by row down each diagonal, then the trailing zeros),
        # in a workspace kept for this n.
        left, diagonals = _workspace(n)
        left[...] = A
        upper = diagonals.sum(axis=-2)
        left[...] = A.T
        c = upper + diagonals.sum(axis=-2)
        c[0] *= 0.5
        return c[None, :]
    P = np.zeros((*batch, n, 2 * n))
    P[..., :n] = A
    st = P.strides
    upper = as_strided(P, shape=(*batch, n, n), strides=(*st[:-2], st[-2] + st[-1], st[-1])).sum(axis=-2)
    P[..., :n] = np.swapaxes(A, -1, -2)
    lower = as_strided(P, shape=(*batch, n, n), strides=(*st[:-2], st[-2] + st[-1], st[-1])).sum(axis=-2)
    c = upper + lower
    c[..., 0] *= 0.5
    return c[..., None, :]
