"""The history half of ``PostgresStore``: memory and profile versions, the trash, and purge.

A mixin so that ``store.py`` stays about live memories; it relies on the host class for
``_transaction()``, ``history_limit`` and three lookups inside a transaction (``_visible_memory``,
``_owned_memory``, ``_profile_of``). As on SQLite, trashed memories live whole in
``memory_trash`` (vector included), out of ``memories`` and so out of both indexes and every read.

Purge deletes the rows, the versions and the index entries in one transaction, with a
``pending_scrubs`` row per memory; then ``VACUUM`` of the three tables reclaims the dead tuples
(and their index entries), and only then the row goes: a purge cut short is finished by the next
``finish_scrubs`` (every open of the hive, every purge). VACUUM makes the space reusable but does
not zero it, nor PostgreSQL's own WAL: on a server, erasure down to the disk blocks is the
operator's (``VACUUM FULL``, encrypted storage); see docs/memory.md, "Purge".
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import psycopg
from psycopg.rows import TupleRow

from hivekeep.core.subjects import subject_key
from hivekeep.core.text import normalise_text, now_timestamp
from hivekeep.store.base import (
    PERSON,
    Change,
    MemoryRecord,
    NewMemory,
    Vector,
)
from hivekeep.store.postgres.dialect import POSTGRES
from hivekeep.store.postgres.vectors import vector_literal
from hivekeep.store.rows import (
    STORED_COLUMNS,
    described,
)
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.history import in_trash, trashed_author
from hivekeep.store.sql.memories import owned, visible
from hivekeep.store.sql.versions import record_change
from hivekeep.types import Actor, Operation

Connection = psycopg.Connection[TupleRow]
_TRASH_COLUMNS = f"{STORED_COLUMNS}, subject_key, embedding"
_TRASH_MARKS = ", ".join(["%s"] * 18)  # the values after the id of an imported trashed memory


def forget_agent_history(conn: Connection, agent_id: int) -> None:
    """``delete_agent`` (before its private memories go): their versions, links and its trashed
    private memories go; its trashed shared ones stay, owned by no agent."""
    gone = (
        "SELECT id FROM memories WHERE agent_id = %(a)s AND scope = 'private' "
        "UNION ALL SELECT id FROM memory_trash WHERE agent_id = %(a)s AND scope = 'private'"
    )
    conn.execute(f"DELETE FROM memory_versions WHERE memory_id IN ({gone})", {"a": agent_id})
    conn.execute(
        f"DELETE FROM memory_links WHERE newer_id IN ({gone}) OR older_id IN ({gone})",
        {"a": agent_id},
    )
    conn.execute("DELETE FROM memory_trash WHERE agent_id = %s AND scope = 'private'", (agent_id,))
    conn.execute("UPDATE memory_trash SET agent_id = NULL WHERE agent_id = %s", (agent_id,))


def _session(conn: Connection) -> Session:
    return Session(conn, POSTGRES)


class HistoryRows:
    history_limit: int

    def _transaction(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError  # provided by PostgresStore

    def _connection(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError  # provided by PostgresStore

    def delete_memory(self, memory_id: int, owner_id: int, *, by: Actor = Actor.AGENT) -> None:
        with self._transaction() as conn:
            conn.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (memory_id,))
            owned(_session(conn), memory_id, owner_id)
            record_change(
                _session(conn), memory_id, Change(by, Operation.FORGET), self.history_limit
            )
            conn.execute(
                f"INSERT INTO memory_trash({_TRASH_COLUMNS}, deleted_at, deleted_by) "
                f"SELECT {_TRASH_COLUMNS}, %s, %s FROM memories WHERE id = %s",
                (now_timestamp(), by.value, memory_id),
            )
            conn.execute("DELETE FROM memories WHERE id = %s", (memory_id,))

    def restore_memory(self, memory_id: int, owner_id: int, *, by: Actor) -> MemoryRecord:
        with self._transaction() as conn:
            in_trash(_session(conn), memory_id, owner_id, lock=True)
            conn.execute(
                f"INSERT INTO memories({_TRASH_COLUMNS}) OVERRIDING SYSTEM VALUE "
                f"SELECT {STORED_COLUMNS}, subject_key, "
                "CASE WHEN embedding_state = 'ready' THEN embedding END FROM memory_trash "
                "WHERE id = %s",
                (memory_id,),
            )
            conn.execute(
                "UPDATE memories SET embedding_state = 'pending', embedding_model = NULL "
                "WHERE id = %s AND embedding IS NULL",
                (memory_id,),
            )
            conn.execute("DELETE FROM memory_trash WHERE id = %s", (memory_id,))
            record_change(
                _session(conn), memory_id, Change(by, Operation.RESTORE), self.history_limit
            )
            return visible(_session(conn), memory_id, owner_id)

    @staticmethod
    def _erase(conn: Connection, ids: Sequence[int]) -> int:
        live = conn.execute("DELETE FROM memories WHERE id = ANY(%s) RETURNING id", (list(ids),))
        erased = {int(row[0]) for row in live.fetchall()}
        trashed = conn.execute(
            "DELETE FROM memory_trash WHERE id = ANY(%s) RETURNING id", (list(ids),)
        )
        erased |= {int(row[0]) for row in trashed.fetchall()}
        conn.execute("DELETE FROM memory_versions WHERE memory_id = ANY(%s)", (list(ids),))
        conn.execute(
            "DELETE FROM memory_links WHERE newer_id = ANY(%(ids)s) OR older_id = ANY(%(ids)s)",
            {"ids": list(ids)},
        )
        if erased:
            conn.execute(
                "INSERT INTO pending_scrubs(memory_id, requested_at) "
                "SELECT unnest(%s::bigint[]), %s",
                (sorted(erased), now_timestamp()),
            )
        return len(erased)

    def erase_memory(self, memory_id: int) -> bool:
        with self._transaction() as conn:
            return bool(self._erase(conn, [memory_id]))

    def pending_scrubs(self) -> list[int]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT memory_id FROM pending_scrubs ORDER BY memory_id"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def finish_scrubs(self) -> list[int]:
        with self._connection() as conn:
            pending = conn.execute("SELECT id, memory_id FROM pending_scrubs").fetchall()
            if not pending:
                return []
            # autocommit: VACUUM cannot run inside a transaction
            conn.execute("VACUUM memories, memory_trash, memory_versions")
            conn.execute(
                "DELETE FROM pending_scrubs WHERE id = ANY(%s)", ([row[0] for row in pending],)
            )
        return sorted({int(row[1]) for row in pending})

    def purge_trash(self, deleted_before: str) -> int:
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT id FROM memory_trash WHERE deleted_at < %s", (deleted_before,)
            ).fetchall()
            erased = self._erase(conn, [int(row[0]) for row in rows]) if rows else 0
        if erased:
            self.finish_scrubs()
        return erased

    # what an export with history carries, put back by an import -----------------------------
    def put_trashed_memory(
        self, memory: NewMemory, vector: Vector | None, *, deleted_at: str, deleted_by: Actor
    ) -> int | None:
        owner = None if memory.agent_id == PERSON else memory.agent_id
        with self._transaction() as conn:
            author = trashed_author(_session(conn), memory, owner, deleted_at)
            if author is None:
                return None
            model = conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
            literal = None if vector is None or model is None else vector_literal(vector)
            now = now_timestamp()
            row = conn.execute(
                f"INSERT INTO memory_trash({_TRASH_COLUMNS}, deleted_at, deleted_by) VALUES ("
                f"nextval(pg_get_serial_sequence('memories', 'id')), {_TRASH_MARKS}, "
                "%s::vector, %s, %s) RETURNING id",
                (
                    owner,
                    author,
                    *described(memory, normalise_text(memory.content)),
                    "pending" if literal is None else "ready",
                    None if literal is None or model is None else model[0],
                    memory.created_at or now,
                    memory.updated_at or now,
                    subject_key(memory.subject),
                    literal,
                    deleted_at,
                    deleted_by.value,
                ),
            ).fetchone()
            assert row is not None
            return int(row[0])
