"""Rolling-origin validation (evocov_core.search.validate) and the model choice by origins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from evocov_core.data import Dataset, load_bundled
from evocov_core.library import compose
from evocov_core.metrics import FitData, crps_normal
from evocov_core.optimize import OptimConfig, fit_kernel
from evocov_core.parallel import SerialExecutor
from evocov_core.search.select import choose_model
from evocov_core.search.validate import DEFAULT_ORIGINS, origin_scores, spread_scale


def _fit(expr, data, seed=0):
    return fit_kernel(compose(expr), data, OptimConfig(n_restarts=2, max_evals=60), np.random.default_rng(seed))


@pytest.fixture(scope="module")
def airline() -> FitData:
    return FitData.from_dataset(load_bundled("airline"))


def test_each_origin_is_the_posterior_from_the_points_before_it(airline):
    """The CRPS of an origin equals the CRPS of the GP conditioned on the head, computed by hand."""
    from evocov_core.gp import posterior

    fit = _fit(["+", "SE", ["*", "PER", "SE"]], airline)
    s = origin_scores(airline, fit, origins=(0.7,), horizon=0.1)
    x = airline.X[:, 0]
    lo, span = x.min(), np.ptp(x)
    head, target = x <= lo + 0.7 * span, (x > lo + 0.7 * span) & (x <= lo + 0.8 * span)
    post = posterior(fit.kernel, airline.X[head], airline.y[head], np.asarray(fit.theta), fit.log_noise,
                     airline.X[target], jitter=fit.jitter)
    sd = np.sqrt(post.var + fit.noise_variance + fit.jitter)
    assert s.origins == (0.7,) and s.n_targets == (int(target.sum()),)
    assert s.crps[0] == pytest.approx(crps_normal(airline.y[target], post.mean, sd), rel=1e-9)
    assert np.allclose(s.z, (airline.y[target] - post.mean) / sd)
    assert s.mean_crps == s.crps[0]


def test_a_kernel_that_extrapolates_the_trend_beats_one_that_forgets_it():
    """A linear trend: LIN forecasts it from every origin, a constant kernel reverts to the mean, so its
    CRPS is worse (though its fit of the training range, with a large noise, is not absurd)."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 10, 120)
    ds = Dataset.from_arrays(t, 3.0 * t + rng.standard_normal(t.size), test_fraction=0.1)
    data = FitData.from_dataset(ds)
    lin, se = _fit(["+", "LIN", "C"], data), _fit("C", data)
    assert origin_scores(data, lin).mean_crps < 0.5 * origin_scores(data, se).mean_crps
    with SerialExecutor(data, OptimConfig()) as ex:
        chosen, rows, ensemble, _ = choose_model(data, [se, lin], ex, seed=0, rule="origins")
    assert chosen is lin
    assert [r["chosen"] for r in rows] == [False, True] and all(math.isfinite(r["origins_crps"]) for r in rows)
    assert math.isclose(sum(w for _, w in ensemble), 1.0)


def test_origins_without_points_on_both_sides_are_skipped():
    ds = Dataset.from_arrays(np.arange(12.0), np.sin(np.arange(12.0)), test_fraction=0.1)
    data = FitData.from_dataset(ds)
    s = origin_scores(data, _fit("SE", data), origins=(0.0, *DEFAULT_ORIGINS, 0.999))
    assert 0.0 not in s.origins and len(s.z) == sum(s.n_targets)


def test_spread_scale_widens_only_and_to_the_right_quantile():
    rng = np.random.default_rng(1)
    z = 2.0 * rng.standard_normal(20_000)  # errors twice the predicted spread
    assert spread_scale(z) == pytest.approx(2.0, rel=0.03)
    assert spread_scale(0.5 * rng.standard_normal(1000)) == 1.0  # never narrower than the GP says
    assert spread_scale(np.array([5.0, np.nan] * 4)) == 1.0  # too few finite errors
    a = np.abs(z)
    assert np.mean(a <= spread_scale(z) * ndtri(0.975)) == pytest.approx(0.95, abs=0.005)


def test_unknown_rule_is_refused(airline):
    with SerialExecutor(airline, OptimConfig()) as ex, pytest.raises(ValueError, match="rule must be"):
        choose_model(airline, [], ex, seed=0, rule="vote")
