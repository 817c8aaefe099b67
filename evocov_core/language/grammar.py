"""The typed grammar of the paper's Table 2 and its random tree generator (Algorithm 2).

A kernel expression is a strongly-typed tree. Four types flow along its edges:

==========  =====================================================================
type        meaning
==========  =====================================================================
InputPair   the pair of raw inputs ``(x, x')``, ``x`` in R^d (the argument ``x``)
TPair       a transformed pair ``(x̂, x̂')`` (identity ``euc`` or ``spectral`` map)
Hyper       one positive hyperparameter θ (the slots ``hp0 … hp{t-1}``)
Cov         a covariance value ``z`` (an n×m matrix, or a scalar broadcast to one)
==========  =====================================================================

Symbols (the paper's Table 2)::

    not nestable  euc(x)              -> x̂ = x
                  spectral(x, θp)     -> x̂ = [sin(θp·x), cos(θp·x)]
                  sq_dist(x̂, θl)      -> ||x̂ − x̂'||² / θl²
                  dot_prod(x̂, θs, θl) -> (x̂ − θs)·(x̂' − θs) / θl
                  hp(θ)               -> θ
    nestable      power(w, θ) = w^θ, add(w, v), multiply(w, v), div(w) = 1/w,
                  exp(w), sqrt(w), square(w) = w²
    terminals     the Cov constants −1, −0.5, 0.5, 1, 2, 3, 5

Beyond Table 2, each operation names the *family* that adds it to a grammar (a grammar draws from the
families its settings name, ``families``; the paper's settings name none; :data:`FAMILIES` lists them,
from the table). Families ``changepoint`` and ``changewindow``::

    nestable      changepoint(x, w, v, θc, θs)
                      -> (1 − σ(x))(1 − σ(x'))·w + σ(x)σ(x')·v,   σ(x) = 1/(1 + e^(−(x₁ − θc)/θs))
                  changewindow(x, w, v, θc, θw, θs)
                      -> (1 − ω(x))(1 − ω(x'))·w + ω(x)ω(x')·v,
                         ω(x) = σ((x₁ − a)/θs)·(1 − σ((x₁ − b)/θs)),  a = θc − θw/2,  b = θc + θw/2

Family ``statespace``: the Gaussian-process forms of the state-space models that exponential
smoothing chooses among, along time ``t = max(x₁ − 1, 0)`` (model units put the first training
input at ``x₁ = 1``, so ``t`` counts from the start of the training range and is 0 before it)::

    not nestable  wiener(x)           -> min(t, t')                                  (local level)
                  iwiener(x)          -> m²M/2 − m³/6,  m = min(t, t'), M = max(t, t')  (local trend)
                  damped(x, θτ)       -> θτ² [φ(t/θτ) + φ(t'/θτ) − φ(|t − t'|/θτ)],  φ(u) = e^(−u) − 1 + u
                                                                                    (damped trend)

``wiener`` is the covariance of a Wiener process (a random walk in continuous time) started at
the first training input: added to a constant (the initial level's variance) and the model's
noise it is the local-level model, whose forecast stays at the filtered last level as simple
exponential smoothing's does. ``iwiener`` is the integrated Wiener process: a slope that wanders
as a random walk, Holt's local linear trend. ``damped`` is the integral of a stationary
Ornstein-Uhlenbeck slope of unit variance and time constant θτ: the slope reverts to zero within
about θτ, so the forecast's trend flattens as damped Holt's does (``θτ → ∞`` gives the linear
``t·t'``, ``θτ → 0`` a vanishing Wiener process). Each is the covariance of a Gaussian process, so
each is positive semi-definite on any inputs; sums, products and the other operators of the
grammar then keep or test it as for every kernel.

Family ``trig``: ``cos(w)``, nestable. The cosine of a covariance is not positive semi-definite in
general; the PSD check keeps the trees that are.

ABCD's change-point operator (Lloyd et al. 2014): ``w`` before the location ``θc``, ``v``
after it, switching over a width of about ``θs`` along the first input (time). ABCD's
change window: ``v`` inside the window ``[a, b]`` of centre ``θc`` and width ``θw``, ``w``
outside it, both edges as steep as ``θs``. The window is parametrised by its centre and
width rather than its two edges because slots are positive and independent: any
``θc, θw > 0`` is a window with ``a < b``, which two free edge locations would not
guarantee. Both are PSD whenever ``w`` and ``v`` are (each weight is a rank-one PSD matrix
and Schur products and sums keep PSD). Every symbol is always *parsed* (kernel files with
change points or windows load in any grammar); the families decide whether random trees and
mutations *draw* them.

A tree is stored as an immutable tuple of token names in prefix (Polish) order, the
same flat layout as DEAP's ``PrimitiveTree``; :func:`to_primitive_tree` converts it.
DEAP's own ``gp.compile``/``from_string`` are never used: they ``eval`` text.

One definition: this module's table, not DEAP's primitive set
-------------------------------------------------------------
The grammar is defined once, by the frozen :class:`Symbol` records below: one record per
operation in one table (:data:`OPERATORS`), its types, kind, family, the evaluator's forward and
reverse rules, its printers, its value on numbers and its slots' roles together; then the terminals
(:data:`CONSTANTS`, the argument ``x`` and the slots ``hp<k>``). The generator (:func:`typed_grow`),
the tree checker and parser (:func:`check_tree`, :mod:`evocov_core.runs.kernel_file`), the variation
operators (:mod:`evocov_core.searches.variation`, through :func:`symbol`, :func:`subtree_end` and the
kind lists of :class:`Grammar`), the settings (the names of the families) and the evaluator
(:mod:`evocov_core.language.program`, :mod:`~evocov_core.language.evaluate` and
:mod:`~evocov_core.language.compiled`, through :func:`arity`, :func:`is_slot`, :func:`symbol` and
:data:`CONSTANTS`) read it, and the readable forms read how to write each operator from it: infix
and LaTeX (:mod:`evocov_core.language.kernel`), SymPy (:mod:`evocov_core.language.simplify`), the
display's constant folding, and the role each hyperparameter argument plays
(:func:`evocov_core.language.kernel.slot_roles`). The bodies a record points to live beside it: the
rules in :mod:`evocov_core.language.operators` (which imports no other module of the language when it
runs, so that this one can import it), the longer writing rules in
:mod:`evocov_core.language.notation`. Adding an operation is one record (as gplearn's ``_Function``
records), its rules, and its tests. DEAP's :class:`~deap.gp.PrimitiveSetTyped` is *built from* the
table (:func:`get_grammar`), not the other way round, because a primitive set cannot say what these
readers need:

* **kinds**: Algorithm 2 draws from terminals, not-nestable and nestable operators by
  depth; a primitive set knows only primitives and terminals;
* **slots independent of a pool**: a kernel file may use any ``hp<k>``; a primitive set
  holds a fixed list of arguments, one set per pool size;
* **immutability**: a primitive set is mutable (``addPrimitive``, ``renameArguments``)
  and shared through a cache; the table is frozen records;
* **speed**: every tree walk looks up arities in a plain dict of ints;
* **no traps**: no ``creator`` globals (they break on Streamlit reruns and in worker
  processes), no ``eval``, and generation never raises where DEAP's typed generators
  do (``TPair`` has no terminal).

What DEAP still provides: :attr:`Grammar.pset`, the same grammar as a strongly-typed GP
primitive set (names, argument and return types, constants, ``x`` and the slots as
arguments) for use with DEAP's tools, and :func:`to_primitive_tree` to hand it our trees.
The tests check that this set agrees with the table symbol for symbol (names, arities,
argument and return types, constant values) and that DEAP's ``PrimitiveTree`` walks our
trees as we do, so the table stays a valid strongly-typed GP grammar.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from deap import gp

from evocov_core.language import operators as ops
from evocov_core.language.notation import (
    Node,
    Printer,
    SympyRule,
    _changepoint_latex,
    _changepoint_sympy,
    _changewindow_latex,
    _changewindow_sympy,
    _damped_latex,
    _dot_prod_infix,
    _dot_prod_latex,
    _dot_prod_sympy,
    _sq_dist_infix,
    _sq_dist_latex,
    _sq_dist_sympy,
    _time_latex,
    _twrap,
    _wrap,
    slot_index,
    tex_slot,
)
from evocov_core.language.operators import Forward, Reverse

__all__ = [
    "CONSTANTS",
    "DEFAULT_N_HYPER",
    "FAMILIES",
    "NON_STATIONARY",
    "OPERATORS",
    "Cov",
    "Grammar",
    "Hyper",
    "InputPair",
    "Node",
    "Symbol",
    "TPair",
    "TreeError",
    "check_tree",
    "get_grammar",
    "has_statespace",
    "subtree_end",
    "symbol",
    "to_primitive_tree",
    "tree_depth",
    "typed_grow",
]


class InputPair:
    """Type of the raw input pair ``(x, x')``."""


class TPair:
    """Type of a transformed input pair ``(x̂, x̂')``."""


class Hyper:
    """Type of a positive hyperparameter θ."""


class Cov:
    """Type of a covariance value."""


TYPES: dict[str, type] = {"InputPair": InputPair, "TPair": TPair, "Hyper": Hyper, "Cov": Cov}

#: Default size of the pool of hyperparameter slots (``hp0`` … ``hp19``).
DEFAULT_N_HYPER = 20

#: The constant terminals of Table 2, by token name.
CONSTANTS: dict[str, float] = {
    "-1": -1.0,
    "-0.5": -0.5,
    "0.5": 0.5,
    "1": 1.0,
    "2": 2.0,
    "3": 3.0,
    "5": 5.0,
}

_SLOT_RE = re.compile(r"hp(0|[1-9][0-9]{0,3})")


class TreeError(ValueError):
    """A token sequence is not a well-typed kernel tree; the message names the problem."""


@dataclass(frozen=True)
class Symbol:
    """One grammar symbol.

    Attributes
    ----------
    name : str
        Token name as it appears in a tree (``"sq_dist"``, ``"hp3"``, ``"-0.5"``).
    args : tuple of type
        Argument types; empty for terminals.
    ret : type
        Output type.
    kind : str
        ``"argument"`` (x), ``"slot"`` (hyperparameter), ``"constant"``,
        ``"not_nestable"`` or ``"nestable"``.
    value : float or None
        Numeric value of a constant.
    family : str or None
        The optional family that adds the operation to a grammar (``"changepoint"``,
        ``"statespace"``...; module docstring); None for the symbols of every grammar.
    commutative : bool
        Operands may be swapped (``add``, ``multiply``): the canonical form sorts them.
    stationary : bool
        False when the operator's value depends on ``x`` itself, not only on ``x − x'``.
    forward, reverse : callable or None
        The evaluator's rules (a :data:`~evocov_core.language.operators.Forward` and a
        :data:`~evocov_core.language.operators.Reverse`): the node's value from its children's, and
        its adjoint passed to its children and slots. None for terminals, which the walk reads itself.
    reads_output : bool
        The reverse rule reads the node's own value, so a parent must not overwrite it in place
        while a tape is kept (exp: z, sqrt: 1/(2z), div: −z², power: z log w, sq_dist: −2z,
        dot_prod: −z).
    fold : callable or None
        Value of the operator on numbers, for the display's constant folding (``(2 + 1)*k``
        reads ``3*k``); None when it is not a function of numbers.
    infix, latex : callable or None
        How the operator is written (a :data:`Printer`); None for the input maps ``euc``
        and ``spectral``, which their parent writes.
    sympy : callable or None
        Its SymPy expression (a :data:`SympyRule`).
    roles : callable or None
        ``children -> role per argument`` (None where an argument is not a slot): what each
        hyperparameter argument does (``lengthscale``, ``frequency``...), for starting values,
        bounds and the hyperparameter table.

    The callables take no part in equality or ``repr``: a symbol is identified by its name,
    types, kind and family.
    """

    name: str
    args: tuple[type, ...]
    ret: type
    kind: str
    value: float | None = None
    family: str | None = None
    commutative: bool = False
    stationary: bool = True
    forward: Forward | None = field(default=None, compare=False, repr=False)
    reverse: Reverse | None = field(default=None, compare=False, repr=False)
    reads_output: bool = field(default=False, compare=False, repr=False)
    fold: Callable[..., float] | None = field(default=None, compare=False, repr=False)
    infix: Printer | None = field(default=None, compare=False, repr=False)
    latex: Printer | None = field(default=None, compare=False, repr=False)
    sympy: SympyRule | None = field(default=None, compare=False, repr=False)
    roles: Callable[[tuple[Node, ...]], tuple[str | None, ...]] | None = field(
        default=None, compare=False, repr=False)

    @property
    def arity(self) -> int:
        return len(self.args)


def _roles(*names: str | None) -> Callable[[tuple[Node, ...]], tuple[str | None, ...]]:
    """A role rule that does not depend on the children."""
    return lambda _ch: names


#: Every operation, one record each: types, kind, family, the evaluator's rules and every form it is
#: written in. The order is the order random trees draw in: never reorder (seeded runs would change); a
#: grammar without a family lists the others in the same order, so its draws stay what they were.
OPERATORS: tuple[Symbol, ...] = (
    # The paper's Table 2.
    Symbol("euc", (InputPair,), TPair, "not_nestable", forward=ops._euc_fwd, reverse=ops._no_rev),
    Symbol("spectral", (InputPair, Hyper), TPair, "not_nestable", forward=ops._spectral_fwd, reverse=ops._no_rev,
           roles=_roles(None, "frequency")),
    Symbol("sq_dist", (TPair, Hyper), Cov, "not_nestable",
           forward=ops._sq_dist_fwd, reverse=ops._sq_dist_rev, reads_output=True,
           infix=_sq_dist_infix, latex=_sq_dist_latex, sympy=_sq_dist_sympy,
           roles=lambda ch: (None, "periodic_lengthscale" if ch[0][0] == "spectral" else "lengthscale")),
    Symbol("dot_prod", (TPair, Hyper, Hyper), Cov, "not_nestable", stationary=False,
           forward=ops._dot_prod_fwd, reverse=ops._dot_prod_rev, reads_output=True,
           infix=_dot_prod_infix, latex=_dot_prod_latex, sympy=_dot_prod_sympy,
           roles=_roles(None, "shift", "scale")),
    Symbol("hp", (Hyper,), Cov, "not_nestable", forward=ops._identity_fwd, reverse=ops._identity_rev,
           infix=lambda ch, r: (ch[0][0], 4),
           latex=lambda ch, r: (tex_slot(ch[0][0]), 4),
           sympy=lambda ch, rec, c: c.slot(ch[0][0]),
           roles=_roles("value")),
    Symbol("power", (Cov, Hyper), Cov, "nestable", forward=ops._power_fwd, reverse=ops._power_rev, reads_output=True,
           infix=lambda ch, r: (f"{_wrap(r(ch[0]), 4)}^{ch[1][0]}", 3),
           latex=lambda ch, r: (f"{_twrap(r(ch[0]), 4)}^{{{tex_slot(ch[1][0])}}}", 3),
           sympy=lambda ch, rec, c: rec(ch[0]) ** c.slot(ch[1][0]),
           roles=_roles(None, "exponent")),
    Symbol("add", (Cov, Cov), Cov, "nestable", commutative=True,
           forward=ops._binary(np.add, reads_operands=False), reverse=ops._add_rev,
           fold=lambda a, b: a + b,
           infix=lambda ch, r: (f"{_wrap(r(ch[0]), 1)} + {_wrap(r(ch[1]), 1)}", 1),
           latex=lambda ch, r: (f"{_twrap(r(ch[0]), 1)} + {_twrap(r(ch[1]), 1)}", 1),
           sympy=lambda ch, rec, c: rec(ch[0]) + rec(ch[1])),
    Symbol("multiply", (Cov, Cov), Cov, "nestable", commutative=True,
           forward=ops._binary(np.multiply, reads_operands=True), reverse=ops._multiply_rev,
           fold=lambda a, b: a * b,
           infix=lambda ch, r: (f"{_wrap(r(ch[0]), 2)}*{_wrap(r(ch[1]), 2)}", 2),
           latex=lambda ch, r: (rf"{_twrap(r(ch[0]), 2)} \cdot {_twrap(r(ch[1]), 2)}", 2),
           sympy=lambda ch, rec, c: rec(ch[0]) * rec(ch[1])),
    Symbol("div", (Cov,), Cov, "nestable", forward=ops._div_fwd, reverse=ops._div_rev, reads_output=True,
           fold=lambda a: 1.0 / a if a != 0 else math.nan,
           infix=lambda ch, r: (f"1/{_wrap(r(ch[0]), 3)}", 2),
           latex=lambda ch, r: (rf"\frac{{1}}{{{r(ch[0])[0]}}}", 4),
           sympy=lambda ch, rec, c: 1 / rec(ch[0])),
    Symbol("exp", (Cov,), Cov, "nestable", forward=ops._unary(np.exp), reverse=ops._exp_rev, reads_output=True,
           fold=lambda a: math.exp(a) if a < 700 else math.inf,
           infix=lambda ch, r: (f"exp({r(ch[0])[0]})", 4),
           latex=lambda ch, r: (rf"\exp\left({r(ch[0])[0]}\right)", 4),
           sympy=lambda ch, rec, c: c.sp.exp(rec(ch[0]))),
    Symbol("sqrt", (Cov,), Cov, "nestable", forward=ops._unary(np.sqrt), reverse=ops._sqrt_rev, reads_output=True,
           fold=lambda a: math.sqrt(a) if a >= 0 else math.nan,
           infix=lambda ch, r: (f"sqrt({r(ch[0])[0]})", 4),
           latex=lambda ch, r: (rf"\sqrt{{{r(ch[0])[0]}}}", 4),
           sympy=lambda ch, rec, c: c.sp.sqrt(rec(ch[0]))),
    # The reverse rule reads the input (2w), not the output.
    Symbol("square", (Cov,), Cov, "nestable", forward=ops._unary(np.square, reads_input=True), reverse=ops._square_rev,
           fold=lambda a: a * a,
           infix=lambda ch, r: (f"{_wrap(r(ch[0]), 4)}^2", 3),
           latex=lambda ch, r: (f"{_twrap(r(ch[0]), 4)}^{{2}}", 3),
           sympy=lambda ch, rec, c: rec(ch[0]) ** 2),
    # ABCD's change point and window; their reverse rules read the operands, not z.
    Symbol("changepoint", (InputPair, Cov, Cov, Hyper, Hyper), Cov, "nestable", family="changepoint",
           stationary=False, forward=ops._changepoint_fwd, reverse=ops._changepoint_rev,
           infix=lambda ch, r: (f"CP[{ch[3][0]}, {ch[4][0]}]({r(ch[1])[0]}, {r(ch[2])[0]})", 4),
           latex=_changepoint_latex, sympy=_changepoint_sympy,
           roles=_roles(None, None, None, "location", "steepness")),
    Symbol("changewindow", (InputPair, Cov, Cov, Hyper, Hyper, Hyper), Cov, "nestable", family="changewindow",
           stationary=False, forward=ops._changewindow_fwd, reverse=ops._changewindow_rev,
           infix=lambda ch, r: (f"CW[{ch[3][0]}, {ch[4][0]}, {ch[5][0]}]({r(ch[1])[0]}, {r(ch[2])[0]})", 4),
           latex=_changewindow_latex, sympy=_changewindow_sympy,
           roles=_roles(None, None, None, "window_centre", "window_width", "steepness")),
    # The state-space forms (local level, local trend, damped trend), written W(x, x'), IW(x, x') and
    # D[θτ](x, x'). The first two have no slot, so nothing to differentiate; damped's reverse rule
    # recomputes from the inputs.
    Symbol("wiener", (InputPair,), Cov, "not_nestable", family="statespace", stationary=False,
           forward=ops._wiener_fwd, reverse=ops._no_rev,
           infix=lambda ch, r: ("W(x,x')", 4), latex=_time_latex("W"),
           sympy=lambda ch, rec, c: c.wiener(c.x, c.xp)),
    Symbol("iwiener", (InputPair,), Cov, "not_nestable", family="statespace", stationary=False,
           forward=ops._iwiener_fwd, reverse=ops._no_rev,
           infix=lambda ch, r: ("IW(x,x')", 4), latex=_time_latex("IW"),
           sympy=lambda ch, rec, c: c.iwiener(c.x, c.xp)),
    Symbol("damped", (InputPair, Hyper), Cov, "not_nestable", family="statespace", stationary=False,
           forward=ops._damped_fwd, reverse=ops._damped_rev,
           infix=lambda ch, r: (f"D[{ch[1][0]}](x,x')", 4), latex=_damped_latex,
           sympy=lambda ch, rec, c: c.damped(c.x, c.xp, c.slot(ch[1][0])),
           roles=_roles(None, "damping")),
    # The reverse rule reads the input (−sin w), not the output.
    Symbol("cos", (Cov,), Cov, "nestable", family="trig",
           forward=ops._unary(np.cos, reads_input=True), reverse=ops._cos_rev,
           fold=math.cos,
           infix=lambda ch, r: (f"cos({r(ch[0])[0]})", 4),
           latex=lambda ch, r: (rf"\cos\left({r(ch[0])[0]}\right)", 4),
           sympy=lambda ch, rec, c: c.sp.cos(rec(ch[0]))),
)
#: The optional families, in the order of the table: the names a grammar's ``families`` may hold.
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(s.family for s in OPERATORS if s.family is not None))
_STATESPACE = frozenset(s.name for s in OPERATORS if s.family == "statespace")
# Every symbol but the slots, by token: the operations in the table's order, then the terminals.
_FIXED: dict[str, Symbol] = {s.name: s for s in OPERATORS}
_FIXED["x"] = Symbol("x", (), InputPair, "argument")
for _name, _value in CONSTANTS.items():
    _FIXED[_name] = Symbol(_name, (), Cov, "constant", _value)
#: Operators whose value depends on x itself, not only on x − x' (``stationary=False`` records).
NON_STATIONARY = frozenset(s.name for s in OPERATORS if not s.stationary)

# Arity by token, the hot lookup of every tree walk.
_ARITY: dict[str, int] = {name: s.arity for name, s in _FIXED.items()}


@lru_cache(maxsize=4096)
def _slot_symbol(name: str) -> Symbol:
    return Symbol(name, (), Hyper, "slot")


def symbol(name: str) -> Symbol:
    """Return the :class:`Symbol` for a token, or raise :class:`TreeError`.

    Slot tokens ``hp<k>`` are recognised for any ``k`` below 10000; whether ``k``
    fits a given slot pool is checked by :func:`check_tree`.
    """
    s = _FIXED.get(name)
    if s is not None:
        return s
    if isinstance(name, str) and _SLOT_RE.fullmatch(name):
        return _slot_symbol(name)
    shown = name if len(str(name)) <= 40 else str(name)[:40] + "…"
    raise TreeError(f"unknown symbol {shown!r}")


def arity(name: str) -> int:
    """Number of arguments of a token (0 for terminals and slots)."""
    a = _ARITY.get(name)
    return 0 if a is None else a


def is_slot(name: str) -> bool:
    return name not in _FIXED and bool(_SLOT_RE.fullmatch(name))


def has_statespace(tokens: tuple[str, ...] | list[str]) -> bool:
    """Whether a tree holds a state-space operation (a local level, trend or damped trend)."""
    return any(t in _STATESPACE for t in tokens)


def subtree_end(tokens: tuple[str, ...] | list[str], start: int) -> int:
    """Index one past the end of the subtree rooted at ``tokens[start]``.

    Same walk as ``deap.gp.PrimitiveTree.searchSubtree`` on a prefix list.
    """
    need = 1
    i = start
    n = len(tokens)
    while need and i < n:
        need += _ARITY.get(tokens[i], 0) - 1
        i += 1
    if need:
        raise TreeError("truncated expression: an operator is missing arguments")
    return i


def tree_depth(tokens: tuple[str, ...] | list[str]) -> int:
    """Depth of a prefix tree in DEAP's convention: a lone terminal has depth 0."""
    stack = [0]
    depth = 0
    for tok in tokens:
        d = stack.pop()
        depth = max(depth, d)
        stack.extend([d + 1] * _ARITY.get(tok, 0))
    return depth


@dataclass(frozen=True)
class Grammar:
    """The primitive set for a pool of ``n_hyper`` hyperparameter slots and the optional ``families``.

    Build it with :func:`get_grammar` (cached). ``pset`` is the DEAP
    ``PrimitiveSetTyped`` built from the symbol table, for interoperation with DEAP
    tools; nothing in EvoCov reads types or arities from it (module docstring).
    """

    n_hyper: int
    pset: gp.PrimitiveSetTyped
    families: frozenset[str] = frozenset()

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(f"hp{k}" for k in range(self.n_hyper))

    def terminals(self, typ: type) -> tuple[str, ...]:
        """Terminals and arguments returning ``typ`` (Algorithm 2's ``GetTerminalsAndArgs``)."""
        return self._by_kind(typ)[0]

    def not_nestable(self, typ: type) -> tuple[str, ...]:
        return self._by_kind(typ)[1]

    def nestable(self, typ: type) -> tuple[str, ...]:
        return self._by_kind(typ)[2]

    def _by_kind(self, typ: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        return _kinds(self.n_hyper, typ, self.families)

    def symbols(self) -> tuple[Symbol, ...]:
        """Every symbol of the grammar, slots included."""
        return _table(self.families) + tuple(_slot_symbol(s) for s in self.slots)


def _families(names: Iterable[str]) -> frozenset[str]:
    """The families ``names``, checked against the table's (:data:`FAMILIES`).

    Raises
    ------
    ValueError
        A name that is no family of the table, or one string where a collection of names is expected.
    """
    if isinstance(names, str):
        raise ValueError(f"families must be a collection of family names, not the string {names!r}")
    out = frozenset(names)
    unknown = sorted(str(n) for n in out if n not in FAMILIES)
    if unknown:
        raise ValueError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(map(repr, unknown))}: "
                         f"the families are {', '.join(FAMILIES)}")
    return out


def _table(families: frozenset[str]) -> tuple[Symbol, ...]:
    """The grammar's symbols other than the slots, in the table's order: the one definition everything reads."""
    return tuple(s for s in _FIXED.values() if s.family is None or s.family in families)


@lru_cache(maxsize=64)
def _kinds(n_hyper: int, typ: type, families: frozenset[str]
           ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    terms: list[str] = []
    notnests: list[str] = []
    nests: list[str] = []
    for s in _table(families):
        if s.ret is not typ:
            continue
        if s.kind in ("argument", "constant"):
            terms.append(s.name)
        elif s.kind == "not_nestable":
            notnests.append(s.name)
        else:
            nests.append(s.name)
    if typ is Hyper:
        terms.extend(f"hp{k}" for k in range(n_hyper))
    return tuple(terms), tuple(notnests), tuple(nests)


def _placeholder(*_args: object) -> None:  # pragma: no cover - never called
    raise RuntimeError("kernel trees are evaluated by evocov_core.language.evaluate, not compiled")


def get_grammar(n_hyper: int = DEFAULT_N_HYPER, families: Iterable[str] = ()) -> Grammar:
    """Return the grammar with ``n_hyper`` slots (1 ≤ n_hyper ≤ 10000) drawing from ``families``.

    No family is the paper's Table 2; each name of ``families`` (:data:`FAMILIES`) adds its
    operations (``changepoint`` the change-point operator, ``changewindow`` the change-window
    operator, ``statespace`` the local level, local trend and damped trend...).

    Raises
    ------
    ValueError
        A pool size out of range, or an unknown family.

    Examples
    --------
    >>> g = get_grammar(20)
    >>> g.not_nestable(Cov)
    ('sq_dist', 'dot_prod', 'hp')
    >>> "changepoint" in get_grammar(20, families=("changepoint",)).nestable(Cov)
    True
    """
    if not (1 <= int(n_hyper) <= 10000):
        raise ValueError(f"n_hyper must be between 1 and 10000, got {n_hyper}")
    return _grammar(int(n_hyper), _families(families))


@lru_cache(maxsize=16)
def _grammar(n_hyper: int, families: frozenset[str]) -> Grammar:
    # DEAP's view of the table: x and the slots are the set's arguments, constants its terminals.
    pset = gp.PrimitiveSetTyped("kernel", [_FIXED["x"].ret] + [_slot_symbol("hp0").ret] * n_hyper, Cov,
                                prefix="ARG")
    pset.renameArguments(ARG0="x", **{f"ARG{k + 1}": f"hp{k}" for k in range(n_hyper)})
    for s in _table(families):
        if s.arity:
            pset.addPrimitive(_placeholder, list(s.args), s.ret, name=s.name)
        elif s.kind == "constant":
            pset.addTerminal(s.value, s.ret, name=s.name)
    return Grammar(n_hyper=n_hyper, pset=pset, families=families)


def to_primitive_tree(tokens: tuple[str, ...], grammar: Grammar) -> gp.PrimitiveTree:
    """Convert a token tuple to a DEAP ``PrimitiveTree`` over ``grammar.pset``."""
    mapping = grammar.pset.mapping
    try:
        return gp.PrimitiveTree([mapping[t] for t in tokens])
    except KeyError as exc:
        raise TreeError(f"symbol {exc.args[0]!r} is not in this grammar") from None


def check_tree(
    tokens: tuple[str, ...] | list[str],
    *,
    n_hyper: int | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    root: type = Cov,
) -> None:
    """Raise :class:`TreeError` unless ``tokens`` is a well-typed prefix tree.

    Checks, in order: size bound, every token is a grammar symbol (slot indices
    below ``n_hyper`` when given), each argument has the type its parent expects,
    no missing or surplus tokens, and depth at most ``max_depth``.
    Iterative, so it is safe on hostile, deeply nested input.
    """
    n = len(tokens)
    if n == 0:
        raise TreeError("empty expression")
    if max_nodes is not None and n > max_nodes:
        raise TreeError(f"expression has {n} nodes, more than the limit of {max_nodes}")
    expected: list[tuple[type, int]] = [(root, 0)]
    deepest = 0
    for pos, tok in enumerate(tokens):
        if not expected:
            raise TreeError(f"surplus tokens after a complete expression, starting at {tok!r}")
        typ, depth = expected.pop()
        s = symbol(tok)
        if s.kind == "slot" and n_hyper is not None and slot_index(tok) >= n_hyper:
            raise TreeError(f"slot {tok!r} is outside the pool of {n_hyper} hyperparameter slots")
        if s.ret is not typ:
            raise TreeError(
                f"{tok!r} at position {pos} returns {s.ret.__name__} where {typ.__name__} is expected"
            )
        deepest = max(deepest, depth)
        if max_depth is not None and deepest > max_depth:
            raise TreeError(f"expression is deeper than the limit of {max_depth}")
        expected.extend((a, depth + 1) for a in reversed(s.args))
    if expected:
        raise TreeError("truncated expression: an operator is missing arguments")


def typed_grow(
    grammar: Grammar,
    rng: np.random.Generator,
    d_min: int,
    d_max: int,
    root: type = Cov,
) -> tuple[str, ...]:
    """Grow a random well-typed tree with the paper's Algorithm 2 (TypedGrow).

    At each node the candidate symbols for the required type are: not-nestable
    operators while ``d_min ≤ 3``, terminals while ``d_min ≤ 1``, nestable operators
    while ``d_max ≥ 4``; if none qualifies, every symbol of that type. Both depth
    counters decrease by one per level. The thresholds 3 and 4 are the depths a
    ``Cov`` subtree needs to close (``sq_dist(spectral(x, θ), θ)`` is three levels).

    Never raises for ``0 ≤ d_min ≤ d_max``; iterative, so no recursion limit.

    Parameters
    ----------
    grammar : Grammar
    rng : numpy.random.Generator
        The only source of randomness.
    d_min, d_max : int
        Minimum and maximum depth of Algorithm 2.
    root : type
        Type of the root (``Cov`` for a kernel).

    Returns
    -------
    tuple of str
        Tokens in prefix order.
    """
    if d_min < 0 or d_max < d_min:
        raise ValueError(f"need 0 <= d_min <= d_max, got d_min={d_min}, d_max={d_max}")
    out: list[str] = []
    pending: list[tuple[type, int, int]] = [(root, d_min, d_max)]
    while pending:
        typ, lo, hi = pending.pop()
        terms, notnests, nests = grammar._by_kind(typ)
        cands: tuple[str, ...] = ()
        if lo <= 3:
            cands += notnests
            if lo <= 1:
                cands += terms
        if hi >= 4:
            cands += nests
        if not cands:
            cands = terms + notnests + nests
        tok = cands[int(rng.integers(len(cands)))]
        out.append(tok)
        args = symbol(tok).args
        # Push in reverse so the first argument is grown next (prefix order).
        pending.extend((a, lo - 1, hi - 1) for a in reversed(args))
    return tuple(out)
