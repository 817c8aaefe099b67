"""The command line as the tests of several layers run it (``tests/present/test_cli.py`` and others)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A search of a few fixed fits: the same seed gives the same kernel, in seconds.
TINY = ["--preset", "quick-fixed",
        "--population", "8", "--generations", "2", "--mu", "3", "--d-min", "2", "--d-max", "5", "--psd-w", "6",
        "--n-restarts", "1", "--max-evals", "15", "--n-screen", "4", "--workers", "1", "--seed", "1"]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -m evocov_core *args`` from ``cwd``, with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "evocov_core", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)
