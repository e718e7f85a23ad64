"""agent.memorize_many: the documented batch write used by imports and benchmarks."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivekeep import Hive, ValidationError
from hivekeep.types import EmbeddingState
from tests.support import VectorTable


def test_bulk_write_keeps_order_dates_and_dedups_within_the_batch(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    results = agent.memorize_many(
        [
            {
                "content": "Met Ana at the climbing gym",
                "category": "fact",
                "created_at": "2023-05-08T13:56:00",
            },
            {"content": "met ana at the climbing gym.", "category": "fact"},
            {
                "content": "Ana recommended a new route",
                "category": "fact",
                "created_at": "2023-05-09",
            },
        ]
    )
    assert [r.duplicate for r in results] == [False, True, False]
    assert results[1].memory.id == results[0].memory.id
    assert results[0].memory.created_at == "2023-05-08T13:56:00.000000Z"
    assert results[2].memory.created_at == "2023-05-09T00:00:00.000000Z"
    since = agent.call_tool("recall", {"query": "Ana", "since": "2023-05-09"})
    assert [m["content"] for m in since["memories"]] == ["Ana recommended a new route"]


def test_one_bad_item_means_nothing_is_written(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    with pytest.raises(ValidationError, match="created_at"):
        agent.memorize_many(
            [
                {"content": "fine", "category": "fact"},
                {"content": "bad date", "category": "fact", "created_at": "someday"},
            ]
        )
    with pytest.raises(ValidationError, match="category"):
        agent.memorize_many([{"content": "fine", "category": "fact"}, {"content": "no category"}])
    assert agent.list_memories().total == 0


def test_embedder_outage_stores_the_batch_as_pending(db_path: Path, table: VectorTable) -> None:
    with Hive(db_path, embedder=table) as hive:
        agent = hive.create_agent("alice")
        table.fail = True
        results = agent.memorize_many(
            [{"content": f"offline note {i}", "category": "fact"} for i in range(3)]
        )
        assert all(r.memory.embedding_state is EmbeddingState.PENDING for r in results)
        assert len(agent.recall("offline note").hits) == 3


def test_reading_every_memory_with_its_vector_in_one_page(table_hive: Hive) -> None:
    """An export page or a benchmark may ask for 100k rows at once: every vector comes (an
    ``IN (...)`` list of them all raised "too many SQL variables" at 100k)."""
    agent = table_hive.create_agent("bulk")
    count = 1007
    agent.memorize_many(
        [{"content": f"Distinct note {n} {n * n}", "category": "fact"} for n in range(count)]
    )
    rows = table_hive.store.memories_with_vectors(agent.id, limit=100_000)
    assert len(rows) == count and all(vector is not None for _, vector in rows)
