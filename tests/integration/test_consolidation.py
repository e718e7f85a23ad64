"""Consolidation in the maintenance call, end to end: a real hive, the bundled embedder, and
``ScriptedLLM`` answering the one maintenance call with ``<consolidate>`` ops."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hivekeep import Agent, Hive
from hivekeep.core.consolidation import MAX_CONTENT, TWIN_SIMILARITY
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Message
from hivekeep.store.base import NewMemory
from hivekeep.testing import ScriptedLLM
from hivekeep.types import Actor, Category
from tests.postgres import hive_target
from tests.support import twins_section

from .conversation_support import add_turns, maintenance_reply

NURSE = "The user works as a nurse at the city hospital."
NURSE_AGAIN = "The user is employed as a nurse at the city hospital."
PORTO = "Ann works at the bakery in Porto."
LISBON = "Ann works at the bakery in Lisbon."
PAINTS = "The user enjoys painting watercolours."
ADDED = {"op": "add", "content": "Ann baked bread on 2024-05-01", "subject": "Ann"}
PROFILE = "## User\n- A nurse\n"


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=16_000)


def open_hive(backend: str, embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    with hive_target(backend) as target, Hive(target, embedder=embedder, llm=llm) as hive:
        yield hive


@pytest.fixture
def hive(local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    yield from open_hive("sqlite", local_embedder, llm)


def remember(agent: Agent) -> dict[str, int]:
    """Two groups of near twins and one memory without a twin, written as the agent."""
    ids = {}
    for text, subject in [
        (NURSE, "user"),
        (PORTO, "Ann"),
        (PAINTS, "user"),
        (NURSE_AGAIN, "user"),
        (LISBON, "Ann"),
    ]:
        result = agent.memorize(text, category="fact", subject=subject)
        assert not result.duplicate  # the write path keeps restatements apart
        ids[text] = result.memory.id
    return ids


def compact(hive: Hive, agent: Agent, llm: ScriptedLLM, reply: Any) -> Any:
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    llm.enqueue("Ann talked about her work.", reply)
    outcome = agent.compact(conversation)
    assert outcome.maintenance is not None and outcome.maintenance.status == "done"
    return outcome.maintenance


def reply_with(ops: Any) -> str:
    body = ops if isinstance(ops, str) else json.dumps(ops)
    return maintenance_reply([ADDED], PROFILE) + f"\n<consolidate>\n{body}\n</consolidate>"


def maintenance_prompt(llm: ScriptedLLM) -> str:
    """The user message of the maintenance call (the system prompt names the blocks too)."""
    return next(c for c in llm.calls if c.call_site == "maintenance").messages[-1].content


def twins_block(llm: ScriptedLLM) -> str:
    block = twins_section(maintenance_prompt(llm))
    assert block is not None
    return block


def test_measured_pairs_fall_on_their_side_of_the_threshold(local_embedder: LocalEmbedder) -> None:
    """The threshold, on pairs measured with the bundled model (see TWIN_SIMILARITY)."""
    twins = [
        (NURSE, NURSE_AGAIN),
        (PORTO, LISBON),
        ("The user has a dog called Rex.", "The user's dog is Rex."),
        ("The team meets every Monday at 10.", "Team meetings are on Mondays at 10."),
        ("The user is allergic to peanuts.", "The user has a peanut allergy."),
    ]
    apart = [
        (NURSE, PAINTS),
        ("Ann's sister is called Eva.", "Ann's brother is called Leo."),
        ("The user works at Google.", "The user's wife works at Google."),
        ("Ann visited Rome in 2023.", "Ann visited Paris in 2022."),
    ]
    vectors = local_embedder.embed([t for pair in twins + apart for t in pair])
    cosines = [float(np.dot(vectors[i], vectors[i + 1])) for i in range(0, len(vectors), 2)]
    assert all(c >= TWIN_SIMILARITY for c in cosines[: len(twins)]), cosines
    assert all(c < TWIN_SIMILARITY for c in cosines[len(twins) :]), cosines


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_prompt_holds_the_groups_of_the_agents_own_memories(
    backend: str, local_embedder: LocalEmbedder, llm: ScriptedLLM
) -> None:
    for hive in open_hive(backend, local_embedder, llm):
        sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
        ids = remember(sam)
        shared = bob.memorize(NURSE_AGAIN + "!", category="fact", scope="shared")
        compact(hive, sam, llm, maintenance_reply([], PROFILE))
        groups = re.split(r"^Group \d+.*:$", twins_block(llm), flags=re.MULTILINE)[1:]
        shown = sorted(sorted(int(i) for i in re.findall(r"^- id (\d+) ", g, re.M)) for g in groups)
        assert shown == sorted(
            [sorted([ids[NURSE], ids[NURSE_AGAIN]]), sorted([ids[PORTO], ids[LISBON]])]
        )
        block = twins_block(llm)
        for text in (NURSE, NURSE_AGAIN, PORTO, LISBON):
            assert json.dumps(text) in block
        assert PAINTS not in block and f"id {shared.memory.id} " not in block
        assert sum(c.call_site == "maintenance" for c in llm.calls) == 1  # still one call


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_merge_and_retire_are_applied_recorded_and_undone(
    backend: str, local_embedder: LocalEmbedder, llm: ScriptedLLM
) -> None:
    for hive in open_hive(backend, local_embedder, llm):
        sam = hive.create_agent("sam")
        ids = remember(sam)
        merged = "The user works as a nurse at the city hospital (restated twice)."
        ops = [
            {"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": merged},
            {"retire": ids[PORTO], "reason": "Ann moved to the Lisbon bakery"},
        ]
        result = compact(hive, sam, llm, reply_with(ops))
        assert result.memories_consolidated == 2 and result.memories_added == 1
        record = sam.messages(sam.conversations()[0].id)[-1]
        assert record.record is not None and record.record["memories_consolidated"] == 2
        assert "1 memory extracted, 2 memories consolidated" in record.content
        assert f"retired memory {ids[PORTO]}: Ann moved to the Lisbon bakery" in result.notes
        live = {m.id: m.content for m in sam.list_memories(limit=50).memories}
        assert live[ids[NURSE]] == merged
        assert ids[NURSE_AGAIN] not in live and ids[PORTO] not in live
        assert {t.memory.id for t in sam.trash().memories} == {ids[NURSE_AGAIN], ids[PORTO]}
        kept = sam.memory_history(ids[NURSE])[0]
        assert (kept["changed_by"], kept["operation"], kept["content"]) == (
            "maintenance",
            "update",
            merged,
        )
        for forgotten in (ids[NURSE_AGAIN], ids[PORTO]):
            top = sam.memory_history(forgotten)[0]
            assert (top["changed_by"], top["operation"]) == ("maintenance", "forget")
        assert sam.recall("nurse city hospital").hits[0].memory.content == merged  # re-embedded

        sam.restore_memory(ids[NURSE], version=1)
        sam.restore_memory(ids[NURSE_AGAIN])
        sam.restore_memory(ids[PORTO])
        live = {m.id: m.content for m in sam.list_memories(limit=50).memories}
        assert {live[ids[t]] for t in (NURSE, NURSE_AGAIN, PORTO)} == {NURSE, NURSE_AGAIN, PORTO}


def test_valid_ops_land_when_the_archive_block_is_broken(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    ids = remember(sam)
    ops = json.dumps([{"retire": ids[PORTO]}])
    reply = f"<archive>[{{op: </archive>\n<profile>\n{PROFILE}</profile>\n"
    reply += f"<consolidate>{ops}</consolidate>"
    result = compact(hive, sam, llm, reply)
    assert result.memories_consolidated == 1 and result.profile_updated
    assert [t.memory.id for t in sam.trash().memories] == [ids[PORTO]]


def test_twins_written_before_the_batch_are_shown_only_with_a_new_one(
    hive: Hive, llm: ScriptedLLM
) -> None:
    sam = hive.create_agent("sam")
    old = "2024-01-10T10:00:00.000000Z"  # before the batch (add_turns starts on 2024-05-01)
    written = hive._services.archive.memorize_many(
        [
            NewMemory(sam.id, text, Category.FACT, "Ann", created_at=old, updated_at=old)
            for text in (PORTO, LISBON)
        ]
    )
    compact(hive, sam, llm, maintenance_reply([], PROFILE))
    assert (
        twins_section(maintenance_prompt(llm)) is None
    )  # an earlier call saw them and left them apart
    fresh = sam.memorize("Ann is employed at the bakery in Lisbon.", category="fact", subject="Ann")
    assert not fresh.duplicate
    llm.calls.clear()
    compact(hive, sam, llm, maintenance_reply([], PROFILE))
    block = twins_block(llm)
    assert f"id {fresh.memory.id} " in block  # the new one, with its old twins
    assert any(f"id {w.memory.id} " in block for w in written)


MALFORMED: list[tuple[str, Any]] = [
    ("unknown id", lambda ids, other: [{"retire": 99_999}]),
    (
        "another agent's shared id",
        lambda ids, other: [{"merge": [ids[NURSE], other], "content": "x"}],
    ),
    ("another agent's retire", lambda ids, other: [{"retire": other}]),
    ("id twice", lambda ids, other: [{"retire": ids[PORTO]}, {"retire": ids[PORTO]}]),
    (
        "id in two ops",
        lambda ids, other: [
            {"retire": ids[NURSE_AGAIN]},
            {"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": "x"},
        ],
    ),
    ("string id", lambda ids, other: [{"retire": str(ids[PORTO])}]),
    ("not a list", lambda ids, other: {"retire": ids[PORTO]}),
    ("not JSON", lambda ids, other: "[{retire: 3"),
    (
        "empty content",
        lambda ids, other: [{"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": ""}],
    ),
    (
        "huge content",
        lambda ids, other: [
            {"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": "x" * (MAX_CONTENT + 1)}
        ],
    ),
    (
        "a whole group retired",
        lambda ids, other: [
            {"retire": ids[PORTO]},
            {"retire": ids[LISBON]},
        ],
    ),
    ("a memory shown but not in a group", lambda ids, other: [{"retire": ids[PAINTS]}]),
]


@pytest.mark.parametrize(("case", "ops"), MALFORMED, ids=[case for case, _ in MALFORMED])
def test_malformed_ops_change_nothing_and_the_rest_lands(
    hive: Hive, llm: ScriptedLLM, case: str, ops: Any
) -> None:
    sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
    ids = remember(sam)
    other = bob.memorize(
        "Bob's note: the user is a nurse at the city hospital.", category="fact", scope="shared"
    )
    # a valid op first: one invalid op must keep it from being applied too
    valid = [{"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": "merged"}]
    chosen = ops(ids, other.memory.id)
    body = valid + chosen if isinstance(chosen, list) else chosen
    before = sorted((m.id, m.content) for m in sam.list_memories(limit=50).memories)
    result = compact(hive, sam, llm, reply_with(body))
    after = sorted((m.id, m.content) for m in sam.list_memories(limit=50).memories)
    assert [m for m in after if m[1] != ADDED["content"]] == before, case
    assert sam.trash().total == 0 and result.memories_consolidated == 0
    assert any(n.startswith("consolidation not applied") for n in result.notes), result.notes
    assert result.memories_added == 1 and result.profile_updated  # the other halves land
    assert bob.memory(other.memory.id).content.startswith("Bob's note")


def test_a_memory_changed_while_the_model_thought_is_not_touched(
    hive: Hive, llm: ScriptedLLM
) -> None:
    sam = hive.create_agent("sam")
    ids = remember(sam)
    edited = "The user works as a senior nurse at the city hospital."

    def edit_then_answer(messages: list[Message], tools: Any) -> str:
        sam.update_memory(
            ids[NURSE], content=edited, by=Actor.PERSON
        )  # a person edits it during the call
        return reply_with(
            [
                {"retire": ids[PORTO]},
                {"merge": [ids[NURSE], ids[NURSE_AGAIN]], "content": "merged"},
            ]
        )

    result = compact(hive, sam, llm, edit_then_answer)
    live = {m.id: m.content for m in sam.list_memories(limit=50).memories}
    assert live[ids[NURSE]] == edited and ids[PORTO] in live and ids[NURSE_AGAIN] in live
    assert any("changed or was forgotten" in n for n in result.notes), result.notes
