"""``quick-fixed`` and ``paper`` searches give the kernels and BICs of the record, bit for bit, on any
x86-64-v3 machine.

The record (``tests/fixtures/search_record.json``, written by ``tests/searches/search_record_cases.py``) holds
what fixed-count searches returned and every kernel they fitted: behaviour must not change unless it is
meant to. The cases run in a child process with numpy's and OpenBLAS's code paths pinned
(``search_record_cases.PINNED``), so that an AMD and an Intel processor compute the same last bits; the
module docstring there says why. BICs are compared as the ``repr`` of the float (every bit), kernels as
their stored prefix form.

The searches a user runs are not pinned: there, the same seed gives the same result on the same machine
and libraries (``docs/design.md``, "Same seed, same result"). The last test checks what holds across
machines without the pin: the first generation's kernels are drawn the same.
"""

from __future__ import annotations

import json

import pytest
from search_record_cases import CASES, FIXTURE, PINNED, machine_supports_pin, pinned_run, run_case

RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pinned() -> dict:
    why = machine_supports_pin()
    if why:
        pytest.skip(why)
    return pinned_run()


def test_the_record_covers_both_presets():
    assert set(RECORD["cases"]) == set(CASES)
    assert {c["preset"] for c in RECORD["cases"].values()} == {"quick-fixed", "paper"}
    assert RECORD["pinned"] == PINNED


def test_the_child_ran_in_the_recorded_arithmetic(pinned: dict):
    got, want = pinned["arithmetic"], RECORD["arithmetic"]
    assert got == want, (
        f"the record was made with {want}, this run used {got}: install requirements-dev.txt's pinned "
        "versions, or write the record again with the new ones (tests/searches/search_record_cases.py) and say so")
    # The pin took: every OpenBLAS runs its Haswell kernels, numpy no loop beyond x86-64-v3.
    assert got["blas"] and all(b["kernels"] == PINNED["OPENBLAS_CORETYPE"] for b in got["blas"])
    assert "X86_V4" not in got["numpy_simd"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_search_reproduces_the_record(pinned: dict, name: str):
    want, got = RECORD["cases"][name], pinned["cases"][name]
    assert got["best"]["prefix"] == want["best"]["prefix"]
    assert got["best"]["bic"] == want["best"]["bic"]
    assert got["best_bic"] == want["best_bic"]
    assert got["n_evaluations"] == want["n_evaluations"]
    assert got["records"] == want["records"]
    assert got == want


def test_the_first_generation_is_drawn_the_same_in_any_arithmetic():
    """Unpinned, in this process: the random trees of generation 0 do not depend on rounding (the
    positive-definiteness check that may reject one is far from its threshold), so they match the
    record on every machine; their fits may not (a last bit can send an optimiser to another optimum)."""
    name = "quick-fixed/evocov"
    population = CASES[name][3]["population"]
    got = [expr for expr, _ in run_case(name)["records"][:population]]
    assert got == [expr for expr, _ in RECORD["cases"][name]["records"][:population]]
