"""Rolling-origin validation (evocov_core.searches.validate) and the model choice by origins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import norm

from evocov_core.data import Dataset, load_bundled
from evocov_core.fitting.fits import SerialExecutor
from evocov_core.fitting.metrics import FitData, crps_normal
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.library import compose
from evocov_core.searches.select import choose_model
from evocov_core.searches.validate import (
    DEFAULT_ORIGINS,
    calibration_from_errors,
    origin_scores,
    spread_scale,
    stacking_weights,
)


def _fit(expr, data, seed=0):
    return fit_kernel(compose(expr), data, OptimConfig(n_restarts=2, max_evals=60), np.random.default_rng(seed))


@pytest.fixture(scope="module")
def airline() -> FitData:
    return FitData.from_dataset(load_bundled("airline"))


def test_each_origin_is_the_posterior_from_the_points_before_it(airline):
    """The CRPS of an origin equals the CRPS of the GP conditioned on the head, computed by hand."""
    from evocov_core.fitting.gp import posterior

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
    expected = -0.5 * s.z ** 2 - np.log(sd) - 0.5 * math.log(2 * math.pi)
    assert np.allclose(s.log_p, expected) and s.log_density[0] == pytest.approx(expected.sum(), rel=1e-12)
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
        choice = choose_model(data, [se, lin], ex, seed=0, rule="origins")
    rows = choice.rows
    assert choice.chosen is lin
    assert [r["chosen"] for r in rows] == [False, True] and all(math.isfinite(r["origins_crps"]) for r in rows)
    assert math.isclose(sum(w for _, w in choice.ensemble), 1.0)


def test_an_evolved_kernel_must_be_clearly_ahead_of_the_state_space_forms():
    """``form_margin``: the best candidate without a state-space term is returned over the best one with
    such a term only when its CRPS is below the margin times that one's; the model average is the same."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 10, 120)
    data = FitData.from_dataset(Dataset.from_arrays(t, 3.0 * t + rng.standard_normal(t.size), test_fraction=0.1))
    lin, level = _fit(["+", "LIN", "C"], data), _fit(["+", "C", "W"], data)  # a trend; the SES form
    ratio = origin_scores(data, lin).mean_crps / origin_scores(data, level).mean_crps
    assert ratio < 0.9  # the trend forecasts a trend better than a random-walk level does
    with SerialExecutor(data, OptimConfig()) as ex:
        free = choose_model(data, [level, lin], ex, seed=0, rule="origins")
        ahead = choose_model(data, [level, lin], ex, seed=0, rule="origins", form_margin=ratio * 1.01)
        behind = choose_model(data, [level, lin], ex, seed=0, rule="origins", form_margin=ratio * 0.99)
        tail = choose_model(data, [level, lin], ex, seed=0, rule="bic", form_margin=ratio * 0.99)
        with pytest.raises(ValueError, match="form_margin"):
            choose_model(data, [level, lin], ex, seed=0, rule="origins", form_margin=0.0)
    assert free.chosen is lin and ahead.chosen is lin and behind.chosen is level
    assert tail.chosen is min((level, lin), key=lambda f: f.bic)  # other rules ignore the margin
    assert [r["statespace"] for r in behind.rows] == [True, False] and behind.rows[0]["chosen"]
    assert [w for _, w in behind.ensemble] == [w for _, w in free.ensemble]


def test_the_choice_of_origins_out_of_time_calibrates_on_the_forecasts_it_scored():
    """With no time left for the calibration's refits and no head refit to fall back on, the chosen kernel's
    spread comes from the origins' forecasts the choice scored (fitted values), not from nothing."""
    import time

    rng = np.random.default_rng(1)
    t = np.linspace(0, 10, 120)
    data = FitData.from_dataset(Dataset.from_arrays(t, 3.0 * t + rng.standard_normal(t.size), test_fraction=0.1))
    fits = [_fit(["+", "LIN", "C"], data), _fit(["+", "C", "W"], data)]
    with SerialExecutor(data, OptimConfig()) as ex:
        late = choose_model(data, fits, ex, seed=0, rule="origins", calibration="origins", refit=OptimConfig(),
                            end=time.time(), refit_cost=10.0)
    assert late.calibration.rule == "origins_fitted" and late.calibration.errors > 0 and late.origins is None
    expected = calibration_from_errors(origin_scores(data, late.chosen).z, "origins_fitted")
    assert late.calibration.spread == pytest.approx(expected.spread)


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


def _trend_data() -> FitData:
    rng = np.random.default_rng(0)
    t = np.linspace(0, 10, 120)
    return FitData.from_dataset(Dataset.from_arrays(t, 3.0 * t + rng.standard_normal(t.size), test_fraction=0.1))


def test_given_refits_replace_the_full_data_values_origin_by_origin():
    """``refits`` (one per window) are what each origin forecasts with: the scores equal those of
    the refitted values conditioned by hand, and differ from the full-data values' scores."""
    from evocov_core.fitting.gp import posterior
    from evocov_core.searches.validate import origin_windows

    data = _trend_data()
    fit = _fit(["+", "LIN", "SE"], data)
    windows = origin_windows(data)
    assert [o for o, _, _ in windows] == list(DEFAULT_ORIGINS)
    refits = [_fit(["+", "LIN", "SE"], data.subset(head), seed=j) for j, (_, head, _) in enumerate(windows)]
    s = origin_scores(data, fit, refits=refits)
    _, head, target = windows[1]
    r = refits[1]
    post = posterior(fit.kernel, data.X[head], data.y[head], np.asarray(r.theta), r.log_noise, data.X[target],
                     jitter=r.jitter)
    sd = np.sqrt(post.var + r.noise_variance + r.jitter)
    assert s.crps[1] == pytest.approx(crps_normal(data.y[target], post.mean, sd), rel=1e-9)
    assert s.crps != origin_scores(data, fit).crps
    with pytest.raises(ValueError, match="refits for"):
        origin_scores(data, fit, refits=refits[:2])


def test_the_refitted_origins_choose_the_trend_and_calibrate_on_their_own_errors():
    """``refit_origins`` refits every candidate at every origin through the executor's origin stages,
    chooses the kernel that forecasts the trend, and calibrates its spread on those forecasts."""
    from evocov_core.searches import preset
    from evocov_core.searches.stages import search_executor
    from evocov_core.searches.validate import origin_stage

    data = _trend_data()
    lin, se = _fit(["+", "LIN", "C"], data), _fit("C", data)
    config = preset("quick-fixed", "evocov", choice="refit_origins", select_top=5)
    with search_executor(data, config, workers=1) as ex:
        assert {origin_stage(o) for o in DEFAULT_ORIGINS} <= set(ex.stages)
        choice = choose_model(data, [se, lin], ex, seed=0, rule="refit_origins", calibration="origins")
        again = choose_model(data, [se, lin], ex, seed=0, rule="refit_origins", calibration="origins")
    rows, calib = choice.rows, choice.calibration
    assert choice.chosen is lin and [r["chosen"] for r in rows] == [False, True]
    assert rows[1]["origins_crps"] < rows[0]["origins_crps"]
    assert calib.rule == "origins" and calib.errors == sum(origin_scores(data, lin).n_targets)
    assert [r["origins_crps"] for r in again.rows] == [r["origins_crps"] for r in rows]
    assert math.isclose(sum(w for _, w in choice.ensemble), 1.0)


def test_the_returned_kernels_origin_refits_run_on_the_executor():
    """``calibration="origins"`` gives the search's executor the origin stages, so the returned
    kernel's four refits run there (in parallel on a pool) with seeds of their own, and they
    give the same forecasts and calibration as the same refits made one after another here."""
    from evocov_core.searches import preset
    from evocov_core.searches.replay import RecordingExecutor
    from evocov_core.searches.select import calibrate_returned
    from evocov_core.searches.stages import head_stage, search_executor
    from evocov_core.searches.validate import has_origin_stages, origin_stage

    data = _trend_data()
    fit = _fit(["+", "LIN", "SE"], data)
    refit = head_stage(data, preset("quick").optim)[1]
    # Nothing refits at the origins (not the choice, the calibration nor the combination): no origin stages.
    plain = preset("quick", choice="origins", calibration="tail", combine=())
    assert not has_origin_stages(search_executor(data, plain, workers=1))
    with search_executor(data, preset("quick"), workers=1) as ex:
        assert {origin_stage(o) for o in DEFAULT_ORIGINS} <= set(ex.stages) and has_origin_stages(ex)
        rec = RecordingExecutor(ex)
        calib, scores = calibrate_returned(data, fit, None, "origins", refit, 3, None, 0.0, rec)
    here, here_scores = calibrate_returned(data, fit, None, "origins", refit, 3, None, 0.0)
    assert set(rec.fits) == {(3, 7927, j) for j in range(len(DEFAULT_ORIGINS))}
    assert calib.rule == "origins" and calib.errors == sum(scores.n_targets) > 0
    np.testing.assert_allclose(scores.mean, here_scores.mean, rtol=1e-6, atol=1e-9)
    assert calib.spread == pytest.approx(here.spread, rel=1e-6)
    assert not np.allclose(scores.mean, origin_scores(data, fit).mean)  # refitted, not the full-data values


def test_the_origin_refits_fall_back_to_the_tail_when_none_is_made():
    """A cancelled run (or a replay of a run that made no origin refits) has no refit to calibrate on:
    the spread falls back to the tail, and no origin forecasts are returned for a combination."""
    from evocov_core.searches import preset
    from evocov_core.searches.select import calibrate_returned
    from evocov_core.searches.stages import head_stage, search_executor

    data = _trend_data()
    fit = _fit(["+", "LIN", "SE"], data)
    refit = head_stage(data, preset("quick").optim)[1]
    with search_executor(data, preset("quick"), workers=1) as ex:
        calib, scores = calibrate_returned(data, fit, None, "origins", refit, 3, None, 0.0, ex,
                                           should_stop=lambda: True)
    assert scores is None and calib.rule != "origins"


def test_refit_origins_without_the_origin_stages_is_an_error():
    data = _trend_data()
    lin, se = _fit(["+", "LIN", "C"], data), _fit("C", data)
    with SerialExecutor(data, OptimConfig()) as ex, pytest.raises(ValueError, match="origin stages"):
        choose_model(data, [se, lin], ex, seed=0, rule="refit_origins")


def test_stacking_recovers_the_mixing_weights_of_the_points():
    """Points drawn 30 / 70 from two normals, the two candidates being exactly those normals: the
    weights that maximise the log score are the mixing proportions (up to sampling noise), and a
    third candidate that explains nothing better gets almost none."""
    rng = np.random.default_rng(3)
    y = np.where(rng.random(4000) < 0.3, rng.normal(0.0, 1.0, 4000), rng.normal(4.0, 1.0, 4000))
    lp = np.array([norm.logpdf(y, 0.0, 1.0), norm.logpdf(y, 4.0, 1.0), norm.logpdf(y, 2.0, 5.0)])
    w = stacking_weights(lp)
    assert w.shape == (3,) and w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    assert w[0] == pytest.approx(0.3, abs=0.03) and w[1] == pytest.approx(0.7, abs=0.03) and w[2] < 0.02

    def score(v):
        return np.sum(np.log(v @ np.exp(lp)))

    for other in (np.eye(3)[0], np.eye(3)[1], np.full(3, 1 / 3), np.array([0.3, 0.7, 0.0])):
        assert score(w) >= score(other) - 1e-6


def test_stacking_ignores_failed_forecasts_and_unscored_points():
    """A candidate whose forecasts all failed (−inf) gets weight 0; a point no candidate scores is
    left out; with no scored point at all the weights are uniform."""
    y = np.linspace(-1, 1, 50)
    lp = np.array([norm.logpdf(y, 0.0, 1.0), np.full(50, -np.inf)])
    assert np.array_equal(stacking_weights(lp), [1.0, 0.0])
    with_gap = np.column_stack([lp, [-np.inf, -np.inf]])
    assert np.allclose(stacking_weights(with_gap), stacking_weights(lp))
    assert np.allclose(stacking_weights(np.full((4, 3), -np.inf)), 0.25)


def test_a_horizon_moves_the_origins_to_forecast_that_many_steps_to_the_end():
    """With a forecast horizon the origins forecast h steps each, the last ending at the end of the training range
    (rolling origins at the forecast's own horizon), at most half the range."""
    from evocov_core.data import Dataset
    from evocov_core.fitting.metrics import DEFAULT_ORIGINS, FitData, horizon_origins
    from evocov_core.searches.validate import origin_windows

    share, origins = horizon_origins(115, 18)
    assert share == pytest.approx(18 / 114) and origins[-1] == pytest.approx(1 - 18 / 114)
    assert np.allclose(np.diff(origins), 0.1 * (1 - 18 / 114))
    share, origins = horizon_origins(14, 6)  # a short yearly series: a step apart
    assert share == pytest.approx(6 / 13) and np.allclose(origins, [4 / 13, 5 / 13, 6 / 13, 7 / 13])
    assert horizon_origins(10, 20)[0] == 0.5
    with pytest.raises(ValueError):
        horizon_origins(1, 3)
    y = np.sin(np.arange(14.0))
    ds = Dataset.from_arrays(np.arange(14.0), y, test_fraction=0.0)
    data = FitData.from_dataset(ds, horizon=6)
    windows = origin_windows(data)
    assert len(windows) == 4 and [int(t.sum()) for _, _, t in windows] == [6, 6, 6, 6]
    assert windows[-1].target[-1] and windows[-1].head.sum() == 8  # the last forecast ends at the last point
    assert FitData.from_dataset(ds).origins == DEFAULT_ORIGINS
