"""The SQLite dialect: ``?`` and ``:name`` as they are, 0/1 booleans, JSON as text, no row locks
(one writer at a time holds the whole file: ``BEGIN IMMEDIATE``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from hivekeep.errors import HiveBusy
from hivekeep.store.sql.dialect import Dialect, Session, TextQuery
from hivekeep.store.sqlite.fulltext import fts5_search

BUSY_TIMEOUT_MS = 10_000  # how long a writer waits for another's write lock


def hive_busy(outcome: str) -> HiveBusy:
    """The error for a write kept out past the busy timeout; ``outcome`` says what was done."""
    return HiveBusy(
        "The hive is busy: another process has held its write lock for more than "
        f"{BUSY_TIMEOUT_MS // 1000} s (a long import, a purge, a backup). {outcome}"
    )


def begin_immediate(conn: apsw.Connection, *, wait: bool = True) -> None:
    """BEGIN IMMEDIATE: the write lock, waited for up to the busy timeout (not at all with
    ``wait=False``), then ``HiveBusy`` (never apsw's raw "database is locked")."""
    if not wait:
        conn.set_busy_timeout(0)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError:
        raise hive_busy("Nothing was written; retry when it is done.") from None
    finally:
        if not wait:
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)


class SQLiteDialect(Dialect):
    UNIQUE_VIOLATION = apsw.ConstraintError  # agents.name is UNIQUE COLLATE NOCASE

    def text_search(self, s: Session, query: TextQuery) -> list[int]:
        return fts5_search(s, query)

    def to_json(self, value: Any) -> Any:
        return json.dumps(value)

    def from_json(self, stored: Any) -> Any:
        return None if stored is None else json.loads(stored)

    def to_ids(self, ids: Sequence[int]) -> Any:
        return json.dumps(list(ids))

    def from_ids(self, stored: Any) -> tuple[int, ...]:
        return tuple(json.loads(stored))

    def flag(self, value: bool) -> Any:
        return int(value)


SQLITE = SQLiteDialect()
