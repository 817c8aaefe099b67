"""The dashboard's server settings (``.streamlit/config.toml``)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def test_server_listens_on_loopback_only() -> None:
    """``streamlit run app.py`` must not be reachable from the network unless asked to."""
    server = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["server"]
    address = server.get("address")
    assert address is not None, "server.address unset: Streamlit then listens on every interface"
    assert address == "localhost" or ipaddress.ip_address(address).is_loopback, address
    assert server.get("headless") is True


def test_upload_limit_is_the_readers_limit() -> None:
    """The browser refuses uploads above ``server.maxUploadSize`` MB (2**20 bytes); the core reader, which the
    command line uses too, refuses files above ``MAX_BYTES``: the two must be one limit."""
    from dashboard.datasets import max_upload_bytes
    from evocov_core.data import MAX_BYTES, MAX_FILE_MB

    server = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["server"]
    assert server["maxUploadSize"] == MAX_FILE_MB
    assert MAX_BYTES == MAX_FILE_MB * 1024 * 1024 == max_upload_bytes()
