"""Every printed form of a corpus of kernels is byte-identical to what the code wrote before the
printers read the grammar's symbol records (``tests/fixtures/kernel_forms.json``)."""

from __future__ import annotations

import json

import pytest
from kernel_forms_corpus import FIXTURE, forms

ROWS = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_corpus_covers_every_operator():
    from evocov_core.language.grammar import get_grammar

    used = {t for r in ROWS for t in r["tokens"]}
    ops = {s.name for s in get_grammar(20, families=("changepoint", "changewindow")).symbols() if s.arity}
    assert ops <= used
    assert len(ROWS) > 300


@pytest.mark.parametrize("row", ROWS, ids=[r["origin"] for r in ROWS])
def test_forms_are_unchanged(row):
    expected = {k: v for k, v in row.items() if k not in ("origin", "tokens")}
    assert forms(tuple(row["tokens"]), simplify="display_latex" in row) == expected


def test_every_operator_record_says_how_it_is_written():
    """Each Cov operator has its infix, LaTeX and SymPy rules; each Hyper argument a role."""
    from evocov_core.language.grammar import OPERATORS, Cov, Hyper, Node

    for s in OPERATORS:
        if s.ret is Cov:
            assert s.infix and s.latex and s.sympy, s.name
        hypers = [k for k, a in enumerate(s.args) if a is Hyper]
        if hypers:
            assert s.roles is not None, s.name
            children: tuple[Node, ...] = tuple(("euc", (("x", ()),)) if a is not Hyper else ("hp0", ())
                                               for a in s.args)
            roles = s.roles(children)
            assert len(roles) == s.arity
            assert all(roles[k] for k in hypers), s.name
            assert all(roles[k] is None for k in range(s.arity) if k not in hypers), s.name
