"""The report of a long series (issue 28): it draws thinned traces, and scores, predicts and factorises as before."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest

import evocov_core.fitting.model as model_module
from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.model import FittedModel, shared_posteriors
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.library import compose
from evocov_core.present.figures import MAX_DRAWN, WEBGL_FROM, extrapolation_data
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, parse_kernel_file


def _series(n: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    y = 0.01 * t + np.sin(2 * math.pi * t / 48) + 0.3 * rng.standard_normal(n)
    y[n // 3] += 6.0  # one outlier in the training part: its residual must be drawn
    return Dataset.from_arrays(t, y, name=f"synthetic{n}", test_fraction=0.1)


def _kernel_file(ds: Dataset, points: int = 400):
    data = FitData.from_dataset(ds, max_points=points)
    fit = fit_kernel(compose(["*", "PER", "SE"]), data, OptimConfig(n_restarts=1, max_evals=15),
                     np.random.default_rng(0))
    assert fit.ok
    return parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test,
                                                               n_train=ds.n_train, test_fraction=ds.test_fraction)))


def test_shared_posteriors_factorise_once_and_give_the_same_numbers(monkeypatch):
    ds = _series(3000)
    model = _kernel_file(ds).model()
    grid = np.linspace(0, 3300, 500)[:, None]
    alone = model.predict(ds.X_train, ds.y_train, grid)
    alone_test = model.predict_dataset(ds)
    calls = []
    real = model_module.condition
    monkeypatch.setattr(model_module, "condition", lambda *a, **k: calls.append(1) or real(*a, **k))
    with shared_posteriors():
        rm = model.test_rmse(ds)  # the mean alone first, then the variances at the same points
        test = model.predict_dataset(ds)
        shared = model.predict(ds.X_train, ds.y_train, grid)
        again = model.predict_mean(ds.X_train, ds.y_train, grid)
        shifted = model.predict_mean(ds.X_train, ds.y_train + 1.0, grid)  # other data: not the cached answer
    assert len(calls) == 2  # one factor per training data: y and y + 1
    assert np.array_equal(shared.mean, alone.mean) and np.array_equal(shared.std, alone.std)
    assert np.array_equal(shared.std_f, alone.std_f) and np.array_equal(again, alone.mean)
    assert np.array_equal(test.mean, alone_test.mean) and np.array_equal(test.std, alone_test.std)
    assert rm == rmse(ds.y_test, alone_test.mean)
    assert np.array_equal(shifted, model.predict_mean(ds.X_train, ds.y_train + 1.0, grid))
    assert not np.allclose(shifted, alone.mean)
    # Outside the block nothing is kept: gp.posterior factorises on its own each time.
    calls.clear()
    model.predict(ds.X_train, ds.y_train, grid)
    assert len(calls) == 0


def test_baseline_curves_are_means_only_and_the_same_means():
    ds = _series(1200)
    model = _kernel_file(ds, points=300).model()
    band = extrapolation_data(model, ds, extend=0.1)
    line = extrapolation_data(model, ds, extend=0.1, band=False)
    assert np.allclose(line["mean"], band["mean"], rtol=1e-12, atol=1e-12)
    assert line[["lower", "upper", "std"]].isna().all().all() and band["std"].notna().all()
    assert np.array_equal(line["x_value"], band["x_value"])


def _trace_points(trace) -> int:
    return len(trace.y) if trace.y is not None else 0


def test_the_report_of_a_long_series_draws_thinned_traces_and_scores_every_point(monkeypatch):
    """6,000 points (5,400 training): every trace of the report draws at most MAX_DRAWN points, the Q-Q
    plot at most QQ_DRAWN, yet the test RMSE, BIC and residual counts are those of every point."""
    from evocov_core.present.report_html import QQ_DRAWN, RESIDUAL_POINTS, report_html, residual_checks

    ds = _series(6000)
    assert ds.n_train > RESIDUAL_POINTS > MAX_DRAWN
    kf = _kernel_file(ds)
    drawn: list[go.Figure] = []
    real = go.Figure.to_html
    monkeypatch.setattr(go.Figure, "to_html", lambda self, *a, **k: drawn.append(self) or real(self, *a, **k))
    text = report_html(kf, ds, baseline_budget=0, classical=False)

    assert len(drawn) >= 4  # forecast, one component at least, residuals, autocorrelation, Q-Q
    for fig in drawn:
        for trace in fig.data:
            assert _trace_points(trace) <= MAX_DRAWN, (fig.layout.title.text, trace.name, _trace_points(trace))
            if "markers" in (getattr(trace, "mode", None) or "") and _trace_points(trace) >= WEBGL_FROM:
                assert isinstance(trace, go.Scattergl), trace.name
    titles = {fig.layout.title.text: fig for fig in drawn if fig.layout.title.text}
    qq = titles["Normal Q-Q plot of the residuals"]
    assert _trace_points(qq.data[0]) <= QQ_DRAWN
    model = kf.model()
    chk = residual_checks(model, ds)
    # Thinned, never cut: the largest residual, and both ends of the Q-Q plot, are drawn.
    res = titles["Standardised residuals on the training data"].data[0]
    assert np.max(np.abs(res.y)) == np.max(np.abs(chk["residual"])) > 5
    assert qq.data[0].y[0] == chk["sample"][0] and qq.data[0].y[-1] == chk["sample"][-1]
    forecast = drawn[0]
    train = next(t for t in forecast.data if (t.name or "").startswith("train"))
    assert f"({len(train.y):,} of {ds.n_train:,} drawn)" in train.name
    assert np.max(train.y) == np.max(ds.y_train) and np.min(train.y) == np.min(ds.y_train)

    # The numbers are those of every point, computed without the report's shared factorisations.
    rows = json.loads(re.search(r'id="evocov-comparison">(.*?)</script>', text).group(1))
    full = model.predict_dataset(ds)
    assert rows[0]["model"] == "this kernel"
    assert "given the rest at the fitted values (no refit: a long series)" in text  # how its tail score is read
    assert rows[0]["test_rmse"] == pytest.approx(rmse(ds.y_test, full.mean), rel=1e-12)
    assert f"test RMSE {rmse(ds.y_test, full.mean):.4g}" in text
    outside = int(np.sum(np.abs(chk["acf"]) > 2 / math.sqrt(chk["residual"].size)))
    assert f"{outside} of {chk['acf'].size} autocorrelations lie outside" in text
    se = next(t for t in forecast.data if t.name == "SE mean")
    assert rows[1]["model"] == "SE" and len(se.y) <= MAX_DRAWN


def test_compare_fits_the_gps_while_the_classical_forecasters_run(monkeypatch):
    """With GPSS in this process (workers=1), the classical forecasters (their own child process) run at
    the same time as the GP baselines, and the table is the one made one after the other."""
    import threading

    import evocov_core.present.compare as compare_module
    from evocov_core.forecast.classical import classical_forecasts

    ds = _series(400)
    kf = _kernel_file(ds, points=0)
    started = threading.Event()
    overlap: list[bool] = []
    real_baselines = compare_module.compare_with_baselines

    def fake_classical(data, **kwargs):
        started.set()
        return classical_forecasts(data, models=("SeasonalNaive",), **kwargs)

    def baselines(*args, **kwargs):
        overlap.append(started.wait(timeout=20))  # made one after the other, this would wait in vain
        return real_baselines(*args, **kwargs)

    monkeypatch.setattr(compare_module, "classical_forecasts", fake_classical)
    monkeypatch.setattr(compare_module, "compare_with_baselines", baselines)
    both = compare_module.compare(kf, ds, baseline_budget=0, workers=1)
    assert overlap == [True]
    done = fake_classical(ds)
    again = compare_module.compare(kf, ds, baseline_budget=0, workers=1, classical_done=done)
    cols = ["method", "test_rmse", "coverage_95", "crps", "interval_score", "status"]
    assert both.table[cols].equals(again.table[cols]) and list(both.table["method"]) == ["this kernel", "SE",
                                                                                         "SeasonalNaive"]


def test_the_tail_score_reads_a_long_series_fitted_values_and_refits_a_short_one(monkeypatch):
    """On a long series' fit points the report's tail score is the tail given the head at the fitted values,
    as the search's own choice reads them there (a refit on 1,800 points took most of the report's time);
    a short series' is still refitted on the head."""
    import evocov_core.searches.stages as stages
    from evocov_core.fitting.metrics import metric_value
    from evocov_core.fitting.optimize import Start
    from evocov_core.present import gp_comparison as baselines
    from evocov_core.searches import preset

    optim = preset("quick").optim
    refits = []
    real = stages.head_stage
    monkeypatch.setattr(stages, "head_stage", lambda *a, **k: refits.append(1) or real(*a, **k))
    for n, refitted in ((3000, False), (120, True)):
        ds = _series(n)
        kf = _kernel_file(ds)
        model = kf.model()
        data = baselines.training_data(ds, model.norm, approximation=model.approximation)
        assert data.on_subset is not refitted
        refits.clear()
        score = baselines._tail(kf.kernel, Start(tuple(kf.theta), kf.log_noise), data, optim, (0, 1))
        assert math.isfinite(score) and bool(refits) is refitted
        at_values = metric_value("posterior_lml", kf.kernel, data, np.array([*kf.theta, kf.log_noise]))
        if not refitted:
            assert score == at_values


def test_baselines_fitted_already_are_scored_as_they_are_and_refused_on_other_points(monkeypatch):
    """The dashboard's SE fit and a finished GPSS run, given to the comparison: no baseline is fitted, the SE
    row is the one the comparison makes itself (the same seeded fit), the GPSS row is the given kernel's; a
    baseline fitted on other points or in other units is refused, not scored against the wrong data."""
    import dataclasses

    from evocov_core.present import gp_comparison as baselines
    from evocov_core.searches import gp_baselines

    ds = _series(1200)
    kf = _kernel_file(ds, points=300)
    norm, n = baselines.comparison_units(kf, ds)
    assert n == 300 and norm == ds.norm  # the file's normalisation read back is the data set's: reusable
    own = baselines.compare_with_baselines(kf, ds, baseline_budget=0)
    data = baselines.training_data(ds, norm, approximation=kf.approximation)
    se = baselines.FittedBaseline(gp_baselines.se_baseline(data), norm)
    other = fit_kernel(compose(["+", "SE", "LIN"]), data, OptimConfig(n_restarts=1, max_evals=15),
                       np.random.default_rng(1))
    gpss = baselines.FittedBaseline(other, norm, note="GPSS run x", seconds=61.0)
    assert se.fits(kf, ds) and gpss.fits(kf, ds)

    def no_fit(*_a, **_k):
        raise AssertionError("a baseline was fitted again")

    monkeypatch.setattr(gp_baselines, "se_baseline", no_fit)
    monkeypatch.setattr(gp_baselines, "gpss_baseline", no_fit)
    rows = baselines.compare_with_baselines(kf, ds, baseline_budget=5.0, se_done=se, gpss_done=gpss)
    assert [r.name for r in rows] == ["this kernel", "SE", "GPSS"]
    for a in ("expression", "q", "bic", "tail_score", "test_rmse", "note"):
        assert getattr(rows[1], a) == getattr(own[1], a), a
    assert rows[1].seconds is None and rows[0].bic == own[0].bic
    assert rows[2].expression == other.kernel.infix and rows[2].bic == other.bic
    assert rows[2].note == "GPSS run x" and rows[2].seconds == 61.0
    assert rows[2].test_rmse == FittedModel.from_fit(other, norm, ds.n_train).test_rmse(ds)
    # Without one, the comparison would fit it: here, the patched function says so.
    with pytest.raises(AssertionError, match="fitted again"):
        baselines.compare_with_baselines(kf, ds, baseline_budget=0, gpss_done=gpss)
    # Fitted on 400 points, or in other units: refused.
    wider = baselines.FittedBaseline(dataclasses.replace(se.fit, n=400), norm)
    shifted = baselines.FittedBaseline(se.fit, dataclasses.replace(norm, y_mean=norm.y_mean + 1.0))
    for wrong in (wider, shifted):
        assert not wrong.fits(kf, ds)
        with pytest.raises(ValueError, match="not on the 300 training points the kernel is compared on"):
            baselines.compare_with_baselines(kf, ds, baseline_budget=0, se_done=wrong)
