"""The stack evaluator: ``K(X1, X2)``, its diagonal, and gradients with respect to θ.

Everything here is a pure function of (kernel, inputs, theta).

``theta`` is the vector of **natural logarithms** of the kernel's slot values, ordered
as :attr:`evocov_core.kernel.Kernel.slots`; gradients are with respect to it.

How it is fast
--------------
* :class:`Inputs` holds the data-only work (squared distances, dot products, row sums)
  computed once per data set and reused by every kernel and optimiser step.
* ``spectral`` maps the *n* inputs to ``[sin(θp·x), cos(θp·x)]``; its squared distance
  and dot product are then small matrix products (``2d − 2 F Fᵀ``): no trigonometry on
  n×n arrays (PERF_NOTES: sin/cos cost 8-10 ns an element, exp about 1).
* Subtrees without slots evaluate to Python scalars and broadcast.
* For a stationary tree (no ``dot_prod``) on a regular 1-D grid, K is symmetric
  Toeplitz: the tree is evaluated on one row and expanded (:class:`Inputs` detects the
  grid). The reverse pass reduces the n×n adjoint to its diagonal sums and walks back
  through the same row, so gradients cost O(n²) once, not per node.
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
  as they are; :mod:`evocov_core.gp` turns them into a failed fit with a reason.

Threads: the evaluator calls BLAS (matrix products). Call :func:`limit_blas_threads`
once per worker process: on 2-core machines a 2-thread OpenBLAS was measured up to
2000x slower than one thread when the other core is busy.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, NDArray

from .grammar import CONSTANTS, arity, is_slot
from .kernel import Kernel

__all__ = [
    "Inputs",
    "covariance",
    "covariance_diag",
    "covariance_jacobian",
    "covariance_vjp",
    "limit_blas_threads",
    "prepare_process",
]

Array = NDArray[np.float64]

_BLAS_LIMITED = False
_MALLOC_TUNED = False


def limit_blas_threads(n: int = 1) -> None:
    """Limit BLAS/OpenMP to ``n`` threads in this process (idempotent).

    Parallelism comes from evaluating candidate kernels in separate processes.
    """
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    # Libraries loaded later read these; scipy ships its own OpenBLAS, so load it now
    # too, or threadpoolctl would leave it (and every Cholesky) at its default threads.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    import scipy.linalg
    import scipy.spatial.distance  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    _BLAS_LIMITED = True


def _tune_malloc() -> None:
    """Keep large freed blocks in the heap instead of returning them to the OS.

    Every node of a kernel tree makes an n×n temporary (1.9 MB at n = 490). glibc
    serves blocks that large with a fresh ``mmap`` and unmaps them on free, so each
    temporary paid ~0.5 ms of page faults: measured here, SE + PER×SE at n = 490 took
    16.9 ms with the defaults and 4.2 ms with these thresholds. No-op off glibc.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 256 * 1024 * 1024)
        libc.mallopt(m_trim_threshold, 512 * 1024 * 1024)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def prepare_process() -> None:
    """Set up this process for kernel evaluation: one BLAS thread, malloc thresholds.

    Called by every entry point that evaluates kernels (searches, their worker
    processes, the CLI, the benchmarks). Idempotent.
    """
    limit_blas_threads(1)
    _tune_malloc()


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


class Inputs:
    """Data-only quantities for evaluating kernels on ``(X1, X2)``; build once, reuse.

    Parameters
    ----------
    X1 : array_like of shape (n, d) or (n,)
    X2 : array_like of shape (m, d) or (m,), optional
        Omit for the symmetric training matrix K(X1, X1).
    toeplitz : bool
        Allow the lag fast path for stationary trees when ``X2`` is omitted and ``X1`` is
        a sorted 1-D lattice ``x_0 + k·h`` (integer k). Then K depends on the lag
        ``|k_i − k_j|`` only: the tree is evaluated once per lag (one row) and K is
        expanded from it, as a Toeplitz matrix when no lattice point is missing, by a
        gather ``row[|k_i − k_j|]`` otherwise (e.g. monthly data with missing months).
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
        lat = _lattice(A[:, 0]) if toeplitz and self.symmetric and A.shape[1] == 1 else None
        if lat is not None:
            h, k = lat
            # Row of K over every lag 0..k_max: pairs (x_0, x_0 + lag·h); [0, 0] is a diagonal.
            lattice = (A[0, 0] + h * np.arange(k[-1] + 1))[:, None]
            self.row = _Pair(A[:1], lattice, zero_diag=True)
            self.lags = k
            self.expansion = "toeplitz" if k[-1] == A.shape[0] - 1 else "gather"
        self._lag_matrix: NDArray[np.intp] | None = None

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
        """``|k_i − k_j|`` (n×n), for the gather expansion."""
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
    return _Program(
        tokens=tokens,
        children=tuple(children),
        slot_pos=tuple(pos.get(t, -1) for t in tokens),
        has_param=tuple(has_param),
        n_params=len(slots),
    )


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


# Operators whose reverse rule reads their own output z (exp: z, sqrt: 1/(2z), div: −z²,
# power: z log w, sq_dist: −2z, dot_prod: −z). Their output must survive until the
# backward walk, so a parent may not overwrite it in place when a tape is kept.
_NEEDS_OWN_OUTPUT = frozenset({"exp", "sqrt", "div", "power", "sq_dist", "dot_prod"})


def _forward(prog: _Program, pair: _Pair, theta: Array, tape: bool) -> list[object]:
    """Evaluate every node bottom-up; returns the node values (prefix order).

    ``theta`` holds natural (exponentiated) slot values. Without ``tape`` every
    operator writes into a child's buffer when it owns one (one n×n pass, no new array);
    with ``tape`` only where the reverse walk will not need the overwritten value.
    """
    toks, kids, has_p = prog.tokens, prog.children, prog.has_param
    vals: list[object] = [None] * len(toks)
    owned = [False] * len(toks)  # vals[i] is a fresh array this pass may overwrite

    def clobberable(c: int) -> bool:
        if not owned[c]:
            return False
        return not tape or not has_p[c] or toks[c] not in _NEEDS_OWN_OUTPUT

    for i in range(len(toks) - 1, -1, -1):
        tok = toks[i]
        ch = kids[i]
        if not ch:
            p = prog.slot_pos[i]
            if p >= 0:
                vals[i] = theta[p]
            elif tok == "x":
                vals[i] = pair
            else:
                vals[i] = CONSTANTS[tok]
            continue
        a = vals[ch[0]]
        out: object
        if tok == "add" or tok == "multiply":
            b = vals[ch[1]]
            op = np.add if tok == "add" else np.multiply
            # multiply's reverse rule reads each operand to form the other's adjoint.
            ok_a = clobberable(ch[0]) and (tok == "add" or not tape or not has_p[ch[1]])
            ok_b = clobberable(ch[1]) and (tok == "add" or not tape or not has_p[ch[0]])
            if ok_a and _is_mat(a) and (not _is_mat(b) or b.shape == a.shape):  # type: ignore[union-attr]
                out = op(a, b, out=a)
            elif ok_b and _is_mat(b) and (not _is_mat(a) or a.shape == b.shape):  # type: ignore[union-attr]
                out = op(b, a, out=b)
            else:
                out = op(a, b)
        elif tok in ("exp", "sqrt", "div", "square"):
            f = {"exp": np.exp, "sqrt": np.sqrt, "div": np.reciprocal, "square": np.square}[tok]
            # square's reverse rule reads its input (2w), so it keeps it under a tape.
            if _is_mat(a) and clobberable(ch[0]) and (tok != "square" or not tape or not has_p[ch[0]]):
                out = f(a, out=a)
            elif _is_mat(a):
                out = f(a)
            elif tok == "div":
                out = 1.0 / a if a != 0 else np.inf  # type: ignore[operator]
            else:
                out = f(a)
        elif tok == "power":
            th = vals[ch[1]]
            if _is_mat(a) and clobberable(ch[0]) and not tape:
                out = np.power(a, th, out=a)
            else:
                out = np.power(a, th)
        elif tok == "hp":
            out = a
        elif tok == "euc":
            out = _Feat(False)
        elif tok == "spectral":
            om = float(vals[ch[1]])  # type: ignore[arg-type]
            F1 = _features(pair.X1, om)
            F2 = F1 if pair.X2 is pair.X1 else _features(pair.X2, om)
            out = _Feat(True, om, prog.slot_pos[ch[1]], F1, F2)
        elif tok == "sq_dist":
            f_: _Feat = a  # type: ignore[assignment]
            inv = 1.0 / float(vals[ch[1]]) ** 2  # type: ignore[arg-type]
            if f_.spectral:
                # (2d − 2 F1F2ᵀ)/l²: the factor goes on the small n×2d side of the product.
                z = pair.gram(f_.F1, f_.F2 * (-2.0 * inv))  # type: ignore[operator]
                z += 2.0 * pair.d * inv
                np.maximum(z, 0.0, out=z)
                pair.clear_diag(z)
            else:
                z = pair.sqdist * inv
            out = z
        elif tok == "dot_prod":
            # (x̂ − s)·(x̂' − s)/l as one matrix product of shifted features: no n×n passes
            # beyond the product itself.
            S1, S2 = _shifted(pair, a, float(vals[ch[1]]))  # type: ignore[arg-type]
            out = pair.gram(S1 * (1.0 / float(vals[ch[2]])), S2)  # type: ignore[arg-type]
        else:  # pragma: no cover - the grammar has no other symbol
            raise ValueError(f"unknown operator {tok!r}")
        vals[i] = out
        owned[i] = _is_mat(out)
        if not tape:
            for c in ch:  # release children early: lower peak memory
                vals[c] = None
    return vals


def _to_matrix(v: object, shape: tuple[int, int]) -> Array:
    if isinstance(v, np.ndarray) and v.ndim == 2:
        return v
    return np.full(shape, float(v))  # type: ignore[arg-type]


def _sum2(a: Array) -> Array:
    """Sum over the last two (matrix) axes, keeping batch axes."""
    return a.sum(axis=(-2, -1))


def _backward(prog: _Program, pair: _Pair, theta: Array, vals: list[object], seed: Array,
              batch: tuple[int, ...]) -> Array:
    """Reverse walk (parents before children): ∂f/∂log θ for a root adjoint ``seed``.

    ``seed`` has shape ``batch + (n, m)``. Scalar nodes carry adjoints of shape
    ``batch``; matrix nodes ``batch + (n, m)``.
    """
    toks, kids, hp_ = prog.tokens, prog.children, prog.has_param
    grad = np.zeros((*batch, prog.n_params))
    adjs: list[object] = [None] * len(toks)
    adjs[0] = seed if _is_mat(vals[0]) else _sum2(seed)
    for i, tok in enumerate(toks):
        a = adjs[i]
        if a is None:
            continue
        adjs[i] = None  # free memory as we go
        ch = kids[i]
        if not ch:
            p = prog.slot_pos[i]
            if p >= 0:
                # Leaf slot reached through ``hp`` or ``power``: a holds ∂f/∂θ.
                grad[..., p] += a * theta[p]  # type: ignore[operator]
            continue
        if tok == "add":
            for c in ch:
                if hp_[c]:
                    adjs[c] = _down(a, vals[i], vals[c])
        elif tok == "multiply":
            w, v = vals[ch[0]], vals[ch[1]]
            if hp_[ch[0]]:
                adjs[ch[0]] = _down(a * v, vals[i], w)  # type: ignore[operator]
            if hp_[ch[1]]:
                adjs[ch[1]] = _down(a * w, vals[i], v)  # type: ignore[operator]
        elif tok == "exp":
            adjs[ch[0]] = a * vals[i]  # type: ignore[operator]
        elif tok == "square":
            adjs[ch[0]] = a * (2.0 * vals[ch[0]])  # type: ignore[operator]
        elif tok == "sqrt":
            z = vals[i]
            with np.errstate(divide="ignore", invalid="ignore"):
                dz = np.where(np.asarray(z) > 0, 0.5 / np.asarray(z), 0.0)
            adjs[ch[0]] = a * dz  # type: ignore[operator]
        elif tok == "div":
            z = vals[i]
            adjs[ch[0]] = a * -(np.asarray(z) ** 2)  # type: ignore[operator]
        elif tok == "power":
            w = np.asarray(vals[ch[0]])
            z = np.asarray(vals[i])
            th = float(vals[ch[1]])  # type: ignore[arg-type]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                dzdw = np.where(w != 0, th * np.power(w, th - 1.0), 0.0)
                dlog = np.where(w > 0, z * np.log(np.where(w > 0, w, 1.0)), 0.0)
            if hp_[ch[0]]:
                adjs[ch[0]] = a * dzdw  # type: ignore[operator]
            gz = a * dlog  # type: ignore[operator]
            grad[..., prog.slot_pos[ch[1]]] += (_sum2(gz) if _is_mat(vals[i]) else gz) * th
        elif tok == "hp":
            adjs[ch[0]] = a
        elif tok == "sq_dist":
            _sq_dist_back(prog, pair, theta, vals, i, a, grad)  # type: ignore[arg-type]
        elif tok == "dot_prod":
            _dot_prod_back(prog, pair, theta, vals, i, a, grad)  # type: ignore[arg-type]
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


def _sq_dist_back(prog: _Program, pair: _Pair, theta: Array, vals: list[object], i: int,
                  a: Array, grad: Array) -> None:
    ch = prog.children[i]
    f: _Feat = vals[ch[0]]  # type: ignore[assignment]
    z: Array = vals[i]  # type: ignore[assignment]
    # z ∝ θl⁻²: ∂z/∂log θl = −2 z.
    grad[..., prog.slot_pos[ch[1]]] += -2.0 * _sum2(a * z)
    if f.spectral and prog.has_param[ch[0]]:
        lval = float(vals[ch[1]])  # type: ignore[arg-type]
        # z = (2d − 2G)/θl²  ⇒  ∂z/∂ω = −2/θl² ∂G/∂ω
        grad[..., f.pos] += (-2.0 / lval**2) * _spectral_grad(pair, f, a) * f.omega


def _shifted(pair: _Pair, f: _Feat, shift: float) -> tuple[Array, Array]:
    """Features minus the dot-product shift, both sides (shared when X2 is X1)."""
    A1, A2 = (f.F1, f.F2) if f.spectral else (pair.X1, pair.X2)
    assert A1 is not None and A2 is not None
    S1 = A1 - shift
    return S1, (S1 if A2 is A1 else A2 - shift)


def _dot_prod_back(prog: _Program, pair: _Pair, theta: Array, vals: list[object], i: int,
                   a: Array, grad: Array) -> None:
    # z = S1 S2ᵀ / l with S = x̂ − s.
    ch = prog.children[i]
    f: _Feat = vals[ch[0]]  # type: ignore[assignment]
    z: Array = vals[i]  # type: ignore[assignment]
    s = float(vals[ch[1]])  # type: ignore[arg-type]
    l_ = float(vals[ch[2]])  # type: ignore[arg-type]
    S1, S2 = _shifted(pair, f, s)
    rows = a.sum(axis=-1)  # batch + (n,)
    cols = a.sum(axis=-2)  # batch + (m,)
    # ∂z_ij/∂s = −(Σ_k S1_ik + Σ_k S2_jk)/l
    dz_ds = -(rows @ S1.sum(axis=1) + cols @ S2.sum(axis=1)) / l_
    grad[..., prog.slot_pos[ch[1]]] += dz_ds * s
    grad[..., prog.slot_pos[ch[2]]] += -_sum2(a * z)
    if f.spectral and prog.has_param[ch[0]]:
        dF1, dF2 = f.derivatives(pair)
        grad[..., f.pos] += (_lowrank_grad(a, S1, S2, dF1, dF2) / l_) * f.omega


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
        vals = _forward(prog, pair, th, tape=False)
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
        vals = _forward(prog, pair, th, tape=False)
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
        vals = _forward(prog, pair, th, tape=True)
    n, m = inp.shape
    if is_row:
        K = inp.expand(_to_matrix(vals[0], (1, pair.X2.shape[0]))[0])
    else:
        K = _to_matrix(vals[0], (n, m))
        if vals[0] is K and prog.tokens[0] in _NEEDS_OWN_OUTPUT:
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
            return _backward(prog, pair, th, vals, seed, batch)

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
