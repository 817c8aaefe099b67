"""Start where good kernels are: GPSS structures as seeds, and a GPSS-style expansion operator.

The grammar can write every structure of the compositional kernel searches (GPSS, ABCD):
sums and products of the base kernels SE, PER, LIN and RQ
(:data:`~evocov_core.language.library.BASE_KERNELS`). A budgeted EvoCov run puts some of them in
its first population (:func:`seed_kernels`) and lets one variation operator make the
moves of GPSS's grammar on any tree, evolved or not (:func:`expand`)::

    S → S + B        S → S × B        B → B'
    S → CP(S, B)     S → CP(B, S)        (family ``changepoint``: ABCD's change point)
    S → CW(S, B)     S → CW(B, S)        (family ``changewindow``: ABCD's change window)

where ``S`` is a covariance subtree (the root half of the time) and ``B`` a base kernel with
fresh slots (a change point also gets a fresh location and width, a change window a fresh
centre, width and steepness). The rest of the population stays random trees, as in the
paper.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from itertools import combinations_with_replacement

import numpy as np

from evocov_core.language.grammar import Cov, is_slot, subtree_end, symbol
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import BASE_KERNELS, compose
from evocov_core.searches.variation import Child, VariationConfig, _acceptable

__all__ = ["SEED_BASES", "expand", "seed_kernels", "seed_structures"]

#: The base kernels seeds and expansions use (GPSS's defaults).
SEED_BASES: tuple[str, ...] = ("SE", "PER", "LIN", "RQ")


def seed_structures(bases: tuple[str, ...] = SEED_BASES) -> list[list | str]:
    """Base kernels, then their pairwise sums, then pairwise products (GPSS notation).

    With the four default bases: 4 + 10 + 10 = 24 structures.
    """
    pairs = list(combinations_with_replacement(bases, 2))
    return [*bases, *(["+", a, b] for a, b in pairs), *(["*", a, b] for a, b in pairs)]


def seed_kernels(count: int, rng: np.random.Generator, bases: tuple[str, ...] = SEED_BASES) -> list[Kernel]:
    """``count`` distinct seed kernels: every base kernel first, then a random draw of the others.

    Fewer when ``count`` exceeds the number of structures.
    """
    structs = seed_structures(bases)
    head, rest = structs[: len(bases)], structs[len(bases):]
    order = [rest[int(i)] for i in rng.permutation(len(rest))]
    return [compose(s) for s in [*head, *order][: max(0, count)]]


def _pattern(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Tokens with slots renamed in order of appearance, to compare structures."""
    names: dict[str, str] = {}
    return tuple(names.setdefault(t, f"s{len(names)}") if is_slot(t) else t for t in tokens)


_BASE_PATTERNS = {name: _pattern(make(*[f"hp{k}" for k in range(n)]).tokens)
                  for name, (n, make) in BASE_KERNELS.items() if name != "C"}


def _fresh_base(name: str, used: set[str], n_hyper: int) -> tuple[str, ...] | None:
    n, make = BASE_KERNELS[name]
    free = [f"hp{k}" for k in range(n_hyper) if f"hp{k}" not in used]
    if len(free) < n:
        return None
    return make(*free[:n]).tokens


def expand_once(kernel: Kernel, rng: np.random.Generator, n_hyper: int,
                bases: tuple[str, ...] = SEED_BASES, families: Collection[str] = ()) -> tuple[str, ...] | None:
    """One GPSS move on ``kernel`` without checks (None when no fresh slots are left); the families
    ``changepoint`` and ``changewindow`` add the moves that make a change point or window."""
    t = kernel.tokens
    used = {s for s in t if is_slot(s)}
    covs = [i for i, tok in enumerate(t) if symbol(tok).ret is Cov]
    replaceable = [(i, name) for i in covs for name, pat in _BASE_PATTERNS.items()
                   if name in bases and _pattern(t[i:subtree_end(t, i)]) == pat]
    # Moves 0-2: S + B, S × B, B → B'; 3-4: the change points; 5-6: the change windows. Without
    # windows this draws exactly what it drew before they existed (same seeds, same trees).
    moves = (0, 1, 2, *((3, 4) if "changepoint" in families else ()), *((5, 6) if "changewindow" in families else ()))
    move = moves[int(rng.integers(len(moves)))]
    if move == 2 and replaceable:  # B -> B'
        i, name = replaceable[int(rng.integers(len(replaceable)))]
        others = [b for b in bases if b != name]
        new = _fresh_base(others[int(rng.integers(len(others)))], used, n_hyper)
        return None if new is None else (*t[:i], *new, *t[subtree_end(t, i):])
    i = 0 if rng.random() < 0.5 else covs[int(rng.integers(len(covs)))]
    end = subtree_end(t, i)
    new = _fresh_base(bases[int(rng.integers(len(bases)))], used, n_hyper)
    if new is None:
        return None
    if move >= 3:  # S -> CP(S, B), CP(B, S), CW(S, B) or CW(B, S)
        op, n_new = ("changepoint", 2) if move <= 4 else ("changewindow", 3)
        free = [f"hp{k}" for k in range(n_hyper) if f"hp{k}" not in used and f"hp{k}" not in new]
        if len(free) < n_new:
            return None
        first, second = (t[i:end], new) if move in (3, 5) else (new, t[i:end])
        return (*t[:i], op, "x", *first, *second, *free[:n_new], *t[end:])
    op = "add" if move == 0 else "multiply"
    return (*t[:i], op, *t[i:end], *new, *t[end:])


def expand(kernel: Kernel, rng: np.random.Generator, cfg: VariationConfig, n_hyper: int, *,
           theta: tuple[float, ...] | None = None, log_noise: float = math.nan,
           bases: tuple[str, ...] = SEED_BASES, families: Collection[str] = ()) -> Child:
    """A GPSS-style expansion passing the variation checks (PSD, depth), else the parent.

    The child keeps the parent's values for the slots it keeps (NaN for the new base
    kernel's), like every variation child.
    """
    values = dict(zip(kernel.slots, theta, strict=True)) if theta is not None else {}
    for attempt in range(1, cfg.rho_max + 1):
        tokens = expand_once(kernel, rng, n_hyper, bases, families)
        if tokens is None:
            break
        k = _acceptable(tokens, kernel.tokens, cfg, rng)
        if k is not None:
            return Child(k, tuple(values.get(s, math.nan) for s in k.slots), log_noise, "expansion", attempt)
    return Child(kernel, tuple(values.get(s, math.nan) for s in kernel.slots), log_noise, "parent", cfg.rho_max)
