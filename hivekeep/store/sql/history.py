"""Memory and profile versions, and reading the trash, written once for both SQL stores.

A mixin; the host gives ``_atomic()``, ``_reading()`` and ``history_limit``. What differs by engine
(moving a memory into and out of the trash with its vector, purging, importing a trashed memory
under an id of the memories' own sequence) stays in each engine's ``history.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hivekeep.errors import ConflictError, NotFound
from hivekeep.store.base import (
    PERSON,
    Change,
    MemoryRecord,
    MemoryVersion,
    NewMemory,
    ProfileRecord,
    ProfileVersion,
    TrashedMemory,
)
from hivekeep.store.rows import (
    MEMORY_COLUMNS,
    PROFILE_VERSION_COLUMNS,
    VERSION_COLUMNS,
    author_of,
    first_version,
    forgotten_version,
    profile_version_from_row,
    profile_version_values,
    trashed_from_row,
    version_from_row,
    version_values,
    with_current,
)
from hivekeep.store.sql import agents
from hivekeep.store.sql.dialect import Session, SqlRows
from hivekeep.store.sql.memories import visible
from hivekeep.types import Operation, Scope

# The state of a profile before its first recorded write (a new agent's empty profile, or one
# written before history existed: who wrote it is inferred from its stamps).
_PROFILE_BEFORE = (
    "INSERT INTO profile_versions(" + PROFILE_VERSION_COLUMNS + ") "
    "SELECT agent_id, revision, text, tokens, updated_at, "
    "CASE WHEN revision = 0 OR manually_edited_at = updated_at THEN 'person' "
    "ELSE 'maintenance' END, "
    "CASE WHEN revision = 0 THEN 'create' WHEN manually_edited_at = updated_at THEN 'set' "
    "ELSE 'rewrite' END FROM profiles WHERE agent_id = ?"
)


def version_visible(
    scope: Scope, author_id: int | None, writer_id: int | None, viewer_id: int
) -> bool:
    """Whether a viewer who can see a memory now may read one of its versions: one that was
    private when it was current only if the viewer could see it then, that is the agent whose
    write made it (``writer_id``; None: the memory's author, ``author_id``, None once that agent
    is deleted) or a person (``PERSON``, the admin path, sees every version). A shared version
    is readable by everyone who can see the memory now. Sharing a memory must not publish what it
    said while it was private (docs/guarantees.md)."""
    if viewer_id == PERSON or scope is Scope.SHARED:
        return True
    owner = author_id if writer_id is None else writer_id
    return owner is not None and owner == viewer_id


def in_trash(s: Session, memory_id: int, owner_id: int, *, lock: bool = False) -> None:
    """NotFound unless the memory is in the owner's trash (PERSON: a shared one)."""
    row = s.one(
        "SELECT agent_id, scope FROM memory_trash WHERE id = ?"
        + (s.dialect.FOR_UPDATE if lock else ""),
        (memory_id,),
    )
    if row is None or not (row[0] == owner_id or (owner_id == PERSON and row[1] == "shared")):
        raise NotFound(f"No memory with id {memory_id} is in this agent's trash.")


def _trashed(s: Session, memory_id: int) -> TrashedMemory:
    """A trashed memory whole (after ``in_trash`` found it the viewer's)."""
    row = s.one(
        f"SELECT {MEMORY_COLUMNS}, deleted_at, deleted_by FROM memory_trash WHERE id = ?",
        (memory_id,),
    )
    assert row is not None
    return trashed_from_row(row)


def trashed_author(s: Session, memory: NewMemory, owner: int | None, deleted_at: str) -> str | None:
    """An imported trashed memory's author name, or None when the trash holds it already (the
    same owner, author, content and deletion time: an import run twice adds nothing)."""
    author = author_of(memory, {}, lambda key: agents.agent(s, key))
    known = s.one(
        "SELECT 1 FROM memory_trash WHERE agent_id IS NOT DISTINCT FROM ? AND author_name = ? "
        "AND content = ? AND deleted_at = ?",
        (owner, author, memory.content, deleted_at),
    )
    return None if known is not None else author


class VersionRows(SqlRows):
    """Versions and the trash's listing; mixed into both SQL stores."""

    history_limit: int

    def memory_history(self, memory_id: int, viewer_id: int) -> list[MemoryVersion]:
        with self._atomic() as s:
            live: MemoryRecord | None = None
            trashed: TrashedMemory | None = None
            try:
                live = visible(s, memory_id, viewer_id)
            except NotFound:
                try:
                    in_trash(s, memory_id, viewer_id)
                except NotFound:  # neither live nor trashed, for this viewer
                    raise NotFound(
                        f"No memory with id {memory_id} is visible to this agent or in its trash."
                    ) from None
                trashed = _trashed(s, memory_id)
            rows = s.rows(
                f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? "
                "ORDER BY version DESC",
                (memory_id,),
            )
        versions = [version_from_row(row) for row in rows]
        if live is not None:
            author = live.agent_id
            versions = versions or [first_version(live)]
        else:
            assert trashed is not None
            author = trashed.memory.agent_id
            if not versions or versions[0].operation is not Operation.FORGET:
                newest = versions[0].version if versions else 0
                versions.insert(0, forgotten_version(trashed, newest + 1))
        return [v for v in versions if version_visible(v.scope, author, v.agent_id, viewer_id)]

    def list_trash(self, owner_id: int, limit: int, offset: int) -> tuple[list[TrashedMemory], int]:
        where = "scope = 'shared'" if owner_id == PERSON else "agent_id = :owner"
        params: dict[str, Any] = {"owner": owner_id, "limit": limit, "offset": offset}
        with self._atomic() as s:
            total = s.one(f"SELECT count(*) FROM memory_trash WHERE {where}", params)
            rows = s.rows(
                f"SELECT {MEMORY_COLUMNS}, deleted_at, deleted_by FROM memory_trash "
                f"WHERE {where} ORDER BY deleted_at DESC, id DESC LIMIT :limit OFFSET :offset",
                params,
            )
        trashed = [trashed_from_row(r) for r in rows]
        return trashed, int(total[0]) if total else 0

    def trash_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[TrashedMemory, npt.NDArray[np.float32] | None]]:
        author = "" if agent_id is None else " AND agent_id = :agent"
        with self._reading() as s:
            rows = s.rows(
                f"SELECT {MEMORY_COLUMNS}, deleted_at, deleted_by, {s.dialect.VECTOR_COLUMN} "
                f"FROM memory_trash WHERE id > :after{author} ORDER BY id LIMIT :limit",
                {"after": after_id, "agent": agent_id, "limit": limit},
            )
            return [
                (
                    trashed_from_row(r),
                    None if r[18] is None else s.dialect.vector_from(r[18]),
                )
                for r in rows
            ]

    def put_memory_versions(self, memory_id: int, versions: Sequence[MemoryVersion]) -> None:
        kept = sorted(versions, key=lambda v: v.version)[-self.history_limit :]
        with self._atomic() as s:
            s.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory_id,))
            for v in kept:
                s.execute(
                    f"INSERT INTO memory_versions({VERSION_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (memory_id, *version_values(v)),
                )

    def drop_memory_versions(self, memory_id: int, versions: Sequence[int]) -> int:
        with self._atomic() as s:
            return sum(
                len(
                    s.rows(
                        "DELETE FROM memory_versions WHERE memory_id = ? AND version = ? "
                        "RETURNING version",
                        (memory_id, version),
                    )
                )
                for version in versions
            )

    def drop_profile_versions(self, agent_id: int, versions: Sequence[int]) -> int:
        with self._atomic() as s:
            return sum(
                len(
                    s.rows(
                        "DELETE FROM profile_versions WHERE agent_id = ? AND version = ? AND "
                        "version <> (SELECT revision FROM profiles WHERE agent_id = ?) "
                        "RETURNING version",
                        (agent_id, version, agent_id),
                    )
                )
                for version in versions
            )

    # profiles ---------------------------------------------------------------------------------
    def _profile_before(self, s: Session, agent_id: int) -> None:
        """Before a profile write: its state recorded as a version, if it is not yet."""
        s.execute(s.dialect.insert_or_ignore(_PROFILE_BEFORE), (agent_id,))

    def _profile_after(self, s: Session, agent_id: int, written: Change) -> None:
        """After a profile write: its new revision as a version, old versions pruned."""
        s.execute(
            f"INSERT INTO profile_versions({PROFILE_VERSION_COLUMNS}) "
            "SELECT agent_id, revision, text, tokens, updated_at, ?, ? FROM profiles "
            "WHERE agent_id = ? ON CONFLICT (agent_id, version) DO UPDATE SET "
            "text = excluded.text, tokens = excluded.tokens, changed_at = excluded.changed_at, "
            "changed_by = excluded.changed_by, operation = excluded.operation",
            (written.by.value, written.operation.value, agent_id),
        )
        s.execute(
            "DELETE FROM profile_versions WHERE agent_id = ? AND version <= "
            "(SELECT revision FROM profiles WHERE agent_id = ?) - ?",
            (agent_id, agent_id, self.history_limit),
        )

    def profile_history(self, agent_id: int) -> list[ProfileVersion]:
        with self._atomic() as s:
            current = agents.profile(s, agent_id)
            rows = s.rows(
                f"SELECT {PROFILE_VERSION_COLUMNS} FROM profile_versions WHERE agent_id = ? "
                "ORDER BY version DESC",
                (agent_id,),
            )
        return with_current(current, [profile_version_from_row(row) for row in rows])

    def put_profile_history(
        self, profile: ProfileRecord, versions: Sequence[ProfileVersion]
    ) -> ProfileRecord:
        p = profile
        kept = sorted(versions, key=lambda v: v.version)[-self.history_limit :]
        with self._atomic() as s:
            written = s.one(
                "UPDATE profiles SET text = ?, tokens = ?, revision = ?, last_rewrite_at = ?, "
                "manually_edited_at = ?, updated_at = coalesce(?, updated_at) "
                "WHERE agent_id = ? AND revision = 0 AND NOT EXISTS "
                "(SELECT 1 FROM profile_versions WHERE agent_id = ?) RETURNING agent_id",
                (
                    p.text,
                    p.tokens,
                    p.revision,
                    p.last_rewrite_at,
                    p.manually_edited_at,
                    p.updated_at,
                    p.agent_id,
                    p.agent_id,
                ),
            )
            if written is None:
                raise ConflictError(
                    f"The profile of agent {p.agent_id} has been written; an import puts "
                    "a history only into a profile never written."
                )
            for v in kept:
                s.execute(
                    f"INSERT INTO profile_versions({PROFILE_VERSION_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (p.agent_id, *profile_version_values(v)),
                )
            return agents.profile(s, p.agent_id)
