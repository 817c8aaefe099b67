"""The search's forecast: the kernel's and classical forecasts weighted by their errors from earlier origins,
without the kernel's when it leaves the classical intervals (evocov_core.forecast.combination,
evocov_core.forecast.beside), and where it is recorded and shown."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest

from evocov_core.data import Dataset, load_bundled
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.fitting.seasons import Seasons
from evocov_core.forecast.beside import (
    LONG_POINTS,
    Chosen,
    ClassicalBeside,
    combined_test_mean,
    eligibility,
    guard_steps,
    kernel_future_mean,
    kernel_test_mean,
    origin_datasets,
    steps_after,
)
from evocov_core.forecast.classical import (
    ClassicalForecast,
    ClassicalForecasts,
    classical_forecasts,
    classical_forecasts_many,
)
from evocov_core.forecast.combination import (
    GUARD_HALF_WIDTHS,
    KERNEL,
    MIN_WEIGHT,
    SHORT_KERNEL_WEIGHT,
    Combination,
    equal_members,
    guard_reason,
    interval_excess,
    inverse_error_weights,
    weigh_members,
)
from evocov_core.forecast.stage import search_and_forecast
from evocov_core.language.library import compose
from evocov_core.present.compare import forecast_comparison
from evocov_core.runs.kernel_file import KernelFileError, dump_kernel_file, kernel_file_dict, parse_kernel_file
from evocov_core.searches import preset, run_search, search_data, search_executor
from evocov_core.searches.config import ConfigError
from evocov_core.searches.validate import OriginScores, origin_masks, origin_windows


def _series(n: int = 96, seed: int = 0) -> Dataset:
    """Monthly-like: a trend, a 12-step cycle and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    return Dataset.from_arrays(t, 0.3 * t + 5 * np.sin(2 * np.pi * t / 12) + rng.standard_normal(n),
                               test_fraction=0.1)


def _cut_series(ds: Dataset) -> list[Dataset]:
    """The training part cut at each default origin, written out independently of the package: the points before
    the origin train, the next 10 % of the training x-range is the test part (what the post hoc studies fitted)."""
    x, y = ds.x[ds.train], ds.y[ds.train]
    lo, span = float(x[:, 0].min()), float(np.ptp(x[:, 0]))
    out = []
    for o in (0.6, 0.7, 0.8, 0.9):
        head = x[:, 0] <= lo + o * span
        keep = head | (x[:, 0] <= lo + min(1.0, o + 0.1) * span)
        if head.sum() >= 8 and (keep & ~head).any():
            out.append(dataclasses.replace(ds, x=x[keep], y=y[keep], train=head[keep]))
    return out


# --- the choice -------------------------------------------------------------------------------------


def test_inverse_error_weights_follow_the_power_and_survive_extremes():
    assert np.allclose(inverse_error_weights([1.0, 2.0], 2.0), [0.8, 0.2])  # 1 : 1/4
    assert np.allclose(inverse_error_weights([1.0, 2.0], 1.0), [2 / 3, 1 / 3])  # Bates & Granger
    assert np.allclose(inverse_error_weights([1.0, 2.0, 7.0], 0.0), [1 / 3] * 3)  # equal weights
    assert np.allclose(inverse_error_weights([3.0, math.inf, 3.0]), [0.5, 0.0, 0.5])  # a failed member
    assert np.allclose(inverse_error_weights([0.0, 1.0]), [1.0, 0.0])  # an exact forecast takes it all
    w = inverse_error_weights([1e-300, 1e300], 4.0)  # no overflow, no NaN
    assert np.all(np.isfinite(w)) and w[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="finite"):
        inverse_error_weights([math.inf, math.nan])


def test_members_are_weighted_by_their_errors_from_the_origins():
    y = [np.array([1.0, 2.0]), np.array([3.0, 3.0])]
    kernel = [a + 1.0 for a in y]  # squared error 4 over the origins
    classical = [{"AutoETS": a + 2.0, "AutoTheta": a - 0.5} for a in y]  # 16 and 1
    c = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"))
    assert dict(c.origin_sse) == {"kernel": 4.0, "AutoETS": 16.0, "AutoTheta": 1.0} and c.origins == 2
    # 1/16 : 1/256 : 1: ETS's 0.4 % is dropped and the rest renormalised.
    assert c.members == (KERNEL, "AutoTheta") and c.weights == pytest.approx((1 / 17, 16 / 17))
    assert c.combined and not c.guard and c.label == "kernel 0.06 + AutoTheta 0.94"
    assert np.allclose(c.mean(kernel[0], classical[0]), (kernel[0] + 16 * classical[0]["AutoTheta"]) / 17)
    # Power 0: every member, equal weights.
    eq = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"), power=0.0)
    assert eq.members == (KERNEL, "AutoETS", "AutoTheta") and eq.weights == pytest.approx((1 / 3,) * 3)


def test_a_kernel_far_better_than_the_others_is_the_forecast_alone():
    y = [np.array([1.0, 2.0])]
    c = weigh_members([y[0] + 0.01], [{"AutoETS": y[0] + 1.0}], y, ("AutoETS",))
    assert c.members == (KERNEL,) and c.weights == (1.0,) and not c.combined
    assert c.describe().startswith("The forecast is the kernel's own: from 1 earlier points in time")
    assert f"under {MIN_WEIGHT:.0%}" in c.describe()


def test_missing_forecasts_and_failed_kernels_give_no_weight():
    y = [np.array([1.0]), np.array([2.0])]
    # ETS failed at one origin: its error is infinite, its weight 0.
    c = weigh_members([np.array([3.0]), np.array([4.0])], [{"AutoETS": np.array([1.0])}, {"AutoETS": None}], y,
                      ("AutoETS",))
    assert c.members == (KERNEL,) and dict(c.origin_sse)["AutoETS"] == math.inf
    # A forecast of the wrong length or with a NaN counts as failed too.
    c = weigh_members([np.array([3.0]), np.array([4.0])], [{"AutoETS": np.array([1.0, 1.0])},
                                                           {"AutoETS": np.array([np.nan])}], y, ("AutoETS",))
    assert c.members == (KERNEL,)
    # The kernel failed everywhere: ETS alone would be the forecast, but the kernel is listed with weight 0.
    c = weigh_members([None, None], [{"AutoETS": np.array([1.0]), }, {"AutoETS": np.array([2.5])}], y, ("AutoETS",))
    assert c.members == (KERNEL, "AutoETS") and c.weights == (0.0, 1.0)
    # Nothing finite at all: the kernel's own, with a reason.
    c = weigh_members([None, None], [{}, {}], y, ("AutoETS",))
    assert c.members == (KERNEL,) and "no member had finite errors" in c.reason
    assert "no earlier origin" in weigh_members([], [], [], ("AutoETS",)).reason
    with pytest.raises(ValueError, match="targets"):
        weigh_members([None], [{}, {}], y, ("AutoETS",))


def test_an_excluded_member_keeps_its_error_and_loses_its_weight():
    y = [np.array([1.0, 2.0])]
    kernel, classical = [y[0] + 0.1], [{"AutoETS": y[0] + 1.0, "AutoTheta": y[0] - 2.0}]
    g = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"), exclude=(KERNEL,), guard="it explodes")
    assert g.members == (KERNEL, "AutoETS", "AutoTheta") and g.weights[0] == 0.0
    assert g.weights[1:] == pytest.approx((16 / 17, 1 / 17)) and g.guard == "it explodes"
    assert dict(g.origin_sse)["kernel"] == pytest.approx(0.02)
    assert g.label == "AutoETS 0.94 + AutoTheta 0.06"
    # The kernel's forecast does not enter the mean, even when it is not finite.
    assert np.allclose(g.mean(np.array([np.nan, np.inf]), classical[0]),
                       (16 * classical[0]["AutoETS"] + classical[0]["AutoTheta"]) / 17)
    text = g.describe()
    assert text.startswith("The forecast is AutoETS's and AutoTheta's, not the kernel's: it explodes.")
    # Nothing left to replace the kernel: its own forecast, and the reason says why.
    alone = weigh_members(kernel, [{}], y, ("AutoETS",), exclude=(KERNEL,), guard="it explodes")
    assert alone.members == (KERNEL,) and "no classical forecast is there to replace it" in alone.reason


def test_on_a_short_series_the_kernels_weight_is_held_and_the_others_share_the_rest():
    y = [np.array([1.0, 2.0])]
    kernel, classical = [y[0] + 0.1], [{"AutoETS": y[0] + 1.0, "AutoTheta": y[0] - 2.0}]
    free = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"))
    assert free.weights[0] > 0.99 and free.held == ""
    g = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"), max_kernel_weight=SHORT_KERNEL_WEIGHT,
                      held="few points")
    ets, theta = inverse_error_weights([2.0, 8.0])  # the classical members' errors: 2 and 8
    assert g.members == (KERNEL, "AutoETS", "AutoTheta") and g.held == "few points"
    assert g.weights == pytest.approx((0.5, 0.5 * ets, 0.5 * theta))
    assert "The kernel's weight is held at 0.50: few points." in g.describe()
    assert Combination.from_dict(g.to_dict()) == g and g.to_dict()["held"] == "few points"
    # Under the cap nothing changes, and nothing is said.
    even = [{"AutoETS": y[0] + 0.1, "AutoTheta": y[0] - 0.1}]
    same = weigh_members(kernel, even, y, ("AutoETS", "AutoTheta"), max_kernel_weight=0.5, held="few points")
    assert same.weights == pytest.approx((1 / 3,) * 3) and same.held == "" and "held" not in same.to_dict()
    # A guarded kernel has weight 0 whatever the cap.
    out = weigh_members(kernel, classical, y, ("AutoETS", "AutoTheta"), exclude=(KERNEL,), guard="it explodes",
                        max_kernel_weight=0.5, held="few points")
    assert out.weights[0] == 0.0 and out.held == ""
    # A kernel with no error at all would take everything: the others share the rest equally.
    perfect = weigh_members([y[0]], classical, y, ("AutoETS", "AutoTheta"), max_kernel_weight=0.5, held="few")
    assert perfect.weights == pytest.approx((0.5, 0.25, 0.25)) and perfect.held == "few"
    with pytest.raises(ValueError, match="max_kernel_weight"):
        weigh_members(kernel, classical, y, ("AutoETS",), max_kernel_weight=0.0)
    with pytest.raises(ValueError, match="held"):
        Combination.from_dict({**g.to_dict(), "held": 3})


def test_a_search_holds_the_kernel_on_series_no_longer_than_its_setting():
    """ClassicalBeside.choose with a kernel that forecast every origin almost exactly: all the weight,
    unless the series has at most ``short`` training points."""
    ds = _series(60)
    data = FitData.from_dataset(ds)
    beside = ClassicalBeside(ds, data, ("AutoETS", "SeasonalNaive"))
    targets = np.concatenate([ds.y_train[t] for _, _, t in origin_windows(data)])
    close = targets + 0.01 * np.cos(np.arange(targets.size))  # far better than any classical model
    windows = origin_windows(data)
    exact = OriginScores(tuple(o for o, _, _ in windows), (0.0,) * len(windows), (0.0,) * len(windows),
                         tuple(int(t.sum()) for _, _, t in windows), mean=(close - data.y_mean) / data.y_std)
    free = beside.choose(exact, guard=False, short=ds.n_train - 1).combination
    assert free.members == (KERNEL,) and free.held == ""
    held = beside.choose(exact, guard=False, short=ds.n_train).combination
    assert held.weights[0] == pytest.approx(SHORT_KERNEL_WEIGHT) and sum(held.weights[1:]) == pytest.approx(0.5)
    assert held.held == f"on {ds.n_train} training points the errors from the earlier origins are too few to trust more"
    assert preset("quick").combine_short == preset("standard").combine_short == 100


def test_interval_excess_measures_how_far_outside_the_union_of_the_intervals():
    lo1, hi1 = np.zeros(3), np.full(3, 2.0)
    lo2, hi2 = np.full(3, -2.0), np.ones(3)  # the union: [-2, 2], half-width 2
    assert interval_excess(np.array([0.0, 1.5, -1.9]), [lo1, lo2], [hi1, hi2]) == (0.0, -1)
    assert interval_excess(np.array([0.0, 5.0, -4.0]), [lo1, lo2], [hi1, hi2]) == (1.5, 1)
    assert interval_excess(np.array([0.0, np.nan, 0.0]), [lo1], [hi1]) == (math.inf, 1)
    assert interval_excess(np.array([9.0]), [], []) == (0.0, -1)


def _band(name: str, mean: np.ndarray, half: float) -> ClassicalForecast:
    return ClassicalForecast(name, mean, mean - half, mean + half, "ok", "", 0.1)


def test_the_guard_fires_only_beyond_the_set_number_of_half_widths():
    flat = np.zeros(5)
    bands = [_band("AutoETS", flat, 1.0), _band("AutoTheta", flat + 0.5, 1.0)]  # union [-1, 1.5]
    inside = np.array([0.0, 0.5, 1.0, 1.4, 1.5])
    assert guard_reason(inside, bands) == ""
    just = np.r_[inside[:4], 1.5 + GUARD_HALF_WIDTHS * 1.25 - 1e-9]  # within one half-width (1.25)
    assert guard_reason(just, bands) == ""
    wild = np.r_[inside[:4], 1.5 + 3 * 1.25]
    why = guard_reason(wild, bands)
    assert why == ("the kernel's forecast leaves AutoETS's and AutoTheta's 95 % intervals by 3 half-widths at step 5 "
                   "of 5")
    assert "with no finite value" in guard_reason(np.r_[inside[:4], np.inf], bands)
    # No interval to compare with, or no kernel forecast: no guard.
    assert guard_reason(wild, [ClassicalForecast("AutoETS", flat, None, None, "ok", "", 0.1)]) == ""
    assert guard_reason(None, bands) == ""
    assert kernel_test_mean(None, _series()) is None  # no fitted kernel: nothing to guard
    assert guard_reason(wild[:3], bands) == ""  # another horizon


def test_the_description_says_which_forecast_and_why():
    assert Combination().describe() is None  # no combination asked for
    weighted = Combination((KERNEL, "AutoETS", "AutoTheta"), (("kernel", 1.0), ("AutoETS", 2.0), ("AutoTheta", 3.0)),
                           4, weights=(0.6, 0.25, 0.15))
    text = weighted.describe()
    assert text.startswith("The forecast weighs the kernel's, AutoETS's and AutoTheta's forecasts 0.60, 0.25, 0.15, "
                           "by the inverse square of their summed squared errors from 4 earlier points in time")
    assert "kernel 1; AutoETS 2; AutoTheta 3" in text
    # Files written before weights: the equal-weight average their rule chose.
    own = Combination((KERNEL,), (("kernel", 1.0), ("kernel + AutoETS", 2.0)), 4)
    assert own.describe().startswith("The forecast is the kernel's own: from 4 earlier points in time")
    avg = Combination((KERNEL, "AutoTheta"), (("kernel", 3.0), ("kernel + AutoTheta", 2.0)), 4)
    text = avg.describe()
    assert "averaged with equal weights with AutoTheta's" in text and "2" in text and "3" in text
    assert avg.label == "kernel + AutoTheta" and avg.models == ("AutoTheta",) and avg.member_weights == (0.5, 0.5)
    assert Combination(reason="a reason").describe() == "The forecast is the kernel's own: a reason."
    assert avg.mean(np.ones(3), {"AutoTheta": np.ones(2)}) is None  # another horizon: no average
    assert avg.mean(np.ones(3), {}) is None


# --- the kernel file -----------------------------------------------------------------------------


def _doc(combination=None):
    ds = _series(40)
    fit = fit_kernel(compose("SE"), FitData.from_dataset(ds), OptimConfig(n_restarts=1, max_evals=30),
                     np.random.default_rng(0))
    return kernel_file_dict(fit, ds.norm, n_train=ds.n_train, combination=combination)


def test_a_kernel_file_carries_the_combination_and_an_infinite_error_survives_json():
    c = Combination((KERNEL, "AutoETS", "AutoTheta"), (("kernel", 2.5), ("AutoETS", math.inf)), 4)
    kf = parse_kernel_file(dump_kernel_file(_doc(c)))
    assert kf.combination == c  # an older file: no weights
    weighted = Combination((KERNEL, "AutoETS"), (("kernel", 2.5), ("AutoETS", 1.0)), 4, weights=(0.0, 1.0),
                           guard="the kernel's forecast leaves AutoETS's 95 % intervals by 4 half-widths")
    assert parse_kernel_file(dump_kernel_file(_doc(weighted))).combination == weighted
    assert parse_kernel_file(dump_kernel_file(_doc())).combination == Combination()  # older files


@pytest.mark.parametrize("bad", [
    {"members": ["AutoETS"]}, {"members": ["kernel", "eval"]}, {"members": ["kernel", "AutoETS", "AutoETS"]},
    {"members": []}, {"members": ["kernel"], "origins": True}, {"members": ["kernel"], "origins": -1},
    {"members": ["kernel"], "origin_sse": {"kernel": -1.0}}, {"members": ["kernel"], "origin_sse": {"kernel": "x"}},
    {"members": ["kernel"], "reason": "x" * 501}, ["kernel"], {"members": ["kernel", "AutoETS"], "weights": [1.0]},
    {"members": ["kernel", "AutoETS"], "weights": [0.7, 0.7]}, {"members": ["kernel", "AutoETS"], "weights": [-1, 2]},
    {"members": ["kernel", "AutoETS"], "weights": ["a", "b"]}, {"members": ["kernel"], "weights": [True]},
    {"members": ["kernel"], "guard": 3}, {"members": ["kernel"], "guard": "x" * 501}])
def test_a_malformed_combination_in_a_kernel_file_is_refused(bad):
    doc = _doc()
    doc["combination"] = bad
    with pytest.raises(KernelFileError, match="combination"):
        parse_kernel_file(dump_kernel_file(doc))


# --- the comparison table -----------------------------------------------------------------------------


def _classical(ds: Dataset, theta: np.ndarray | None, status: str = "ok") -> ClassicalForecasts:
    rows = (ClassicalForecast("AutoTheta", theta if status == "ok" else None, None, None, status,
                              "" if status == "ok" else f"AutoTheta: {status}", 0.1),)
    return ClassicalForecasts(ds.X_test[:, 0].copy(), Seasons(12), rows)


def test_the_comparison_shows_the_combined_forecast_beside_the_kernels():
    ds = _series()
    kf = parse_kernel_file(dump_kernel_file(_doc(Combination((KERNEL, "AutoTheta"), (), 4))))
    kf = dataclasses.replace(kf, normalisation=ds.norm)
    kernel_mean = kf.model().predict_dataset(ds).mean
    theta = ds.y_test + 1.0
    table = forecast_comparison(ds, kf, classical=_classical(ds, theta)).table.set_index("method")
    row = table.loc["forecast (kernel + AutoTheta)"]
    assert row["kind"] == "combined" and row["status"] == "ok"
    assert row["test_rmse"] == pytest.approx(rmse(ds.y_test, (kernel_mean + theta) / 2))
    assert math.isnan(row["coverage_95"])  # a point forecast
    running = forecast_comparison(ds, kf, classical=_classical(ds, None, "running")).table.set_index("method")
    assert running.loc["forecast (kernel + AutoTheta)", "status"] == "running"
    failed = forecast_comparison(ds, kf, classical=_classical(ds, None, "timeout")).table.set_index("method")
    assert failed.loc["forecast (kernel + AutoTheta)", "status"] == "failed"
    assert "AutoTheta has no forecast" in failed.loc["forecast (kernel + AutoTheta)", "reason"]
    plain = forecast_comparison(ds, kf, classical=_classical(ds, theta), combination=Combination()).table
    assert not (plain["kind"] == "combined").any()


# --- in a search ----------------------------------------------------------------------------------------


def _config(**kw):
    return preset("quick", population=6, mu=2, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4,
                  rho_max=30, time_budget=0.0, **kw)


@pytest.fixture(scope="module")
def searched():
    ds = load_bundled("airline")
    cfg = _config()
    data = search_data(ds, cfg)
    with search_executor(data, cfg, workers=1) as ex:
        res = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=ds)
    return ds, data, cfg, res


def test_a_search_weighs_its_forecast_on_the_origins_as_the_post_hoc_study_did(searched):
    """The classical forecasts at the origins are those of the cut series (:func:`_cut_series`, fitted
    independently here), the recorded errors are each member's there, and the weights
    follow from them (and from the guard, on the forecast of the test part)."""
    ds, data, cfg, res = searched
    assert cfg.combine == ("AutoETS", "AutoTheta") and cfg.combine_guard and res.search.origins is not None
    c = res.combination
    assert c.origins == 4 and c.reason == "" and [k for k, _ in c.origin_sse] == [KERNEL, "AutoETS", "AutoTheta"]
    cuts = _cut_series(ds)
    ets = classical_forecasts_many(cuts, season_lengths=(12,), models=("AutoETS",))
    sse = sum(float(np.sum((e.get("AutoETS").mean - cut.y_test) ** 2)) for e, cut in zip(ets, cuts, strict=True))
    assert dict(c.origin_sse)["AutoETS"] == pytest.approx(sse, rel=1e-9)
    origins = res.search.origins
    kernel = np.split(origins.mean * data.y_std + data.y_mean, np.cumsum(origins.n_targets)[:-1])
    own = sum(float(np.sum((k - cut.y_test) ** 2)) for k, cut in zip(kernel, cuts, strict=True))
    assert dict(c.origin_sse)[KERNEL] == pytest.approx(own, rel=1e-9)
    # The guard, on the kernel's and the classical models' forecasts of the horizon after the training part
    # (a ninth of the training points: the test part a 10 % split leaves), decides whether the kernel takes part.
    assert res.horizon == guard_steps(ds.n_train) == 14 and ds.n_test == 15
    ahead = steps_after(ds, res.horizon)
    assert np.allclose(res.future.x, ahead) and np.allclose(ahead, ds.X_test[:14, 0])  # monthly: the test months
    why = guard_reason(kernel_future_mean(res.search.best, ds, ahead), list(res.future.forecasts))
    assert c.guard == why
    # The test part's classical forecasts are the page's: the same models on the same training points.
    page = classical_forecasts(ds, models=("AutoETS", "AutoTheta"))
    for f in page.forecasts:
        assert np.allclose(res.classical.get(f.name).mean, f.mean) and np.allclose(res.classical.x, page.x)
    kernel_test = kernel_test_mean(res.search.best, ds)
    w = inverse_error_weights([math.inf if (why and k == KERNEL) else v for k, v in c.origin_sse], cfg.combine_power)
    kept = [i for i in range(3) if i == 0 or w[i] >= MIN_WEIGHT]
    assert c.members == tuple(c.origin_sse[i][0] for i in kept)
    if c.combined:
        assert c.weights == pytest.approx(tuple(w[kept] / w[kept].sum()), abs=1e-12)
    # The forecast's test RMSE follows the combination.
    expected = combined_test_mean(c, kernel_test, page)
    assert res.test_rmse(ds) == pytest.approx(rmse(ds.y_test, expected), rel=1e-9)
    if not c.combined:
        assert res.test_rmse(ds) == res.search.best.test_rmse


def test_the_forecast_does_not_depend_on_the_test_part(searched):
    """A search on the training part alone chooses the same kernel, weights and guard as a search on the same
    points with a test part behind them, and forecasts the steps after them alike (issue 70: with no test part,
    every classical member used to count as failed)."""
    ds, _, cfg, res = searched
    alone = Dataset.from_arrays(ds.X_train, ds.y_train, x_kind=ds.x_kind, test_fraction=0.0)
    assert alone.n_test == 0 and alone.n_train == ds.n_train
    data = search_data(alone, cfg)
    with search_executor(data, cfg, workers=1) as ex:
        got = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=alone)
    assert got.search.best.kernel.prefix == res.search.best.kernel.prefix
    assert np.array_equal(got.search.best.theta, res.search.best.theta)
    assert got.combination == res.combination and got.combination.origins == 4 and not got.combination.unavailable
    assert got.horizon == res.horizon and got.classical is None and res.classical is not None
    for a, b in zip(got.future.forecasts, res.future.forecasts, strict=True):
        assert a.status == b.status == "ok" and np.array_equal(a.mean, b.mean) and np.array_equal(a.upper, b.upper)
    # The horizon asked for is what the members forecast and the guard reads.
    with search_executor(data, cfg, workers=1) as ex:
        longer = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=alone, horizon=30)
    assert longer.horizon == 30 and longer.future.x.shape == (30,)
    assert np.array_equal(longer.future.get("AutoETS").mean[:14], got.future.get("AutoETS").mean)
    with pytest.raises(ValueError, match="horizon"):
        ClassicalBeside(alone, data, ("AutoETS",), horizon=0)


def test_a_member_without_a_forecast_of_the_horizon_is_said_so():
    """Members left out because they have no forecast of the horizon are named, and the kernel is not said to have
    the lowest errors when it had not (issue 70, M3 N2997)."""
    y = [np.array([1.0, 2.0])]
    c = weigh_members([y[0] + 3.0], [{"AutoETS": y[0] + 1.0}], y, ("AutoETS",), exclude=("AutoETS",),
                      unavailable="AutoETS: no result within 10 s")
    assert c.members == (KERNEL,) and c.unavailable == "AutoETS: no result within 10 s"
    text = c.describe()
    assert "lowest" not in text and "AutoETS: no result within 10 s: no forecast of the horizon" in text
    assert Combination.from_dict(c.to_dict()) == c
    best = weigh_members([y[0] + 0.01], [{"AutoETS": y[0] + 1.0, "AutoTheta": y[0] + 2.0}], y,
                         ("AutoETS", "AutoTheta"), exclude=("AutoTheta",), unavailable="AutoTheta: failed")
    assert "by far the lowest summed squared error among those that could take part" in best.describe()


def test_the_same_seed_gives_the_same_forecast(searched):
    ds, data, cfg, res = searched
    with search_executor(data, cfg, workers=1) as ex:
        again = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=ds)
    assert again.combination == res.combination
    assert again.search.best.kernel.canonical == res.search.best.kernel.canonical


def test_the_kernels_own_forecast_is_kept_with_a_reason_where_no_choice_can_be_made():
    ds = _series(80)
    data = FitData.from_dataset(ds)
    assert eligibility(ds, data) == ""
    # Weighing reuses the calibration's refits at the origins: other settings are refused at once.
    with pytest.raises(ConfigError, match="set calibration to origins"):
        _config(calibration="tail")
    cfg = _config(calibration="tail", combine=())
    with search_executor(data, cfg, workers=1) as ex:
        res = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=ds)
    assert not res.combination.combined and res.combination == Combination()
    with search_executor(data, cfg, workers=1) as ex:  # the search alone says nothing of a forecast
        assert not hasattr(run_search(data, cfg, seed=0, executor=ex), "combination")
    # Two inputs.
    two = Dataset.from_arrays(np.c_[np.arange(30.0), np.arange(30.0) % 7], np.arange(30.0), test_fraction=0.1)
    assert "one input" in eligibility(two, FitData.from_dataset(two))
    assert ClassicalBeside(ds, data, ()).choose(None) == Chosen(Combination())


def test_classical_forecasts_many_matches_one_call_per_data_set():
    ds = _series(60)
    cut = dataclasses.replace(ds, x=ds.x[:40], y=ds.y[:40], train=np.arange(40) < 36)
    many = classical_forecasts_many([ds, cut], season_lengths=(12,), models=("AutoETS", "SeasonalNaive"))
    for one_ds, got in zip((ds, cut), many, strict=True):
        one = classical_forecasts(one_ds, season_lengths=(12,), models=("AutoETS", "SeasonalNaive"))
        assert [f.name for f in got.forecasts] == ["AutoETS", "SeasonalNaive"]
        for a, b in zip(got.forecasts, one.forecasts, strict=True):
            assert a.status == b.status == "ok" and np.allclose(a.mean, b.mean)
    assert len(many[0].startup) == 1  # one child for both


def test_origin_windows_of_the_search_data_are_the_cut_series():
    ds = _series(90)
    data = FitData.from_dataset(ds)
    for (_, head, target), cut in zip(origin_windows(data), _cut_series(ds), strict=True):
        assert np.array_equal(ds.y_train[head], cut.y_train) and np.array_equal(ds.y_train[target], cut.y_test)


def test_the_classical_models_see_each_origins_head_and_forecast_its_targets():
    ds = _series(90)
    data = FitData.from_dataset(ds)
    full, cuts = origin_datasets(ds, data)
    assert full is ds and len(cuts) == len(origin_windows(data)) == 4
    for (_, head, target), cut in zip(origin_windows(data), cuts, strict=True):
        assert np.array_equal(cut.y_train, ds.y_train[head]) and np.array_equal(cut.y_test, ds.y_train[target])
        assert np.array_equal(cut.X_test, ds.X_train[target])


def test_the_report_says_what_the_forecast_is():
    from evocov_core.present.report_html import report_html

    ds = _series(60)
    avg = Combination((KERNEL, "AutoTheta"), (("kernel", 3.0), ("kernel + AutoTheta", 2.0)), 4)
    kf = dataclasses.replace(parse_kernel_file(dump_kernel_file(_doc(avg))), normalisation=ds.norm)
    text = report_html(kf, ds, baseline_budget=0, classical=False)
    assert "The forecast is the kernel&#x27;s averaged with equal weights with AutoTheta&#x27;s" in text
    assert "<i>forecast</i> row" in text
    # The row it points to is there, in the table and its JSON, when the classical forecasts are.
    with_rows = report_html(kf, ds, baseline_budget=0, classical_done=_classical(ds, ds.y_test + 1.0))
    table = re.search(r'id="evocov-forecast-comparison">(.*?)</script>', with_rows, re.S)
    assert table and "forecast (kernel + AutoTheta)" in [r["method"] for r in json.loads(table.group(1))]
    # At a glance, and the kernel's own forecast drawn beside the combined one, with its weight in words.
    glance = re.search(r'<div class="verdict">(.*?)</div>', with_rows, re.S).group(1)
    assert "<b>Forecast.</b> The forecast&#x27;s test RMSE is " in glance  # (no AutoETS here to compare with)
    assert "<b>Who forecasts.</b> The kernel carries 50 % of the forecast; AutoTheta 50 %." in glance
    assert ("averages the kernel's own forecast (solid) with classical ones: The kernel carries 50 % of the "
            "forecast; AutoTheta 50 %." in with_rows)
    assert re.search(r"the kernel(&#x27;|'|\\u0027)s own forecast", with_rows)
    assert "the forecast (kernel + AutoTheta)" in with_rows
    plain = report_html(dataclasses.replace(kf, combination=Combination()), ds, baseline_budget=0, classical=False)
    assert 'class="combination"' not in plain


# --- long series ----------------------------------------------------------------------------------


def test_origin_masks_over_any_times_are_the_search_datas_windows():
    ds = _series(90)
    data = FitData.from_dataset(ds)
    for (o, head, target), (o2, head2, target2) in zip(origin_windows(data), origin_masks(ds.X_train[:, 0]),
                                                       strict=True):
        assert o == o2 and np.array_equal(head, head2) and np.array_equal(target, target2)


@pytest.fixture(scope="module")
def long_series() -> tuple[Dataset, FitData]:
    """A series longer than the fit points and than LONG_POINTS: the search fits a subset of it."""
    n = LONG_POINTS + 1200
    rng = np.random.default_rng(3)
    t = np.arange(n, dtype=np.float64)
    ds = Dataset.from_arrays(t, 0.01 * t + 3 * np.sin(2 * np.pi * t / 24) + rng.standard_normal(n),
                             test_fraction=0.1)
    return ds, FitData.from_dataset(ds, max_points=300)


def test_on_long_series_the_classical_models_see_the_last_points_before_each_origin(long_series):
    ds, sub = long_series
    full, cuts = origin_datasets(ds, sub)
    assert full.n_train == LONG_POINTS and np.array_equal(full.y_test, ds.y_test)
    assert np.array_equal(full.y_train, ds.y_train[-LONG_POINTS:])
    for (_, head, target), cut in zip(origin_masks(ds.X_train[:, 0]), cuts, strict=True):
        kept = min(LONG_POINTS, int(head.sum()))
        assert cut.n_train == kept and np.array_equal(cut.y_train, ds.y_train[head][-kept:])
        assert np.array_equal(cut.y_test, ds.y_train[target])


def test_long_series_are_combined_from_the_kernels_forecasts_with_its_fitted_values(long_series):
    ds, sub = long_series
    assert sub.on_subset and eligibility(ds, sub) == ""
    fit = fit_kernel(compose(["+", "PER", "SE"]), sub, OptimConfig(n_restarts=1, max_evals=40),
                     np.random.default_rng(0))
    beside = ClassicalBeside(ds, sub, ("AutoETS", "SeasonalNaive"))
    # The origins' windows are over every training point, not only the subset's.
    assert [w[1].shape for w in beside._windows] == [(ds.n_train,)] * 4
    assert "no fitted kernel" in beside.choose(None, fit=None)[0].reason
    means = beside.fitted_origin_means(fit)
    targets = [ds.y_train[t] for _, _, t in beside._windows]
    assert [m.shape for m in means] == [t.shape for t in targets]
    # Conditioned on the points before each origin: as good as the fitted model's forecast from there.
    model = FittedModel.from_fit(fit, ds.norm, ds.n_train)
    head, target = beside._windows[-1][1:]
    assert np.allclose(means[-1], model.predict_mean(ds.X_train[head], ds.y_train[head], ds.X_train[target]))
    c, classical, _ = beside.choose(None, fit=fit, kernel_mean=kernel_future_mean(fit, ds, beside.future_x))
    assert c.origins == 4 and not c.refitted and not c.reason
    assert dict(c.origin_sse)[KERNEL] == pytest.approx(sum(float(np.sum((m - t) ** 2))
                                                           for m, t in zip(means, targets, strict=True)))
    assert "the kernel with its fitted values" in c.describe()
    # The classical models saw the last LONG_POINTS training points.
    assert classical.get("AutoETS").ok and classical.get("AutoETS").settings.endswith(f"; {LONG_POINTS} points")
    assert Combination.from_dict(c.to_dict()) == c and c.to_dict()["refitted"] is False
    with pytest.raises(ValueError, match="refitted"):
        Combination.from_dict({**c.to_dict(), "refitted": "no"})


def test_a_long_series_search_combines_with_its_own_members(long_series):
    ds, _ = long_series
    cfg = dataclasses.replace(_config(), fit_points=300, long_combine=("AutoETS",), combine=("AutoTheta",))
    data = search_data(ds, cfg)
    assert data.on_subset
    with search_executor(data, cfg, workers=1) as ex:
        res = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=ds)
    c = res.combination
    assert c.origins == 4 and not c.refitted and set(c.models) <= {"AutoETS"}
    assert [n for n, _ in c.origin_sse] == [KERNEL, "AutoETS"]
    with search_executor(data, cfg, workers=1) as ex:  # no long_combine: the kernel's own, nothing said
        alone = search_and_forecast(data, dataclasses.replace(cfg, long_combine=()), seed=0, executor=ex, dataset=ds)
    assert alone.combination == Combination()


def test_one_writer_makes_the_search_kernel_file(searched):
    """``search_kernel_file`` is what the CLI, jobs and the front door write: the forecast's combination
    and test RMSE, the calibration, the counts, and a run record that replays the search."""
    from evocov_core.runs.counts import count_scores
    from evocov_core.runs.kernel_file import parse_kernel_file, search_kernel_file
    from evocov_core.searches.run_file import replay_inputs

    ds, _, cfg, res = searched
    doc = search_kernel_file(res, ds, seed=0, config=cfg, extra_scores={"seconds": 1.5})
    kf = parse_kernel_file(dump_kernel_file(doc))
    assert kf.combination == res.combination and kf.calibration == res.search.calibration
    assert kf.scores["seconds"] == 1.5 and kf.scores["seed"] == 0 and kf.scores["algorithm"] == "evocov"
    assert {k: kf.scores[k] for k in count_scores(res.search)} == count_scores(res.search)
    assert ("forecast_test_rmse" in kf.scores) == res.combination.combined
    config, seed, _ = replay_inputs(kf.run)
    assert config == cfg and seed == 0
    plain = search_kernel_file(res, ds, seed=0)  # no settings: no run record
    assert plain.get("run") is None
    with pytest.raises(ValueError, match="no fitted kernel"):
        search_kernel_file(dataclasses.replace(res, search=dataclasses.replace(res.search, best=None)), ds, seed=0)


# --- equal weights (a weight power of 0) ----------------------------------------------------------------------


def test_equal_members_share_the_weight_among_those_that_take_part():
    """Equal weights over the kernel and the models with a forecast of the horizon; the guard gives the kernel 0
    and the others share it; with no model left the kernel is alone. Every case says so, and survives a file."""
    models = ("AutoETS", "AutoARIMA", "AutoTheta")
    every = equal_members(models)
    assert every.members == (KERNEL, *models) and every.weights == (0.25,) * 4 and every.equal and every.origins == 0
    assert every.describe() == ("The forecast averages the kernel's, AutoETS's, AutoARIMA's and AutoTheta's "
                                "forecasts with equal weights (fixed, not estimated from earlier points in time). "
                                "The kernel remains the explanation of the series.")
    failed = equal_members(models, exclude=("AutoARIMA",), unavailable="AutoARIMA: no result within 10 s")
    assert failed.members == (KERNEL, "AutoETS", "AutoTheta") and failed.weights == pytest.approx((1 / 3,) * 3)
    assert "AutoARIMA: no result within 10 s: no forecast of the horizon, so no weight." in failed.describe()
    guarded = equal_members(models, exclude=(KERNEL,), guard="its forecast leaves every interval")
    assert guarded.weights == pytest.approx((0.0, 1 / 3, 1 / 3, 1 / 3)) and guarded.guard
    assert guarded.describe().startswith("The forecast is AutoETS's, AutoARIMA's and AutoTheta's, not the kernel's: "
                                         "its forecast leaves every interval. They are averaged with equal weights.")
    alone = equal_members(models, exclude=models)
    assert alone.members == (KERNEL,) and alone.weights == (1.0,) and not alone.combined
    for c in (every, failed, guarded, alone):
        assert Combination.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    with pytest.raises(ValueError, match="'equal' must be true or false"):
        Combination.from_dict({**every.to_dict(), "equal": "yes"})


def test_a_search_with_equal_weights_fits_the_classical_models_once_and_averages_them(monkeypatch):
    """With the weight power 0 the classical models are fitted on the whole training part only (the origins'
    errors would weigh nothing), and the forecast is the equal average of the kernel and every model with a
    forecast of the horizon, whatever the kernel's forecasts from the origins were."""
    import evocov_core.forecast.beside as beside_module

    seen = []
    real = beside_module.classical_forecasts_many

    def counted(datasets, **kw):
        seen.append(len(datasets))
        return real(datasets, **kw)

    monkeypatch.setattr(beside_module, "classical_forecasts_many", counted)
    ds = _series(60)
    cfg = dataclasses.replace(_config(), combine=("AutoETS", "AutoARIMA", "AutoTheta"), combine_power=0.0,
                              combine_guard=False)
    data = search_data(ds, cfg)
    with search_executor(data, cfg, workers=1) as ex:
        res = search_and_forecast(data, cfg, seed=0, executor=ex, dataset=ds)
    assert seen == [1]
    c = res.combination
    assert c.equal and c.members == (KERNEL, "AutoETS", "AutoARIMA", "AutoTheta") and c.weights == (0.25,) * 4
    kernel_test = kernel_test_mean(res.search.best, ds)
    expected = np.mean([kernel_test, *(res.classical.get(m).mean for m in c.models)], axis=0)
    assert res.test_rmse(ds) == pytest.approx(rmse(ds.y_test, expected), rel=1e-9)
