"""The storage contract: what every backend must do, tested through the ``Store`` protocol only."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from hivekeep.core.dedup import DedupRule
from hivekeep.errors import ConflictError, NotFound, StoreError, ValidationError
from hivekeep.store.base import (
    KEEP,
    PERSON,
    AgentFootprint,
    EmbeddingSpace,
    MemoryChanges,
    MemoryFilter,
    MemoryWrite,
    NewMemory,
    ProfileRecord,
    Store,
)
from hivekeep.types import Category, EmbeddingState, Scope
from tests.contract.conftest import DIMENSION
from tests.support import insert_one, random_unit, with_cosine

NO_FILTER = MemoryFilter()


def vec(seed: str) -> np.ndarray:
    return random_unit(seed, DIMENSION)


def put(
    store: Store,
    agent_id: int,
    content: str,
    vector: np.ndarray | None = None,
    dedup: float = 0.9,
    **fields: Any,
) -> int:
    """Insert and return the id; ``dedup`` above 1 disables the vector duplicate check."""
    memory = NewMemory(
        agent_id=agent_id, content=content, category=fields.pop("category", Category.FACT), **fields
    )
    record, duplicate = insert_one(
        store,
        memory,
        vector if vector is not None else vec(content),
        text_key=content.lower(),
        dedup_threshold=dedup,
    )
    assert not duplicate
    return record.id


@pytest.fixture
def agents(store: Store) -> tuple[int, int]:
    return store.create_agent("alice", "").id, store.create_agent("bob", "").id


# agents ---------------------------------------------------------------------------------------
def test_agents_are_created_listed_and_found_by_id_or_name(store: Store) -> None:
    created = store.create_agent("alice", "helper")
    assert store.get_agent(created.id) == created
    assert store.get_agent("alice") == created
    assert [a.name for a in store.list_agents()] == ["alice"]


def test_agent_names_are_unique_case_insensitively(store: Store) -> None:
    store.create_agent("alice", "")
    with pytest.raises(ConflictError, match=r"(?i)alice"):
        store.create_agent("ALICE", "")


def test_missing_agent_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.get_agent("nobody")
    with pytest.raises(NotFound):
        store.get_agent(999)


def test_new_agent_has_empty_profile_at_revision_zero(store: Store) -> None:
    profile = store.get_profile(store.create_agent("alice", "").id)
    assert (profile.text, profile.tokens, profile.revision) == ("", 0, 0)


# memories: writes -----------------------------------------------------------------------------
def test_insert_and_get_round_trip(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(
        store,
        alice,
        "Tea over coffee",
        subject="user",
        importance=7,
        source_context="chat on Monday",
    )
    got = store.get_memory(memory_id, alice)
    assert (got.content, got.subject, got.importance, got.source_context) == (
        "Tea over coffee",
        "user",
        7,
        "chat on Monday",
    )
    assert got.scope is Scope.PRIVATE and got.author_name == "alice"
    assert got.embedding_state is EmbeddingState.READY


def test_exact_text_duplicate_is_found_across_visible_scopes(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    shared = put(store, bob, "Deploys happen on Fridays", scope=Scope.SHARED)
    record, duplicate = insert_one(
        store,
        NewMemory(agent_id=alice, content="Deploys happen on Fridays", category=Category.FACT),
        vec("other"),
        text_key="deploys happen on fridays",
        dedup_threshold=0.9,
    )
    assert duplicate and record.id == shared
    # another wording is alice's own memory: bob's shared one is never rewritten (issue 33)
    record, duplicate = insert_one(
        store,
        NewMemory(agent_id=alice, content="deploys happen on fridays", category=Category.FACT),
        vec("other"),
        text_key="deploys happen on fridays",
        dedup_threshold=0.9,
    )
    assert not duplicate and record.agent_id == alice


def test_other_agents_private_text_is_never_a_duplicate(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    put(store, bob, "secret plan")
    record, duplicate = insert_one(
        store,
        NewMemory(agent_id=alice, content="secret plan", category=Category.FACT),
        vec("secret plan"),
        text_key="secret plan",
        dedup_threshold=0.9,
    )
    assert not duplicate and record.agent_id == alice


def _write(agent_id: int, content: str, vector: np.ndarray) -> MemoryWrite:
    return MemoryWrite(NewMemory(agent_id, content, Category.FACT), vector, content.lower())


def test_restatement_at_threshold_is_a_duplicate(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    base = vec("base")
    first = put(store, alice, "The user is vegetarian.", base)
    reworded = with_cosine(base, 0.95, "n")
    [near] = store.insert_memories(
        [_write(alice, "The user is a vegetarian", reworded)],
        dedup=DedupRule(threshold=0.9),
    )
    [far] = store.insert_memories(  # the memory now has the reworded text's vector
        [_write(alice, "The user is a vegetarian!", with_cosine(reworded, 0.85, "f"))],
        dedup=DedupRule(threshold=0.9, similar_threshold=0.8),
    )
    assert near.duplicate and near.reworded and near.memory.id == first
    assert not far.duplicate and far.memory.id != first  # not close enough to merge
    assert [m.id for m in far.similar] == [first]  # but shown as a neighbour


def test_changed_fact_is_stored_and_points_at_the_old_one(
    store: Store, agents: tuple[int, int]
) -> None:
    """A near copy that changes a fact is never swallowed (SPEC 4.1)."""
    alice, bob = agents
    base = vec("standup")
    old = put(store, bob, "Team standup is at 10am on Tuesdays", base, scope=Scope.SHARED)
    [new] = store.insert_memories(
        [_write(alice, "Team standup is at 11am on Tuesdays", with_cosine(base, 0.99, "s"))],
        dedup=DedupRule(threshold=0.9),
    )
    assert not new.duplicate
    assert new.memory.content == "Team standup is at 11am on Tuesdays"
    assert [(m.id, m.author_name) for m in new.similar] == [(old, "bob")]


def test_duplicate_is_found_behind_closer_different_facts(
    store: Store, agents: tuple[int, int]
) -> None:
    """The rule looks past the closest neighbour: a changed fact nearer than the restatement
    must not hide the restatement."""
    alice, _ = agents
    base = vec("flight")
    restated = put(store, alice, "The flight to Kyoto is on 3 June.", with_cosine(base, 0.93, "r"))
    for n, day in enumerate((4, 5, 6)):
        put(store, alice, f"The flight to Kyoto is on {day} June.", with_cosine(base, 0.97, f"{n}"))
    [result] = store.insert_memories(
        [_write(alice, "The flight to Kyoto is on 3 June", base)], dedup=DedupRule(threshold=0.9)
    )
    assert result.duplicate and result.memory.id == restated


def test_similar_lists_at_most_three_closest_first(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    base = vec("rent")
    ids = [
        put(store, alice, f"Rent is due on day {day}.", with_cosine(base, cosine, f"d{day}"))
        for day, cosine in ((1, 0.91), (2, 0.97), (3, 0.95), (4, 0.93))
    ]
    [result] = store.insert_memories(
        [_write(alice, "Rent is due on day 5.", base)], dedup=DedupRule(threshold=0.9)
    )
    assert not result.duplicate
    assert [m.id for m in result.similar] == [ids[1], ids[2], ids[3]]


def test_a_batch_sees_its_own_earlier_rows(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    base = vec("batch")
    first, second, third = store.insert_memories(
        [
            _write(alice, "The user owns two cats.", base),
            _write(alice, "The user owns 2 cats", with_cosine(base, 0.96, "b")),
            _write(alice, "The user owns three cats.", with_cosine(base, 0.96, "c")),
        ],
        dedup=DedupRule(threshold=0.9),
    )
    assert not first.duplicate
    assert second.duplicate and second.memory.id == first.memory.id
    assert not third.duplicate and [m.id for m in third.similar] == [first.memory.id]


def test_a_batch_sees_only_the_earlier_rows_its_author_may_see(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    base = vec("mixed batch")
    office = "The office opens at nine."
    bobs, alices, shared, bob_again = store.insert_memories(
        [
            _write(bob, "The user owns two cats.", base),
            _write(alice, "The user owns two cats.", base),  # bob's row is private: not seen
            MemoryWrite(
                NewMemory(alice, office, Category.FACT, scope=Scope.SHARED),
                vec("o"),
                office.lower(),
            ),
            _write(bob, office, vec("p")),  # the same text as alice's shared row: a duplicate
        ],
        dedup=DedupRule(threshold=0.9),
    )
    assert not bobs.duplicate and not alices.duplicate and not alices.similar
    assert bobs.memory.id != alices.memory.id
    assert not shared.duplicate
    assert bob_again.duplicate and bob_again.memory.id == shared.memory.id


def test_failed_insert_leaves_nothing_behind(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    with pytest.raises(StoreError):  # a vector of the wrong dimension is refused by the index
        insert_one(
            store,
            NewMemory(agent_id=alice, content="broken write", category=Category.FACT),
            np.ones(DIMENSION + 3, dtype=np.float32),
            text_key="broken write",
            dedup_threshold=0.9,
        )
    assert store.list_memories(alice, NO_FILTER, 10, 0) == ([], 0)
    assert store.text_search(alice, ["broken"], 10, NO_FILTER) == []


def test_pending_memory_is_found_by_text_and_backfilled(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    record, _ = insert_one(
        store,
        NewMemory(agent_id=alice, content="Kayaking trip in June", category=Category.FACT),
        None,
        text_key="kayaking trip in june",
        dedup_threshold=0.9,
    )
    assert record.embedding_state is EmbeddingState.PENDING
    assert store.count_pending() == 1
    assert store.text_search(alice, ["kayaking"], 10, NO_FILTER) == [record.id]
    assert store.vector_search(alice, vec("Kayaking trip in June"), 10, NO_FILTER) == []
    [pending] = store.pending_embeddings(10)
    assert store.store_embedding(pending.memory_id, pending.content, vec("kayak"))
    assert store.count_pending() == 0
    assert store.vector_search(alice, vec("kayak"), 1, NO_FILTER)[0][0] == record.id


def test_store_embedding_refuses_stale_content(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    record, _ = insert_one(
        store,
        NewMemory(agent_id=alice, content="old text", category=Category.FACT),
        None,
        text_key="old text",
        dedup_threshold=0.9,
    )
    store.update_memory(
        record.id, alice, MemoryChanges(content="new text"), text_key="new text", vector=None
    )
    assert not store.store_embedding(record.id, "old text", vec("old"))
    assert store.count_pending() == 1


def test_update_changes_fields_and_keeps_the_rest(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "Likes jazz", subject="user", importance=3)
    updated = store.update_memory(
        memory_id, alice, MemoryChanges(importance=9, subject=None), text_key=None, vector=KEEP
    )
    assert (updated.content, updated.subject, updated.importance) == ("Likes jazz", None, 9)
    assert updated.embedding_state is EmbeddingState.READY


def test_update_changes_source_context_and_its_full_text(
    store: Store, agents: tuple[int, int]
) -> None:
    """The integrations keep their item names in source_context and change them on a rename."""
    alice, _ = agents
    memory_id = put(store, alice, "Takes the early train", source_context="told in March")
    updated = store.update_memory(
        memory_id,
        alice,
        MemoryChanges(source_context="intake form"),
        text_key=None,
        vector=KEEP,
    )
    assert (updated.content, updated.source_context) == ("Takes the early train", "intake form")
    assert store.text_search(alice, ["march"], 10, NO_FILTER) == []
    assert store.text_search(alice, ["intake"], 10, NO_FILTER) == [memory_id]


def test_update_keeps_full_text_index_in_sync(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "Favourite colour is green")
    store.update_memory(
        memory_id,
        alice,
        MemoryChanges(content="Favourite colour is purple"),
        text_key="favourite colour is purple",
        vector=vec("purple"),
    )
    assert store.text_search(alice, ["green"], 10, NO_FILTER) == []
    assert store.text_search(alice, ["purple"], 10, NO_FILTER) == [memory_id]


def test_full_text_covers_subject(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "Starts a new job in March", subject="Melanie")
    assert store.text_search(alice, ["melanie"], 10, NO_FILTER) == [memory_id]


def test_full_text_covers_source_context_and_creation_date(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    memory_id = put(
        store,
        alice,
        "Adopted a puppy",
        source_context="chat with Sam",
        created_at="2023-05-08T13:56:00.000000Z",
    )
    assert store.text_search(alice, ["sam"], 10, NO_FILTER) == [memory_id]
    assert store.text_search(alice, ["8", "may", "2023"], 10, NO_FILTER) == [memory_id]
    assert store.text_search(alice, ["june"], 10, NO_FILTER) == []


def test_stored_vectors_are_returned_for_visible_memories_only(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    mine = put(store, alice, "mine", vec("mine"))
    theirs = put(store, bob, "theirs", vec("theirs"))
    found = store.vectors(alice, [mine, theirs])
    assert list(found) == [mine]
    assert found[mine].dtype == np.float32 and found[mine].shape == np.shape(vec("mine"))
    assert np.array_equal(found[mine], np.asarray(vec("mine"), dtype=np.float32))  # exact


def test_delete_removes_row_and_both_indexes(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "Temporary note", vec("tmp"))
    store.delete_memory(memory_id, alice)
    with pytest.raises(NotFound):
        store.get_memory(memory_id, alice)
    assert store.text_search(alice, ["temporary"], 10, NO_FILTER) == []
    assert store.vector_search(alice, vec("tmp"), 10, NO_FILTER) == []


def test_writes_are_owner_only(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    private = put(store, alice, "alice private")
    shared = put(store, alice, "alice shared", scope=Scope.SHARED)
    for memory_id in (private, shared):
        with pytest.raises(NotFound):
            store.update_memory(
                memory_id, bob, MemoryChanges(content="hijacked"), text_key="hijacked", vector=KEEP
            )
        with pytest.raises(NotFound):
            store.delete_memory(memory_id, bob)
    assert store.get_memory(private, alice).content == "alice private"
    assert store.get_memory(shared, alice).content == "alice shared"


def test_scope_change_moves_visibility_in_both_arms(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    memory_id = put(store, alice, "Office wifi password rotates monthly", vec("wifi"))
    assert store.vector_search(bob, vec("wifi"), 5, NO_FILTER) == []
    store.update_memory(
        memory_id, alice, MemoryChanges(scope=Scope.SHARED), text_key=None, vector=KEEP
    )
    assert store.vector_search(bob, vec("wifi"), 5, NO_FILTER)[0][0] == memory_id
    assert store.text_search(bob, ["wifi"], 5, NO_FILTER) == [memory_id]
    store.update_memory(
        memory_id, alice, MemoryChanges(scope=Scope.PRIVATE), text_key=None, vector=KEEP
    )
    assert store.vector_search(bob, vec("wifi"), 5, NO_FILTER) == []
    assert store.text_search(bob, ["wifi"], 5, NO_FILTER) == []


# memories: reads ------------------------------------------------------------------------------
def test_reads_never_return_another_agents_private_memory(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    private = put(store, bob, "bob diary entry", vec("diary"))
    shared = put(store, bob, "bob shared diary", vec("shared diary"), scope=Scope.SHARED)
    with pytest.raises(NotFound):
        store.get_memory(private, alice)
    assert set(store.fetch_memories(alice, [private, shared])) == {shared}
    assert [i for i, _ in store.vector_search(alice, vec("diary"), 10, NO_FILTER)] == [shared]
    assert store.text_search(alice, ["diary"], 10, NO_FILTER) == [shared]
    memories, total = store.list_memories(alice, NO_FILTER, 10, 0)
    assert [m.id for m in memories] == [shared] and total == 1


def test_vector_search_reports_cosine_similarity(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    query = vec("query")
    close = put(store, alice, "close", with_cosine(query, 0.6, "a"))
    far = put(store, alice, "far", with_cosine(query, 0.4, "b"))
    hits = dict(store.vector_search(alice, query, 10, NO_FILTER))
    assert hits[close] == pytest.approx(0.6, abs=1e-5)
    assert hits[far] == pytest.approx(0.4, abs=1e-5)


def test_a_search_moved_toward_some_memories_reports_similarity_to_the_query(
    store: Store, agents: tuple[int, int]
) -> None:
    """Lexical feedback (Rocchio): the hits and their order are those of the query moved toward
    the mean of the ``toward`` memories' vectors, each similarity the query's own; invisible or
    missing ids among them move nothing."""
    alice, bob = agents
    query = vec("query")
    near = put(store, alice, "near", with_cosine(query, 0.9, "a"))
    middle = put(store, alice, "middle", with_cosine(query, 0.7, "b"))
    far = put(store, alice, "far", with_cosine(query, 0.1, "c"))
    hidden = put(store, bob, "hidden", vec("hidden"))
    vectors = store.vectors(alice, [near, middle, far])
    moved = query + 2.0 * vectors[far]
    moved /= np.linalg.norm(moved)
    steered = store.vector_search(alice, query, 2, NO_FILTER, toward=[far, 999], weight=2.0)
    assert [i for i, _ in steered] == [
        i for i, _ in store.vector_search(alice, moved, 2, NO_FILTER)
    ]
    assert far in [i for i, _ in steered]  # moved toward it: it came up
    for memory_id, similarity in steered:
        assert similarity == pytest.approx(float(np.dot(query, vectors[memory_id])), abs=1e-5)
    plain = store.vector_search(alice, query, 2, NO_FILTER)
    assert [i for i, _ in plain] == [near, middle]
    assert store.vector_search(alice, query, 2, NO_FILTER, toward=[hidden], weight=2.0) == plain
    assert store.vector_search(alice, query, 2, NO_FILTER, toward=[far], weight=0.0) == plain


def test_own_memories_are_not_starved_by_other_agents_vectors(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    query = vec("query")
    for i in range(60):
        put(store, bob, f"bob {i}", with_cosine(query, 0.8 + i * 0.001, f"b{i}"), dedup=2)
    mine = put(store, alice, "mine", with_cosine(query, 0.3, "mine"))
    assert store.vector_search(alice, query, 3, NO_FILTER)[0][0] == mine


def test_filters_apply_inside_the_vector_search(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    query = vec("query")
    for i in range(30):
        put(
            store,
            alice,
            f"noise {i}",
            with_cosine(query, 0.9 - i * 0.001, f"n{i}"),
            dedup=2,
            category=Category.FACT,
            subject="noise",
        )
    wanted = put(
        store,
        alice,
        "decision",
        with_cosine(query, 0.2, "d"),
        category=Category.DECISION,
        subject="Project X",
    )
    assert [
        i for i, _ in store.vector_search(alice, query, 2, MemoryFilter(category=Category.DECISION))
    ] == [wanted]
    assert [
        i for i, _ in store.vector_search(alice, query, 2, MemoryFilter(subject="project x"))
    ] == [wanted]


def test_since_filters_on_creation_time_in_both_arms(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    old = put(store, alice, "old trip to Rome", created_at="2023-01-01T00:00:00.000000Z")
    new = put(store, alice, "new trip to Rome", created_at="2025-01-01T00:00:00.000000Z")
    since = MemoryFilter(since="2024-01-01T00:00:00.000000Z")
    store.update_memory(old, alice, MemoryChanges(importance=5), text_key=None, vector=KEEP)
    assert store.text_search(alice, ["rome"], 10, since) == [new]
    assert [i for i, _ in store.vector_search(alice, vec("old trip to Rome"), 10, since)] == [new]
    memories, total = store.list_memories(alice, since, 10, 0)
    assert [m.id for m in memories] == [new] and total == 1


def test_list_scopes_and_pagination(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    mine = [put(store, alice, f"alice note {i}") for i in range(5)]
    bobs_shared = put(store, bob, "bob shared note", scope=Scope.SHARED)
    put(store, bob, "bob private note")
    page, total = store.list_memories(alice, NO_FILTER, 4, 0)
    assert total == 6 and len(page) == 4
    rest, _ = store.list_memories(alice, NO_FILTER, 4, 4)
    assert {m.id for m in page + rest} == {*mine, bobs_shared}
    shared, total = store.list_memories(alice, MemoryFilter(scope=Scope.SHARED), 10, 0)
    assert [m.id for m in shared] == [bobs_shared] and total == 1
    private, total = store.list_memories(alice, MemoryFilter(scope=Scope.PRIVATE), 10, 0)
    assert {m.id for m in private} == set(mine) and total == 5
    assert page[0].created_at >= page[-1].created_at


def test_count_memories_stops_at_its_bound(store: Store, agents: tuple[int, int]) -> None:
    """What the viewer may see, with the filters, counted up to ``at_most`` and no further."""
    alice, bob = agents
    for i in range(5):
        put(store, alice, f"alice note {i}", category=Category.PREFERENCE if i else Category.FACT)
    put(store, bob, "bob shared note", scope=Scope.SHARED)
    put(store, bob, "bob private note")
    assert store.count_memories(alice, NO_FILTER, 100) == 6
    assert store.count_memories(alice, NO_FILTER, 4) == 4
    assert store.count_memories(alice, NO_FILTER, 0) == 0
    assert store.count_memories(bob, NO_FILTER, 100) == 2
    assert store.count_memories(alice, MemoryFilter(scope=Scope.SHARED), 100) == 1
    assert store.count_memories(alice, MemoryFilter(category=Category.FACT), 100) == 2


def test_mark_retrieved_counts(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "counted")
    store.mark_retrieved([memory_id])
    store.mark_retrieved([memory_id])
    got = store.get_memory(memory_id, alice)
    assert got.retrieval_count == 2 and got.last_retrieved_at is not None


def test_text_search_with_stemming(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "She went running every morning")
    assert store.text_search(alice, ["runs"], 10, NO_FILTER) == [memory_id]


def test_own_text_matches_are_not_starved_by_other_agents_matches(
    store: Store, agents: tuple[int, int]
) -> None:
    """Many better-ranked private matches of another agent must not hide the viewer's own."""
    alice, bob = agents
    for i in range(150):  # short texts: bm25 ranks every one above alice's long one
        put(store, bob, f"wifi {i}", dedup=2)
    shared = put(store, bob, "wifi shared", dedup=2, scope=Scope.SHARED)
    mine = put(store, alice, "the office wifi password is on the whiteboard by the kitchen door")
    assert store.text_search(alice, ["wifi"], 1, NO_FILTER) == [shared]
    assert store.text_search(alice, ["wifi"], 3, NO_FILTER) == [shared, mine]
    assert store.text_search(alice, ["wifi"], 3, MemoryFilter(scope=Scope.PRIVATE)) == [mine]
    assert len(store.text_search(bob, ["wifi"], 200, NO_FILTER)) == 151


def test_text_filters_apply_beyond_the_top_ranked_matches(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    old = "2023-01-01T00:00:00.000000Z"
    for i in range(150):
        put(store, alice, f"rome {i}", dedup=2, subject="noise", created_at=old)
    wanted = put(
        store,
        alice,
        "we decided the team offsite goes to rome in the spring after the budget review",
        category=Category.DECISION,
        subject="Project X",
        created_at="2025-01-01T00:00:00.000000Z",
    )
    for filters in (
        MemoryFilter(category=Category.DECISION),
        MemoryFilter(subject="project x"),
        MemoryFilter(since="2024-01-01T00:00:00.000000Z"),
    ):
        assert store.text_search(alice, ["rome"], 2, filters) == [wanted]
    assert wanted not in store.text_search(alice, ["rome"], 100, NO_FILTER)


def test_text_rank_ties_come_newer_first_then_larger_id(
    store: Store, agents: tuple[int, int]
) -> None:
    """Equal bm25 rank (same length, same term count): newer first, then the later insert."""
    alice, _ = agents
    first = put(store, alice, "kiwi one", created_at="2023-01-01T00:00:00.000000Z")
    second = put(store, alice, "kiwi two", created_at="2025-01-01T00:00:00.000000Z")
    third = put(store, alice, "kiwi six", created_at="2025-01-01T00:00:00.000000Z")
    assert store.text_search(alice, ["kiwi"], 10, NO_FILTER) == [third, second, first]
    assert store.text_search(alice, ["kiwi"], 2, NO_FILTER) == [third, second]
    assert store.text_search(alice, ["kiwi"], 1, NO_FILTER) == [third]
    assert store.text_search(alice, ["kiwi"], 0, NO_FILTER) == []


def test_text_search_needs_every_term_or_with_any_term_one(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    both = put(store, alice, "A red bicycle in the garage")
    red = put(store, alice, "The red wine was excellent")
    bike = put(store, alice, "The bicycle shop opened downtown")
    assert store.text_search(alice, ["red", "bicycle"], 10, NO_FILTER) == [both]
    found = store.text_search(alice, ["red", "bicycle"], 10, NO_FILTER, any_term=True)
    assert found[0] == both and set(found) == {both, red, bike}
    assert set(store.text_search(alice, ["bicyc"], 10, NO_FILTER)) == {both, bike}  # prefixes
    assert store.text_search(alice, [], 10, NO_FILTER) == []


def test_any_term_search_ranks_common_terms_only_with_a_rare_one(
    store: Store, agents: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both engines: a term in more than COMMON_ROWS rows counts only together with a rare one;
    with no rare term, every term is required."""
    from hivekeep.store.postgres import fulltext as postgres_fulltext
    from hivekeep.store.sqlite import fulltext as sqlite_fulltext

    alice, _ = agents
    texts = ["red car parked", "red bike in the shed", "red door", "old car sold", "car wash"]
    ids = {text: put(store, alice, text) for text in [*texts, "ferry timetable for Lisbon"]}
    ferry = ids["ferry timetable for Lisbon"]
    everything = store.text_search(alice, ["red", "ferry"], 10, NO_FILTER, any_term=True)
    assert len(everything) == 4
    for module in (sqlite_fulltext, postgres_fulltext):
        monkeypatch.setattr(module, "COMMON_ROWS", 2)  # "red" and "car" (3 rows) are common
    assert store.text_search(alice, ["red", "ferry"], 10, NO_FILTER, any_term=True) == [ferry]
    both = store.text_search(alice, ["red", "car"], 10, NO_FILTER, any_term=True)
    assert both == [ids["red car parked"]]


@pytest.mark.parametrize("common_rows", [2000, 2])
def test_text_search_filled_is_the_search_then_its_fill(
    store: Store, agents: tuple[int, int], monkeypatch: pytest.MonkeyPatch, common_rows: int
) -> None:
    """Recall's pair of searches in one call: the same lists as the two calls, and no fill when
    every term found ``k`` rows or there is one term (with common terms too: COMMON_ROWS 2)."""
    from hivekeep.store.postgres import fulltext as postgres_fulltext
    from hivekeep.store.sqlite import fulltext as sqlite_fulltext

    alice, _ = agents
    texts = ["red car parked", "red bike in the shed", "red door", "old car sold", "car wash"]
    for text in [*texts, "ferry timetable for Lisbon", "red ferry"]:
        put(store, alice, text)
    for module in (sqlite_fulltext, postgres_fulltext):
        monkeypatch.setattr(module, "COMMON_ROWS", common_rows)
    for terms, k in [
        (["red", "ferry"], 10),
        (["red", "car"], 10),
        (["red", "car"], 1),
        (["red"], 10),
        (["ferry", "wash", "nothing"], 3),
    ]:
        every = store.text_search(alice, terms, k, NO_FILTER)
        fill = store.text_search(alice, terms, k, NO_FILTER, any_term=True)
        wanted = (every, fill if len(every) < k and len(terms) > 1 else [])
        assert store.text_search_filled(alice, terms, k, NO_FILTER) == wanted, terms


def test_text_search_terms_are_never_query_syntax(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "Notes about AND, OR and NEAR (the operators)")
    hostile = ['"', "'", "*", "(", ")", "NEAR(", "a:b", "!", "&", "|", "<->", "\\", "x'y\"z", "^"]
    for term in hostile:  # never an error; a term without a letter or digit is ignored
        assert store.text_search(alice, [term, "notes"], 10, NO_FILTER) in ([], [memory_id])
        store.text_search(alice, [term, "notes"], 10, NO_FILTER, any_term=True)
    assert store.text_search(alice, ["!", "notes"], 10, NO_FILTER) == [memory_id]
    assert store.text_search(alice, ["and", "or", "near"], 10, NO_FILTER) == [memory_id]
    assert store.text_search(alice, ["operators)"], 10, NO_FILTER) == [memory_id]
    with pytest.raises(TypeError):
        store.text_search(alice, "notes", 10, NO_FILTER)  # one string is not a list of words


# embedding space --------------------------------------------------------------------------------
def test_reset_embedding_space_drops_vectors_and_marks_pending(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    put(store, alice, "one")
    put(store, alice, "two")
    assert store.reset_embedding_space(EmbeddingSpace("test:other", 4)) == 2
    assert store.embedding_space() == EmbeddingSpace("test:other", 4)
    assert store.count_pending() == 2
    assert store.vector_search(alice, np.ones(4) / 2, 10, NO_FILTER) == []


# profiles -------------------------------------------------------------------------------------
def test_profile_compare_and_swap(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    first = store.save_profile(alice, "## A\nx\n", 4, expected_revision=0, manual=True)
    assert first.revision == 1 and first.manually_edited_at is not None
    second = store.save_profile(alice, "## A\ny\n", 4, expected_revision=1, manual=False)
    assert second.revision == 2 and second.last_rewrite_at is not None
    with pytest.raises(ConflictError, match="revision"):
        store.save_profile(alice, "## A\nstale\n", 4, expected_revision=1, manual=False)
    assert store.get_profile(alice).text == "## A\ny\n"


def test_modify_profile_writes_nothing_when_the_text_stays_the_same(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    store.modify_profile(alice, lambda current: ("## A\n- one\n", 4), manual=True)
    before = store.get_profile(alice)
    same = store.modify_profile(alice, lambda current: (current.text, 99), manual=False)
    assert same == before and store.get_profile(alice) == before
    assert [v.version for v in store.profile_history(alice)] == [1, 0]


def test_modify_profile_reads_changes_and_writes_in_one_step(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    seen: list[int] = []

    def append(line: str) -> Callable[[ProfileRecord], tuple[str, int]]:
        def change(current: ProfileRecord) -> tuple[str, int]:
            seen.append(current.revision)
            text = current.text + line + "\n"
            return text, len(text)

        return change

    first = store.modify_profile(alice, append("- one"), manual=True)
    assert (first.text, first.tokens, first.revision) == ("- one\n", 6, 1)
    assert first.manually_edited_at is not None

    def refuse(current: ProfileRecord) -> tuple[str, int]:
        raise ValidationError("over budget")

    with pytest.raises(ValidationError):
        store.modify_profile(alice, refuse, manual=True)
    assert store.get_profile(alice).revision == 1  # nothing written
    with pytest.raises(NotFound):
        store.modify_profile(999, append("x"), manual=True)

    lines = [f"- t{t}n{n}" for t in range(4) for n in range(10)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda line: store.modify_profile(alice, append(line), manual=True), lines))
    final = store.get_profile(alice)
    assert final.revision == 1 + len(lines)  # no edit lost, none retried
    assert all(f"{line}\n" in final.text for line in lines)
    assert sorted(seen[1:]) == list(range(1, 1 + len(lines)))  # each saw the previous write


# agents: rename and delete --------------------------------------------------------------------
def test_update_agent_renames_and_changes_role(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    memory_id = put(store, alice, "alice shares this", scope=Scope.SHARED)
    renamed = store.update_agent(alice, name="Alicia", role="researcher")
    assert (renamed.id, renamed.name, renamed.role) == (alice, "Alicia", "researcher")
    assert store.get_agent("alicia") == renamed
    with pytest.raises(NotFound):
        store.get_agent("alice")
    assert store.get_memory(memory_id, bob).author_name == "Alicia"
    kept = store.update_agent(alice, role="writer")
    assert (kept.name, kept.role) == ("Alicia", "writer")
    assert store.update_agent(alice, name="ALICIA").name == "ALICIA"  # its own name, recased


def test_update_agent_refuses_a_taken_name_and_a_missing_agent(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    with pytest.raises(ConflictError, match=r"(?i)bob"):
        store.update_agent(alice, name="BOB")
    assert store.get_agent(alice).name == "alice"
    with pytest.raises(NotFound):
        store.update_agent(999, role="x")


def test_delete_agent_removes_its_profile_and_private_memories_everywhere(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    private = put(store, alice, "alice private kiwi", vec("a1"))
    kept = put(store, bob, "bob kiwi", vec("b1"))
    store.save_profile(alice, "## A\nx\n", 4, expected_revision=0, manual=True)
    store.delete_agent(alice)
    with pytest.raises(NotFound):
        store.get_agent(alice)
    with pytest.raises(NotFound):
        store.get_profile(alice)
    assert store.fetch_memories(alice, [private]) == {}
    assert store.fetch_memories(bob, [private]) == {}
    assert store.text_search(bob, ["kiwi"], 10, NO_FILTER) == [kept]
    assert [i for i, _ in store.vector_search(bob, vec("a1"), 10, NO_FILTER)] == [kept]
    assert store.vectors(bob, [private, kept]).keys() == {kept}
    with pytest.raises(NotFound):
        store.delete_agent(alice)


def test_delete_agent_keeps_its_shared_memories_for_every_agent(
    store: Store, agents: tuple[int, int]
) -> None:
    """SPEC 4.3: shared memories outlive their author, attributed to its name, owned by nobody."""
    alice, bob = agents
    put(store, alice, "alice private kiwi", vec("a1"))
    shared = put(store, alice, "alice shared kiwi", vec("a2"), scope=Scope.SHARED)
    put(store, bob, "bob kiwi", vec("b1"))
    store.create_conversation(alice, "doomed")
    assert store.agent_footprint(alice) == AgentFootprint(1, 1, 1)
    assert store.delete_agent(alice) == AgentFootprint(
        private_memories=1, shared_memories=1, conversations=1
    )
    kept = store.get_memory(shared, bob)
    assert (kept.agent_id, kept.author_name, kept.author_deleted) == (None, "alice", True)
    assert kept.embedding_state is EmbeddingState.READY
    assert store.fetch_memories(bob, [shared]) == {shared: kept}
    assert shared in store.text_search(bob, ["kiwi"], 10, NO_FILTER)
    assert store.vector_search(bob, vec("a2"), 1, NO_FILTER)[0][0] == shared
    assert store.vectors(bob, [shared]).keys() == {shared}
    listed, total = store.list_memories(bob, MemoryFilter(scope=Scope.SHARED), 10, 0)
    assert (listed, total) == ([kept], 1)
    assert shared in [m.id for m in store.list_memories(bob, NO_FILTER, 10, 0)[0]]
    assert store.list_memories(bob, MemoryFilter(scope=Scope.PRIVATE), 10, 0)[1] == 1
    carol = store.create_agent("carol", "").id  # an agent made later sees it too
    assert store.get_memory(shared, carol) == kept
    assert [m.id for m, _ in store.memories_with_vectors(None)] == [
        shared,
        *[m.id for m, _ in store.memories_with_vectors(bob)],
    ]


def test_a_new_agent_with_a_deleted_agents_name_does_not_own_its_shared_memories(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    shared = put(store, alice, "alice shared kiwi", vec("a2"), scope=Scope.SHARED)
    store.delete_agent(alice)
    again = store.create_agent("Alice", "").id
    assert again != alice
    for agent in (again, bob):
        with pytest.raises(NotFound):
            store.update_memory(
                shared, agent, MemoryChanges(content="taken over"), text_key=None, vector=KEEP
            )
        with pytest.raises(NotFound):
            store.delete_memory(shared, agent)
    assert store.list_memories(again, MemoryFilter(scope=Scope.PRIVATE), 10, 0) == ([], 0)
    store.update_agent(again, name="Alicia")  # a rename follows owned memories only
    assert store.get_memory(shared, bob).author_name == "alice"
    assert store.delete_agent(again) == AgentFootprint(0, 0, 0)
    assert store.get_memory(shared, bob).content == "alice shared kiwi"


def test_a_person_may_change_or_forget_shared_memories_but_no_private_one(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    orphan = put(store, alice, "alice shared kiwi", vec("a2"), scope=Scope.SHARED)
    bobs = put(store, bob, "bob shared kiwi", vec("b2"), scope=Scope.SHARED)
    private = put(store, bob, "bob private kiwi", vec("b1"))
    store.delete_agent(alice)
    with pytest.raises(NotFound):
        store.get_memory(private, PERSON)
    with pytest.raises(NotFound):
        store.delete_memory(private, PERSON)
    changed = store.update_memory(
        orphan, PERSON, MemoryChanges(importance=7), text_key=None, vector=KEEP
    )
    assert (changed.importance, changed.author_name, changed.author_deleted) == (7, "alice", True)
    store.delete_memory(orphan, PERSON)
    store.delete_memory(bobs, PERSON)
    assert store.fetch_memories(bob, [orphan, bobs, private]).keys() == {private}
    assert store.vector_search(bob, vec("a2"), 10, NO_FILTER)[0][0] == private


def test_a_deleted_authors_shared_memory_can_be_restored(
    store: Store, agents: tuple[int, int]
) -> None:
    """What an import does: a shared memory owned by nobody, under the deleted author's name,
    deduplicated against the shared memories."""
    _, bob = agents
    memory = NewMemory(
        agent_id=PERSON,
        author_name="dora",
        content="dora shared kiwi",
        category=Category.FACT,
        scope=Scope.SHARED,
        created_at="2024-01-02T03:04:05.000006Z",
    )
    record, duplicate = insert_one(
        store, memory, vec("d1"), text_key="dora shared kiwi", dedup_threshold=0.9
    )
    assert not duplicate
    assert (record.agent_id, record.author_name, record.author_deleted) == (None, "dora", True)
    assert record.created_at == "2024-01-02T03:04:05.000006Z"
    assert store.get_memory(record.id, bob) == record
    again, duplicate = insert_one(
        store, memory, vec("d1"), text_key="dora shared kiwi", dedup_threshold=0.9
    )
    assert (again.id, duplicate) == (record.id, True)
    with pytest.raises(ValidationError, match="shared"):
        insert_one(
            store,
            dataclasses.replace(memory, scope=Scope.PRIVATE, content="other"),
            vec("d2"),
            text_key="other",
            dedup_threshold=0.9,
        )


def test_own_filter_lists_only_the_viewers_memories(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    mine = {
        put(store, alice, "alice private note"),
        put(store, alice, "alice shared note", scope=Scope.SHARED),
    }
    put(store, bob, "bob shared note", scope=Scope.SHARED)
    put(store, bob, "bob private note")
    records, total = store.list_memories(alice, MemoryFilter(own=True), 10, 0)
    assert {r.id for r in records} == mine and total == 2
    assert store.list_memories(alice, NO_FILTER, 10, 0)[1] == 3  # bob's shared one is visible


def test_data_version_moves_on_another_connections_commit_only(store: Store) -> None:
    """What a server polls to push other processes' writes: SQLite's data_version moves when
    another connection commits, not on the store's own writes; PostgreSQL relays events instead
    and answers None."""
    from hivekeep.store.sqlite import SQLiteStore

    before = store.data_version()
    if not isinstance(store, SQLiteStore):
        assert before is None
        return
    store.create_agent("alice", "written by this store")
    assert store.data_version() == before
    other = SQLiteStore(store.path, vector_cache=False)
    try:
        other.create_agent("bob", "written by another connection")
    finally:
        other.close()
    assert store.data_version() not in (None, before)
