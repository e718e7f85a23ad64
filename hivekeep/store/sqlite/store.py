"""``SQLiteStore``: the ``Store`` on one SQLite file (apsw, WAL mode, versioned migrations).

apsw is used instead of the stdlib ``sqlite3`` because it can always load extensions, whatever
options the interpreter was built with. The vector side (sqlite-vec's table, its change log and
the in-process vector cache) lives in ``vectors.py``; this module owns the rows, full text and
transactions.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt
import sqlite_vec

from hivekeep.core.bounds import MAX_COUNT
from hivekeep.core.dedup import NEIGHBOURS, DedupRule, Verdict
from hivekeep.core.text import now_timestamp
from hivekeep.errors import HiveBusy, StoreError
from hivekeep.store.base import (
    HISTORY_LIMIT,
    PERSON,
    EmbeddingSpace,
    Inserted,
    MemoryFilter,
    MemoryRecord,
    MemoryWrite,
    Vector,
    _Keep,
)
from hivekeep.store.rows import MEMORY_COLUMNS, author_of, described, memory_from_row
from hivekeep.store.sql.agents import AgentRows
from hivekeep.store.sql.conversations import ConversationRows
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.history import VersionRows
from hivekeep.store.sql.memories import (
    MemoryRows,
    candidate,
    found_duplicate,
    same_text,
    stored,
    visible,
    writing,
)
from hivekeep.store.sql.pending import PendingRows
from hivekeep.store.sql.tokens import TokenRows
from hivekeep.store.sqlite import migrations
from hivekeep.store.sqlite.dialect import BUSY_TIMEOUT_MS, SQLITE, begin_immediate, hive_busy
from hivekeep.store.sqlite.history import HistoryRows
from hivekeep.store.sqlite.leases import RowLeases
from hivekeep.store.sqlite.vectors import VectorIndex
from hivekeep.store.vector_budget import DEFAULT_BUDGET_MB
from hivekeep.store.vector_cache import VectorCache, vectors_by_id
from hivekeep.types import EmbeddingState


class SQLiteStore(
    VersionRows,
    AgentRows,
    MemoryRows,
    HistoryRows,
    ConversationRows,
    TokenRows,
    PendingRows,
    RowLeases,
):
    """``Store`` on one SQLite file (WAL mode, busy timeout, versioned migrations).

    ``vector_cache`` (default True) serves vector reads from an in-process copy of the index that
    follows every writer's changes (see ``hivekeep/store/vector_cache.py``); False asks sqlite-vec
    on every search instead (slower, no memory held). ``vector_cache_mb`` bounds it: the matrices
    of the audiences searched least recently go past that many MiB (``HIVEKEEP_VECTOR_CACHE_MB``).

    >>> store = SQLiteStore("memory.db", vector_cache=False)   # doctest: +SKIP
    """

    _dialect = SQLITE

    def __init__(
        self,
        path: str | Path,
        *,
        vector_cache: bool = True,
        vector_cache_mb: int = DEFAULT_BUDGET_MB,
        synchronous: str = "NORMAL",
        history_limit: int = HISTORY_LIMIT,
    ) -> None:
        """``synchronous``: NORMAL (survives a process crash) or FULL (also a power loss).
        ``history_limit``: versions kept per memory and per profile (the oldest go first)."""
        self.history_limit = max(1, history_limit)
        if synchronous not in ("NORMAL", "FULL"):
            raise StoreError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}.")
        self.path = str(path)
        self._lock = threading.RLock()
        try:
            self._conn = apsw.Connection(self.path)
        except apsw.CantOpenError as exc:
            raise StoreError(f"Cannot open the hive file {self.path!r}: {exc}.") from exc
        self._conn.enable_load_extension(True)
        self._conn.load_extension(sqlite_vec.loadable_path())
        self._conn.enable_load_extension(False)
        self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        self._conn.execute("PRAGMA journal_mode = WAL")
        if synchronous == "FULL":
            self._conn.execute("PRAGMA synchronous = FULL")
        else:
            self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        # secure_delete stays off on the write path; a purge turns it on for itself (history.py)
        migrations.migrate(self._conn, now_timestamp())
        budget = vector_cache_mb << 20 if vector_cache else None
        self._index = VectorIndex(self._conn, cache_bytes=budget)
        self._session = Session(self._conn, self._dialect)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def data_version(self) -> int | None:
        """SQLite's ``PRAGMA data_version`` on this store's one connection."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchall()[0][0])

    @property
    def vector_cache(self) -> VectorCache | None:
        """The in-process copy of the vector index (None when turned off), for inspection."""
        return self._index.cache

    # plumbing ---------------------------------------------------------------------------------
    @contextmanager
    def atomic(self, *, wait: bool = True) -> Iterator[Any]:
        """One write transaction (BEGIN IMMEDIATE), or a savepoint when already inside one.

        The vector cache hears how it ended: a rollback drops what it applied meanwhile.
        ``wait=False``: HiveBusy at once when another thread or process holds the write lock,
        for bookkeeping that a read must never wait on (``_atomic_if_free``).
        """
        if not self._lock.acquire(blocking=wait):
            raise hive_busy("Nothing was written.")
        try:
            if not self._conn.in_transaction:
                begin_immediate(self._conn, wait=wait)
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    self._index.rolled_back()
                    raise
                self._index.committed()
            else:
                try:
                    with self._conn:  # apsw: a savepoint
                        yield self._conn
                except BaseException:
                    self._index.rolled_back()
                    raise
        finally:
            self._lock.release()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``Store.transaction``: ``atomic()`` held around the block (each method's own
        ``atomic()`` inside it is a savepoint). Other threads wait on the connection's lock."""
        with self.atomic():
            yield

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        with self._lock:
            return list(self._conn.execute(sql, params))

    @contextmanager
    def _atomic(self) -> Iterator[Session]:
        """``atomic()`` as the shared SQL (``hivekeep/store/sql``) takes it."""
        with self.atomic():
            yield self._session

    @contextmanager
    def _atomic_if_free(self) -> Iterator[Session]:
        """``_atomic()`` if the write lock is free now, else HiveBusy at once (never waits)."""
        with self.atomic(wait=False):
            yield self._session

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """The connection for reads, held by this thread (statements in autocommit)."""
        with self._lock:
            yield self._session

    # agents -----------------------------------------------------------------------------------
    # memories ---------------------------------------------------------------------------------
    def insert_memories(self, writes: Sequence[MemoryWrite], *, dedup: DedupRule) -> list[Inserted]:
        results: list[Inserted] = []
        with self.atomic() as conn:
            neighbours = self._index.neighbours(writes, dedup.floor, NEIGHBOURS)
            authors: dict[int, str] = {}
            for index, write in enumerate(writes):
                memory = write.memory
                author = author_of(memory, authors, self.get_agent)
                verdict = self._judge(write, neighbours.of(index), dedup)
                duplicate = found_duplicate(self._session, write, verdict, self)
                if duplicate is not None:
                    results.append(duplicate)
                    continue
                now = now_timestamp()
                conn.execute(
                    "INSERT INTO memories(agent_id, author_name, content, text_key, category, "
                    "subject, importance, scope, source_context, source, source_message_id, "
                    "retrieval_count, last_retrieved_at, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        None if memory.agent_id == PERSON else memory.agent_id,
                        author,
                        *described(memory, write.text_key),
                        memory.created_at or now,
                        memory.updated_at or memory.created_at or now,
                    ),
                )
                record = self.get_memory(conn.last_insert_rowid(), memory.agent_id)
                self._index.write(record, write.vector, new=True)
                neighbours.inserted(index, record)
                record = self.get_memory(record.id, memory.agent_id)  # with its vector's state
                results.append(stored(self._session, memory.agent_id, record, verdict))
        return results

    def _judge(
        self, write: MemoryWrite, close: list[tuple[int, float]], dedup: DedupRule
    ) -> Verdict:
        """The rule over the author's visible memories of its subject with the same text key
        (as similar as can be: 1.0) and the closest of them."""
        viewer = write.memory.agent_id
        same = same_text(self._session, write.text_key, viewer, write.memory.subject)
        near = [(i, 1.0) for i in same] + [(i, score) for i, score in close if i not in same]
        found = self.fetch_memories(viewer, [memory_id for memory_id, _ in near])
        candidates = [candidate(found[i], viewer, score) for i, score in near if i in found]
        return dedup.judge(writing(write.memory), candidates)

    def _forget_agent(self, s: Session, agent_id: int) -> None:
        rows = s.rows(
            "SELECT id FROM memories WHERE agent_id = ? AND scope = 'private'", (agent_id,)
        )
        private_ids = [int(row[0]) for row in rows]
        for memory_id in private_ids:
            self._index.delete(memory_id)
        self._forget_agent_history(s.conn, agent_id, private_ids)

    def _reset_vectors(self, s: Session, space: EmbeddingSpace) -> None:
        self._index.reset(space.dimension)

    def _vector_changed(
        self, s: Session, memory_id: int, owner_id: int, vector: Vector | _Keep | None
    ) -> None:
        record = visible(s, memory_id, owner_id)
        if not isinstance(vector, _Keep):
            self._index.write(record, vector)
        elif record.embedding_state is EmbeddingState.READY:
            self._index.update_metadata(record)

    def vector_search(
        self,
        viewer_id: int,
        vector: Vector,
        k: int,
        filters: MemoryFilter,
        *,
        toward: Sequence[int] = (),
        weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        feedback = self.vectors(viewer_id, list(toward)) if weight and toward else {}
        if not feedback:
            with self._lock:
                return self._index.search(viewer_id, vector, k, filters)
        query = np.asarray(vector, dtype=np.float32)
        moved = query + weight * np.mean(np.stack(list(feedback.values())), axis=0)
        moved /= np.linalg.norm(moved)
        with self._lock:
            ids = [i for i, _ in self._index.search(viewer_id, moved, k, filters)]
            found = self._index.vectors(viewer_id, ids)
        return [(i, float(np.dot(query, found[i]))) for i in ids if i in found]

    def vectors(self, viewer_id: int, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        with self._lock:
            return self._index.vectors(viewer_id, ids)

    def mark_retrieved(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        now = now_timestamp()
        # a count, not a fact: skipped rather than make a recall wait on another writer
        with contextlib.suppress(HiveBusy), self.atomic(wait=False) as conn:
            conn.executemany(
                # saturates at the 32-bit ceiling both engines keep (core/bounds.py)
                f"UPDATE memories SET retrieval_count = min(retrieval_count + 1, {MAX_COUNT}), "
                "last_retrieved_at = ? WHERE id = ?",
                [(now, memory_id) for memory_id in ids],
            )

    def store_embedding(self, memory_id: int, content: str, vector: Vector) -> bool:
        with self.atomic() as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ? AND content = ?",
                (memory_id, content),
            ).fetchone()
            if row is None:
                return False
            self._index.write(memory_from_row(row), vector)
            return True

    def memories_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[MemoryRecord, npt.NDArray[np.float32] | None]]:
        """Vectors come from ``memory_vec`` itself, not the cache: an export holds one page."""
        author = "" if agent_id is None else " AND agent_id = :agent"
        with self._lock:
            records = [
                memory_from_row(row)
                for row in self._read(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id > :after{author} "
                    "ORDER BY id LIMIT :limit",
                    {"after": after_id, "agent": agent_id, "limit": limit},
                )
            ]
            ready = [r.id for r in records if r.embedding_state is EmbeddingState.READY]
            vectors: dict[int, npt.NDArray[np.float32]] = {}
            if not self._index.exists():
                ready = []
            vectors.update(
                (i, np.frombuffer(blob, dtype="<f4").astype(np.float32))
                for i, blob, _ in vectors_by_id(self._conn, ready)
            )
        return [(record, vectors.get(record.id)) for record in records]
