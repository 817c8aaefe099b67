"""Variation operators (section 4.2): crossover, the four mutations, bloat control, inheritance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.language import library
from evocov_core.language.grammar import check_tree, get_grammar, is_slot, subtree_end, symbol, tree_depth
from evocov_core.language.kernel import Kernel
from evocov_core.language.psd import check_psd
from evocov_core.searches.variation import (
    MUTATIONS,
    Child,
    VariationConfig,
    crossover,
    crossover_once,
    mutate,
    mutate_once,
    random_kernel,
)

N_HYPER = 20
GRAMMAR = get_grammar(N_HYPER)
CFG = VariationConfig(o_max=12, rho_max=60)


def _parents(count, seed0):
    out = []
    for seed in range(seed0, seed0 + count):
        k, _ = random_kernel(GRAMMAR, np.random.default_rng(seed), 2, 6, CFG)
        out.append(k)
    out += [library.squared_exponential(), library.periodic(), library.linear(),
            library.compose(["+", "SE", ["*", "PER", "SE"]])]
    return out


PARENTS = _parents(25, 0)


def _check_child(child: Child, cfg=CFG):
    k = child.kernel
    check_tree(k.tokens, n_hyper=N_HYPER, max_depth=cfg.o_max, max_nodes=cfg.max_nodes)
    assert tree_depth(k.tokens) <= cfg.o_max
    assert len(child.theta) == k.n_params


def _distinct_values(kernel, base):
    """Log values that identify their slot: base + slot number."""
    return tuple(float(base + int(s[2:])) for s in kernel.slots)


# --- random kernels -------------------------------------------------------------------------------


def test_random_kernel_is_checked():
    """random_kernel returns well-typed kernels within the size limits that pass the PSD check."""
    for seed in range(20):
        k, tries = random_kernel(GRAMMAR, np.random.default_rng(seed), 3, 8, CFG)
        assert tries >= 1
        check_tree(k.tokens, n_hyper=N_HYPER, max_depth=CFG.o_max, max_nodes=CFG.max_nodes)
        assert check_psd(k, np.random.default_rng(1000 + seed), CFG.psd).ok
    a = random_kernel(GRAMMAR, np.random.default_rng(5), 3, 8, CFG)
    assert a == random_kernel(GRAMMAR, np.random.default_rng(5), 3, 8, CFG)


# --- crossover ---------------------------------------------------------------------------------


def _subtrees(tokens):
    return {tokens[i:subtree_end(tokens, i)] for i in range(len(tokens)) if symbol(tokens[i]).ret.__name__ == "Cov"}


def test_crossover_children_valid_and_inherit():
    """Crossover children are op(subtree of a, renamed subtree of b), well-typed, PSD-checked, within o_max,
    and each slot's value comes from the right parent's slot."""
    n_psd_fail = 0
    produced = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        a = PARENTS[seed % len(PARENTS)]
        b = PARENTS[(7 * seed + 3) % len(PARENTS)]
        ta, tb = _distinct_values(a, 100), _distinct_values(b, 200)
        child = crossover(a, b, rng, CFG, N_HYPER, theta_a=ta, theta_b=tb, noise_a=-3.0, noise_b=-4.0)
        _check_child(child)
        if child.origin == "parent":
            assert child.kernel == a and child.theta == ta and child.attempts == CFG.rho_max
            continue
        produced += 1
        assert child.origin == "crossover" and 1 <= child.attempts <= CFG.rho_max
        assert child.log_noise == -3.0
        toks = child.kernel.tokens
        assert toks[0] in ("add", "multiply")
        end_a = subtree_end(toks, 1)
        sub_a, sub_b2 = toks[1:end_a], toks[end_a:]
        assert sub_a in _subtrees(a.tokens)
        values = dict(zip(child.kernel.slots, child.theta, strict=True))
        # Slots of the first subtree keep a's names and values.
        for s in {t for t in sub_a if is_slot(t)}:
            assert values[s] == ta[a.slots.index(s)]
        # Slots of the second subtree were renamed to fresh names; their values name b's original slot.
        back = {}
        for s in {t for t in sub_b2 if is_slot(t)} - set(sub_a):
            v = values[s]
            assert 200 <= v < 200 + N_HYPER, (s, v)
            back[s] = f"hp{int(v - 200)}"
        renamed_back = tuple(back.get(t, t) for t in sub_b2)
        assert renamed_back in _subtrees(b.tokens)
        if not check_psd(child.kernel, np.random.default_rng(10_000 + seed), CFG.psd).ok:
            n_psd_fail += 1
    assert produced >= 45
    assert n_psd_fail <= 1  # the check is empirical: re-checking on fresh draws may rarely disagree


def test_crossover_once_renames_second_subtree():
    """crossover_once keeps the first subtree's slots and gives the second subtree slots the first does not use."""
    a, b = library.squared_exponential(), library.squared_exponential()
    for seed in range(20):
        tokens, origin = crossover_once(a, b, np.random.default_rng(seed), N_HYPER)
        check_tree(tokens, n_hyper=N_HYPER)
        end_a = subtree_end(tokens, 1)
        slots_a = {t for t in tokens[1:end_a] if is_slot(t)}
        slots_b = {t for t in tokens[end_a:] if is_slot(t)}
        assert not slots_a & slots_b
        assert all(origin[s][0] == 0 and origin[s][1] == s for s in slots_a)
        assert all(origin[s][0] == 1 for s in slots_b)


def test_crossover_same_seed_same_child():
    """The operator's only randomness is the generator passed in."""
    a, b = PARENTS[0], PARENTS[1]
    ta, tb = _distinct_values(a, 100), _distinct_values(b, 200)
    c1 = crossover(a, b, np.random.default_rng(9), CFG, N_HYPER, theta_a=ta, theta_b=tb, noise_a=0.0)
    c2 = crossover(a, b, np.random.default_rng(9), CFG, N_HYPER, theta_a=ta, theta_b=tb, noise_a=0.0)
    assert c1 == c2


def test_crossover_gives_up_to_parent():
    """When no child can satisfy the depth limit (o_max = 0) the first parent comes back unchanged."""
    a, b = library.squared_exponential(), library.periodic()
    cfg = VariationConfig(o_max=0, rho_max=1)
    ta = (0.5, -0.5)
    child = crossover(a, b, np.random.default_rng(0), cfg, N_HYPER, theta_a=ta, noise_a=-2.0)
    assert child.origin == "parent" and child.kernel == a and child.theta == ta
    assert child.log_noise == -2.0 and child.attempts == 1


# --- mutation ---------------------------------------------------------------------------------------


def test_mutations_valid_and_inherit():
    """Mutated children are well-typed, within o_max, PSD-checked, and keep the parent's value for kept slots."""
    produced = {kind: 0 for kind in MUTATIONS}
    n_psd_fail = 0
    for seed in range(80):
        rng = np.random.default_rng(seed)
        parent = PARENTS[seed % len(PARENTS)]
        theta = _distinct_values(parent, 100)
        child = mutate(parent, rng, CFG, GRAMMAR, theta=theta, log_noise=-1.5)
        _check_child(child)
        assert child.log_noise == -1.5
        if child.origin == "parent":
            continue
        kind = child.origin.split(":", 1)[1]
        produced[kind] += 1
        assert child.kernel != parent
        for s, v in zip(child.kernel.slots, child.theta, strict=True):
            if s in parent.slots:
                assert v == theta[parent.slots.index(s)]
            else:
                assert math.isnan(v)
        if not check_psd(child.kernel, np.random.default_rng(20_000 + seed), CFG.psd).ok:
            n_psd_fail += 1
    assert all(count > 0 for count in produced.values()), produced
    assert n_psd_fail <= 1


@pytest.mark.parametrize("kind", MUTATIONS)
def test_mutate_once_well_typed(kind):
    """Each mutation kind yields a well-typed tree whenever it applies (None otherwise)."""
    applied = 0
    for seed in range(150):
        parent = PARENTS[seed % len(PARENTS)]
        tokens = mutate_once(parent, GRAMMAR, np.random.default_rng(seed), kind)
        if tokens is None:
            continue
        applied += 1
        check_tree(tokens, n_hyper=N_HYPER)
    assert applied > 50


def test_mutation_kinds_have_their_shape():
    """insert wraps a subtree in a nestable operator, shrink replaces a node by one of its arguments,
    node replacement swaps one symbol for another with the same signature."""
    g = GRAMMAR
    for seed in range(100):
        parent = PARENTS[seed % len(PARENTS)]
        rng = np.random.default_rng(seed)
        ins = mutate_once(parent, g, rng, "insert")
        assert len(ins) > len(parent.tokens)
        assert any(parent.tokens[i:subtree_end(parent.tokens, i)] in _all_subtrees(ins)
                   for i in range(len(parent.tokens)))
        shr = mutate_once(parent, g, rng, "shrink")
        if shr is not None:
            assert len(shr) < len(parent.tokens)
            assert tuple(shr) in _shrinks(parent.tokens)
        rep = mutate_once(parent, g, rng, "node_replacement")
        if rep is not None:
            diff = [i for i, (x, y) in enumerate(zip(parent.tokens, rep, strict=True)) if x != y]
            assert len(diff) == 1
            old, new = symbol(parent.tokens[diff[0]]), symbol(rep[diff[0]])
            assert old.args == new.args and old.ret is new.ret


def _all_subtrees(tokens):
    return {tuple(tokens[i:subtree_end(tokens, i)]) for i in range(len(tokens))}


def _shrinks(tokens):
    """Every tree obtained by replacing a node with one of its same-typed arguments."""
    out = set()
    for i, t in enumerate(tokens):
        s = symbol(t)
        pos = i + 1
        for a in s.args:
            end = subtree_end(tokens, pos)
            if a is s.ret:
                out.add((*tokens[:i], *tokens[pos:end], *tokens[subtree_end(tokens, i):]))
            pos = end
    return out


def test_shrink_not_applicable_returns_none():
    """A tree with no node having an argument of its own type cannot shrink."""
    assert mutate_once(Kernel(("hp", "hp0")), GRAMMAR, np.random.default_rng(0), "shrink") is None
    assert mutate_once(Kernel(("sq_dist", "euc", "x", "hp0")), GRAMMAR, np.random.default_rng(0), "shrink") is None


def test_unknown_mutation_kind():
    """An unknown kind is a ValueError."""
    with pytest.raises(ValueError, match="unknown mutation"):
        mutate_once(PARENTS[0], GRAMMAR, np.random.default_rng(0), "swap")


def test_mutate_gives_up_to_parent():
    """rho_max = 1 and an operator that cannot succeed: the parent comes back unchanged, origin 'parent'."""
    parent = Kernel(("hp", "hp0"))
    cfg = VariationConfig(rho_max=1)
    child = mutate(parent, np.random.default_rng(0), cfg, GRAMMAR, theta=(0.25,), log_noise=-2.0, kinds=("shrink",))
    assert child.origin == "parent" and child.kernel == parent
    assert child.theta == (0.25,) and child.log_noise == -2.0 and child.attempts == 1
    # Depth limit that no child can meet: o_max below the parent's own depth + 1 for insert.
    se = library.squared_exponential()
    child = mutate(se, np.random.default_rng(1), VariationConfig(o_max=se.depth, rho_max=1), GRAMMAR,
                   kinds=("insert",))
    assert child.origin == "parent" and child.kernel == se
    assert all(math.isnan(v) for v in child.theta)


def test_mutate_same_seed_same_child():
    """Same generator state, same child."""
    for parent in PARENTS[:10]:
        c1 = mutate(parent, np.random.default_rng(42), CFG, GRAMMAR)
        c2 = mutate(parent, np.random.default_rng(42), CFG, GRAMMAR)
        assert (c1.kernel, c1.origin, c1.attempts) == (c2.kernel, c2.origin, c2.attempts)


def test_children_respect_bloat_limit():
    """With a tight o_max, every child (or returned parent) stays within it."""
    cfg = VariationConfig(o_max=7, rho_max=30)
    shallow = [p for p in PARENTS if p.depth <= 7]
    assert len(shallow) > 5
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a, b = shallow[seed % len(shallow)], shallow[(seed + 1) % len(shallow)]
        for child in (mutate(a, rng, cfg, GRAMMAR), crossover(a, b, rng, cfg, N_HYPER)):
            assert child.kernel.depth <= 7
