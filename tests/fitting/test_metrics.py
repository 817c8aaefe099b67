"""Hyperparameter-selection metrics (section 6.3): LML, LOOCV, posterior LML, SoPL, RMSE; forecast scores."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from evocov_core.data import Dataset
from evocov_core.fitting.gp import lml
from evocov_core.fitting.metrics import GRADIENT_METRICS, METRICS, FitData, loss, loss_and_grad, metric_value, rmse
from evocov_core.language import library
from evocov_core.language.evaluate import covariance
from evocov_core.language.kernel import Kernel

KERNELS = {
    "SE": library.squared_exponential(),
    "PER": library.periodic(),
    "RQ": library.rational_quadratic(),
    "SE+PER*SE": library.compose(["+", "SE", ["*", "PER", "SE"]]),
    "LIN": library.linear(),
}
def _data(n=16, seed=0, regular=False):
    rng = np.random.default_rng(seed)
    X = np.linspace(1, 2, n)[:, None] if regular else np.sort(rng.uniform(1, 2, (n, 1)), axis=0)
    y = np.sin(7 * X[:, 0]) + 0.5 * X[:, 0] + 0.1 * rng.standard_normal(n)
    return FitData.from_arrays(X, y - y.mean()), rng


def _z(k, rng, noise=0.05):
    return np.r_[rng.uniform(-1, 1, k.n_params), math.log(noise)]


# --- LML ------------------------------------------------------------------------------------------


def test_lml_metric_is_gp_lml():
    """metric 'lml' is gp.lml at theta = z[:-1], log noise = z[-1]."""
    data, rng = _data()
    k = KERNELS["SE+PER*SE"]
    z = _z(k, rng)
    assert metric_value("lml", k, data, z) == lml(k, data.inputs, data.y, z[:-1], z[-1])[0]
    C = covariance(k, data.X, z[:-1]) + math.exp(z[-1]) * np.eye(data.n)
    assert metric_value("lml", k, data, z) == pytest.approx(multivariate_normal(np.zeros(data.n), C).logpdf(data.y))


# --- LOOCV ------------------------------------------------------------------------------------------


def _brute_force_loocv(k, X, y, z):
    """Σ_i log p(y_i | X_−i, y_−i): n separate GP posteriors with point i removed, same θ and noise."""
    theta, noise = z[:-1], math.exp(z[-1])
    total = 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        Xt, yt, xi = X[keep], y[keep], X[i : i + 1]
        Kt = covariance(k, Xt, theta) + noise * np.eye(len(yt))
        ks = covariance(k, Xt, theta, xi)[:, 0]
        mu = ks @ np.linalg.solve(Kt, yt)
        var = covariance(k, xi, theta)[0, 0] - ks @ np.linalg.solve(Kt, ks) + noise
        total += norm.logpdf(y[i], mu, math.sqrt(var))
    return total


@pytest.mark.parametrize("regular", [False, True])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_loocv_closed_form_equals_brute_force(name, regular):
    """The closed form from K⁻¹ equals n refits with one point left out."""
    data, rng = _data(14, 1, regular=regular)
    k = KERNELS[name]
    z = _z(k, rng)
    assert metric_value("loocv", k, data, z) == pytest.approx(_brute_force_loocv(k, data.X, data.y, z), rel=1e-8)


def _fd(metric, k, data, z, h=1e-6):
    g = np.zeros_like(z)
    for i in range(len(z)):
        e = np.zeros_like(z)
        e[i] = h
        g[i] = (loss(metric, k, data, z + e) - loss(metric, k, data, z - e)) / (2 * h)
    return g


def _loocv_grad_cases():
    cases = []
    for name in sorted(KERNELS):
        for regular in (False, True):
            cases.append(pytest.param(name, regular, id=f"{name}-{'grid' if regular else 'irregular'}"))
    return cases


@pytest.mark.parametrize(("name", "regular"), _loocv_grad_cases())
def test_loocv_gradient_matches_finite_differences(name, regular):
    """loss_and_grad('loocv') is −LOOCV with the gradient of central differences (θ and noise)."""
    data, rng = _data(14, 2, regular=regular)
    k = KERNELS[name]
    z = _z(k, rng, noise=0.1)
    value, grad = loss_and_grad("loocv", k, data, z)
    assert value == pytest.approx(-metric_value("loocv", k, data, z), rel=1e-12)
    np.testing.assert_allclose(grad, _fd("loocv", k, data, z), rtol=1e-5, atol=1e-5)


def test_loocv_gradient_root_exp():
    """LOOCV gradient of exp(θ1 − ½ r²/θ0²), a kernel with exp at the root, on irregular inputs."""
    data, _rng = _data(12, 3)
    k = Kernel(("exp", "add", "hp", "hp1", "multiply", "-0.5", "sq_dist", "euc", "x", "hp0"))
    z = np.array([-0.5, -0.5, math.log(0.1)])
    _, grad = loss_and_grad("loocv", k, data, z)
    np.testing.assert_allclose(grad, _fd("loocv", k, data, z), rtol=1e-5, atol=1e-5)


def test_lml_loss_and_grad():
    """loss_and_grad('lml') is minus the LML and minus its gradient."""
    data, rng = _data(12, 4)
    k = KERNELS["SE"]
    z = _z(k, rng)
    value, grad = loss_and_grad("lml", k, data, z)
    assert value == pytest.approx(-metric_value("lml", k, data, z), rel=1e-12)
    np.testing.assert_allclose(grad, _fd("lml", k, data, z), rtol=1e-5, atol=1e-5)


# --- split metrics ------------------------------------------------------------------------------------


def _split_parts(k, data, z):
    """Train-train (t) / train-test (v) parts by the x-range rule, and the textbook posterior of v given t."""
    x = data.X[:, 0]
    cutoff = x.min() + 0.9 * (x.max() - x.min())
    t, v = x <= cutoff, x > cutoff
    theta, noise = z[:-1], math.exp(z[-1])
    Xt, Xv, yt, yv = data.X[t], data.X[v], data.y[t], data.y[v]
    Ktt = covariance(k, Xt, theta) + noise * np.eye(t.sum())
    Kvt = covariance(k, Xv, theta, Xt)
    mu = Kvt @ np.linalg.solve(Ktt, yt)
    cov = covariance(k, Xv, theta) - Kvt @ np.linalg.solve(Ktt, Kvt.T)
    return yv, mu, cov, noise


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_posterior_lml_direct(name):
    """posterior_lml = log N(y_v; μ_v, Σ_v + σ² I) computed with numpy and scipy."""
    data, rng = _data(20, 5)
    k = KERNELS[name]
    z = _z(k, rng)
    yv, mu, cov, noise = _split_parts(k, data, z)
    assert len(yv) == len(data.split.y_v) >= 2
    expected = multivariate_normal(mu, cov + noise * np.eye(len(yv)), allow_singular=False).logpdf(yv)
    assert metric_value("posterior_lml", k, data, z) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_sopl_is_sum_of_univariate_logpdfs(name):
    """SoPL = Σ_v log N(y_i; μ_i, Σ_ii + σ²)."""
    data, rng = _data(20, 6)
    k = KERNELS[name]
    z = _z(k, rng)
    yv, mu, cov, noise = _split_parts(k, data, z)
    expected = float(np.sum(norm.logpdf(yv, mu, np.sqrt(np.diag(cov) + noise))))
    assert metric_value("sopl", k, data, z) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_rmse_metric_direct(name):
    """The rmse metric is sqrt(mean((y_v − μ_v)²)) on the train-test part."""
    data, rng = _data(20, 7)
    k = KERNELS[name]
    z = _z(k, rng)
    yv, mu, _, _ = _split_parts(k, data, z)
    assert metric_value("rmse", k, data, z) == pytest.approx(math.sqrt(np.mean((yv - mu) ** 2)), rel=1e-8)


def test_rmse_function():
    """rmse(y, ŷ) = sqrt(mean((y − ŷ)²))."""
    assert rmse([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == 0.0
    assert rmse([0.0, 0.0], [3.0, -4.0]) == pytest.approx(math.sqrt(12.5))
    assert rmse(np.array([1.0]), np.array([-1.0])) == 2.0


def test_rmse_of_an_exploding_forecast_is_finite_and_silent():
    """A candidate's forecast can reach 1e200: squaring it overflows, the RMSE does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rmse([0.0, 0.0], [3e200, -4e200]) == pytest.approx(math.sqrt(12.5) * 1e200)
        assert rmse([0.0], [np.inf]) == math.inf
        assert math.isnan(rmse([0.0, 1.0], [np.nan, 1.0]))


def test_metrics_orientation():
    """loss = −metric for every metric except rmse, where loss = metric (lower is better)."""
    data, rng = _data(20, 8)
    k = KERNELS["SE"]
    z = _z(k, rng)
    for name in METRICS:
        v = metric_value(name, k, data, z)
        assert loss(name, k, data, z) == (v if name == "rmse" else -v), name
    assert set(GRADIENT_METRICS) == {"lml", "loocv"}


def test_better_hyperparameters_score_better():
    """LML and LOOCV prefer the generating hyperparameters to a badly wrong lengthscale (sign sanity).

    (The split metrics score extrapolation, where a wrong kernel can win by chance on one draw.)
    """
    rng = np.random.default_rng(9)
    X = np.sort(rng.uniform(1, 2, 40))[:, None]
    k = KERNELS["SE"]
    good = np.log([1.0, 0.15])
    y = np.linalg.cholesky(covariance(k, X, good) + 0.01 * np.eye(40)) @ rng.standard_normal(40)
    data = FitData.from_arrays(X, y)
    z_good, z_bad = np.r_[good, math.log(0.01)], np.r_[np.log([1.0, 0.003]), math.log(0.01)]
    for name in ("lml", "loocv"):
        assert loss(name, k, data, z_good) < loss(name, k, data, z_bad), name


def test_metric_errors():
    """Unknown metrics, gradients of Powell-only metrics and split metrics without a split are ValueErrors."""
    data, rng = _data(12, 10)
    k = KERNELS["SE"]
    z = _z(k, rng)
    with pytest.raises(ValueError, match="unknown metric"):
        metric_value("mse", k, data, z)
    for name in ("posterior_lml", "sopl", "rmse"):
        with pytest.raises(ValueError, match="no analytic gradient"):
            loss_and_grad(name, k, data, z)
    nosplit = FitData.from_arrays(data.X, data.y, split_fraction=0.0)
    assert nosplit.split is None
    with pytest.raises(ValueError, match="train-train/train-test split"):
        metric_value("sopl", k, nosplit, z)


def test_fitdata_from_dataset():
    """FitData holds model-unit training data, the split by x-range, and test outputs in original units."""
    rng = np.random.default_rng(11)
    x = np.sort(rng.uniform(0, 50, 60))
    y = 100 + 5 * np.sin(x) + rng.standard_normal(60)
    ds = Dataset.from_arrays(x, y)
    data = FitData.from_dataset(ds)
    assert data.n == ds.n_train
    assert data.X.min() == pytest.approx(1.0) and data.X.max() == pytest.approx(2.0)
    assert data.y.mean() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(data.y_test, ds.y_test)
    np.testing.assert_allclose(data.X_test, ds.norm.x_to_model(ds.X_test))
    assert (data.y_mean, data.y_std) == (ds.norm.y_mean, ds.norm.y_std)
    s = data.split
    assert s.X_t.max() <= 1.9 + 1e-12 < s.X_v.min()
    assert len(s.y_t) + len(s.y_v) == data.n


# --- scores of a probabilistic forecast ---------------------------------------------------------------


def test_coverage_counts_the_points_inside_their_interval() -> None:
    from evocov_core.fitting.metrics import coverage

    y = [1.0, 2.0, 3.0, 4.0, 5.0]
    lower = [0.0, 2.5, 3.0, 5.0, 4.0]
    upper = [2.0, 3.0, 4.0, 6.0, 5.0]
    # inside: 1 ∈ [0, 2]; 3 ∈ [3, 4] and 5 ∈ [4, 5] (ends count); outside: 2 < 2.5, 4 < 5
    assert coverage(y, lower, upper) == pytest.approx(3 / 5)
    assert math.isnan(coverage([], [], []))
    with pytest.raises(ValueError, match="different lengths"):
        coverage([1.0, 2.0], [0.0], [3.0])


def test_crps_normal_against_hand_computed_values() -> None:
    """σ[z(2Φ(z) − 1) + 2φ(z) − 1/√π] with tabulated Φ(1) = 0.8413447461, φ(1) = 0.2419707245,
    φ(0) = 0.3989422804, 1/√π = 0.5641895835."""
    from evocov_core.fitting.metrics import crps_normal

    at_mean = 2 * 0.3989422804 - 0.5641895835  # z = 0: 0.2336949773
    one_sd = 1 * (2 * 0.8413447461 - 1) + 2 * 0.2419707245 - 0.5641895835  # z = ±1: 0.6024413576
    assert crps_normal([0.0], [0.0], [1.0]) == pytest.approx(at_mean, abs=1e-9)
    assert crps_normal([5.0], [5.0], [2.0]) == pytest.approx(2 * at_mean, abs=1e-9)  # scales with σ
    assert crps_normal([3.0], [1.0], [2.0]) == pytest.approx(2 * one_sd, abs=1e-9)  # z = 1, σ = 2
    assert crps_normal([-1.0], [0.0], [1.0]) == pytest.approx(one_sd, abs=1e-9)  # symmetric in z
    # a mean over the points; σ = 0 gives the absolute error
    assert crps_normal([0.0, 3.0, 4.0], [0.0, 1.0, 1.0], [1.0, 2.0, 0.0]) == pytest.approx(
        (at_mean + 2 * one_sd + 3.0) / 3, abs=1e-9)
    assert math.isnan(crps_normal([], [], []))
    with pytest.raises(ValueError, match=">= 0"):
        crps_normal([0.0], [0.0], [-1.0])


def test_crps_normal_is_the_integral_of_its_definition() -> None:
    """CRPS(F, y) = ∫ (F(t) − 1{t ≥ y})² dt, by quadrature."""
    from scipy.integrate import quad

    from evocov_core.fitting.metrics import crps_normal

    for y, mu, sd in [(0.3, -0.2, 0.7), (12.0, 10.0, 1.5), (-4.0, 0.0, 1.0)]:
        def below(t, mu=mu, sd=sd):
            return norm.cdf(t, mu, sd) ** 2

        def above(t, mu=mu, sd=sd):
            return (1 - norm.cdf(t, mu, sd)) ** 2

        integral = quad(below, -np.inf, y)[0] + quad(above, y, np.inf)[0]
        assert crps_normal([y], [mu], [sd]) == pytest.approx(integral, rel=1e-7)


def test_interval_score_against_hand_computed_values() -> None:
    """(u − l) + (2/α)(l − y)1{y < l} + (2/α)(y − u)1{y > u}, α = 0.05 (2/α = 40)."""
    from evocov_core.fitting.metrics import interval_score

    y, lower, upper = [1.0, 5.0, -1.0], [0.0, 0.0, 0.0], [2.0, 2.0, 2.0]
    # inside: 2; 3 above: 2 + 40·3 = 122; 1 below: 2 + 40·1 = 42
    assert interval_score(y, lower, upper) == pytest.approx((2 + 122 + 42) / 3)
    assert interval_score([5.0], [0.0], [2.0], alpha=0.5) == pytest.approx(2 + 4 * 3)
    assert interval_score([1.0], [1.0], [1.0]) == 0.0  # a point interval on the truth
    assert math.isnan(interval_score([], [], []))
    with pytest.raises(ValueError, match="alpha"):
        interval_score([1.0], [0.0], [2.0], alpha=0.0)
