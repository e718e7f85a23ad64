"""Memory versions, written once for both SQL stores: the first one recorded lazily (a memory never
changed has none stored), each change as the next one, the oldest pruned past the history limit."""

from __future__ import annotations

from hivekeep.core.text import now_timestamp
from hivekeep.store.base import Change
from hivekeep.store.rows import CREATOR_SQL, VERSION_COLUMNS
from hivekeep.store.sql.dialect import Session

_SNAPSHOT = "content, category, subject, importance, scope"


def latest_version(s: Session, memory_id: int) -> int:
    """The newest recorded version, recording version 1 (the memory as written) if none is.

    Call before changing the row: a memory never changed has no versions stored."""
    row = s.one("SELECT max(version) FROM memory_versions WHERE memory_id = ?", (memory_id,))
    if row is not None and row[0] is not None:
        return int(row[0])
    s.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, 1, {_SNAPSHOT}, "
        f"created_at, {CREATOR_SQL}, 'create' FROM memories WHERE id = ?",
        (memory_id,),
    )
    return 1


def record_version(s: Session, memory_id: int, previous: int, written: Change, limit: int) -> None:
    """The memory's current state as version ``previous + 1``; versions past ``limit`` pruned."""
    version = previous + 1
    s.execute(
        f"INSERT INTO memory_versions({VERSION_COLUMNS}) SELECT id, ?, {_SNAPSHOT}, ?, ?, ? "
        "FROM memories WHERE id = ?",
        (version, now_timestamp(), written.by.value, written.operation.value, memory_id),
    )
    if version > limit:  # else nothing to prune: one statement saved per write
        s.execute(
            "DELETE FROM memory_versions WHERE memory_id = ? AND version <= ?",
            (memory_id, version - limit),
        )


def record_change(s: Session, memory_id: int, written: Change, limit: int) -> None:
    """The memory's current state as its next version (a forget or a restore)."""
    record_version(s, memory_id, latest_version(s, memory_id), written, limit)
