"""CoraniGP (bench/corani.py): their kernel, their prior, the MAP gradient and the forecast's contract.

The references are written here from the formulas of Corani et al.'s code (GPy's Linear, Bias, RBF,
StdPeriodic, RBF × Cosine; GPy's LogGaussian prior and its Logexp Jacobian), in plain numpy and
scipy, independently of EvoCov's kernel trees.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import lognorm

from bench import corani
from evocov_core.fitting.gp import lml_and_grad
from evocov_core.language.evaluate import covariance
from evocov_core.language.inputs import Inputs

PERIOD = 12


def _gpy_values(rng: np.random.Generator) -> dict[str, float]:
    """Random hyperparameters in GPy's parametrisation (λ is the cosine's lengthscale)."""
    names = ["v_lin", "v_bias", "v_rbf", "l_rbf", "v_per", "l_per",
             "v_1", "l_1", "lam_1", "v_2", "l_2", "lam_2"]
    return {k: float(np.exp(rng.normal(0.0, 1.0))) for k in names}


def _theta(p: dict[str, float]) -> np.ndarray:
    """Their values as the fitted slots of bench.corani: the cosine slot holds 1/λ."""
    order = ["v_lin", "v_bias", "v_rbf", "l_rbf", "v_per", "l_per", "v_1", "l_1", "lam_1", "v_2", "l_2", "lam_2"]
    z = np.log([p[k] for k in order])
    z[[8, 11]] *= -1.0
    return corani.full_theta(z)


def _their_kernel(t1: np.ndarray, t2: np.ndarray, p: dict[str, float]) -> np.ndarray:
    """Their kernel on times in years (t = i/f), term by term as GPy computes them."""
    tau = t1[:, None] - t2[None, :]
    k = p["v_lin"] * np.outer(t1, t2) + p["v_bias"]
    k = k + p["v_rbf"] * np.exp(-0.5 * (tau / p["l_rbf"]) ** 2)
    k = k + p["v_per"] * np.exp(-0.5 * (np.sin(np.pi * tau / 1.0) / p["l_per"]) ** 2)
    for q in ("1", "2"):
        k = k + p["v_" + q] * np.exp(-0.5 * (tau / p["l_" + q]) ** 2) * np.cos(np.abs(tau) / p["lam_" + q])
    return k


def _max_rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_is_their_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = _gpy_values(rng)
    n, h = 40, 18
    t = np.arange(1, n + 1) / PERIOD
    t_new = np.arange(n + 1, n + h + 1) / PERIOD
    kernel = corani.corani_kernel()
    K = covariance(kernel, Inputs(corani.time_inputs(n, PERIOD)), _theta(p))
    K_cross = covariance(kernel, corani.time_inputs(h, PERIOD, start=n + 1), _theta(p),
                         X2=corani.time_inputs(n, PERIOD))
    assert _max_rel(K, _their_kernel(t, t, p)) < 1e-10
    assert _max_rel(K_cross, _their_kernel(t_new, t, p)) < 1e-10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_marginal_likelihood_is_plain_numpy(seed: int) -> None:
    rng = np.random.default_rng(10 + seed)
    p = _gpy_values(rng)
    noise = float(np.exp(rng.normal(-1.5, 1.0)))
    n = 36
    t = np.arange(1, n + 1) / PERIOD
    y = np.sin(2 * np.pi * t) + 0.3 * t + rng.normal(0.0, 0.3, n)
    Ky = _their_kernel(t, t, p) + noise * np.eye(n)
    sign, logdet = np.linalg.slogdet(Ky)
    assert sign > 0
    expected = -0.5 * y @ np.linalg.solve(Ky, y) - 0.5 * logdet - 0.5 * n * math.log(2 * math.pi)
    got, _, jitter = lml_and_grad(corani.corani_kernel(), Inputs(corani.time_inputs(n, PERIOD)), y, _theta(p),
                                  math.log(noise))
    assert jitter == 0.0
    assert abs(got - expected) <= 1e-10 * abs(expected)


def test_log_prior_is_gpys_lognormal_with_the_logexp_jacobian() -> None:
    """GPy's ``log_prior``: LogGaussian densities of the values plus ``log(1 − e^(−v))`` per value."""
    rng = np.random.default_rng(3)
    priors = corani._priors_for("gpforecasting", PERIOD)
    z = rng.normal(0.0, 1.5, len(priors))
    signs = np.array([-1.0 if i in (8, 11) else 1.0 for i in range(len(priors))])  # cosine slots hold 1/λ
    v = np.exp(signs * z)
    expected = sum(lognorm.logpdf(vi, s=pr.sigma, scale=math.exp(pr.mu)) + math.log(1.0 - math.exp(-vi))
                   for vi, pr in zip(v, priors, strict=True))
    assert corani.log_prior(z, priors)[0] == pytest.approx(expected, rel=1e-12)
    # Their published constants: variances N(−1.5, 1), the rbf lengthscale N(1.1, 1), the periodic N(0.2, 1),
    # component 1 (their ii == 0) the "long" pair (1.1, 1.6), component 2 the "short" pair (−0.7, 0.5).
    assert [(pr.mu, pr.sigma) for pr in priors] == [
        (-1.5, 1.0), (-1.5, 1.0), (-1.5, 1.0), (1.1, 1.0), (-1.5, 1.0), (0.2, 1.0),
        (-1.5, 1.0), (1.1, 1.0), (1.6, 1.0), (-1.5, 1.0), (-0.7, 1.0), (0.5, 1.0), (-1.5, 1.0)]


@pytest.mark.parametrize("seed", [0, 1])
def test_map_objective_gradient_matches_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(20 + seed)
    n = 30
    t = np.arange(1, n + 1) / PERIOD
    y = np.cos(2 * np.pi * t) + 0.5 * t + rng.normal(0.0, 0.2, n)
    y = (y - y.mean()) / y.std(ddof=1)
    kernel = corani.corani_kernel()
    inputs = Inputs(corani.time_inputs(n, PERIOD))
    priors = corani._priors_for("gpforecasting", PERIOD)
    z = rng.normal(-0.5, 0.7, len(priors))
    _, grad = corani.map_objective(z, kernel, inputs, y, priors)
    step = 1e-5
    fd = np.empty_like(z)
    for i in range(z.size):
        e = np.zeros_like(z)
        e[i] = step
        fd[i] = (corani.map_objective(z + e, kernel, inputs, y, priors)[0]
                 - corani.map_objective(z - e, kernel, inputs, y, priors)[0]) / (2 * step)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()))


def _seasonal_trend(n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n)
    return 50.0 + 0.4 * t + 6.0 * np.sin(2 * np.pi * t / PERIOD) + rng.normal(0.0, 1.0, n)


def test_forecast_shapes_order_determinism_and_season() -> None:
    rng = np.random.default_rng(4)
    n, h = 72, 18
    y = _seasonal_trend(n, rng)
    out = corani.forecast(y, h, PERIOD, seed=7)
    assert len(out) == 5
    for a in out:
        assert a.shape == (h,) and np.isfinite(a).all()
    mean, lo80, hi80, lo95, hi95 = out
    assert (lo95 <= lo80).all() and (lo80 <= mean).all() and (mean <= hi80).all() and (hi80 <= hi95).all()
    assert (lo95 < hi95).all()
    again = corani.forecast(y, h, PERIOD, seed=7)
    for a, b in zip(out, again, strict=True):
        np.testing.assert_array_equal(a, b)
    # It forecasts the season: the forecast moves with the true seasonal shape.
    season = np.sin(2 * np.pi * np.arange(n, n + h) / PERIOD)
    assert np.corrcoef(mean - np.polyval(np.polyfit(np.arange(h), mean, 1), np.arange(h)), season)[0, 1] > 0.9


def test_restarts_from_the_prior_are_seeded() -> None:
    rng = np.random.default_rng(5)
    y = _seasonal_trend(40, rng)
    a = corani.forecast(y, 6, PERIOD, seed=1, restarts=3)
    b = corani.forecast(y, 6, PERIOD, seed=1, restarts=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


def test_constant_series_gives_a_flat_finite_forecast() -> None:
    mean, *bounds = corani.forecast(np.full(20, 3.0), 4, 4)
    np.testing.assert_allclose(mean, 3.0, atol=1e-6)
    assert all(np.isfinite(b).all() for b in bounds)
