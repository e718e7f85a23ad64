"""A tenant's first search loads its own vectors by id, whatever the hive holds (issue 35).

sqlite-vec answers ``memory_id IN (...)`` by reading its whole table, so a cache that loaded a
small tenant's vectors that way read every vector of the hive: 0.49 s for a tenant of 100 at a
million rows, on every first search of a tenant not in the cache (10,000 tenants measured). The
work is counted (bench/work.py), so the guard holds on a busy machine too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.work import counted
from hivekeep import Hive, Settings
from hivekeep.store.base import MemoryFilter
from tests.support import VectorTable

PER_TENANT = 20


def tenant_load_steps(path: Path, tenants: int) -> int:
    """SQLite steps of one tenant's first search in a freshly opened hive of ``tenants``."""
    with Hive(path, embedder=VectorTable(dimension=16), settings=Settings()) as hive:
        for t in range(tenants):
            hive.create_agent(f"tenant{t}").memorize_many(
                {"content": f"Tenant {t} keeps note number {n}.", "category": "fact"}
                for n in range(PER_TENANT)
            )
    with Hive(path, embedder=VectorTable(dimension=16), settings=Settings()) as hive:
        agent = hive.get_agent("tenant3")
        query = np.ones(16, dtype=np.float32)
        with counted(hive.store._conn) as work:  # type: ignore[attr-defined]
            hits = hive.store.vector_search(agent.id, query, 5, MemoryFilter())
        assert len(hits) == 5
        return work.steps


def test_a_tenants_first_search_reads_its_own_rows_not_the_hive(tmp_path: Path) -> None:
    small = tenant_load_steps(tmp_path / "small.db", 15)
    large = tenant_load_steps(tmp_path / "large.db", 60)
    assert large <= small * 1.2 + 200, (small, large)  # four times the hive, the same work
