"""The evaluator's rules of the operations: how each computes its value from its children's (forward)
and, given the adjoint ``∂f/∂value``, passes adjoints to its children and adds its slots' ``∂f/∂log θ``
(reverse).

Each operation's record in :data:`evocov_core.language.grammar.OPERATORS` names its two rules here,
beside its types, family, printers, fold and slot roles: there is one record per operation and no
second table. The stack walk that applies them is :mod:`evocov_core.language.evaluate`. Values are
Python scalars (subtrees without slots broadcast), n×m arrays, or for the input maps (``euc``,
``spectral``) a :class:`_Feat`; the rules write into a child's buffer when the walk allows it
(:meth:`_Walk.clobberable`), so that a chain of nestable operators costs one n×m array.

The grammar imports this module for its records, so this one imports no other module of the language
when it runs (the inputs only for annotations); for that reason the walk's program
(:class:`_Program`, made by :mod:`evocov_core.language.program`) is defined here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

if TYPE_CHECKING:  # annotations only: the inputs build on no other module of the language
    from evocov_core.language.inputs import Inputs, _Pair

__all__ = ["Forward", "Reverse"]

Array = NDArray[np.float64]


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


@dataclass(frozen=True)
class _Program:
    """A kernel's tokens as the walk reads them (:func:`evocov_core.language.program._compile`)."""

    tokens: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    slot_pos: tuple[int, ...]  # position in theta for slot nodes, -1 otherwise
    has_param: tuple[bool, ...]  # subtree depends on theta
    n_params: int
    # Whether each node's reverse rule reads the node's own value (its record's ``reads_output``).
    reads_output: tuple[bool, ...]
    # Nodes of the maximal stationary subtrees worth evaluating on the lag row when the
    # whole tree is not stationary (see program._row_subtrees), and the roots of those subtrees.
    row_node: tuple[bool, ...] = ()
    row_roots: frozenset[int] = frozenset()


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
        return not self.tape or not self.prog.has_param[c] or not self.prog.reads_output[c]

    def slot(self, c: int) -> int:
        """Position in θ of the slot node ``c`` (an operator's Hyper argument)."""
        return self.prog.slot_pos[c]


#: ``forward(walk, i, children) -> value`` of node ``i`` from its children's values (``walk.vals``); may
#: write into a child's buffer when ``walk.clobberable`` allows.
Forward = Callable[[_Walk, int, tuple[int, ...]], object]
#: ``reverse(walk, i, children, adjoint)``: given ``∂f/∂value_i``, adds the children's adjoints to
#: ``walk.adjs`` (only children with slots below them) and the slot gradients (∂f/∂log θ) to ``walk.grad``.
Reverse = Callable[[_Walk, int, tuple[int, ...], Any], None]


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


def _cos_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    w.adjs[ch[0]] = a * -np.sin(w.vals[ch[0]])  # type: ignore[call-overload]


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


class _WindowParts(NamedTuple):
    """A change window on one side of a pair: its weight and the factors its derivatives read, each (n, 1).

    With the edges ``a = θc − θw/2`` and ``b = θc + θw/2`` along the first input ``x₁``.
    """

    #: ω = p·q, the weight of the inside of the window.
    weight: Array
    #: p = σ(u_a), the rise at the left edge.
    p: Array
    #: q = σ(u_b) = 1 − σ((x₁ − b)/θs), the fall at the right edge.
    q: Array
    #: u_a = (x₁ − a)/θs, the scaled distance past the left edge.
    ua: Array
    #: u_b = (b − x₁)/θs, the scaled distance before the right edge.
    ub: Array


class _WindowDerivs(NamedTuple):
    """∂ω/∂log θ of a window's weight (:class:`_WindowParts`) for each of its slots, each (n, 1)."""

    centre: Array
    width: Array
    steep: Array


def _window_parts(X: Array, centre: float, width: float, steep: float) -> _WindowParts:
    """The window on inputs ``X`` (n, d): its weight, factors and scaled distances to the edges."""
    x = X[:, :1]
    ua = (x - (centre - 0.5 * width)) / steep
    ub = ((centre + 0.5 * width) - x) / steep
    p, q = expit(ua), expit(ub)
    return _WindowParts(p * q, p, q, ua, ub)


def _windows(pair: _Pair, centre: float, width: float, steep: float) -> tuple[_WindowParts, _WindowParts]:
    """The window on both sides of the pair (the same object twice when X2 is X1)."""
    one = _window_parts(pair.X1, centre, width, steep)
    return one, (one if pair.X2 is pair.X1 else _window_parts(pair.X2, centre, width, steep))


def _changewindow_fwd(w: _Walk, i: int, ch: tuple[int, ...]) -> object:
    one, two = _windows(w.pair, *(float(w.vals[c]) for c in ch[3:6]))  # type: ignore[arg-type]
    return _gate_fwd(w, ch, one.weight[:, 0], two.weight[:, 0])


def _window_derivs(parts: _WindowParts, centre: float, width: float, steep: float) -> _WindowDerivs:
    """∂ω/∂log θc, ∂ω/∂log θw, ∂ω/∂log θs.

    With ω = pq, ∂p/∂a = −p(1 − p)/θs, ∂q/∂b = q(1 − q)/θs, a = θc − θw/2, b = θc + θw/2:
    ∂ω/∂θc = ω(p − q)/θs, ∂ω/∂θw = ω(2 − p − q)/(2θs), ∂ω/∂θs = −ω((1 − p)u_a + (1 − q)u_b)/θs.
    """
    om, p, q, ua, ub = parts
    return _WindowDerivs(om * (p - q) * (centre / steep), om * (2.0 - p - q) * (0.5 * width / steep),
                         -om * ((1.0 - p) * ua + (1.0 - q) * ub))


def _changewindow_rev(w: _Walk, i: int, ch: tuple[int, ...], a: Any) -> None:
    centre, width, steep = (float(w.vals[c]) for c in ch[3:6])  # type: ignore[arg-type]
    one, two = _windows(w.pair, centre, width, steep)
    d1 = _window_derivs(one, centre, width, steep)
    d2 = d1 if two is one else _window_derivs(two, centre, width, steep)
    _gate_rev(w, i, ch, a, one.weight[:, 0], two.weight[:, 0], tuple(zip(ch[3:6], d1, d2, strict=True)))


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


# --- helpers of the reverse rules ----------------------------------------------------------------------


def _sum2(a: Array) -> Array:
    """Sum over the last two (matrix) axes, keeping batch axes."""
    return a.sum(axis=(-2, -1))


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
