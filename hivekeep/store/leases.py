"""Leases: who holds a lock, whether that process still exists, and keeping a lease alive.

A holder name is ``host:pid:token``. A lease whose holder lives on this host under a pid that no
longer exists was left by a crash and is free at once, instead of blocking compaction until its
expiry; a holder on another host is trusted until the lease expires.

A lease has a TTL so that a holder that vanished without a trace frees it by expiry. Work under a
lease (an LLM call can be slow) may run longer than that, so ``LeaseKeeper`` renews it while the
work runs; see its docstring. ``AgentLease`` is the one lease the services take: per agent, held by
a compaction, a bootstrap or a regenerate, so that two of them never rewrite one agent's memory at
once (in this process or another).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import Protocol

from hivekeep.errors import ConflictError, HivekeepError

log = logging.getLogger(__name__)

RENEWALS_PER_TTL = 3  # a lease is renewed this often per TTL: two renewals may fail in a row
LEASE_TTL_SECONDS = 900.0  # a crashed holder on this host is detected at once; elsewhere: expiry


def new_holder() -> str:
    """A holder name unique to this call, in this process, on this host."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def holder_is_dead(holder: str) -> bool:
    """True only when the holder is certainly gone: same host, and its pid does not exist."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by another user
        return False
    return False


class Leases(Protocol):
    """The part of the store a ``LeaseKeeper`` uses (``ConversationStore``'s lease methods)."""

    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None: ...

    def release_lease(self, name: str, holder: str) -> None: ...


class LeaseKeeper:
    """Takes a lease and keeps it while the work runs: a daemon thread renews it.

    Renewing is acquiring again under the same holder, which pushes the expiry one TTL on; it
    happens every ``ttl / RENEWALS_PER_TTL`` seconds, so a live holder's lease never expires
    however long the work runs, and a holder that dies stops renewing, so its lease is free one
    TTL later at most (at once when the death can be seen: same host, or on PostgreSQL the lock's
    closed connection). The work itself needs no safe points: the renewals run beside it.

    A renewal that fails (the store busy or unreachable) is logged and retried at the next tick;
    one that finds another holder (every renewal failed for a whole TTL, and someone took the
    expired lease) stops renewing and sets ``lost`` to that holder, logged as a warning.
    ``release`` waits for a renewal in flight, so none can land after it: do not call it while
    this thread holds the store inside ``Store.transaction()``.

    >>> keeper = LeaseKeeper(store, "agent:1:memory", new_holder(), 900)   # doctest: +SKIP
    >>> if keeper.acquire() is None:                                      # doctest: +SKIP
    ...     try: work()
    ...     finally: keeper.release()
    """

    def __init__(self, store: Leases, name: str, holder: str, ttl_seconds: float) -> None:
        self.store = store
        self.name = name
        self.holder = holder
        self.ttl_seconds = ttl_seconds
        self.renewals = 0
        self.lost: str | None = None  # the holder that took the lease from us, if one did
        self._stop = threading.Event()
        self._mutex = threading.Lock()  # one renewal or the release at a time
        self._thread: threading.Thread | None = None

    def acquire(self) -> str | None:
        """Take the lease and start renewing it: None, or the holder of a live lease."""
        other = self.store.acquire_lease(self.name, self.holder, self.ttl_seconds)
        if other is None:
            self._thread = threading.Thread(
                target=self._renew, name=f"hivekeep-lease-{self.name}", daemon=True
            )
            self._thread.start()
        return other

    def release(self) -> None:
        """Stop renewing and give the lease back (only if we still hold it)."""
        self._stop.set()
        with self._mutex:
            self.store.release_lease(self.name, self.holder)
        if self._thread is not None:
            self._thread.join()

    def _renew(self) -> None:
        interval = self.ttl_seconds / RENEWALS_PER_TTL
        while not self._stop.wait(interval):
            with self._mutex:
                if self._stop.is_set():
                    return
                try:
                    other = self.store.acquire_lease(self.name, self.holder, self.ttl_seconds)
                except HivekeepError as exc:
                    log.warning("Lease %s not renewed (retrying): %s", self.name, exc)
                    continue
                if other is not None:
                    self.lost = other
                    log.warning("Lease %s was lost to %s while its work ran", self.name, other)
                    return
                self.renewals += 1


def lease_name(agent_id: int) -> str:
    """One lease per agent: compaction, bootstrap and regenerate all take it."""
    return f"agent:{agent_id}:memory"


class AgentBusy(ConflictError):
    """Another compaction, bootstrap or regenerate of this agent is running (maybe elsewhere)."""


class AgentLease:
    """Context manager over the per-agent lease; raises AgentBusy when someone else holds it.

    The lease is renewed in the background while the block runs (``LeaseKeeper``), so a run
    longer than ``ttl_seconds`` keeps it, and one whose process died frees it within a TTL.
    """

    def __init__(
        self, store: Leases, agent_id: int, *, ttl_seconds: float = LEASE_TTL_SECONDS
    ) -> None:
        self.store = store
        self.name = lease_name(agent_id)
        self.holder = new_holder()
        self.keeper = LeaseKeeper(store, self.name, self.holder, ttl_seconds)

    def __enter__(self) -> AgentLease:
        other = self.keeper.acquire()
        if other is not None:
            raise AgentBusy(
                "A compaction, bootstrap or regenerate of this agent is already running "
                f"(held by {other}); try again when it has finished."
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self.keeper.release()
