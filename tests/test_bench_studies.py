"""The arithmetic of the post-hoc study scripts in ``bench/`` (their searches are too slow to run here)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal

from bench.bench_combine import make_rules, origin_sets
from bench.bench_gap import bootstrap, folder_ratios, needed_geomean, statistic
from bench.bench_log_transform import lml_of_y, log_dataset
from bench.bench_run_average import bic_pick_gains, full_trials
from bench.common import geomean
from evocov_core.data import Dataset
from evocov_core.fitting.gp import lml
from evocov_core.language.evaluate import Inputs, covariance
from evocov_core.language.library import squared_exponential


def test_lml_of_y_is_the_density_of_y_by_change_of_variables() -> None:
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(1.0, 2.0, 12))[:, None]
    y = np.exp(rng.normal(3.0, 0.4, 12))  # positive outputs
    mean, std = float(np.mean(np.log(y))), float(np.std(np.log(y)))
    z = (np.log(y) - mean) / std
    kernel, theta, log_noise = squared_exponential(), np.array([0.2, -1.0]), math.log(0.1)
    value, jitter = lml(kernel, Inputs(x), z, theta, log_noise)
    # The same model written on y directly: log y ~ N(mean, std² (K + noise)), times |d log y / dy|.
    cov = std ** 2 * (covariance(kernel, Inputs(x), theta) + (0.1 + jitter) * np.eye(12))
    direct = multivariate_normal(np.full(12, mean), cov).logpdf(np.log(y)) - np.sum(np.log(y))
    assert math.isclose(lml_of_y(value, std, y), direct, rel_tol=1e-9, abs_tol=1e-8)


def test_log_dataset_keeps_the_split_and_logs_the_outputs() -> None:
    ds = Dataset.from_arrays(np.arange(20.0), np.exp(np.linspace(0, 2, 20)), test_fraction=0.2)
    lds = log_dataset(ds)
    assert np.array_equal(lds.train, ds.train) and np.allclose(lds.y, np.linspace(0, 2, 20))
    assert lds.norm.y_std != ds.norm.y_std  # normalised on the log scale


def test_lowest_bic_of_k_is_paired_with_its_members() -> None:
    ratios = pd.Series({0: 1.0, 1: 2.0, 2: 4.0})
    bics = pd.Series({0: 10.0, 1: 5.0, 2: 20.0})
    gains = bic_pick_gains(ratios, bics, 2)
    l2 = math.log(2.0)
    # (0, 1) keeps seed 1; (0, 2) keeps seed 0; (1, 2) keeps seed 1.
    assert np.allclose(gains, [l2 - l2 / 2, 0.0 - l2, l2 - 1.5 * l2])
    assert np.allclose(bic_pick_gains(ratios, bics, 3), [0.0])  # seed 1's log 2 is the members' mean log


def test_gap_statistic_is_the_geometric_mean_of_the_medians() -> None:
    g, worst, over = statistic({"a": [1.0, 2.0, 4.0], "b": [4.0]})
    assert math.isclose(g, math.sqrt(8.0)) and worst == 4.0 and over == 1


def test_gap_bootstrap_draws_medians_of_three() -> None:
    # A series at 1 or 4 with equal chance: a median of 3 draws is 4 with probability 1/2.
    ratios = {"steady": [2.0, 2.0], "coin": [1.0, 4.0]}
    g, over = bootstrap(ratios, np.random.default_rng(0), draws=20_000)
    assert set(np.round(g, 12)) == {round(math.sqrt(2.0), 12), round(math.sqrt(8.0), 12)}
    assert abs(over.mean() - 0.5) < 0.02
    g2, _ = bootstrap(ratios, np.random.default_rng(0), draws=20_000)
    assert np.array_equal(g, g2)  # same seed, same draws


def test_gap_needed_geomean_closes_the_target() -> None:
    need = needed_geomean(1.3, [3.0, 2.0], 13)
    assert math.isclose(geomean([3.0, 2.0, *[need] * 11]), 1.3)


def test_gap_folder_ratios_keep_complete_variants_and_count_a_missing_kernel_as_infinite(tmp_path) -> None:
    pd.DataFrame({
        "series": ["s1", "s2", "s1", "s2", "s1"],
        "variant": ["full", "full", "full", "full", "partial"],
        "seed": [0, 0, 1, 1, 0],
        "status": ["ok", "ok", "no_kernel", "error", "ok"],
        "test_rmse": [2.0, 3.0, None, 1.0, 1.0],
    }).to_csv(tmp_path / "trials.csv", index=False)
    out = folder_ratios(tmp_path, pd.Series({"s1": 1.0, "s2": 2.0}))
    assert list(out) == ["full"]  # "partial" lacks s2
    assert out["full"]["s1"] == [2.0, math.inf] and out["full"]["s2"] == [1.5]  # the error row is not counted


def _trials_with_a_rerun(folder) -> None:
    """A ``trials.csv`` where s1's seed 1 failed and was rerun: the rerun's row comes last."""
    pd.DataFrame({
        "series": ["s1", "s1", "s2", "s2", "s1"],
        "variant": ["full"] * 5,
        "seed": [0, 1, 0, 1, 1],
        "status": ["ok", "error", "ok", "ok", "ok"],
        "test_rmse": [2.0, None, 3.0, 4.0, 0.1 + 0.2],
        "bic": [1.0, None, 2.0, 3.0, 0.5],
    }).to_csv(folder / "trials.csv", index=False)


def test_gap_counts_a_rerun_trial_once(tmp_path) -> None:
    _trials_with_a_rerun(tmp_path)
    out = folder_ratios(tmp_path, pd.Series({"s1": 1.0, "s2": 2.0}))
    assert out["full"]["s1"] == [2.0, 0.1 + 0.2] and out["full"]["s2"] == [1.5, 2.0]


def test_run_average_counts_a_rerun_trial_once(tmp_path) -> None:
    _trials_with_a_rerun(tmp_path)
    trials = full_trials(tmp_path, pd.Series({"s1": 1.0, "s2": 2.0}))
    assert sorted(zip(trials.series, trials.seed, strict=True)) == [("s1", 0), ("s1", 1), ("s2", 0), ("s2", 1)]
    assert trials.set_index(["series", "seed"]).ratio[("s1", 1)] == 0.1 + 0.2  # read back to the last bit


# --- the VFE prototype of docs/long-series.md (bench/vfe.py) ----------------------------------------


def _vfe_problem(n: int = 20):
    from evocov_core.language.library import compose

    rng = np.random.default_rng(5)
    X = np.sort(rng.uniform(1.0, 2.0, n))[:, None]
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(n)
    kernel = compose(["+", "SE", ["*", "PER", "SE"]])
    theta = np.array([0.0, math.log(0.08), -0.5, 0.0, math.log(2 * math.pi * 3), 0.0, math.log(0.3)])
    return kernel, X, y, theta[: kernel.n_params], math.log(0.05)


def test_vfe_with_every_input_as_inducing_point_is_the_exact_lml() -> None:
    from bench.vfe import vfe_lml, vfe_lml_and_grad

    kernel, X, y, theta, log_noise = _vfe_problem()
    exact, jitter = lml(kernel, Inputs(X), y, theta, log_noise)
    assert jitter == 0.0
    assert math.isclose(vfe_lml(kernel, X, y, X, theta, log_noise, jitter=0.0), exact, rel_tol=1e-7)
    value, grad = vfe_lml_and_grad(kernel, X, y, X, theta, log_noise, jitter=0.0)
    from evocov_core.fitting.gp import lml_and_grad

    ev, eg, _ = lml_and_grad(kernel, Inputs(X), y, theta, log_noise)
    assert math.isclose(value, ev, rel_tol=1e-7) and np.allclose(grad, eg, rtol=1e-4, atol=1e-5)


def test_vfe_bound_lies_below_the_exact_lml_and_its_gradient_is_right() -> None:
    from bench.vfe import grid_inducing, vfe_lml, vfe_lml_and_grad

    kernel, X, y, theta, log_noise = _vfe_problem(60)
    Z = grid_inducing(X, 12)
    exact, _ = lml(kernel, Inputs(X), y, theta, log_noise)
    value, grad = vfe_lml_and_grad(kernel, X, y, Z, theta, log_noise)
    assert value < exact  # a lower bound
    z = np.append(theta, log_noise)
    h = 1e-6
    for j in range(z.size):
        e = np.zeros_like(z)
        e[j] = h
        fd = (vfe_lml(kernel, X, y, Z, (z + e)[:-1], (z + e)[-1]) - vfe_lml(kernel, X, y, Z, (z - e)[:-1], (z - e)[-1]))
        assert math.isclose(grad[j], fd / (2 * h), rel_tol=1e-4, abs_tol=1e-5), (j, grad[j], fd / (2 * h))


def test_priors_follow_each_slots_role_and_leave_change_point_slots_free() -> None:
    from bench.bench_priors import NOISE_PRIOR, PRIORS, prior
    from evocov_core.runs.kernel_file import parse_expression

    k = parse_expression("changepoint(x, multiply(square(hp(hp0)), exp(multiply(-0.5, sq_dist(euc(x), hp1)))), "
                         "exp(multiply(-0.5, sq_dist(spectral(x, hp2), hp3))), hp4, hp5)")
    mean, precision = prior(k)
    by_slot = dict(zip(k.slots, zip(mean, precision, strict=False), strict=False))
    assert by_slot["hp1"] == (PRIORS["lengthscale"][0], 1.0)
    assert by_slot["hp2"][0] == PRIORS["frequency"][0]
    assert by_slot["hp3"][0] == PRIORS["periodic_lengthscale"][0]
    assert by_slot["hp4"][1] == 0.0 and by_slot["hp5"][1] == 0.0  # location, steepness
    assert (mean[-1], precision[-1]) == (NOISE_PRIOR[0], 1 / NOISE_PRIOR[1] ** 2)
    assert np.allclose(prior(k, 0.5)[1], 4 * precision)


def test_map_refit_moves_towards_the_prior_as_it_tightens() -> None:
    from bench.bench_priors import map_refit
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import OptimConfig, fit_kernel

    rng = np.random.default_rng(3)
    x = np.linspace(1.0, 2.0, 40)
    y = np.sin(9 * x) + 0.1 * rng.standard_normal(40)
    x_test = np.linspace(2.02, 2.2, 8)
    data = FitData.from_arrays(x[:, None], y, X_test=x_test[:, None], y_test=np.sin(9 * x_test))
    optim = OptimConfig()
    fit = fit_kernel(squared_exponential(), data, optim, np.random.default_rng(0))
    loose_rmse, loose_move = map_refit(fit, data, optim, scale=1e4)
    _, tight_move = map_refit(fit, data, optim, scale=0.05)
    assert loose_move < 0.05 and math.isclose(loose_rmse, fit.test_rmse, rel_tol=0.05)
    assert tight_move > 10 * loose_move


def test_forecast_shape_tells_a_growing_kernel_from_a_stationary_one() -> None:
    from bench.bench_forecast_shape import level_share, shape
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import FitResult, FitStatus
    from evocov_core.language.library import linear

    x = np.linspace(1.0, 2.0, 30)
    y = 3 * x + 0.05 * np.sin(20 * x)
    y = (y - y.mean()) / y.std()
    data = FitData.from_arrays(x[:, None], y, X_test=np.array([[2.1], [2.2]]), y_test=np.array([10.0, 10.0]))

    def fit(kernel, theta):
        return FitResult(kernel=kernel, theta=tuple(theta), log_noise=math.log(1e-3), jitter=0.0,
                         status=FitStatus.OK, reason="", metric="lml", metric_value=0.0, lml=0.0, bic=0.0,
                         q=kernel.q, n=30, n_evals=0, seconds=0.0)

    se = shape(data, fit(squared_exponential(), (0.0, math.log(0.05))))
    lin = shape(data, fit(linear(), (math.log(1.5), 0.0)))  # zero at the centre of the data
    assert se is not None and lin is not None
    assert math.isclose(se["growth"], 1.0) and lin["growth"] > 1.1
    # A short lengthscale reverts to the mean (0): far from the last fifth's rising line.
    assert se["off_trend"] > 5 * lin["off_trend"]
    assert lin["excursion"] > 0.0 and se["excursion"] == 0.0
    # Test outputs far above both forecasts: the error is almost all level.
    assert level_share(data, fit(squared_exponential(), (0.0, math.log(0.05)))) > 0.9


def test_paired_choice_takes_the_smallest_feature_among_the_k_lowest_bic() -> None:
    from bench.bench_forecast_shape import paired_choice

    rows = []
    for seed, (returned, rmses, offs) in enumerate([(2.0, [2.0, 1.0, 4.0], [0.5, 0.1, 0.0]),
                                                    (1.0, [1.0, 4.0, 0.5], [0.2, 0.1, 0.9])]):
        rows.append({"series": "s", "seed": seed, "rank": -1, "test_rmse": returned, "off_trend": 0.3})
        rows += [{"series": "s", "seed": seed, "rank": i, "test_rmse": r, "off_trend": o}
                 for i, (r, o) in enumerate(zip(rmses, offs, strict=True))]
    df = pd.DataFrame(rows)
    # k = 2: seed 0 takes rank 1 (1.0 against 2.0), seed 1 rank 1 (4.0 against 1.0).
    assert paired_choice(df, "off_trend", 2) == (f"{math.exp((math.log(0.5) + math.log(4.0)) / 2):.3f}",
                                                 f"{np.std([math.log(0.5), math.log(4.0)], ddof=1) / math.sqrt(2):.3f}",
                                                 "1/1")
    # k = 3: seed 0 takes rank 2 (4.0), seed 1 still rank 1.
    assert paired_choice(df, "off_trend", 3)[2] == "0/2"


def test_recorded_trials_keep_finished_trials_with_records_and_the_last_rerun(tmp_path) -> None:
    from bench._common import map_jobs, recorded_trials

    (tmp_path / "records").mkdir()
    pd.DataFrame([{"series": "a", "variant": "full", "seed": 0, "status": "error", "kernel_file": ""},
                  {"series": "a", "variant": "full", "seed": 0, "status": "ok", "kernel_file": "k/a.json"},
                  {"series": "b", "variant": "full", "seed": 0, "status": "ok", "kernel_file": "k/b.json"},
                  {"series": "a", "variant": "other", "seed": 0, "status": "ok", "kernel_file": "k/o.json"}]
                 ).to_csv(tmp_path / "trials.csv", index=False)
    for name in ("a__full__seed0", "a__other__seed0"):  # b kept no records
        (tmp_path / "records" / f"{name}.csv.gz").write_bytes(b"")
    found = recorded_trials(tmp_path, "full")
    assert [(p.name, t.series, t.kernel_file) for p, t in found] == [("a__full__seed0.csv.gz", "a", "k/a.json")]
    assert map_jobs(abs, [-1, 2, -3], workers=1) == [1, 2, 3]


def test_combination_origins_train_before_each_cut_and_test_on_the_next_tenth() -> None:
    ds = Dataset.from_arrays(np.arange(101.0), np.sin(np.arange(101.0)), test_fraction=0.1)
    sets = origin_sets(ds)
    x_train = ds.x[ds.train, 0]
    assert len(sets) == 4
    for o, s in zip((0.6, 0.7, 0.8, 0.9), sets, strict=True):
        cut = x_train.min() + o * np.ptp(x_train)
        assert np.all(s.x[s.train, 0] <= cut) and np.all(s.x[~s.train, 0] > cut)
        # the targets are the training points of the next tenth of the range, never the test part
        assert np.all(s.x[~s.train, 0] <= cut + 0.1 * np.ptp(x_train) + 1e-9)
        assert s.x[:, 0].max() <= x_train.max()
        assert np.array_equal(s.y, np.sin(s.x[:, 0]))  # the outputs travel with their inputs


def test_combination_rules_average_the_kernel_with_each_model_and_with_all() -> None:
    rules = make_rules(("AutoETS", "AutoTheta"))
    assert rules["gp"] == ("gp",) and rules["AutoTheta"] == ("AutoTheta",)
    assert rules["gp+ETS"] == ("gp", "AutoETS") and rules["gp+ETS+Theta"] == ("gp", "AutoETS", "AutoTheta")
    assert rules["ETS+Theta"] == ("AutoETS", "AutoTheta") and len(rules) == 7
    one = make_rules(("MSTL",))
    assert set(one) == {"gp", "MSTL", "gp+MSTL"}  # no all-models rule with one model


def test_origin_rules_read_the_origins_as_documented() -> None:
    """``bench_combine_rules.choose`` on one trial's errors (candidates × origins): the sum takes the
    average whose total is lowest even when the kernel wins three origins; the rules that ask the
    average to beat the kernel at most origins, or by a margin, keep the kernel there."""
    from bench.bench_combine_rules import CANDIDATES, choose

    # Rows: kernel, +ETS, +Theta, +both. The kernel is best at origins 0-2 by a little and far worse at 3.
    e = np.array([[1.0, 1.0, 1.0, 10.0],
                  [1.2, 1.2, 1.2, 2.0],
                  [1.5, 1.5, 1.5, 3.0],
                  [1.1, 1.1, 1.1, 6.0]])
    assert CANDIDATES[0] == "gp"
    assert choose(e, "sum") == 1  # 5.6 against 13.0
    assert choose(e, "majority") == 0 and choose(e, "beat3") == 0 and choose(e, "last2") == 1
    assert choose(e, "margin0.5") == 1 and choose(e, "margin0.4") == 0  # 5.6 < 0.5 × 13, not < 0.4 × 13
    assert choose(e, "avg3unless3") == 0 and choose(e, "avg3unless4") == 3 and choose(e, "always3") == 3
    assert choose(np.full((4, 4), np.inf), "sum") == 0  # nothing finite: the kernel alone
    with pytest.raises(ValueError, match="unknown rule"):
        choose(e, "best-on-test")


def test_combine_weights_reads_a_rerun_over_its_folder_and_sums_errors_over_origins(tmp_path) -> None:
    """``bench_combine_weights``: a rerun trial replaces the folder's (the others stay); a member's error
    summed over the origins is infinite where it had no (finite) forecast."""
    from bench.bench_combine_weights import _sse, _trials

    old, new = tmp_path / "old", tmp_path / "new"
    for folder, rows in ((old, [("a", 0, 1.0), ("b", 0, 2.0), ("b", 1, 3.0)]), (new, [("b", 0, 9.0)])):
        folder.mkdir()
        pd.DataFrame([{"series": s, "variant": "full", "seed": k, "status": "ok", "test_rmse": r,
                       "forecast_test_rmse": r, "kernel_file": f"kernels/{s}__full__seed{k}.json"}
                      for s, k, r in rows]).to_csv(folder / "trials.csv", index=False)
    t = _trials(old, new)
    assert [(r.series, r.seed, r.test_rmse, Path(r.folder).name) for r in t.itertuples()] == [
        ("a", 0, 1.0, "old"), ("b", 0, 9.0, "new"), ("b", 1, 3.0, "old")]
    origins = [({"kernel": np.array([1.0, 2.0]), "AutoETS": np.array([0.0, 0.0])}, np.array([1.0, 1.0])),
               ({"kernel": np.array([3.0]), "AutoETS": np.array([np.nan])}, np.array([1.0]))]
    assert _sse(origins, "kernel") == 1.0 + 4.0
    assert _sse(origins, "AutoETS") == math.inf and _sse(origins, "AutoTheta") == math.inf


def test_long_classical_keeps_the_last_training_points_and_the_whole_test_part() -> None:
    from bench.bench_long_classical import last_points

    t = np.arange(50.0)
    ds = Dataset.from_arrays(t, np.sin(t), test_fraction=0.2)
    cut = last_points(ds, 15)
    assert cut.n_train == 15 and np.array_equal(cut.y_train, ds.y_train[-15:])
    assert np.array_equal(cut.y_test, ds.y_test) and np.array_equal(cut.X_test, ds.X_test)
    assert last_points(ds, 1000).n == ds.n  # fewer points than asked: every one


def test_long_weights_follow_the_power_and_the_guard() -> None:
    from bench.bench_long_weights import weighted

    means = {"kernel": np.array([1.0, 1.0]), "MSTL": np.array([3.0, 3.0])}
    errors = {"kernel": 1.0, "MSTL": 2.0}
    assert np.allclose(weighted(errors, means, 0.0, False), 2.0)  # equal weights
    assert np.allclose(weighted(errors, means, 2.0, False), 0.8 * 1.0 + 0.2 * 3.0)  # 1 : 1/4
    assert np.allclose(weighted(errors, means, 2.0, True), 3.0)  # the guard leaves the kernel out
    assert np.allclose(weighted({"kernel": 1.0, "MSTL": 1e4}, means, 2.0, False), 1.0)  # under 1 %: dropped


def test_long_weights_make_the_presets_combination_for_a_folder_that_did_not_combine() -> None:
    from bench.bench_long_weights import _product_combination
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import OptimConfig, fit_kernel
    from evocov_core.language.library import compose
    from evocov_core.search import preset

    n = 2600
    t = np.arange(n, dtype=np.float64)
    ds = Dataset.from_arrays(t, np.sin(2 * np.pi * t / 24) + 0.1 * np.random.default_rng(0).standard_normal(n),
                             test_fraction=0.1)
    config = preset("quick", fit_points=400)
    fit = fit_kernel(compose("PER"), FitData.from_dataset(ds, max_points=400), OptimConfig(n_restarts=1, max_evals=30),
                     np.random.default_rng(0))
    c = _product_combination(ds, fit, np.zeros(ds.n_test), config)
    assert c.origins == 4 and not c.refitted and [m for m, _ in c.origin_sse] == ["kernel", "MSTL", "AutoETS"]


def test_pooled_searches_weigh_like_one_search_and_share_the_kernels_weight() -> None:
    """One kernel pooled is the product's weighting; K identical kernels crowd the classical members out
    unless they share one weight, which then gives the one kernel's forecast."""
    from bench.bench_pooled_searches import _weights, pooled
    from evocov_core.forecast.combination import inverse_error_weights

    k, ets, theta = np.array([1.0, 2.0]), np.array([3.0, 3.0]), np.array([5.0, 4.0])
    classical = {"AutoETS": (4.0, ets), "AutoTheta": (2.0, theta)}
    w = inverse_error_weights([1.0, 4.0, 2.0], 2.0)
    one = pooled([(1.0, k)], classical, share=False)
    assert np.allclose(one, w[0] * k + w[1] * ets + w[2] * theta)
    assert np.allclose(pooled([(1.0, k)], classical, share=True), one)
    three = pooled([(1.0, k)] * 3, classical, share=False)
    assert np.abs(three - k).max() < np.abs(one - k).max()  # three votes for the kernel
    assert np.allclose(pooled([(1.0, k)] * 3, classical, share=True), one)
    assert np.allclose(pooled([], classical, share=False), _weights([4.0, 2.0]) @ np.array([ets, theta]))
    assert _weights([1.0, 1e3]).tolist() == [1.0, 0.0]  # members under 1 % dropped, as the product does


def test_classical_members_group_weigh_and_cap_as_documented() -> None:
    """A group is the mean or median of the members that forecast; weighing at the product's power is
    the product's weighting; a cap holds the kernel's weight and shares the rest as before."""
    from bench.bench_classical_members import capped, group_forecast, sse, weighed
    from evocov_core.forecast.combination import inverse_error_weights

    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 6.0]), np.array([8.0, 7.0])
    assert np.allclose(group_forecast("median", [a, b, c, None]), [3.0, 6.0])
    assert np.allclose(group_forecast("mean", [a, None, c]), [4.5, 4.5]) and group_forecast("mean", [None]) is None
    assert sse([a, b], [np.zeros(2), np.ones(2)]) == 1 + 4 + 4 + 25 and sse([a, None], [a, a]) == math.inf
    w = inverse_error_weights([1.0, 2.0, 4.0], 2.0)
    assert np.allclose(weighed([(1.0, a), (2.0, b), (4.0, c)]), w @ np.array([a, b, c]))
    assert np.allclose(weighed([(1.0, a), (2.0, b)], 0.0), (a + b) / 2)  # power 0: equal weights
    assert np.allclose(weighed([(1.0, a), (2.0, None)]), a)  # a member without a forecast has no weight
    held = capped([(1.0, a), (2.0, b), (4.0, c)], 0.5)
    rest = w[1:] / w[1:].sum() * 0.5
    assert w[0] > 0.5 and np.allclose(held, 0.5 * a + rest @ np.array([b, c]))
    assert np.allclose(capped([(4.0, a), (1.0, b)], 0.5), weighed([(4.0, a), (1.0, b)]))  # under the cap: unchanged


def test_mean_function_is_the_limit_of_a_vague_linear_term_and_holds_the_kernels_together() -> None:
    """A flat prior on the line's coefficients is the zero-mean GP whose kernel adds s²(1 + x x') as s
    grows (Rasmussen & Williams §2.7); no basis is the plain posterior mean; two kernel members share the hold."""
    from bench.bench_classical_members import capped
    from bench.bench_mean_function import mean_forecast
    from evocov_core.data import Normalisation
    from evocov_core.fitting.model import FittedModel
    from evocov_core.forecast.combination import inverse_error_weights

    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(1.0, 2.0, 15))[:, None]
    y = 2.0 * x[:, 0] + np.sin(8 * x[:, 0]) + rng.normal(0, 0.05, 15)
    xs = np.linspace(2.0, 2.5, 6)[:, None]
    theta, noise = np.array([0.0, math.log(0.2)]), 0.01
    norm = Normalisation((0.0,), (1.0,), 0.0, 1.0)
    model = FittedModel(squared_exponential(), tuple(theta), math.log(noise), 0.0, norm)
    k = covariance(squared_exponential(), Inputs(x), theta) + noise * np.eye(15)
    ks = covariance(squared_exponential(), Inputs(xs, x), theta)
    assert np.allclose(mean_forecast(model, x, y, xs, 0), ks @ np.linalg.solve(k, y))
    s2 = 1e6  # vague: the line's prior variance
    big = k + s2 * (1 + x @ x.T)
    limit = (ks + s2 * (1 + xs @ x.T)) @ np.linalg.solve(big, y)
    line = mean_forecast(model, x, y, xs, 2)
    assert np.allclose(line, limit, rtol=1e-4, atol=1e-4)
    assert not np.allclose(line, mean_forecast(model, x, y, xs, 0), atol=1e-2)  # the line carries the trend on
    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 6.0]), np.array([8.0, 7.0])
    w = inverse_error_weights([1.0, 1.0, 4.0], 2.0)
    assert np.allclose(capped([(1.0, a), (1.0, b), (4.0, c)], 1.0, kernels=2), w @ np.array([a, b, c]))
    assert w[:2].sum() > 0.5
    assert np.allclose(capped([(1.0, a), (1.0, b), (4.0, c)], 0.5, kernels=2), 0.25 * a + 0.25 * b + 0.5 * c)


def test_classical_guard_study_leaves_members_out_and_renormalises() -> None:
    """The product's weighted mean, the same with a member left out (the rest renormalised), and the kernel
    alone when every other member is out."""
    from bench.bench_classical_guard import pooled_mean

    means = {"kernel": np.array([1.0, 2.0]), "AutoETS": np.array([5.0, 5.0]), "AutoTheta": np.array([3.0, 0.0])}
    members, weights = ["kernel", "AutoETS", "AutoTheta"], [0.5, 0.3, 0.2]
    assert np.allclose(pooled_mean(members, weights, means, set()), [0.5 + 1.5 + 0.6, 1.0 + 1.5])
    without_ets = (0.5 * means["kernel"] + 0.2 * means["AutoTheta"]) / 0.7
    assert np.allclose(pooled_mean(members, weights, means, {"AutoETS"}), without_ets)
    assert np.allclose(pooled_mean(members, weights, means, {"AutoETS", "AutoTheta"}), means["kernel"])
    # The kernel's guard gave it weight 0: the classical members alone.
    assert np.allclose(pooled_mean(members, [0.0, 0.5, 0.5], means, set()), [4.0, 2.5])


def _forms_trial(series: str, seed: int, rows: list[tuple]) -> pd.DataFrame:
    """A trial's scored candidates as ``bench_forms`` stage one writes them: (form, CRPS, refit CRPS, test
    RMSE, subtrees); the tail score per point is minus the CRPS."""
    return pd.DataFrame([{"series": series, "seed": seed, "pool": "choice", "rank": i, "bic": float(i), "valid": True,
                          "form": f, "ets": f, "tail": -c, "crps": c, "crps_refit": cr, "test_rmse": t, "subtrees": s}
                         for i, (f, c, cr, t, s) in enumerate(rows)])


def test_forms_study_rebuilds_the_choices_candidates_with_the_seeds_places() -> None:
    """Lowest BIC per canonical kernel, the seeds' fits on their places whatever their BIC, lowest BIC first."""
    from bench.bench_forms import candidate_set

    rec = pd.DataFrame({"canonical": ["a", "a", "b", "c", "d", "e", "f", "s1", "s2", "s3", "s4"],
                        "bic": [5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 50.0, 40.0, 60.0, 70.0],
                        "status": ["ok"] * 11,
                        "origin": ["random"] * 7 + ["ets seed"] * 4})
    cands = candidate_set(rec)
    # Five places: the three lowest-BIC seeds (at most five less two), then the two lowest-BIC others.
    assert list(cands.canonical) == ["a", "b", "s2", "s1", "s3"]
    assert cands.bic.iloc[0] == 1.0 and list(cands.seeded) == [False, False, True, True, True]
    # A seed's fit and the search's own fit of the same kernel are two candidates (their cache keys differ).
    child = pd.DataFrame({"canonical": ["s1"], "bic": [0.5], "status": ["ok"], "origin": ["crossover"]})
    cands = candidate_set(pd.concat([rec, child]))
    assert list(cands.canonical) == ["s1", "a", "s2", "s1", "s3"]
    assert list(cands.seeded) == [False, False, True, True, True]


def test_forms_study_keeps_an_evolved_choice_only_with_a_margin() -> None:
    from bench.bench_forms import trial_rules

    # The preset picks the evolved kernel (CRPS 0.75 against the form's 1.0).
    trial = _forms_trial("a", 0, [(False, 0.75, 1.2, 5.0, "x"), (True, 1.0, 1.0, 2.0, "y"), (True, 1.5, 0.9, 3.0, "y")])
    out = trial_rules(trial, {})
    assert out["preset"] == 5.0 and out["origins"] == 5.0 and out["refit"] == 3.0
    assert out["forms unless evolved 0.8 (origins)"] == 5.0  # 0.75 < 0.8 × 1.0: kept
    assert out["forms unless evolved 0.7 (origins)"] == 2.0  # not that far ahead: the best form by the same score
    assert out["forms unless evolved 0.1 (preset)"] == 5.0  # the tail score −0.75 is 0.25 nats ahead of −1.0
    assert out["forms unless evolved 0.3 (preset)"] == 2.0
    assert out["forms by BIC"] == 2.0 and out["oracle"] == 2.0 and out["oracle forms"] == 2.0
    # An invalid candidate is never chosen while a valid one is left.
    out = trial_rules(trial.assign(valid=[False, True, True]), {})
    assert out["preset"] == 2.0


def test_structure_prior_is_learned_on_the_other_series_only() -> None:
    """A subtree's share of the other series' trials whose best kernel holds it; the series' own trials
    never count, and the prior moves the choice toward the structures that won elsewhere."""
    from bench.bench_forms import log_prior, structure_prior, trial_rules

    other = pd.concat([_forms_trial(f"o{i}", 0, [(False, 1.0, 1.0, 1.0, "win"), (True, 1.0, 1.0, 2.0, "lose")])
                       for i in range(3)])
    own = _forms_trial("me", 0, [(False, 1.0, 1.0, 9.0, "lose"), (True, 1.3, 1.0, 1.0, "win")])
    prior = structure_prior(pd.concat([other, own]), "me")
    assert prior["win"] == pytest.approx(math.log(4 / 5)) and prior["lose"] == pytest.approx(math.log(1 / 5))
    assert prior == structure_prior(other, "me")  # the series' own trial changes nothing
    assert log_prior("win|unseen", prior) == pytest.approx((math.log(4 / 5) + math.log(0.5)) / 2)
    out = trial_rules(own, prior)
    assert out["preset"] == 9.0  # the lowest CRPS
    assert out["prior 1 (origins)"] == 1.0  # log 1.3 − log(4/5) < log 1 − log(1/5)
    assert out["prior 1 (preset)"] == 1.0  # −1.3 + log(4/5) > −1 + log(1/5)
    assert out["prior 0.1 (preset)"] == 9.0  # too weak for a 0.3 lead: −1 + 0.1 log(1/5) > −1.3 + 0.1 log(4/5)


def test_laplace_evidence_matches_a_quadrature_of_the_posterior_at_its_mode() -> None:
    """``bench_laplace``'s −2 log Z at the posterior mode against the evidence integrated on a grid over
    ``z = (log θ, log σ²_noise)``, ±4 Laplace standard deviations per axis: within 0.5 nats (a smooth,
    near-normal posterior of 60 points), and far from BIC's charge where it should differ."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    from bench.bench_laplace import laplace_score
    from evocov_core.fitting.gp import FitStatus
    from evocov_core.fitting.metrics import FitData, loss_and_grad
    from evocov_core.fitting.optimize import FitResult
    from evocov_core.fitting.priors import CORPUS_PRIOR, penalty
    from evocov_core.runs.kernel_file import parse_expression

    rng = np.random.default_rng(0)
    x = np.arange(60.0)
    data = FitData.from_dataset(Dataset.from_arrays(x, 0.8 * np.sin(x / 5) + rng.normal(0, 0.5, 60)))
    k = parse_expression("multiply(square(hp(hp0)), exp(multiply(-0.5, sq_dist(euc(x), hp1))))")
    mean, prec = CORPUS_PRIOR.terms(k)

    def neg_log_post(z):
        f, g = loss_and_grad("lml", k, data, z)
        p, pg = penalty(mean, prec, z)
        return f + p, g + pg

    z = minimize(neg_log_post, np.array([0.0, -1.0, -1.0]), jac=True, method="L-BFGS-B").x
    value = -loss_and_grad("lml", k, data, z)[0]
    fit = FitResult(kernel=k, theta=tuple(z[:-1]), log_noise=float(z[-1]), jitter=0.0, status=FitStatus.OK,
                    reason="", metric="lml", metric_value=value, lml=value, bic=0.0, q=3, n=data.n, n_evals=0,
                    seconds=0.0)
    score, clipped = laplace_score(fit, data)
    assert clipped == 0 and np.isfinite(score)
    # The grid's axes: the Laplace marginal standard deviations (the Hessian by finite differences here too).
    h = 1e-4
    hess = np.array([(neg_log_post(z + h * e)[1] - neg_log_post(z - h * e)[1]) / (2 * h) for e in np.eye(3)])
    sd = np.sqrt(np.diag(np.linalg.inv(0.5 * (hess + hess.T))))
    axes = [np.linspace(zi - 4 * s, zi + 4 * s, 17) for zi, s in zip(z, sd, strict=True)]
    log_norm = 0.5 * float(np.sum(np.log(prec / (2 * math.pi))))
    grid = [-neg_log_post(np.array(p))[0] + log_norm for p in np.stack(np.meshgrid(*axes), -1).reshape(-1, 3)]
    log_z = logsumexp(grid) + float(np.sum(np.log([a[1] - a[0] for a in axes])))
    assert -score / 2 == pytest.approx(log_z, abs=0.5)
    # BIC's charge for the same three hyperparameters differs by more than that.
    assert abs(-score / 2 - (value - 1.5 * math.log(data.n))) > 1.0


def test_ets_types_read_the_products_season_and_the_models_name_and_group_series() -> None:
    from bench.bench_ets_types import ets_parts, grouped, primary_season

    # The season the product gives AutoETS: the first recorded, none above statsforecast's longest.
    assert [primary_season(s) for s in ("none", "12", "7, 365", "52", "24, 168", "1")] == [1, 12, 7, 1, 24, 1]
    assert ets_parts("ETS(M,Ad,N)") == ("M", "Ad", "N")
    with pytest.raises(ValueError, match="not an ETS model name"):
        ets_parts("ARIMA(1,1,1)")
    per = pd.DataFrame({"error": ["A", "A", "M"], "trend": ["N", "A", "A"],
                        "log_kernel": [math.log(0.5), math.log(2.0), math.log(1.5)],
                        "log_forecast": [0.0, 0.0, math.log(1.2)], "log_twin": [math.nan, math.nan, math.log(1.1)]})
    rows = grouped(per, ["error"])
    # Group A: the geometric mean of 0.5 and 2 is 1, the SE of the mean log is |log 2|; no twin there.
    assert rows[0] == ["A", "2", f"1.000 ({math.log(2):.3f})", "1.000 (0.000)", "-"]
    assert rows[1] == ["M", "1", "1.500 (nan)", "1.200 (nan)", "1.100 (nan)"]
    assert [r[0] for r in grouped(per, ["error", "trend"])] == ["A A", "A N", "M A"]


def test_ets_twin_is_the_other_errors_rmse_over_the_chosen_ones_and_nan_where_forbidden() -> None:
    from bench.bench_ets_types import twin_ratio

    t = np.arange(60.0)
    y = (20 + 0.5 * t) * (1 + 0.05 * np.random.default_rng(3).standard_normal(60))
    ds = Dataset.from_arrays(t, y, test_fraction=0.2)
    ratio = twin_ratio(ds, 1, "M", "A", "N")
    assert math.isfinite(ratio) and ratio > 0
    # Swapping the roles inverts the ratio: both models are fitted the same way each time.
    assert twin_ratio(ds, 1, "A", "A", "N") == pytest.approx(1 / ratio, rel=1e-9)
    # statsforecast has no additive error with a multiplicative season.
    assert math.isnan(twin_ratio(ds, 12, "M", "N", "M"))


def test_ets_forms_bic_of_y_moves_by_the_jacobian_of_a_change_of_units() -> None:
    from bench.bench_ets_forms import form_rows

    t = np.arange(48.0)
    y = 50 + t + 8 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(4).standard_normal(48)
    ds = Dataset.from_arrays(t, y, test_fraction=0.25)
    big = Dataset.from_arrays(t, 10 * y, test_fraction=0.25)
    for log in (False, True):
        a, b = pd.DataFrame(form_rows(ds, log=log)), pd.DataFrame(form_rows(big, log=log))
        assert set(a.scale) == {"log" if log else "y"} and len(a) >= 3
        ok = np.isfinite(a.bic_y).to_numpy()
        assert ok.sum() >= 3
        # Standardised data are the same up to rounding, so are the fits (an optimiser's path may part in the
        # last digits): the density of y drops by n log 10 (166 here).
        n = int(a.n_train.iloc[0])
        assert np.allclose(b.bic_y[ok] - a.bic_y[ok], 2 * n * math.log(10), atol=0.05)
        assert np.allclose(b.test_rmse[ok], 10 * a.test_rmse[ok], rtol=1e-3)
        assert np.allclose(b.origins_sse[ok], 100 * a.origins_sse[ok], rtol=1e-3)


def test_ets_forms_choices_pick_by_bic_of_y_across_scales_by_origins_and_in_hindsight() -> None:
    from bench.bench_ets_forms import choices

    g = pd.DataFrame({"scale": ["y", "y", "log", "log"], "form": ["ANN", "AAN", "ANN", "AAN"],
                      "bic_y": [10.0, 12.0, 9.0, math.inf], "origins_sse": [5.0, 1.0, 3.0, 0.5],
                      "test_rmse": [2.0, 4.0, 3.0, 1.0]})
    c = choices(g, ref=2.0)
    assert (c["bic_y"], c["bic_log"], c["bic_both"]) == (1.0, 1.5, 1.5)
    assert c["form_both"] == "ANNᴸ" and c["form_y"] == "ANN"
    assert (c["origins_y"], c["origins_log"], c["origins_both"]) == (2.0, 0.5, 0.5)
    assert (c["oracle_y"], c["oracle_both"]) == (1.0, 0.5)
    assert math.isnan(choices(g[g.scale == "y"], ref=2.0)["bic_log"])


def test_level_noise_walks_step_by_the_squared_level_and_are_the_plain_walks_at_rho_zero() -> None:
    from bench.bench_level_noise import Grid, form_terms, level_scale, walk_matrices

    n = 8
    grid = Grid(np.arange(n + 2) / n, n, 1)
    k_w, k_iw = walk_matrices(grid, np.ones(n), 0.0)
    i = np.arange(n + 2)
    assert np.allclose(k_w, (np.minimum.outer(i, i) + 1) / n)  # a Wiener process on the grid
    s = np.linspace(0.5, 1.5, n)
    k_w1, k_iw1 = walk_matrices(grid, s, 1.0)
    # The walk's variance grows by s² per step, and by the last s² after the data.
    steps = np.concatenate([s, [s[-1], s[-1]]]) ** 2 / n
    assert np.allclose(np.diag(k_w1), np.cumsum(steps))
    assert np.allclose(k_w1[3, 6], np.sum(steps[:4]))  # Cov = Var at the earlier time
    assert np.all(np.linalg.eigvalsh(k_iw1) > -1e-12) and np.allclose(walk_matrices(grid, np.ones(n), 1.0)[1], k_iw)
    assert np.allclose(level_scale(np.full(12, 7.0), 4), 1.0)
    # A season that grows with the level: the additive one times s s', the last s after the data.
    grid4 = Grid(np.arange(n + 2) / n, n, 4)
    per, grows = form_terms("ANA", grid4, s, 1.0)[-1], form_terms("ANM", grid4, s, 1.0)[-1]
    scale = np.concatenate([s, [s[-1], s[-1]]])
    assert np.allclose(grows, per * np.outer(scale, scale)) and np.allclose(per[0, 4], 1.0)
    assert math.isclose(float(np.mean(level_scale(np.arange(1.0, 30.0), 12))), 1.0)


def test_level_noise_gradient_matches_finite_differences() -> None:
    from bench.bench_level_noise import Grid, form_terms, level_scale, neg_lml

    n = 30
    rng = np.random.default_rng(5)
    y = 10 + np.cumsum(rng.normal(0.2, 1.0, n + 6))
    grid = Grid(np.arange(n + 6) / n, n, 6)
    s = level_scale(y[:n], 6)
    mats = [t[:n, :n] for t in form_terms("AAA", grid, s, 1.0)] + [np.diag(s ** 2)]
    z = (y[:n] - y[:n].mean()) / y[:n].std()
    p = rng.normal(-1.0, 0.5, len(mats))
    value, grad = neg_lml(p, mats, z)
    h = 1e-6
    fd = [(neg_lml(p + h * e, mats, z)[0] - neg_lml(p - h * e, mats, z)[0]) / (2 * h) for e in np.eye(len(p))]
    assert np.allclose(grad, fd, rtol=1e-5, atol=1e-6)
    # The value is the Gaussian log density.
    cov = sum(np.exp(pi) * m for pi, m in zip(p, mats, strict=True)) + 1e-8 * np.eye(n)
    assert math.isclose(-value, multivariate_normal(np.zeros(n), cov).logpdf(z), rel_tol=1e-9)
