"""The PostgreSQL bulk path (issue 35, step 4; ``hivekeep/store/postgres/inserts.py``): a large
batch goes through COPY into a staging table, its neighbour lookups are one statement, and a batch
that is a large share of the table builds the HNSW index after the load, in its transaction,
while a reader on another connection waits and then sees every row."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hivekeep import Hive, Settings
from hivekeep.core.dedup import DedupRule
from hivekeep.services.transfer.format import IMPORT_BATCH
from hivekeep.store.base import EmbeddingSpace, MemoryFilter, MemoryWrite, NewMemory
from hivekeep.store.postgres import PostgresStore, inserts
from hivekeep.types import Category, Scope
from tests.postgres import TestPostgresStore, postgres_url
from tests.support import VectorTable, random_unit, with_cosine

DIMENSION = 16
RULE = DedupRule(threshold=0.9)


@pytest.fixture
def store() -> Iterator[TestPostgresStore]:
    opened = TestPostgresStore()
    opened.reset_embedding_space(EmbeddingSpace("test:bulk", DIMENSION))
    with psycopg.connect(opened.url, autocommit=True) as conn:  # a reused schema's row count
        conn.execute("ANALYZE memories")  # is that of its last hive until analyzed
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg cursors execute from here on, as text (clear it after set-up)."""
    found: list[str] = []
    original = psycopg.Cursor.execute

    def counted(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        found.append(str(query))
        return original(self, query, params, **options)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return found


def _writes(agent: int, prefix: str, count: int, **fields: Any) -> list[MemoryWrite]:
    return [
        MemoryWrite(
            NewMemory(agent, f"{prefix} fact {i}.", Category.FACT, **fields),
            random_unit(f"{prefix}{i}", DIMENSION),
            f"{prefix} fact {i}",
        )
        for i in range(count)
    ]


def _index(store: TestPostgresStore) -> str | None:
    with psycopg.connect(store.url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s "
            "AND indexname = 'memories_embedding'",
            (store.schema,),
        ).fetchone()
    return None if row is None else str(row[0])


def test_a_large_batch_builds_the_index_after_the_load_and_a_reader_waits_for_it(
    store: TestPostgresStore,
) -> None:
    agent = store.create_agent("alice", "").id
    first = store.insert_memories(_writes(agent, "early", 50), dedup=RULE)
    before = _index(store)
    assert before is not None and "hnsw" in before
    query = random_unit("the query", DIMENSION)
    reader = PostgresStore(store.url)  # a second server's connection pool, opened beforehand
    found: list[list[tuple[int, float]]] = []
    try:
        waiting = threading.Thread(
            target=lambda: found.append(reader.vector_search(agent, query, 10, MemoryFilter()))
        )
        with store.transaction():
            batch = store.insert_memories(_writes(agent, "bulk", 300), dedup=RULE)
            waiting.start()
            waiting.join(timeout=1.0)
            # The index was dropped and built again in this open transaction: the reader waits
            # for its end instead of reading the table half-loaded or without its index.
            assert waiting.is_alive()
        waiting.join(timeout=30)
        assert not waiting.is_alive()
    finally:
        reader.close()
    assert _index(store) == before  # the same index, built again
    rows = {r.memory.id: r for r in [*first, *batch]}
    vectors = {i: store.vectors(agent, [i])[i] for i in rows}
    exact = sorted(vectors, key=lambda i: (-float(vectors[i] @ query), i))[:10]
    assert [memory_id for memory_id, _ in found[0]] == exact  # every row, the batch's too


def test_a_long_reader_makes_the_batch_keep_the_index_up_instead_of_waiting(
    store: TestPostgresStore,
) -> None:
    """The drop waits ``DROP_WAIT`` at most for a transaction still reading the table (readers
    that come meanwhile queue behind it); then the batch writes into the existing index."""
    agent = store.create_agent("alice", "").id
    store.insert_memories(_writes(agent, "early", 50), dedup=RULE)
    done: list[int] = []
    with psycopg.connect(store.url) as reading:
        reading.execute("SELECT count(*) FROM memories").fetchone()  # its transaction stays open
        writing = threading.Thread(
            target=lambda: done.append(
                len(store.insert_memories(_writes(agent, "bulk", 300), dedup=RULE))
            )
        )
        writing.start()
        writing.join(timeout=30)
        assert done == [300]  # written while the reader's transaction is still open
    assert _index(store) is not None


def test_a_table_never_analyzed_is_counted_before_a_rebuild(
    store: TestPostgresStore, sent: list[str]
) -> None:
    """``reltuples`` is -1 until a table is first analyzed (a restored dump): the batch counts
    the rows instead of taking the table for empty and rebuilding the index of 2,000 rows."""
    agent = store.create_agent("alice", "").id
    store.insert_memories(_writes(agent, "early", 2_000), dedup=RULE)
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("UPDATE pg_class SET reltuples = -1 WHERE oid = 'memories'::regclass")
    sent.clear()
    store.insert_memories(_writes(agent, "later", inserts.COPY_ROWS), dedup=RULE)
    assert not any("DROP INDEX" in s for s in sent)
    assert any(s.startswith("ANALYZE") for s in sent)  # and its statistics are made


def test_a_small_share_keeps_the_index_up_row_by_row(store: TestPostgresStore) -> None:
    """Below ``REBUILD_SHARE`` of the table, the batch is written into the existing index: a
    reader is not kept waiting by an index build."""
    agent = store.create_agent("alice", "").id
    store.insert_memories(_writes(agent, "early", 900), dedup=RULE)
    reader = PostgresStore(store.url)
    try:
        with store.transaction():
            store.insert_memories(_writes(agent, "later", 200), dedup=RULE)  # 18 % of 1,100
            hits = reader.vector_search(agent, random_unit("q", DIMENSION), 5, MemoryFilter())
        assert len(hits) == 5
    finally:
        reader.close()


def test_a_copied_batch_keeps_every_value(store: TestPostgresStore) -> None:
    """COPY's text format escapes tabs, newlines and backslashes; empty and missing values stay
    apart."""
    agent = store.create_agent("alice", "").id
    odd = ["tab\there", "line\nbreak", "back\\slash \\N", "", "quote ' and \" and é 🐝"]
    writes = [
        MemoryWrite(
            NewMemory(
                agent,
                f"{odd[i % len(odd)]} {i}",
                Category.FACT,
                subject=None if i % 2 else odd[i % len(odd)],
                source_context=None if i % 3 else odd[(i + 1) % len(odd)],
                scope=Scope.SHARED if i % 4 == 0 else Scope.PRIVATE,
            ),
            None if i % 7 == 0 else random_unit(f"odd{i}", DIMENSION),
            f"odd {i}",
        )
        for i in range(inserts.COPY_ROWS)
    ]
    stored = store.insert_memories(writes, dedup=RULE)
    assert len(stored) == len(writes)
    for write, result in zip(writes, stored, strict=True):
        again = store.get_memory(result.memory.id, agent)
        assert (again.content, again.subject, again.source_context, again.scope) == (
            write.memory.content,
            write.memory.subject,
            write.memory.source_context,
            write.memory.scope,
        )
        assert again.embedding_state == ("pending" if write.vector is None else "ready")


def test_a_batch_sends_the_same_statements_whatever_its_size(
    store: TestPostgresStore, sent: list[str]
) -> None:
    """Work, not time: the statements a batch sends do not grow with its writes (one neighbour
    statement for the batch, not one a write), on the small path and on the COPY path."""
    agent = store.create_agent("alice", "").id
    store.insert_memories(_writes(agent, "base", 2_600), dedup=RULE)  # no rebuild below
    sent.clear()

    def statements(prefix: str, count: int) -> int:
        sent.clear()
        near = [  # half of them close to a stored memory: listed as similar, not merged
            MemoryWrite(
                w.memory,
                with_cosine(random_unit(f"base{i}", DIMENSION), 0.85, w.text_key),
                w.text_key,
            )
            if i % 2
            else w
            for i, w in enumerate(_writes(agent, prefix, count))
        ]
        results = store.insert_memories(near, dedup=RULE)
        assert sum(bool(r.similar) for r in results) >= count // 4
        return len(sent)

    small = statements("ten", 10), statements("forty", 40)
    large = statements("two hundred", inserts.COPY_ROWS), statements("more", 240)
    assert small[0] == small[1] <= 12
    assert large[0] == large[1] <= 14
    assert not any("ANALYZE" in s or "CREATE INDEX" in s for s in sent)


def test_a_walked_lookup_judges_as_the_exact_one(
    store: TestPostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups past ``EXACT_LIMIT`` visible rows walk HNSW per write (one LATERAL statement); the
    duplicates and neighbours found are those of the exact join, and the session's planner
    settings are back afterwards."""
    agent = store.create_agent("alice", "").id
    store.insert_memories(_writes(agent, "base", 60), dedup=RULE)
    again = [
        MemoryWrite(
            NewMemory(agent, f"Base fact {i}!" if i % 2 else f"again {i}.", Category.FACT),
            with_cosine(random_unit(f"base{i}", DIMENSION), 0.95 if i % 2 else 0.85, f"a{i}"),
            f"again {i}",
        )
        for i in range(20)
    ]

    def verdicts() -> None:  # the verdicts, by raising them (the batch rolled back)
        with store.transaction():
            results = store.insert_memories(again, dedup=RULE)
            with store._reading() as s:
                settings = s.one("SELECT current_setting('enable_seqscan')")
            assert settings is not None and settings[0] == "on"
            new = {r.memory.id: f"new {n}" for n, r in enumerate(results) if not r.duplicate}
            raise _Rollback(
                [(r.duplicate, [new.get(m.id, m.id) for m in r.similar]) for r in results]
            )

    exact = _rolled_back(verdicts)
    monkeypatch.setattr(inserts, "EXACT_LIMIT", 5)
    walked = _rolled_back(verdicts)
    assert walked == exact
    assert any(duplicate for duplicate, _ in exact)
    assert any(similar for _, similar in exact)


class _Rollback(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _rolled_back(call: Any) -> Any:
    try:
        call()
    except _Rollback as done:
        return done.value
    raise AssertionError("not rolled back")


def test_neighbours_are_found_across_groups_in_one_statement(store: TestPostgresStore) -> None:
    """Two authors, two subjects, one batch: each write sees its own author's rows and the shared
    ones of its subject only."""
    alice, bob = store.create_agent("alice", "").id, store.create_agent("bob", "").id
    base = random_unit("base", DIMENSION)
    store.insert_memories(
        [
            MemoryWrite(NewMemory(alice, "Alice's.", Category.FACT, subject="x"), base, "a"),
            MemoryWrite(
                NewMemory(bob, "Bob's shared.", Category.FACT, subject="x", scope=Scope.SHARED),
                with_cosine(base, 0.86, "s"),
                "b",
            ),
            MemoryWrite(NewMemory(bob, "Bob's own.", Category.FACT, subject="x"), base, "c"),
            MemoryWrite(NewMemory(alice, "Other subject.", Category.FACT, subject="y"), base, "d"),
        ],
        dedup=RULE,
    )
    near = with_cosine(base, 0.87, "near")
    results = store.insert_memories(
        [
            MemoryWrite(NewMemory(alice, "Alice again.", Category.FACT, subject="x"), near, "e"),
            MemoryWrite(NewMemory(bob, "Bob again.", Category.FACT, subject="x"), near, "f"),
        ],
        dedup=RULE,
    )
    seen = [sorted(m.content for m in r.similar) for r in results]
    assert seen == [["Alice's.", "Bob's shared."], ["Bob's own.", "Bob's shared."]]


def test_a_burst_of_events_crosses_in_few_statements_and_in_order(
    store: TestPostgresStore, sent: list[str]
) -> None:
    """A bulk write publishes an event a memory: the relay sends them ``SEND_BATCH`` a statement,
    in order, and a payload repeated within one statement (PostgreSQL would deliver it once) goes
    in the next."""
    from hivekeep.events import Event, EventBus
    from hivekeep.store.postgres import relay

    here, there = EventBus(), EventBus()
    got: list[Event] = []
    there.subscribe(got.append)
    sender, receiver = relay.EventRelay(store.url, here), relay.EventRelay(store.url, there)
    try:
        burst = [Event(i, "memory:created", 1, {"id": i}, "2026-01-01") for i in range(500)]
        sender._outbox.extend([*burst, burst[-1]])  # queued at once, the last one twice
        sender._wake()
        deadline = time.monotonic() + 20
        while len(got) < 501 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sender.close()
        receiver.close()
    assert [e.data["id"] for e in got] == [*range(500), 499]
    assert len([s for s in sent if "pg_notify" in s]) <= 501 // relay.SEND_BATCH + 2


def test_an_import_into_postgresql_takes_the_bulk_path(
    tmp_path: Path, table: VectorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hivekeep import`` writes through ``memorize_many`` in batches of ``IMPORT_BATCH``: into
    an empty PostgreSQL hive they go by COPY, the index is built after each large load, and
    every memory is found afterwards."""
    source = tmp_path / "source.db"
    with Hive(source, embedder=table, settings=Settings()) as hive:
        hive.create_agent("alice").memorize_many(
            [{"content": f"Imported fact number {i}.", "category": "fact"} for i in range(600)]
        )
        exported = io.StringIO()
        hive.export(exported)
    (tmp_path / "hive.jsonl").write_text(exported.getvalue(), encoding="utf-8")
    sent: list[str] = []
    original = psycopg.Cursor.copy

    def copied(self: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(statement))
        return original(self, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "copy", copied)
    with postgres_url() as url, Hive(url, embedder=table, settings=Settings()) as hive:
        hive.import_(tmp_path / "hive.jsonl")
        alice = hive.get_agent("alice")
        assert alice.list_memories(limit=1).total == 600
        hits = alice.recall("Imported fact number 421.").hits
        assert hits[0].memory.content == "Imported fact number 421."
        index = hive.store._read(  # type: ignore[attr-defined]  # the PostgreSQL store
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding' "
            "AND schemaname = current_schema()"
        )
    assert len(index) == 1 and "hnsw" in index[0][0]
    assert len(sent) == 600 // IMPORT_BATCH
    assert all("memories_staging" in s for s in sent)
