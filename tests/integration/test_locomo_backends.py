"""LoCoMo recall on PostgreSQL stays within a bound of SQLite's (bench/locomo_postgres.py, small).

One conversation of the LoCoMo dev file, its first questions, ingested into a SQLite file and a
PostgreSQL schema with the real embedder: R@10 of ``agent.recall`` may differ by at most 0.03
(the full run's figures are in docs/benchmarks.md, "PostgreSQL"). The data lives outside the repo;
without it the test is skipped.
"""

from __future__ import annotations

import pytest

from bench.locomo_data import DEFAULT_PATH, load
from bench.locomo_postgres import compare
from hivekeep.providers.embeddings.local import LocalEmbedder

QUESTIONS = 80
BOUND = 0.03


@pytest.mark.skipif(
    not DEFAULT_PATH.exists(), reason=f"LoCoMo data not found at {DEFAULT_PATH} (not in the repo)"
)
def test_postgres_recall_at_10_is_within_bound_of_sqlite(local_embedder: LocalEmbedder) -> None:
    conversation = load(DEFAULT_PATH)[0]
    found = compare([conversation], local_embedder, QUESTIONS)
    sqlite, postgres = found["sqlite"][0], found["postgresql"][0]
    assert sqlite.overall(10) > 0.3  # a real measurement, not two empty results
    assert abs(postgres.overall(10) - sqlite.overall(10)) <= BOUND, (
        sqlite.overall(10),
        postgres.overall(10),
    )
