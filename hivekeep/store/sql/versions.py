"""Memory versions, written once for both SQL stores: the first one recorded lazily (a memory never
changed has none stored), each change as the next one, the oldest pruned past the history limit.

A version's ``agent_id`` is the agent whose write made it: the memory's owner for its own,
maintenance and import changes, NULL for a person's; for a ``merge``, the agent whose duplicate
write it keeps (NULL for a deleted author's import)."""

from __future__ import annotations

from hivekeep.core.text import now_timestamp
from hivekeep.store.base import PERSON, Change, NewMemory
from hivekeep.store.rows import CREATOR_SQL, VERSION_COLUMNS, writer
from hivekeep.store.sql.dialect import Session
from hivekeep.types import Operation

_SNAPSHOT = "content, category, subject, importance, scope"


def latest_version(s: Session, memory_id: int) -> int:
    """The newest recorded version, recording version 1 (the memory as written) if none is.

    Call before changing the row: a memory never changed has no versions stored."""
    row = s.one("SELECT max(version) FROM memory_versions WHERE memory_id = ?", (memory_id,))
    if row is not None and row[0] is not None:
        return int(row[0])
    s.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, 1, {_SNAPSHOT}, "
        f"created_at, {CREATOR_SQL}, 'create', agent_id FROM memories WHERE id = ?",
        (memory_id,),
    )
    return 1


def record_version(s: Session, memory_id: int, previous: int, written: Change, limit: int) -> None:
    """The memory's current state as version ``previous + 1``; versions past ``limit`` pruned."""
    version = previous + 1
    s.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, ?, {_SNAPSHOT}, ?, ?, ?, "
        "CASE WHEN ? = 'person' THEN NULL ELSE agent_id END FROM memories WHERE id = ?",
        (
            version,
            now_timestamp(),
            written.by.value,
            written.operation.value,
            written.by.value,
            memory_id,
        ),
    )
    _prune(s, memory_id, version, limit)


def record_change(s: Session, memory_id: int, written: Change, limit: int) -> None:
    """The memory's current state as its next version (a forget or a restore)."""
    record_version(s, memory_id, latest_version(s, memory_id), written, limit)


def record_merge(s: Session, memory_id: int, carried: NewMemory, limit: int) -> int | None:
    """Keep a write judged a duplicate of memory ``memory_id`` as its next version (``merge``:
    the write's text and fields, who and when; the memory itself is unchanged). Returns that
    version, or None when the write was the memory's current state already (nothing to keep).

    A write that repeats the newest version, a merge by the same writer, adds nothing and gets
    that version back: a loop memorizing one text does not churn the history."""
    state = (
        carried.content,
        carried.category.value,
        carried.subject,
        carried.importance,
        carried.scope.value,
    )
    current = s.one(
        f"SELECT {_SNAPSHOT} FROM memories WHERE id = ?{s.dialect.FOR_UPDATE}", (memory_id,)
    )
    if current is None or tuple(current) == state:
        return None
    latest = latest_version(s, memory_id)
    by = writer(carried.source).value
    agent = None if carried.agent_id == PERSON else carried.agent_id
    newest = s.one(
        f"SELECT {_SNAPSHOT}, changed_by, operation, agent_id FROM memory_versions "
        "WHERE memory_id = ? AND version = ?",
        (memory_id, latest),
    )
    if newest is not None and tuple(newest) == (*state, by, Operation.MERGE.value, agent):
        return latest
    version = latest + 1
    s.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, version, *state, now_timestamp(), by, Operation.MERGE.value, agent),
    )
    _prune(s, memory_id, version, limit)
    return version


def _prune(s: Session, memory_id: int, version: int, limit: int) -> None:
    """Versions past ``limit`` (the oldest) go."""
    if version > limit:  # else nothing to prune: one statement saved per write
        s.execute(
            "DELETE FROM memory_versions WHERE memory_id = ? AND version <= ?",
            (memory_id, version - limit),
        )
