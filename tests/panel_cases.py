"""Panels the tests of several layers share (``tests/panel/``, ``tests/compute/test_dask_cluster.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The panel preset with fixed counts and no clock: the same seed gives the same forecasts.
FIXED = dict(population=6, mu=2, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4, rho_max=30,
             time_budget=0.0)


def long_panel(ordinary: int = 8, bad: bool = True, seed: int = 0) -> pd.DataFrame:
    """``ordinary`` monthly series of 40-82 points (trend, season, noise) and, with ``bad``, a constant one, one of
    3 points and one with missing values."""
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []
    for k in range(ordinary):
        n = 40 + 6 * k
        t = np.arange(n)
        y = 10 + 0.2 * k * t + 3 * np.sin(2 * np.pi * t / 12 + k) + rng.standard_normal(n)
        rows += [(f"s{k}", int(i), float(v)) for i, v in zip(t, y, strict=True)]
    if bad:
        rows += [("const", i, 5.0) for i in range(30)]
        rows += [("three", i, float(i)) for i in range(3)]
        y = 20 + np.sin(np.arange(36) / 2) + 0.1 * rng.standard_normal(36)
        y[[3, 10, 11, 20]] = np.nan
        rows += [("gaps", i, float(v)) for i, v in enumerate(y)]
    return pd.DataFrame(rows, columns=["unique_id", "ds", "y"])
