"""The history contract: versions, the trash, restore, retention and purge, on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from hivekeep.core.text import now_timestamp
from hivekeep.errors import ConflictError, NotFound
from hivekeep.store.base import (
    KEEP,
    PERSON,
    Change,
    MemoryChanges,
    MemoryFilter,
    Store,
)
from hivekeep.store.postgres import PostgresStore
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.types import Actor, Category, Operation, Scope
from tests.contract.test_store import put, vec

NO_FILTER = MemoryFilter()
BY_PERSON = Change(Actor.PERSON, Operation.UPDATE)


@pytest.fixture
def agents(store: Store) -> tuple[int, int]:
    return store.create_agent("alice", "").id, store.create_agent("bob", "").id


def _update(store: Store, memory_id: int, owner: int, content: str, **kwargs: Any) -> None:
    store.update_memory(
        memory_id,
        owner,
        MemoryChanges(content=content),
        text_key=content.lower(),
        vector=vec(content),
        **kwargs,
    )


# versions -------------------------------------------------------------------------------------
def test_a_new_memory_has_one_version_as_created(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "tea at five")
    [first] = store.memory_history(memory_id, alice)
    assert (first.version, first.content, first.operation, first.changed_by) == (
        1,
        "tea at five",
        Operation.CREATE,
        Actor.AGENT,
    )


def test_every_change_records_a_version_newest_first(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "standup at 10am", subject="work")
    _update(store, memory_id, alice, "standup at 11am")
    store.update_memory(
        memory_id,
        alice,
        MemoryChanges(category=Category.DECISION, importance=7, scope=Scope.SHARED),
        text_key=None,
        vector=KEEP,
        written=Change(Actor.MAINTENANCE, Operation.UPDATE),
    )
    versions = store.memory_history(memory_id, alice)
    assert [v.version for v in versions] == [3, 2, 1]
    assert [v.content for v in versions] == [
        "standup at 11am",
        "standup at 11am",
        "standup at 10am",
    ]
    assert versions[0].category is Category.DECISION and versions[0].importance == 7
    assert versions[0].scope is Scope.SHARED and versions[0].changed_by is Actor.MAINTENANCE
    assert versions[1].changed_by is Actor.AGENT and versions[1].operation is Operation.UPDATE
    assert versions[2].subject == "work" and versions[2].scope is Scope.PRIVATE
    assert versions[0].changed_at >= versions[1].changed_at >= versions[2].changed_at


def test_history_follows_visibility(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    private = put(store, alice, "alice's secret")
    shared = put(store, alice, "office wifi is hive42", scope=Scope.SHARED)
    with pytest.raises(NotFound, match="visible to this agent or in its trash"):
        store.memory_history(private, bob)  # not "not in this agent's trash" alone
    with pytest.raises(NotFound, match="No memory with id 999 is visible"):
        store.memory_history(999, bob)
    assert store.memory_history(shared, bob)[0].content == "office wifi is hive42"


def test_history_keeps_the_newest_versions_up_to_the_limit(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    store.history_limit = 5  # type: ignore[attr-defined]  # both backends read it per write
    memory_id = put(store, alice, "v1")
    for n in range(2, 10):
        _update(store, memory_id, alice, f"v{n}")
    versions = store.memory_history(memory_id, alice)
    assert [v.version for v in versions] == [9, 8, 7, 6, 5]
    assert versions[0].content == "v9"


def test_a_failed_update_records_no_version(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    memory_id = put(store, alice, "only alice writes this", scope=Scope.SHARED)
    with pytest.raises(NotFound):
        _update(store, memory_id, bob, "bob's rewrite")
    assert len(store.memory_history(memory_id, alice)) == 1


# the trash ------------------------------------------------------------------------------------
def test_forget_moves_to_the_trash_out_of_every_read(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "zanzibar holiday in june", vector=vec("z"))
    store.delete_memory(memory_id, alice)
    with pytest.raises(NotFound):
        store.get_memory(memory_id, alice)
    assert store.fetch_memories(alice, [memory_id]) == {}
    assert store.list_memories(alice, NO_FILTER, 10, 0) == ([], 0)
    assert store.text_search(alice, ["zanzibar"], 10, NO_FILTER) == []
    assert store.vector_search(alice, vec("z"), 10, NO_FILTER) == []
    assert store.vectors(alice, [memory_id]) == {}
    assert store.memories_with_vectors(None) == []
    [trashed], total = store.list_trash(alice, 10, 0)
    assert total == 1 and trashed.memory.id == memory_id and trashed.deleted_by is Actor.AGENT
    assert store.memory_history(memory_id, alice)[0].operation is Operation.FORGET


def test_a_trashed_memory_is_no_duplicate(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "same words", vector=vec("same"))
    store.delete_memory(memory_id, alice)
    again = put(store, alice, "same words", vector=vec("same"))  # put asserts: not a duplicate
    assert again != memory_id


def test_restore_brings_back_id_vector_and_full_text(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    memory_id = put(store, alice, "zanzibar holiday in june", vector=vec("z"))
    store.delete_memory(memory_id, alice)
    with pytest.raises(NotFound):
        store.restore_memory(memory_id, bob, by=Actor.PERSON)
    restored = store.restore_memory(memory_id, alice, by=Actor.PERSON)
    assert restored.id == memory_id and restored.content == "zanzibar holiday in june"
    assert store.text_search(alice, ["zanzibar"], 10, NO_FILTER) == [memory_id]
    [(hit, score)] = store.vector_search(alice, vec("z"), 1, NO_FILTER)
    assert hit == memory_id and score == pytest.approx(1.0, abs=1e-5)
    assert store.list_trash(alice, 10, 0) == ([], 0)
    ops = [v.operation for v in store.memory_history(memory_id, alice)]
    assert ops == [Operation.RESTORE, Operation.FORGET, Operation.CREATE]
    with pytest.raises(NotFound):
        store.restore_memory(memory_id, alice, by=Actor.PERSON)  # no longer in the trash


def test_a_person_trashes_and_restores_shared_memories(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    shared = put(store, alice, "the team meets on mondays", scope=Scope.SHARED)
    private = put(store, alice, "alice only", scope=Scope.PRIVATE)
    with pytest.raises(NotFound):
        store.delete_memory(private, PERSON, by=Actor.PERSON)
    store.delete_memory(shared, PERSON, by=Actor.PERSON)
    [trashed], _ = store.list_trash(PERSON, 10, 0)
    assert trashed.memory.id == shared and trashed.deleted_by is Actor.PERSON
    assert store.list_trash(bob, 10, 0) == ([], 0)
    assert store.memory_history(shared, PERSON)[0].changed_by is Actor.PERSON
    assert store.restore_memory(shared, PERSON, by=Actor.PERSON).id == shared
    assert store.get_memory(shared, bob).content == "the team meets on mondays"


def test_deleting_an_agent_erases_its_private_trash_and_keeps_shared(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    private = put(store, alice, "alice private trashed")
    shared = put(store, alice, "alice shared trashed", scope=Scope.SHARED)
    store.delete_memory(private, alice)
    store.delete_memory(shared, alice)
    store.delete_agent(alice)
    assert store.erase_memory(private) is False  # nothing left to erase
    assert store.pending_scrubs() == []
    [trashed], _ = store.list_trash(PERSON, 10, 0)
    assert trashed.memory.id == shared and trashed.memory.author_deleted
    assert store.restore_memory(shared, PERSON, by=Actor.PERSON).author_name == "alice"


# retention and purge --------------------------------------------------------------------------
def test_retention_purges_what_was_trashed_before_the_cutoff(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "old news")
    store.delete_memory(memory_id, alice)
    assert store.purge_trash("2000-01-01T00:00:00.000000Z") == 0
    assert store.list_trash(alice, 10, 0)[1] == 1
    assert store.purge_trash(now_timestamp()) == 1
    assert store.list_trash(alice, 10, 0) == ([], 0)
    with pytest.raises(NotFound):
        store.memory_history(memory_id, alice)


def test_purge_erases_a_live_memory_and_its_history(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "my pin is 4412", vector=vec("pin"))
    _update(store, memory_id, alice, "my pin is 9931")
    assert purge(store, memory_id) is True
    assert store.text_search(alice, ["4412"], 10, NO_FILTER) == []
    assert store.text_search(alice, ["9931"], 10, NO_FILTER) == []
    assert store.vector_search(alice, vec("my pin is 9931"), 10, NO_FILTER) == []
    with pytest.raises(NotFound):
        store.memory_history(memory_id, alice)
    assert purge(store, memory_id) is False


def test_purge_erases_a_trashed_memory(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "trashed then purged")
    store.delete_memory(memory_id, alice)
    assert purge(store, memory_id) is True
    assert store.list_trash(alice, 10, 0) == ([], 0)
    with pytest.raises(NotFound):
        store.restore_memory(memory_id, alice, by=Actor.PERSON)


def purge(store: Store, memory_id: int) -> bool:
    """A whole purge, as ``HistoryService.purge`` runs it: erase, then scrub."""
    erased = store.erase_memory(memory_id)
    assert store.pending_scrubs() == ([memory_id] if erased else [])
    assert store.finish_scrubs() == ([memory_id] if erased else [])
    assert store.pending_scrubs() == [] and store.finish_scrubs() == []
    return erased


def reopen(store: Store) -> Store:
    """A second store on the same database: another process, or the next open after a crash."""
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    assert isinstance(store, PostgresStore)
    return PostgresStore(store.url)


def test_an_erase_without_its_scrub_stays_pending_for_the_next_open(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    first, second = put(store, alice, "first secret"), put(store, alice, "second secret")
    store.delete_memory(second, alice)
    assert store.erase_memory(first) and store.erase_memory(second)  # then the process dies
    assert store.erase_memory(first) is False  # erased already: only its scrub is left
    later = reopen(store)
    try:
        assert later.pending_scrubs() == [first, second]
        assert later.finish_scrubs() == [first, second]
        assert later.pending_scrubs() == [] and store.pending_scrubs() == []
        assert later.finish_scrubs() == []
    finally:
        later.close()


def test_the_pending_scrub_is_recorded_in_the_erase_transaction(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "kept after all")
    with pytest.raises(RuntimeError), store.transaction():
        assert store.erase_memory(memory_id)
        assert store.pending_scrubs() == [memory_id]
        raise RuntimeError("the purge's transaction fails")
    assert store.pending_scrubs() == []
    assert [v.content for v in store.memory_history(memory_id, alice)] == ["kept after all"]


def test_retention_records_and_finishes_its_scrub(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    memory_id = put(store, alice, "expired")
    store.delete_memory(memory_id, alice)
    assert store.purge_trash(now_timestamp()) == 1
    assert store.pending_scrubs() == []


# profiles -------------------------------------------------------------------------------------
def test_profile_versions_record_every_write(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    [created] = store.profile_history(alice)
    assert (created.version, created.text, created.operation) == (0, "", Operation.CREATE)
    store.save_profile(
        alice,
        "## A\n- one\n",
        3,
        expected_revision=0,
        manual=True,
        written=Change(Actor.PERSON, Operation.SET),
    )
    store.modify_profile(
        alice,
        lambda current: (current.text + "- two\n", 5),
        manual=False,
        written=Change(Actor.MAINTENANCE, Operation.REWRITE),
    )
    versions = store.profile_history(alice)
    assert [v.version for v in versions] == [2, 1, 0]
    assert [v.text for v in versions] == ["## A\n- one\n- two\n", "## A\n- one\n", ""]
    assert [v.changed_by for v in versions] == [Actor.MAINTENANCE, Actor.PERSON, Actor.PERSON]
    assert versions[0].operation is Operation.REWRITE and versions[0].tokens == 5


def test_a_lost_compare_and_swap_records_no_profile_version(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    store.save_profile(alice, "first", 1, expected_revision=0, manual=True)
    with pytest.raises(ConflictError):
        store.save_profile(alice, "stale", 1, expected_revision=0, manual=True)
    assert [v.text for v in store.profile_history(alice)] == ["first", ""]


def test_profile_history_is_bounded_and_goes_with_the_agent(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    store.history_limit = 3  # type: ignore[attr-defined]
    for n in range(6):
        store.save_profile(alice, f"text {n}", 2, expected_revision=n, manual=True)
    assert [v.version for v in store.profile_history(alice)] == [6, 5, 4]
    store.delete_agent(alice)
    with pytest.raises(NotFound):
        store.profile_history(alice)


def test_dropping_versions_deletes_just_those_and_never_the_current_profile(
    store: Store, agents: tuple[int, int]
) -> None:
    """A credential scrub (``hivekeep secrets scan --purge-versions``) on every backend."""
    alice, bob = agents
    memory_id = put(store, alice, "first")
    _update(store, memory_id, alice, "second")
    _update(store, memory_id, alice, "third")
    assert [v.version for v in store.memory_history(memory_id, alice)] == [3, 2, 1]
    assert store.drop_memory_versions(memory_id, [2, 99]) == 1
    assert [v.content for v in store.memory_history(memory_id, alice)] == ["third", "first"]
    for revision, text in enumerate(["## A\n- one\n", "## A\n- two\n"]):
        store.save_profile(
            alice, text, 5, expected_revision=revision, manual=True, written=BY_PERSON
        )
    assert store.get_profile(alice).revision == 2
    before = [v.version for v in store.profile_history(alice)]
    assert before[:2] == [2, 1]
    assert store.drop_profile_versions(alice, [2]) == 0  # the current one stays
    assert store.drop_profile_versions(alice, [1]) == 1
    assert [v.version for v in store.profile_history(alice)] == [2, *before[2:]]
    assert store.get_profile(alice).text == "## A\n- two\n"
    assert store.drop_profile_versions(bob, [1, 2]) == 0  # another agent's are its own
