"""Recall's work on PostgreSQL at a fixed size, counted, so that more round trips or a full-text
arm that reads the whole hive again fail a test on a busy machine too (issue 35, step 5).

Two counts, both independent of the machine's load: the statements and round trips one recall
sends (a pipeline sends several in one; explicit transactions would add BEGIN and COMMIT), and
the rows the full-text arm's statements read from ``memories`` (``EXPLAIN (ANALYZE)`` of each,
replayed as sent). The any-term fill once chose a sequential scan when its matches were a large
share of the hive and tested every row (20,000 rows at 20k for four frequent words: 24 ms); it
now reads only its matches through the GIN index. The hives hold 2,000 memories, held by one
agent and by ten.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from hivekeep import Agent, Hive
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import MemoryFilter
from tests.integration.test_recall_work import POOL, SIZE, built, frequent_queries, rare_queries
from tests.postgres import hive_target

# One recall: the AND with the common-terms check (two statements, one round trip), the
# any-term fill, the vector search moved toward the top text hits in its own statement
# (reporting similarity to the query as asked), the hits with their newer near-twins (two
# statements, one round trip), the retrieval count. Each is an autocommit statement: no BEGIN
# or COMMIT. (Before issue 35's step 5: ten statements in ten round trips, and two more for
# BEGIN and COMMIT.)
RECALL_STATEMENTS = 7
RECALL_ROUND_TRIPS = 5


@pytest.fixture(scope="module")
def hives() -> Iterator[dict[int, tuple[Hive, Agent]]]:
    """The same 2,000 memories held by one agent, and by ten agents (a tenth each)."""
    with hive_target("postgres") as one, hive_target("postgres") as ten:
        found = {1: built(one, 1), 10: built(ten, 10)}  # type: ignore[arg-type]
        for opened, _ in found.values():
            with opened.store._connection() as conn:  # type: ignore[attr-defined]
                conn.execute("ANALYZE memories")  # statistics current, as after a bulk insert
            # recall as with the bundled model: lexical feedback on (the test embedder's is off)
            opened._services.recall.defaults = LocalEmbedder.recall_defaults
        try:
            yield found
        finally:
            for opened, _ in found.values():
                opened.close()


@contextmanager
def sent() -> Iterator[list[tuple[Any, Any, bool]]]:
    """Every statement psycopg sends meanwhile from this thread, as (query, params, sent with
    the one before: the later statements of a pipeline); a transaction block opened is
    recorded as ("BEGIN", None, False). (The event relay's thread sends the build's events
    meanwhile: not recall's work.)"""
    seen: list[tuple[Any, Any, bool]] = []
    execute, transaction = psycopg.Cursor.execute, psycopg.Connection.transaction
    pipeline = psycopg.Connection.pipeline
    caller = threading.get_ident()
    piped = [0]  # statements sent in the open pipeline

    def counted(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        if threading.get_ident() == caller:
            seen.append((query, params, piped[0] > 0))
            piped[0] += 1 if self.connection._pipeline else 0
        return execute(self, query, params, **options)

    def opened(self: Any, *args: Any, **options: Any) -> Any:
        if threading.get_ident() == caller:
            seen.append(("BEGIN", None, False))
        return transaction(self, *args, **options)

    @contextmanager
    def batched(self: Any) -> Iterator[Any]:
        with pipeline(self) as held:
            try:
                yield held
            finally:
                piped[0] = 0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", counted)
        patch.setattr(psycopg.Connection, "transaction", opened)
        patch.setattr(psycopg.Connection, "pipeline", batched)
        yield seen


def rows_read(hive: Hive, statements: list[tuple[Any, Any, bool]]) -> int:
    """Rows the SELECTs among ``statements`` read from ``memories``, replayed under EXPLAIN
    ANALYZE: rows each scan of the table returned, plus those its filter removed."""
    total = 0
    with hive.store._connection() as conn:  # type: ignore[attr-defined]
        for query, params, _ in statements:
            text = query if isinstance(query, str) else query.as_string(conn)
            if not text.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            [(plan,)] = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + text, params, prepare=False
            ).fetchall()
            total += _scanned(plan[0]["Plan"])
    return total


def _scanned(node: dict[str, Any]) -> int:
    own = 0
    if node.get("Relation Name") == "memories":
        loops = node.get("Actual Loops", 1)
        own = round(node.get("Actual Rows", 0) * loops) + node.get("Rows Removed by Filter", 0)
    return own + sum(_scanned(child) for child in node.get("Plans", []))


@pytest.mark.parametrize("agents", [1, 10])
def test_a_recall_sends_seven_statements_in_five_round_trips_and_no_transaction(
    hives: dict[int, tuple[Hive, Agent]], agents: int
) -> None:
    _, agent = hives[agents]
    for query in frequent_queries()[:3] + rare_queries()[:3]:
        with sent() as statements:
            agent.recall(query)
        shown = [str(q)[:60] for q, _, _ in statements]
        assert ("BEGIN", None, False) not in statements, shown
        assert len(statements) <= RECALL_STATEMENTS, shown
        assert sum(not piped for _, _, piped in statements) <= RECALL_ROUND_TRIPS, shown


@pytest.mark.parametrize("agents", [1, 10])
def test_the_any_term_fill_reads_only_its_matches(
    hives: dict[int, tuple[Hive, Agent]], agents: int
) -> None:
    """Four frequent words (each in about 12 % of the rows, none common at the shipped
    ``COMMON_ROWS``) match about 40 % of the hive: the fill reads those rows, not all 2,000."""
    opened, agent = hives[agents]
    arm = opened._services.recall.text_arm
    for query in frequent_queries()[:4]:
        with sent() as statements:
            arm(agent.id, query, POOL, MemoryFilter())
        words = query.rstrip("?").split()[-4:]
        with opened.store._connection() as conn:  # type: ignore[attr-defined]
            [(matches,)] = conn.execute(
                "SELECT count(*) FROM memories WHERE fts @@ ("
                + " || ".join(["hivekeep_prefix_query(%s)"] * len(words))
                + ")",
                words,
            ).fetchall()
        assert 0 < matches < SIZE * 0.6, matches
        read = rows_read(opened, statements)
        # the AND reads the rows holding all four words (a handful), the fill its matches
        assert read <= matches * 1.1 + POOL, (read, matches)


def test_the_full_text_index_keeps_its_pending_list_short(
    hives: dict[int, tuple[Hive, Agent]],
) -> None:
    """Every full-text search reads GIN's pending list through (PostgreSQL migration 10): after
    building 2,000 memories it holds at most 128 kB (16 pages), not up to the default 4 MB."""
    for opened, _ in hives.values():
        with opened.store._connection() as conn:  # type: ignore[attr-defined]
            [(options,)] = conn.execute(
                "SELECT reloptions FROM pg_class WHERE oid = 'memories_fts'::regclass"
            ).fetchall()
            [(pending,)] = conn.execute("SELECT gin_clean_pending_list('memories_fts')").fetchall()
        assert "gin_pending_list_limit=128" in options
        assert pending <= 16, pending
