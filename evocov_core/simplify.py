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
``σ``           the logistic switch of a change point, ``σ(u) = 1/(1 + e^{−u})``.

``sq_dist(euc(x), θl)`` is ``(x − x')²/θl²``; of spectral features, ``(2 − 2 cos(θp (x − x')))/θl²``
(``= 4 sin²(θp (x − x')/2)/θl²``); ``dot_prod`` of spectral features expands the feature map
``[sin(θp x), cos(θp x)]``.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .grammar import CONSTANTS, is_slot, slot_index
from .kernel import Kernel, Node

__all__ = ["XP", "X", "display_latex", "simplified", "slot_symbol", "to_sympy"]

X, XP = sp.symbols("x x'", real=True)
#: The logistic switch of a change point (kept as a function so the formula reads CP-like).
SIGMA = sp.Function("σ")
#: Above this many operations, or with trigonometric terms, SymPy's full ``simplify`` (seconds
#: on such trees) is skipped; the cheaper steps before it already do what display needs.
SIMPLIFY_OPS = 40


def slot_symbol(tok: str) -> sp.Symbol:
    """The positive symbol ``θk`` of slot ``hpk``."""
    return sp.Symbol(f"θ{slot_index(tok)}", positive=True)


def _pair(node: Node) -> tuple[sp.Expr, sp.Expr] | None:
    """Feature maps (x̂, x̂') of a TPair node: ``None`` for ``euc`` (the raw inputs)."""
    tok, ch = node
    if tok == "euc":
        return None
    p = slot_symbol(ch[1][0])
    return p, p  # spectral: frequency θp on both sides


def to_sympy(kernel: Kernel) -> sp.Expr:
    """The kernel as a SymPy expression in ``x``, ``x'`` and the slot symbols (no simplification)."""
    def rec(node: Node) -> sp.Expr:
        tok, ch = node
        if not ch:
            if is_slot(tok):
                return slot_symbol(tok)
            return sp.nsimplify(CONSTANTS[tok])
        if tok == "hp":
            return slot_symbol(ch[0][0])
        if tok == "add":
            return rec(ch[0]) + rec(ch[1])
        if tok == "multiply":
            return rec(ch[0]) * rec(ch[1])
        if tok == "div":
            return 1 / rec(ch[0])
        if tok == "exp":
            return sp.exp(rec(ch[0]))
        if tok == "sqrt":
            return sp.sqrt(rec(ch[0]))
        if tok == "square":
            return rec(ch[0]) ** 2
        if tok == "power":
            return rec(ch[0]) ** slot_symbol(ch[1][0])
        if tok == "sq_dist":
            feat, scale = _pair(ch[0]), slot_symbol(ch[1][0])
            if feat is None:
                return (X - XP) ** 2 / scale**2
            return (2 - 2 * sp.cos(feat[0] * (X - XP))) / scale**2
        if tok == "dot_prod":
            feat, s, scale = _pair(ch[0]), slot_symbol(ch[1][0]), slot_symbol(ch[2][0])
            if feat is None:
                return (X - s) * (XP - s) / scale
            p = feat[0]
            return ((sp.sin(p * X) - s) * (sp.sin(p * XP) - s) + (sp.cos(p * X) - s) * (sp.cos(p * XP) - s)) / scale
        if tok == "changepoint":
            c, w = slot_symbol(ch[3][0]), slot_symbol(ch[4][0])
            s1, s2 = SIGMA((X - c) / w), SIGMA((XP - c) / w)
            return (1 - s1) * (1 - s2) * rec(ch[1]) + s1 * s2 * rec(ch[2])
        if tok == "changewindow":
            c, w, st = (slot_symbol(ch[k][0]) for k in (3, 4, 5))
            a, b = c - w / 2, c + w / 2
            o1 = SIGMA((X - a) / st) * (1 - SIGMA((X - b) / st))
            o2 = SIGMA((XP - a) / st) * (1 - SIGMA((XP - b) / st))
            return (1 - o1) * (1 - o2) * rec(ch[1]) + o1 * o2 * rec(ch[2])
        raise ValueError(f"no algebraic form for {tok!r}")  # pragma: no cover - typed trees only

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
