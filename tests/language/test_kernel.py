"""The Kernel value: slots and q, canonical form, readable forms."""

from __future__ import annotations

import numpy as np
import pytest

from evocov_core.language import library
from evocov_core.language.evaluate import covariance
from evocov_core.language.grammar import TreeError, get_grammar, is_slot, slot_index, typed_grow
from evocov_core.language.kernel import Kernel

SE = library.squared_exponential()


def _nest(tokens):
    """Prefix tokens -> (token, children) tuples (test-side reference, recursive: small trees only)."""
    from evocov_core.language.grammar import arity

    pos = 0

    def build():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        return tok, tuple(build() for _ in range(arity(tok)))

    node = build()
    assert pos == len(tokens)
    return node


def _flat(node):
    tok, children = node
    out = [tok]
    for c in children:
        out.extend(_flat(c))
    return out


def _scramble(node, rng):
    """Randomly commute add/multiply operands and re-bracket associative chains."""
    tok, children = node
    children = tuple(_scramble(c, rng) for c in children)
    if tok in ("add", "multiply"):
        if rng.random() < 0.5:
            children = (children[1], children[0])
        a, b = children
        if a[0] == tok and rng.random() < 0.5:  # (x ∘ y) ∘ b  ->  x ∘ (y ∘ b)
            x, y = a[1]
            children = (x, (tok, (y, b)))
    return tok, children


def _rename(tokens, perm):
    return tuple(f"hp{perm[slot_index(t)]}" if is_slot(t) else t for t in tokens)


# --- structure -------------------------------------------------------------------------------


def test_q_counts_distinct_slots_plus_noise():
    """q = distinct slots + 1; a slot used twice counts once; slots are sorted by number."""
    assert SE.q == 3 and SE.n_params == 2
    k = Kernel(("add", "hp", "hp7", "multiply", "hp", "hp7", "sq_dist", "euc", "x", "hp2"))
    assert k.slots == ("hp2", "hp7")
    assert k.q == 3
    assert Kernel(("add", "1", "-1")).q == 1
    assert Kernel(("hp", "hp12")).slots == ("hp12",)
    # Numeric, not lexicographic, order: hp10 after hp9.
    assert Kernel(("add", "hp", "hp10", "hp", "hp9")).slots == ("hp9", "hp10")


def test_rational_quadratic_shares_alpha():
    """RQ uses its α slot twice (inside and as the exponent): three distinct slots, q = 4."""
    rq = library.rational_quadratic()
    assert sum(t == "hp2" for t in rq.tokens) == 2
    assert rq.q == 4


def test_from_tokens_validates():
    """from_tokens refuses ill-typed input; the plain constructor trusts its caller."""
    assert Kernel.from_tokens(list(SE.tokens)) == SE
    with pytest.raises(TreeError):
        Kernel.from_tokens(("sq_dist", "hp", "hp0", "hp1"))
    with pytest.raises(TreeError, match="outside the pool"):
        Kernel.from_tokens(("hp", "hp20"))
    with pytest.raises(TreeError, match="deeper"):
        Kernel.from_tokens(SE.tokens, max_depth=3)


def test_depth_size_subtree_stationary():
    """depth, size, subtree and is_stationary follow the token layout."""
    assert SE.depth == 5 and SE.size == len(SE.tokens)
    assert SE.subtree(1) == ("square", "hp", "hp0")
    assert SE.subtree(4) == ("exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp1")
    assert SE.is_stationary and library.periodic().is_stationary
    assert not library.linear().is_stationary


def test_equality_is_structural():
    """== and hash compare exact tokens, not canonical forms."""
    a = Kernel(("add", "hp", "hp0", "hp", "hp1"))
    b = Kernel(("add", "hp", "hp1", "hp", "hp0"))
    assert a != b and a.canonical == b.canonical
    assert a == Kernel(tuple(a.tokens)) and hash(a) == hash(Kernel(tuple(a.tokens)))


def test_prefix_form():
    """The prefix form is the function-call text of the tokens."""
    assert SE.prefix == "multiply(square(hp(hp0)), exp(multiply(-0.5, sq_dist(euc(x), hp1))))"
    assert str(Kernel(("-1",))) == "-1"


# --- canonical form ------------------------------------------------------------------------


A = ("sq_dist", "euc", "x", "hp0")
B = ("hp", "hp1")
C = ("exp", "dot_prod", "spectral", "x", "hp2", "hp3", "hp4")


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_canonical_commutativity(op):
    """op(a, b) and op(b, a) have the same canonical string."""
    assert Kernel((op, *A, *B)).canonical == Kernel((op, *B, *A)).canonical


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_canonical_associativity(op):
    """op(op(a, b), c) and op(a, op(b, c)) (and every permutation) have one canonical string."""
    forms = [
        (op, op, *A, *B, *C),
        (op, *A, op, *B, *C),
        (op, op, *C, *A, *B),
        (op, *B, op, *C, *A),
        (op, op, *B, *C, *A),
    ]
    assert len({Kernel(f).canonical for f in forms}) == 1


def test_canonical_slot_renaming():
    """Renaming slots (consistently) does not change the canonical string; renumbering is by first use."""
    k1 = Kernel(("add", "hp", "hp5", "sq_dist", "euc", "x", "hp11"))
    k2 = Kernel(("add", "hp", "hp0", "sq_dist", "euc", "x", "hp3"))
    assert k1.canonical == k2.canonical
    assert set(k1.canonical_kernel.slots) == {"hp0", "hp1"}


def test_canonical_respects_sharing():
    """A shared slot and two distinct slots are different kernels."""
    shared = Kernel(("add", "hp", "hp0", "sq_dist", "euc", "x", "hp0"))
    distinct = Kernel(("add", "hp", "hp0", "sq_dist", "euc", "x", "hp1"))
    assert shared.canonical != distinct.canonical


def test_canonical_distinguishes_different_kernels():
    """Different kernels (library kernels, operator swaps, non-commutative orders) get different strings."""
    kernels = [f() for f in library.WELL_KNOWN.values()]
    kernels += [
        Kernel(("add", *A, *B)),
        Kernel(("multiply", *A, *B)),
        Kernel(("exp", *A)),
        Kernel(("sqrt", *A)),
        Kernel(("power", *A, "hp1")),
        Kernel(("power", *A, "hp0")),  # exponent shares the lengthscale slot
        Kernel(("dot_prod", "euc", "x", "hp0", "hp1")),
        Kernel(("dot_prod", "euc", "x", "hp0", "hp0")),
        Kernel(("add", "add", *A, *B, *B)),
        Kernel(("add", *A, "2")),
        Kernel(("add", *A, "3")),
    ]
    canon = [k.canonical for k in kernels]
    # gamma-E/E and E/M12 are the same builder; count distinct structures instead.
    assert len(set(canon)) == len({k.tokens for k in kernels})


def test_canonical_invariant_under_random_rewrites():
    """Random commutations, re-bracketing and slot permutations of random trees keep the canonical string."""
    g = get_grammar(20)
    for seed in range(300):
        rng = np.random.default_rng(seed)
        tokens = typed_grow(g, rng, 2, 8)
        rewritten = _rename(tuple(_flat(_scramble(_nest(tokens), rng))), rng.permutation(20))
        assert Kernel(rewritten).canonical == Kernel(tokens).canonical, (tokens, rewritten)


def test_canonical_tied_operands_sharing_a_slot():
    """add(hp(a), hp(b)) * sq_dist(.., a) equals add(hp(b), hp(a)) * sq_dist(.., a): one canonical string."""
    k1 = Kernel(("multiply", "add", "hp", "hp3", "hp", "hp4", "sq_dist", "euc", "x", "hp3"))
    k2 = Kernel(("multiply", "add", "hp", "hp4", "hp", "hp3", "sq_dist", "euc", "x", "hp3"))
    assert k1.canonical == k2.canonical


def test_canonical_is_idempotent_and_well_typed():
    """The canonical kernel is well-typed, its own canonical form, and uses slots hp0..hp{p-1}."""
    g = get_grammar(20)
    for seed in range(100):
        k = Kernel(typed_grow(g, np.random.default_rng(seed), 1, 8))
        ck = k.canonical_kernel
        Kernel.from_tokens(ck.tokens)
        assert ck.canonical == k.canonical == ck.prefix
        assert ck.slots == tuple(f"hp{i}" for i in range(k.n_params))
        assert sorted(ck.tokens) == sorted(_rename_via(k.tokens, k.canonical_slot_map))


def _rename_via(tokens, mapping):
    return tuple(mapping.get(t, t) for t in tokens)


def _canonical_theta(k, theta):
    ck, m = k.canonical_kernel, k.canonical_slot_map
    out = np.empty(len(theta))
    for s, v in zip(k.slots, theta, strict=True):
        out[ck.slots.index(m[s])] = v
    return out


def test_canonical_kernel_same_covariance():
    """The canonical kernel, with theta mapped through canonical_slot_map, gives the same K."""
    g = get_grammar(20)
    checked = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        k = Kernel(typed_grow(g, rng, 1, 8))
        X = rng.uniform(0.8, 2.4, size=(6, 2))
        theta = rng.uniform(-1, 1, size=k.n_params)
        assert set(k.canonical_slot_map) == set(k.slots)
        assert len(set(k.canonical_slot_map.values())) == k.n_params
        K1 = covariance(k, X, theta)
        K2 = covariance(k.canonical_kernel, X, _canonical_theta(k, theta))
        if not np.all(np.isfinite(K1)):
            continue
        checked += 1
        np.testing.assert_allclose(K2, K1, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(K1).max()))
    assert checked > 100


def test_canonical_library_composition_same_covariance():
    """A GPSS composition written in two orders has one canonical form and one covariance."""
    k1 = library.compose(["+", "SE", ["*", "PER", "LIN"]])
    k2 = library.compose(["+", ["*", "LIN", "PER"], "SE"])
    assert k1.canonical == k2.canonical
    rng = np.random.default_rng(5)
    X = rng.uniform(1, 2, size=(7, 1))
    t1 = rng.uniform(-1, 1, size=k1.n_params)
    # Same canonical form: theta of k2 follows from both canonical maps.
    t_canon = _canonical_theta(k1, t1)
    inv2 = {v: s for s, v in k2.canonical_slot_map.items()}
    t2 = np.array([t_canon[k1.canonical_kernel.slots.index(c)] for c in
                   [k2.canonical_slot_map[s] for s in k2.slots]])
    assert set(inv2) == set(k1.canonical_kernel.slots)
    np.testing.assert_allclose(covariance(k2, X, t2), covariance(k1, X, t1), rtol=1e-12)


# --- readable forms ---------------------------------------------------------------------------

EVERY_SYMBOL = [
    library.squared_exponential(),
    library.periodic(),
    library.linear(),
    library.rational_quadratic(),
    library.matern52(),
    library.gamma_exponential(),
    library.white_noise(),
    Kernel(("dot_prod", "spectral", "x", "hp0", "hp1", "hp2")),
    Kernel(("sqrt", "add", "-1", "div", "power", "hp", "hp3", "hp4")),
    Kernel(("multiply", "-0.5", "add", "0.5", "multiply", "2", "add", "3", "5")),
    Kernel(("square", "add", "exp", "hp", "hp0", "1")),
    Kernel(("div", "multiply", "hp", "hp0", "hp", "hp1")),
    Kernel(("power", "add", "hp", "hp0", "hp", "hp1", "hp2")),
]


def test_every_symbol_is_covered():
    """The rendering cases below use every Table 2 symbol."""
    used = {t for k in EVERY_SYMBOL for t in k.tokens if not is_slot(t)}
    g = get_grammar(20)
    names = {s.name for s in g.symbols() if s.kind != "slot"}
    assert names <= used


@pytest.mark.parametrize("k", EVERY_SYMBOL, ids=lambda k: k.prefix[:40])
def test_infix_and_latex_render(k):
    """infix and latex render every symbol, mention every slot, and balance their brackets."""
    infix, latex = k.infix, k.latex
    assert infix and latex
    for s in k.slots:
        assert s in infix
        assert rf"\theta_{{{slot_index(s)}}}" in latex
    assert infix.count("(") == infix.count(")")
    assert latex.count("{") == latex.count("}")
    assert latex.count(r"\left(") == latex.count(r"\right)")


def test_infix_examples():
    """Hand-derived infix forms of SE, a sum with a negative constant and a quotient."""
    assert SE.infix == "hp0^2*exp(-0.5*|x-x'|^2/hp1^2)"
    assert Kernel(("add", "hp", "hp0", "-1")).infix == "hp0 + -1"
    assert Kernel(("multiply", "add", "hp", "hp0", "1", "div", "hp", "hp1")).infix == "(hp0 + 1)*1/hp1"
    assert library.periodic().infix == "hp0^2*exp(-0.5*4*sin^2(hp2*(x-x')/2)/hp1^2)"
    assert library.linear().infix == "(x-hp0)*(x'-hp0)/hp1"


def test_readable_forms_fold_constants():
    """Constant arithmetic is folded for display only; the tree and its canonical form are kept."""
    se = library.squared_exponential()
    k = Kernel(("add", "1", "add", "1", "multiply", "multiply", "add", "2", "1", "1", *se.tokens))
    assert k.infix == "2 + 3*" + se.infix
    assert k.tokens[:2] == ("add", "1") and k.canonical != Kernel(("add", "2", *se.tokens)).canonical
    assert Kernel(("multiply", "1", *se.tokens)).infix == se.infix
    assert Kernel(("add", "div", "5", *se.tokens)).infix == "0.2 + " + se.infix
    assert Kernel(("add", "exp", "5", "sqrt", "-1")).infix == "148.413 + sqrt(-1)"  # not a number: kept
    assert r"\theta" in k.latex and "3" in k.latex and "2 +" in k.latex


@pytest.mark.parametrize("seed", range(5))
def test_infix_latex_random_trees(seed):
    """Random well-typed trees render without error."""
    g = get_grammar(20)
    for s in range(seed * 40, seed * 40 + 40):
        k = Kernel(typed_grow(g, np.random.default_rng(s), 0, 9))
        assert isinstance(k.infix, str) and isinstance(k.latex, str)
        assert not any(t for t in k.slots if t not in k.infix)
