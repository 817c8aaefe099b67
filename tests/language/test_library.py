"""Table 1 kernels written in the grammar equal their scikit-learn (or numpy) counterparts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from evocov_core.language import library
from evocov_core.language.evaluate import covariance, covariance_diag
from evocov_core.language.grammar import check_tree
from evocov_core.language.kernel import Kernel

TOL = 1e-10


def _data(d, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.5, (7, d)), rng.uniform(0.0, 3.0, (5, d)), rng


def _assert_same(ours_k, theta, sk, X, Y):
    """K(X, X), K(X, Y) and diag K agree with the reference kernel to 1e-10."""
    np.testing.assert_allclose(covariance(ours_k, X, theta), sk(X), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(covariance(ours_k, X, theta, Y), sk(X, Y), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(covariance_diag(ours_k, X, theta), sk.diag(X), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_squared_exponential(d, seed):
    """SE = ConstantKernel(θ0²) · RBF(θl)."""
    X, Y, rng = _data(d, seed)
    a, ell = rng.uniform(0.3, 3.0, 2)
    _assert_same(library.squared_exponential(), np.log([a, ell]), ConstantKernel(a**2) * RBF(ell), X, Y)


@pytest.mark.parametrize(
    ("name", "nu"), [("E", 0.5), ("M12", 0.5), ("M32", 1.5), ("M52", 2.5)]
)
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_matern_family(name, nu, d, seed):
    """E/M12, M32 and M52 = ConstantKernel(θ0²) · Matern(θl, ν)."""
    X, Y, rng = _data(d, 10 + seed)
    a, ell = rng.uniform(0.3, 3.0, 2)
    k = library.WELL_KNOWN[name]()
    _assert_same(k, np.log([a, ell]), ConstantKernel(a**2) * Matern(ell, nu=nu), X, Y)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_rational_quadratic(d, seed):
    """RQ = ConstantKernel(θ0²) · RationalQuadratic(θl, α); slots are (amplitude, lengthscale, α)."""
    X, Y, rng = _data(d, 20 + seed)
    a, ell, alpha = rng.uniform(0.3, 3.0, 3)
    k = library.rational_quadratic()
    assert k.slots == ("hp0", "hp1", "hp2")
    sk = ConstantKernel(a**2) * RationalQuadratic(length_scale=ell, alpha=alpha)
    _assert_same(k, np.log([a, ell, alpha]), sk, X, Y)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_periodic_1d(seed):
    """PER = ConstantKernel(θ0²) · ExpSineSquared(θl, periodicity = 2π/ω) in one dimension."""
    X, Y, rng = _data(1, 30 + seed)
    a, ell = rng.uniform(0.3, 3.0, 2)
    omega = rng.uniform(1.0, 12.0)
    k = library.periodic()
    sk = ConstantKernel(a**2) * ExpSineSquared(length_scale=ell, periodicity=2 * np.pi / omega)
    _assert_same(k, np.log([a, ell, omega]), sk, X, Y)


def test_periodic_2d_is_product_over_dimensions():
    """For d > 1 the spectral features sum over dimensions: PER is a product of 1-D periodic kernels.

    (The library docstring's ||x − x'|| form is the d = 1 case; sklearn's ExpSineSquared uses the
    Euclidean norm, so the two differ for d > 1.)
    """
    X, Y, _rng = _data(2, 40)
    a, ell, omega = 1.3, 0.8, 5.0
    per1 = ConstantKernel(1.0) * ExpSineSquared(length_scale=ell, periodicity=2 * np.pi / omega)
    ref = a**2 * per1(X[:, :1], Y[:, :1]) * per1(X[:, 1:], Y[:, 1:])
    np.testing.assert_allclose(covariance(library.periodic(), X, np.log([a, ell, omega]), Y), ref, rtol=TOL)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_linear(d, seed):
    """LIN = DotProduct(σ0 = 0) applied to X − θs, divided by θl."""
    X, Y, rng = _data(d, 50 + seed)
    shift, scale = rng.uniform(0.2, 2.0, 2)
    dot = DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    k = library.linear()
    theta = np.log([shift, scale])
    np.testing.assert_allclose(covariance(k, X, theta), dot(X - shift) / scale, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(covariance(k, X, theta, Y), dot(X - shift, Y - shift) / scale, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(covariance_diag(k, X, theta), dot.diag(X - shift) / scale, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("d", [1, 2])
def test_constant(d):
    """CON = ConstantKernel(θc)."""
    X, Y, rng = _data(d, 60)
    c = rng.uniform(0.1, 5.0)
    _assert_same(library.constant(), np.log([c]), ConstantKernel(c), X, Y)


@pytest.mark.parametrize("d", [1, 2])
def test_white_noise(d):
    """WN: the zero kernel plus the model's noise variance c on the diagonal is WhiteKernel(c)."""
    X, Y, rng = _data(d, 70)
    c = rng.uniform(0.1, 5.0)
    wn = library.white_noise()
    assert wn.n_params == 0 and wn.q == 1  # the noise variance is the model's only hyperparameter
    sk = WhiteKernel(noise_level=c)
    np.testing.assert_allclose(covariance(wn, X, []) + c * np.eye(len(X)), sk(X), rtol=TOL, atol=TOL)
    # Between different inputs white noise is 0, for ours and for sklearn.
    np.testing.assert_array_equal(sk(X, Y), np.zeros((7, 5)))
    np.testing.assert_array_equal(covariance(wn, X, [], Y), np.zeros((7, 5)))


def _gamma_exponential_reference(X, Y, a, ell, gamma):
    r = np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)) / ell
    return a**2 * np.exp(-(r**gamma))


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("gamma", [0.5, 1.0, 1.5, 2.0])
def test_gamma_exponential(d, gamma):
    """γ-E = θ0² exp(−(||x − x'||/θl)^γ) against a numpy reference; γ = 1 is E, γ = 2 is SE(θl/√2)."""
    X, Y, rng = _data(d, 80)
    a, ell = rng.uniform(0.3, 3.0, 2)
    theta = np.log([a, ell, gamma])
    k = library.gamma_exponential()
    np.testing.assert_allclose(covariance(k, X, theta), _gamma_exponential_reference(X, X, a, ell, gamma), rtol=TOL)
    np.testing.assert_allclose(covariance(k, X, theta, Y), _gamma_exponential_reference(X, Y, a, ell, gamma),
                               rtol=TOL)
    if gamma == 1.0:
        np.testing.assert_allclose(covariance(k, X, theta), covariance(library.exponential(), X, theta[:2]), rtol=TOL)


def test_well_known_are_well_typed():
    """Every Table 1 builder returns a well-typed tree using the slots it names."""
    for name, make in library.WELL_KNOWN.items():
        k = make()
        check_tree(k.tokens, n_hyper=20)
        assert k.slots == tuple(f"hp{i}" for i in range(k.n_params)), name
    assert library.squared_exponential("hp7", "hp3").slots == ("hp3", "hp7")


def test_compose_slot_count_from_docstring_rules():
    """compose(["+", "SE", ["*", "PER", "SE"]]): SE 2 + PER 3 + SE 2 = 7 fresh slots, plus noise: q = 8."""
    k = library.compose(["+", "SE", ["*", "PER", "SE"]])
    assert k.q == 2 + 3 + 2 + 1
    assert k.slots == tuple(f"hp{i}" for i in range(7))


def test_compose_structure_and_fresh_slots():
    """compose builds sums and products of base kernels with fresh, consecutive slots from ``start``."""
    k = library.compose(["*", "LIN", "C", "SE"], start=4)
    assert k.tokens[:2] == ("multiply", "multiply")
    assert k.slots == tuple(f"hp{i}" for i in range(4, 4 + 3 + 1 + 2))
    check_tree(k.tokens)
    assert library.compose("SE") == library.squared_exponential()
    # Values: a product of bases is the product of their covariances.
    X, _, rng = _data(1, 90)
    t = rng.uniform(-1, 1, k.n_params)
    lin = Kernel(("add", "square", "hp", "hp0", "dot_prod", "euc", "x", "hp1", "hp2"))
    expected = (covariance(lin, X, t[:3]) * np.exp(2 * t[3]) * covariance(library.squared_exponential(), X, t[4:]))
    np.testing.assert_allclose(covariance(k, X, t), expected, rtol=1e-12)


@pytest.mark.parametrize("bad", ["XX", ["+", "SE"], ["-", "SE", "SE"], [], ["+", "SE", "FOO"]])
def test_compose_rejects_bad_expressions(bad):
    """Unknown base kernels and malformed lists are ValueErrors."""
    with pytest.raises(ValueError, match=r"expected|unknown base kernel"):
        library.compose(bad)
