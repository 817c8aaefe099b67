"""Compiled kernel trees: a tree turned once into a flat list of steps for K and its reverse pass.

The stack walk of :mod:`evocov_core.language.evaluate` decides at every node and every call what the
node is (a scalar, an n×m array, a feature map), which rule applies, whether a child's buffer may be
overwritten and how an adjoint passes down. A :class:`Compiled` tree has made them once: each node is
one step, a closure that does exactly the numpy operations the walk's rule does for it, in the same
order, so the values and gradients are the same floats (``tests/test_evaluate.py`` checks it over the
library and random trees). What it saves is the deciding, not the arithmetic: on the short series of a
panel (15-150 points) an LML and its gradient took 0.8-0.95 of the walk's time (``SE + PER×SE``; the
trees of a search, 20-30 nodes, gain less: each node's numpy calls, about 1.5 µs forward and 3.5 µs
back, are most of the cost; ``docs/design.md``, "Short series"). Nodes whose rule is not specialised
here (change points and windows, the state-space forms, spectral features) run the rule their record in
:mod:`evocov_core.language.grammar` names inside the same step list.

Trees that mix geometries (a stationary subtree evaluated on the lag row inside a non-stationary
tree) run the same steps, each on its geometry, with the walk's expansion and reduction at the roots of
the row subtrees. Not compiled: cross-covariances and diagonals (the callers keep the walk there), and
batched adjoints. Steps never write into a child's buffer: at these sizes the saved allocation is worth
less than the bookkeeping; above :data:`FULL_MAX_N` points on the full pair it is not, and the walk runs.

Compiling is a pure function of the tokens, cached; the geometry is chosen at each call.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.language.grammar import CONSTANTS, OPERATORS, Cov, InputPair, TPair, symbol
from evocov_core.language.inputs import Inputs, _Pair
from evocov_core.language.operators import _Program, _Walk
from evocov_core.language.program import _compile

if TYPE_CHECKING:
    from evocov_core.language.kernel import Kernel

__all__ = ["Compiled", "compiled", "covariance", "covariance_vjp"]

Array = NDArray[np.float64]
Step = Callable[[_Walk], object]
RevStep = Callable[[_Walk, Any], None]

#: Nodes whose value is a feature map, not a covariance value.
_FEATURES = frozenset(s.name for s in OPERATORS if s.ret is TPair)
#: Nodes that read the data (a covariance of the inputs or their features): their value is an n×m array.
_DATA = frozenset(s.name for s in OPERATORS if s.ret is Cov and any(a in (InputPair, TPair) for a in s.args))


def _shapes(prog: _Program) -> tuple[bool, ...]:
    """Whether each node's value is an n×m array (else a scalar or a feature map)."""
    toks, kids = prog.tokens, prog.children
    mat = [False] * len(toks)
    for i in range(len(toks) - 1, -1, -1):
        t = toks[i]
        if t in _DATA:
            mat[i] = True
        elif t in _FEATURES or not kids[i]:
            mat[i] = False
        elif t == "power":
            mat[i] = mat[kids[i][0]]
        elif t == "hp":
            mat[i] = False
        else:
            mat[i] = any(mat[c] for c in kids[i])
    return tuple(mat)


def _sum2(a: Array) -> Array:
    return a.sum(axis=(-2, -1))


class Compiled:
    """A kernel tree as steps: :meth:`forward` gives K's value (or its lag row), :meth:`reverse` ∂f/∂log θ.

    Parameters
    ----------
    prog : _Program
        The tree's program (:func:`evocov_core.language.program._compile`).
    """

    __slots__ = ("_fwd", "_rev", "mat", "prog", "reads_root")

    def __init__(self, prog: _Program) -> None:
        self.prog = prog
        self.mat = _shapes(prog)
        self.reads_root = prog.reads_output[0]
        self._fwd: tuple[tuple[int, Step], ...] = tuple(
            (i, self._forward_step(i)) for i in range(len(prog.tokens) - 1, -1, -1))
        self._rev: tuple[RevStep | None, ...] = tuple(self._reverse_step(i) for i in range(len(prog.tokens)))

    # --- building the steps ------------------------------------------------------------------------------

    def _forward_step(self, i: int) -> Step:
        prog = self.prog
        tok, ch = prog.tokens[i], prog.children[i]
        if not ch:
            p = prog.slot_pos[i]
            if p >= 0:
                return lambda w: w.theta[p]
            if tok == "x":
                return lambda w: w.pair
            const = CONSTANTS[tok]
            return lambda w: const
        if tok == "hp":
            c = ch[0]
            return lambda w: w.vals[c]
        if tok in ("add", "multiply"):
            uf = np.add if tok == "add" else np.multiply
            a, b = ch
            # Both commute exactly in IEEE arithmetic: the walk's in-place variants give the same floats.
            return lambda w: uf(w.vals[a], w.vals[b])
        if tok in ("exp", "square", "sqrt"):
            uf1 = {"exp": np.exp, "square": np.square, "sqrt": np.sqrt}[tok]
            c = ch[0]
            return lambda w: uf1(w.vals[c])
        if tok == "div" and self.mat[ch[0]]:
            c = ch[0]
            return lambda w: np.reciprocal(w.vals[c])
        if tok == "power":
            c, e = ch
            return lambda w: np.power(w.vals[c], w.vals[e])
        if tok == "euc":
            rule = symbol(tok).forward
            return lambda w: rule(w, i, ch)
        if tok == "sq_dist" and prog.tokens[ch[0]] == "euc":
            ls = ch[1]

            def sq_dist_euc(w: _Walk) -> object:
                inv = 1.0 / float(w.vals[ls]) ** 2  # type: ignore[arg-type]
                return w.pair.sqdist * inv
            return sq_dist_euc
        rule = symbol(tok).forward
        return lambda w: rule(w, i, ch)

    def _reverse_step(self, i: int) -> RevStep | None:
        prog = self.prog
        tok, ch = prog.tokens[i], prog.children[i]
        hp_, mat = prog.has_param, self.mat
        if not ch:
            p = prog.slot_pos[i]
            if p < 0:
                return None

            def slot(w: _Walk, a: Any) -> None:
                w.grad[..., p] += a * w.theta[p]
            return slot
        if not hp_[i]:
            return None
        if tok == "hp":
            c = ch[0]

            def identity(w: _Walk, a: Any) -> None:
                w.adjs[c] = a
            return identity
        if tok == "add":
            # _down: a scalar child of an n×m parent gets the adjoint's sum.
            targets = tuple((c, mat[i] and not mat[c]) for c in ch if hp_[c])

            def add(w: _Walk, a: Any) -> None:
                for c, summed in targets:
                    w.adjs[c] = _sum2(a) if summed else a
            return add
        if tok == "multiply":
            u, v = ch
            down_u = mat[i] and not mat[u]
            down_v = mat[i] and not mat[v]
            hu, hv = hp_[u], hp_[v]

            def multiply(w: _Walk, a: Any) -> None:
                vals = w.vals
                if hu:
                    g = a * vals[v]
                    w.adjs[u] = _sum2(g) if down_u else g
                if hv:
                    g = a * vals[u]
                    w.adjs[v] = _sum2(g) if down_v else g
            return multiply
        if tok == "exp":
            c = ch[0]

            def exp(w: _Walk, a: Any) -> None:
                w.adjs[c] = a * w.vals[i]
            return exp
        if tok == "square":
            c = ch[0]

            def square(w: _Walk, a: Any) -> None:
                w.adjs[c] = a * (2.0 * w.vals[c])  # type: ignore[operator]
            return square
        if tok == "sq_dist" and prog.tokens[ch[0]] == "euc":
            s = prog.slot_pos[ch[1]]

            def sq_dist_euc(w: _Walk, a: Any) -> None:
                w.grad[..., s] += -2.0 * _sum2(a * w.vals[i])
            return sq_dist_euc
        rule = symbol(tok).reverse
        return lambda w, a: rule(w, i, ch, a)

    # --- running them ------------------------------------------------------------------------------------

    def forward(self, pair: _Pair, theta: Array, inputs: Inputs | None = None) -> _Walk:
        """Every node's value on ``pair`` for natural slot values ``theta`` (p,), kept for :meth:`reverse`.

        With ``inputs`` (mixed geometry: ``pair`` is the full pair and the tree has row subtrees), the
        row subtrees are evaluated on the lag row and expanded where their parent reads them, as the walk does.
        """
        w = _Walk(self.prog, pair, theta, True, inputs)
        vals = w.vals
        if inputs is None:
            for i, step in self._fwd:
                vals[i] = step(w)
            return w
        row_node, roots, mat = self.prog.row_node, self.prog.row_roots, self.mat
        row = inputs.row
        for i, step in self._fwd:
            w.pair = row if row_node[i] else pair  # type: ignore[assignment]
            out = step(w)
            if i in roots and mat[i]:
                w.row_vals[i] = out
                out = inputs.expand(out[0])  # type: ignore[index]
            vals[i] = out
        w.pair = pair
        return w

    def reverse(self, w: _Walk, seed: Array) -> Array:
        """∂f/∂log θ, shape (p,), for the root adjoint ``seed`` (shape of the root's value, or its sum).

        The walk's values are left as they are (another reverse pass may follow).
        """
        w.grad = np.zeros(self.prog.n_params)
        adjs: list[object] = [None] * len(self.prog.tokens)
        w.adjs = adjs
        adjs[0] = seed if self.mat[0] else _sum2(seed)
        if w.row_vals:
            self._reverse_mixed(w, adjs)
        else:
            for i, step in enumerate(self._rev):
                a = adjs[i]
                if a is None:
                    continue
                adjs[i] = None
                if step is not None:
                    step(w, a)
        grad, w.adjs, w.grad = w.grad, [], np.zeros(0)
        return grad

    def _reverse_mixed(self, w: _Walk, adjs: list[object]) -> None:
        """The reverse pass of a mixed-geometry walk: a row subtree's root reduces its adjoint to the lag
        row and walks its subtree there (restoring its expanded value afterwards), as the walk does."""
        inputs = w.inputs
        assert inputs is not None and inputs.row is not None
        row, full = inputs.row, w.pair
        row_node, vals = self.prog.row_node, w.vals
        for i, step in enumerate(self._rev):
            a = adjs[i]
            if a is None:
                continue
            adjs[i] = None
            if row_node[i]:
                w.pair = row
                if i in w.row_vals:
                    expanded = vals[i]
                    vals[i] = w.row_vals[i]
                    if step is not None:
                        step(w, inputs.reduce(a))  # type: ignore[arg-type]
                    vals[i] = expanded
                    w.pair = full
                    continue
            else:
                w.pair = full
            if step is not None:
                step(w, a)
        w.pair = full


@lru_cache(maxsize=4096)
def _build(tokens: tuple[str, ...]) -> Compiled:
    return Compiled(_compile(tokens))


#: Above this many points a tree evaluated on the full n×n pair (not on the lag row) is left to the walk,
#: which writes into its children's buffers: there the allocations the steps make cost more than the
#: bookkeeping they save. ``SE + PER×SE`` on ``bench_lml``'s irregular grid, LML and gradient, compiled ÷
#: walk (medians of 7 interleaved rounds): 0.83, 0.86, 0.79, 0.95 at n = 19, 44, 80, 116; 1.02, 1.07,
#: 1.07 at n = 129, 200, 315; the LML alone 1.3 at n = 490 and 900.
FULL_MAX_N = 128


def compiled(kernel: Kernel, inputs: Inputs) -> tuple[Compiled, _Pair, bool] | None:
    """The compiled tree of ``kernel`` for the symmetric ``inputs``, the pair it is evaluated on, and
    whether that pair is the lag row.

    None when the walk does it: inputs that are not one symmetric set, or more than
    :data:`FULL_MAX_N` points and a tree evaluated on the full pair.
    """
    if not inputs.symmetric:
        return None
    pair, on_row = inputs.pair_for(kernel.is_stationary)
    if not on_row and inputs.shape[0] > FULL_MAX_N:
        return None
    return _build(kernel.tokens), pair, on_row


def _mixed(c: Compiled, inputs: Inputs, on_row: bool) -> Inputs | None:
    """``inputs`` when the tree is evaluated in mixed geometry (row subtrees on the full pair), else None."""
    return inputs if not on_row and inputs.row is not None and c.prog.row_roots else None


def _natural(theta: ArrayLike, n_params: int) -> Array:
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    if t.shape[0] != n_params:
        raise ValueError(f"theta has {t.shape[0]} values but the kernel has {n_params} slots")
    return np.exp(t)


def _root_matrix(v: object, inputs: Inputs, pair: _Pair, on_row: bool) -> Array:
    """K from the root's value: the expansion of the lag row, or the value itself (a constant broadcast)."""
    if on_row:
        row = v if isinstance(v, np.ndarray) and v.ndim == 2 else np.full((1, pair.X2.shape[0]), float(v))  # type: ignore[arg-type]
        return inputs.expand(row[0])
    if isinstance(v, np.ndarray) and v.ndim == 2:
        return v
    return np.full(inputs.shape, float(v))  # type: ignore[arg-type]


def covariance(kernel: Kernel, inputs: Inputs, theta: ArrayLike) -> Array | None:
    """``K(X, X)`` as :func:`evocov_core.language.evaluate.covariance` gives it, bit for bit; None when
    the tree is not compiled for these inputs (:func:`compiled`).

    Parameters
    ----------
    kernel : Kernel
    inputs : Inputs
        Symmetric training inputs.
    theta : array_like of shape (p,)
        Log slot values.

    Returns
    -------
    K : ndarray of shape (n, n), or None
    """
    found = compiled(kernel, inputs)
    if found is None:
        return None
    c, pair, on_row = found
    with np.errstate(all="ignore"):
        w = c.forward(pair, _natural(theta, c.prog.n_params), _mixed(c, inputs, on_row))
        return _root_matrix(w.vals[0], inputs, pair, on_row)


def covariance_vjp(kernel: Kernel, inputs: Inputs, theta: ArrayLike
                   ) -> tuple[Array, Callable[[Array], Array]] | None:
    """K and its vector-Jacobian product, as :func:`evocov_core.language.evaluate.covariance_vjp` gives
    them (bit for bit) for one adjoint at a time; None when the tree is not compiled for these inputs.

    Returns
    -------
    K : ndarray of shape (n, n)
        Free to overwrite.
    vjp : callable
        ``vjp(G)`` for ``G`` of shape (n, n): ``Σ_ij G_ij ∂K_ij/∂theta``, shape (p,), with respect to the
        log slot values.
    """
    found = compiled(kernel, inputs)
    if found is None:
        return None
    c, pair, on_row = found
    n_params = c.prog.n_params
    with np.errstate(all="ignore"):
        w = c.forward(pair, _natural(theta, n_params), _mixed(c, inputs, on_row))
        root = w.vals[0]
        K = _root_matrix(root, inputs, pair, on_row)
    if K is root and c.reads_root:
        K = K.copy()  # the reverse pass reads the root value; callers may overwrite K

    def vjp(G: Array) -> Array:
        if n_params == 0:
            return np.zeros(0)
        with np.errstate(all="ignore"):
            return c.reverse(w, inputs.reduce(G) if on_row else G)

    return K, vjp
