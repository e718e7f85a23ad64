"""What differs between the two SQL engines, and the session the shared SQL runs on.

The shared modules (``conversations.py``, ...) write each statement once, with ``?`` and
``:name`` placeholders, and ask the engine's ``Dialect`` for what truly differs: the placeholder
style, boolean literals, row locks, an id list, how JSON and id arrays are stored. This is
SQLAlchemy Core's split of its compiler from its dialects, in miniature; docs/storage.md says why
hivekeep does not use SQLAlchemy itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hivekeep.store.base import MemoryFilter


@dataclass(frozen=True)
class TextQuery:
    """One full-text search: the viewer's visible matches of ``terms`` passing ``filters``, the
    best ``k`` (all terms, or any of them)."""

    viewer_id: int
    terms: Sequence[str]
    k: int
    filters: MemoryFilter
    any_term: bool


class Dialect:
    """The engine-specific parts of a statement, and the full-text arm; one subclass per engine."""

    FALSE = "0"
    TRUE = "1"
    FOR_UPDATE = ""  # row lock suffix for a SELECT inside a transaction (SQLite: one writer)
    AGENT_NAME = "name = ?"  # an agent by name, case-insensitively
    UNIQUE_VIOLATION: type[Exception] = Exception  # what the driver raises for a taken name
    SUBJECT_KEY_STORED = False  # memories.subject_key is a column of its own (PostgreSQL)
    SUBJECT_COLUMN = "lower(trim(m.subject))"  # the subject filter's side of ``m`` (memories)
    VIEWER_COLUMN = "+agent_id"  # ``+``: SQLite's planner keeps to the id index for a few ids

    VECTOR_COLUMN = "embedding"  # a stored vector, selected for ``vector_from``

    def vector_from(self, stored: Any) -> npt.NDArray[np.float32]:
        """A stored vector (here little-endian float32 bytes) as an array."""
        return np.frombuffer(stored, dtype="<f4").astype(np.float32)

    def mark(self, name: str) -> str:
        """A named placeholder in the driver's own style (kept as it is by ``translate``)."""
        return f":{name}"

    def text_search(self, s: Session, query: TextQuery) -> list[int]:
        """The full-text arm (FTS5 against ``tsvector``): memory ids, best first."""
        raise NotImplementedError

    def together(self, conn: Any) -> AbstractContextManager[Any]:
        """Statements executed inside go to the engine together, their rows read after: here
        one after the other; PostgreSQL sends them in one round trip (a pipeline)."""
        return contextlib.nullcontext()

    def text_search_filled(self, s: Session, query: TextQuery) -> tuple[list[int], list[int]]:
        """``Store.text_search_filled``: the search of every term, then the any-term fill when
        it found fewer than ``k`` of several terms (else none). Here two searches, one after
        the other; an engine may send them in fewer round trips."""
        every = self.text_search(s, dataclasses.replace(query, any_term=False))
        if len(every) >= query.k or len(query.terms) < 2:
            return every, []
        return every, self.text_search(s, dataclasses.replace(query, any_term=True))

    def translate(self, sql: str) -> str:
        """The statement in the driver's placeholder style (canonical: ``?`` and ``:name``)."""
        return sql

    def any_of(self, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        """``column`` in ``ids``: the condition and its positional parameters (here one ``?``
        an id, SQLite's way)."""
        marks = ", ".join("?" * len(ids))
        return f"{column} IN ({marks})", list(ids)

    def changed(self, conn: Any, cursor: Any) -> int:
        """How many rows the statement just run on ``cursor`` changed."""
        return int(conn.changes())  # apsw: the connection counts

    @contextmanager
    def refused_values(self) -> Iterator[None]:
        """Around a write of user values: the driver's refusal of one becomes ``StoreError``
        (SQLite stores any value its column's affinity allows: nothing to translate)."""
        yield

    def insert_or_ignore(self, insert: str) -> str:
        """An ``INSERT ...`` that skips a row whose key is taken."""
        return "INSERT OR IGNORE" + insert[len("INSERT") :]

    def to_json(self, value: Any) -> Any:
        """A JSON value as the engine stores it."""
        raise NotImplementedError

    def from_json(self, stored: Any) -> Any:
        """A stored JSON value (None stays None) as Python values."""
        raise NotImplementedError

    def to_ids(self, ids: Sequence[int]) -> Any:
        """A list of ids (``summaries.source_ids``) as the engine stores it."""
        raise NotImplementedError

    def from_ids(self, stored: Any) -> tuple[int, ...]:
        raise NotImplementedError

    def flag(self, value: bool) -> Any:
        """A boolean as a bound parameter."""
        return value


class Session:
    """One connection (apsw or psycopg) as the shared SQL sees it: canonical statements in,
    translated by the dialect, rows out."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        sql = self.dialect.translate(sql)
        return self.conn.execute(sql, params)

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        return list(self.execute(sql, params).fetchall())

    def found(
        self, sql: str, params: Sequence[Any], missing: Exception, *, lock: bool = False
    ) -> Any:
        """The first row of ``sql``, else ``missing`` raised; ``lock`` holds the row until the
        transaction ends (the dialect's ``FOR_UPDATE``)."""
        sql += self.dialect.FOR_UPDATE if lock else ""
        row = self.one(sql, params)
        if row is None:
            raise missing
        return row

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any | None:
        """The first row, or None; the statement is run to its end (an INSERT ... RETURNING)."""
        rows = self.rows(sql, params)
        return rows[0] if rows else None


class SqlRows:
    """What the shared mixins (``agents.py``, ``memories.py``, ...) ask of the store they are
    mixed into: its dialect, one transaction (``_atomic``) and a connection for reads
    (``_reading``), each as a ``Session``."""

    _dialect: Dialect

    def _atomic(self) -> AbstractContextManager[Session]:
        raise NotImplementedError  # provided by the store

    def _reading(self) -> AbstractContextManager[Session]:
        raise NotImplementedError  # provided by the store

    def _atomic_if_free(self) -> AbstractContextManager[Session]:
        """A transaction for bookkeeping a read must not wait on: the store may raise HiveBusy
        at once instead of waiting for the write lock (SQLite does; PostgreSQL's readers never
        wait on writers, so it simply writes)."""
        return self._atomic()
