"""Every printed form of a corpus of kernels is byte-identical to what the code wrote before the
printers read the grammar's symbol records (``tests/fixtures/kernel_forms.json``)."""

from __future__ import annotations

import json

import pytest
from kernel_forms_corpus import FIXTURE, forms

ROWS = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_corpus_covers_every_operator():
    from evocov_core.grammar import get_grammar

    used = {t for r in ROWS for t in r["tokens"]}
    ops = {s.name for s in get_grammar(20, changepoints=True, changewindows=True).symbols() if s.arity}
    assert ops <= used
    assert len(ROWS) > 300


@pytest.mark.parametrize("row", ROWS, ids=[r["origin"] for r in ROWS])
def test_forms_are_unchanged(row):
    expected = {k: v for k, v in row.items() if k not in ("origin", "tokens")}
    assert forms(tuple(row["tokens"]), simplify="display_latex" in row) == expected
