"""The store contract runs against every backend listed in ``BACKENDS``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import EmbeddingSpace, Store
from hivekeep.store.sqlite import SQLiteStore

DIMENSION = 8


def _sqlite(tmp_path: Path) -> Store:
    return SQLiteStore(tmp_path / "contract.db")


def _sqlite_nocache(tmp_path: Path) -> Store:
    """Every vector read answered by sqlite-vec itself, without the in-process cache."""
    return SQLiteStore(tmp_path / "contract.db", vector_cache=False)


def _postgres(tmp_path: Path) -> Store:
    """A fresh schema on the test session's PostgreSQL server (see tests/postgres.py)."""
    from tests.postgres import TestPostgresStore

    return TestPostgresStore()


BACKENDS: dict[str, Callable[[Path], Store]] = {
    "sqlite": _sqlite,
    "sqlite-nocache": _sqlite_nocache,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = BACKENDS[request.param](tmp_path)
    opened.reset_embedding_space(EmbeddingSpace("test:contract", DIMENSION))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend_target(request: pytest.FixtureRequest) -> Iterator[str]:
    """Where a whole hive lives, on each backend: a file, or a clean PostgreSQL schema."""
    from tests.postgres import hive_target

    with hive_target(request.param) as where:
        yield where


@pytest.fixture
def backend_hive(backend_target: str, local_embedder: LocalEmbedder) -> Iterator[Hive]:
    """A hive on each backend, for contract tests that run through the façade (Python, REST,
    the CLI) rather than the store alone."""
    with Hive(backend_target, embedder=local_embedder, settings=Settings()) as opened:
        yield opened
