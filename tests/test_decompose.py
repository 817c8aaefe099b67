"""Additive decomposition of a fitted kernel: terms, component posteriors, behaviour read from the kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.decompose import additive_terms, decompose, describe
from evocov_core.gp import posterior
from evocov_core.kernel_file import parse_expression
from evocov_core.library import compose


@pytest.fixture(scope="module")
def fitted():
    """SE + PER×SE + LIN with known values on a monthly-like series in model units (x in [1, 2])."""
    k = compose(["+", "SE", ["+", ["*", "PER", "SE"], "LIN"]])
    rng = np.random.default_rng(0)
    X = np.linspace(1.0, 2.0, 120)[:, None]
    y = np.sin(2 * np.pi * 10 * X[:, 0]) + 2 * (X[:, 0] - 1.5) + 0.1 * rng.standard_normal(120)
    theta = np.zeros(k.n_params)
    roles = {s: i for i, s in enumerate(k.slots)}
    theta[:] = np.log(0.5)
    return k, theta, math.log(0.01), X, (y - y.mean()) / y.std(), roles


def test_terms_split_sums_and_distribute_products():
    k = compose(["+", "SE", ["+", ["*", "PER", "SE"], "LIN"]])
    terms = additive_terms(k)
    assert len(terms) == 3
    assert set().union(*(set(t.slots) for t in terms)) == set(k.slots)
    assert sum("dot_prod" in t.tokens for t in terms) == 1  # LIN keeps its offset θ²
    # (a + b) × c -> a×c + b×c; constants gathered in one term, last (no linear term to take them)
    k2 = parse_expression("multiply(add(hp(hp0), sq_dist(euc(x), hp1)), add(exp(sq_dist(euc(x), hp2)), 2))")
    t2 = additive_terms(k2)
    assert len(t2) == 4 and "x" not in t2[-1].tokens
    # A change point or exp of a sum stays whole
    k3 = parse_expression("exp(add(sq_dist(euc(x), hp0), sq_dist(euc(x), hp1)))")
    assert additive_terms(k3) == [k3]


def test_components_add_up_to_the_full_posterior_mean(fitted):
    k, theta, log_noise, X, y, _ = fitted
    Xs = np.linspace(1.0, 2.3, 80)[:, None]
    comps, noise_sd = decompose(k, theta, log_noise, X, y, Xs)
    assert len(comps) == 3
    full = posterior(k, X, y, theta, log_noise, Xs, jitter=0.0).mean
    np.testing.assert_allclose(sum(c.mean for c in comps), full, rtol=0, atol=1e-8)
    assert noise_sd == pytest.approx(0.1)
    assert [c.explained for c in comps] == sorted((c.explained for c in comps), reverse=True)
    assert all(np.all(c.sd >= 0) for c in comps)


def test_period_and_lengthscale_read_from_the_kernel_in_x_units():
    """PER's period = 2π/ω and SE's lengthscale, read numerically, reported in x units (years)."""
    per = compose("PER")  # amplitude, lengthscale, frequency
    omega, ell = 2 * math.pi / 0.1, 1.2  # period 0.1 model units, very smooth shape
    th = {"hp0": 0.0, "hp1": math.log(ell), "hp2": math.log(omega)}
    b = describe(per, th, 1.0, 2.0, scale=10.0)  # 10 years per model unit
    assert b.stationary and b.period == pytest.approx(1.0, rel=0.01)  # 0.1 × 10 = 1 year
    se = compose("SE")
    b2 = describe(se, {"hp0": 0.0, "hp1": math.log(0.3)}, 1.0, 2.0, scale=10.0)
    assert b2.period is None and b2.decorrelation == pytest.approx(3.0, rel=0.01)  # lengthscale 0.3 → 3 years
    comps, _ = decompose(se, np.array([0.0, math.log(0.3)]), math.log(0.1), np.linspace(1, 2, 30)[:, None],
                         np.sin(np.linspace(0, 3, 30)), np.linspace(1, 2, 5)[:, None], x_scale=10.0, x_unit="years")
    assert "3.0 years" in comps[0].sentence
    lin = compose("LIN")
    b3 = describe(lin, {s: 0.0 for s in lin.slots}, 1.0, 2.0, scale=10.0)
    assert not b3.stationary and b3.growth > 1.0


def test_a_change_point_is_located_in_x_units_and_a_trend_direction_is_named():
    """A level drop at x = 1974.2 (data units): the CP component says where; a rising line says rising."""
    x = 1962 + np.arange(160) / 12.0
    lo, span = x.min(), x.max() - x.min()
    Xm = (1.0 + (x - lo) / span)[:, None]
    k = parse_expression("changepoint(x, hp(hp0), hp(hp1), hp2, hp3)")  # two levels, switch at θ2
    loc = 1.0 + (1974.2 - lo) / span
    theta = np.log([1.0, 1.0, loc, 0.002])
    y = np.where(x < 1974.2, 1.0, -1.0)
    comps, _ = decompose(k, theta, math.log(0.01), Xm, y, Xm, x_scale=span, x_offset=lo, x_unit="years")
    assert "with a change around 1974.2" in comps[0].sentence and "falling" in comps[0].sentence
    lin = compose("LIN")
    comps, _ = decompose(lin, np.zeros(lin.n_params), math.log(0.01), Xm, (Xm[:, 0] - 1.5) * 2, Xm,
                         x_scale=span, x_offset=lo, x_unit="years")
    assert comps[0].sentence.startswith("a rising")
