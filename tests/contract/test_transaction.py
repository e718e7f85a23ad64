"""The storage contract for ``Store.transaction``: several calls as one transaction, any backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hivekeep.errors import ConflictError
from hivekeep.store.base import MemoryFilter, NewMemory, Store
from hivekeep.store.conversations import RestoredConversation
from hivekeep.store.postgres import PostgresStore
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.types import Category
from tests.contract.conftest import DIMENSION
from tests.support import insert_one, random_unit

STAMP = "2024-05-01T10:00:00.000000Z"


class Boom(Exception):
    pass


@pytest.fixture
def other(store: Store) -> Iterator[Store]:
    """A second store on the same hive: what another process would see."""
    if isinstance(store, SQLiteStore):
        second: Store = SQLiteStore(store.path)
    else:
        assert isinstance(store, PostgresStore)
        second = PostgresStore(store.url)
    try:
        yield second
    finally:
        second.close()


def _memory(store: Store, agent_id: int, content: str) -> int:
    record, duplicate = insert_one(
        store,
        NewMemory(agent_id=agent_id, content=content, category=Category.FACT),
        random_unit(content, DIMENSION),
        text_key=content.lower(),
        dedup_threshold=0.9,
    )
    assert not duplicate
    return record.id


def _writes(store: Store, name: str) -> int:
    """An agent, a memory, a profile and a conversation: the kinds of write an import makes."""
    agent = store.create_agent(name, "")
    _memory(store, agent.id, f"{name} keeps bees on the roof")
    store.save_profile(agent.id, f"# {name}", 2, expected_revision=0, manual=True)
    store.restore_conversation(agent.id, RestoredConversation("chat", STAMP, STAMP))
    return agent.id


def _count(store: Store, name: str) -> int:
    """How many of ``_writes``' rows for ``name`` are visible (0 or 4)."""
    agent = next((a for a in store.list_agents() if a.name == name), None)
    if agent is None:
        return 0
    _, memories = store.list_memories(agent.id, MemoryFilter(), 10, 0)
    profile = 1 if store.get_profile(agent.id).text else 0
    return 1 + memories + profile + len(store.list_conversations(agent.id))


def test_writes_in_a_transaction_commit_together(store: Store, other: Store) -> None:
    with store.transaction():
        agent_id = _writes(store, "alice")
        assert _count(store, "alice") == 4  # the block reads its own writes
        assert store.get_agent(agent_id).name == "alice"
        assert _count(other, "alice") == 0  # nobody else sees them before the commit
    assert _count(store, "alice") == 4
    assert _count(other, "alice") == 4


def test_a_raise_in_a_transaction_writes_nothing(store: Store, other: Store) -> None:
    with pytest.raises(Boom), store.transaction():
        _writes(store, "alice")
        raise Boom
    assert _count(store, "alice") == 0
    assert _count(other, "alice") == 0
    assert store.list_agents() == []
    store.create_agent("alice", "")  # the name is free: nothing of the block is left


def test_a_nested_transaction_that_raises_undoes_only_its_own_writes(store: Store) -> None:
    with store.transaction():
        _writes(store, "alice")
        with pytest.raises(Boom), store.transaction():
            _writes(store, "bob")
            raise Boom
        assert _count(store, "bob") == 0
    assert _count(store, "alice") == 4
    assert _count(store, "bob") == 0


def test_a_method_that_fails_inside_leaves_the_transaction_usable(store: Store) -> None:
    with store.transaction():
        store.create_agent("alice", "")
        with pytest.raises(ConflictError):
            store.create_agent("alice", "")
        _writes(store, "bob")
    assert [a.name for a in store.list_agents()] == ["alice", "bob"]
    assert _count(store, "bob") == 4


def test_other_threads_are_not_part_of_the_transaction(store: Store, other: Store) -> None:
    """The rollback of one thread's block leaves a write another thread made meanwhile."""
    import threading

    if isinstance(store, SQLiteStore):
        pytest.skip("one SQLite connection: other threads wait for the block instead")
    with pytest.raises(Boom), store.transaction():
        _writes(store, "alice")
        worker = threading.Thread(target=lambda: store.create_agent("bob", ""))
        worker.start()
        worker.join(10)
        raise Boom
    assert [a.name for a in store.list_agents()] == ["bob"]
    assert [a.name for a in other.list_agents()] == ["bob"]
