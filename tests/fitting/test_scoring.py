"""BIC (the paper's eq. 7)."""

from __future__ import annotations

import math

import pytest

from evocov_core.fitting.scoring import PENALTY, bic
from evocov_core.language import library


@pytest.mark.parametrize(
    ("lml", "q", "n", "expected"),
    [
        # −2·lml + q·ln n, worked by hand.
        (-10.0, 3, 100, 20.0 + 3 * 4.605170185988092),
        (0.0, 1, 1, 0.0),  # ln 1 = 0
        (5.0, 0, 50, -10.0),
        (-100.5, 8, 129, 201.0 + 8 * 4.859812404361672),
        (12.25, 2, math.e**2, -24.5 + 2 * 2.0),
    ],
)
def test_bic_formula(lml, q, n, expected):
    """BIC = −2 lml + q log n, on hand-computed numbers."""
    assert bic(lml, q, n) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_bic_orders_models():
    """Higher LML lowers BIC; more hyperparameters raise it (by log n each)."""
    assert bic(-10.0, 3, 100) < bic(-11.0, 3, 100)
    assert bic(-10.0, 4, 100) - bic(-10.0, 3, 100) == pytest.approx(math.log(100))


def test_bic_q_counts_noise():
    """The q of a library kernel includes the noise variance: SE has 2 slots, so q = 3."""
    se = library.squared_exponential()
    assert bic(-10.0, se.q, 100) == pytest.approx(20.0 + 3 * math.log(100))


@pytest.mark.parametrize("lml", [math.inf, -math.inf, math.nan])
def test_bic_non_finite_lml_is_penalty(lml):
    """A fit without a finite LML gets +inf, so it sorts last."""
    assert bic(lml, 3, 100) == PENALTY == math.inf


@pytest.mark.parametrize(("q", "n", "message"), [(3, 0, "n must be positive"), (3, -5, "n must be positive"),
                                                 (-1, 10, "q must be non-negative")])
def test_bic_validation(q, n, message):
    """n < 1 and q < 0 are ValueErrors (checked before the LML)."""
    with pytest.raises(ValueError, match=message):
        bic(-1.0, q, n)
    with pytest.raises(ValueError, match=message):
        bic(math.nan, q, n)
