"""Long series: the subset of data a GP conditions on above ``max_points`` (evocov_core.fitting.subset)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.gp import lml_and_grad
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.fitting.subset import RECENT_SHARE, TAIL_SHARE, DataSubset, plan_subset
from evocov_core.language.library import compose
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, parse_kernel_file


def _series(n: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    y = 0.01 * t + np.sin(2 * math.pi * t / 48) + 0.3 * rng.standard_normal(n)
    return Dataset.from_arrays(t, y, name=f"synthetic{n}", test_fraction=0.1)


def test_plan_is_exact_up_to_the_limit_and_a_subset_above():
    assert plan_subset(500, 1000).exact and plan_subset(500, 1000).n_used == 500
    assert plan_subset(5000, 0).exact  # 0: no limit
    p = plan_subset(5000, 1000)
    assert not p.exact and p.n_used == 1000 and p.recent == round(RECENT_SHARE * 1000)


@pytest.mark.parametrize(("n", "m"), [(3000, 1000), (1001, 1000), (20_000, 400)])
def test_mask_keeps_the_recent_part_whole_and_spreads_the_rest(n, m):
    p = plan_subset(n, m)
    rng = np.random.default_rng(0)
    x = rng.permutation(np.arange(n, dtype=np.float64))  # any order: the mask follows x
    keep = p.mask(x)
    assert keep.sum() == m
    kept = np.sort(x[keep])
    assert np.array_equal(kept[-p.recent:], np.arange(n - p.recent, n))  # contiguous, the most recent
    history = kept[:-p.recent]
    assert history.size == p.history and history[0] == 0  # the first point is part of the coarse view
    gaps = np.diff(history)
    assert gaps.max() - gaps.min() <= 1  # evenly spread


def test_head_holds_out_the_end_of_the_recent_part():
    p = plan_subset(4000, 1000)
    x = np.arange(4000, dtype=np.float64)[p.mask(np.arange(4000, dtype=np.float64))]
    head = p.head_mask(x, 0.1)
    assert (~head).sum() == math.ceil(TAIL_SHARE * p.recent)
    assert x[~head].min() > x[head].max()  # the tail is the end


def test_fit_data_of_a_long_series_is_the_exact_problem_on_its_subset():
    """Above max_points, the LML and its gradient are those of an exact GP on the subset's points
    (the method is exact on what it keeps); at max_points ≥ n nothing changes."""
    ds = _series(3000)
    kernel = compose(["+", "SE", ["*", "PER", "SE"]])
    z = np.random.default_rng(2).normal(0.0, 0.5, kernel.n_params + 1)
    sub = FitData.from_dataset(ds, max_points=1000)
    assert sub.n == 1000 and sub.approximation == plan_subset(ds.n_train, 1000)
    keep = plan_subset(ds.n_train, 1000).mask(ds.X_train[:, 0])
    manual = Dataset.from_arrays(ds.X_train[keep], ds.y_train[keep], test_fraction=0.0)
    # Same normalisation as the long series (fitted on all its training points).
    Xm, ym = ds.norm.x_to_model(manual.x), ds.norm.y_to_model(manual.y)
    v1, g1, _ = lml_and_grad(kernel, sub.inputs, sub.y, z[:-1], z[-1])
    ref = FitData.from_arrays(Xm, ym, split_fraction=0.0)
    v2, g2, _ = lml_and_grad(kernel, ref.inputs, ref.y, z[:-1], z[-1])
    assert v1 == pytest.approx(v2, rel=1e-10) and np.allclose(g1, g2, rtol=1e-8, atol=1e-10)
    full = FitData.from_dataset(ds, max_points=0)
    same = FitData.from_dataset(ds, max_points=ds.n_train)
    assert full.n == same.n == ds.n_train and same.approximation.exact
    va, ga, _ = lml_and_grad(kernel, full.inputs, full.y, z[:-1], z[-1])
    vb, gb, _ = lml_and_grad(kernel, same.inputs, same.y, z[:-1], z[-1])
    assert va == vb and np.array_equal(ga, gb)


def test_the_periodogram_of_a_subset_is_the_whole_series():
    """A subset keeps the frequency peaks of all the training points (a weekly cycle may not fit in it)."""
    ds = _series(6000)
    sub = FitData.from_dataset(ds, max_points=500)
    period_steps = 2 * math.pi / np.array(sub.frequency_peaks[0]) / sub.step
    assert abs(period_steps[0] - 48) < 0.5


def test_kernel_file_records_the_subset_and_predictions_condition_on_it():
    ds = _series(2500)
    data = FitData.from_dataset(ds, max_points=600)
    fit = fit_kernel(compose(["*", "PER", "SE"]), data, OptimConfig(n_restarts=1, max_evals=15),
                     np.random.default_rng(0))
    assert fit.ok and fit.n == 600
    doc = kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, n_train=ds.n_train,
                           test_fraction=ds.test_fraction)
    assert doc["approximation"]["method"] == "subset" and "600 of 2,250" in doc["approximation"]["description"]
    kf = parse_kernel_file(dump_kernel_file(doc))
    assert kf.approximation == plan_subset(ds.n_train, 600)
    model = kf.model()
    pred = model.predict_dataset(ds)
    keep = kf.approximation.mask(ds.X_train[:, 0])
    exact_on_subset = FittedModel(kf.kernel, kf.theta, kf.log_noise, kf.jitter, ds.norm,
                                  DataSubset(int(keep.sum()), 0, int(keep.sum()), 0))
    ref = exact_on_subset.predict(ds.X_train[keep], ds.y_train[keep], ds.X_test)
    assert np.allclose(pred.mean, ref.mean) and np.allclose(pred.std, ref.std)
    # The test RMSE the fit recorded is the prediction's.
    assert model.test_rmse(ds) == pytest.approx(fit.test_rmse, rel=1e-8)
    # A stored kernel read back as a fit (the Results page) keeps the subset: never an exact GP on every point.
    again = kf.to_fit(ds.n_train)
    assert again.n == 600 and FittedModel.from_fit(again, ds.norm, ds.n_train).approximation == kf.approximation


def test_approximation_record_is_validated():
    with pytest.raises(ValueError, match="malformed"):
        DataSubset.from_dict({"n_total": 10, "max_points": 5, "recent": 8, "history": 5})
    with pytest.raises(ValueError, match="malformed"):
        DataSubset.from_dict({"n_total": "x"})
    from evocov_core.runs.kernel_file import KernelFileError

    doc = kernel_file_dict(fit_kernel(compose("SE"), FitData.from_dataset(_series(60)), OptimConfig(n_restarts=1),
                                      np.random.default_rng(0)), None)
    doc["approximation"] = [1, 2]
    with pytest.raises(KernelFileError, match="approximation"):
        parse_kernel_file(dump_kernel_file(doc))


def test_a_stored_record_reopens_on_the_subset_its_search_used():
    """The Pareto tab and the explorer reopen records: their fits say how many points they used."""
    from evocov_core.searches import EvalRecord

    ds = _series(2500)
    data = FitData.from_dataset(ds, max_points=600)
    fit = fit_kernel(compose("SE"), data, OptimConfig(n_restarts=1, max_evals=10), np.random.default_rng(0))
    rec = EvalRecord.from_row(EvalRecord.from_fit(fit, 0, 0, "test").to_row())
    assert rec.to_fit(ds.n_train, 600).n == 600
    assert rec.to_fit(ds.n_train).n == 2000  # the search's default limit
    assert rec.to_fit(ds.n_train, 0).n == ds.n_train  # a search told to use every point
    assert rec.to_fit(500).n == 500 and rec.to_fit().n == 0


def test_the_report_of_a_long_series_says_so_and_scores_everything_on_the_subset():
    """A 20,000-point series (an exact GP on all of it would need a 2.6 GB matrix per kernel): the report
    names the subset, its baselines are fitted on it, its residual checks read the most recent points."""
    from evocov_core.present.gp_comparison import compare_with_baselines
    from evocov_core.present.report_html import RESIDUAL_POINTS, report_html

    ds = _series(20_000)
    data = FitData.from_dataset(ds, max_points=500)
    fit = fit_kernel(compose(["*", "PER", "SE"]), data, OptimConfig(n_restarts=1, max_evals=15),
                     np.random.default_rng(0))
    kf = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test,
                                                             n_train=ds.n_train, test_fraction=ds.test_fraction)))
    rows = compare_with_baselines(kf, ds, baseline_budget=0)
    assert [r.model.approximation for r in rows] == [plan_subset(ds.n_train, 500)] * 2
    assert rows[0].bic == pytest.approx(fit.bic, rel=1e-9)  # scored on the points it was fitted on
    text = report_html(kf, ds, baseline_budget=0, classical=False)
    assert "Fitted with an exact GP on 500 of 18,000 training points" in text
    assert f"Residuals of the most recent {RESIDUAL_POINTS:,} of the 18,000 training points" in text


def _two_cycles(n: int) -> Dataset:
    """Half-hourly: a daily cycle of 48 steps and a weaker weekly one of 336, plus noise."""
    t = np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(5)
    y = 3 * np.sin(2 * np.pi * t / 48) + 1.5 * np.cos(2 * np.pi * t / 336) + 0.3 * rng.standard_normal(n)
    return Dataset.from_arrays(t, y, name=f"cycles{n}", test_fraction=0.1)


def test_screening_of_a_long_series_sees_two_weekly_cycles():
    """On a subset of a long series the screening block holds two of its longest clear period
    (336 steps here), contiguous at the end; exact data keep half the screening points."""
    from evocov_core.searches.stages import SCREEN_RECENT_MAX, screen_mask, screen_recent

    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    recent = screen_recent(long, 240)
    assert 2 * 336 <= recent <= SCREEN_RECENT_MAX
    mask = screen_mask(long.n, 240, recent)
    assert mask[long.n - recent:].all()
    assert mask.sum() == recent + 120  # and 120 spread over the rest of the range
    short = FitData.from_dataset(_two_cycles(1200), max_points=2000)
    assert short.approximation.exact and screen_recent(short, 240) == 120


def test_baselines_of_many_points_search_on_a_subset_and_are_scored_on_all():
    """Above ``points`` the SE baseline is fitted on the screening subset (the recent block whole) and
    refined on every point: its fit is on all of them, and no worse there than the subset's values."""
    from evocov_core.fitting.gp import lml
    from evocov_core.language.library import squared_exponential
    from evocov_core.searches.gp_baselines import baseline_subset, fit_fixed, se_baseline

    data = FitData.from_dataset(_series(900), max_points=0)
    assert baseline_subset(data, points=data.n) is None
    small = baseline_subset(data, points=200)
    assert 200 <= small.n < data.n
    recent = np.sort(data.X[:, 0])[-100:]
    assert np.isin(recent, small.X[:, 0]).all()  # the most recent 100 points, contiguous
    assert small.step == data.step and small.span == data.span
    fit = se_baseline(data, points=200)
    assert fit.ok and fit.n == data.n
    on_small = fit_fixed(squared_exponential(), small)
    at_small_values, _ = lml(on_small.kernel, data.inputs, data.y, np.array(on_small.theta), on_small.log_noise)
    assert fit.lml >= at_small_values - 1e-9
    again = se_baseline(data, points=200)  # seeded
    assert (again.theta, again.log_noise, again.lml) == (fit.theta, fit.log_noise, fit.lml)
    assert se_baseline(data, points=data.n).n_evals > fit.n_evals  # the full fit: 5 restarts on all points


def test_the_report_searches_its_gpss_baseline_on_a_subset_of_many_points(monkeypatch):
    """The report's GPSS baseline on a long series searches the subset and is scored on every point
    the kernel was fitted on; its note says so."""
    import evocov_core.searches.gp_baselines as baselines
    from evocov_core.fitting.gp import lml
    from evocov_core.fitting.scoring import bic
    from evocov_core.present.gp_comparison import compare_with_baselines

    monkeypatch.setattr(baselines, "BASELINE_POINTS", 150)
    ds = _series(1000)
    data = FitData.from_dataset(ds)
    fit = fit_kernel(compose(["+", "PER", "LIN"]), data, OptimConfig(n_restarts=1, max_evals=15),
                     np.random.default_rng(0))
    kf = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test,
                                                             n_train=ds.n_train, test_fraction=ds.test_fraction)))
    rows = compare_with_baselines(kf, ds, baseline_budget=0.5)
    se, gpss = rows[1], rows[2]
    assert gpss.model is not None and math.isfinite(gpss.bic)
    for row in (se, gpss):
        assert f"of the {ds.n_train:,} points, refined on all of them" in row.note
        # Its BIC is its likelihood on every training point, as the kernel's own.
        m = row.model
        value, _ = lml(m.kernel, data.inputs, data.y, np.array(m.theta), m.log_noise)
        assert row.bic == pytest.approx(bic(value, m.kernel.q, ds.n_train), rel=1e-9)
