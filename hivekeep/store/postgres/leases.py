"""Leases on PostgreSQL: an advisory lock held by a connection of its own, plus a row naming the
holder.

``pg_try_advisory_lock`` on a dedicated connection decides between processes: the lock lives as
long as that connection, so a holder that crashes (its connection closes) frees the lease at once,
on any host, without waiting for an expiry. The ``leases`` row records who holds it, for the
refusal message, and carries the expiry and dead-holder rules of the contract among the holders of
this one store (they share its lock connection): a lease past its expiry, or held by a process of
this host that no longer exists, is free to another holder of the same store.

A live holder in another process is never displaced by expiry: its open connection is proof that
it is alive (see docs/storage.md, "PostgreSQL").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psycopg
from psycopg.rows import TupleRow

from hivekeep.store.leases import holder_is_dead

Connection = psycopg.Connection[TupleRow]
_KEY = "hashtextextended(current_schema() || ':lease:' || %s, 0)"


@dataclass
class _Held:
    connection: Connection


class AdvisoryLeases:
    """The leases of one store; thread-safe."""

    def __init__(self, conninfo: str, connect_timeout: float) -> None:
        self._conninfo = conninfo
        self._connect_timeout = connect_timeout
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def acquire(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        with self._lock:
            held = self._held.get(name)
            if held is not None and held.connection.broken:
                self._drop(name)
                held = None
            if held is not None:
                current = self._row(held.connection, name)
                now = time.time()
                if (
                    current is not None
                    and current[0] != holder
                    and current[1] > now
                    and not holder_is_dead(current[0])
                ):
                    return current[0]
                self._record(held.connection, name, holder, ttl_seconds)
                return None
            conn = psycopg.connect(
                self._conninfo, autocommit=True, connect_timeout=int(self._connect_timeout)
            )
            try:
                row = conn.execute(f"SELECT pg_try_advisory_lock({_KEY})", (name,)).fetchone()
                if not (row and row[0]):
                    current = self._row(conn, name)
                    conn.close()
                    return current[0] if current else "another process (unrecorded)"
                self._record(conn, name, holder, ttl_seconds)
            except BaseException:
                conn.close()
                raise
            self._held[name] = _Held(conn)
            return None

    def release(self, name: str, holder: str) -> None:
        with self._lock:
            held = self._held.get(name)
            if held is None:
                return
            if held.connection.broken:
                self._drop(name)
                return
            current = self._row(held.connection, name)
            if current is not None and current[0] != holder:
                return
            held.connection.execute(
                "DELETE FROM leases WHERE name = %s AND holder = %s", (name, holder)
            )
            self._drop(name)

    def close(self) -> None:
        with self._lock:
            for name in list(self._held):
                self._drop(name)

    def _drop(self, name: str) -> None:
        """Close the lease's connection: the server frees its advisory lock."""
        held = self._held.pop(name)
        held.connection.close()

    @staticmethod
    def _row(conn: Connection, name: str) -> tuple[str, float] | None:
        row = conn.execute(
            "SELECT holder, expires_at FROM leases WHERE name = %s", (name,)
        ).fetchone()
        return (str(row[0]), float(row[1])) if row else None

    @staticmethod
    def _record(conn: Connection, name: str, holder: str, ttl_seconds: float) -> None:
        conn.execute(
            "INSERT INTO leases(name, holder, expires_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "expires_at = excluded.expires_at",
            (name, holder, time.time() + ttl_seconds),
        )
