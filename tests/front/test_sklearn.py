"""scikit-learn: a found kernel in GaussianProcessRegressor gives our LML and posterior mean; its gradient;
EvoCovRegressor passes check_estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.utils.estimator_checks import check_estimator

import evocov_core as ec
from evocov_core.data import Dataset, load_bundled
from evocov_core.fitting.gp import lml, posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.evaluate import Inputs, covariance, covariance_jacobian
from evocov_core.language.library import compose
from evocov_core.sklearn import EvoCovKernel, EvoCovRegressor, kernel_jacobian, noise_of, to_sklearn_kernel

#: A fixed-count search of a few kernels: each fit takes a fraction of a second.
TINY = dict(population=4, generations=2, mu=2, max_evals=10, n_screen=2, psd_w=4, n_restarts=1, d_min=2, d_max=4,
            rho_max=20)


@pytest.fixture(scope="module")
def airline() -> Dataset:
    return load_bundled("airline")


@pytest.fixture(scope="module")
def found(airline: Dataset) -> dict:
    """Kernels found on Airline: a small EvoCov search (non-stationary), a GPSS search, and GPSS's
    published Airline structure fitted by our optimiser (a product of sums, 12 slots)."""
    out = {
        "evocov": ec.search(airline, "quick-fixed", 0, workers=1, population=12, generations=3, mu=3),
        "gpss": ec.search(airline, "quick-fixed", 0, algorithm="gpss", workers=1, generations=2,
                          base_kernels=("SE", "PER", "LIN")),
    }
    data = FitData.from_dataset(airline)
    fit = fit_kernel(compose(["*", "RQ", "LIN", ["+", "SE", ["*", "PER", "LIN"]]]), data,
                     OptimConfig(n_restarts=1, max_evals=60, n_screen=10), np.random.default_rng(0))
    assert fit.ok
    out["published"] = fit
    return out


def _model_units(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = ds.norm
    return n.x_to_model(ds.X_train), n.y_to_model(ds.y_train), n.x_to_model(ds.X_test)


@pytest.mark.parametrize("which", ["evocov", "gpss", "published"])
@pytest.mark.parametrize("white", [False, True], ids=["alpha", "white-kernel"])
def test_gaussian_process_regressor_reproduces_our_lml_and_mean(airline: Dataset, found: dict, which: str,
                                                                 white: bool):
    """On Airline in model units: scikit-learn's LML and posterior mean equal ours to 1e-8 (relative to
    the magnitude, at least 1), with the noise as ``alpha`` or as a WhiteKernel in the kernel."""
    src = found[which]
    fit = src.kernel_file if hasattr(src, "kernel_file") else src
    X, y, X_new = _model_units(airline)
    theta = np.asarray(fit.theta)
    ours, jitter = lml(fit.kernel, Inputs(X), y, theta, fit.log_noise)
    assert jitter == fit.jitter
    if which == "published":
        assert ours == pytest.approx(fit.lml, rel=1e-12)  # the value the fit scored
    k = to_sklearn_kernel(src, noise=white)
    gpr = GaussianProcessRegressor(k, alpha=0.0 if white else noise_of(src), optimizer=None, normalize_y=False)
    gpr.fit(X, y)
    theirs = gpr.log_marginal_likelihood_value_
    assert abs(theirs - ours) <= 1e-8 * max(1.0, abs(ours))
    mean = gpr.predict(X_new)
    want = posterior(fit.kernel, Inputs(X), y, theta, fit.log_noise, X_new, jitter=fit.jitter).mean
    assert np.max(np.abs(mean - want)) <= 1e-8 * max(1.0, float(np.max(np.abs(want))))
    if hasattr(src, "predict"):  # and the front door's prediction, in the data's units
        ours_mean = src.predict(airline.X_test).mean
        theirs_mean = airline.norm.y_from_model(mean)
        assert np.max(np.abs(theirs_mean - ours_mean)) <= 1e-8 * float(np.max(np.abs(ours_mean)))


def test_the_exported_kernel_is_a_scikit_learn_kernel(found: dict):
    """theta are our log values; K, diag, clone, bounds and stationarity behave as scikit-learn expects."""
    fit = found["published"]
    k = to_sklearn_kernel(fit)
    assert isinstance(k, EvoCovKernel)
    assert np.array_equal(k.theta, np.asarray(fit.theta))
    assert [h.name for h in k.hyperparameters] == list(fit.kernel.slots)
    assert k.bounds.shape == (fit.kernel.n_params, 2) and k.n_dims == fit.kernel.n_params
    X = np.linspace(1.0, 2.0, 17)[:, None]
    Y = np.linspace(0.5, 2.5, 5)[:, None]
    assert np.array_equal(k(X), covariance(fit.kernel, Inputs(X), np.asarray(fit.theta)))
    assert np.allclose(k(X, Y), covariance(fit.kernel, X, np.asarray(fit.theta), Y), rtol=1e-12, atol=0)
    assert np.allclose(k.diag(X), np.diag(k(X)), rtol=1e-12)
    assert k.is_stationary() is False  # LIN
    assert to_sklearn_kernel(compose(["+", "SE", "PER"]), np.zeros(5)).is_stationary() is True
    other = k.clone_with_theta(k.theta + 0.5)
    assert np.array_equal(other.theta, k.theta + 0.5) and np.array_equal(clone(k).theta, k.theta)
    assert not np.allclose(other(X), k(X))
    fixed = to_sklearn_kernel(fit, log_bounds="fixed")
    assert fixed.n_dims == 0 and fixed(X, eval_gradient=True)[1].shape == (17, 17, 0)
    with pytest.raises(ValueError, match="Y is None"):
        k(X, Y, eval_gradient=True)
    with pytest.raises(ValueError, match="log slot values"):
        to_sklearn_kernel(fit.kernel)


@pytest.mark.parametrize("expr,xs", [
    (["*", "RQ", "LIN", ["+", "SE", ["*", "PER", "LIN"]]], "grid"),  # not stationary: one adjoint per entry
    (["+", "SE", ["*", "PER", "RQ"]], "grid"),  # stationary on a grid: one adjoint per lag
    (["+", "SE", ["*", "PER", "RQ"]], "gaps"),  # a grid with gaps (gathered lags)
    (["+", "SE", ["*", "PER", "RQ"]], "random"),  # irregular inputs
])
def test_gradient_matches_finite_differences(expr: list, xs: str):
    """``K_gradient`` is ∂K/∂θ (log values): central differences agree to 1e-6 relative."""
    rng = np.random.default_rng(3)
    kernel = compose(expr)
    theta = rng.normal(0.0, 0.5, kernel.n_params)
    grid = 1.0 + np.arange(30) / 29.0
    X = {"grid": grid, "gaps": np.delete(grid, [4, 5, 17]),
         "random": np.sort(rng.uniform(1.0, 2.0, 25))}[xs][:, None]
    k = to_sklearn_kernel(kernel, theta)
    K, dK = k(X, eval_gradient=True)
    assert np.array_equal(K, k(X)) and dK.shape == (*K.shape, kernel.n_params)
    h = 1e-6
    for j in range(kernel.n_params):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        fd = (k.clone_with_theta(up)(X) - k.clone_with_theta(down)(X)) / (2 * h)
        assert np.allclose(dK[:, :, j], fd, rtol=1e-6, atol=1e-6 * np.abs(K).max()), (j, np.abs(dK[:, :, j] - fd).max())
    # And the evaluator's full Jacobian (one adjoint per entry, every entry) agrees to rounding.
    _, full = covariance_jacobian(kernel, Inputs(X), theta)
    assert np.allclose(dK, full, rtol=1e-12, atol=1e-14)
    assert np.array_equal(kernel_jacobian(kernel, X, theta)[1], dK)


def test_scikit_learn_optimises_the_exported_kernel(airline: Dataset, found: dict):
    """Dropped into GaussianProcessRegressor with its own optimiser (from our values), the LML does not get
    worse, and the gradient it follows is the exported one."""
    X, y, _ = _model_units(airline)
    X, y = X[::4], y[::4]  # 33 points: the non-stationary Jacobian costs O(n^4)
    src = found["gpss"]
    k = to_sklearn_kernel(src)
    start = GaussianProcessRegressor(k, alpha=noise_of(src), optimizer=None).fit(X, y).log_marginal_likelihood_value_
    gpr = GaussianProcessRegressor(k, alpha=noise_of(src), normalize_y=False).fit(X, y)
    assert gpr.log_marginal_likelihood_value_ >= start - 1e-9
    value, grad = gpr.log_marginal_likelihood(gpr.kernel_.theta, eval_gradient=True)
    assert math.isfinite(value) and grad.shape == gpr.kernel_.theta.shape


#: Checks scikit-learn skips, as the class docstring lists them.
SKIPPED = {"check_array_api_input"}


def test_check_estimator_passes_on_a_fixed_count_preset():
    """Every check of ``check_estimator`` passes but those skipped, which the class docstring lists with why."""
    est = EvoCovRegressor(preset="quick-fixed", seed=0, workers=1, settings=TINY)
    results = check_estimator(est, on_fail=None)
    assert len(results) >= 40
    failed = [(r["check_name"], repr(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert skipped <= SKIPPED
    doc = EvoCovRegressor.__doc__ or ""
    assert all(f"``{name}``" in doc for name in SKIPPED)
    assert "sample_weight" in doc  # why the sample-weight checks are not generated


def test_regressor_fits_predicts_and_is_seeded(airline: Dataset):
    """fit/predict on Airline's training part: the same seed gives the same kernel and predictions, the
    prediction is the front door's, get_params/set_params round-trip."""
    X, y = airline.X_train, airline.y_train
    est = EvoCovRegressor(preset="quick-fixed", seed=1, workers=1, settings=TINY)
    assert est.get_params()["preset"] == "quick-fixed"
    est.fit(X, y)
    mean, std = est.predict(airline.X_test, return_std=True)
    assert mean.shape == std.shape == (airline.n_test,) and np.all(std > 0)
    assert np.array_equal(mean, est.result_.predict(airline.X_test).mean)
    again = clone(est).fit(X, y)
    assert again.result_.kernel.prefix == est.result_.kernel.prefix
    assert np.array_equal(again.predict(airline.X_test), mean)
    other = clone(est).set_params(seed=2)
    assert other.get_params()["seed"] == 2 and est.get_params()["seed"] == 1
    assert isinstance(est.kernel_, EvoCovKernel)
    assert est.score(X, y) > 0.0  # R² on the training data: better than the mean
