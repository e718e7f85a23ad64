"""Running schema migrations, the same on both engines: named, ordered functions, each applied
together with its row in ``schema_migrations``, inside the caller's transaction (which also
holds the engine's lock: SQLite's write lock, PostgreSQL's advisory lock)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hivekeep.store.sql.dialect import Session

Migration = tuple[int, str, Callable[[Any], None]]  # number, name, apply(connection)


def apply_pending(s: Session, migrations: Sequence[Migration], version: int, now: str) -> None:
    """Apply the migrations numbered above ``version``, in order, recording each."""
    s.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for number, name, apply in migrations:
        if number > version:
            apply(s.conn)
            s.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (number, name, now),
            )
