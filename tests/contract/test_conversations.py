"""The storage contract for conversations: settings, messages, fold/merge, maintenance, leases.

Tested through the ``ConversationStore`` protocol only (no SQL), so every backend in
``BACKENDS`` must pass the same file.
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep.errors import ConflictError, NotFound
from hivekeep.store.base import Store
from hivekeep.store.conversations import (
    AgentSettings,
    MessageRecord,
    NewMessage,
    NewSummary,
    SummaryRecord,
    ToolCallRecord,
)
from hivekeep.store.leases import new_holder

EVERYTHING = 10**6  # a ``limit`` for list_messages larger than any test conversation


# helpers --------------------------------------------------------------------------------------
def user(content: str, tokens: int = 1, **fields: Any) -> NewMessage:
    return NewMessage(role="user", content=content, tokens=tokens, **fields)


def record(details: dict[str, Any] | None = None) -> NewMessage:
    """A compaction record: a message that is never raw and never folded."""
    return NewMessage(
        role="system",
        content="[compaction]",
        tokens=0,
        is_compaction_record=True,
        record=details or {"folded": 1},
    )


def summary_of(
    messages: Sequence[MessageRecord], text: str = "summary", tokens: int = 5
) -> NewSummary:
    """A depth-0 summary describing ``messages`` (which must be non-empty)."""
    return NewSummary(
        text=text,
        tokens=tokens,
        first_at=messages[0].created_at,
        last_at=messages[-1].created_at,
        message_count=len(messages),
        first_message_id=messages[0].id,
        last_message_id=messages[-1].id,
    )


def merged_of(sources: Sequence[SummaryRecord], text: str = "merged") -> NewSummary:
    return NewSummary(
        text=text,
        tokens=sum(s.tokens for s in sources),
        first_at=min(s.first_at for s in sources),
        last_at=max(s.last_at for s in sources),
        message_count=sum(s.message_count for s in sources),
        first_message_id=sources[0].first_message_id,
        last_message_id=sources[-1].last_message_id,
        depth=max(s.depth for s in sources) + 1,
        source_ids=tuple(s.id for s in sources),
    )


def fold_messages(
    store: Store, conversation_id: int, messages: Sequence[MessageRecord]
) -> SummaryRecord:
    return store.fold(conversation_id, summary_of(messages), [m.id for m in messages])


def snapshot(store: Store, agent_id: int, *conversation_ids: int) -> tuple[object, ...]:
    """Everything observable about these conversations, to prove a refused write changed nothing."""
    return (
        tuple(tuple(store.list_messages(c, limit=EVERYTHING)) for c in conversation_ids),
        tuple(tuple(store.context_summaries(c)) for c in conversation_ids),
        tuple(store.unmaintained_summaries(agent_id, 1000)),
    )


@pytest.fixture
def agents(store: Store) -> tuple[int, int]:
    return store.create_agent("alice", "").id, store.create_agent("bob", "").id


@pytest.fixture
def alice(agents: tuple[int, int]) -> int:
    return agents[0]


@pytest.fixture
def conv(store: Store, alice: int) -> int:
    return store.create_conversation(alice, "chat").id


# agent settings -------------------------------------------------------------------------------
def test_agent_settings_default_to_empty(store: Store, alice: int) -> None:
    assert store.get_agent_settings(alice) == AgentSettings(model=None, compaction={})


def test_agent_settings_round_trip_and_are_replaced_whole(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    first = AgentSettings(model="openai:gpt-x", compaction={"budget": 4000, "ratio": 0.5})
    store.save_agent_settings(alice, first)
    assert store.get_agent_settings(alice) == first
    second = AgentSettings(compaction={"keep_recent": 6, "nested": {"a": [1, 2]}})
    store.save_agent_settings(alice, second)
    assert store.get_agent_settings(alice) == second  # model back to None, "budget" gone
    assert store.get_agent_settings(bob) == AgentSettings()  # per agent


def test_agent_settings_of_unknown_agent_are_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.get_agent_settings(999)
    with pytest.raises(NotFound):
        store.save_agent_settings(999, AgentSettings(model="m"))


def test_deleting_an_agent_removes_its_conversations_and_settings(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, bob = agents
    store.save_agent_settings(alice, AgentSettings(model="m"))
    conversation = store.create_conversation(alice, "doomed").id
    messages = store.add_messages(conversation, [user("a"), user("b"), record()])
    fold_messages(store, conversation, messages[:1])
    kept = store.create_conversation(bob, "kept").id
    store.add_messages(kept, [user("c")])

    store.delete_agent(alice)

    with pytest.raises(NotFound):
        store.get_conversation(conversation)
    with pytest.raises(NotFound):
        store.get_agent_settings(alice)
    assert store.list_conversations(alice) == []
    assert store.unmaintained_summaries(alice, 10) == []
    assert [m.content for m in store.list_messages(kept)] == ["c"]  # bob untouched


# conversations --------------------------------------------------------------------------------
def test_conversation_create_get_and_list(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    created = store.create_conversation(alice, "Planning")
    assert (created.agent_id, created.title) == (alice, "Planning")
    assert created.created_at == created.updated_at
    assert store.get_conversation(created.id) == created
    assert store.list_conversations(alice) == [created]
    assert store.list_conversations(bob) == []


def test_unknown_conversation_is_not_found(store: Store, alice: int) -> None:
    with pytest.raises(NotFound):
        store.get_conversation(999)
    with pytest.raises(NotFound):
        store.add_messages(999, [user("x")])
    with pytest.raises(NotFound):
        store.create_conversation(999, "no such agent")


def test_conversations_are_listed_by_most_recent_activity(store: Store, alice: int) -> None:
    first = store.create_conversation(alice, "first")
    second = store.create_conversation(alice, "second")
    assert [c.id for c in store.list_conversations(alice)] == [second.id, first.id]
    time.sleep(0.01)  # a coarse clock must still see the bump as later
    store.add_messages(first.id, [user("bump")])
    assert [c.id for c in store.list_conversations(alice)] == [first.id, second.id]
    bumped = store.get_conversation(first.id)
    assert bumped.updated_at > first.updated_at
    assert bumped.created_at == first.created_at


def test_rename_keeps_activity_time_and_unknown_is_not_found(store: Store, conv: int) -> None:
    before = store.get_conversation(conv)
    renamed = store.rename_conversation(conv, "Trip to Porto")
    assert renamed == dataclasses.replace(before, title="Trip to Porto")
    assert store.get_conversation(conv) == renamed
    with pytest.raises(NotFound):
        store.rename_conversation(999, "x")


def test_a_deleted_conversation_leaves_the_list_and_comes_back_whole(
    store: Store, alice: int, conv: int
) -> None:
    messages = store.add_messages(conv, [user("a"), user("b")])
    fold_messages(store, conv, messages[:1])
    before = snapshot(store, alice, conv)
    trashed = store.set_conversation_deleted(conv, "2026-01-02T03:04:05.000000Z")
    assert trashed.deleted_at == "2026-01-02T03:04:05.000000Z"
    assert store.list_conversations(alice) == []
    assert store.list_conversations(alice, deleted=True) == [trashed]
    assert snapshot(store, alice, conv) == before  # nothing of it is touched meanwhile
    back = store.set_conversation_deleted(conv, None)
    assert back.deleted_at is None
    assert store.list_conversations(alice) == [back]
    assert store.list_conversations(alice, deleted=True) == []


def test_purge_erases_only_conversations_trashed_before_the_cutoff(
    store: Store, alice: int
) -> None:
    old, recent, live = (store.create_conversation(alice, t).id for t in ("old", "new", "live"))
    store.add_messages(old, [user("gone")])
    store.set_conversation_deleted(old, "2026-01-01T00:00:00.000000Z")
    store.set_conversation_deleted(recent, "2026-03-01T00:00:00.000000Z")
    assert store.purge_conversations("2026-02-01T00:00:00.000000Z") == 1
    with pytest.raises(NotFound):
        store.get_conversation(old)
    assert [c.id for c in store.list_conversations(alice, deleted=True)] == [recent]
    assert [c.id for c in store.list_conversations(alice)] == [live]


# messages -------------------------------------------------------------------------------------
def test_every_message_field_round_trips(store: Store, conv: int) -> None:
    calls = (
        ToolCallRecord(id="call_1", name="recall", arguments='{"query": "café", "k": [1, 2]}'),
        ToolCallRecord(id="call_2", name="noop", arguments=""),
    )
    details = {"folded": [1, 2, 3], "tokens_before": 1200, "note": "ünïcode", "nested": {"x": None}}
    sent = [
        NewMessage(role="system", content="be brief", tokens=3),
        NewMessage(role="user", content="hi ☕", tokens=2, speaker="carol"),
        NewMessage(role="assistant", content="", tokens=7, tool_calls=calls),
        NewMessage(
            role="tool",
            content='{"ok": true}',
            tokens=4,
            tool_call_id="call_1",
            tool_name="recall",
        ),
        NewMessage(
            role="system",
            content="[compaction]",
            tokens=0,
            is_compaction_record=True,
            record=details,
            created_at="2024-01-02T03:04:05.000000Z",
        ),
    ]
    returned = store.add_messages(conv, sent)
    assert returned == store.list_messages(conv)
    assert [m.id for m in returned] == sorted(m.id for m in returned)
    for new, got in zip(sent, returned, strict=True):
        assert got.conversation_id == conv
        assert (got.role, got.content, got.tokens) == (new.role, new.content, new.tokens)
        assert got.tool_calls == new.tool_calls
        assert (got.tool_call_id, got.tool_name, got.speaker) == (
            new.tool_call_id,
            new.tool_name,
            new.speaker,
        )
        assert got.is_compaction_record is new.is_compaction_record
        assert got.record == (dict(new.record) if new.record is not None else None)
        assert got.summary_id is None
        assert got.created_at  # "now" when not given
    assert returned[2].tool_calls[0].arguments == '{"query": "café", "k": [1, 2]}'
    assert returned[4].created_at == "2024-01-02T03:04:05.000000Z"
    assert returned[0].created_at != "2024-01-02T03:04:05.000000Z"


def test_messages_keep_their_order_across_calls(store: Store, conv: int) -> None:
    store.add_messages(conv, [user("1"), user("2")])
    store.add_messages(conv, [])
    store.add_messages(conv, [user("3")])
    assert [m.content for m in store.list_messages(conv)] == ["1", "2", "3"]
    assert [m.content for m in store.raw_messages(conv)] == ["1", "2", "3"]


def test_messages_belong_to_their_conversation(store: Store, alice: int, conv: int) -> None:
    other = store.create_conversation(alice, "other").id
    store.add_messages(conv, [user("mine")])
    store.add_messages(other, [user("theirs")])
    assert [m.content for m in store.raw_messages(conv)] == ["mine"]
    assert [m.content for m in store.list_messages(other)] == ["theirs"]


def test_raw_messages_exclude_folded_messages_and_records(store: Store, conv: int) -> None:
    m = store.add_messages(conv, [user("a"), user("b"), record(), user("c"), user("d")])
    fold_messages(store, conv, m[:2])
    assert [x.content for x in store.raw_messages(conv)] == ["c", "d"]
    everything = store.list_messages(conv)
    assert [x.id for x in everything] == [x.id for x in m]  # folded and records included
    assert [x.summary_id is not None for x in everything] == [True, True, False, False, False]


def test_a_raw_message_can_be_deleted_and_a_folded_one_cannot(
    store: Store, alice: int, conv: int
) -> None:
    m = store.add_messages(conv, [user("a"), user("b"), record(), user("c")])
    fold_messages(store, conv, m[:1])
    other = store.create_conversation(alice, "other").id
    before = snapshot(store, alice, conv)

    for folded_or_record in (m[0].id, m[2].id):
        with pytest.raises(ConflictError, match="cannot be taken back"):
            store.delete_raw_message(conv, folded_or_record)
    with pytest.raises(NotFound):
        store.delete_raw_message(other, m[3].id)  # not a message of that conversation
    assert snapshot(store, alice, conv) == before

    store.delete_raw_message(conv, m[3].id)
    assert [x.content for x in store.raw_messages(conv)] == ["b"]
    assert [x.id for x in store.list_messages(conv)] == [m[0].id, m[1].id, m[2].id]


def test_a_messages_record_can_be_replaced(store: Store, alice: int, conv: int) -> None:
    m = store.add_messages(conv, [user("a", record={"items": [1]}), user("b")])
    store.set_message_record(conv, m[1].id, {"items": [{"role": "user", "content": "b"}]})
    store.set_message_record(conv, m[0].id, None)
    assert [x.record for x in store.raw_messages(conv)] == [
        None,
        {"items": [{"role": "user", "content": "b"}]},
    ]
    other = store.create_conversation(alice, "other").id
    with pytest.raises(NotFound):
        store.set_message_record(other, m[0].id, {"items": []})


def test_list_messages_pages_with_after_id_and_limit(store: Store, conv: int) -> None:
    m = store.add_messages(conv, [user(str(i)) for i in range(7)] + [record()])
    fold_messages(store, conv, m[:3])
    pages: list[list[str]] = []
    after = 0
    while page := store.list_messages(conv, after_id=after, limit=3):
        pages.append([x.content for x in page])
        after = page[-1].id
    assert pages == [["0", "1", "2"], ["3", "4", "5"], ["6", "[compaction]"]]
    assert store.list_messages(conv, after_id=m[-1].id) == []
    assert [x.id for x in store.list_messages(conv, after_id=m[1].id, limit=2)] == [
        m[2].id,
        m[3].id,
    ]


def test_summary_messages_are_the_folded_ones_oldest_first(store: Store, conv: int) -> None:
    m = store.add_messages(conv, [user("a"), user("b"), user("c"), user("d")])
    s1 = fold_messages(store, conv, m[:2])
    s2 = fold_messages(store, conv, m[2:3])
    both = store.summary_messages([s2.id, s1.id])
    assert [x.content for x in both] == ["a", "b", "c"]
    assert [x.summary_id for x in both] == [s1.id, s1.id, s2.id]
    assert [x.content for x in store.summary_messages([s2.id])] == ["c"]
    assert store.summary_messages([]) == []


# fold -----------------------------------------------------------------------------------------
def test_fold_inserts_a_pending_summary_and_folds_its_messages(
    store: Store, alice: int, conv: int
) -> None:
    m = store.add_messages(conv, [user("a", 3), user("b", 4), user("c", 5)])
    new = NewSummary(
        text="a and b",
        tokens=6,
        first_at=m[0].created_at,
        last_at=m[1].created_at,
        message_count=2,
        first_message_id=m[0].id,
        last_message_id=m[1].id,
    )
    folded = store.fold(conv, new, [m[1].id, m[0].id])
    assert (folded.conversation_id, folded.agent_id) == (conv, alice)
    assert (folded.text, folded.tokens, folded.message_count) == ("a and b", 6, 2)
    assert (folded.first_at, folded.last_at) == (m[0].created_at, m[1].created_at)
    assert (folded.first_message_id, folded.last_message_id) == (m[0].id, m[1].id)
    assert (folded.depth, folded.source_ids, folded.compressed) == (0, (), False)
    assert folded.in_context is True
    assert (folded.maintenance_status, folded.maintenance_attempts) == ("pending", 0)
    assert folded.maintenance_error is None
    assert folded.created_at
    assert store.context_summaries(conv) == [folded]
    assert [x.summary_id for x in store.list_messages(conv)] == [folded.id, folded.id, None]
    assert [x.content for x in store.raw_messages(conv)] == ["c"]


def test_fold_refusals_change_nothing(store: Store, alice: int, conv: int) -> None:
    other = store.create_conversation(alice, "other").id
    m = store.add_messages(conv, [user("a"), user("b"), record(), user("c")])
    elsewhere = store.add_messages(other, [user("x")])
    fold_messages(store, conv, m[:1])
    before = snapshot(store, alice, conv, other)

    bad_batches = {
        "already folded": [m[0], m[1]],
        "another conversation's": [m[1], elsewhere[0]],
        "a compaction record": [m[1], m[2]],
    }
    for reason, batch in bad_batches.items():
        with pytest.raises(ConflictError):
            store.fold(conv, summary_of(batch), [x.id for x in batch])
        assert snapshot(store, alice, conv, other) == before, reason
    with pytest.raises(ConflictError):
        store.fold(conv, summary_of(m[1:2]), [m[1].id, 10**9])
    with pytest.raises(ConflictError):
        store.fold(conv, summary_of(m[1:2]), [])
    assert snapshot(store, alice, conv, other) == before

    # the raw ones still fold afterwards
    fold_messages(store, conv, [m[1], m[3]])
    assert store.raw_messages(conv) == []


def test_a_second_fold_of_the_same_batch_conflicts(store: Store, conv: int) -> None:
    m = store.add_messages(conv, [user("a"), user("b")])
    winner = fold_messages(store, conv, m)
    with pytest.raises(ConflictError):
        fold_messages(store, conv, m)
    assert store.context_summaries(conv) == [winner]


# merge ----------------------------------------------------------------------------------------
def _three_summaries(store: Store, conv: int) -> list[SummaryRecord]:
    """Summaries with first_at T1 < T2 < T3 (explicit timestamps, ids in the same order)."""
    stamps = [f"2024-01-01T00:00:0{i}.000000Z" for i in range(1, 7)]
    m = store.add_messages(conv, [user(str(i), created_at=t) for i, t in enumerate(stamps)])
    return [fold_messages(store, conv, m[i : i + 2]) for i in (0, 2, 4)]


def test_merge_replaces_its_sources_in_context(store: Store, alice: int, conv: int) -> None:
    s1, s2, s3 = _three_summaries(store, conv)
    new = merged_of([s1, s2])
    merged = store.merge(conv, new, [s1.id, s2.id])
    assert merged.id not in (s1.id, s2.id, s3.id)
    assert (merged.conversation_id, merged.agent_id) == (conv, alice)
    assert (merged.depth, merged.compressed, merged.source_ids) == (1, True, (s1.id, s2.id))
    assert (merged.message_count, merged.first_at, merged.last_at) == (
        4,
        s1.first_at,
        s2.last_at,
    )
    assert merged.in_context is True
    assert merged.maintenance_status == "done"
    # ordered by first_at: the merged row (newer id, older first_at) comes before s3
    assert store.context_summaries(conv) == [merged, s3]
    # the sources still exist, out of context, with their messages
    left = {s.id: s for s in store.unmaintained_summaries(alice, 10)}
    assert left[s1.id].in_context is False and left[s2.id].in_context is False
    assert left[s3.id].in_context is True
    assert len(store.summary_messages([s1.id, s2.id])) == 4


def test_context_order_is_by_first_message_even_when_timestamps_tie(
    store: Store, conv: int
) -> None:
    """Messages added in one call share a timestamp; a merged summary (a newer row) covering the
    first of them still comes before a summary of the later ones."""
    m = store.add_messages(conv, [user("a"), user("b"), user("c")])
    s1, s2, s3 = (fold_messages(store, conv, [x]) for x in m)
    assert s1.first_at == s3.first_at
    merged = store.merge(conv, merged_of([s1, s2]), [s1.id, s2.id])
    assert store.context_summaries(conv) == [merged, s3]


def test_merges_nest(store: Store, conv: int) -> None:
    s1, s2, s3 = _three_summaries(store, conv)
    inner = store.merge(conv, merged_of([s1, s2]), [s1.id, s2.id])
    outer = store.merge(conv, merged_of([inner, s3]), [inner.id, s3.id])
    assert (outer.depth, outer.source_ids, outer.message_count) == (2, (inner.id, s3.id), 6)
    assert store.context_summaries(conv) == [outer]


def test_merge_refusals_change_nothing(store: Store, alice: int, conv: int) -> None:
    other = store.create_conversation(alice, "other").id
    s1, s2, s3 = _three_summaries(store, conv)
    foreign = fold_messages(store, other, store.add_messages(other, [user("x")]))
    merged = store.merge(conv, merged_of([s1, s2]), [s1.id, s2.id])
    before = snapshot(store, alice, conv, other)

    refused: dict[str, list[SummaryRecord]] = {
        "a source out of context": [s1, s3],
        "only one source": [s3],
        "the same source twice": [s3, s3],
        "no sources": [],
        "another conversation's": [s3, foreign],
    }
    for reason, sources in refused.items():
        new = merged_of(sources) if sources else merged_of([s3])
        with pytest.raises(ConflictError):
            store.merge(conv, new, [s.id for s in sources])
        assert snapshot(store, alice, conv, other) == before, reason
    with pytest.raises(ConflictError):
        store.merge(conv, merged_of([merged, s3]), [merged.id, s3.id, 10**9])
    assert snapshot(store, alice, conv, other) == before
    assert store.context_summaries(conv) == [merged, s3]


# maintenance state ----------------------------------------------------------------------------
def test_unmaintained_summaries_backlog(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    c1 = store.create_conversation(alice, "one").id
    c2 = store.create_conversation(alice, "two").id
    cb = store.create_conversation(bob, "bob's").id

    def one(conversation: int, text: str) -> SummaryRecord:
        return fold_messages(store, conversation, store.add_messages(conversation, [user(text)]))

    a1, a2, a3, a4 = one(c1, "a1"), one(c2, "a2"), one(c1, "a3"), one(c2, "a4")
    b1 = one(cb, "b1")

    def backlog(agent: int, max_attempts: int = 3) -> list[int]:
        return [s.id for s in store.unmaintained_summaries(agent, max_attempts)]

    assert backlog(alice) == [a1.id, a2.id, a3.id, a4.id]  # oldest first, both conversations
    assert backlog(bob) == [b1.id]

    store.record_maintenance([a2.id], "done", None)
    store.record_maintenance([a3.id, a4.id], "failed", "provider down")
    got = {s.id: s for s in store.unmaintained_summaries(alice, 3)}
    assert list(got) == [a1.id, a3.id, a4.id]  # done drops out; failed stays
    assert (got[a3.id].maintenance_status, got[a3.id].maintenance_error) == (
        "failed",
        "provider down",
    )
    assert got[a3.id].maintenance_attempts == 1
    assert (got[a1.id].maintenance_status, got[a1.id].maintenance_attempts) == ("pending", 0)

    store.record_maintenance([a3.id], "failed", "again")
    assert backlog(alice, 3) == [a1.id, a3.id, a4.id]
    assert backlog(alice, 2) == [a1.id, a4.id]  # a3 reached 2 attempts
    store.record_maintenance([a3.id], "failed", "third")
    assert backlog(alice, 3) == [a1.id, a4.id]
    assert backlog(alice, 1) == [a1.id]  # a pending summary with no attempts yet
    assert backlog(alice, 0) == []

    # a merged (depth > 0) summary is never in the backlog, whatever its status
    merged = store.merge(c1, merged_of([a1, a3]), [a1.id, a3.id])
    store.record_maintenance([merged.id], "failed", "x")
    assert merged.id not in backlog(alice, 10)
    assert backlog(alice, 10) == [a1.id, a3.id, a4.id]  # the sources keep their own state
    assert backlog(bob) == [b1.id]


def test_record_maintenance_counts_every_attempt(store: Store, conv: int) -> None:
    summary = fold_messages(store, conv, store.add_messages(conv, [user("a")]))
    store.record_maintenance([summary.id], "failed", "boom")
    store.record_maintenance([summary.id], "done", None)
    (after,) = store.context_summaries(conv)
    assert (after.maintenance_status, after.maintenance_attempts) == ("done", 2)
    assert after.maintenance_error is None
    store.record_maintenance([], "failed", "nothing to do")  # a no-op
    assert store.context_summaries(conv) == [after]


# meta -----------------------------------------------------------------------------------------
def test_meta_get_set_and_overwrite(store: Store) -> None:
    assert store.get_meta("conversations:test") is None
    store.set_meta("conversations:test", "one")
    assert store.get_meta("conversations:test") == "one"
    store.set_meta("conversations:test", "two")
    assert store.get_meta("conversations:test") == "two"
    assert store.get_meta("conversations:other") is None


# leases ---------------------------------------------------------------------------------------
def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_lease_is_held_renewed_and_released(store: Store) -> None:
    first, second = new_holder(), new_holder()
    assert store.acquire_lease("compaction:1", first, 60) is None
    assert store.acquire_lease("compaction:1", second, 60) == first
    assert store.acquire_lease("compaction:1", first, 60) is None  # renew
    assert store.acquire_lease("compaction:2", second, 60) is None  # leases are per name
    store.release_lease("compaction:1", second)  # not the holder: nothing happens
    assert store.acquire_lease("compaction:1", second, 60) == first
    store.release_lease("compaction:1", first)
    assert store.acquire_lease("compaction:1", second, 60) is None
    assert store.acquire_lease("compaction:1", first, 60) == second


def test_expired_lease_is_free(store: Store) -> None:
    first, second = new_holder(), new_holder()
    assert store.acquire_lease("lease", first, 0.05) is None
    time.sleep(0.15)
    assert store.acquire_lease("lease", second, 60) is None
    assert store.acquire_lease("lease", first, 60) == second


def test_renewal_extends_the_lease(store: Store) -> None:
    first, second = new_holder(), new_holder()
    assert store.acquire_lease("lease", first, 0.05) is None
    assert store.acquire_lease("lease", first, 60) is None
    time.sleep(0.15)
    assert store.acquire_lease("lease", second, 60) == first


def test_lease_of_a_dead_process_on_this_host_is_free(store: Store) -> None:
    dead = f"{socket.gethostname()}:{_dead_pid()}:x"
    assert store.acquire_lease("lease", dead, 3600) is None  # planted: any holder string goes
    taker = new_holder()
    assert store.acquire_lease("lease", taker, 60) is None
    assert store.acquire_lease("lease", dead, 60) == taker


def test_lease_of_another_host_is_trusted_until_expiry(store: Store) -> None:
    remote = f"not-{socket.gethostname()}.invalid:{_dead_pid()}:x"
    assert store.acquire_lease("lease", remote, 0.5) is None
    assert store.acquire_lease("lease", new_holder(), 60) == remote
    time.sleep(0.6)
    assert store.acquire_lease("lease", new_holder(), 60) is None


# property: fold and merge never lose or duplicate a message ---------------------------------
# "add" takes a list of is-a-compaction-record flags; "fold" a prefix length of the raw messages;
# "merge" and "bad fold" a number that picks which summaries or messages to use
step = st.one_of(
    st.tuples(
        st.just("add"), st.lists(st.sampled_from([False, False, True]), min_size=1, max_size=4)
    ),
    st.tuples(st.just("fold"), st.integers(min_value=1, max_value=3)),
    st.tuples(st.just("merge"), st.integers(min_value=0, max_value=2**16)),
    st.tuples(st.just("bad fold"), st.integers(min_value=0, max_value=2**16)),
)


def _check_invariants(store: Store, conv: int, made: dict[int, SummaryRecord]) -> None:
    messages = store.list_messages(conv, limit=EVERYTHING)
    folded = [m for m in messages if m.summary_id is not None]
    raw = store.raw_messages(conv)
    assert raw == [m for m in messages if m.summary_id is None and not m.is_compaction_record]
    assert not any(m.is_compaction_record and m.summary_id is not None for m in messages)

    # every folded message sits in exactly one depth-0 summary the test made
    leaves = {sid for sid, s in made.items() if s.depth == 0}
    assert {m.summary_id for m in folded} <= leaves

    # each depth-0 summary is reached from exactly one in-context summary
    context = store.context_summaries(conv)
    assert [s.first_at for s in context] == sorted(s.first_at for s in context)
    reached: list[int] = []

    def expand(summary_id: int) -> None:
        summary = made[summary_id]
        if summary.depth == 0:
            reached.append(summary_id)
        for source in summary.source_ids:
            expand(source)

    covered: list[MessageRecord] = []  # the folded messages, in context order
    for summary in context:
        start = len(reached)
        expand(summary.id)
        covered += store.summary_messages(reached[start:])
    assert sorted(reached) == sorted(leaves)
    assert store.summary_messages(reached) == folded
    # folds take a prefix of the raw messages and merges adjacent summaries, so the summaries in
    # context order (by the first message they cover) cover the folded messages in their order
    assert covered == folded
    assert sum(s.message_count for s in context) == len(folded)
    for leaf in leaves:
        assert len(store.summary_messages([leaf])) == made[leaf].message_count


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, min_size=4, max_size=20))
def test_fold_and_merge_account_for_every_message(
    store: Store, steps: list[tuple[str, Any]]
) -> None:
    # the store fixture outlives the examples: each example gets its own agent and conversation
    agent = store.create_agent(f"prop-{uuid.uuid4().hex[:12]}", "").id
    conv = store.create_conversation(agent, "property").id
    made: dict[int, SummaryRecord] = {}
    counter = 0

    def add(flags: Sequence[bool]) -> bool:
        nonlocal counter
        batch = []
        for is_record in flags:
            counter += 1
            batch.append(record({"n": counter}) if is_record else user(f"m{counter}"))
        store.add_messages(conv, batch)
        return True

    def fold(length: int) -> bool:
        raw = store.raw_messages(conv)
        if not raw:
            return False
        summary = fold_messages(store, conv, raw[:length])
        made[summary.id] = summary
        return True

    def merge(pick: int) -> bool:
        context = store.context_summaries(conv)
        if len(context) < 2:
            return False
        start = pick % (len(context) - 1)
        sources = context[start : start + 2 + pick % 2]
        merged = store.merge(conv, merged_of(sources), [s.id for s in sources])
        assert merged.message_count == sum(s.message_count for s in sources)
        made[merged.id] = merged
        return True

    def bad_fold(pick: int) -> bool:
        """A fold that must be refused: one raw message plus one that is folded or a record."""
        messages = store.list_messages(conv, limit=EVERYTHING)
        taken = [m for m in messages if m.summary_id is not None or m.is_compaction_record]
        raw = store.raw_messages(conv)
        if not (taken and raw):
            return False
        batch = sorted([raw[pick % len(raw)], taken[pick % len(taken)]], key=lambda m: m.id)
        before = snapshot(store, agent, conv)
        with pytest.raises(ConflictError):
            fold_messages(store, conv, batch)
        assert snapshot(store, agent, conv) == before
        return True

    # a step that cannot apply yet falls back to one that makes progress, so no step is wasted
    for kind, arg in steps:
        if kind == "add":
            add(arg)
        elif kind == "fold":
            fold(arg) or add([False, False])
        elif kind == "merge":
            merge(arg) or fold(1) or add([False, False])
        else:
            bad_fold(arg) or fold(1) or add([False, True])
        _check_invariants(store, conv, made)
