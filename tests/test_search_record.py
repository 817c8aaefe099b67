"""``quick-fixed`` and ``paper`` searches give the kernels and BICs recorded before issue 56, bit for bit.

The record (``tests/fixtures/search_record.json``) was written by ``tests/search_record_cases.py``
before the front door, the scikit-learn estimator and the split of :mod:`evocov_core.parallel`:
behaviour must not change. BICs are compared as the ``repr`` of the float (every bit), kernels as
their stored prefix form. The record was made with the numpy and scipy it names; another BLAS may
round differently.
"""

from __future__ import annotations

import json

import pytest
from search_record_cases import CASES, FIXTURE, run_case

RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_record_covers_both_presets():
    assert set(RECORD["cases"]) == set(CASES)
    assert {c["preset"] for c in RECORD["cases"].values()} == {"quick-fixed", "paper"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_search_reproduces_the_record(name: str):
    want = RECORD["cases"][name]
    got = run_case(name)
    assert got["best"]["prefix"] == want["best"]["prefix"]
    assert got["best"]["bic"] == want["best"]["bic"]
    assert got["best_bic"] == want["best_bic"]
    assert got["n_evaluations"] == want["n_evaluations"]
    assert got["records"] == want["records"]
    assert got == want
