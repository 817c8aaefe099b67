"""GP engine: Cholesky with the jitter ladder, LML and its gradient, the posterior."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from evocov_core.fitting.gp import (
    JITTER_LADDER,
    Factor,
    NumericalFailure,
    factorize,
    inverse_from_factor,
    lml,
    lml_and_grad,
    posterior,
)
from evocov_core.language import library
from evocov_core.language.evaluate import Inputs, covariance
from evocov_core.language.kernel import Kernel

KERNELS = {
    "SE": library.squared_exponential(),
    "PER": library.periodic(),
    "LIN": library.linear(),
    "RQ": library.rational_quadratic(),
    "M52": library.matern52(),
    "SE+PER*SE": library.compose(["+", "SE", ["*", "PER", "SE"]]),
    "LIN*SE+C": library.compose(["+", ["*", "LIN", "SE"], "C"]),
    "spectral_dot": Kernel(("add", "hp", "hp3", "dot_prod", "spectral", "x", "hp0", "hp1", "hp2")),
}


def _spd(n, seed):
    A = np.random.default_rng(seed).standard_normal((n, n))
    return A @ A.T + n * np.eye(n)


# --- factorize ------------------------------------------------------------------------------------


def test_factorize_plain():
    """A well-conditioned matrix factorises without jitter: L Lᵀ = K + σ² I."""
    K = _spd(6, 0)
    f = factorize(K, 0.3)
    L = np.tril(f.L)
    assert f.jitter == 0.0
    np.testing.assert_allclose(L @ L.T, K + 0.3 * np.eye(6), rtol=1e-12)
    assert f.log_det == pytest.approx(np.linalg.slogdet(K + 0.3 * np.eye(6))[1], rel=1e-12)
    b = np.arange(6.0)
    np.testing.assert_allclose(f.solve(b), np.linalg.solve(K + 0.3 * np.eye(6), b), rtol=1e-10)
    np.testing.assert_allclose(inverse_from_factor(f), np.linalg.inv(K + 0.3 * np.eye(6)), rtol=1e-10, atol=1e-14)


def test_factorize_does_not_modify_input():
    """Without overwrite, K is left unchanged."""
    K = _spd(5, 1)
    K0 = K.copy()
    factorize(K, 0.1)
    np.testing.assert_array_equal(K, K0)


def test_factorize_rank_deficient_uses_jitter():
    """A singular PSD matrix (all ones) with no noise fails plain Cholesky and succeeds on the first rung."""
    K = np.ones((5, 5))
    f = factorize(K, 0.0)
    expected = JITTER_LADDER[0] * 1.0  # rel · mean(diag K_y), diag = 1
    assert f.jitter == pytest.approx(expected)
    L = np.tril(f.L)
    np.testing.assert_allclose(L @ L.T, K + f.jitter * np.eye(5), rtol=1e-9, atol=1e-12)


def test_factorize_jitter_scales_with_diagonal():
    """The jitter is relative to mean(diag K) + noise."""
    K = 7.0 * np.ones((4, 4))
    f = factorize(K, 0.0)
    assert f.jitter == pytest.approx(JITTER_LADDER[0] * 7.0)


def test_factorize_with_rebuild_after_overwrite():
    """overwrite=True destroys K on failure; rebuild supplies a fresh K for the next rung."""
    calls = []

    def rebuild():
        calls.append(1)
        return np.ones((5, 5))

    f = factorize(np.ones((5, 5)), 0.0, overwrite=True, rebuild=rebuild)
    assert f.jitter > 0 and len(calls) == 1
    with pytest.raises(NumericalFailure) as info:
        factorize(np.ones((5, 5)), 0.0, overwrite=True)  # no rebuild: gives up after the first failure
    assert info.value.status == "cholesky_failed"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_factorize_non_finite(bad):
    """NaN or inf in K (or the noise) is NumericalFailure('non_finite')."""
    K = _spd(4, 2)
    K[1, 2] = K[2, 1] = bad
    with pytest.raises(NumericalFailure) as info:
        factorize(K, 0.1)
    assert info.value.status == "non_finite" and "NaN or infinite" in info.value.reason
    with pytest.raises(NumericalFailure) as info:
        factorize(_spd(4, 2), bad)
    assert info.value.status == "non_finite"


def test_numerical_failure_crosses_a_process_boundary():
    """Raised in a worker process it comes back whole: a process pool pickles it, and an exception that
    does not unpickle breaks the pool with an unrelated error."""
    from concurrent.futures import ProcessPoolExecutor

    with pytest.raises(NumericalFailure) as info:
        factorize(np.ones((5, 5)), 0.0, overwrite=True)
    back = pickle.loads(pickle.dumps(info.value))
    assert (type(back), back.status, back.reason, str(back)) == (
        NumericalFailure, info.value.status, info.value.reason, str(info.value))
    with ProcessPoolExecutor(1) as pool, pytest.raises(NumericalFailure) as remote:
        pool.submit(factorize, np.ones((5, 5)), 0.0, overwrite=True).result()
    assert remote.value.status == "cholesky_failed"


def test_factorize_overflowing_diagonal_is_a_failure_not_a_warning():
    """Finite entries near 1e308 overflow the mean of the diagonal: NumericalFailure, no warning."""
    K = _spd(4, 2) * 1e307
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NumericalFailure) as info:
            factorize(K, 0.1)
    assert info.value.status == "non_finite" and "overflows" in info.value.reason


def test_posterior_far_from_the_data_is_non_finite_not_a_warning():
    """exp(x·x'/s) fitted on [1, 2] overflows at x = 1000: the posterior there is NaN, silently."""
    k = Kernel(("exp", "dot_prod", "euc", "x", "hp0", "hp1"))
    X = np.linspace(1.0, 2.0, 20)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = posterior(k, X, np.sin(3 * X[:, 0]), np.array([0.0, -1.0]), -2.0, np.array([[1.5], [1e3]]))
    assert np.isfinite(post.mean[0]) and np.isfinite(post.var[0])
    assert not np.isfinite(post.mean[1]) and not np.isfinite(post.var[1])


def test_factorize_indefinite():
    """An indefinite matrix fails every rung: NumericalFailure('cholesky_failed')."""
    K = np.diag([1.0, 1.0, -5.0, 1.0])
    with pytest.raises(NumericalFailure) as info:
        factorize(K, 1e-6)
    assert info.value.status == "cholesky_failed"
    assert "not positive definite" in str(info.value)


def test_factorize_reads_one_triangle_only():
    """Garbage below the diagonal does not change the factor (documented: the upper triangle of a
    C-ordered K is read)."""
    K = _spd(5, 3)
    garbage = np.triu(K) + np.tril(np.full((5, 5), -100.0), -1)
    f = factorize(garbage, 0.1)
    L = np.tril(f.L)
    np.testing.assert_allclose(L @ L.T, K + 0.1 * np.eye(5), rtol=1e-10)


# --- LML --------------------------------------------------------------------------------------------


def _data(n, seed, regular=False, d=1):
    rng = np.random.default_rng(seed)
    X = np.linspace(1, 2, n)[:, None] if regular else np.sort(rng.uniform(1, 2, (n, d)), axis=0)
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(n)
    return X, y, rng


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_lml_equals_scipy_logpdf(name):
    """lml = log N(y; 0, K + σ² I) (scipy's multivariate normal)."""
    k = KERNELS[name]
    X, y, rng = _data(15, 4)
    theta = rng.uniform(-1, 1, k.n_params)
    log_noise = math.log(0.05)
    value, jitter = lml(k, Inputs(X), y, theta, log_noise)
    assert jitter == 0.0
    C = covariance(k, X, theta) + 0.05 * np.eye(15)
    assert value == pytest.approx(multivariate_normal(np.zeros(15), C).logpdf(y), rel=1e-10)


def _fd_grad(k, inputs, y, z, h=1e-6):
    g = np.zeros_like(z)
    for i in range(len(z)):
        e = np.zeros_like(z)
        e[i] = h
        up = lml(k, inputs, y, (z + e)[:-1], (z + e)[-1])[0]
        down = lml(k, inputs, y, (z - e)[:-1], (z - e)[-1])[0]
        g[i] = (up - down) / (2 * h)
    return g


# Kernels whose root node's reverse rule reads the root's own value (K) on the diagonal.
ROOT_VALUE_KERNELS = {
    "exp_root": Kernel(("exp", "add", "hp", "hp1", "multiply", "-0.5", "sq_dist", "euc", "x", "hp0")),
    "sqrt_root": Kernel(("sqrt", "add", "hp", "hp1", "dot_prod", "euc", "x", "hp0", "hp0")),
}
def _grad_cases():
    cases = []
    for name in sorted(KERNELS) + sorted(ROOT_VALUE_KERNELS):
        for regular in (False, True):
            cases.append(pytest.param(name, regular, id=f"{name}-{'grid' if regular else 'irregular'}"))
    return cases


@pytest.mark.parametrize(("name", "regular"), _grad_cases())
def test_lml_gradient_matches_finite_differences(name, regular):
    """lml_and_grad's gradient (θ and log noise) matches central differences, on both input paths."""
    k = {**KERNELS, **ROOT_VALUE_KERNELS}[name]
    X, y, rng = _data(14, 5, regular=regular)
    inputs = Inputs(X)
    assert (inputs.row is not None) == regular
    z = np.r_[rng.uniform(-1, 1, k.n_params), math.log(0.1)]
    value, grad, jitter = lml_and_grad(k, inputs, y, z[:-1], z[-1])
    assert jitter == 0.0
    assert value == pytest.approx(lml(k, inputs, y, z[:-1], z[-1])[0], rel=1e-12)
    assert grad.shape == (k.n_params + 1,)
    np.testing.assert_allclose(grad, _fd_grad(k, inputs, y, z), rtol=1e-5, atol=1e-5)


def test_lml_gradient_two_dimensional_inputs():
    """The gradient is also right for d = 2 inputs."""
    k = KERNELS["SE+PER*SE"]
    X, y, rng = _data(12, 6, d=2)
    z = np.r_[rng.uniform(-1, 1, k.n_params), math.log(0.2)]
    _, grad, _ = lml_and_grad(k, Inputs(X), y, z[:-1], z[-1])
    np.testing.assert_allclose(grad, _fd_grad(k, Inputs(X), y, z), rtol=1e-5, atol=1e-5)


def test_lml_and_grad_does_not_disturb_vjp_inputs():
    """The gradient equals the VJP of ½(ααᵀ − K_y⁻¹) computed independently (LIN: dot_prod at the root)."""
    from evocov_core.language.evaluate import covariance_vjp

    k = KERNELS["LIN"]
    X, y, _ = _data(10, 11)
    theta, noise = np.array([0.2, -0.3]), 0.1
    K, vjp = covariance_vjp(k, Inputs(X), theta)
    Ky = K + noise * np.eye(10)
    alpha = np.linalg.solve(Ky, y)
    W = 0.5 * (np.outer(alpha, alpha) - np.linalg.inv(Ky))
    _, grad, _ = lml_and_grad(k, Inputs(X), y, theta, math.log(noise))
    np.testing.assert_allclose(grad[:-1], vjp(W), rtol=1e-8)
    assert grad[-1] == pytest.approx(np.trace(W) * noise, rel=1e-8)


def test_lml_failures_raise_numerical_failure():
    """Non-finite and indefinite kernels raise NumericalFailure with a status."""
    X, y, _ = _data(10, 7)
    with pytest.raises(NumericalFailure) as info:
        lml(Kernel(("sqrt", "-1")), Inputs(X), y, np.array([]), 0.0)
    assert info.value.status == "non_finite"
    with pytest.raises(NumericalFailure) as info:
        lml_and_grad(Kernel(("multiply", "-1", "hp", "hp0")), Inputs(X), y, np.array([3.0]), math.log(1e-6))
    assert info.value.status == "cholesky_failed"


# --- posterior -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SE", "PER", "LIN", "SE+PER*SE", "spectral_dot"])
@pytest.mark.parametrize("regular", [False, True])
def test_posterior_textbook_formulas(name, regular):
    """mean = K*ᵀ (K + σ²I)⁻¹ y and cov = K** − K*ᵀ (K + σ²I)⁻¹ K*, computed with numpy.linalg.solve."""
    k = KERNELS[name]
    X, y, rng = _data(12, 8, regular=regular)
    Xs = np.sort(rng.uniform(0.5, 2.5, (6, 1)), axis=0)
    theta = rng.uniform(-1, 1, k.n_params)
    noise = 0.05
    Ky = covariance(k, X, theta) + noise * np.eye(12)
    Ks = covariance(k, X, theta, Xs)  # (n, m)
    Kss = covariance(k, Xs, theta)
    mean = Ks.T @ np.linalg.solve(Ky, y)
    cov = Kss - Ks.T @ np.linalg.solve(Ky, Ks)
    post = posterior(k, X, y, theta, math.log(noise), Xs, full_cov=True)
    scale = max(1.0, np.abs(Kss).max())
    np.testing.assert_allclose(post.mean, mean, rtol=1e-8, atol=1e-9 * scale)
    np.testing.assert_allclose(post.cov, cov, rtol=1e-7, atol=1e-8 * scale)
    np.testing.assert_allclose(post.var, np.clip(np.diag(cov), 0, None), rtol=1e-7, atol=1e-8 * scale)
    diag_only = posterior(k, Inputs(X), y, theta, math.log(noise), Xs)
    assert diag_only.cov is None
    np.testing.assert_allclose(diag_only.mean, post.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(diag_only.var, post.var, rtol=1e-7, atol=1e-8 * scale)


def test_posterior_variance_non_negative():
    """Posterior variances are never negative, even at the training inputs with tiny noise."""
    k = KERNELS["SE"]
    X, y, rng = _data(20, 9)
    for seed in range(5):
        theta = np.random.default_rng(seed).uniform(-1, 2, 2)
        post = posterior(k, X, y, theta, math.log(1e-6), np.vstack([X, rng.uniform(1, 2, (5, 1))]))
        assert np.all(post.var >= 0)


def test_posterior_reuses_given_jitter():
    """With jitter given, the factor uses noise + jitter (the matrix that was scored)."""
    k = KERNELS["SE"]
    X, y, _ = _data(10, 10)
    theta = np.log([1.0, 0.3])
    a = posterior(k, X, y, theta, math.log(0.01), X[:3], jitter=0.04)
    b = posterior(k, X, y, theta, math.log(0.05), X[:3])
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-10)
    np.testing.assert_allclose(a.var, b.var, rtol=1e-8, atol=1e-12)


def test_factor_record():
    """Factor is a plain frozen record of L and the jitter."""
    f = Factor(np.eye(2), 0.5)
    assert f.log_det == 0.0 and f.jitter == 0.5
