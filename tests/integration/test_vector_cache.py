"""The in-process vector cache answers exactly as sqlite-vec does, and follows every writer.

Real files only: a cached store is compared with sqlite-vec (``vector_cache=False``) under random
writes, with writers in another connection and in another process, and across rollbacks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Hive, Settings
from hivekeep.errors import StoreError, ValidationError
from hivekeep.store import vector_cache
from hivekeep.store.base import (
    KEEP,
    EmbeddingSpace,
    MemoryChanges,
    MemoryFilter,
    MemoryWrite,
    NewMemory,
)
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.types import Category, Scope
from tests.support import VectorTable, insert_pairs, random_unit, with_cosine

REPO = Path(__file__).resolve().parents[2]
DIMENSION = 8
NO_FILTER = MemoryFilter()
SUBJECTS = ["Ana", "  ana ", "Ben", None]
DATES = ["2023-01-01T00:00:00.000000Z", "2024-01-01T00:00:00.000000Z", None]


def vec(seed: object) -> np.ndarray:
    return random_unit(str(seed), DIMENSION)


def open_pair(directory: Path) -> tuple[SQLiteStore, SQLiteStore]:
    """A cached store and a sqlite-vec store on the same new file, with agents 1 and 2."""
    cached = SQLiteStore(directory / "hive.db")
    cached.reset_embedding_space(EmbeddingSpace("test:cache", DIMENSION))
    cached.create_agent("alice", "")
    cached.create_agent("bob", "")
    return cached, SQLiteStore(directory / "hive.db", vector_cache=False)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    stores = open_pair(tmp_path)
    yield stores
    for store in stores:
        store.close()


def write(agent: int, content: str, vector: np.ndarray | None) -> MemoryWrite:
    memory = NewMemory(agent_id=agent, content=content, category=Category.FACT)
    return MemoryWrite(memory, vector, content.lower())


def assert_same_hits(cached: list[tuple[int, float]], plain: list[tuple[int, float]]) -> None:
    """Same similarities rank by rank; ids may differ only between tied similarities."""
    assert len(cached) == len(plain)
    plain_scores = dict(plain)
    for (i, s), (j, t) in zip(cached, plain, strict=True):
        assert s == pytest.approx(t, abs=1e-5)
        if i != j:
            assert i not in plain_scores or plain_scores[i] == pytest.approx(s, abs=1e-5)


def assert_coherent(cached: SQLiteStore, plain: SQLiteStore, seed: object) -> None:
    query = vec(f"query {seed}")
    for viewer in (1, 2):
        for filters in (
            NO_FILTER,
            MemoryFilter(category=Category.DECISION),
            MemoryFilter(subject="ANA"),
            MemoryFilter(since="2023-06-01T00:00:00.000000Z"),
        ):
            for k in (1, 4, 50):
                assert_same_hits(
                    cached.vector_search(viewer, query, k, filters),
                    plain.vector_search(viewer, query, k, filters),
                )
        ids = list(range(1, 80))
        mine, theirs = cached.vectors(viewer, ids), plain.vectors(viewer, ids)
        assert mine.keys() == theirs.keys()
        for memory_id, vector in mine.items():
            assert np.array_equal(vector, theirs[memory_id])


operation = st.one_of(
    st.tuples(
        st.just("insert"),
        st.lists(
            st.tuples(
                st.sampled_from([1, 2]),  # author
                st.integers(0, 30),  # vector seed
                st.sampled_from([None, 0.95, 0.85]),  # cosine to an earlier vector, if any
                st.booleans(),  # shared
                st.sampled_from(list(Category)),
                st.sampled_from(SUBJECTS),
                st.sampled_from(DATES),
                st.booleans(),  # embedded (False: pending)
            ),
            min_size=1,
            max_size=6,
        ),
    ),
    st.tuples(st.just("scope"), st.integers(0, 99), st.booleans()),
    st.tuples(st.just("subject"), st.integers(0, 99), st.sampled_from(SUBJECTS)),
    st.tuples(st.just("vector"), st.integers(0, 99), st.sampled_from([None, 1, 2])),
    st.tuples(st.just("delete"), st.integers(0, 99)),
    st.tuples(st.just("backfill"), st.integers(0, 99)),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    operations=st.lists(
        st.tuples(operation, st.booleans(), st.booleans()), min_size=1, max_size=12
    ),
    tight=st.booleans(),
)
def test_cache_answers_as_sqlite_vec_under_random_writes(
    operations: list[tuple[tuple[Any, ...], bool, bool]], tight: bool
) -> None:
    """Writes go through the cached store or another connection (first flag); the second flag
    compares the two after the step, so changes from elsewhere can pile up in between. A
    ``tight`` cache has a budget of 0 bytes: each read evicts the matrices it does not need, so
    changes land on audiences not loaded, and loads follow evictions."""
    with tempfile.TemporaryDirectory() as tmp:
        cached, plain = open_pair(Path(tmp))
        if tight:
            assert cached.vector_cache is not None
            cached.vector_cache.budget = 0
        made: list[np.ndarray] = []  # the vector of every insert so far
        try:
            for step, ((kind, *args), elsewhere, check) in enumerate(operations):
                store = plain if elsewhere else cached
                if kind == "insert":
                    _insert(store, step, args[0], made)
                else:
                    _change(store, plain, step, kind, args[0] % max(1, len(made)) + 1, *args[1:])
                if check:
                    assert_coherent(cached, plain, step)
            assert_coherent(cached, plain, "end")
        finally:
            cached.close()
            plain.close()


def _insert(
    store: SQLiteStore, step: int, rows: list[tuple[Any, ...]], made: list[np.ndarray]
) -> None:
    writes = []
    for n, (author, seed, cosine, shared, category, subject, date, ready) in enumerate(rows):
        vector = vec(seed)
        if cosine is not None and made:
            vector = with_cosine(made[seed % len(made)], cosine, f"{step} {n}")
        made.append(vector)
        memory = NewMemory(
            agent_id=author,
            content=f"memory {step} {n}",
            category=category,
            subject=subject,
            scope=Scope.SHARED if shared else Scope.PRIVATE,
            created_at=date,
        )
        writes.append(MemoryWrite(memory, vector if ready else None, f"k{step} {n}"))
    insert_pairs(store, writes, 0.9)


def _change(
    store: SQLiteStore, plain: SQLiteStore, step: int, kind: str, memory_id: int, *args: Any
) -> None:
    """One update, delete or backfill of memory ``memory_id``, by its owner (if it exists)."""
    owner = next((a for a in (1, 2) if _owns(plain, memory_id, a)), None)
    if owner is None:
        return
    if kind == "scope":
        changes = MemoryChanges(scope=Scope.SHARED if args[0] else Scope.PRIVATE)
        store.update_memory(memory_id, owner, changes, text_key=None, vector=KEEP)
    elif kind == "subject":
        changes = MemoryChanges(subject=args[0])
        store.update_memory(memory_id, owner, changes, text_key=None, vector=KEEP)
    elif kind == "vector":
        new = None if args[0] is None else vec(f"new {step} {args[0]}")
        store.update_memory(memory_id, owner, MemoryChanges(), text_key=None, vector=new)
    elif kind == "delete":
        store.delete_memory(memory_id, owner)
    else:
        content = plain.get_memory(memory_id, owner).content
        store.store_embedding(memory_id, content, vec(f"late {step}"))


def _owns(store: SQLiteStore, memory_id: int, agent_id: int) -> bool:
    found = store.fetch_memories(agent_id, [memory_id]).get(memory_id)
    return found is not None and found.agent_id == agent_id


def test_duplicates_within_one_batch_match_sqlite_vec(tmp_path: Path) -> None:
    """A batch dedups against the archive and its own earlier rows, closest match first."""
    results = {}
    for name, cached in (("cached", True), ("plain", False)):
        store = SQLiteStore(tmp_path / f"{name}.db", vector_cache=cached)
        store.reset_embedding_space(EmbeddingSpace("test:cache", DIMENSION))
        alice, bob = store.create_agent("alice", "").id, store.create_agent("bob", "").id
        base = vec("base")
        insert_pairs(store, [write(alice, "The base fact", base)], 0.9)
        batch = [  # restatements; bob cannot see alice's private rows
            write(bob, "The base fact?", with_cosine(base, 0.97, "b")),
            write(alice, "The base fact!", with_cosine(base, 0.95, "n")),
            write(alice, "Other fact", vec("other")),
            write(alice, "Other fact.", with_cosine(vec("other"), 0.93, "o")),
            write(bob, "Other fact!", with_cosine(vec("other"), 0.99, "p")),
        ]
        inserted = insert_pairs(store, batch, 0.9)
        results[name] = [(record.id, duplicate) for record, duplicate in inserted]
        store.close()
    assert (
        results["cached"]
        == results["plain"]
        == [(2, False), (1, True), (3, False), (3, True), (4, False)]
    )


def test_failed_batch_leaves_the_cache_as_the_file(pair: tuple[SQLiteStore, SQLiteStore]) -> None:
    cached, plain = pair
    kept = insert_pairs(cached, [write(1, "kept", vec("kept"))], 0.9)
    assert cached.vector_search(1, vec("kept"), 5, NO_FILTER)[0][0] == kept[0][0].id
    bad = write(1, "wrong dimension", np.ones(DIMENSION + 1, dtype=np.float32))
    with pytest.raises(StoreError):  # the first two rows reached the cache before the failure
        insert_pairs(
            cached, [write(1, "gone", vec("gone")), write(2, "gone too", vec("g2")), bad], 0.9
        )
    # Another connection commits as many changes, so the log is back where the cache was.
    others = [write(1, "other 1", vec("o1")), write(2, "other 2", vec("o2"))]
    insert_pairs(plain, others, 0.9)
    found = {i for i, _ in cached.vector_search(1, vec("gone"), 5, NO_FILTER)}
    assert found == {kept[0][0].id, kept[0][0].id + 1}
    assert_coherent(cached, plain, "after rollback")


def test_savepoint_rollback_inside_a_transaction_keeps_the_rest(
    pair: tuple[SQLiteStore, SQLiteStore],
) -> None:
    cached, plain = pair
    with cached.atomic():
        [(first, _)] = insert_pairs(cached, [write(1, "first", vec("first"))], 0.9)
        with pytest.raises(StoreError):
            insert_pairs(
                cached,
                [write(1, "undone", vec("undone")), write(1, "bad", np.ones(3, dtype=np.float32))],
                0.9,
            )
        [(last, _)] = insert_pairs(cached, [write(1, "last", vec("last"))], 0.9)
    found = {i for i, _ in cached.vector_search(1, vec("x"), 10, NO_FILTER)}
    assert found == {first.id, last.id}
    assert_coherent(cached, plain, "after savepoint")


def test_rolled_back_updates_do_not_linger(pair: tuple[SQLiteStore, SQLiteStore]) -> None:
    cached, plain = pair
    [(memory, _)] = insert_pairs(cached, [write(1, "private", vec("private"))], 0.9)
    with pytest.raises(RuntimeError), cached.atomic():
        cached.update_memory(
            memory.id, 1, MemoryChanges(scope=Scope.SHARED), text_key=None, vector=KEEP
        )
        cached.update_memory(memory.id, 1, MemoryChanges(), text_key=None, vector=vec("moved"))
        assert cached.vector_search(2, vec("moved"), 1, NO_FILTER)[0][0] == memory.id
        raise RuntimeError("abort the transaction")
    assert cached.vector_search(2, vec("private"), 5, NO_FILTER) == []
    assert cached.vector_search(1, vec("private"), 1, NO_FILTER)[0][1] == pytest.approx(
        1.0, abs=1e-5
    )
    assert_coherent(cached, plain, "after abort")


def test_log_is_pruned_and_a_cache_left_behind_reloads(
    pair: tuple[SQLiteStore, SQLiteStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_cache, "LOG_KEEP", 10)
    monkeypatch.setattr(vector_cache, "PRUNE_EVERY", 5)
    cached, plain = pair
    cached.vector_search(1, vec("q"), 5, NO_FILTER)
    cache = cached.vector_cache
    assert cache is not None
    loads = cache.loads
    for n in range(30):
        insert_pairs(plain, [write(1 + n % 2, f"from the other connection {n}", vec(n))], 0.9)
    conn = apsw.Connection(str(tmp_path / "hive.db"))
    assert conn.execute("SELECT count(*) FROM vector_log").get <= 15
    conn.close()
    assert_coherent(cached, plain, "after pruning")
    assert cache.loads == loads + 1
    assert len(cache) == 30


def test_a_reset_elsewhere_empties_the_cache(pair: tuple[SQLiteStore, SQLiteStore]) -> None:
    cached, plain = pair
    insert_pairs(cached, [write(1, "old space", vec("old"))], 0.9)
    assert cached.vector_search(1, vec("old"), 5, NO_FILTER)
    plain.reset_embedding_space(EmbeddingSpace("test:other", 4))
    assert cached.vector_search(1, np.ones(4) / 2, 5, NO_FILTER) == []
    with pytest.raises(StoreError):
        cached.vector_search(1, vec("old"), 5, NO_FILTER)  # 8-d no longer fits


CHILD = textwrap.dedent(
    """
    import sys
    from hivekeep import Hive, Settings
    from tests.support import VectorTable

    path, rewrite, share, forget = sys.argv[1], *map(int, sys.argv[2:])
    with Hive(path, embedder=VectorTable(), settings=Settings()) as hive:
        alice = hive.get_agent("alice")
        new = alice.memorize("The child process wrote this note", category="fact")
        alice.update_memory(rewrite, content="Rewritten by the child process")
        alice.update_memory(share, scope="shared")
        alice.forget(forget)
        print(new.memory.id)
    """
)


def test_writes_of_another_process_are_seen_without_reopening(
    db_path: Path, table: VectorTable, tmp_path: Path
) -> None:
    def near(text: str) -> np.ndarray:
        return random_unit(text, table.dimension)

    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        alice, bob = hive.create_agent("alice"), hive.create_agent("bob")
        texts = [f"Harbour note number {i}" for i in range(30)]
        ids = [
            r.memory.id
            for r in alice.memorize_many({"content": t, "category": "fact"} for t in texts)
        ]
        store = hive.store
        assert isinstance(store, SQLiteStore) and store.vector_cache is not None
        assert store.vector_search(alice.id, near(texts[0]), 1, NO_FILTER)[0][0] == ids[0]
        loads = store.vector_cache.loads
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        child = subprocess.run(
            [sys.executable, str(script), str(db_path), *map(str, ids[:3])],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert child.returncode == 0, child.stderr
        new_id = int(child.stdout.split()[-1])

        hits = store.vector_search(
            alice.id, near("The child process wrote this note"), 1, NO_FILTER
        )
        assert hits[0][0] == new_id and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        rewritten = store.vector_search(
            alice.id, near("Rewritten by the child process"), 1, NO_FILTER
        )
        assert rewritten[0][0] == ids[0]
        everything = dict(store.vector_search(alice.id, near(texts[0]), 50, NO_FILTER))
        assert everything[ids[0]] < 0.9 and ids[2] not in everything and len(everything) == 30
        assert [i for i, _ in store.vector_search(bob.id, near(texts[1]), 5, NO_FILTER)] == [ids[1]]
        assert alice.recall("The child process wrote this note").hits[0].memory.id == new_id
        assert store.vector_cache.loads == loads  # replayed from the log, not reloaded
        plain = SQLiteStore(db_path, vector_cache=False)
        for text in (*texts[:5], "The child process wrote this note"):
            for viewer in (alice.id, bob.id):
                assert_same_hits(
                    store.vector_search(viewer, near(text), 10, NO_FILTER),
                    plain.vector_search(viewer, near(text), 10, NO_FILTER),
                )
        plain.close()


def tenants_hive(path: Path, tenants: int, each: int, dimension: int = 64) -> SQLiteStore:
    """``tenants`` agents holding ``each`` private memories, and ten shared ones; a cache
    holding nothing yet."""
    store = SQLiteStore(path)
    store.reset_embedding_space(EmbeddingSpace("test:tenants", dimension))
    for t in range(tenants):
        agent = store.create_agent(f"tenant{t}", "").id
        writes = [
            write(agent, f"tenant {t} note {n}", random_unit(f"{t} {n}", dimension))
            for n in range(each)
        ]
        if t == 0:
            writes += [
                MemoryWrite(
                    NewMemory(agent, f"shared note {n}", Category.FACT, scope=Scope.SHARED),
                    random_unit(f"shared {n}", dimension),
                    f"shared note {n}",
                )
                for n in range(10)
            ]
        insert_pairs(store, writes, 1.01)  # no dedup: every note is kept
    assert store.vector_cache is not None
    store.vector_cache.invalidate()  # the writes' dedup loaded each tenant: start with none
    return store


def counted_bytes(cache: vector_cache.VectorCache) -> int:
    """The cache's bytes counted afresh from its matrices (``nbytes`` is kept as they change)."""
    return sum(m.nbytes + vector_cache.ID_MAP_BYTES * len(m) for m in cache._matrices.values())


def test_touching_many_tenants_keeps_the_cache_within_its_budget(tmp_path: Path) -> None:
    """Each tenant's matrix is loaded on its first search; past the budget the least recently
    searched go, so the cache's bytes stay within it however many tenants are touched, and an
    evicted tenant's next search loads it again and answers as sqlite-vec."""
    store = tenants_hive(tmp_path / "hive.db", tenants=40, each=40)
    plain = SQLiteStore(tmp_path / "hive.db", vector_cache=False)
    cache = store.vector_cache
    assert cache is not None
    cache.budget = 200_000  # about a quarter of the tenants' matrices
    query = random_unit("query", 64)
    agents = [a.id for a in store.list_agents()]
    try:
        for agent in agents:
            assert_same_hits(
                store.vector_search(agent, query, 5, NO_FILTER),
                plain.vector_search(agent, query, 5, NO_FILTER),
            )
            assert cache.nbytes == counted_bytes(cache) <= cache.budget
        held = len(cache._matrices)
        assert 2 < held < len(agents) // 2  # the shared matrix and the latest tenants
        assert len(cache) < 40 * 40 // 2
        loads = cache.audience_loads
        first = agents[0]  # searched least recently: evicted
        assert_same_hits(
            store.vector_search(first, query, 5, NO_FILTER),
            plain.vector_search(first, query, 5, NO_FILTER),
        )
        assert cache.audience_loads == loads + 1
        assert cache.nbytes == counted_bytes(cache) <= cache.budget
    finally:
        store.close()
        plain.close()


def test_the_byte_count_follows_writes_to_loaded_and_unloaded_tenants(tmp_path: Path) -> None:
    """A write to a loaded tenant is counted at once; one written elsewhere to a tenant not
    loaded is left to that tenant's load, which reads it from the file."""
    store = tenants_hive(tmp_path / "hive.db", tenants=3, each=5)
    plain = SQLiteStore(tmp_path / "hive.db", vector_cache=False)
    cache = store.vector_cache
    assert cache is not None
    first, second, _ = (a.id for a in store.list_agents())
    query = random_unit("query", 64)
    try:
        store.vector_search(first, query, 5, NO_FILTER)
        before = cache.nbytes
        more = [write(first, f"more {n}", random_unit(f"more {n}", 64)) for n in range(80)]
        insert_pairs(store, more, 1.01)
        assert cache.nbytes == counted_bytes(cache) > before
        insert_pairs(plain, [write(second, "unloaded", random_unit("unloaded", 64))], 1.01)
        store.vector_search(first, query, 5, NO_FILTER)  # replays the log: the row is skipped
        assert cache.nbytes == counted_bytes(cache) and second not in cache._matrices
        hits = store.vector_search(second, random_unit("unloaded", 64), 1, NO_FILTER)
        assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert cache.nbytes == counted_bytes(cache) and second in cache._matrices
    finally:
        store.close()
        plain.close()


def test_the_byte_count_is_what_the_matrices_take(tmp_path: Path) -> None:
    """``nbytes`` (arrays at their capacity, SLOT_BYTES and ID_MAP_BYTES a row) is within a
    quarter of what tracemalloc sees the loads allocate, so the budget bounds real memory."""
    store = tenants_hive(tmp_path / "hive.db", tenants=20, each=200, dimension=32)
    cache = store.vector_cache
    assert cache is not None
    agents = [a.id for a in store.list_agents()]
    query = random_unit("query", 32)
    store.vector_search(agents[0], query, 1, NO_FILTER)  # the log and statements, warmed
    cache.invalidate()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for agent in agents:
            store.vector_search(agent, query, 1, NO_FILTER)
        allocated = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
        store.close()
    assert 0.75 * allocated <= cache.nbytes <= 1.25 * allocated, (cache.nbytes, allocated)


def test_the_budget_is_set_by_hivekeep_vector_cache_mb(db_path: Path, table: VectorTable) -> None:
    settings = Settings.from_env({"HIVEKEEP_VECTOR_CACHE_MB": "3"})
    with Hive(db_path, embedder=table, settings=settings) as hive:
        assert isinstance(hive.store, SQLiteStore) and hive.store.vector_cache is not None
        assert hive.store.vector_cache.budget == 3 * 2**20
    with pytest.raises(ValidationError, match="HIVEKEEP_VECTOR_CACHE_MB"):
        Settings.from_env({"HIVEKEEP_VECTOR_CACHE_MB": "0"})
