"""The PostgreSQL backend through the public API: the same recall and isolation checks as SQLite.

The recall regression tests (``test_recall.py``) are imported here and run again with ``db_path``
naming a clean PostgreSQL schema instead of a file (see tests/postgres.py); the isolation property
test is parametrised by backend in its own file. The two isolation checks at scale
(``check_*`` in ``test_isolation.py``) run here on a fifth of their data: an HNSW insert costs
about 1 ms, so 10,000 rows would take a minute; 2,000 still put far more of other agents' closer
vectors ahead of the viewer's than an HNSW scan looks at in one pass (``hnsw.ef_search``, 200).
Then: backend selection by URL, and the bounds on how far the backends' rankings may differ.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from hivekeep import Hive, NotFound, Settings, StoreError
from hivekeep.core import fts_query
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import EmbeddingSpace, MemoryFilter, MemoryWrite, NewMemory, Store
from hivekeep.store.leases import new_holder
from hivekeep.store.postgres import PostgresStore
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.types import Actor, Category, Scope
from tests.integration.test_isolation import (
    check_near_duplicate_beyond_global_top3,
    check_own_best_match,
)
from tests.integration.test_recall import *  # noqa: F403  (every recall test, on PostgreSQL)
from tests.postgres import TestPostgresStore, postgres_url, server_url, with_search_path
from tests.support import VectorTable, insert_pairs, random_unit


@pytest.fixture
def db_path() -> Iterator[str]:
    """Overrides the SQLite file of tests/conftest.py: the hive lives in a PostgreSQL schema."""
    with postgres_url() as url:
        yield url


# isolation at scale -------------------------------------------------------------------------------
@pytest.mark.slow
def test_own_best_match_survives_20_agents_of_100_memories(db_path: str) -> None:
    check_own_best_match(db_path, per_agent=100, chosen=23)


@pytest.mark.slow
def test_near_duplicate_beyond_global_top3_is_detected(db_path: str) -> None:
    check_near_duplicate_beyond_global_top3(db_path, per_other=100)


def test_a_retrieval_count_update_stays_on_its_page(
    db_path: str, local_embedder: LocalEmbedder
) -> None:
    """Recall's count of its hits rewrites each row in its own page (a HOT update: no new entry
    in any index, HNSW included), since the pages keep room for it (migration 7). On full pages
    the new version went to another page."""
    topics = ["garden", "invoice", "ferry", "piano", "lease", "cat", "dentist", "wifi", "boots"]
    words = ["renewed", "forgot", "booked", "moved", "paid", "fixed"]
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        alice = hive.create_agent("alice")
        ids = [
            alice.memorize(f"The {topic} was {word} on day {i}", category="fact").memory.id
            for i, (topic, word) in enumerate(zip(topics * 2, words * 3, strict=False))
        ]
        with psycopg.connect(db_path) as conn:
            where = "SELECT id, (ctid::text::point)[0] FROM memories"
            before: dict[int, float] = dict(conn.execute(where).fetchall())
            for memory_id in ids:
                hive.store.mark_retrieved([memory_id])
            assert dict(conn.execute(where).fetchall()) == before
            assert len(set(before.values())) > 2  # the rows fill several pages


# selection --------------------------------------------------------------------------------------
def test_a_postgresql_url_opens_a_postgres_hive(db_path: str, table: VectorTable) -> None:
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        assert isinstance(hive.store, PostgresStore)
        hive.create_agent("alice").memorize("Tea over coffee", category="preference")
    with Hive(db_path, embedder=table, settings=Settings()) as again:  # the data is still there
        assert [m.content for m in again.get_agent("alice").list_memories().memories] == [
            "Tea over coffee"
        ]


def test_a_purge_cut_short_is_finished_when_the_hive_opens_again(
    db_path: str, table: VectorTable
) -> None:
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        memory = hive.create_agent("alice").memorize("My pin is 4412", category="fact").memory
        assert hive.store.erase_memory(memory.id)  # the purge's erase, then the process dies
        assert hive.store.pending_scrubs() == [memory.id]
    with Hive(db_path, embedder=table, settings=Settings()) as again:  # opening finishes it
        assert again.store.pending_scrubs() == []
        assert again.finish_purges() == [memory.id]
        again.purge(memory.id)  # purging it again says it is done, once
        with pytest.raises(NotFound):
            again.purge(memory.id)


def test_hivekeep_db_may_name_a_postgresql_url(
    db_path: str, table: VectorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIVEKEEP_DB", db_path)
    with Hive(embedder=table) as hive:
        assert isinstance(hive.store, PostgresStore)
        assert hive.path == db_path


def test_an_unreachable_server_fails_at_once_without_showing_the_password(
    table: VectorTable,
) -> None:
    url = "postgresql://hive:s3cret@localhost:1/nowhere?connect_timeout=2"
    with pytest.raises(StoreError, match="PostgreSQL") as caught:
        Hive(url, embedder=table)
    assert "s3cret" not in str(caught.value)


def test_a_schema_from_a_newer_hivekeep_is_refused(db_path: str) -> None:
    PostgresStore(db_path).close()
    with psycopg.connect(db_path, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')")
    with pytest.raises(StoreError, match="newer"):
        PostgresStore(db_path)
    # (the schema is dropped afterwards, not reused: its version is not this hivekeep's)


def test_a_missing_schema_is_named_in_the_error() -> None:
    with pytest.raises(StoreError, match="schema"):
        PostgresStore(with_search_path(server_url(), "hk_no_such_schema"))


# leases ---------------------------------------------------------------------------------------
def test_a_lease_holds_across_processes_and_a_crash_frees_it_at_once(db_path: str) -> None:
    """The advisory lock lives with its connection: another store (process) is refused with the
    holder's name, even past the expiry, and a holder that dies frees the lease at once, even one
    on "another host" that SQLite would trust until its expiry."""
    first, second = PostgresStore(db_path), PostgresStore(db_path)
    try:
        holder = new_holder()
        assert first.acquire_lease("compaction:1", holder, 0.05) is None
        time.sleep(0.1)
        assert second.acquire_lease("compaction:1", new_holder(), 60) == holder
        first.release_lease("compaction:1", holder)
        assert second.acquire_lease("compaction:1", new_holder(), 60) is None

        remote = "elsewhere.invalid:1:x"
        code = (
            "import os, sys\n"
            "from hivekeep.store.postgres import PostgresStore\n"
            "store = PostgresStore(sys.argv[1])\n"
            "assert store.acquire_lease('crash', sys.argv[2], 3600) is None\n"
            "os._exit(0)  # no release, no close: a crash\n"
        )
        subprocess.run([sys.executable, "-c", code, db_path, remote], check=True, timeout=60)
        taker = new_holder()
        deadline = time.monotonic() + 5  # the server notices the closed socket at once, or soon
        while (other := second.acquire_lease("crash", taker, 60)) is not None:
            assert other == remote and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        first.close()
        second.close()


# the full-text ranking bound --------------------------------------------------------------------
CORPUS = [
    ("Caroline went to the LGBTQ support group on 7 May", "2023-05-08T13:56:00.000000Z"),
    ("Melanie painted a sunset over the lake last week", "2023-05-25T10:00:00.000000Z"),
    ("Caroline is researching adoption agencies", "2023-06-01T09:00:00.000000Z"),
    ("Melanie ran a charity race for mental health", "2023-05-20T08:00:00.000000Z"),
    ("Caroline gave a speech at a school about her transition", "2023-06-09T12:00:00.000000Z"),
    ("Melanie and her kids went camping in the mountains", "2023-06-27T18:00:00.000000Z"),
    ("Caroline's friends from the support group threw her a party", "2023-07-03T20:00:00.000000Z"),
    ("Melanie signed up for a pottery class", "2023-07-06T17:00:00.000000Z"),
    ("The pottery class made a bowl with a dog face on it", "2023-07-14T11:00:00.000000Z"),
    ("Caroline wants to become a counselor for transgender youth", "2023-07-15T15:00:00.000000Z"),
    ("Melanie's family went to the beach in July", "2023-07-20T10:00:00.000000Z"),
    ("Caroline joined a mentorship program for LGBTQ youth", "2023-08-01T09:30:00.000000Z"),
    ("Melanie read the book Charlotte's Web to her kids", "2023-08-10T21:00:00.000000Z"),
    (
        "Caroline is planning to move back to Sweden, her home country",
        "2023-08-14T14:00:00.000000Z",
    ),
    ("Melanie plays the clarinet and the violin", "2023-08-17T19:00:00.000000Z"),
    ("The camping trip had a meteor shower at night", "2023-08-20T23:00:00.000000Z"),
    (
        "Caroline painted a rainbow flag mural at the community center",
        "2023-08-25T16:00:00.000000Z",
    ),
    ("Melanie's son had a car accident but he is fine", "2023-09-02T13:00:00.000000Z"),
    ("Caroline attended a pride parade in June with friends", "2023-06-11T15:00:00.000000Z"),
    ("Melanie went to a concert by Matt Patterson", "2023-09-10T20:00:00.000000Z"),
]
QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint?",
    "What instruments does Melanie play?",
    "Where did Melanie go camping with her kids?",
    "What career does Caroline want to pursue?",
    "What did the pottery class make?",
    "Which country is Caroline from?",
    "What happened in July 2023?",
    "pride parade June",
    "Melanie's son accident",
    "concert",
    "mentorship program youth",
]


def _fill(store: Store) -> int:
    agent = store.create_agent("alice", "").id
    insert_pairs(
        store,
        [
            MemoryWrite(NewMemory(agent, text, Category.FACT, created_at=stamp), None, text.lower())
            for text, stamp in CORPUS
        ],
        2.0,
    )
    return agent


def _text_arm(store: Store, agent: int, query: str, pool: int) -> list[int]:
    """The recall service's full-text arm (AND first, OR fill), on a store."""
    terms = fts_query.terms(query)
    found = store.text_search(agent, terms, pool, MemoryFilter())
    for memory_id in store.text_search(agent, terms, pool, MemoryFilter(), any_term=True):
        if memory_id not in found and len(found) < pool:
            found.append(memory_id)
    return found


def test_full_text_rankings_of_both_backends_agree_within_a_bound(tmp_path: Path) -> None:
    """The bound (see docs/storage.md, "PostgreSQL"): for every query the two backends find the
    same memories (same matching rules), the best hit is the same for every query, and the top 3
    overlap by at least 2.5 on average (measured: identical orders on this corpus). FTS5 ranks
    with bm25 over three columns, PostgreSQL with ``ts_rank`` weighted by idf over one document,
    so orders may differ further down on other data."""
    sqlite = SQLiteStore(tmp_path / "rank.db")
    postgres = TestPostgresStore()
    try:
        agent_s, agent_p = _fill(sqlite), _fill(postgres)
        same_top, overlap = 0, 0
        for query in QUERIES:
            lite = _text_arm(sqlite, agent_s, query, 50)
            pg = _text_arm(postgres, agent_p, query, 50)
            assert set(lite) == set(pg), query  # ids match: both stores were filled alike
            assert lite, query
            same_top += lite[0] == pg[0]
            overlap += len(set(lite[:3]) & set(pg[:3]))
        assert same_top == len(QUERIES)
        assert overlap / len(QUERIES) >= 2.5
    finally:
        sqlite.close()
        postgres.close()


def test_recall_finds_the_same_best_memory_on_both_backends(
    tmp_path: Path, table: VectorTable
) -> None:
    """Whole recall (both arms fused) on the corpus: the best hit agrees for every query."""
    tops: dict[str, list[str]] = {}
    with postgres_url() as url:
        for name, target in (("sqlite", str(tmp_path / "r.db")), ("postgres", url)):
            with Hive(target, embedder=table, settings=Settings()) as hive:
                agent = hive.create_agent("alice")
                agent.memorize_many(
                    {"content": text, "category": "fact", "created_at": stamp}
                    for text, stamp in CORPUS
                )
                tops[name] = [agent.recall(q, limit=3).hits[0].memory.content for q in QUERIES]
    assert tops["sqlite"] == tops["postgres"]


@pytest.mark.slow
def test_vector_search_matches_exact_search_on_a_larger_hive() -> None:
    """HNSW is approximate: on 1,200 vectors of four agents, each agent's top 10 by pgvector
    agrees with exact search (numpy) on at least 95 % of the places."""
    dimension = 32
    store = TestPostgresStore()
    try:
        store.reset_embedding_space(EmbeddingSpace("test:hnsw", dimension))
        agents = [store.create_agent(f"a{i}", "").id for i in range(4)]
        writes = [
            MemoryWrite(
                NewMemory(
                    agents[n % 4],
                    f"m{n}",
                    Category.FACT,
                    scope=Scope.SHARED if n % 10 == 0 else Scope.PRIVATE,
                ),
                random_unit(f"v{n}", dimension),
                f"m{n}",
            )
            for n in range(1200)
        ]
        inserted = insert_pairs(store, writes, 2.0)
        vectors = {
            record.id: (record.agent_id, record.scope.value, np.asarray(write.vector))
            for (record, _), write in zip(inserted, writes, strict=True)
        }
        agreed = total = 0
        for q in range(20):
            viewer = agents[q % 4]
            query = random_unit(f"q{q}", dimension)
            exact = sorted(
                (
                    (-float(np.dot(v, query)), i)
                    for i, (owner, scope, v) in vectors.items()
                    if owner == viewer or scope == "shared"
                )
            )[:10]
            found = [i for i, _ in store.vector_search(viewer, query, 10, MemoryFilter())]
            agreed += len({i for _, i in exact} & set(found))
            total += 10
        assert agreed / total >= 0.95
    finally:
        store.close()


def test_a_persons_memory_is_created_by_the_person_on_postgresql(
    db_path: str, local_embedder: LocalEmbedder
) -> None:
    """Issue 26: version 1 is recorded at once, in the insert's transaction, on this engine too."""
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        [typed] = agent.memorize_many(
            [{"content": "Ann keeps bees", "category": "fact"}], by=Actor.PERSON
        )
        [again] = agent.memorize_many(
            [{"content": "Ann keeps bees", "category": "fact"}], by=Actor.PERSON
        )
        assert again.duplicate and again.memory.id == typed.memory.id
        agent.update_memory(typed.memory.id, content="Ann keeps two hives of bees", by=Actor.PERSON)
        history = agent.memory_history(typed.memory.id)
        assert [(v["version"], v["operation"], v["changed_by"]) for v in history] == [
            (2, "update", "person"),
            (1, "create", "person"),
        ]
