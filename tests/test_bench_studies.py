"""The arithmetic of the post-hoc study scripts in ``bench/`` (their searches are too slow to run here)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import multivariate_normal

from bench.bench_log_transform import lml_of_y, log_dataset
from bench.bench_run_average import bic_pick_gains
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
