"""Calibrating a returned kernel's predictive spread (evocov_core.fitting.calibration, searches.select.calibrate):
the factor, where it is learned, how it travels in a kernel file and what a forecast does with it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.calibration import MAX_SPREAD, Calibration, rms_scale
from evocov_core.fitting.fits import SerialExecutor
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import KernelFileError, dump_kernel_file, kernel_file_dict, parse_kernel_file
from evocov_core.searches import preset, run_search
from evocov_core.searches.select import calibrate
from evocov_core.searches.stages import head_stage


def _trend(n: int = 120, seed: int = 0) -> Dataset:
    """A straight trend with a random walk on it: a smooth kernel fitted to it is too sure of its forecast."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    return Dataset.from_arrays(t, 0.2 * t + np.cumsum(rng.standard_normal(n)), test_fraction=0.1)


def _fit(expr, data, seed=0):
    return fit_kernel(compose(expr), data, OptimConfig(n_restarts=2, max_evals=60), np.random.default_rng(seed))


def test_rms_scale_is_the_root_mean_square_never_below_one():
    rng = np.random.default_rng(1)
    assert rms_scale(2.0 * rng.standard_normal(50_000)) == pytest.approx(2.0, rel=0.02)
    assert rms_scale(0.5 * rng.standard_normal(1000)) == 1.0  # never narrower than the GP says
    assert rms_scale(np.array([4.0, np.nan, np.inf, 4.0])) == 1.0  # too few finite errors
    assert rms_scale(np.array([3.0, -3.0, 3.0, -3.0, 3.0, np.nan])) == pytest.approx(3.0)
    assert rms_scale(np.full(10, 1e9)) == MAX_SPREAD  # a wild miss still gives a factor a file can hold
    doc = kernel_file_dict(_fit("SE", FitData.from_dataset(_trend(40))), None,
                           calibration=Calibration(rms_scale(np.full(10, 1e9)), "origins", 10))
    assert parse_kernel_file(dump_kernel_file(doc)).calibration.spread == MAX_SPREAD


@pytest.mark.parametrize("bad", [{"spread": 0.5, "rule": "tail"}, {"spread": 1e9, "rule": "tail"},
                                 {"spread": True, "rule": "tail"}, {"spread": 2.0, "rule": "eval"},
                                 {"spread": 2.0, "rule": "tail", "errors": -1}, ["spread", 2.0]])
def test_a_malformed_calibration_in_a_kernel_file_is_refused(bad):
    data = FitData.from_dataset(_trend(40))
    doc = kernel_file_dict(_fit("SE", data), None)
    doc["calibration"] = bad
    with pytest.raises(KernelFileError, match="calibration"):
        parse_kernel_file(dump_kernel_file(doc))


def test_a_forecast_from_a_calibrated_file_has_the_same_mean_and_a_wider_spread():
    ds = _trend()
    data = FitData.from_dataset(ds)
    fit = _fit(["+", "SE", "LIN"], data)
    plain = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, n_train=ds.n_train)))
    wide = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, n_train=ds.n_train,
                                                               calibration=Calibration(1.7, "origins", 40))))
    assert plain.calibration == Calibration() and wide.calibration == Calibration(1.7, "origins", 40)
    a = plain.model().predict_dataset(ds)
    b = wide.model().predict_dataset(ds)
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-12)
    np.testing.assert_allclose(b.std, 1.7 * a.std, rtol=1e-12)
    np.testing.assert_allclose(b.std_f, 1.7 * a.std_f, rtol=1e-12)


def test_tail_calibration_is_the_rms_of_the_head_fits_standardised_tail_errors():
    data = FitData.from_dataset(_trend())
    fit = _fit(["+", "SE", "LIN"], data)
    head_data, refit = head_stage(data, OptimConfig(n_restarts=2, max_evals=60))
    head = fit_kernel(fit.kernel, head_data, refit, np.random.default_rng(3), fit.start())
    c = calibrate(data, fit, "tail", head_fit=head)
    sp = data.split
    post = posterior(head.kernel, sp.X_t, sp.y_t, np.asarray(head.theta), head.log_noise, sp.X_v, jitter=head.jitter)
    z = (sp.y_v - post.mean) / np.sqrt(post.var + math.exp(head.log_noise) + head.jitter)
    assert c.rule == "tail" and c.errors == len(sp.y_v)
    assert c.spread == pytest.approx(max(1.0, float(np.sqrt(np.mean(z ** 2)))), rel=1e-9)
    assert calibrate(data, fit, "tail") == Calibration()  # no head fit: nothing learned
    assert calibrate(data, fit, "none") == Calibration()
    with pytest.raises(ValueError, match="calibration must be"):
        calibrate(data, fit, "test")


def test_an_overconfident_kernel_is_widened_by_its_origins_errors():
    """A short-lengthscale SE on a random walk with drift reverts to the mean within a few steps
    while the series walks on: its errors from earlier origins are many predicted spreads wide."""
    data = FitData.from_dataset(_trend())
    fit = _fit("SE", data)
    refit = head_stage(data, OptimConfig(n_restarts=1, max_evals=40))[1]
    c = calibrate(data, fit, "origins", refit=refit, seed=(0,))
    assert c.rule == "origins" and c.errors > 30 and c.spread > 1.2
    assert calibrate(data, fit, "origins", refit=refit, seed=(0,)) == c  # seeded


def test_a_search_returns_its_calibration_and_the_cli_file_carries_it():
    data = FitData.from_dataset(_trend(90, seed=2))
    cfg = preset("quick", population=8, mu=3, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4,
                 rho_max=30, time_budget=0.0, calibration="origins")
    from evocov_core.searches import search_executor

    with search_executor(data, cfg, workers=1) as ex:
        res = run_search(data, cfg, seed=0, executor=ex)
    assert res.calibration.rule == "origins" and res.calibration.spread >= 1.0 and res.calibration.errors > 0
    plain = cfg.with_(calibration="none", combine=())
    with search_executor(data, plain, workers=1) as ex:
        assert run_search(data, plain, seed=0, executor=ex).calibration == Calibration()
    with SerialExecutor(data, cfg.optim) as ex, pytest.raises(ValueError, match="calibration"):
        run_search(data, cfg.with_(calibration="eval"), seed=0, executor=ex)


def test_the_report_says_how_much_wider_the_intervals_are():
    from evocov_core.present.report_html import report_html

    ds = _trend(60)
    fit = _fit(["+", "SE", "LIN"], FitData.from_dataset(ds))
    doc = kernel_file_dict(fit, ds.norm, n_train=ds.n_train, calibration=Calibration(1.45, "origins", 24))
    text = report_html(parse_kernel_file(dump_kernel_file(doc)), ds, baseline_budget=0, classical=False)
    assert "Forecast intervals are 1.45× as wide as the GP&#x27;s own, from the 24 out-of-sample errors" in text
    plain = report_html(parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, n_train=ds.n_train))), ds,
                        baseline_budget=0, classical=False)
    assert "as wide as the GP" not in plain


def test_a_search_without_a_model_choice_still_calibrates_what_it_returns():
    data = FitData.from_dataset(_trend(80, seed=3))
    cfg = preset("quick", population=6, mu=2, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4,
                 rho_max=30, time_budget=0.0, select_top=1, calibration="origins")
    from evocov_core.searches import search_executor

    with search_executor(data, cfg, workers=1) as ex:
        res = run_search(data, cfg, seed=0, executor=ex)
    assert res.selection == () and res.calibration.rule == "origins" and res.calibration.errors > 0
    refit = head_stage(data, cfg.optim)[1]
    assert res.calibration == calibrate(data, res.best, "origins", refit=refit, seed=(0, 7927))
