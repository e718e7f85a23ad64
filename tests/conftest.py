"""Shared fixtures: real hive files in tmp_path, and no network beyond loopback for any test."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.support import VectorTable

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None:
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise OSError(f"tests run offline: connection to {address!r} refused by conftest")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with the network unreachable except 127.0.0.1 (proves offline operation)."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    for name in (
        "HIVEKEEP_DB",
        "HIVEKEEP_EMBEDDINGS",
        "MEMORY_SIMILARITY_THRESHOLD",
        "MEMORY_RRF_K",
        "MEMORY_FTS_BOOST",
        "MEMORY_SUBJECT_WEIGHT",
        "MEMORY_TIME_WEIGHT",
        "MEMORY_PROFILE_MAX_TOKENS",
        "HIVEKEEP_LLM",
        "MEMORY_EXTRACTION_MODEL",
        "COMPACTING_MODEL",
        "COMPACTING_THRESHOLD_PERCENT",
        "COMPACTING_KEEP_PERCENT",
        "COMPACTING_MAX_SUMMARIES",
        "COMPACTING_SUMMARY_BUDGET_PERCENT",
        "HIVEKEEP_ALLOWED_HOSTS",
        "HIVEKEEP_SQLITE_SYNCHRONOUS",
        "HIVEKEEP_VECTOR_CACHE_MB",
        "HIVEKEEP_SECRETS",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real bundled model, loaded once per test session."""
    return LocalEmbedder()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "hive.db"


@pytest.fixture
def table() -> VectorTable:
    return VectorTable()


@pytest.fixture
def hive(db_path: Path, local_embedder: LocalEmbedder) -> Iterator[Hive]:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as opened:
        yield opened


@pytest.fixture
def table_hive(db_path: Path, table: VectorTable) -> Iterator[Hive]:
    with Hive(db_path, embedder=table, settings=Settings()) as opened:
        yield opened
