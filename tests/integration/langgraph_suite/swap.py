"""The one change to LangGraph's store tests: their reference stores' constructors build a
``HivekeepStore`` on a fresh hive instead (the bundled embedding model; each store its own hive
file, closed after the test). Everything else in ``test_ported_*.py`` is LangGraph's text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import IndexConfig

from hivekeep import Hive
from hivekeep.integrations.langgraph import HivekeepStore

SqliteIndexConfig = dict[str, Any]  # the SQLite store's IndexConfig: text_fields for fields

OPENERS: list[Callable[[], Hive]] = []  # the current test's hive opener, set by conftest.py


def new_hive() -> Hive:
    return OPENERS[-1]()


class InMemoryStore(HivekeepStore):
    """``InMemoryStore(index=...)`` swapped: ``HivekeepStore(hive, index=...)``."""

    def __init__(self, *, index: IndexConfig | None = None) -> None:
        super().__init__(new_hive(), index=index)


class SqliteStore(HivekeepStore):
    """``SqliteStore.from_conn_string(conn, index=...)`` swapped (``HivekeepStore`` reads the
    config's ``text_fields`` and has a ``setup()`` that does nothing)."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: SqliteIndexConfig | None = None
    ) -> Iterator[SqliteStore]:
        yield cls(new_hive(), index=index)
