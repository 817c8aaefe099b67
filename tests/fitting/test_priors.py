"""Hyperparameter priors: the penalty and its gradient, the terms by slot role, MAP fits, the settings,
and the corpus table against the file it was learned into."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.fitting.priors import CORPUS_PRIOR, PRIORS, HyperPrior, penalty
from evocov_core.language import library
from evocov_core.language.evaluate import covariance
from evocov_core.language.parse import parse_expression
from evocov_core.searches.config import ConfigError
from evocov_core.searches.presets import preset

ROOT = Path(__file__).resolve().parents[2]
SE = library.squared_exponential()


@pytest.fixture(scope="module")
def se_data() -> FitData:
    """60 points in [1, 2] from a GP with SE(amplitude 1, lengthscale 0.1) plus noise 0.01."""
    rng = np.random.default_rng(11)
    X = np.sort(rng.uniform(1.0, 2.0, 60))[:, None]
    K = covariance(SE, X, np.log([1.0, 0.1])) + 0.01 * np.eye(60)
    return FitData.from_arrays(X, np.linalg.cholesky(K) @ rng.standard_normal(60))


def test_the_penalty_is_the_negative_log_density_and_its_gradient_matches_finite_differences():
    mean, prec = np.array([0.5, -1.0, 0.0]), np.array([4.0, 0.25, 0.0])
    z = np.array([1.0, 2.0, 7.0])
    value, grad = penalty(mean, prec, z)
    assert value == pytest.approx(0.5 * (4.0 * 0.25 + 0.25 * 9.0))  # the third entry has no prior
    eps = 1e-6
    numeric = [(penalty(mean, prec, z + eps * e)[0] - penalty(mean, prec, z - eps * e)[0]) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def test_terms_follow_each_slots_role():
    """A lengthscale slot takes the lengthscale prior; a slot with two roles the mean of both; a
    change point's slots and a role missing from the table none; the noise its own."""
    prior = HyperPrior(roles=(("value", 0.0, 2.0), ("lengthscale", -1.5, 1.0), ("frequency", 4.0, 0.5)),
                       noise=(-4.0, 2.0))
    mean, prec = prior.terms(SE)  # hp0 value, hp1 lengthscale
    np.testing.assert_allclose(mean, [0.0, -1.5, -4.0])
    np.testing.assert_allclose(prec, [0.25, 1.0, 0.25])
    both = parse_expression("multiply(square(hp(hp0)), exp(multiply(-0.5, sq_dist(spectral(x, hp0), hp1))))")
    mean, prec = prior.terms(both)  # hp0: value and frequency; hp1: periodic lengthscale (not in the table)
    assert mean[0] == pytest.approx(2.0) and prec[0] == pytest.approx(1 / 1.25**2)
    assert prec[1] == 0.0
    cp = library.compose(["+", "SE", "LIN"])
    assert HyperPrior(roles=()).terms(cp)[1].sum() == 0.0


def test_a_prior_needs_positive_spreads():
    with pytest.raises(ValueError, match="positive standard deviation"):
        HyperPrior(roles=(("value", 0.0, 0.0),))
    with pytest.raises(ValueError, match="noise prior"):
        HyperPrior(roles=(), noise=(0.0, -1.0))


def test_a_map_fit_moves_towards_the_prior_and_scores_the_data_at_its_mode(se_data):
    """A strong prior on a long lengthscale pulls the fit off the maximum-likelihood value; the fit's
    LML (and so its BIC) is the data's at the mode, no higher than at the maximum of the likelihood."""
    mle = fit_kernel(SE, se_data, OptimConfig(), np.random.default_rng(0))
    strong = HyperPrior(roles=(("lengthscale", math.log(1.0), 0.1),))
    map_ = fit_kernel(SE, se_data, OptimConfig(prior=strong), np.random.default_rng(0))
    assert mle.ok and map_.ok
    assert math.exp(mle.theta[1]) < 0.2 and math.exp(map_.theta[1]) > 0.5
    assert map_.lml < mle.lml and map_.bic > mle.bic
    weak = fit_kernel(SE, se_data, OptimConfig(prior=HyperPrior(roles=(("lengthscale", 0.0, 100.0),))),
                      np.random.default_rng(0))
    assert weak.theta[1] == pytest.approx(mle.theta[1], abs=0.05)  # a flat prior changes nothing that matters


def test_priors_need_the_lml_metric():
    with pytest.raises(ValueError, match="posterior mode of the LML"):
        OptimConfig(metric="loocv", method="powell", prior=CORPUS_PRIOR)
    with pytest.raises(ConfigError, match="posterior mode"):
        preset("quick", priors="corpus", metric="loocv")
    with pytest.raises(ConfigError, match="priors must be one of"):
        preset("quick", priors="flat")


def test_the_settings_name_the_prior_and_keep_it_through_a_file():
    config = preset("quick-fixed", priors="corpus")
    assert config.optim.prior is CORPUS_PRIOR and preset("quick").optim.prior is None
    again = type(config).from_dict(config.to_dict())
    assert again.priors == "corpus" and again.optim.prior is CORPUS_PRIOR
    old = {k: v for k, v in preset("quick").to_dict().items() if k != "priors"}  # a file from before priors
    assert type(config).from_dict(old).priors == "none"
    assert set(PRIORS) == {"none", "corpus", "panel"}


def test_the_corpus_prior_is_the_learned_table():
    """``CORPUS_PRIOR`` holds ``bench/results/priors/table.csv`` (``python -m bench.learn_priors``)."""
    table = pd.read_csv(ROOT / "bench" / "results" / "priors" / "table.csv")
    roles = table[table.role != "noise"]
    assert dict(CORPUS_PRIOR.table) == {r.role: (r.mean, r.sd) for r in roles.itertuples()}
    noise = table[table.role == "noise"]
    assert CORPUS_PRIOR.noise == (None if noise.empty else (noise["mean"].iloc[0], noise["sd"].iloc[0]))
    assert {"lengthscale", "value", "frequency"} <= set(CORPUS_PRIOR.table)
