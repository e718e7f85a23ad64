"""The agent loop: context, tools fed back, bounded steps, stored messages, memory per agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, ProviderError, Settings, ValidationError
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Completion, TextDelta, ToolCall
from hivekeep.services.chat import MAX_STEPS, ChatReply, ToolUse
from hivekeep.services.llms import LLMNotConfigured
from hivekeep.testing import ScriptedLLM

from .conversation_support import calls_by_site


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=32_000)


@pytest.fixture
def hive(db_path: Path, local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as opened:
        yield opened


def memorize_call(content: str, call_id: str = "call_1") -> Completion:
    return Completion(
        tool_calls=[ToolCall(call_id, "memorize", {"content": content, "category": "preference"})]
    )


def test_a_turn_runs_tools_and_stores_every_message(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam", role="You are Sam, a travel assistant.")
    agent.edit_profile("User", "append", "Name: Ann")
    llm.enqueue(memorize_call("Ann prefers window seats"), "Noted: window seats.")
    reply = agent.chat("I always pick window seats.", speaker="Ann")

    assert reply.content == "Noted: window seats." and reply.steps == 2
    assert [u.name for u in reply.tool_uses] == ["memorize"]
    assert reply.tool_uses[0].result["content"] == "Ann prefers window seats"
    first, second = llm.calls
    # The profile sits in the system prefix; the tools are offered; no search was made for it.
    assert first.messages[0].role == "system"
    assert first.messages[0].content.startswith("You are Sam, a travel assistant.")
    assert "## User\n- Name: Ann" in first.messages[0].content  # a new section's line is bulleted
    assert first.tools is not None and len(first.tools) == 7
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[1].name == "Ann"
    # The tool result was fed back on the second step.
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[3].tool_call_id == "call_1"
    assert '"duplicate": false' in second.messages[3].content

    stored = agent.messages(reply.conversation_id)
    assert [(m.role, m.tool_name, m.speaker) for m in stored] == [
        ("user", None, "Ann"),
        ("assistant", None, None),
        ("tool", "memorize", None),
        ("assistant", None, None),
    ]
    assert stored[1].tool_calls[0].name == "memorize" and stored[2].tool_call_id == "call_1"
    assert all(m.created_at and m.tokens > 0 for m in stored)
    assert agent.recall("seat preference").hits[0].memory.content == "Ann prefers window seats"


def test_streaming_yields_text_tool_uses_then_the_reply(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    llm.enqueue(memorize_call("Likes jazz"), "I will remember that you like jazz music a lot.")
    events = list(agent.chat_stream("I like jazz"))
    assert isinstance(events[0], ToolUse) and isinstance(events[-1], ChatReply)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == events[-1].content == "I will remember that you like jazz music a lot."
    assert sum(isinstance(e, TextDelta) for e in events) > 1
    assert all(call.streamed for call in llm.calls)


def test_tool_steps_are_bounded_and_the_last_step_offers_no_tools(
    hive: Hive, llm: ScriptedLLM
) -> None:
    agent = hive.create_agent("sam")
    for step in range(MAX_STEPS - 1):
        llm.enqueue(
            Completion(tool_calls=[ToolCall(f"c{step}", "recall", {"query": f"thing {step}"})])
        )
    llm.enqueue(
        Completion(content="Giving up searching.", tool_calls=[ToolCall("x", "recall", {})])
    )
    reply = agent.chat("Find everything")
    assert reply.steps == MAX_STEPS and reply.content == "Giving up searching."
    assert llm.calls[-1].tools is None and all(c.tools for c in llm.calls[:-1])
    last = agent.messages(reply.conversation_id)[-1]
    assert last.role == "assistant" and last.tool_calls == ()  # no call left without a result


def test_bad_tool_calls_get_errors_the_model_can_act_on(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    llm.enqueue(
        Completion(
            tool_calls=[
                ToolCall("a", "memorize", {"__raw_arguments__": "{not json"}),
                ToolCall("b", "recall", {"query": ""}),
                ToolCall("c", "launch_rockets", {}),
            ]
        ),
        "Sorry.",
    )
    reply = agent.chat("Do things")
    errors = [u.result["error"] for u in reply.tool_uses]
    assert "not a JSON object" in errors[0]
    assert "query" in errors[1]
    assert "Unknown tool" in errors[2]
    assert agent.list_memories().total == 0


def test_memory_is_per_agent_across_conversations(hive: Hive, llm: ScriptedLLM) -> None:
    sam, kim = hive.create_agent("sam"), hive.create_agent("kim")
    llm.enqueue(memorize_call("Ann's dog is called Rex"), "Noted.")
    first = sam.chat("My dog is Rex")
    llm.enqueue(Completion(tool_calls=[ToolCall("r", "recall", {"query": "dog name"})]), "Rex!")
    second = sam.chat("What's my dog called?")
    assert second.conversation_id != first.conversation_id
    assert "Rex" in second.tool_uses[0].result["memories"][0]["content"]
    llm.enqueue(Completion(tool_calls=[ToolCall("r", "recall", {"query": "dog name"})]), "?")
    other = kim.chat("What's my dog called?")
    assert other.tool_uses[0].result["memories"] == []  # private to sam
    assert {c.id for c in sam.conversations()} == {first.conversation_id, second.conversation_id}
    with pytest.raises(Exception, match="No conversation"):
        kim.messages(first.conversation_id)


def test_continuing_a_conversation_sends_its_history(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    llm.enqueue("Hello Ann.", "You said hi.")
    first = agent.chat("Hi, I'm Ann")
    agent.chat("What did I say?", first.conversation_id)
    assert [m.content for m in llm.calls[1].messages[1:]] == [
        "Hi, I'm Ann",
        "Hello Ann.",
        "What did I say?",
    ]
    assert calls_by_site(llm) == {"chat": 2}


def test_bad_chat_input_is_refused_before_anything_is_stored(hive: Hive, llm: ScriptedLLM) -> None:
    agent = hive.create_agent("sam")
    for message in ("", "   ", "x" * 100_001):
        with pytest.raises(ValidationError):
            agent.chat(message)
    with pytest.raises(Exception, match="No conversation"):
        agent.chat("hello", 999)
    assert agent.conversations() == [] and llm.calls == []


def test_without_a_model_chat_says_what_to_configure(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("sam")
        with pytest.raises(LLMNotConfigured, match="HIVEKEEP_LLM=openai:gpt-4o-mini"):
            agent.chat("hello")
        assert agent.conversations() == []
        assert "HIVEKEEP_LLM" in agent.call_tool("review_memories", {})["error"]


def test_per_agent_models(db_path: Path, local_embedder: LocalEmbedder) -> None:
    default, special = ScriptedLLM(["from default"]), ScriptedLLM(["from special"])
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=default) as hive:
        sam, kim = hive.create_agent("sam"), hive.create_agent("kim")
        hive.set_agent_llm("kim", special)
        assert sam.chat("hi").content == "from default"
        assert kim.chat("hi").content == "from special"
        hive.set_agent_llm("kim", "openai:gpt-4o-mini")  # a spec is stored with the agent
        assert kim.settings().model == "openai:gpt-4o-mini"


def test_a_failed_turn_is_stored_once_and_retried_in_place(hive: Hive, llm: ScriptedLLM) -> None:
    """The model fails: the message stays stored, unanswered; sending it again answers that turn
    (not a second copy, which the model would read as two identical user turns)."""
    agent = hive.create_agent("sam")
    conversation = agent.start_conversation().id
    llm.enqueue(ProviderError("the model is down"), "Lisbon, since May.", "As I said: Lisbon.")
    with pytest.raises(ProviderError):
        agent.chat("Where does Ann live?", conversation, speaker="Ann")
    assert [m.role for m in agent.messages(conversation)] == ["user"]
    reply = agent.chat("Where does Ann live?", conversation, speaker="Ann")
    assert reply.content == "Lisbon, since May."
    stored = agent.messages(conversation)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Where does Ann live?"),
        ("assistant", "Lisbon, since May."),
    ]
    assert [m.role for m in llm.calls[-1].messages] == ["system", "user"]
    agent.chat("Where does Ann live?", conversation, speaker="Ann")  # answered: a new turn
    assert [m.role for m in agent.messages(conversation)][-2:] == ["user", "assistant"]
    assert len(agent.messages(conversation)) == 4


def test_add_messages_takes_openai_style_dicts(hive: Hive) -> None:
    """Issue 34: a framework's history is usually dicts; add_messages refused them."""
    agent = hive.create_agent("sam")
    conversation = agent.conversations.start().id
    stored = agent.add_messages(
        conversation,
        [
            {"role": "user", "content": "Where do I live?", "name": "Ann"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "recall", "arguments": '{"query": "home"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "recall", "content": "[]"},
            {"role": "assistant", "content": "I do not know yet."},
        ],
        compact=False,
    )
    assert [(m.role, m.speaker, m.tool_name) for m in stored] == [
        ("user", "Ann", None),
        ("assistant", None, None),
        ("tool", None, "recall"),
        ("assistant", None, None),
    ]
    assert stored[1].tool_calls[0].name == "recall"
    with pytest.raises(ValidationError, match="needs 'role' and 'content'"):
        agent.add_messages(conversation, [{"content": "no role"}], compact=False)
    assert len(agent.messages(conversation)) == 4  # nothing of the bad call was written
