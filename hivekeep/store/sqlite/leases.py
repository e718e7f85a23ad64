"""Leases on SQLite: a ``leases`` row per name, taken and renewed inside one write transaction
(the file's write lock decides between processes). Mixed into ``SQLiteStore``."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Any

import apsw

from hivekeep.errors import StoreError
from hivekeep.store.leases import holder_is_dead


class RowLeases:
    def atomic(self) -> AbstractContextManager[Any]:
        raise NotImplementedError  # provided by SQLiteStore

    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        now = time.time()
        try:
            with self.atomic() as conn:
                row = conn.execute(
                    "SELECT holder, expires_at FROM leases WHERE name = ?", (name,)
                ).fetchone()
                if (
                    row is not None
                    and row[0] != holder
                    and row[1] > now
                    and not holder_is_dead(row[0])
                ):
                    return str(row[0])
                conn.execute(
                    "INSERT OR REPLACE INTO leases(name, holder, expires_at) VALUES (?, ?, ?)",
                    (name, holder, now + ttl_seconds),
                )
        except apsw.BusyError as exc:  # another process held the write lock past the timeout
            raise StoreError(f"Lease {name!r}: the hive stayed busy ({exc}).") from exc
        return None

    def release_lease(self, name: str, holder: str) -> None:
        with self.atomic() as conn:
            conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
