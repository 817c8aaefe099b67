"""Reference kernels fitted on the user's data: the SE baseline and fixed structures.

The Results page shows test RMSE next to these; the mutation explorer starts from them.
"""

from __future__ import annotations

import numpy as np

from .kernel import Kernel
from .library import compose, squared_exponential
from .metrics import FitData
from .optimize import FitResult, OptimConfig, fit_kernel

__all__ = ["fit_fixed", "fit_structure", "se_baseline"]


def fit_fixed(kernel: Kernel, data: FitData, *, seed: int = 0, metric: str = "lml", n_restarts: int = 5,
              max_evals: int = 200) -> FitResult:
    """Fit one kernel with a generous budget (a reference, not a search candidate)."""
    cfg = OptimConfig(metric=metric, n_restarts=n_restarts, max_evals=max_evals)
    return fit_kernel(kernel, data, cfg, np.random.default_rng(seed))


def se_baseline(data: FitData, *, seed: int = 0) -> FitResult:
    """The SE kernel (``θ0² exp(−r²/2)``) fitted by LML: the benchmark's ``SE`` column."""
    return fit_fixed(squared_exponential(), data, seed=seed)


def fit_structure(expr: str | list, data: FitData, *, seed: int = 0, metric: str = "lml") -> FitResult:
    """Fit a GPSS-style structure (e.g. a published GPSS preset) on these data."""
    return fit_fixed(compose(expr), data, seed=seed, metric=metric)
