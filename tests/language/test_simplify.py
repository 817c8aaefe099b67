"""The display form by computer algebra: equal to the tree (1e-10) on random kernels, and actually simpler."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from evocov_core.language.evaluate import covariance
from evocov_core.language.grammar import get_grammar
from evocov_core.language.psd import PSDConfig
from evocov_core.language.simplify import XP, X, display_latex, simplified, slot_symbol
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.searches.variation import VariationConfig, random_kernel


def _matrix(kernel, x, theta):
    f = sp.lambdify([X, XP, *(slot_symbol(s) for s in kernel.slots)], simplified(kernel),
                    modules=[{"σ": lambda u: 1.0 / (1.0 + np.exp(-u))}, "numpy"])
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(f(x[:, None], x[None, :], *np.exp(theta)), dtype=float),
                               (x.size, x.size))


@pytest.mark.parametrize("families", [(), ("changepoint",)])
def test_simplified_form_evaluates_to_the_tree(families):
    """Random trees of the grammar (with and without change points): same matrix as the evaluator, to 1e-10."""
    g = get_grammar(20, families=families)
    cfg = VariationConfig(psd=PSDConfig(w=6), require_input=True)
    compared = 0
    for seed in range(16):
        k, _ = random_kernel(g, np.random.default_rng(seed), 3, 7, cfg)
        rng = np.random.default_rng(100 + seed)
        x = np.sort(rng.uniform(1.0, 2.0, 6))
        theta = rng.uniform(-1.0, 1.0, k.n_params)
        K = covariance(k, x[:, None], theta)
        S = _matrix(k, x, theta)
        ok = np.isfinite(K) & (np.abs(K) < 1e12)
        np.testing.assert_allclose(S[ok], K[ok], rtol=1e-10, atol=1e-10, err_msg=k.prefix)
        compared += ok.all()
    assert compared >= 12


def test_the_issues_examples_read_simpler():
    """Nested reciprocals and powers merge, constants fold, sqrt(exp(a)) becomes exp(a/2)."""
    k = parse_expression("multiply(square(div(power(div(div(multiply(exp(sq_dist(euc(x), hp0)), 2))), hp0))), "
                         "sqrt(exp(multiply(-0.5, sq_dist(euc(x), hp1)))))")
    e = simplified(k)
    th0, th1 = slot_symbol("hp0"), slot_symbol("hp1")
    want = (sp.exp(-2 * (X - XP) ** 2 / th0**2) / 4) ** th0 * sp.exp(-(X - XP) ** 2 / (4 * th1**2))
    assert sp.simplify(e - want) == 0
    assert "sqrt" not in str(e)
    latex = display_latex(k)
    assert r"\theta_{0}" in latex and r"\theta_{1}" in latex and "x'" in latex and "sqrt" not in latex


def test_changepoint_reads_with_the_switch():
    k = parse_expression("changepoint(x, hp(hp0), dot_prod(euc(x), hp1, hp2), hp3, hp4)")
    text = str(simplified(k))
    assert "σ((x - θ3)/θ4)" in text and "σ((x' - θ3)/θ4)" in text


def test_changewindow_reads_with_its_edges_and_evaluates_to_the_tree():
    k = parse_expression("changewindow(x, hp(hp0), dot_prod(euc(x), hp1, hp2), hp3, hp4, hp5)")
    text = str(simplified(k))
    assert "θ3 - θ4/2" in text and "θ3 + θ4/2" in text
    x = np.linspace(1.0, 2.0, 7)
    theta = np.log([0.7, 1.2, 0.4, 1.5, 0.3, 0.05])
    np.testing.assert_allclose(_matrix(k, x, theta), covariance(k, x[:, None], theta), rtol=1e-10, atol=1e-12)
