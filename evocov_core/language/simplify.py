"""A readable equivalent of a kernel for display, by computer algebra (SymPy).

Evolved trees are correct but written as evolution left them:
``1/(1/(1/(exp(|x-x'|²/θ0²)·2)^θ0))^2 · sqrt(exp(…))``. :func:`simplified` rewrites the tree
as a SymPy expression and lets SymPy fold constants, merge nested reciprocals and powers and
write ``sqrt(exp(a))`` as ``exp(a/2)``; :func:`display_latex` renders it. Display only: the
stored tree, its canonical form and kernel files stay as they are.

Symbols
-------
``x``, ``x'``   the two inputs (first input dimension; the grammar's distances sum over
                dimensions, written here for one);
``θk``          the slot ``hpk`` (positive);
``σ``           the logistic switch of a change point, ``σ(u) = 1/(1 + e^{−u})``;
``W``, ``IW``   the local level's Wiener process and the local trend's integrated one,
                ``W(x, x') = min(t, t')`` with ``t`` the time since the first training input;
``D``           the damped trend, ``D(x, x', θτ)`` (:mod:`evocov_core.language.grammar`).

``sq_dist(euc(x), θl)`` is ``(x − x')²/θl²``; of spectral features, ``(2 − 2 cos(θp (x − x')))/θl²``
(``= 4 sin²(θp (x − x')/2)/θl²``); ``dot_prod`` of spectral features expands the feature map
``[sin(θp x), cos(θp x)]``.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

import sympy as sp

from evocov_core.language.grammar import CONSTANTS, is_slot, symbol
from evocov_core.language.kernel import Kernel
from evocov_core.language.notation import Node, slot_index

__all__ = ["XP", "X", "display_latex", "simplified", "slot_symbol", "to_sympy"]

X, XP = sp.symbols("x x'", real=True)
#: The logistic switch of a change point (kept as a function so the formula reads CP-like).
SIGMA = sp.Function("σ")
#: The state-space forms, kept as functions: their piecewise closed forms would not read better.
WIENER, IWIENER, DAMPED = sp.Function("W"), sp.Function("IW"), sp.Function("D")
#: Above this many operations, or with trigonometric terms, SymPy's full ``simplify`` (seconds
#: on such trees) is skipped; the cheaper steps before it already do what display needs.
SIMPLIFY_OPS = 40


def slot_symbol(tok: str) -> sp.Symbol:
    """The positive symbol ``θk`` of slot ``hpk``."""
    return sp.Symbol(f"θ{slot_index(tok)}", positive=True)


#: What each operator's SymPy rule (its ``sympy`` record in :mod:`evocov_core.language.grammar`) is given.
_CTX = SimpleNamespace(sp=sp, x=X, xp=XP, slot=slot_symbol, sigma=SIGMA, wiener=WIENER, iwiener=IWIENER,
                       damped=DAMPED)


def to_sympy(kernel: Kernel) -> sp.Expr:
    """The kernel as a SymPy expression in ``x``, ``x'`` and the slot symbols (no simplification)."""
    def rec(node: Node) -> sp.Expr:
        tok, ch = node
        if not ch:
            if is_slot(tok):
                return slot_symbol(tok)
            return sp.nsimplify(CONSTANTS[tok])
        rule = symbol(tok).sympy
        if rule is None:
            raise ValueError(f"no algebraic form for {tok!r}")  # pragma: no cover - typed trees only
        return rule(ch, rec, _CTX)

    return rec(kernel._nested)


@lru_cache(maxsize=512)
def _simplified(tokens: tuple[str, ...]) -> sp.Expr:
    e = to_sympy(Kernel(tokens))
    # Cheap, always-safe steps first: nested powers and roots of positive quantities merged,
    # exponentials combined (sqrt(exp(a)) -> exp(a/2)), numbers folded.
    e = sp.powsimp(sp.powdenest(e), combine="exp")
    if sp.count_ops(e) <= SIMPLIFY_OPS and not e.has(sp.sin, sp.cos):
        e = sp.simplify(e, ratio=1.0)  # ratio=1: never a longer expression than it was given
    return e


def simplified(kernel: Kernel) -> sp.Expr:
    """A simplified expression equal to ``kernel`` (cached by tree)."""
    return _simplified(kernel.tokens)


def display_latex(kernel: Kernel) -> str:
    """LaTeX of the simplified kernel: slots as ``\\theta_k`` (as :attr:`Kernel.latex`), ``x'`` as a prime."""
    e = simplified(kernel)
    names = {s: rf"\theta_{{{s.name[1:]}}}" for s in e.free_symbols if s.name.startswith("θ")}
    return sp.latex(e, symbol_names={XP: "x'", **names})
