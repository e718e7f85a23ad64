"""HivekeepStore on a PostgreSQL hive: every test of ``test_langgraph_store.py`` again, with
``db_path`` naming a clean PostgreSQL schema instead of a file (see tests/postgres.py). The store
is a layer over ``Agent``, so the two engines must answer it alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("langgraph")

from tests.integration.test_langgraph_store import *  # noqa: F403  (every store test)
from tests.postgres import postgres_url


@pytest.fixture
def db_path() -> Iterator[str]:
    """Overrides the SQLite file of tests/conftest.py: the hive lives in a PostgreSQL schema."""
    with postgres_url() as url:
        yield url
