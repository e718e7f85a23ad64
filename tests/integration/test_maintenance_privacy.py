"""Privacy follows the text (issue 32, item 2): the maintenance call, run on one agent's
conversation, never moves what a private memory or the conversation says into a shared memory,
and never removes a fact another agent could recall. A real SQLite hive, the bundled embedder,
and ``ScriptedLLM`` answering the maintenance call (with random ops in the property test)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hivekeep import Agent, Hive
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Message
from hivekeep.testing import ScriptedLLM
from hivekeep.types import Actor
from tests.postgres import hive_target
from tests.support import twins_section

from .conversation_support import add_turns, maintenance_reply

PROFILE = "## User\n- A nurse\n"
# (text, subject, scope) of the maintained agent's memories: the first two private ones have a
# shared near twin of the same subject (cosine 0.96 and 0.93 with the bundled model), the case
# where a merge would publish the private text or forget the shared fact; the last one is a
# private twin of the third, so a group is shown and valid ops can land
SAM = [
    ("The user works as a nurse at the city hospital.", "user", "private"),
    ("The user is employed as a nurse at the city hospital.", "user", "shared"),
    ("Ann works at the bakery in Porto.", "Ann", "private"),
    ("Ann works at the bakery in Lisbon.", "Ann", "shared"),
    ("The user's nurse badge number is 4471.", "user", "private"),
    ("Ann is employed at the bakery in Porto.", "Ann", "private"),
]
BOB = [
    ("Bob's note: the user is a nurse at the city hospital.", "user", "shared"),
    ("Bob's locker code is 9321.", "locker", "private"),
]


def words(*texts: str | None) -> set[str]:
    return {w for text in texts if text for w in re.findall(r"\w+", text.casefold())}


def write(agent: Agent, memories: list[tuple[str, str, str]]) -> list[int]:
    ids = []
    for text, subject, scope in memories:
        result = agent.memorize(text, category="fact", subject=subject, scope=scope)
        assert not result.duplicate
        ids.append(result.memory.id)
    return ids


def compact(hive: Hive, agent: Agent, llm: ScriptedLLM, reply: Any) -> Any:
    conversation = agent.start_conversation().id
    add_turns(hive, conversation, 6)
    llm.enqueue("Ann talked about her work.", reply)
    outcome = agent.compact(conversation)
    assert outcome.maintenance is not None and outcome.maintenance.status == "done"
    return outcome.maintenance


def user_message(messages: list[Message]) -> str:
    return messages[-1].content


def known_index(prompt: str, text: str) -> int:
    """The index the prompt's known memories give ``text``."""
    found = re.search(rf"^\[(\d+)\] \([^)]*\) {re.escape(text)}$", prompt, re.MULTILINE)
    assert found is not None, text
    return int(found.group(1))


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=16_000)


@pytest.fixture
def hive(local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    with hive_target("sqlite") as target, Hive(target, embedder=local_embedder, llm=llm) as hive:
        yield hive


def test_the_prompt_shows_each_scope_and_groups_private_twins_only(
    hive: Hive, llm: ScriptedLLM
) -> None:
    sam = hive.create_agent("sam")
    ids = write(sam, SAM)
    compact(hive, sam, llm, maintenance_reply([], PROFILE))
    call = next(c for c in llm.calls if c.call_site == "maintenance")
    system, prompt = call.messages[0].content, call.messages[-1].content
    assert "every agent" in system and '"shared"' in system
    for text, subject, scope in SAM:
        assert f"] ({scope}; fact, {subject}; " in prompt.split(text)[0].rsplit("\n", 1)[-1]
    block = twins_section(prompt)
    assert block is not None
    shown = sorted(int(i) for i in re.findall(r"^- id (\d+) \(private; ", block, re.MULTILINE))
    assert shown == sorted([ids[2], ids[5]]), block  # the private twins, never the shared ones


def test_an_update_of_a_shared_memory_becomes_a_new_private_memory(
    hive: Hive, llm: ScriptedLLM
) -> None:
    sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
    ids = write(sam, SAM)
    correction = "The user is employed as a nurse at the city hospital in Porto since 2019."

    def update_the_shared_one(messages: list[Message], tools: Any) -> str:
        index = known_index(user_message(messages), SAM[1][0])
        return maintenance_reply([{"op": "update", "index": index, "content": correction}], PROFILE)

    result = compact(hive, sam, llm, update_the_shared_one)
    assert bob.memory(ids[1]).content == SAM[1][0]  # what every agent reads is unchanged
    assert sam.memory(ids[1]).content == SAM[1][0]
    (kept,) = [m for m in sam.list_memories(limit=50).memories if m.content == correction]
    assert kept.scope.value == "private" and kept.subject == "user"
    assert result.memories_added == 1 and result.memories_updated == 0
    assert any("stored as a new private memory" in note for note in result.notes), result.notes
    assert correction not in {m.content for m in bob.list_memories(limit=50).memories}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_memory_shared_while_the_model_thinks_is_not_changed(
    backend: str, local_embedder: LocalEmbedder, llm: ScriptedLLM
) -> None:
    """The update and the merge were written for private memories: a person shares one during
    the call, and neither lands (the update is rolled back in its own transaction)."""
    with hive_target(backend) as target, Hive(target, embedder=local_embedder, llm=llm) as hive:
        shared_mid_call(hive, llm)


def shared_mid_call(hive: Hive, llm: ScriptedLLM) -> None:
    sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
    nurse, nurse_again = write(sam, [SAM[0], (SAM[1][0], "user", "private")])
    secret = "The user works as a nurse at the city hospital, night shifts in ward 7."

    def share_then_answer(messages: list[Message], tools: Any) -> str:
        index = known_index(user_message(messages), SAM[0][0])
        sam.update_memory(nurse, scope="shared", by=Actor.PERSON)
        ops = [{"merge": [nurse_again, nurse], "content": secret}]
        return (
            maintenance_reply([{"op": "update", "index": index, "content": secret}], PROFILE)
            + f"\n<consolidate>{json.dumps(ops)}</consolidate>"
        )

    result = compact(hive, sam, llm, share_then_answer)
    assert bob.memory(nurse).content == SAM[0][0]
    assert sam.memory(nurse_again).content == SAM[1][0]
    assert result.memories_updated == 0 and result.memories_consolidated == 0
    notes = " | ".join(result.notes)
    assert "changed or was forgotten" in notes and "it is shared now" in notes, notes


# the property: random ops over mixed scopes ------------------------------------------------------

TOKENS = sorted(
    words(*(t for t, _, _ in SAM + BOB))
    | {"word0x1", "word1x3", "reply2x5", "porto", "4471", "9321"}
)
text = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).map(" ".join)


def random_reply(data: st.DataObject, sam_ids: list[int], other_ids: list[int]) -> Any:
    """A maintenance reply drawn against the prompt it answers: adds, updates of listed and
    unlisted indexes, merges and retires over the shown groups, the agent's other memories,
    another agent's memories and unknown ids."""

    def answer(messages: list[Message], tools: Any) -> str:
        prompt = user_message(messages)
        listed = len(re.findall(r"^\[\d+\] \(", prompt, re.MULTILINE))
        shown = [int(i) for i in re.findall(r"^- id (\d+) ", twins_section(prompt) or "", re.M)]
        anywhere = st.sampled_from(sam_ids + other_ids + [10**6])
        near: bool = bool(shown) and data.draw(st.integers(0, 3)) > 0  # groups' ids, or any
        some_id = st.sampled_from(shown) if near else anywhere
        merged = st.permutations(shown) if near else st.lists(anywhere, min_size=2, max_size=3)
        archive = data.draw(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {"op": st.just("add"), "content": text},
                        optional={"subject": st.sampled_from(["user", "Ann", "porto"])},
                    ),
                    st.fixed_dictionaries(
                        {"op": st.just("update"), "index": st.integers(-1, listed)},
                        optional={
                            "content": text,
                            "subject": st.sampled_from(["user", "Ann", "4471"]),
                            "category": st.sampled_from(["fact", "knowledge"]),
                        },
                    ),
                ),
                max_size=4,
            )
        )
        op = st.one_of(
            st.fixed_dictionaries({"merge": merged, "content": text}),
            st.fixed_dictionaries({"retire": some_id}),
        )
        # one op alone lands more often (one invalid op and none is applied)
        consolidate = data.draw(
            st.lists(op, min_size=1, max_size=1) | st.lists(op, max_size=3) | st.none()
        )
        reply = maintenance_reply(archive, PROFILE)
        if consolidate is not None:
            reply += f"\n<consolidate>{json.dumps(consolidate)}</consolidate>"
        return reply

    return answer


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_maintenance_run_moves_private_text_into_a_shared_memory(
    local_embedder: LocalEmbedder, data: st.DataObject
) -> None:
    """After any maintenance run, no shared memory holds a word found only in the agent's
    private memories or its conversation, and every shared memory another agent could read
    before is still there, with every word it had (a real SQLite hive, the bundled model)."""
    llm = ScriptedLLM(context_window=16_000)
    with hive_target("sqlite") as target, Hive(target, embedder=local_embedder, llm=llm) as hive:
        sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
        sam_ids, bob_ids = write(sam, SAM), write(bob, BOB)
        shared_before = {
            m.id: words(m.content, m.subject)
            for m in bob.list_memories(scope="shared", limit=200).memories
        }
        outcome = compact(hive, sam, llm, random_reply(data, sam_ids, bob_ids))
        event(f"consolidated: {bool(outcome.memories_consolidated)}")
        event(f"updated: {bool(outcome.memories_updated)}")
        conversation = sam.messages(sam.conversations()[0].id)
        said = [m.content for m in conversation if m.record is None]  # not the compaction's
        private = sam.list_memories(scope="private", limit=200).memories
        private_only = words(*said, *(t for t, _, s in SAM if s == "private")) | words(
            *(m.content for m in private), *(m.subject for m in private)
        )
        private_only -= set().union(*shared_before.values())
        shared_after = bob.list_memories(scope="shared", limit=200).memories
        assert {m.id for m in shared_after} == set(shared_before)  # none made, none removed
        for memory in shared_after:
            held = words(memory.content, memory.subject)
            assert not held & private_only, (memory.content, held & private_only)
            assert shared_before[memory.id] <= held, memory.content
