"""A kernel's tokens compiled into the evaluator's program (:class:`~evocov_core.language.operators._Program`):
each node's children, the position in θ of each slot, which subtrees depend on θ, which nodes' reverse
rules read their own value, and which stationary subtrees of a non-stationary tree are evaluated on the
lag row (:class:`~evocov_core.language.inputs.Inputs`).

Compiling is a pure function of the tokens, cached: a search evaluates the same tree at many θ.
"""

from __future__ import annotations

from functools import lru_cache

from evocov_core.language.grammar import NON_STATIONARY, arity, is_slot, symbol
from evocov_core.language.operators import _Program

__all__: list[str] = []


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
    row_node, row_roots = _row_subtrees(tokens, children)
    return _Program(
        tokens=tokens,
        children=tuple(children),
        slot_pos=tuple(pos.get(t, -1) for t in tokens),
        has_param=tuple(has_param),
        n_params=len(slots),
        reads_output=tuple(symbol(t).reads_output for t in tokens),
        row_node=row_node,
        row_roots=row_roots,
    )


# A stationary subtree is evaluated on the lag row inside a non-stationary tree only when
# it has at least this many operators: its expansion (a gather) and the reduction of its
# adjoint cost about two n×n passes, which a subtree like ``sq_dist(euc(x), θ)`` (one
# pass over cached distances) does not repay.
_MIN_ROW_OPS = 3


def _row_subtrees(tokens: tuple[str, ...], children: list[tuple[int, ...]]
                  ) -> tuple[tuple[bool, ...], frozenset[int]]:
    """Maximal stationary covariance subtrees of a non-stationary tree, with ≥ _MIN_ROW_OPS operators.

    Returns a flag per node (inside such a subtree) and the subtrees' roots; both empty
    when the whole tree is stationary (it is then evaluated on the row as a whole) or
    when no subtree qualifies.
    """
    n = len(tokens)
    stationary = [True] * n
    has_x = [False] * n
    n_ops = [0] * n
    for i in range(n - 1, -1, -1):
        ch = children[i]
        stationary[i] = tokens[i] not in NON_STATIONARY and all(stationary[c] for c in ch)
        has_x[i] = tokens[i] == "x" or any(has_x[c] for c in ch)
        n_ops[i] = (1 if ch else 0) + sum(n_ops[c] for c in ch)
    if stationary[0]:
        return (), frozenset()
    flags = [False] * n
    roots: list[int] = []
    todo = [0]
    while todo:
        i = todo.pop()
        # x, euc and spectral take their geometry from the covariance that reads them.
        if (stationary[i] and has_x[i] and n_ops[i] >= _MIN_ROW_OPS
                and tokens[i] not in ("x", "euc", "spectral")):
            roots.append(i)
            stack = [i]
            while stack:
                j = stack.pop()
                flags[j] = True
                stack.extend(children[j])
        else:
            todo.extend(children[i])
    if not roots:
        return (), frozenset()
    return tuple(flags), frozenset(roots)
