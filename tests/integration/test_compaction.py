"""Compaction (SPEC §7) through the real services: real SQLite file, real embedder, ScriptedLLM."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Hive, Settings, ValidationError
from hivekeep.core.context import SUMMARIES_HEADING
from hivekeep.errors import ProviderError
from hivekeep.events import Event
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Message
from hivekeep.store.leases import AgentBusy
from hivekeep.testing import ScriptedLLM

from .conversation_support import add_turns, by_prompt, calls_by_site, maintenance_reply

WINDOW = 8192


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=WINDOW)


@pytest.fixture
def hive(db_path: Path, local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as opened:
        yield opened


def context_tokens(hive: Hive, agent_name: str, conversation_id: int) -> int:
    return hive.get_agent(agent_name).context(conversation_id).tokens


def test_compacts_only_over_the_trigger_and_keeps_the_newest_up_to_40_percent(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 8, with_tools=True)
    assert context_tokens(hive, "sam", conversation) * 100 <= 75 * WINDOW
    assert hive._services.compaction.after_turn(agent.record, conversation) is None
    assert llm.calls == []  # under the trigger: no call at all

    add_turns(hive, conversation, 2, start="2024-05-01T11:00", with_tools=True)
    assert context_tokens(hive, "sam", conversation) * 100 > 75 * WINDOW
    raw_before = hive.store.raw_messages(conversation)
    # the rest of the context (system prompt, tool schemas) takes its share of the keep-window
    reserved = agent.context(conversation).reserved_tokens
    llm.enqueue("Ann asked many questions; Sam answered.", maintenance_reply())
    outcome = hive._services.compaction.after_turn(agent.record, conversation)

    assert outcome is not None and outcome.status == "done" and outcome.passes >= 1
    assert calls_by_site(llm) == {"compaction": 1, "maintenance": 1}
    kept = hive.store.raw_messages(conversation)
    folded = raw_before[: len(raw_before) - len(kept)]
    assert [m.id for m in kept] == [m.id for m in raw_before[len(folded) :]]
    assert (reserved + sum(m.tokens for m in kept)) * 100 <= 40 * WINDOW  # the keep-window
    # Walking back from the newest message, the window stops where the next exchange would not
    # fit; tool exchanges are never split.
    unit = len(folded) - 1  # the newest folded unit: a message, or a call with its results
    while folded[unit].role == "tool":
        unit -= 1
    assert (reserved + sum(m.tokens for m in folded[unit:] + kept)) * 100 > 40 * WINDOW
    assert kept[0].role != "tool"

    (summary,) = hive.store.context_summaries(conversation)
    assert summary.text == "Ann asked many questions; Sam answered."
    assert (summary.first_at, summary.last_at) == (folded[0].created_at, folded[-1].created_at)
    assert summary.message_count == len(folded) == outcome.messages_folded
    assert summary.depth == 0 and summary.maintenance_status == "done"
    fold_prompt = llm.calls[0].text
    assert "[2024-05-01T10:00:00.000000Z] Ann: Turn 0:" in fold_prompt
    assert 'sam: [calls recall({"query": "q0"})]' in fold_prompt
    assert "tool recall result:" in fold_prompt and "more chars]" not in fold_prompt

    system = agent.context(conversation).messages[0].content
    assert SUMMARIES_HEADING in system and "Ann asked many questions" in system
    assert "[2024-05-01 10:00 → 2024-05-01 1" in system


def test_summaries_accumulate_and_the_oldest_half_merges_into_a_compressed_one(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"max_summaries": 3})
    conversation = agent.start_conversation().id
    texts = []
    for hour in range(4):
        add_turns(hive, conversation, 4, start=f"2024-05-0{hour + 1}T10:00")
        texts.append(f"Summary of day {hour + 1}.")
        llm.enqueue(texts[-1])
        if hour == 3:
            llm.enqueue("Days 1 and 2, compressed.")
        llm.enqueue(maintenance_reply())
        outcome = agent.compact(conversation)
        assert outcome.status == "done"
        if hour < 3:  # accumulate, never overwrite
            assert [s.text for s in hive.store.context_summaries(conversation)] == texts
    summaries = hive.store.context_summaries(conversation)
    assert [s.text for s in summaries] == ["Days 1 and 2, compressed.", *texts[2:]]
    merged = summaries[0]
    assert merged.depth == 1 and merged.compressed and len(merged.source_ids) == 2
    assert merged.first_at < summaries[1].first_at and merged.message_count > 0
    assert calls_by_site(llm) == {"compaction": 4, "merge": 1, "maintenance": 4}
    merge_call = next(c for c in llm.calls if c.call_site == "merge")
    assert "Summary of day 1." in merge_call.text and "Summary of day 3." not in merge_call.text
    assert "[compressed]" in agent.context(conversation).messages[0].content
    assert outcome.merged_ids == merged.source_ids


def test_summaries_over_their_budget_merge_too(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"summary_budget_percent": 1.0})  # 81 tokens of 8192
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 4)
    llm.enqueue("word " * 60, maintenance_reply())
    agent.compact(conversation)
    add_turns(hive, conversation, 4, start="2024-05-02T10:00")
    llm.enqueue("more " * 60, "short merged", maintenance_reply())
    outcome = agent.compact(conversation)
    assert outcome.merged_ids and [s.text for s in hive.store.context_summaries(conversation)] == [
        "short merged"
    ]


def test_a_failed_merge_changes_nothing(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"max_summaries": 1})
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 4)
    llm.enqueue("first", maintenance_reply())
    agent.compact(conversation)
    add_turns(hive, conversation, 4, start="2024-05-02T10:00")
    llm.enqueue("second", ProviderError("merge model down"))
    outcome = agent.compact(conversation)
    assert outcome.status == "error" and "merge model down" in (outcome.error or "")
    assert [s.text for s in hive.store.context_summaries(conversation)] == ["first", "second"]


def test_small_batches_wait_but_force_folds_at_least_half(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"threshold_percent": 2.0, "keep_percent": 1.0})
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 3, words=20)  # 6 small messages, far under 2,000 tokens
    assert hive._services.compaction.after_turn(agent.record, conversation) is None
    assert llm.calls == []  # over the trigger, but the batch is not worth a call (§7.5)

    agent.configure(compaction={})  # back to the defaults: everything fits the keep-window
    llm.enqueue("Short talk.", maintenance_reply())
    outcome = agent.compact(conversation)  # forced
    assert outcome.status == "done" and outcome.messages_folded >= 3
    assert len(hive.store.raw_messages(conversation)) <= 3


def test_force_with_nothing_raw_does_nothing(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    outcome = agent.compact(conversation)
    assert outcome.status == "nothing" and outcome.record_id is None and llm.calls == []


def test_catch_up_passes_are_bounded_and_maintenance_runs_once(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"max_catch_up_passes": 3})
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 45)  # a backlog of ~3x the window (e.g. after an outage)
    llm.enqueue(by_prompt(fold="Part."), by_prompt(fold="Part."), by_prompt(fold="Part."))
    llm.enqueue(maintenance_reply())
    outcome = hive._services.compaction.after_turn(agent.record, conversation)
    assert outcome is not None and outcome.passes == 3
    assert calls_by_site(llm) == {"compaction": 3, "maintenance": 1}  # one maintenance call
    assert len(outcome.summary_ids) == 3
    # The one call takes the oldest batches that fit half the model's window; the others stay
    # pending (visible, never skipped) for the next cycle.
    maintenance = next(c for c in llm.calls if c.call_site == "maintenance")
    assert maintenance.text.count("Part.") == 1
    assert len(hive._services.maintenance.pending(agent.id)) == 2
    llm.enqueue(maintenance_reply())
    assert len(hive.resume().maintenance) == 1
    assert len(hive._services.maintenance.pending(agent.id)) == 1


def test_compaction_is_recorded_in_the_conversation_and_published(
    hive: Hive, llm: ScriptedLLM
) -> None:
    seen: list[Event] = []
    hive.events.subscribe(seen.append)
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    archive = [{"op": "add", "content": "Ann plans a trip to Kyoto", "category": "fact"}]
    llm.enqueue("They planned Kyoto.", maintenance_reply(archive, "## Trips\n- Kyoto in June\n"))
    outcome = agent.compact(conversation)

    record = agent.messages(conversation)[-1]
    assert record.is_compaction_record and record.id == outcome.record_id
    assert record.record is not None
    assert record.record["messages_folded"] == outcome.messages_folded > 0
    assert record.record["memories_extracted"] == 1 and record.record["profile_updated"] is True
    assert record.record["summary"] == "They planned Kyoto."
    assert "1 memory extracted, profile updated" in record.content
    assert record not in hive.store.raw_messages(conversation)  # never sent to the model
    types = [e.type for e in seen if not e.type.startswith("agent:")]
    assert types[0] == "compacting:start" and types[-1] == "compacting:done"
    assert "compacting:progress" in types
    assert types.index("memory:created") < types.index("compacting:done")
    assert "profile:updated" in types
    done = seen[-1].data
    assert done["conversation_id"] == conversation and done["memories_extracted"] == 1
    # the record names the profile version the rewrite wrote, whose History diff the UI links to
    assert (record.record["profile_version_before"], record.record["profile_version"]) == (0, 1)
    assert done["profile_version"] == 1
    [rewrite] = [v for v in agent.profile_history() if v["version"] == 1]
    assert (rewrite["operation"], rewrite["changed_by"]) == ("rewrite", "maintenance")
    assert "Kyoto" in rewrite["text"]


def test_a_compaction_that_leaves_the_profile_names_no_version(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    agent.set_profile("## Trips\n- Kyoto in June\n")
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    llm.enqueue("They planned Kyoto.", maintenance_reply([], "## Trips\n- Kyoto in June\n"))
    outcome = agent.compact(conversation)
    assert outcome.details["profile_updated"] is False
    assert outcome.details["profile_version"] is None
    assert outcome.details["profile_version_before"] is None


def test_a_failed_summary_is_recorded_and_folds_nothing(hive: Hive, llm: ScriptedLLM) -> None:
    seen: list[Event] = []
    hive.events.subscribe(seen.append)
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    raw = len(hive.store.raw_messages(conversation))
    llm.enqueue(ProviderError("summariser timed out"))
    outcome = agent.compact(conversation)
    assert outcome.status == "error" and "summariser timed out" in (outcome.error or "")
    assert len(hive.store.raw_messages(conversation)) == raw
    assert hive.store.context_summaries(conversation) == []
    assert "Compaction failed: " in agent.messages(conversation)[-1].content
    assert seen[-1].type == "compacting:error" and "timed out" in seen[-1].data["error"]


def test_a_failed_maintenance_stays_pending_and_the_next_compaction_retries_it_once(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    llm.enqueue("First part.", ProviderError("maintenance model down"))
    outcome = agent.compact(conversation)
    assert outcome.status == "done" and outcome.maintenance is not None
    assert outcome.maintenance.status == "failed"
    assert "it will be retried" in agent.messages(conversation)[-1].content
    (pending,) = hive._services.maintenance.pending(agent.id)
    assert pending.maintenance_status == "failed" and pending.maintenance_attempts == 1

    add_turns(hive, conversation, 6, start="2024-05-02T10:00")
    archive = [{"op": "add", "content": "Ann likes tea", "category": "preference"}]
    llm.enqueue("Second part.", maintenance_reply(archive))
    agent.compact(conversation)
    maintenance_calls = [c for c in llm.calls if c.call_site == "maintenance"]
    assert len(maintenance_calls) == 2  # the failed one, then one call for both batches
    assert (
        "First part." in maintenance_calls[1].text and "Second part." in maintenance_calls[1].text
    )
    assert hive._services.maintenance.pending(agent.id) == []
    assert agent.list_memories().memories[0].content == "Ann likes tea"


def test_one_compaction_per_agent_at_a_time_in_and_across_processes(
    hive: Hive, llm: ScriptedLLM, db_path: Path
) -> None:
    agent = hive.create_agent("sam")
    other = hive.create_agent("kim")
    conversation = agent.start_conversation().id
    other_conversation = other.start_conversation().id
    add_turns(hive, conversation, 6)
    add_turns(hive, other_conversation, 6)
    observed: dict[str, Any] = {}

    def summarise_while_others_try(messages: list[Message], tools: Any) -> str:
        with pytest.raises(AgentBusy):
            agent.compact(conversation)
        observed["child"] = subprocess.run(
            [sys.executable, "-c", CHILD.format(db=str(db_path))],
            capture_output=True,
            text=True,
            timeout=120,
        )
        llm.enqueue("Kim's part.", maintenance_reply())  # another agent is not blocked
        observed["other"] = other.compact(other_conversation).status
        return "Sam's part."

    llm.enqueue(summarise_while_others_try)
    llm.enqueue(maintenance_reply())
    assert agent.compact(conversation).status == "done"
    child = observed["child"]
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "busy"
    assert observed["other"] == "done"
    llm.enqueue(maintenance_reply())
    add_turns(hive, conversation, 6, start="2024-05-02T10:00")
    llm.enqueue("Again.", maintenance_reply())
    assert agent.compact(conversation).status == "done"  # the lease was released


CHILD = textwrap.dedent(
    """
    from hivekeep import Hive, Settings
    from hivekeep.store.leases import AgentBusy
    from hivekeep.testing import ScriptedLLM
    from tests.support import VectorTable
    hive = Hive({db!r}, embedder="local", settings=Settings(), llm=ScriptedLLM())
    agent = hive.get_agent("sam")
    try:
        agent.compact(agent.conversations()[0].id)
        print("ran")
    except AgentBusy:
        print("busy")
    """
)


def test_per_agent_overrides_are_validated_and_applied(hive: Hive) -> None:
    agent = hive.create_agent("sam")
    agent.configure(compaction={"threshold_percent": 60.0, "keep_percent": 30.0})
    numbers = agent.compaction_settings()
    assert (numbers.threshold_percent, numbers.keep_percent, numbers.max_summaries) == (60, 30, 10)
    for bad in ({"keep_percent": 80.0}, {"max_summaries": 0}, {"colour": "red"}):
        with pytest.raises(ValidationError):
            agent.configure(compaction=bad)
    assert agent.compaction_settings() == numbers  # nothing saved by a refused change
    assert hive.create_agent("kim").compaction_settings().threshold_percent == 75.0
