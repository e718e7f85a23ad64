"""Remember now (issue 36): ``agent.remember`` runs the maintenance call over the given messages
at once, through the one write path, and says what was added, reworded or left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivekeep import Agent, Hive, LLMNotConfigured, Message, Settings, ValidationError
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM

from .conversation_support import maintenance_reply


@pytest.fixture
def hive(scripted_hive: Hive) -> Hive:
    return scripted_hive


@pytest.fixture
def agent(hive: Hive) -> Agent:
    agent = hive.create_agent("sam")
    agent.memorize("The user has a dog called Rex", category="fact", subject="user")
    return agent


ADD = {"op": "add", "content": "The user moved to Lisbon in May 2024", "subject": "user"}
KNOWN = {"op": "add", "content": "The user has a dog called Rex", "subject": "user"}


def test_openai_dicts_are_remembered_now_and_the_answer_says_what_happened(
    agent: Agent, llm: ScriptedLLM
) -> None:
    llm.enqueue(maintenance_reply([ADD, KNOWN], "## User\n- Lives in Lisbon\n"))
    result = agent.remember(
        [
            {"role": "user", "content": "I moved to Lisbon in May 2024, with Rex my dog."},
            {"role": "assistant", "content": "Noted: Lisbon since May 2024."},
        ]
    )
    assert result.status == "done"
    assert [m.content for m in result.added] == [ADD["content"]]
    assert [m.content for m in result.left_alone] == [KNOWN["content"]]
    assert result.profile_updated and agent.profile_text().startswith("## User")
    assert agent.recall("where does the user live").hits[0].memory.content == ADD["content"]
    (call,) = llm.calls  # one call: the maintenance call, no summariser
    assert call.call_site == "maintenance"
    assert "I moved to Lisbon in May 2024" in call.text
    assert "Noted: Lisbon since May 2024." in call.text
    stored = agent.messages(result.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert result.to_json()["added"][0]["content"] == ADD["content"]


def test_a_text_is_a_user_message_and_message_objects_work_too(
    agent: Agent, llm: ScriptedLLM
) -> None:
    llm.enqueue(maintenance_reply([ADD], ""), maintenance_reply([], ""))
    assert len(agent.remember("I moved to Lisbon in May 2024.").added) == 1
    result = agent.remember([Message("user", "Nothing new today.")])
    assert result.added == () and result.status == "done"
    assert "I moved to Lisbon" in llm.calls[0].text


def test_a_maintenance_update_is_reported_as_reworded(agent: Agent, llm: ScriptedLLM) -> None:
    update = {"op": "update", "index": 0, "content": "The user has a beagle called Rex"}
    llm.enqueue(maintenance_reply([update], ""))
    result = agent.remember("Rex is a beagle.")
    assert [m.content for m in result.reworded] == ["The user has a beagle called Rex"]


def test_without_a_model_it_names_hivekeep_llm_and_stores_nothing(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("sam")
        with pytest.raises(LLMNotConfigured, match="HIVEKEEP_LLM"):
            agent.remember("I moved to Lisbon.")
        assert agent.conversations() == []
        assert agent.list_memories().total == 0


def test_bad_messages_are_refused_before_anything_is_stored(agent: Agent) -> None:
    for bad in (
        [{"content": "no role"}],
        [{"role": "wizard", "content": "x"}],
        [{"role": "user", "content": 5}],
        [{"role": "user", "content": [1, 2]}],
        [{"role": "assistant", "tool_calls": [{"x": 1}]}],
        [42],
        ["  "],
    ):
        with pytest.raises(ValidationError):
            agent.remember(bad)  # type: ignore[arg-type]
    assert agent.conversations() == []


def test_a_failed_call_leaves_the_batch_waiting_for_the_next_run(
    agent: Agent, llm: ScriptedLLM
) -> None:
    llm.enqueue("no blocks at all", maintenance_reply([ADD], ""))
    result = agent.remember("I moved to Lisbon in May 2024.")
    assert result.status == "failed" and result.error
    assert agent.catch_up().memories_added == 1


def test_a_busy_agent_stores_nothing(hive: Hive, agent: Agent) -> None:
    from hivekeep import AgentBusy
    from hivekeep.store.leases import AgentLease

    with AgentLease(hive.store, agent.id), pytest.raises(AgentBusy):
        agent.remember("I moved to Lisbon.")
    assert agent.conversations() == []
