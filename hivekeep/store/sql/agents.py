"""Agents, profiles and the embedding space, written once for both SQL stores.

A mixin; the host gives ``_dialect``, ``_atomic()`` and ``_reading()`` (sessions, see
``dialect.py``) and two history hooks around a profile write, which differ by engine.
"""

from __future__ import annotations

from hivekeep.core.text import now_timestamp
from hivekeep.errors import AgentNotFound, ConflictError, NotFound, StoreError
from hivekeep.store.base import (
    BY_AGENT,
    AgentFootprint,
    AgentRecord,
    Change,
    EmbeddingSpace,
    ProfileChange,
    ProfileRecord,
)
from hivekeep.store.sql.dialect import Session, SqlRows

AGENT_COLUMNS = "id, name, role, created_at, updated_at"
PROFILE_COLUMNS = (
    "agent_id, text, tokens, revision, last_rewrite_at, manually_edited_at, updated_at"
)


def agent(s: Session, key: int | str, *, lock: bool = False) -> AgentRecord:
    where = "id = ?" if isinstance(key, int) else s.dialect.AGENT_NAME
    sql = f"SELECT {AGENT_COLUMNS} FROM agents WHERE {where}"
    return AgentRecord(*s.found(sql, (key,), AgentNotFound(f"No agent {key!r}."), lock=lock))


def footprint(s: Session, agent_id: int) -> AgentFootprint:
    agent(s, agent_id)
    row = s.one(
        "SELECT (SELECT count(*) FROM memories WHERE agent_id = :a AND scope = 'private'), "
        "(SELECT count(*) FROM memories WHERE agent_id = :a AND scope = 'shared'), "
        "(SELECT count(*) FROM conversations WHERE agent_id = :a)",
        {"a": agent_id},
    )
    assert row is not None
    return AgentFootprint(int(row[0]), int(row[1]), int(row[2]))


def space(s: Session) -> EmbeddingSpace | None:
    rows = dict(
        s.rows("SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dim')")
    )
    if "embedding_model" not in rows:
        return None
    return EmbeddingSpace(str(rows["embedding_model"]), int(rows["embedding_dim"]))


def profile(s: Session, agent_id: int, *, lock: bool = False) -> ProfileRecord:
    sql = f"SELECT {PROFILE_COLUMNS} FROM profiles WHERE agent_id = ?"
    missing = NotFound(f"No agent with id {agent_id}.")
    return ProfileRecord(*s.found(sql, (agent_id,), missing, lock=lock))


def _taken(name: str) -> ConflictError:
    return ConflictError(f"An agent named {name!r} already exists; choose another name.")


class AgentRows(SqlRows):
    """``AgentStore`` and the profile part of ``ProfileStore``; mixed into both SQL stores."""

    def _profile_before(self, s: Session, agent_id: int) -> None:
        """Before a profile write: its current state recorded as a version if it is not."""
        raise NotImplementedError  # provided by the store's history

    def _profile_after(self, s: Session, agent_id: int, written: Change) -> None:
        """After a profile write: the new revision recorded, old versions pruned."""
        raise NotImplementedError  # provided by the store's history

    def _forget_agent(self, s: Session, agent_id: int) -> None:
        """Before an agent's private memories go: their vectors and versions, and its trashed
        private memories (its trashed shared ones stay, owned by no agent)."""
        raise NotImplementedError  # provided by the store

    def _reset_vectors(self, s: Session, space: EmbeddingSpace) -> None:
        """Every vector dropped, the vector arm made ready for ``space``'s dimension."""
        raise NotImplementedError  # provided by the store

    # agents -----------------------------------------------------------------------------------
    def create_agent(self, name: str, role: str) -> AgentRecord:
        now = now_timestamp()
        try:
            with self._atomic() as s:
                row = s.one(
                    "INSERT INTO agents(name, role, created_at, updated_at) VALUES (?, ?, ?, ?) "
                    "RETURNING id",
                    (name, role, now, now),
                )
                assert row is not None
                s.execute(
                    "INSERT INTO profiles(agent_id, created_at, updated_at) VALUES (?, ?, ?)",
                    (row[0], now, now),
                )
        except self._dialect.UNIQUE_VIOLATION as exc:
            raise _taken(name) from exc
        return AgentRecord(int(row[0]), name, role, now, now)

    def get_agent(self, key: int | str) -> AgentRecord:
        with self._reading() as s:
            return agent(s, key)

    def list_agents(self) -> list[AgentRecord]:
        with self._reading() as s:
            rows = s.rows(f"SELECT {AGENT_COLUMNS} FROM agents ORDER BY id")
        return [AgentRecord(*row) for row in rows]

    def update_agent(
        self, agent_id: int, *, name: str | None = None, role: str | None = None
    ) -> AgentRecord:
        now = now_timestamp()
        try:
            with self._atomic() as s:
                current = agent(s, agent_id, lock=True)
                name = current.name if name is None else name
                role = current.role if role is None else role
                s.execute(
                    "UPDATE agents SET name = ?, role = ?, updated_at = ? WHERE id = ?",
                    (name, role, now, agent_id),
                )
                if name != current.name:
                    s.execute(
                        "UPDATE memories SET author_name = ? WHERE agent_id = ?", (name, agent_id)
                    )
        except self._dialect.UNIQUE_VIOLATION as exc:
            raise _taken(str(name)) from exc
        return AgentRecord(agent_id, name, role, current.created_at, now)

    def agent_footprint(self, agent_id: int) -> AgentFootprint:
        with self._reading() as s:
            return footprint(s, agent_id)

    def delete_agent(self, agent_id: int) -> AgentFootprint:
        with self._atomic() as s:
            agent(s, agent_id, lock=True)
            found = footprint(s, agent_id)
            self._forget_agent(s, agent_id)
            s.execute(  # SQLite's full-text rows go by trigger
                "DELETE FROM memories WHERE agent_id = ? AND scope = 'private'", (agent_id,)
            )
            # Shared memories stay, owned by no agent (agent_id NULL; author_name keeps the
            # name). The profile, settings and conversations go by ON DELETE CASCADE.
            s.execute("UPDATE memories SET agent_id = NULL WHERE agent_id = ?", (agent_id,))
            s.execute("DELETE FROM agents WHERE id = ?", (agent_id,))
        return found

    # embedding space --------------------------------------------------------------------------
    def embedding_space(self) -> EmbeddingSpace | None:
        with self._reading() as s:
            return space(s)

    def reset_embedding_space(self, space: EmbeddingSpace) -> int:
        if space.dimension < 1:
            raise StoreError(f"Embedding dimension {space.dimension} is not positive.")
        with self._atomic() as s:
            self._reset_vectors(s, space)
            for key, value in (
                ("embedding_model", space.model),
                ("embedding_dim", str(space.dimension)),
            ):
                s.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
            cursor = s.execute(
                "UPDATE memories SET embedding_state = 'pending', embedding_model = NULL"
            )
            changed = s.dialect.changed(s.conn, cursor)
            s.execute(
                "UPDATE memory_trash SET embedding = NULL, embedding_state = 'pending', "
                "embedding_model = NULL"
            )
            return changed

    # profiles ---------------------------------------------------------------------------------
    def get_profile(self, agent_id: int) -> ProfileRecord:
        with self._reading() as s:
            return profile(s, agent_id)

    def modify_profile(
        self, agent_id: int, change: ProfileChange, *, manual: bool, written: Change = BY_AGENT
    ) -> ProfileRecord:
        with self._atomic() as s:  # the profile's row locked (SQLite: the write lock) first
            current = profile(s, agent_id, lock=True)
            text, tokens = change(current)
            if text == current.text:
                return current
            return self._write_profile(s, agent_id, text, tokens, current.revision, manual, written)

    def save_profile(
        self,
        agent_id: int,
        text: str,
        tokens: int,
        *,
        expected_revision: int,
        manual: bool,
        written: Change = BY_AGENT,
    ) -> ProfileRecord:
        with self._atomic() as s:
            return self._write_profile(
                s, agent_id, text, tokens, expected_revision, manual, written
            )

    def _write_profile(
        self,
        s: Session,
        agent_id: int,
        text: str,
        tokens: int,
        expected_revision: int,
        manual: bool,
        written: Change,
    ) -> ProfileRecord:
        now = now_timestamp()
        stamp = "manually_edited_at" if manual else "last_rewrite_at"
        self._profile_before(s, agent_id)
        row = s.one(
            f"UPDATE profiles SET text = ?, tokens = ?, revision = revision + 1, {stamp} = ?, "
            "updated_at = ? WHERE agent_id = ? AND revision = ? RETURNING agent_id",
            (text, tokens, now, now, agent_id, expected_revision),
        )
        if row is None:
            current = profile(s, agent_id)
            raise ConflictError(
                f"The profile changed since it was read (revision {expected_revision}, now "
                f"{current.revision}). Re-read it and apply the edit again."
            )
        self._profile_after(s, agent_id, written)
        return profile(s, agent_id)
