"""Fitted models in original units (evocov_core.fitting.model): FittedModel construction, predict shapes and
values against a hand-written GP posterior, units, test RMSE, the round trip through kernel files,
and the ModelAverage basics not covered by test_model_average.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel, ModelAverage, Prediction
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, load_kernel_file, parse_kernel_file

THETA = (math.log(1.3), math.log(0.2))  # SE: amplitude 1.3, lengthscale 0.2 (model units)
LOG_NOISE = math.log(0.02)
JITTER = 1e-3


@pytest.fixture(scope="module")
def ds() -> Dataset:
    rng = np.random.default_rng(23)
    x = np.sort(rng.uniform(10.0, 30.0, 28))
    y = 100 + 3.0 * np.sin(x / 2.0) + 0.3 * rng.standard_normal(x.size)
    return Dataset.from_arrays(x, y, name="toy", test_fraction=0.25)


@pytest.fixture(scope="module")
def model(ds) -> FittedModel:
    return FittedModel(compose("SE"), THETA, LOG_NOISE, JITTER, ds.norm)


@pytest.fixture(scope="module")
def fit(ds):
    f = fit_kernel(compose(["+", "SE", "PER"]), FitData.from_dataset(ds), OptimConfig(n_restarts=1, max_evals=30),
                   np.random.default_rng(4))
    assert f.ok
    return f


def hand_posterior(ds: Dataset, X_new: np.ndarray, theta=THETA, log_noise=LOG_NOISE, jitter=JITTER):
    """The SE posterior written out with numpy, in model units, then mapped back to original units."""
    nm = ds.norm
    xt = 1.0 + (ds.X_train[:, 0] - nm.x_offset[0]) / nm.x_scale[0]
    xs = 1.0 + (np.asarray(X_new, dtype=float).reshape(-1) - nm.x_offset[0]) / nm.x_scale[0]
    yt = (ds.y_train - nm.y_mean) / nm.y_std
    amp, ls = np.exp(theta)

    def k(a, b):
        return amp**2 * np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / ls**2)

    noise = math.exp(log_noise) + jitter
    kn = k(xt, xt) + noise * np.eye(xt.size)
    ks = k(xs, xt)
    mean = ks @ np.linalg.solve(kn, yt)
    var_f = amp**2 - np.einsum("ij,ji->i", ks, np.linalg.solve(kn, ks.T))
    return (mean * nm.y_std + nm.y_mean, np.sqrt(var_f + noise) * nm.y_std, np.sqrt(var_f) * nm.y_std)


# --- construction ------------------------------------------------------------------------------------------


def test_from_fit_copies_the_values(ds, fit):
    m = FittedModel.from_fit(fit, ds.norm)
    assert m.kernel == fit.kernel
    assert m.theta == tuple(fit.theta) and m.log_noise == fit.log_noise and m.jitter == fit.jitter
    assert m.norm is ds.norm


def test_from_fit_refuses_a_failed_fit(ds, fit):
    failed = dataclasses.replace(fit, status="cholesky_failed", reason="not positive definite")
    with pytest.raises(ValueError, match=r"no fitted values \(not positive definite\)"):
        FittedModel.from_fit(failed, ds.norm)


# --- predictions -------------------------------------------------------------------------------------------


def test_predict_shapes_for_1d_and_2d_inputs(ds, model):
    X_new = np.linspace(5.0, 35.0, 17)
    a = model.predict(ds.X_train, ds.y_train, X_new)
    b = model.predict(ds.X_train[:, 0], ds.y_train, X_new[:, None])
    assert isinstance(a, Prediction)
    for p in (a, b):
        assert p.x.shape == (17, 1)
        assert p.mean.shape == p.std.shape == p.std_f.shape == (17,)
    np.testing.assert_array_equal(a.x[:, 0], X_new)
    np.testing.assert_allclose(a.mean, b.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.std, b.std, rtol=0, atol=1e-12)


def test_predict_is_the_gp_posterior(ds, model):
    X_new = np.linspace(5.0, 35.0, 23)
    got = model.predict(ds.X_train, ds.y_train, X_new)
    mean, std, std_f = hand_posterior(ds, X_new)
    np.testing.assert_allclose(got.mean, mean, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(got.std, std, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got.std_f, std_f, rtol=1e-6, atol=1e-8)
    # Observation variance = latent variance + noise + jitter, all in y units squared.
    extra = (math.exp(LOG_NOISE) + JITTER) * ds.norm.y_std**2
    np.testing.assert_allclose(got.std**2, got.std_f**2 + extra, rtol=1e-10)
    assert np.all(got.std > got.std_f)


def test_predictions_follow_the_units_of_the_data(ds, model):
    """Values live in model units: shifting and scaling the data moves the predictions the same way."""
    s, c, dx = 10.0, -500.0, 1000.0
    moved = Dataset.from_arrays(ds.x[:, 0] + dx, s * ds.y + c, test_fraction=ds.test_fraction)
    m2 = FittedModel(model.kernel, model.theta, model.log_noise, model.jitter, moved.norm)
    X_new = np.linspace(5.0, 35.0, 9)
    a = model.predict(ds.X_train, ds.y_train, X_new)
    b = m2.predict(moved.X_train, moved.y_train, X_new + dx)
    np.testing.assert_allclose(b.mean, s * a.mean + c, rtol=1e-9)
    np.testing.assert_allclose(b.std, s * a.std, rtol=1e-9)


def test_predict_dataset_defaults_to_the_test_part(ds, model):
    p = model.predict_dataset(ds)
    np.testing.assert_array_equal(p.x, ds.X_test)
    q = model.predict(ds.X_train, ds.y_train, ds.X_test)
    np.testing.assert_array_equal(p.mean, q.mean)
    X_new = np.array([12.0, 20.0])
    np.testing.assert_array_equal(model.predict_dataset(ds, X_new).mean, model.predict(ds.X_train, ds.y_train,
                                                                                        X_new).mean)


def test_test_rmse_is_the_rmse_of_the_mean_on_the_test_part(ds, model):
    mean, _, _ = hand_posterior(ds, ds.X_test)
    want = float(np.sqrt(np.mean((ds.y_test - mean) ** 2)))
    assert model.test_rmse(ds) == pytest.approx(want, rel=1e-9)
    no_test = Dataset.from_arrays(ds.x[:, 0], ds.y, test_fraction=0.0)
    assert no_test.n_test == 0 and model.test_rmse(no_test) is None


def test_model_scores_what_the_fit_scored(ds, fit):
    """The test RMSE recorded by fit_kernel is the one the FittedModel computes from original units."""
    assert FittedModel.from_fit(fit, ds.norm).test_rmse(ds) == pytest.approx(fit.test_rmse, rel=1e-9)


# --- kernel files ------------------------------------------------------------------------------------------


def test_round_trip_through_a_kernel_file(ds, fit, tmp_path):
    path = tmp_path / "kernel.json"
    path.write_text(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset=ds.name)), encoding="utf-8")
    a = FittedModel.from_fit(fit, ds.norm)
    b = load_kernel_file(path).model()
    assert b.kernel == a.kernel and b.norm == a.norm
    np.testing.assert_allclose(b.theta, a.theta, rtol=0, atol=1e-15)
    assert b.log_noise == pytest.approx(a.log_noise, abs=1e-15) and b.jitter == a.jitter
    X_new = np.linspace(5.0, 40.0, 30)
    pa = a.predict(ds.X_train, ds.y_train, X_new)
    pb = b.predict(ds.X_train, ds.y_train, X_new)
    np.testing.assert_allclose(pb.mean, pa.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pb.std, pa.std, rtol=1e-12, atol=1e-12)
    assert b.test_rmse(ds) == pytest.approx(fit.test_rmse, rel=1e-9)


def test_kernel_file_without_normalisation_needs_a_fallback(ds, fit):
    doc = dict(kernel_file_dict(fit, None))
    assert doc["normalisation"] is None
    kf = parse_kernel_file(dump_kernel_file(doc))
    with pytest.raises(ValueError, match="no normalisation and none was given"):
        kf.model()
    assert kf.model(fallback_norm=ds.norm).norm == ds.norm
    # A file's own normalisation wins over the fallback.
    other = Dataset.from_arrays(ds.x[:, 0], 2 * ds.y, test_fraction=0.25).norm
    with_norm = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm)))
    assert with_norm.model(fallback_norm=other).norm == ds.norm


# --- model average basics ----------------------------------------------------------------------------------


def test_model_average_members_and_weights(ds, model):
    avg = ModelAverage((model, model), (1.0, 3.0))
    assert avg.k == 2 and avg.weights == (0.25, 0.75)
    p = avg.predict_dataset(ds)
    q = model.predict_dataset(ds)
    # Two copies of one model: the mixture is that model.
    np.testing.assert_allclose(p.mean, q.mean, rtol=1e-12)
    np.testing.assert_allclose(p.std, q.std, rtol=1e-10)
    assert avg.test_rmse(ds) == pytest.approx(model.test_rmse(ds), rel=1e-12)
    with pytest.raises(ValueError, match="at least one kernel"):
        ModelAverage((), ())
