"""The arithmetic of the post-hoc study scripts in ``bench/`` (their searches are too slow to run here)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import multivariate_normal

from bench.bench_gap import bootstrap, folder_ratios, needed_geomean, statistic
from bench.bench_log_transform import lml_of_y, log_dataset
from bench.bench_run_average import bic_pick_gains, full_trials
from evocov_core.benchmarks.common import geomean
from evocov_core.data import Dataset
from evocov_core.evaluate import Inputs, covariance
from evocov_core.gp import lml
from evocov_core.library import squared_exponential


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
    from evocov_core.library import compose

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
    from evocov_core.gp import lml_and_grad

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
