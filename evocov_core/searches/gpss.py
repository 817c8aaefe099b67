"""A GPSS baseline: the greedy compositional search of Duvenaud et al. (2013), in our grammar.

Structures are sums and products of base kernels (SE, PER, LIN, RQ by default; C as an
option). Level 1 fits every base kernel. Each further level expands the current best
structure with the grammar of GPSS, applied to every subexpression ``S``::

    S → S + B        S → S × B        B → B'   (base-kernel replacement)
    S → CP(S, S)                                (family ``changepoint``: ABCD's change point)
    S → CW(S, S)                                (family ``changewindow``: ABCD's change window)

fits every distinct candidate (by canonical form), and keeps the lowest BIC. The search
stops when no candidate improves the BIC or after ``generations`` levels (GPSS: 10).
Candidates start from the parent's values for the base kernels they keep (GPSS does the
same), so each level refines rather than restarts.

Structures are nested tuples: ``("leaf", name, id)``, ``("+"/"*", child, child, ...)``,
``("cp", before, after, id)`` or ``("cw", outside, inside, id)``; ``id`` ties a leaf (or a
change point's location and width, a window's centre, width and steepness) to the parent's
whose values it inherits (None for a new one). ``CP(S, S)`` and ``CW(S, S)`` start both
copies of ``S`` from the parent's values, as ABCD's do.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, Start
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import BASE_KERNELS
from evocov_core.searches.common import ProgressCallback, SearchResult, StopCheck
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.tracker import Tracker

__all__ = ["build", "expansions", "run_gpss", "structure_str"]

Struct = tuple
#: Structure tags of the gating operators: grammar symbol and number of slots of their own.
_GATES = {"cp": ("changepoint", 2), "cw": ("changewindow", 3)}


def structure_str(s: Struct) -> str:
    """GPSS-style text, e.g. ``SE + PER × LIN``."""
    if s[0] == "leaf":
        return s[1]
    if s[0] in _GATES:
        return f"{s[0].upper()}({structure_str(s[1])}, {structure_str(s[2])})"
    parts = [structure_str(c) for c in s[1:]]
    if s[0] == "*":
        parts = [f"({p})" if c[0] == "+" else p for p, c in zip(parts, s[1:], strict=True)]
        return " × ".join(parts)
    return " + ".join(parts)


def build(s: Struct) -> tuple[Kernel, list[tuple[object, list[str]]]]:
    """Kernel for a structure, and per leaf (in order) its id and slots."""
    leaves: list[tuple[object, list[str]]] = []
    counter = [0]

    def rec(node: Struct) -> list[str]:
        if node[0] == "leaf":
            n_slots, make = BASE_KERNELS[node[1]]
            slots = [f"hp{counter[0] + k}" for k in range(n_slots)]
            counter[0] += n_slots
            leaves.append((node[2], slots))
            return list(make(*slots).tokens)
        if node[0] in _GATES:
            op, n_slots = _GATES[node[0]]
            first, second = rec(node[1]), rec(node[2])
            slots = [f"hp{counter[0] + k}" for k in range(n_slots)]
            counter[0] += n_slots
            leaves.append((node[3], slots))
            return [op, "x", *first, *second, *slots]
        op = "add" if node[0] == "+" else "multiply"
        acc = rec(node[1])
        for c in node[2:]:
            acc = [op, *acc, *rec(c)]
        return acc

    tokens = rec(s)
    return Kernel(tuple(tokens)), leaves


def _relabel(s: Struct, counter: list[int]) -> Struct:
    """Give every leaf a fresh id (the ids of a structure's own leaves)."""
    if s[0] == "leaf":
        counter[0] += 1
        return ("leaf", s[1], counter[0] - 1)
    if s[0] in _GATES:
        first, second = _relabel(s[1], counter), _relabel(s[2], counter)
        counter[0] += 1
        return (s[0], first, second, counter[0] - 1)
    return (s[0], *(_relabel(c, counter) for c in s[1:]))


def _paths(s: Struct, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Struct]]:
    yield path, s
    if s[0] != "leaf":
        for k, c in enumerate(s[1:3] if s[0] in _GATES else s[1:], start=1):
            yield from _paths(c, (*path, k))


def _replace(s: Struct, path: tuple[int, ...], new: Struct) -> Struct:
    if not path:
        return new
    k = path[0]
    return (*s[:k], _replace(s[k], path[1:], new), *s[k + 1 :])


def _flatten(s: Struct) -> Struct:
    """Merge nested sums into sums and products into products (GPSS's normal form)."""
    if s[0] == "leaf":
        return s
    if s[0] in _GATES:
        return (s[0], _flatten(s[1]), _flatten(s[2]), s[3])
    kids: list[Struct] = []
    for c in (_flatten(c) for c in s[1:]):
        kids.extend(c[1:] if c[0] == s[0] else [c])
    return (s[0], *kids)


def expansions(s: Struct, bases: tuple[str, ...], families: Collection[str] = ()) -> list[Struct]:
    """Every structure one GPSS grammar step away from ``s`` (leaf ids = ids in ``s``); the families
    ``changepoint`` and ``changewindow`` add the change point and window."""
    out = []
    for path, node in _paths(s):
        if "changepoint" in families:
            out.append(_flatten(_replace(s, path, ("cp", node, node, None))))
        if "changewindow" in families:
            out.append(_flatten(_replace(s, path, ("cw", node, node, None))))
        for b in bases:
            new_leaf = ("leaf", b, None)
            out.append(_flatten(_replace(s, path, ("+", node, new_leaf))))
            out.append(_flatten(_replace(s, path, ("*", node, new_leaf))))
            if node[0] == "leaf" and node[1] != b:
                out.append(_replace(s, path, ("leaf", b, None)))
    return out


def _start(candidate: Struct, parent_fit: FitResult | None, parent_leaves: dict[object, list[str]]
           ) -> tuple[Kernel, Start | None]:
    kernel, leaves = build(candidate)
    if parent_fit is None or not parent_fit.ok:
        return kernel, None
    pvals = dict(zip(parent_fit.kernel.slots, parent_fit.theta, strict=True))
    values: dict[str, float] = {}
    for leaf_id, slots in leaves:
        if leaf_id is not None and leaf_id in parent_leaves:
            for new, old in zip(slots, parent_leaves[leaf_id], strict=True):
                values[new] = pvals.get(old, math.nan)
    theta = tuple(values.get(sl, math.nan) for sl in kernel.slots)
    return kernel, Start(theta, parent_fit.log_noise)


def run_gpss(data: FitData, config: SearchConfig, executor: Executor, *, seed: int = 0,
             progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
             started: float | None = None) -> SearchResult:
    """Greedy GPSS search for ``config.generations`` levels over ``config.base_kernels``."""
    bases = tuple(config.base_kernels)
    tr = Tracker("gpss", config.generations, progress, should_stop, seed, config=config, n_train=data.n, data=data,
                 executor=executor, started=started)
    best_struct: Struct | None = None
    best_fit: FitResult | None = None
    candidates: list[Struct] = [("leaf", b, None) for b in bases]
    parent_leaves: dict[object, list[str]] = {}
    for _level in range(config.generations):
        if tr.stop_requested():
            break
        seen: set[str] = set()
        kernels, starts, structs = [], [], []
        for c in candidates:
            k, st = _start(c, best_fit, parent_leaves)
            if k.canonical in seen:
                continue
            seen.add(k.canonical)
            kernels.append(k)
            starts.append(st)
            structs.append(c)
        fits = tr.evaluate(executor, kernels, starts, [f"gpss:{structure_str(s)}" for s in structs])
        improved = False
        for s, f in zip(structs, fits, strict=True):
            if f is not None and f.ok and (best_fit is None or f.bic < best_fit.bic):
                best_fit, best_struct, improved = f, s, True
        tr.end_generation()
        if not improved or best_struct is None:
            break
        # Leaves of the new best get fresh ids; expansions then refer to them.
        best_struct = _relabel(best_struct, [0])
        _, leaves = build(best_struct)
        parent_leaves = {leaf_id: slots for leaf_id, slots in leaves}
        # The best fit's slots follow the same leaf order as build(best_struct).
        candidates = expansions(best_struct, bases, config.families)
    settings = config.to_dict()
    if best_struct is not None:
        settings["gpss_structure"] = structure_str(best_struct)
    return tr.result(settings)
