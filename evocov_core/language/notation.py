"""How each operator of the grammar is written: the infix text, LaTeX and SymPy rules that the symbol
records of :mod:`evocov_core.language.grammar` point to, and the types they work on.

A rule reads a node's children in nested form (:data:`Node`) and writes each child with the function
it is given, so that one walk (:mod:`evocov_core.language.kernel`, :mod:`evocov_core.language.simplify`)
writes a whole tree. A ``Hyper`` argument is always a slot leaf, so ``ch[k][0]`` is its token. This
module imports neither the grammar nor SymPy: the grammar's records import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Node", "Printer", "SympyRule", "slot_index", "tex_slot"]

#: A tree in nested form, for the printers: ``(token, children)``.
Node = tuple[str, tuple["Node", ...]]
#: A printer rule: ``(children, print) -> (text, precedence)``, where ``print`` writes a child
#: node the same way. Precedence: 1 sum, 2 product or quotient, 3 power, 4 atom.
Printer = Callable[[tuple[Node, ...], Callable[[Node], tuple[str, int]]], tuple[str, int]]
#: A SymPy rule: ``(children, to_sympy, ctx) -> expression``; ``ctx`` carries ``sp`` (the sympy
#: module), the input symbols ``x``, ``xp``, ``slot(token)`` and the logistic ``sigma`` (see
#: :mod:`evocov_core.language.simplify`), so that this module does not import SymPy.
SympyRule = Callable[[tuple[Node, ...], Callable[[Node], Any], Any], Any]


def slot_index(name: str) -> int:
    """Index ``k`` of a slot token ``hp<k>``."""
    return int(name[2:])


_Rec = Callable[[Node], tuple[str, int]]


def _wrap(s: tuple[str, int], level: int) -> str:
    """Infix text of a child, in parentheses when it binds more loosely than ``level``."""
    return s[0] if s[1] >= level else f"({s[0]})"


def _twrap(s: tuple[str, int], level: int) -> str:
    """LaTeX text of a child, in ``\\left( … \\right)`` when it binds more loosely than ``level``."""
    return s[0] if s[1] >= level else rf"\left({s[0]}\right)"


def tex_slot(tok: str) -> str:
    """LaTeX of the slot ``hp<k>``: ``\\theta_{k}``."""
    return rf"\theta_{{{slot_index(tok)}}}"


# --- the rules of the operators that are more than a function's name ----------------------------------


def _sq_dist_infix(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    (ttok, tch), ls = ch[0], ch[1][0]
    if ttok == "euc":
        return f"|x-x'|^2/{ls}^2", 2
    p = tch[1][0]
    return f"4*sin^2({p}*(x-x')/2)/{ls}^2", 2


def _sq_dist_latex(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    (ttok, tch), ls = ch[0], tex_slot(ch[1][0])
    if ttok == "euc":
        return rf"\frac{{\lVert x - x' \rVert^{{2}}}}{{{ls}^{{2}}}}", 4
    p = tex_slot(tch[1][0])
    return rf"\frac{{4\sin^{{2}}\left({p}\,(x - x')/2\right)}}{{{ls}^{{2}}}}", 4


def _sq_dist_sympy(ch: tuple[Node, ...], rec: Callable[[Node], Any], c: Any) -> Any:
    (ttok, tch), scale = ch[0], c.slot(ch[1][0])
    if ttok == "euc":
        return (c.x - c.xp) ** 2 / scale**2
    return (2 - 2 * c.sp.cos(c.slot(tch[1][0]) * (c.x - c.xp))) / scale**2


def _dot_prod_infix(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    (ttok, tch), s, ls = ch[0], ch[1][0], ch[2][0]
    if ttok == "euc":
        return f"(x-{s})*(x'-{s})/{ls}", 2
    p = tch[1][0]
    return f"(sc({p}*x)-{s}).(sc({p}*x')-{s})/{ls}", 2


def _dot_prod_latex(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    (ttok, tch), s, ls = ch[0], tex_slot(ch[1][0]), tex_slot(ch[2][0])
    if ttok == "euc":
        return rf"\frac{{(x - {s})\cdot(x' - {s})}}{{{ls}}}", 4
    phi = rf"\phi_{{{tex_slot(tch[1][0])}}}"
    return rf"\frac{{({phi}(x) - {s})\cdot({phi}(x') - {s})}}{{{ls}}}", 4


def _dot_prod_sympy(ch: tuple[Node, ...], rec: Callable[[Node], Any], c: Any) -> Any:
    (ttok, tch), s, scale = ch[0], c.slot(ch[1][0]), c.slot(ch[2][0])
    x, xp, sp = c.x, c.xp, c.sp
    if ttok == "euc":
        return (x - s) * (xp - s) / scale
    p = c.slot(tch[1][0])
    return ((sp.sin(p * x) - s) * (sp.sin(p * xp) - s) + (sp.cos(p * x) - s) * (sp.cos(p * xp) - s)) / scale


def _changepoint_latex(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    c, w = tex_slot(ch[3][0]), tex_slot(ch[4][0])
    return rf"\mathrm{{CP}}_{{{c},\,{w}}}\left({r(ch[1])[0]},\; {r(ch[2])[0]}\right)", 4


def _changepoint_sympy(ch: tuple[Node, ...], rec: Callable[[Node], Any], c: Any) -> Any:
    loc, w = c.slot(ch[3][0]), c.slot(ch[4][0])
    s1, s2 = c.sigma((c.x - loc) / w), c.sigma((c.xp - loc) / w)
    return (1 - s1) * (1 - s2) * rec(ch[1]) + s1 * s2 * rec(ch[2])


def _changewindow_latex(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    c, w, st = (tex_slot(ch[k][0]) for k in (3, 4, 5))
    return rf"\mathrm{{CW}}_{{{c},\,{w},\,{st}}}\left({r(ch[1])[0]},\; {r(ch[2])[0]}\right)", 4


def _changewindow_sympy(ch: tuple[Node, ...], rec: Callable[[Node], Any], c: Any) -> Any:
    centre, w, st = (c.slot(ch[k][0]) for k in (3, 4, 5))
    a, b = centre - w / 2, centre + w / 2
    o1 = c.sigma((c.x - a) / st) * (1 - c.sigma((c.x - b) / st))
    o2 = c.sigma((c.xp - a) / st) * (1 - c.sigma((c.xp - b) / st))
    return (1 - o1) * (1 - o2) * rec(ch[1]) + o1 * o2 * rec(ch[2])


def _time_latex(name: str) -> Printer:
    return lambda ch, r: (rf"\mathrm{{{name}}}(x, x')", 4)


def _damped_latex(ch: tuple[Node, ...], r: _Rec) -> tuple[str, int]:
    return rf"\mathrm{{D}}_{{{tex_slot(ch[1][0])}}}(x, x')", 4
