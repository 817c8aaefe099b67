"""The kernel value: an immutable expression tree and its readable forms.

A :class:`Kernel` is only structure: a tuple of tokens in prefix order whose
hyperparameter leaves are *slots* (``hp0``, ``hp7``, …). A slot that appears several
times is one shared parameter. Values live beside the tree, as a flat vector ``theta``
of **natural logarithms** of the slot values, ordered as :attr:`Kernel.slots`
(sorted by slot number). Every model adds one white-noise variance, so the number of
hyperparameters is ``q = len(kernel.slots) + 1``.

Forms
-----
``prefix``     ``exp(multiply(-0.5, sq_dist(euc(x), hp0)))``: the stored form, read back
               by :func:`evocov_core.language.parse.parse_expression`.
``canonical``  the prefix form after sorting the arguments of ``add``/``multiply``
               (associative chains flattened) and renumbering slots by first
               appearance: equal kernels up to commutativity, associativity and slot
               names get the same string, the cache key and table label.
``infix``      ``exp(-0.5*|x-x'|^2/hp0^2)``: for people; a change point reads
               ``CP[hp3, hp4](before, after)`` (location hp3, width hp4).
``latex``      for the dashboard (``st.latex``).

How each operator is written, and the role of each of its hyperparameter arguments
(:func:`slot_roles`), is read from its record in :mod:`evocov_core.language.grammar`: the printers
here only walk the tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from evocov_core.language.grammar import (
    DEFAULT_N_HYPER,
    NON_STATIONARY,
    OPERATORS,
    TreeError,
    arity,
    check_tree,
    is_slot,
    subtree_end,
    symbol,
    tree_depth,
)
from evocov_core.language.notation import Node, slot_index, tex_slot

__all__ = ["NON_STATIONARY", "Kernel", "Node", "flatten", "slot_roles"]

#: Operators whose operands may be swapped (``commutative=True`` records).
_COMMUTATIVE = frozenset(s.name for s in OPERATORS if s.commutative)


def _nest(tokens: tuple[str, ...]) -> Node:
    """Prefix tokens -> nested (token, children) tuples, iteratively."""
    out: list[Node] = []
    for tok in reversed(tokens):
        k = arity(tok)
        if k:
            children = tuple(out[-1 : -k - 1 : -1])
            del out[-k:]
            out.append((tok, children))
        else:
            out.append((tok, ()))
    if len(out) != 1:
        raise TreeError("tokens do not form a single tree")
    return out[0]


def flatten(node: Node) -> tuple[str, ...]:
    """Nested (token, children) tuples -> prefix tokens, iteratively."""
    out: list[str] = []
    stack = [node]
    while stack:
        tok, children = stack.pop()
        out.append(tok)
        stack.extend(reversed(children))
    return tuple(out)


def _prefix_str(node: Node) -> str:
    tok, children = node
    if not children:
        return tok
    return f"{tok}({', '.join(_prefix_str(c) for c in children)})"


def _renumber(tokens: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    mapping: dict[str, str] = {}
    out = []
    for t in tokens:
        if is_slot(t):
            if t not in mapping:
                mapping[t] = f"hp{len(mapping)}"
            t = mapping[t]
        out.append(t)
    return tuple(out), mapping


def _nary(node: Node) -> Node:
    """Merge associative chains of add/multiply into n-ary nodes (no sorting)."""
    tok, children = node
    if not children:
        return node
    kids = [_nary(c) for c in children]
    if tok in _COMMUTATIVE:
        merged: list[Node] = []
        for c in kids:
            merged.extend(c[1] if c[0] == tok else (c,))
        return (tok, tuple(merged))
    return (tok, tuple(kids))


def _slot_classes(node: Node) -> dict[str, int]:
    """Rank slots by where they occur (ancestor symbols and argument positions).

    Two slots in different contexts get different classes whatever their names, so
    sorting on classes breaks the ties that names would otherwise settle.
    """
    paths: dict[str, list[str]] = {}
    stack: list[tuple[Node, str]] = [(node, "")]
    while stack:
        (tok, children), path = stack.pop()
        if is_slot(tok):
            paths.setdefault(tok, []).append(path)
            continue
        commutative = tok in _COMMUTATIVE
        for k, c in enumerate(children):
            stack.append((c, f"{path}/{tok}{'' if commutative else k}"))
    sig = {s: "|".join(sorted(p)) for s, p in paths.items()}
    ranks = {v: i for i, v in enumerate(sorted(set(sig.values())))}
    return {s: ranks[v] for s, v in sig.items()}


def _canon_sorted(node: Node, classes: dict[str, int]) -> Node:
    tok, children = node
    if not children:
        return node
    kids = [_canon_sorted(c, classes) for c in children]
    if tok in _COMMUTATIVE:
        kids.sort(key=lambda c: _sort_key(c, classes))
        acc = kids[0]
        for o in kids[1:]:
            acc = (tok, (acc, o))
        return acc
    return (tok, tuple(kids))


def _canon(node: Node) -> Node:
    """Flatten associative chains, sort commutative operands, rebuild left-deep."""
    nary = _nary(node)
    return _canon_sorted(nary, _slot_classes(nary))


def _sort_key(node: Node, classes: dict[str, int]) -> tuple[str, str, str]:
    # A sort key, not a result: tuples compare element by element, so a bare tuple is what sorting needs.
    flat = flatten(node)
    anonymous = " ".join("θ" if is_slot(t) else t for t in flat)
    by_class = " ".join(f"θ{classes[t]}" if is_slot(t) else t for t in flat)
    # Last tie-break: the sharing pattern inside the subtree.
    local = " ".join(_renumber(flat)[0])
    return anonymous, by_class, local


# --- readable forms --------------------------------------------------------------
# Both forms first fold constant arithmetic (``(2 + 1)*1*k`` reads ``3*k``, with each record's
# ``fold``): display only; the expression, its canonical form and kernel files keep the tree.


def _number(node: Node) -> float | None:
    """The value of a constant leaf, else None (slots and the input pair are not numbers)."""
    tok, ch = node
    if ch:
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def _fold(node: Node) -> Node:
    """Replace constant subtrees by their value (6 significant digits) and drop factors of 1."""
    tok, ch = node
    if not ch:
        return node
    kids = tuple(_fold(c) for c in ch)
    value = symbol(tok).fold
    if value is not None:
        vals = [_number(k) for k in kids]
        if all(v is not None for v in vals):
            v = value(*vals)
            if math.isfinite(v):
                return (f"{v:.6g}", ())
    if tok in ("add", "multiply"):
        # Gather the constants of the whole chain (``1 + (1 + k)`` reads ``2 + k``), drop a
        # factor 1 or a term 0; otherwise keep the operands in their order.
        ops = _chain(tok, kids)
        nums = [v for v in map(_number, ops) if v is not None]
        unit = 0.0 if tok == "add" else 1.0
        if len(nums) >= 2 or unit in nums:
            c = math.fsum(nums) if tok == "add" else math.prod(nums)
            rest = [o for o in ops if _number(o) is None]
            out = ([(f"{c:.6g}", ())] if c != unit or not rest else []) + rest
            acc = out[0]
            for o in out[1:]:
                acc = (tok, (acc, o))
            return acc
    return (tok, kids)


def _chain(tok: str, kids: tuple[Node, ...]) -> list[Node]:
    """Operands of a chain of ``tok`` (``add`` or ``multiply``), flattened."""
    out: list[Node] = []
    for k in kids:
        out.extend(_chain(tok, k[1]) if k[0] == tok else [k])
    return out

# Precedence: 1 sum, 2 product/quotient, 3 power, 4 atom (see grammar.Printer).


def _infix(node: Node) -> tuple[str, int]:
    tok, ch = node
    if not ch:
        return tok, (4 if not tok.startswith("-") else 2)
    rule = symbol(tok).infix
    if rule is None:
        raise TreeError(f"cannot render {tok!r} here")  # pragma: no cover - typed trees only
    return rule(ch, _infix)


def _latex(node: Node) -> tuple[str, int]:
    tok, ch = node
    if not ch:
        if is_slot(tok):
            return tex_slot(tok), 4
        return tok, (4 if not tok.startswith("-") else 2)
    rule = symbol(tok).latex
    if rule is None:
        raise TreeError(f"cannot render {tok!r} here")  # pragma: no cover - typed trees only
    return rule(ch, _latex)


def slot_roles(kernel: Kernel) -> dict[str, set[str]]:
    """What each slot does in the tree, from each operator's ``roles`` record.

    Roles: ``frequency`` (spectral θp), ``lengthscale`` (sq_dist of raw inputs),
    ``periodic_lengthscale`` (sq_dist of spectral features), ``shift`` / ``scale``
    (dot_prod θs / θl), ``value`` (hp), ``exponent`` (power), ``location`` /
    ``steepness`` (changepoint θc / θs), ``window_centre`` / ``window_width`` /
    ``steepness`` (changewindow θc / θw / θs), ``damping`` (a damped trend's time
    constant). A slot used in several places has every role it plays.
    """
    roles: dict[str, set[str]] = {s: set() for s in kernel.slots}
    stack = [kernel._nested]
    while stack:
        tok, ch = stack.pop()
        if not ch:
            continue
        rule = symbol(tok).roles
        if rule is not None:
            for child, role in zip(ch, rule(ch), strict=True):
                if role is not None:
                    roles[child[0]].add(role)
        stack.extend(ch)
    return roles


@dataclass(frozen=True)
class Kernel:
    """An immutable kernel expression tree.

    Parameters
    ----------
    tokens : tuple of str
        Prefix-order tokens of a well-typed tree (see :mod:`evocov_core.language.grammar`).
        Use :meth:`from_tokens` to validate untrusted input; the constructor
        trusts its caller (variation operators build many trees).

    Notes
    -----
    ``==`` and ``hash`` compare the exact structure. Use :attr:`canonical` to
    compare kernels up to commutativity, associativity and slot renaming.
    """

    tokens: tuple[str, ...]

    @classmethod
    def from_tokens(
        cls,
        tokens: tuple[str, ...] | list[str],
        *,
        n_hyper: int | None = DEFAULT_N_HYPER,
        max_depth: int | None = None,
        max_nodes: int | None = None,
    ) -> Kernel:
        """Validate ``tokens`` with :func:`~evocov_core.language.grammar.check_tree` and wrap them."""
        tokens = tuple(tokens)
        check_tree(tokens, n_hyper=n_hyper, max_depth=max_depth, max_nodes=max_nodes)
        return cls(tokens)

    # --- structure -----------------------------------------------------------------
    @cached_property
    def slots(self) -> tuple[str, ...]:
        """Distinct slot tokens used, sorted by slot number: the layout of ``theta``."""
        return tuple(sorted({t for t in self.tokens if is_slot(t)}, key=slot_index))

    @property
    def n_params(self) -> int:
        """Number of kernel hyperparameters (distinct slots), noise excluded."""
        return len(self.slots)

    @property
    def q(self) -> int:
        """Hyperparameter count of the model: distinct slots plus the noise variance."""
        return len(self.slots) + 1

    @cached_property
    def depth(self) -> int:
        """Tree depth, DEAP's convention (a lone terminal has depth 0)."""
        return tree_depth(self.tokens)

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.tokens)

    def subtree(self, start: int) -> tuple[str, ...]:
        """Tokens of the subtree rooted at position ``start``."""
        return self.tokens[start : subtree_end(self.tokens, start)]

    @cached_property
    def is_stationary(self) -> bool:
        """True when the tree uses none of :data:`NON_STATIONARY`: k depends on x − x' only."""
        return not NON_STATIONARY & set(self.tokens)

    # --- forms -----------------------------------------------------------------------
    @cached_property
    def _nested(self) -> Node:
        return _nest(self.tokens)

    @property
    def prefix(self) -> str:
        """Function-call form, e.g. ``exp(multiply(-0.5, sq_dist(euc(x), hp0)))``."""
        return _prefix_str(self._nested)

    def __str__(self) -> str:
        return self.prefix

    @cached_property
    def _canonical(self) -> tuple[Kernel, dict[str, str]]:
        tokens, mapping = _renumber(flatten(_canon(self._nested)))
        return Kernel(tokens), mapping

    @property
    def canonical_kernel(self) -> Kernel:
        """The canonical tree (sorted, flattened and re-nested left-deep, renumbered)."""
        return self._canonical[0]

    @property
    def canonical_slot_map(self) -> dict[str, str]:
        """Map from this kernel's slots to the canonical kernel's slots."""
        return dict(self._canonical[1])

    @property
    def canonical(self) -> str:
        """Canonical prefix string: equal for kernels equal up to commutativity,
        associativity of ``add``/``multiply`` and renaming of slots."""
        return self._canonical[0].prefix

    @property
    def infix(self) -> str:
        """Readable formula, e.g. ``hp1*exp(-0.5*|x-x'|^2/hp0^2)``.

        ``4*sin^2(p*(x-x')/2)`` is ``||φ(x) − φ(x')||²`` of the spectral map and
        ``sc(p*x)`` the map ``[sin(p·x), cos(p·x)]`` itself; both sum over the input
        dimensions when ``d > 1``.
        """
        return _infix(_fold(self._nested))[0]

    @property
    def latex(self) -> str:
        """LaTeX formula of ``k(x, x')`` (slots shown as ``θ_k``)."""
        return _latex(_fold(self._nested))[0]
