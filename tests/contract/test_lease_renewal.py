"""Leases are renewed while their work runs (``LeaseKeeper``), on every backend.

With a short TTL: a second process cannot take a lease whose holder keeps working for several
TTLs, and the lease of a holder that died is free again within one TTL.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hivekeep.errors import StoreError
from hivekeep.store.base import Store
from hivekeep.store.leases import (
    RENEWALS_PER_TTL,
    AgentBusy,
    AgentLease,
    LeaseKeeper,
    lease_name,
    new_holder,
)
from hivekeep.store.postgres import PostgresStore
from hivekeep.store.sqlite import SQLiteStore

TTL = 2.0  # seconds; renewed every TTL / RENEWALS_PER_TTL

# The holder, in a process of its own: takes the lease, says who holds it, then "works" (sleeps)
# until it is killed. Its holder name is of another host, so that nobody can see it die: only
# the missing renewals free its lease.
HOLDER = """
import sys, time
from hivekeep.store.leases import LeaseKeeper

target, name, ttl = sys.argv[1], sys.argv[2], float(sys.argv[3])
if target.startswith("postgresql://"):
    from hivekeep.store.postgres import PostgresStore as Opened
else:
    from hivekeep.store.sqlite import SQLiteStore as Opened
store = Opened(target)
keeper = LeaseKeeper(store, name, "elsewhere.example:1:0123456789ab", ttl)
assert keeper.acquire() is None
print(keeper.holder, flush=True)
time.sleep(600)
"""


def _target(store: Store) -> str:
    if isinstance(store, SQLiteStore):
        return store.path
    assert isinstance(store, PostgresStore)
    return store.url


@pytest.fixture
def backend(store: Store, request: pytest.FixtureRequest) -> Store:
    if "nocache" in request.node.callspec.id:
        pytest.skip("leases do not touch the vector cache")
    return store


@pytest.mark.slow
def test_a_working_holder_keeps_its_lease_and_a_dead_ones_expires(backend: Store) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, _target(backend), "agent:1:memory", str(TTL)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        name = holder.stdout.readline().strip()
        if not name:
            holder.kill()
            pytest.fail(f"the holder process failed:\n{holder.communicate()[1]}")
        taker = new_holder()
        working_until = time.monotonic() + 3 * TTL  # three TTLs: unrenewed, it would be free
        while time.monotonic() < working_until:
            assert backend.acquire_lease("agent:1:memory", taker, 60) == name
            time.sleep(TTL / 10)
        holder.kill()
        holder.wait()
        died = time.monotonic()
        while backend.acquire_lease("agent:1:memory", taker, 60) is not None:
            assert time.monotonic() - died < TTL + 2, "a dead holder's lease did not expire"
            time.sleep(0.05)
    finally:
        holder.kill()
        holder.communicate()


def test_agent_lease_is_renewed_past_its_ttl(backend: Store) -> None:
    agent_id = backend.create_agent("alice", "").id
    ttl = 0.6
    with AgentLease(backend, agent_id, ttl_seconds=ttl) as lease:
        time.sleep(3 * ttl)  # the work runs past the TTL
        assert lease.keeper.renewals >= 2
        with pytest.raises(AgentBusy), AgentLease(backend, agent_id, ttl_seconds=ttl):
            pass  # still held: a second run is refused
        assert backend.acquire_lease(lease_name(agent_id), new_holder(), 60) == lease.holder
        assert lease.keeper.lost is None
    # released on exit, and no renewal comes back after it
    time.sleep(ttl / RENEWALS_PER_TTL * 2)
    assert backend.acquire_lease(lease_name(agent_id), new_holder(), 60) is None


class _Flaky:
    """The store's lease methods, with acquiring made to fail while ``down``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.down = False

    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        if self.down:
            raise StoreError("the hive is unreachable")
        return self.store.acquire_lease(name, holder, ttl_seconds)

    def release_lease(self, name: str, holder: str) -> None:
        self.store.release_lease(name, holder)


def test_a_renewal_that_finds_another_holder_stops_and_says_so(backend: Store) -> None:
    flaky = _Flaky(backend)
    keeper = LeaseKeeper(flaky, "lease", "elsewhere.example:1:aaaaaaaaaaaa", 0.3)
    assert keeper.acquire() is None
    flaky.down = True  # renewals fail (logged, retried) until the lease expires
    time.sleep(0.5)
    thief = new_holder()
    assert backend.acquire_lease("lease", thief, 60) is None
    flaky.down = False
    deadline = time.monotonic() + 5
    while keeper.lost is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert keeper.lost == thief
    keeper.release()  # gives back nothing: the lease is the thief's now
    assert backend.acquire_lease("lease", new_holder(), 60) == thief
