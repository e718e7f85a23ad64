"""The history half of ``SQLiteStore``: memory and profile versions, the trash, and purge.

A mixin so that ``store.py`` stays about live memories; it relies on the host class for
``atomic()``, ``_read()``, ``_conn``, ``_session``, ``_index``, ``get_memory()`` and
``history_limit``. Trashed memories live whole in ``memory_trash`` (their vector as a BLOB), out
of ``memories`` and so out of the full-text and vector indexes and of every read.

Purge erases for real. ``secure_delete`` is off on the write path (an update or a forget leaves the
old bytes in free space, as SQLite does by default; the text is still in the history or the trash
anyway), so a purge turns it on for itself: the rows go with their content zeroed, the full-text
index is merged into one segment (FTS5 keeps deleted entries in old segments until a merge), the
file is rebuilt (``VACUUM``: the free space earlier writes left behind goes) and the WAL is
checkpointed and truncated, so the text is in neither file afterwards.

The erase commits first, with a ``pending_scrubs`` row per memory; the row goes only once the
scrub (merge, ``VACUUM``, checkpoint) has completed. A purge killed in between leaves the row,
and the next ``finish_scrubs`` (every open of the hive, every purge, ``hivekeep purge --resume``)
does the scrub again. ``HIVEKEEP_TEST_CRASH_AT`` names a step at which the process kills itself
(``crash_point``): tests use it to kill a purge at each step; nothing else sets it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import apsw
import numpy as np

from hivekeep.core.text import normalise_text, now_timestamp
from hivekeep.errors import NotFound
from hivekeep.store.base import (
    PERSON,
    AgentRecord,
    Change,
    EmbeddingSpace,
    MemoryRecord,
    NewMemory,
    Vector,
)
from hivekeep.store.rows import (
    STORED_COLUMNS,
    described,
)
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.history import trashed_author
from hivekeep.store.sql.memories import owned
from hivekeep.store.sql.versions import record_change
from hivekeep.store.sqlite.dialect import hive_busy
from hivekeep.store.sqlite.vectors import VectorIndex
from hivekeep.types import Actor, Operation

log = logging.getLogger(__name__)

CRASH_ENV = "HIVEKEEP_TEST_CRASH_AT"
PURGE_STEPS = ("erasing", "erased", "merged", "vacuumed", "checkpointed")


def crash_point(step: str) -> None:
    """Die here, with SIGKILL (no clean-up, as ``kill -9``), when ``HIVEKEEP_TEST_CRASH_AT`` is
    ``step``: the crash tests' way to stop a purge at each of ``PURGE_STEPS``, for tests only."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


class HistoryRows:
    _conn: Any
    _index: VectorIndex
    _session: Session
    _lock: threading.RLock
    history_limit: int

    def atomic(self) -> AbstractContextManager[Any]:
        raise NotImplementedError  # provided by SQLiteStore

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        raise NotImplementedError  # provided by SQLiteStore

    def get_memory(self, memory_id: int, viewer_id: int) -> MemoryRecord:
        raise NotImplementedError  # provided by SQLiteStore

    def get_agent(self, key: int | str) -> AgentRecord:
        raise NotImplementedError  # provided by SQLiteStore

    def embedding_space(self) -> EmbeddingSpace | None:
        raise NotImplementedError  # provided by SQLiteStore

    # the trash --------------------------------------------------------------------------------
    def _trashed(self, memory_id: int, owner_id: int) -> Any:
        row = self._conn.execute(
            "SELECT agent_id, scope, embedding_state, embedding FROM memory_trash WHERE id = ?",
            (memory_id,),
        ).fetchone()
        if row is None or not (row[0] == owner_id or (owner_id == PERSON and row[1] == "shared")):
            raise NotFound(f"No memory with id {memory_id} is in this agent's trash.")
        return row

    def delete_memory(self, memory_id: int, owner_id: int, *, by: Actor = Actor.AGENT) -> None:
        with self.atomic() as conn:
            owned(self._session, memory_id, owner_id)
            record_change(
                self._session, memory_id, Change(by, Operation.FORGET), self.history_limit
            )
            blob = None
            if self._index.exists():
                found = conn.execute(
                    "SELECT embedding FROM memory_vec WHERE memory_id = ?", (memory_id,)
                ).fetchone()
                blob = None if found is None else found[0]
            conn.execute(
                f"INSERT INTO memory_trash({STORED_COLUMNS}, embedding, deleted_at, deleted_by) "
                f"SELECT {STORED_COLUMNS}, ?, ?, ? FROM memories WHERE id = ?",
                (blob, now_timestamp(), by.value, memory_id),
            )
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))  # FTS: trigger
            self._index.delete(memory_id)

    def restore_memory(self, memory_id: int, owner_id: int, *, by: Actor) -> MemoryRecord:
        with self.atomic() as conn:
            _, _, state, blob = self._trashed(memory_id, owner_id)
            conn.execute(
                f"INSERT INTO memories({STORED_COLUMNS}) SELECT {STORED_COLUMNS} "
                "FROM memory_trash WHERE id = ?",
                (memory_id,),
            )
            conn.execute("DELETE FROM memory_trash WHERE id = ?", (memory_id,))
            record = self.get_memory(memory_id, owner_id)
            vector = None
            if state == "ready" and blob is not None:
                vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            self._index.write(record, vector, new=True)
            record_change(
                self._session, memory_id, Change(by, Operation.RESTORE), self.history_limit
            )
            return self.get_memory(memory_id, owner_id)

    # purge ------------------------------------------------------------------------------------
    def _erase(self, conn: Any, ids: Sequence[int]) -> int:
        """Delete the memories' rows, trash rows, versions, links and vectors, and record a
        pending scrub of each one erased (in the transaction)."""
        erased = 0
        now = now_timestamp()
        for memory_id in ids:
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))  # FTS: trigger
            erased_live = conn.changes()
            conn.execute("DELETE FROM memory_trash WHERE id = ?", (memory_id,))
            found = bool(erased_live or conn.changes())
            conn.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory_id,))
            _unlink(conn, memory_id)
            if erased_live:
                self._index.delete(memory_id)
            if found:
                erased += 1
                conn.execute(
                    "INSERT INTO pending_scrubs(memory_id, requested_at) VALUES (?, ?)",
                    (memory_id, now),
                )
        crash_point("erasing")  # the transaction is still open: a kill here rolls it back
        return erased

    @contextmanager
    def _secure_delete(self) -> Iterator[None]:
        """``secure_delete`` on for the purge only (a per-connection pragma): what it deletes is
        zeroed, not left in free space. The write path runs without it (docs/benchmarks.md)."""
        with self._lock:
            self._conn.execute("PRAGMA secure_delete = ON")
            try:
                yield
            finally:
                self._conn.execute("PRAGMA secure_delete = OFF")

    def _scrub(self) -> bool:
        """After erasing (under ``_secure_delete``): merge the full-text index (dropping deleted
        entries from its segments), rebuild the file (VACUUM: no free space, where updates and
        forgets made before the purge left old bytes) and move every WAL frame into the file,
        then truncate the WAL. False when the WAL could not be truncated."""
        with self.atomic() as conn:
            conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
        crash_point("merged")
        try:
            self._conn.execute("VACUUM")
        except apsw.BusyError:  # the erase is committed: only the clean-up waits
            raise hive_busy(
                "The purged memories are erased, but the clean-up of the file (VACUUM) could "
                "not run, so their text may still be in it: retry the purge, or run `hivekeep "
                "purge --resume` when the hive is idle (the next open of the hive tries too)."
            ) from None
        crash_point("vacuumed")
        return self._checkpoint()

    def _checkpoint(self) -> bool:
        busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            log.warning(
                "The WAL of the hive file could not be truncated (another connection is reading); "
                "erased text stays in it until the purge's clean-up is finished (at the next "
                "open of the hive, or `hivekeep purge --resume`)."
            )
        return not busy

    def erase_memory(self, memory_id: int) -> bool:
        with self._secure_delete(), self.atomic() as conn:
            erased = self._erase(conn, [memory_id])
        crash_point("erased")
        return bool(erased)

    def pending_scrubs(self) -> list[int]:
        rows = self._read("SELECT DISTINCT memory_id FROM pending_scrubs ORDER BY memory_id")
        return [int(row[0]) for row in rows]

    def finish_scrubs(self) -> list[int]:
        with self._lock:
            pending = self._conn.execute("SELECT id, memory_id FROM pending_scrubs").fetchall()
            if not pending:  # the common case, checked at every open: no pragma, no scrub
                return []
            with self._secure_delete():
                if not self._scrub():
                    return []
            crash_point("checkpointed")
            with self.atomic() as conn:  # only what this scrub covered: later erases wait theirs
                conn.executemany(
                    "DELETE FROM pending_scrubs WHERE id = ?", [(row[0],) for row in pending]
                )
        return sorted({int(row[1]) for row in pending})

    def purge_trash(self, deleted_before: str) -> int:
        with self._lock:
            expired = self._conn.execute(
                "SELECT 1 FROM memory_trash WHERE deleted_at < ? LIMIT 1", (deleted_before,)
            ).fetchone()
        if expired is None:  # the common case, checked at every open: no pragma, no scrub
            return 0
        with self._secure_delete(), self.atomic() as conn:
            ids = [
                int(row[0])
                for row in conn.execute(
                    "SELECT id FROM memory_trash WHERE deleted_at < ?", (deleted_before,)
                )
            ]
            erased = self._erase(conn, ids)
        self.finish_scrubs()
        return erased

    # what an export with history carries, put back by an import -----------------------------
    def put_trashed_memory(
        self, memory: NewMemory, vector: Vector | None, *, deleted_at: str, deleted_by: Actor
    ) -> int | None:
        owner = None if memory.agent_id == PERSON else memory.agent_id
        with self.atomic() as conn:
            author = trashed_author(self._session, memory, owner, deleted_at)
            if author is None:
                return None
            # an id from the memories' own sequence: a restore puts the row back under it
            seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()
            top = conn.execute("SELECT coalesce(max(id), 0) FROM memory_trash").fetchone()[0]
            memory_id = max(int(seq[0]) if seq else 0, int(top)) + 1
            if seq is None:
                conn.execute(
                    "INSERT INTO sqlite_sequence(name, seq) VALUES ('memories', ?)", (memory_id,)
                )
            else:
                conn.execute(
                    "UPDATE sqlite_sequence SET seq = ? WHERE name = 'memories'", (memory_id,)
                )
            space = self.embedding_space()
            blob = None
            if vector is not None and space is not None:
                blob = np.asarray(vector, dtype="<f4").tobytes()
            now = now_timestamp()
            conn.execute(
                f"INSERT INTO memory_trash({STORED_COLUMNS}, embedding, deleted_at, deleted_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    memory_id,
                    owner,
                    author,
                    *described(memory, normalise_text(memory.content)),
                    "pending" if blob is None else "ready",
                    None if blob is None or space is None else space.model,
                    memory.created_at or now,
                    memory.updated_at or now,
                    blob,
                    deleted_at,
                    deleted_by.value,
                ),
            )
            return memory_id

    def _forget_agent_history(self, conn: Any, agent_id: int, private_ids: Sequence[int]) -> None:
        """``delete_agent``: its private memories' versions and its trashed private memories
        go; its trashed shared ones stay, owned by no agent."""
        trashed = [
            int(row[0])
            for row in conn.execute(
                "SELECT id FROM memory_trash WHERE agent_id = ? AND scope = 'private'", (agent_id,)
            )
        ]
        for memory_id in [*private_ids, *trashed]:
            conn.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory_id,))
            _unlink(conn, memory_id)
        conn.execute(
            "DELETE FROM memory_trash WHERE agent_id = ? AND scope = 'private'", (agent_id,)
        )
        conn.execute("UPDATE memory_trash SET agent_id = NULL WHERE agent_id = ?", (agent_id,))


def _unlink(conn: Any, memory_id: int) -> None:
    """A memory that goes for good takes its links to newer and older near-twins with it."""
    conn.execute(
        "DELETE FROM memory_links WHERE newer_id = ? OR older_id = ?", (memory_id, memory_id)
    )
