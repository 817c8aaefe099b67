"""The code base stays `ruff check` clean (configuration in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean() -> None:
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    try:
        res = subprocess.run([*cmd, "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        pytest.skip("ruff is not installed (pip install -r requirements-dev.txt)")
    assert res.returncode == 0, res.stdout + res.stderr


def test_no_code_edits_the_import_path():
    """Issue 12: benchmark scripts run as modules (python -m bench.<script>) instead of editing sys.path."""
    root = Path(__file__).resolve().parent.parent
    offenders = [str(p.relative_to(root)) for folder in ("bench", "evocov_core", "pages")
                 for p in (root / folder).rglob("*.py")
                 if "results" not in p.parts and "sys.path.insert" in p.read_text(encoding="utf-8")]
    assert offenders == []
