"""The storage contract for export and import: restoring memories and conversations as they were.

Tested through the ``Store`` protocol only (no SQL), so every backend in ``BACKENDS`` must pass:
``insert_memories`` with an import's fields, ``memories_with_vectors``, ``list_summaries`` and
``restore_conversation``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from hivekeep.errors import NotFound, ValidationError
from hivekeep.store.base import MemoryFilter, MemoryWrite, NewMemory, Store, Vector
from hivekeep.store.conversations import (
    NewMessage,
    NewSummary,
    RestoredConversation,
    RestoredMessage,
    RestoredSummary,
    ToolCallRecord,
)
from hivekeep.types import Category, EmbeddingState, Scope, Source
from tests.contract.conftest import DIMENSION
from tests.support import insert_pairs, random_unit

T0 = "2023-01-02T03:04:05.000006Z"
T1 = "2023-01-02T03:05:00.000000Z"
T2 = "2023-01-03T00:00:00.000000Z"
EVERYTHING = 10**6
NO_FILTER = MemoryFilter()


def vec(seed: str) -> np.ndarray:
    return random_unit(seed, DIMENSION)


def insert(
    store: Store, agent_id: int, content: str, vector: Vector | str | None = "auto", **fields: Any
) -> int:
    """Insert one memory (by default with a vector seeded by its text) and return its id."""
    memory = NewMemory(agent_id=agent_id, content=content, category=Category.FACT, **fields)
    chosen = vec(content) if isinstance(vector, str) else vector
    [(record, duplicate)] = insert_pairs(
        store, [MemoryWrite(memory, chosen, content.lower())], 0.99
    )
    assert not duplicate
    return record.id


@pytest.fixture
def alice(store: Store) -> int:
    return store.create_agent("alice", "").id


@pytest.fixture
def bob(store: Store) -> int:
    return store.create_agent("bob", "").id


# insert_memories with an import's fields ------------------------------------------------------
def test_an_imported_memory_keeps_its_dates_counts_and_vector(store: Store, alice: int) -> None:
    vector = vec("kept")
    memory_id = insert(
        store,
        alice,
        "The user moved to Lisbon.",
        vector,
        subject="user",
        importance=8,
        scope=Scope.SHARED,
        source=Source.AUTOMATIC,
        source_context="chat of May",
        created_at=T0,
        updated_at=T1,
        retrieval_count=4,
        last_retrieved_at=T2,
    )
    record = store.get_memory(memory_id, alice)
    assert (record.created_at, record.updated_at, record.last_retrieved_at) == (T0, T1, T2)
    assert (record.retrieval_count, record.source, record.source_context) == (
        4,
        Source.AUTOMATIC,
        "chat of May",
    )
    assert record.embedding_state is EmbeddingState.READY
    np.testing.assert_allclose(store.vectors(alice, [memory_id])[memory_id], vector, atol=1e-6)
    assert store.vector_search(alice, vector, 1, NO_FILTER)[0][0] == memory_id


def test_new_memories_still_default_to_now_and_zero_retrievals(store: Store, alice: int) -> None:
    record = store.get_memory(insert(store, alice, "plain"), alice)
    assert record.retrieval_count == 0 and record.last_retrieved_at is None
    assert record.updated_at == record.created_at


# memories_with_vectors ----------------------------------------------------------------------------
def test_memories_with_vectors_pages_by_id_per_author_or_for_everyone(
    store: Store, alice: int, bob: int
) -> None:
    a1 = insert(store, alice, "a1")
    b1 = insert(store, bob, "b1 shared", scope=Scope.SHARED)
    a2 = insert(store, alice, "a2 shared", scope=Scope.SHARED)
    a3 = insert(store, alice, "a3 pending", None)
    b2 = insert(store, bob, "b2")

    everything = store.memories_with_vectors(None, limit=EVERYTHING)
    assert [m.id for m, _ in everything] == [a1, b1, a2, a3, b2]
    assert [m.id for m, _ in store.memories_with_vectors(alice, limit=EVERYTHING)] == [a1, a2, a3]
    assert [m.id for m, _ in store.memories_with_vectors(bob)] == [b1, b2]

    first = store.memories_with_vectors(alice, limit=2)
    assert [m.id for m, _ in first] == [a1, a2]
    rest = store.memories_with_vectors(alice, after_id=first[-1][0].id, limit=2)
    assert [m.id for m, _ in rest] == [a3]
    assert store.memories_with_vectors(alice, after_id=a3) == []

    vectors = {m.content: v for m, v in everything}
    assert vectors["a3 pending"] is None
    for content in ("a1", "b1 shared", "a2 shared", "b2"):
        vector = vectors[content]
        assert vector is not None and vector.dtype == np.float32
        np.testing.assert_allclose(vector, vec(content), atol=1e-6)


def test_memories_with_vectors_of_an_agent_without_memories_is_empty(
    store: Store, alice: int
) -> None:
    assert store.memories_with_vectors(alice) == []
    assert store.memories_with_vectors(None) == []


# list_summaries ---------------------------------------------------------------------------------
def test_list_summaries_includes_merged_away_ones(store: Store, alice: int) -> None:
    conv = store.create_conversation(alice, "t").id
    messages = store.add_messages(conv, [NewMessage("user", str(i), 1) for i in range(4)])
    folded = []
    for pair in (messages[:2], messages[2:]):
        summary = NewSummary(
            "s", 1, pair[0].created_at, pair[-1].created_at, 2, pair[0].id, pair[-1].id
        )
        folded.append(store.fold(conv, summary, [m.id for m in pair]))
    sources = tuple(s.id for s in folded)
    both = NewSummary(
        "both", 1, folded[0].first_at, folded[1].last_at, 4, depth=1, source_ids=sources
    )
    merged = store.merge(conv, both, sources)
    listed = store.list_summaries(conv)
    assert [s.id for s in listed] == [folded[0].id, folded[1].id, merged.id]
    assert [s.in_context for s in listed] == [False, False, True]
    assert listed[2].source_ids == (folded[0].id, folded[1].id)
    assert store.list_summaries(store.create_conversation(alice, "empty").id) == []


# restore_conversation -----------------------------------------------------------------------------
def _history() -> RestoredConversation:
    """Four messages (a tool exchange), two folds merged into one, then a compaction record."""
    call = ToolCallRecord("call_1", "recall", '{"query": "tea"}')
    messages = (
        RestoredMessage(NewMessage("user", "hi", 2, speaker="Ann", created_at=T0), summary=0),
        RestoredMessage(NewMessage("assistant", "", 5, (call,), created_at=T0), summary=0),
        RestoredMessage(
            NewMessage("tool", "[]", 1, tool_call_id="call_1", tool_name="recall", created_at=T1),
            summary=1,
        ),
        RestoredMessage(NewMessage("assistant", "tea!", 2, created_at=T1), summary=1),
        RestoredMessage(
            NewMessage(
                "system",
                "Compacted 4 messages.",
                0,
                is_compaction_record=True,
                record={"status": "done", "summary_ids": ["x", "y"], "merged_summary_ids": []},
                created_at=T2,
            ),
            record_summaries={"summary_ids": (0, 1), "merged_summary_ids": (2,)},
        ),
        RestoredMessage(NewMessage("user", "still raw", 2, created_at=T2)),
    )
    summaries = (
        RestoredSummary(
            "first", 3, T0, T0, 2, T2, first_message=0, last_message=1, in_context=False,
            maintenance_status="done", maintenance_attempts=1,
        ),
        RestoredSummary(
            "second", 3, T1, T1, 2, T2, first_message=2, last_message=3, in_context=False,
            maintenance_status="failed", maintenance_attempts=2, maintenance_error="LLM down",
        ),
        RestoredSummary(
            "both", 4, T0, T1, 4, T2, first_message=0, last_message=3, depth=1, sources=(0, 1),
            maintenance_status="done",
        ),
    )  # fmt: skip
    return RestoredConversation("Tea talk", T0, T2, messages, summaries)


def test_restore_conversation_recreates_messages_summaries_and_their_relations(
    store: Store, alice: int
) -> None:
    restored = store.restore_conversation(alice, _history())
    conversation = restored.conversation
    assert (conversation.agent_id, conversation.title) == (alice, "Tea talk")
    assert (conversation.created_at, conversation.updated_at) == (T0, T2)
    assert store.get_conversation(conversation.id) == conversation
    assert store.list_conversations(alice) == [conversation]
    assert len(restored.message_ids) == 6 and len(restored.summary_ids) == 3
    s = restored.summary_ids

    messages = store.list_messages(conversation.id, limit=EVERYTHING)
    assert [m.id for m in messages] == list(restored.message_ids)
    assert [m.summary_id for m in messages] == [s[0], s[0], s[1], s[1], None, None]
    assert [m.created_at for m in messages] == [T0, T0, T1, T1, T2, T2]
    assert messages[0].speaker == "Ann"
    assert messages[1].tool_calls == (ToolCallRecord("call_1", "recall", '{"query": "tea"}'),)
    assert (messages[2].tool_call_id, messages[2].tool_name) == ("call_1", "recall")
    assert messages[4].is_compaction_record
    assert messages[4].record == {
        "status": "done",
        "summary_ids": [s[0], s[1]],
        "merged_summary_ids": [s[2]],
    }
    assert [m.content for m in store.raw_messages(conversation.id)] == ["still raw"]
    assert store.summary_messages([s[1]]) == messages[2:4]

    summaries = store.list_summaries(conversation.id)
    assert [x.id for x in summaries] == list(s)
    first, second, both = summaries
    assert (first.first_message_id, first.last_message_id) == (messages[0].id, messages[1].id)
    assert (second.first_message_id, second.last_message_id) == (messages[2].id, messages[3].id)
    assert (both.depth, both.source_ids, both.compressed) == (1, (s[0], s[1]), True)
    assert (both.first_at, both.last_at, both.message_count, both.tokens) == (T0, T1, 4, 4)
    assert [x.in_context for x in summaries] == [False, False, True]
    assert [x.created_at for x in summaries] == [T2, T2, T2]
    assert {x.agent_id for x in summaries} == {alice}
    assert (second.maintenance_status, second.maintenance_attempts) == ("failed", 2)
    assert second.maintenance_error == "LLM down"
    assert store.context_summaries(conversation.id) == [both]
    assert store.unmaintained_summaries(alice, max_attempts=3) == [second]


def test_restored_conversations_compact_on_as_usual(store: Store, alice: int) -> None:
    conversation = store.restore_conversation(alice, _history()).conversation.id
    [raw] = store.raw_messages(conversation)
    summary = NewSummary("more", 1, raw.created_at, raw.created_at, 1, raw.id, raw.id)
    folded = store.fold(conversation, summary, [raw.id])
    assert [x.text for x in store.context_summaries(conversation)] == ["both", "more"]
    assert folded.maintenance_status == "pending"


def test_restore_conversation_without_history(store: Store, alice: int) -> None:
    restored = store.restore_conversation(alice, RestoredConversation("", T0, T1))
    assert (restored.message_ids, restored.summary_ids) == ((), ())
    assert store.list_messages(restored.conversation.id) == []


@pytest.mark.parametrize(
    "broken",
    [
        {"message_summary": 3},
        {"first_message": 6},
        {"last_message": -1},
        {"sources": (2,)},  # a summary cannot merge itself or a later one
        {"record_summaries": {"summary_ids": (7,)}},
    ],
)
def test_restore_conversation_refuses_relations_outside_it_and_writes_nothing(
    store: Store, alice: int, broken: dict[str, Any]
) -> None:
    good = _history()
    messages, summaries = list(good.messages), list(good.summaries)
    if "message_summary" in broken:
        messages[0] = RestoredMessage(messages[0].message, summary=broken["message_summary"])
    if "record_summaries" in broken:
        messages[4] = RestoredMessage(
            messages[4].message, record_summaries=broken["record_summaries"]
        )
    for name in ("first_message", "last_message", "sources"):
        if name in broken:
            summaries[2] = dataclasses.replace(summaries[2], **{name: broken[name]})
    bad = RestoredConversation(good.title, T0, T2, tuple(messages), tuple(summaries))
    with pytest.raises(ValidationError):
        store.restore_conversation(alice, bad)
    assert store.list_conversations(alice) == []


def test_restore_conversation_for_an_unknown_agent_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.restore_conversation(10**6, _history())
