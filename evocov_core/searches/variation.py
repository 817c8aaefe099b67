"""Variation operators of the paper's section 4.2: crossover, four mutations, bloat control.

All operators are type-safe, draw only from the ``numpy.random.Generator`` they are
given (DEAP's ``gp.mut*``/``cx*`` draw from the global ``random`` module, which would
mix the randomness of concurrent runs in one server), and return a :class:`Child`:
the new tree plus the inherited log values of the slots it kept (NaN for new slots),
ready to be a :class:`~evocov_core.fitting.optimize.Start`.

* **Crossover**: a random ``Cov`` subtree of each parent joined by ``add`` or
  ``multiply``. The second subtree's slots are renamed to slots the first does not use,
  so both parents' parameters stay distinct and both sets of values are inherited.
* **Mutation** (one of four, uniformly): *insert* a nestable operator above a random
  ``Cov`` node (its other argument a random terminal); *shrink* a node to one of its
  arguments of the same type; *uniform*: regrow a random subtree with Algorithm 2;
  *node replacement*: swap a symbol for another with the same signature.
* **Bloat control and PSD**: a child deeper than ``o_max`` (or larger than
  ``max_nodes``), identical to its parent, or failing the PSD check is discarded and the
  operator repeated, up to ``rho_max`` attempts; then a parent is returned unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from evocov_core.language.grammar import Cov, Grammar, is_slot, subtree_end, symbol, typed_grow
from evocov_core.language.kernel import Kernel
from evocov_core.language.psd import PSDConfig, check_psd

__all__ = [
    "MUTATIONS",
    "Child",
    "VariationConfig",
    "crossover",
    "crossover_once",
    "mutate",
    "mutate_once",
    "random_kernel",
]

MUTATIONS = ("insert", "shrink", "uniform", "node_replacement")


@dataclass(frozen=True)
class VariationConfig:
    """Settings of the variation operators (paper defaults).

    Attributes
    ----------
    o_max : int
        Maximum depth of a child (bloat control).
    rho_max : int
        Attempts per operator call before returning a parent unchanged.
    uniform_depth : (int, int)
        ``(d_min, d_max)`` of Algorithm 2 for the subtree regrown by *uniform* mutation.
    max_nodes : int
        Size limit, a guard beside the depth limit.
    require_input : bool
        Discard trees that never read ``x``: they are constant kernels (two thirds of
        Algorithm 2's PSD trees at d_min = 3…5), a waste of fits. The paper keeps them;
        the ``paper`` preset does too.
    psd : PSDConfig
    """

    o_max: int = 40
    rho_max: int = 250
    uniform_depth: tuple[int, int] = (1, 6)
    max_nodes: int = 400
    require_input: bool = False
    psd: PSDConfig = field(default_factory=PSDConfig)


@dataclass(frozen=True)
class Child:
    """A child tree with inherited log slot values (NaN where nothing is inherited).

    Attributes
    ----------
    kernel : Kernel
    theta : tuple of float
        Ordered as ``kernel.slots``.
    log_noise : float
        Inherited log noise variance.
    origin : str
        ``crossover``, ``mutation:<kind>`` or ``parent`` (the operator gave up).
    attempts : int
    """

    kernel: Kernel
    theta: tuple[float, ...]
    log_noise: float
    origin: str
    attempts: int = 1


def _values(kernel: Kernel, theta: tuple[float, ...] | None) -> dict[str, float]:
    if theta is None:
        return {}
    return dict(zip(kernel.slots, theta, strict=True))


def _inherit(child: Kernel, values: dict[str, float]) -> tuple[float, ...]:
    return tuple(values.get(s, math.nan) for s in child.slots)


def _node_types(tokens: tuple[str, ...]) -> list[type]:
    return [symbol(t).ret for t in tokens]


def _acceptable(child: tuple[str, ...], parent: tuple[str, ...], cfg: VariationConfig,
                rng: np.random.Generator) -> Kernel | None:
    if child == parent or len(child) > cfg.max_nodes:
        return None
    if cfg.require_input and "x" not in child:
        return None
    k = Kernel(child)
    if k.depth > cfg.o_max:
        return None
    if not check_psd(k, rng, cfg.psd).ok:
        return None
    return k


# --- crossover -----------------------------------------------------------------------


def crossover_once(a: Kernel, b: Kernel, rng: np.random.Generator, n_hyper: int
                   ) -> tuple[tuple[str, ...], dict[str, tuple[int, str]]]:
    """One random crossover attempt, without checks.

    Returns the child tokens and, for each child slot, ``(parent index, parent slot)``.
    """
    covs_a = [i for i, t in enumerate(_node_types(a.tokens)) if t is Cov]
    covs_b = [i for i, t in enumerate(_node_types(b.tokens)) if t is Cov]
    i = covs_a[int(rng.integers(len(covs_a)))]
    j = covs_b[int(rng.integers(len(covs_b)))]
    sub_a = a.tokens[i : subtree_end(a.tokens, i)]
    sub_b = b.tokens[j : subtree_end(b.tokens, j)]
    used = {t for t in sub_a if is_slot(t)}
    free = [f"hp{k}" for k in range(n_hyper) if f"hp{k}" not in used]
    rename: dict[str, str] = {}
    for t in sub_b:
        if is_slot(t) and t not in rename:
            # Out of free slots: share with the first subtree (the pool is finite).
            rename[t] = free.pop(0) if free else t
    sub_b2 = tuple(rename.get(t, t) for t in sub_b)
    op = "add" if rng.random() < 0.5 else "multiply"
    origin = {t: (0, t) for t in sub_a if is_slot(t)}
    for old, new in rename.items():
        origin.setdefault(new, (1, old))
    return (op, *sub_a, *sub_b2), origin


def crossover(a: Kernel, b: Kernel, rng: np.random.Generator, cfg: VariationConfig, n_hyper: int, *,
              theta_a: tuple[float, ...] | None = None, theta_b: tuple[float, ...] | None = None,
              noise_a: float = math.nan, noise_b: float = math.nan) -> Child:
    """Crossover with PSD and depth checks, retried up to ``rho_max`` times."""
    va, vb = _values(a, theta_a), _values(b, theta_b)
    for attempt in range(1, cfg.rho_max + 1):
        tokens, origin = crossover_once(a, b, rng, n_hyper)
        k = _acceptable(tokens, a.tokens, cfg, rng)
        if k is None or k.tokens == b.tokens:
            continue
        values = {s: (va if p == 0 else vb).get(old, math.nan) for s, (p, old) in origin.items()}
        noise = noise_a if math.isfinite(noise_a) else noise_b
        return Child(k, _inherit(k, values), noise, "crossover", attempt)
    return Child(a, tuple(va.get(s, math.nan) for s in a.slots), noise_a, "parent", cfg.rho_max)


# --- mutations -----------------------------------------------------------------------


def _insert(tokens: tuple[str, ...], grammar: Grammar, rng: np.random.Generator) -> tuple[str, ...] | None:
    covs = [i for i, t in enumerate(_node_types(tokens)) if t is Cov]
    i = covs[int(rng.integers(len(covs)))]
    end = subtree_end(tokens, i)
    sub = tokens[i:end]
    ops = grammar.nestable(Cov)
    op = ops[int(rng.integers(len(ops)))]
    args = symbol(op).args
    cov_positions = [k for k, t in enumerate(args) if t is Cov]
    keep_at = cov_positions[int(rng.integers(len(cov_positions)))]
    new: list[str] = [op]
    for k, t in enumerate(args):
        if k == keep_at:
            new.extend(sub)
        else:
            terms = grammar.terminals(t)
            new.append(terms[int(rng.integers(len(terms)))])
    return (*tokens[:i], *new, *tokens[end:])


def _shrink(tokens: tuple[str, ...], grammar: Grammar, rng: np.random.Generator) -> tuple[str, ...] | None:
    # Nodes with an argument of their own return type.
    cands = []
    for i, t in enumerate(tokens):
        s = symbol(t)
        if s.arity and any(a is s.ret for a in s.args):
            cands.append(i)
    if not cands:
        return None
    i = cands[int(rng.integers(len(cands)))]
    s = symbol(tokens[i])
    # Locate the argument subtrees of node i.
    starts, pos = [], i + 1
    for _ in range(s.arity):
        starts.append(pos)
        pos = subtree_end(tokens, pos)
    same = [k for k, a in enumerate(s.args) if a is s.ret]
    k = same[int(rng.integers(len(same)))]
    arg = tokens[starts[k] : subtree_end(tokens, starts[k])]
    return (*tokens[:i], *arg, *tokens[pos:])


def _uniform(tokens: tuple[str, ...], grammar: Grammar, rng: np.random.Generator,
             depth: tuple[int, int]) -> tuple[str, ...] | None:
    i = int(rng.integers(len(tokens)))
    typ = symbol(tokens[i]).ret
    new = typed_grow(grammar, rng, depth[0], depth[1], root=typ)
    return (*tokens[:i], *new, *tokens[subtree_end(tokens, i):])


def _node_replacement(tokens: tuple[str, ...], grammar: Grammar, rng: np.random.Generator) -> tuple[str, ...] | None:
    i = int(rng.integers(len(tokens)))
    s = symbol(tokens[i])
    if s.arity:
        pool = [p for p in grammar.nestable(s.ret) + grammar.not_nestable(s.ret)
                if symbol(p).args == s.args and p != s.name]
    else:
        pool = [t for t in grammar.terminals(s.ret) if t != s.name]
    if not pool:
        return None
    return (*tokens[:i], pool[int(rng.integers(len(pool)))], *tokens[i + 1 :])


def mutate_once(kernel: Kernel, grammar: Grammar, rng: np.random.Generator, kind: str,
                uniform_depth: tuple[int, int] = (1, 6)) -> tuple[str, ...] | None:
    """One mutation attempt of the given kind, without checks (None if not applicable)."""
    t = kernel.tokens
    if kind == "insert":
        return _insert(t, grammar, rng)
    if kind == "shrink":
        return _shrink(t, grammar, rng)
    if kind == "uniform":
        return _uniform(t, grammar, rng, uniform_depth)
    if kind == "node_replacement":
        return _node_replacement(t, grammar, rng)
    raise ValueError(f"unknown mutation {kind!r}; choose one of {MUTATIONS}")


def mutate(kernel: Kernel, rng: np.random.Generator, cfg: VariationConfig, grammar: Grammar, *,
           theta: tuple[float, ...] | None = None, log_noise: float = math.nan,
           kinds: tuple[str, ...] = MUTATIONS) -> Child:
    """A random mutation (kind drawn anew each attempt) passing the checks, else the parent."""
    values = _values(kernel, theta)
    for attempt in range(1, cfg.rho_max + 1):
        kind = kinds[int(rng.integers(len(kinds)))]
        tokens = mutate_once(kernel, grammar, rng, kind, cfg.uniform_depth)
        if tokens is None:
            continue
        k = _acceptable(tokens, kernel.tokens, cfg, rng)
        if k is None:
            continue
        return Child(k, _inherit(k, values), log_noise, f"mutation:{kind}", attempt)
    return Child(kernel, _inherit(kernel, values), log_noise, "parent", cfg.rho_max)


def random_kernel(grammar: Grammar, rng: np.random.Generator, d_min: int, d_max: int, cfg: VariationConfig,
                  max_tries: int = 100_000) -> tuple[Kernel, int]:
    """A random kernel from Algorithm 2 that passes the PSD check and the size limits.

    Returns the kernel and the number of trees drawn.
    """
    for tries in range(1, max_tries + 1):
        tokens = typed_grow(grammar, rng, d_min, d_max)
        if len(tokens) > cfg.max_nodes or (cfg.require_input and "x" not in tokens):
            continue
        k = Kernel(tokens)
        if k.depth > cfg.o_max:
            continue
        if check_psd(k, rng, cfg.psd).ok:
            return k, tries
    raise RuntimeError(f"no PSD kernel in {max_tries} random trees")  # pragma: no cover
