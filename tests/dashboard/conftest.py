"""Fixtures of the dashboard's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A fresh data directory for the dashboard's runs, one run at a time, the repository as working
    directory (``.streamlit/config.toml``, the upload limit, is read from there)."""
    d = tmp_path / "evocov-data"
    monkeypatch.setenv("EVOCOV_DATA_DIR", str(d))
    monkeypatch.setenv("EVOCOV_MAX_CONCURRENT", "1")
    monkeypatch.chdir(ROOT)
    return d
