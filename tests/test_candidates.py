"""The model choice's places: distinct models, the seeds' places (evocov_core.search.candidates)."""

from __future__ import annotations

import math

from evocov_core.fitting.optimize import FitResult, FitStatus
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.search.candidates import LML_TIE, Candidates, choice_places


def _fit(expr: str, lml: float, n: int = 100) -> FitResult:
    k: Kernel = parse_expression(expr)
    q = k.q
    return FitResult(k, tuple(0.0 for _ in range(k.n_params)), -3.0, 0.0, FitStatus.OK, "", "lml", lml, lml,
                     -2.0 * lml + q * math.log(n), q, n, 10, 0.1)


def test_a_fit_as_likely_as_a_lower_bic_one_loses_its_place() -> None:
    """Within LML_TIE of a kept fit's LML a fit is the same model (kept: the lower BIC); further apart, two."""
    fits = [(10.0, -3.0, False), (12.0, -3.0 + 0.5 * LML_TIE, False), (13.0, -3.0 - 2 * LML_TIE, False),
            (14.0, -4.0, False)]
    assert choice_places(fits, 3) == [0, 2, 3]
    assert choice_places(fits, 2) == [0, 2]
    assert choice_places(fits, 10) == [0, 2, 3]  # fewer than k when there are not enough
    # In BIC order whatever the input order: the tie goes to the lower BIC.
    assert choice_places(fits[::-1], 2) == [3, 1]


def test_a_seeds_model_keeps_its_place_through_a_lower_bic_double() -> None:
    """A seed tied with a lower-BIC searched fit gives that fit its standing: it is offered as a seed."""
    searched = [(float(b), -float(b), False) for b in (1, 2, 3, 4)]
    seeds = [(20.0, -3.0, True), (21.0, -21.0, True), (22.0, -22.0, True), (23.0, -23.0, True)]
    # Three seed places (five less MIN_SEARCHED): the seed's double (searched fit 2, below the two
    # searched places) and seeds 5, 6; the searched places go to fits 0 and 1.
    assert choice_places(searched + seeds, 5) == [0, 1, 2, 5, 6]
    # Without the tie the seed is offered itself.
    untied = [*searched, (20.0, -20.0, True), *seeds[1:]]
    assert choice_places(untied, 5) == [0, 1, 4, 5, 6]


def test_top_offers_one_place_per_model() -> None:
    """``Candidates.top`` drops a rewriting of a kernel that reaches the same likelihood."""
    c = Candidates()
    se = _fit("sq_dist(euc(x), hp0)", -50.0)
    same = _fit("multiply(1, sq_dist(euc(x), hp0))", -50.0 - LML_TIE / 10)
    other = _fit("dot_prod(euc(x), hp0, hp1)", -60.0)
    for key, f in (("a", se), ("b", same), ("c", other)):
        c.note(key, f, "random")
    assert c.top(2) == (se, other)
    assert len(c) == 3  # all are kept; the places are what changes
