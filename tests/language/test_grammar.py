"""The typed grammar (paper Table 2), TypedGrow (Algorithm 2) and the tree checker."""

from __future__ import annotations

import sys
from pathlib import Path

import deap.creator
import numpy as np
import pytest

from evocov_core.language import grammar
from evocov_core.language.grammar import (
    CONSTANTS,
    Cov,
    Hyper,
    InputPair,
    TPair,
    TreeError,
    check_tree,
    get_grammar,
    subtree_end,
    symbol,
    to_primitive_tree,
    tree_depth,
    typed_grow,
)

# Table 2 of the paper, written out by hand: name -> (argument types, output type).
TABLE2_OPERATORS = {
    "euc": ((InputPair,), TPair),
    "spectral": ((InputPair, Hyper), TPair),
    "sq_dist": ((TPair, Hyper), Cov),
    "dot_prod": ((TPair, Hyper, Hyper), Cov),
    "hp": ((Hyper,), Cov),
    "power": ((Cov, Hyper), Cov),
    "add": ((Cov, Cov), Cov),
    "multiply": ((Cov, Cov), Cov),
    "div": ((Cov,), Cov),
    "exp": ((Cov,), Cov),
    "sqrt": ((Cov,), Cov),
    "square": ((Cov,), Cov),
}
TABLE2_CONSTANTS = {"-1": -1.0, "-0.5": -0.5, "0.5": 0.5, "1": 1.0, "2": 2.0, "3": 3.0, "5": 5.0}
NOT_NESTABLE = {"euc", "spectral", "sq_dist", "dot_prod", "hp"}

SE = ("multiply", "square", "hp", "hp0", "exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp1")


# --- the primitive set ------------------------------------------------------------------


def test_pset_primitives_match_table2():
    """Every Table 2 operator is in the DEAP pset with its argument and return types, and nothing else."""
    pset = get_grammar(5).pset
    found = {}
    for ret, prims in pset.primitives.items():
        for p in prims:
            assert p.ret is ret
            found[p.name] = (tuple(p.args), p.ret)
    assert found == TABLE2_OPERATORS


def test_pset_terminals_and_arguments():
    """Constants are Cov terminals; ``x`` is the InputPair argument; slots hp0..hp{t-1} are Hyper arguments."""
    n_hyper = 5
    pset = get_grammar(n_hyper).pset
    assert pset.ret is Cov
    assert pset.ins == [InputPair] + [Hyper] * n_hyper
    assert pset.arguments == ["x"] + [f"hp{k}" for k in range(n_hyper)]
    cov_terms = {t.format() for t in pset.terminals[Cov]}
    assert cov_terms == set(TABLE2_CONSTANTS)
    assert {t.format() for t in pset.terminals[Hyper]} == {f"hp{k}" for k in range(n_hyper)}
    assert {t.format() for t in pset.terminals[InputPair]} == {"x"}
    assert not pset.terminals.get(TPair)
    assert CONSTANTS == TABLE2_CONSTANTS


def test_symbols_kinds_and_values():
    """``symbol`` reports the Table 2 kind (nestable or not), arity and constant value."""
    for name, (args, ret) in TABLE2_OPERATORS.items():
        s = symbol(name)
        assert s.args == args and s.ret is ret and s.arity == len(args)
        assert s.kind == ("not_nestable" if name in NOT_NESTABLE else "nestable")
    for name, value in TABLE2_CONSTANTS.items():
        s = symbol(name)
        assert s.kind == "constant" and s.value == value and s.ret is Cov and s.arity == 0
    assert symbol("x").ret is InputPair and symbol("x").kind == "argument"
    assert symbol("hp17").ret is Hyper and symbol("hp17").kind == "slot"
    assert symbol("add").commutative and symbol("multiply").commutative and not symbol("power").commutative


@pytest.mark.parametrize("bad", ["hp", "hp01", "hp10000", "foo", "eval", "-2", "", "HP0", "x1"])
def test_symbol_rejects_unknown_names(bad):
    """Names outside the grammar (including malformed slot names) raise TreeError."""
    if bad == "hp":  # 'hp' is the operator, a valid symbol, not a slot
        assert symbol(bad).kind == "not_nestable"
        return
    with pytest.raises(TreeError, match="unknown symbol"):
        symbol(bad)


def test_grammar_kind_lists_follow_table2():
    """terminals/not_nestable/nestable partition each type's symbols as in Algorithm 2."""
    g = get_grammar(4)
    assert set(g.terminals(Cov)) == set(TABLE2_CONSTANTS)
    assert set(g.not_nestable(Cov)) == {"sq_dist", "dot_prod", "hp"}
    assert set(g.nestable(Cov)) == {"power", "add", "multiply", "div", "exp", "sqrt", "square"}
    assert set(g.not_nestable(TPair)) == {"euc", "spectral"}
    assert g.terminals(TPair) == () and g.nestable(TPair) == ()
    assert set(g.terminals(Hyper)) == {"hp0", "hp1", "hp2", "hp3"}
    assert g.terminals(InputPair) == ("x",)
    assert len(g.symbols()) == len(TABLE2_OPERATORS) + len(TABLE2_CONSTANTS) + 1 + 4


@pytest.mark.parametrize("n", [0, -1, 10001])
def test_get_grammar_rejects_bad_pool_size(n):
    """The slot pool must hold between 1 and 10000 slots."""
    with pytest.raises(ValueError, match="n_hyper"):
        get_grammar(n)


def test_no_deap_creator_globals():
    """Building a grammar creates no ``deap.creator`` classes, and the module never uses creator."""
    before = set(dir(deap.creator))
    get_grammar(13)  # a pool size not cached by other tests
    grammar._grammar.cache_clear()
    get_grammar(20)
    assert set(dir(deap.creator)) == before
    for path in Path(grammar.__file__).parent.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "creator." not in source and "import creator" not in source, path


# --- TypedGrow ---------------------------------------------------------------------------

DEPTH_GRID = sorted({(0, 0), (5, 15), (15, 15), (0, 30), (0, 1), (1, 1), (2, 2), (3, 3), (4, 4), (1, 6),
                     (2, 4), (3, 8), (4, 5), (6, 6), (0, 4), (3, 3), (8, 10), (10, 10), (12, 20)})


@pytest.mark.parametrize(("d_min", "d_max"), DEPTH_GRID)
def test_typed_grow_never_raises_and_is_well_typed(d_min, d_max):
    """For any 0 <= d_min <= d_max, TypedGrow returns a well-typed Cov tree no deeper than allowed."""
    g = get_grammar(20)
    for seed in range(15):
        tokens = typed_grow(g, np.random.default_rng(seed), d_min, d_max)
        check_tree(tokens, n_hyper=20)
        assert d_min - 2 <= tree_depth(tokens) <= max(d_max - 1, 2)


def test_typed_grow_depth_bounds_follow_algorithm2():
    """Depth bounds implied by Algorithm 2's thresholds (3 and 4).

    Nestable operators need d_max >= 4 at their node, so the last one sits at depth d_max - 4;
    below it a not-nestable Cov subtree adds at most 3 levels (``sq_dist(spectral(x, θ), θ)``,
    depth 2 in DEAP's convention): depth <= max(d_max - 1, 2). While d_min > 3 only nestable
    operators are allowed, then a not-nestable one (never a bare terminal while d_min > 1):
    depth >= d_min - 2.
    """
    g = get_grammar(20)
    depths = {}
    for d_min, d_max in [(0, 0), (4, 4), (6, 6), (8, 10), (15, 15)]:
        ds = [tree_depth(typed_grow(g, np.random.default_rng(s), d_min, d_max)) for s in range(150)]
        assert min(ds) >= d_min - 2 and max(ds) <= max(d_max - 1, 2)
        depths[(d_min, d_max)] = ds
    # The bounds are reached, so they are the right ones.
    assert max(depths[(15, 15)]) == 14 and min(depths[(15, 15)]) == 13
    assert max(depths[(0, 0)]) == 2 and min(depths[(0, 0)]) == 0


# Algorithm 2's candidate sets, written out from the paper (Table 2 kinds per type).
_TERMS = {Cov: set(TABLE2_CONSTANTS), InputPair: {"x"}, TPair: set()}
_NOTNESTS = {Cov: {"sq_dist", "dot_prod", "hp"}, TPair: {"euc", "spectral"}, Hyper: set(), InputPair: set()}
_NESTS = {Cov: {"power", "add", "multiply", "div", "exp", "sqrt", "square"}, TPair: set(), Hyper: set(),
          InputPair: set()}


def _paper_candidates(typ, d_min, d_max, n_hyper):
    terms = _TERMS.get(typ, {f"hp{k}" for k in range(n_hyper)})
    cands = set()
    if d_min <= 3:
        cands |= _NOTNESTS[typ]
        if d_min <= 1:
            cands |= terms
    if d_max >= 4:
        cands |= _NESTS[typ]
    return cands or (terms | _NOTNESTS[typ] | _NESTS[typ])


@pytest.mark.parametrize(("d_min", "d_max"), [(0, 0), (2, 2), (2, 5), (3, 3), (4, 4), (5, 9), (8, 8)])
def test_typed_grow_follows_algorithm2(d_min, d_max):
    """Every node is drawn from Algorithm 2's candidate set for its type and remaining (d_min, d_max)."""
    n_hyper = 4
    g = get_grammar(n_hyper)
    seen = set()
    for seed in range(60):
        tokens = typed_grow(g, np.random.default_rng(seed), d_min, d_max)
        stack = [(Cov, d_min, d_max)]
        for tok in tokens:
            typ, lo, hi = stack.pop()
            assert tok in _paper_candidates(typ, lo, hi, n_hyper), (tok, typ.__name__, lo, hi)
            seen.add(tok)
            stack.extend((a, lo - 1, hi - 1) for a in reversed(symbol(tok).args))
        assert not stack
    assert len(seen) > 5


def test_typed_grow_full_grid_small():
    """Exhaustive small grid of (d_min, d_max): never raises, always well-typed."""
    g = get_grammar(6)
    rng = np.random.default_rng(123)
    for d_max in range(13):
        for d_min in range(d_max + 1):
            for _ in range(3):
                check_tree(typed_grow(g, rng, d_min, d_max), n_hyper=6)


def test_typed_grow_respects_minimum_depth():
    """With d_min >= 4 the root is a nestable operator; with d_max < 4 no nestable operator appears."""
    g = get_grammar(20)
    nestable = set(g.nestable(Cov))
    for seed in range(30):
        assert typed_grow(g, np.random.default_rng(seed), 6, 10)[0] in nestable
        assert not nestable & set(typed_grow(g, np.random.default_rng(seed), 0, 3))


@pytest.mark.parametrize("root", [Cov, TPair, Hyper, InputPair])
def test_typed_grow_other_root_types(root):
    """TypedGrow grows a well-typed tree for every root type."""
    g = get_grammar(5)
    for seed in range(10):
        tokens = typed_grow(g, np.random.default_rng(seed), 0, 6, root=root)
        check_tree(tokens, n_hyper=5, root=root)


def test_typed_grow_same_seed_same_tree():
    """The generator's only randomness is the Generator passed in."""
    g = get_grammar(20)
    a = [typed_grow(g, np.random.default_rng(s), 2, 9) for s in range(20)]
    b = [typed_grow(g, np.random.default_rng(s), 2, 9) for s in range(20)]
    assert a == b
    assert len(set(a)) > 10  # and different seeds give different trees


@pytest.mark.parametrize(("d_min", "d_max"), [(-1, 3), (4, 3)])
def test_typed_grow_rejects_bad_depths(d_min, d_max):
    """d_min < 0 or d_max < d_min is a ValueError."""
    with pytest.raises(ValueError, match="d_min"):
        typed_grow(get_grammar(3), np.random.default_rng(0), d_min, d_max)


class _FirstChoice:
    """A stand-in Generator that always picks the first candidate (a ``power`` chain for Cov)."""

    def integers(self, n):
        return 0


def test_typed_grow_is_iterative():
    """Growing a tree deeper than the recursion limit does not raise RecursionError."""
    g = get_grammar(3)
    depth = sys.getrecursionlimit() + 500
    tokens = typed_grow(g, _FirstChoice(), depth, depth)
    check_tree(tokens)
    assert tokens[0] == g.nestable(Cov)[0]
    assert tree_depth(tokens) >= depth - 2


# --- check_tree ----------------------------------------------------------------------------


def test_check_tree_accepts_well_typed_trees():
    """Library-style trees are accepted."""
    check_tree(SE, n_hyper=2, max_depth=5)
    check_tree(("dot_prod", "spectral", "x", "hp0", "hp1", "hp2"), n_hyper=3)
    check_tree(("-1",))
    check_tree(("power", "hp", "hp0", "hp0"))


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (("sq_dist", "hp", "hp0", "hp1"), "where TPair is expected"),  # Cov where TPair expected
        (("sq_dist", "euc", "x", "1"), "where Hyper is expected"),  # constant where Hyper expected
        (("hp0",), "where Cov is expected"),  # a bare slot is not a kernel
        (("x",), "where Cov is expected"),
        (("euc", "x"), "where Cov is expected"),
        (("power", "hp", "hp0", "2"), "where Hyper is expected"),  # exponent must be a slot
        (("add", "hp", "hp0"), "truncated"),
        (("add",), "truncated"),
        (("sq_dist", "euc", "x"), "truncated"),
        (("hp", "hp0", "1"), "surplus"),
        (("1", "1"), "surplus"),
        (("add", "1", "1", "exp"), "surplus"),
        (("add", "1", "foo"), "unknown symbol"),
        (("exp", "__import__"), "unknown symbol"),
        ((), "empty"),
    ],
)
def test_check_tree_rejects(tokens, message):
    """Wrong types, truncated and surplus tokens, unknown symbols and empty input are refused."""
    with pytest.raises(TreeError, match=message):
        check_tree(tokens, n_hyper=20)


def test_check_tree_slot_pool():
    """A slot index >= n_hyper is refused; without a pool any hp<k> (k < 10000) is accepted."""
    check_tree(("hp", "hp4"), n_hyper=5)
    with pytest.raises(TreeError, match="outside the pool of 5"):
        check_tree(("hp", "hp5"), n_hyper=5)
    check_tree(("hp", "hp9999"))


def test_check_tree_depth_and_size_limits():
    """Depth beyond max_depth and size beyond max_nodes are refused; the limit itself is accepted."""
    tokens = ("exp",) * 7 + ("1",)
    assert tree_depth(tokens) == 7
    check_tree(tokens, max_depth=7)
    with pytest.raises(TreeError, match="deeper than the limit of 6"):
        check_tree(tokens, max_depth=6)
    check_tree(tokens, max_nodes=8)
    with pytest.raises(TreeError, match="more than the limit of 7"):
        check_tree(tokens, max_nodes=7)


def test_check_tree_is_iterative_on_hostile_depth():
    """A 10^5-deep ``exp(`` chain is handled without RecursionError (accepted, truncated or too deep)."""
    n = 100_000
    chain = ("exp",) * n
    check_tree((*chain, "1"))
    with pytest.raises(TreeError, match="truncated"):
        check_tree(chain)
    with pytest.raises(TreeError, match="deeper than the limit of 40"):
        check_tree((*chain, "1"), max_depth=40)
    assert tree_depth((*chain, "1")) == n
    assert subtree_end((*chain, "1"), 0) == n + 1


# --- DEAP interoperation --------------------------------------------------------------------


@pytest.mark.parametrize("families", [(), ("changepoint",), grammar.FAMILIES])
@pytest.mark.parametrize("n_hyper", [1, 7])
def test_pset_is_built_from_the_table(n_hyper, families):
    """DEAP's primitive set says exactly what the symbol table says: names, arities, types, constants."""
    g = get_grammar(n_hyper, families=families)
    table = {s.name: s for s in g.symbols()}
    prims = {p.name: p for ps in g.pset.primitives.values() for p in ps}
    assert set(prims) == {n for n, s in table.items() if s.arity}
    for name, p in prims.items():
        s = symbol(name)
        assert (p.arity, tuple(p.args), p.ret) == (s.arity, s.args, s.ret), name
    terms = {t.format(): t for ts in g.pset.terminals.values() for t in ts}
    assert set(terms) == {n for n, s in table.items() if not s.arity}
    for name, t in terms.items():
        s = symbol(name)
        assert t.ret is s.ret, name
        if s.kind == "constant":
            assert g.pset.context[name] == s.value  # DEAP keeps a named terminal's value there
    # x and the slots are the set's arguments, in slot order, with their types.
    assert g.pset.arguments == ["x", *g.slots]
    assert g.pset.ins == [symbol(a).ret for a in g.pset.arguments]
    assert g.pset.ret is Cov
    assert set(g.pset.mapping) == set(table)


@pytest.mark.parametrize("families", [(), ("changepoint",), grammar.FAMILIES])
def test_to_primitive_tree_round_trip(families):
    """Random trees convert to DEAP PrimitiveTrees with the same tokens, height and text."""
    g = get_grammar(20, families=families)
    for seed in range(40):
        tokens = typed_grow(g, np.random.default_rng(seed), 1, 8)
        tree = to_primitive_tree(tokens, g)
        assert tuple(node.format() if node.arity == 0 else node.name for node in tree) == tokens
        assert tree.height == tree_depth(tokens)
        assert len(tree) == len(tokens)
        # DEAP's searchSubtree and ours agree on every node.
        for i in range(len(tokens)):
            assert tree.searchSubtree(i).stop == subtree_end(tokens, i)


def test_to_primitive_tree_rejects_foreign_slot():
    """A slot outside the grammar's pool is a TreeError, not a KeyError."""
    with pytest.raises(TreeError, match="not in this grammar"):
        to_primitive_tree(("hp", "hp7"), get_grammar(3))


def test_tree_depth_convention():
    """A lone terminal has depth 0, as in DEAP."""
    assert tree_depth(("1",)) == 0
    assert tree_depth(("hp", "hp0")) == 1
    assert tree_depth(SE) == 5
