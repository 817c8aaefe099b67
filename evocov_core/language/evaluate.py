"""The stack evaluator: ``K(X1, X2)``, its diagonal, and gradients with respect to θ.

Everything here is a pure function of (kernel, inputs, theta).

``theta`` is the vector of **natural logarithms** of the kernel's slot values, ordered
as :attr:`evocov_core.language.kernel.Kernel.slots`; gradients are with respect to it.

This module owns the public calls and the stack walk (forward values, reverse adjoints). What the walk
reads lives beside it: the θ-independent data and the lag row in :mod:`evocov_core.language.inputs`,
the compiled program of a tree in :mod:`evocov_core.language.program`, and each operator's forward
and reverse rule in the table of :mod:`evocov_core.language.operators`.

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
  expanded where its parent reads it (mixed geometry;
  :func:`evocov_core.language.program._row_subtrees`).
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

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.language.grammar import CONSTANTS, symbol
from evocov_core.language.inputs import Inputs, _as_2d, _inputs, _Pair
from evocov_core.language.kernel import Kernel
from evocov_core.language.operators import _is_mat, _Program, _sum2, _Walk
from evocov_core.language.program import _compile

__all__ = [
    "Inputs",
    "covariance",
    "covariance_diag",
    "covariance_jacobian",
    "covariance_vjp",
]

Array = NDArray[np.float64]


# --------------------------------------------------------------------------------------
# The stack walk: forward (values) and reverse (adjoints), one node at a time


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
        out = symbol(toks[i]).forward(w, i, ch)
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
                symbol(toks[i]).reverse(w, i, ch, w.inputs.reduce(a))
                w.vals[i] = expanded
                w.pair = full_pair
                continue
            w.pair = w.inputs.row  # type: ignore[union-attr]
        elif mixed:
            w.pair = full_pair
        if ch:
            symbol(toks[i]).reverse(w, i, ch, a)
        elif prog.slot_pos[i] >= 0:
            # Leaf slot reached through ``hp`` or ``power``: a holds ∂f/∂θ.
            p = prog.slot_pos[i]
            w.grad[..., p] += a * w.theta[p]
    w.pair = full_pair
    grad, w.adjs, w.grad = w.grad, [], np.zeros(0)
    return grad


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
    pair, is_row = inp.pair_for(kernel.is_stationary)
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
    pair, is_row = inp.pair_for(kernel.is_stationary)
    with np.errstate(all="ignore"):
        walk = _forward(prog, pair, th, tape=True, inputs=None if is_row else inp)
    vals = walk.vals
    n, m = inp.shape
    if is_row:
        K = inp.expand(_to_matrix(vals[0], (1, pair.X2.shape[0]))[0])
    else:
        K = _to_matrix(vals[0], (n, m))
        if vals[0] is K and prog.reads_output[0]:
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
