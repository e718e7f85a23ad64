"""The PostgreSQL dialect: ``%s`` / ``%(name)s`` placeholders, real booleans, ``jsonb``,
``bigint[]`` id lists, ``= ANY(array)`` and row locks (``FOR UPDATE``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.types.json import Jsonb

from hivekeep.errors import StoreError
from hivekeep.store.postgres.fulltext import tsvector_search, tsvector_search_filled
from hivekeep.store.sql.dialect import Dialect, Session, TextQuery

# A quoted string or a ``::`` cast (kept, % doubled), psycopg's own ``%s`` / ``%(name)s``
# (kept), or ``?``, ``:name``, a bare ``%`` (translated).
_TOKEN = re.compile(r"'(?:[^']|'')*'|::|%\(\w+\)s|%s|\?|(?<![\w:]):([A-Za-z_]\w*)|%")


def _swap(match: re.Match[str]) -> str:
    token = match.group(0)
    if token == "?":
        return "%s"
    if token == "%":
        return "%%"
    if token.startswith("%"):  # already psycopg's (from ``mark``)
        return token
    if match.group(1) is not None:
        return f"%({match.group(1)})s"
    return token.replace("%", "%%")  # psycopg reads placeholders inside quoted strings too


class PostgresDialect(Dialect):
    FALSE = "false"
    TRUE = "true"
    FOR_UPDATE = " FOR UPDATE"
    AGENT_NAME = "lower(name) = lower(?)"
    UNIQUE_VIOLATION = psycopg.errors.UniqueViolation
    SUBJECT_KEY_STORED = True
    SUBJECT_COLUMN = "m.subject_key"  # a generated column, trimmed and case-folded
    VIEWER_COLUMN = "agent_id"

    VECTOR_COLUMN = "embedding::real[]"

    def vector_from(self, stored: Any) -> npt.NDArray[np.float32]:
        return np.asarray(stored, dtype=np.float32)

    def mark(self, name: str) -> str:
        return f"%({name})s"

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - one dialect object lives for the process
    def translate(self, sql: str) -> str:
        return _TOKEN.sub(_swap, sql)

    def any_of(self, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(ids)]

    def changed(self, conn: Any, cursor: Any) -> int:
        return int(cursor.rowcount)

    @contextmanager
    def refused_values(self) -> Iterator[None]:
        try:
            yield
        except psycopg.errors.DataException as exc:
            raise StoreError(f"PostgreSQL refused a value: {exc}".rstrip()) from exc

    def insert_or_ignore(self, insert: str) -> str:
        return insert + " ON CONFLICT DO NOTHING"

    def text_search(self, s: Session, query: TextQuery) -> list[int]:
        return tsvector_search(s, query)

    def text_search_filled(self, s: Session, query: TextQuery) -> tuple[list[int], list[int]]:
        return tsvector_search_filled(s, query)

    def together(self, conn: Any) -> AbstractContextManager[Any]:
        return conn.pipeline()  # type: ignore[no-any-return]

    def to_json(self, value: Any) -> Any:
        return Jsonb(value)

    def from_json(self, stored: Any) -> Any:
        return stored

    def to_ids(self, ids: Sequence[int]) -> Any:
        return list(ids)

    def from_ids(self, stored: Any) -> tuple[int, ...]:
        return tuple(stored)


POSTGRES = PostgresDialect()
