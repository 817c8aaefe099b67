"""The model average of kernel files: a mixture of the members' predictions, in original units."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.averaging import ensemble_predict
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.model import FittedModel, average_weights
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language import library
from evocov_core.present.figures import average_members_data, extrapolation_data, selection_data
from evocov_core.runs.kernel_file import (
    AVERAGE_FORMAT,
    KernelFileError,
    dump_kernel_file,
    kernel_file_dict,
    model_average,
    model_average_dict,
    model_average_predict,
    parse_model_average,
)


@pytest.fixture(scope="module")
def two_fits():
    """SE and SE + PER·C fitted on 60 points (a trend, a cycle and noise, far from zero)."""
    rng = np.random.default_rng(3)
    x = np.linspace(2000.0, 2010.0, 60)
    y = 500 + 4.0 * (x - 2000) + 6.0 * np.sin(2 * np.pi * x) + 0.5 * rng.standard_normal(60)
    ds = Dataset.from_arrays(x, y, name="synthetic")
    data = FitData.from_dataset(ds)
    config = OptimConfig(n_restarts=1, max_evals=40)
    fits = [fit_kernel(library.compose(e), data, config, np.random.default_rng(i))
            for i, e in enumerate(["SE", ["+", "SE", ["*", "PER", "C"]]])]
    assert all(f.ok for f in fits)
    docs = [kernel_file_dict(f, ds.norm, dataset=ds.name, n_test=ds.n_test, test_fraction=ds.test_fraction)
            for f in fits]
    return ds, data, fits, docs


def _hand_mixture(preds, w):
    """Mean and std of Σ w_k N(μ_k, σ_k²), written out from the definition."""
    mean = sum(wk * p.mean for wk, p in zip(w, preds, strict=True))
    var = sum(wk * (p.std**2 + (p.mean - mean) ** 2) for wk, p in zip(w, preds, strict=True))
    var_f = sum(wk * (p.std_f**2 + (p.mean - mean) ** 2) for wk, p in zip(w, preds, strict=True))
    return mean, np.sqrt(var), np.sqrt(var_f)


def test_mixture_of_two_fitted_models(two_fits):
    ds, _, fits, docs = two_fits
    X_new = np.linspace(2000.0, 2013.0, 50)[:, None]
    w = [0.3, 0.7]
    preds = [FittedModel.from_fit(f, ds.norm).predict(ds.X_train, ds.y_train, X_new) for f in fits]
    mean, std, std_f = _hand_mixture(preds, w)
    got = model_average_predict(docs, w, ds, X_new)
    assert got.mean.shape == got.std.shape == got.std_f.shape == (50,)
    assert got.x.shape == (50, 1)
    np.testing.assert_allclose(got.mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got.std, std, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got.std_f, std_f, rtol=0, atol=1e-8)
    # The members disagree somewhere, so the mixture is wider than their weighted std there.
    assert np.all(got.std >= w[0] * preds[0].std + w[1] * preds[1].std - 1e-9)


def test_agrees_with_the_model_unit_ensemble(two_fits):
    """Same mixture as averaging.ensemble_predict on the FitResults (model units, rescaled)."""
    ds, data, fits, docs = two_fits
    w = [0.6, 0.4]
    mean_m, var_m = ensemble_predict(data, list(zip(fits, w, strict=True)), data.X_test)
    got = model_average_predict(docs, w, ds)  # default: the test inputs
    np.testing.assert_allclose(got.mean, ds.norm.y_from_model(mean_m), rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(got.std, ds.norm.std_from_model(np.sqrt(var_m)), rtol=1e-8, atol=1e-8)
    avg = model_average(docs, w, ds.norm)
    assert math.isclose(avg.test_rmse(ds), rmse(ds.y_test, got.mean), rel_tol=1e-12)


def test_one_member_is_that_model(two_fits):
    ds, _, fits, docs = two_fits
    single = FittedModel.from_fit(fits[1], ds.norm).predict_dataset(ds)
    got = model_average_predict(docs[1:], [1.0], ds)
    np.testing.assert_allclose(got.mean, single.mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got.std, single.std, rtol=0, atol=1e-8)


def test_weights_not_summing_to_one_are_normalised(two_fits):
    """Documented choice: weights are divided by their sum (stored weights are filtered and rounded)."""
    ds, _, _, docs = two_fits
    a = model_average_predict(docs, [3.0, 7.0], ds)
    b = model_average_predict(docs, [0.3, 0.7], ds)
    np.testing.assert_allclose(a.mean, b.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.std, b.std, rtol=0, atol=1e-10)
    assert model_average(docs, [3.0, 7.0]).weights == pytest.approx((0.3, 0.7))
    # A zero weight leaves that kernel out.
    c = model_average_predict(docs, [0.0, 2.0], ds)
    d = model_average_predict(docs[1:], [1.0], ds)
    np.testing.assert_allclose(c.mean, d.mean, rtol=0, atol=1e-10)


@pytest.mark.parametrize(("weights", "message"), [
    ([-0.1, 1.1], "weight 1 is -0.1"),
    ([0.5, math.nan], "weight 2 is nan"),
    ([0.0, 0.0], "all zero"),
    ([1.0], "1 weights for 2 kernels"),
])
def test_bad_weights_are_refused(two_fits, weights, message):
    ds, _, _, docs = two_fits
    with pytest.raises(ValueError, match=message):
        model_average_predict(docs, weights, ds)


def test_average_weights_shapes():
    assert average_weights([2, 2]).tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="non-empty"):
        average_weights([])


def test_invalid_member_is_named(two_fits):
    ds, _, _, docs = two_fits
    bad = dict(docs[1], expression="__import__('os')")
    with pytest.raises(KernelFileError, match="kernel 2 of the model average"):
        model_average_predict([docs[0], bad], [0.5, 0.5], ds)


def test_extrapolation_data_draws_an_average(two_fits):
    ds, _, _, docs = two_fits
    df = extrapolation_data(model_average(docs, [0.5, 0.5], ds.norm), ds, n_grid=30)
    assert np.all(df.upper >= df["mean"]) and np.all(df["mean"] >= df.lower)


def test_model_average_file_round_trip(two_fits):
    ds, _, _, docs = two_fits
    doc = model_average_dict(docs, [0.25, 0.75], dataset=ds.name, scores={"test_rmse": 1.5, "x": math.inf})
    text = json.dumps(doc, allow_nan=False)
    assert doc["format"] == AVERAGE_FORMAT and doc["scores"]["x"] is None
    entries = parse_model_average(text)
    assert [w for _, w in entries] == [0.25, 0.75]
    got = model_average_predict([kf for kf, _ in entries], [w for _, w in entries], ds)
    want = model_average_predict(docs, [0.25, 0.75], ds)
    np.testing.assert_allclose(got.mean, want.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.std, want.std, rtol=0, atol=1e-12)
    with pytest.raises(KernelFileError, match="kernel 2"):
        parse_model_average(json.dumps(dict(doc, kernels=[doc["kernels"][0], {"weight": 1}])))
    with pytest.raises(KernelFileError, match="weight must not be negative"):
        parse_model_average(json.dumps(dict(doc, kernels=[dict(doc["kernels"][0], weight=-1)])))
    with pytest.raises(KernelFileError, match="format"):
        parse_model_average(dump_kernel_file(docs[0]))


def test_tables_from_a_run_extra(two_fits):
    _, _, _, docs = two_fits
    rows = [
        {"rank": 2, "expression": "b", "canonical": "b", "q": 6, "bic": 12.0, "tail_score": None,
         "tail_rmse": None, "test_rmse": 2.0, "weight": 0.25, "chosen": False},
        {"rank": 1, "expression": "a", "canonical": "a", "q": 3, "bic": 10.0, "tail_score": -4.0,
         "tail_rmse": 1.0, "test_rmse": 3.0, "weight": 0.75, "chosen": True},
        {"rank": 3, "expression": "c", "canonical": "c", "q": 2, "bic": 14.0, "tail_score": 9.0,
         "tail_rmse": 0.5, "test_rmse": 90.0, "weight": 0.0, "chosen": False, "valid": False,
         "origins_crps": 0.25, "statespace": True},
    ]
    sel = selection_data(rows)
    assert list(sel["BIC rank"]) == [1, 2, 3] and list(sel["chosen"]) == [True, False, False]
    assert list(sel["valid"]) == [True, True, False]  # rows stored before the check count as valid
    assert list(sel["state-space form"]) == [False, False, True]  # rows stored before the column: none
    assert math.isnan(sel["tail score"][1])
    assert math.isnan(sel["origins CRPS"][0]) and sel["origins CRPS"][2] == 0.25
    members = average_members_data([{"weight": 0.2, "kernel": docs[0]}, {"weight": 0.6, "kernel": docs[1]}])
    assert list(members["weight"]) == pytest.approx([0.75, 0.25])
    assert members["kernel"][0] == docs[1]["infix"]


def test_the_mean_alone_is_the_full_prediction_s_mean(two_fits):
    """predict_mean (what a test RMSE uses) skips the variances and changes nothing else."""
    ds, _, fits, docs = two_fits
    X_new = np.linspace(2000.0, 2013.0, 50)[:, None]
    model = FittedModel.from_fit(fits[1], ds.norm)
    np.testing.assert_allclose(model.predict_mean(ds.X_train, ds.y_train, X_new),
                               model.predict(ds.X_train, ds.y_train, X_new).mean, rtol=0, atol=1e-10)
    avg = model_average(docs, [0.3, 0.7], ds.norm)
    np.testing.assert_allclose(avg.predict_mean(ds.X_train, ds.y_train, X_new),
                               avg.predict(ds.X_train, ds.y_train, X_new).mean, rtol=0, atol=1e-8)
    assert avg.test_rmse(ds) == pytest.approx(rmse(ds.y_test, avg.predict_dataset(ds).mean), rel=1e-12)
