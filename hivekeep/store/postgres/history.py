"""The history half of ``PostgresStore``: memory and profile versions, the trash, and purge.

A mixin so that ``store.py`` stays about live memories; it relies on the host class for
``_transaction()``, ``history_limit`` and three lookups inside a transaction (``_visible_memory``,
``_owned_memory``, ``_profile_of``). As on SQLite, trashed memories live whole in
``memory_trash`` (vector included), out of ``memories`` and so out of both indexes and every read.

Purge deletes the rows, the versions and the index entries in one transaction. PostgreSQL keeps
deleted tuples until VACUUM reclaims them, and never zeroes the freed space or its own WAL: on a
server, erasure down to the disk blocks is the operator's (``VACUUM FULL``, encrypted storage);
see docs/memory.md, "Purge".
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.rows import TupleRow

from hivekeep.core.text import normalise_text, now_timestamp
from hivekeep.errors import ConflictError, NotFound
from hivekeep.store.base import (
    PERSON,
    AgentRecord,
    Change,
    MemoryRecord,
    MemoryVersion,
    NewMemory,
    ProfileRecord,
    ProfileVersion,
    TrashedMemory,
    Vector,
)
from hivekeep.store.postgres.vectors import vector_literal
from hivekeep.store.rows import (
    CREATOR_SQL,
    MEMORY_COLUMNS,
    PROFILE_VERSION_COLUMNS,
    STORED_COLUMNS,
    VERSION_COLUMNS,
    author_of,
    described,
    first_version,
    memory_from_row,
    profile_version_from_row,
    profile_version_values,
    version_from_row,
    version_values,
    with_current,
)
from hivekeep.store.vector_cache import subject_key
from hivekeep.types import Actor, Operation

Connection = psycopg.Connection[TupleRow]

_SNAPSHOT = "content, category, subject, importance, scope"
_TRASH_COLUMNS = f"{STORED_COLUMNS}, subject_key, embedding"
_TRASH_MARKS = ", ".join(["%s"] * 18)  # the values after the id of an imported trashed memory
# The state of a profile before its first recorded write (see SQLite's ``PROFILE_BEFORE``).
PROFILE_BEFORE = (
    "INSERT INTO profile_versions(" + PROFILE_VERSION_COLUMNS + ") "
    "SELECT agent_id, revision, text, tokens, updated_at, "
    "CASE WHEN revision = 0 OR manually_edited_at = updated_at THEN 'person' "
    "ELSE 'maintenance' END, "
    "CASE WHEN revision = 0 THEN 'create' WHEN manually_edited_at = updated_at THEN 'set' "
    "ELSE 'rewrite' END FROM profiles WHERE agent_id = %s ON CONFLICT DO NOTHING"
)


def latest_version(conn: Connection, memory_id: int) -> int:
    """The newest recorded version, recording version 1 (the memory as written) if none is."""
    row = conn.execute(
        "SELECT max(version) FROM memory_versions WHERE memory_id = %s", (memory_id,)
    ).fetchone()
    if row is not None and row[0] is not None:
        return int(row[0])
    conn.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, 1, {_SNAPSHOT}, "
        f"created_at, {CREATOR_SQL}, 'create' FROM memories WHERE id = %s",
        (memory_id,),
    )
    return 1


def record_version(
    conn: Connection, memory_id: int, previous: int, written: Change, limit: int
) -> None:
    """The memory's current state as version ``previous + 1``; versions past ``limit`` pruned."""
    version = previous + 1
    conn.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, %s, {_SNAPSHOT}, %s, %s, %s "
        "FROM memories WHERE id = %s",
        (version, now_timestamp(), written.by.value, written.operation.value, memory_id),
    )
    if version > limit:  # else nothing to prune: one statement saved per write
        conn.execute(
            "DELETE FROM memory_versions WHERE memory_id = %s AND version <= %s",
            (memory_id, version - limit),
        )


def record_profile(conn: Connection, agent_id: int, written: Change, limit: int) -> None:
    """After a profile write: its new revision as a version; old versions pruned."""
    conn.execute(
        f"INSERT INTO profile_versions({PROFILE_VERSION_COLUMNS}) "
        "SELECT agent_id, revision, text, tokens, updated_at, %s, %s FROM profiles "
        "WHERE agent_id = %s ON CONFLICT (agent_id, version) DO UPDATE SET text = excluded.text, "
        "tokens = excluded.tokens, changed_at = excluded.changed_at, "
        "changed_by = excluded.changed_by, operation = excluded.operation",
        (written.by.value, written.operation.value, agent_id),
    )
    conn.execute(
        "DELETE FROM profile_versions WHERE agent_id = %s AND version <= "
        "(SELECT revision FROM profiles WHERE agent_id = %s) - %s",
        (agent_id, agent_id, limit),
    )


def forget_agent_history(conn: Connection, agent_id: int) -> None:
    """``delete_agent`` (before its private memories go): their versions and its trashed private
    memories go; its trashed shared ones stay, owned by no agent."""
    conn.execute(
        "DELETE FROM memory_versions WHERE memory_id IN (SELECT id FROM memories "
        "WHERE agent_id = %(a)s AND scope = 'private' UNION ALL SELECT id FROM memory_trash "
        "WHERE agent_id = %(a)s AND scope = 'private')",
        {"a": agent_id},
    )
    conn.execute("DELETE FROM memory_trash WHERE agent_id = %s AND scope = 'private'", (agent_id,))
    conn.execute("UPDATE memory_trash SET agent_id = NULL WHERE agent_id = %s", (agent_id,))


class HistoryRows:
    history_limit: int

    def _transaction(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError  # provided by PostgresStore

    def _visible_memory(self, conn: Connection, memory_id: int, viewer_id: int) -> MemoryRecord:
        raise NotImplementedError  # provided by PostgresStore

    def _owned_memory(self, conn: Connection, memory_id: int, owner_id: int) -> MemoryRecord:
        raise NotImplementedError  # provided by PostgresStore

    def _profile_of(self, conn: Connection, agent_id: int) -> ProfileRecord:
        raise NotImplementedError  # provided by PostgresStore

    @staticmethod
    def _trashed(conn: Connection, memory_id: int, owner_id: int, *, lock: bool = False) -> Any:
        row = conn.execute(
            "SELECT agent_id, scope FROM memory_trash WHERE id = %s"
            + (" FOR UPDATE" if lock else ""),
            (memory_id,),
        ).fetchone()
        if row is None or not (row[0] == owner_id or (owner_id == PERSON and row[1] == "shared")):
            raise NotFound(f"No memory with id {memory_id} is in this agent's trash.")
        return row

    def memory_history(self, memory_id: int, viewer_id: int) -> list[MemoryVersion]:
        with self._transaction() as conn:
            try:
                live: MemoryRecord | None = self._visible_memory(conn, memory_id, viewer_id)
            except NotFound:
                live = None
                self._trashed(conn, memory_id, viewer_id)
            rows = conn.execute(
                f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = %s "
                "ORDER BY version DESC",
                (memory_id,),
            ).fetchall()
        if not rows and live is not None:
            return [first_version(live)]
        return [version_from_row(row) for row in rows]

    def delete_memory(self, memory_id: int, owner_id: int, *, by: Actor = Actor.AGENT) -> None:
        with self._transaction() as conn:
            conn.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (memory_id,))
            self._owned_memory(conn, memory_id, owner_id)
            latest = latest_version(conn, memory_id)
            record_version(
                conn, memory_id, latest, Change(by, Operation.FORGET), self.history_limit
            )
            conn.execute(
                f"INSERT INTO memory_trash({_TRASH_COLUMNS}, deleted_at, deleted_by) "
                f"SELECT {_TRASH_COLUMNS}, %s, %s FROM memories WHERE id = %s",
                (now_timestamp(), by.value, memory_id),
            )
            conn.execute("DELETE FROM memories WHERE id = %s", (memory_id,))

    def restore_memory(self, memory_id: int, owner_id: int, *, by: Actor) -> MemoryRecord:
        with self._transaction() as conn:
            self._trashed(conn, memory_id, owner_id, lock=True)
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
            latest = latest_version(conn, memory_id)
            record_version(
                conn, memory_id, latest, Change(by, Operation.RESTORE), self.history_limit
            )
            return self._visible_memory(conn, memory_id, owner_id)

    def list_trash(self, owner_id: int, limit: int, offset: int) -> tuple[list[TrashedMemory], int]:
        where = "scope = 'shared'" if owner_id == PERSON else "agent_id = %(owner)s"
        params = {"owner": owner_id, "limit": limit, "offset": offset}
        with self._transaction() as conn:
            total = conn.execute(f"SELECT count(*) FROM memory_trash WHERE {where}", params)
            count = total.fetchone()
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, deleted_at, deleted_by FROM memory_trash "
                f"WHERE {where} ORDER BY deleted_at DESC, id DESC "
                "LIMIT %(limit)s OFFSET %(offset)s",
                params,
            ).fetchall()
        trashed = [TrashedMemory(memory_from_row(r), r[16], Actor(r[17])) for r in rows]
        return trashed, int(count[0]) if count else 0

    @staticmethod
    def _erase(conn: Connection, ids: Sequence[int]) -> int:
        live = conn.execute("DELETE FROM memories WHERE id = ANY(%s) RETURNING id", (list(ids),))
        erased = {int(row[0]) for row in live.fetchall()}
        trashed = conn.execute(
            "DELETE FROM memory_trash WHERE id = ANY(%s) RETURNING id", (list(ids),)
        )
        erased |= {int(row[0]) for row in trashed.fetchall()}
        conn.execute("DELETE FROM memory_versions WHERE memory_id = ANY(%s)", (list(ids),))
        return len(erased)

    def purge_memory(self, memory_id: int) -> bool:
        with self._transaction() as conn:
            return bool(self._erase(conn, [memory_id]))

    def purge_trash(self, deleted_before: str) -> int:
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT id FROM memory_trash WHERE deleted_at < %s", (deleted_before,)
            ).fetchall()
            return self._erase(conn, [int(row[0]) for row in rows]) if rows else 0

    def profile_history(self, agent_id: int) -> list[ProfileVersion]:
        with self._transaction() as conn:
            current = self._profile_of(conn, agent_id)
            rows = conn.execute(
                f"SELECT {PROFILE_VERSION_COLUMNS} FROM profile_versions WHERE agent_id = %s "
                "ORDER BY version DESC",
                (agent_id,),
            ).fetchall()
        return with_current(current, [profile_version_from_row(row) for row in rows])

    # what an export with history carries, put back by an import -----------------------------
    def trash_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[TrashedMemory, npt.NDArray[np.float32] | None]]:
        author = "" if agent_id is None else " AND agent_id = %(agent)s"
        with self._transaction() as conn:
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, deleted_at, deleted_by, embedding::real[] "
                f"FROM memory_trash WHERE id > %(after)s{author} ORDER BY id LIMIT %(limit)s",
                {"after": after_id, "agent": agent_id, "limit": limit},
            ).fetchall()
        return [
            (
                TrashedMemory(memory_from_row(r), r[16], Actor(r[17])),
                None if r[18] is None else np.asarray(r[18], dtype=np.float32),
            )
            for r in rows
        ]

    def put_memory_versions(self, memory_id: int, versions: Sequence[MemoryVersion]) -> None:
        kept = sorted(versions, key=lambda v: v.version)[-self.history_limit :]
        with self._transaction() as conn:
            conn.execute("DELETE FROM memory_versions WHERE memory_id = %s", (memory_id,))
            for v in kept:
                conn.execute(
                    f"INSERT INTO memory_versions({VERSION_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (memory_id, *version_values(v)),
                )

    def put_trashed_memory(
        self, memory: NewMemory, vector: Vector | None, *, deleted_at: str, deleted_by: Actor
    ) -> int | None:
        owner = None if memory.agent_id == PERSON else memory.agent_id
        with self._transaction() as conn:

            def agent(key: int) -> AgentRecord:
                row = conn.execute(
                    "SELECT id, name, role, created_at, updated_at FROM agents WHERE id = %s",
                    (key,),
                ).fetchone()
                if row is None:
                    raise NotFound(f"No agent {key!r}.")
                return AgentRecord(*row)

            author = author_of(memory, {}, agent)
            known = conn.execute(
                "SELECT 1 FROM memory_trash WHERE agent_id IS NOT DISTINCT FROM %s "
                "AND author_name = %s AND content = %s AND deleted_at = %s",
                (owner, author, memory.content, deleted_at),
            ).fetchone()
            if known is not None:
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

    def put_profile_history(
        self, profile: ProfileRecord, versions: Sequence[ProfileVersion]
    ) -> ProfileRecord:
        kept = sorted(versions, key=lambda v: v.version)[-self.history_limit :]
        with self._transaction() as conn:
            written = conn.execute(
                "UPDATE profiles SET text = %s, tokens = %s, revision = %s, "
                "last_rewrite_at = %s, manually_edited_at = %s, "
                "updated_at = coalesce(%s, updated_at) WHERE agent_id = %s AND revision = 0 "
                "AND NOT EXISTS (SELECT 1 FROM profile_versions WHERE agent_id = %s)",
                (
                    profile.text,
                    profile.tokens,
                    profile.revision,
                    profile.last_rewrite_at,
                    profile.manually_edited_at,
                    profile.updated_at,
                    profile.agent_id,
                    profile.agent_id,
                ),
            )
            if written.rowcount == 0:
                raise ConflictError(
                    f"The profile of agent {profile.agent_id} has been written; an import puts "
                    "a history only into a profile never written."
                )
            for v in kept:
                conn.execute(
                    f"INSERT INTO profile_versions({PROFILE_VERSION_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (profile.agent_id, *profile_version_values(v)),
                )
            return self._profile_of(conn, profile.agent_id)
