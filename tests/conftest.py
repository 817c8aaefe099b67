"""Shared fixtures for the EvoCov test suite."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
import scipy.linalg  # noqa: F401  (load scipy's own BLAS before limiting threads, see below)

from evocov_core.compute.setup import prepare_process
from evocov_core.fitting import optimize  # noqa: F401  (every numerical library the package uses)

# One BLAS thread, as every entry point that evaluates kernels does. threadpoolctl only
# limits libraries already loaded, hence the imports above: with scipy's OpenBLAS left at
# 2 threads on a busy 2-core machine, small GP fits ran 150x slower.
prepare_process()

# Numba compiles the fused loops of short series once per checkout (20-40 s) and caches them: here, before
# any test that times a search, not inside the first one's budget.
from evocov_core.fitting.gp import load_fused_loop  # noqa: E402

load_fused_loop()

try:
    from hypothesis import HealthCheck, settings
except ModuleNotFoundError:  # pragma: no cover - hypothesis is in requirements-dev.txt
    settings = None
if settings is not None:
    # "ci" (the default): the same examples on every run, so that CI is reproducible, and no example
    # database written into the checkout. Each example's deadline is generous: a hostile file costs
    # milliseconds once the reader is bounded (at most 0.3 s measured), a minute when it is not; on a
    # shared 2-core machine under load a process niced to 19 was once held 9 s. HYPOTHESIS_PROFILE=dev
    # explores new examples.
    settings.register_profile("ci", derandomize=True, database=None, deadline=timedelta(seconds=10),
                              print_blob=True, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", deadline=timedelta(seconds=10))
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: The 13 TSDL benchmark series live next to the repository (``../shared``), in CI only.
TSDL_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "tsdl"


@pytest.fixture(scope="session")
def tsdl_dir() -> Path:
    """Directory of the TSDL benchmark series; skips when the shared data is absent."""
    if not TSDL_DIR.is_dir():
        pytest.skip(f"TSDL benchmark data not found at {TSDL_DIR} (only present next to the CI checkout)")
    return TSDL_DIR
