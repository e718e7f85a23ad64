"""The OpenAI Agents SDK on a hive: the SDK's own Runner, against a local server speaking the
chat-completions wire format, with HivekeepSession as its session and memory_tools as its tools;
and a long session that compacts (the hive's own model is a ScriptedLLM)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent as SdkAgent
from agents import OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.items import TResponseInputItem
from agents.memory import SessionSettings, SQLiteSession
from openai import AsyncOpenAI

from hivekeep import Agent, Hive, Settings, ValidationError, tool_schemas
from hivekeep.core.context import SUMMARIES_HEADING
from hivekeep.integrations.openai_agents import HivekeepSession, memory_tools
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from tests.integration.conversation_support import by_prompt, call_site_of, maintenance_reply
from tests.wire_servers import WireServer, openai_reply


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    """The SDK would export traces to OpenAI's servers; tests are offline."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


def sdk_agent(server: WireServer, agent: Agent | None = None) -> SdkAgent[Any]:
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    model = OpenAIChatCompletionsModel(model="served-model", openai_client=client)
    tools = memory_tools(agent) if agent is not None else []
    return SdkAgent(name="assistant", instructions="Be brief.", model=model, tools=tools)


def test_the_runner_calls_memory_tools_that_act_on_the_hive(server: WireServer, hive: Hive) -> None:
    agent = hive.agent("assistant")
    arguments = json.dumps({"content": "Ann drinks oolong tea", "category": "preference"})
    server.script(
        openai_reply(None, [("call_1", "memorize", arguments)], finish="tool_calls"),
        openai_reply("Noted."),
    )

    result = asyncio.run(Runner.run(sdk_agent(server, agent), "I drink oolong tea."))

    assert result.final_output == "Noted."
    assert agent.recall("what tea?").hits[0].memory.content == "Ann drinks oolong tea"
    offered = {tool["function"]["name"] for tool in server.requests[0].body["tools"]}
    assert offered == {schema["function"]["name"] for schema in tool_schemas("openai")}
    assert len(offered) == 7
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert json.loads(tool_message["content"])["duplicate"] is False


def test_a_bad_tool_call_gets_the_dispatchers_error_back(server: WireServer, hive: Hive) -> None:
    agent = hive.agent("assistant")
    server.script(
        openai_reply(None, [("call_1", "forget", '{"memory_id": 0}')], finish="tool_calls"),
        openai_reply("Sorry."),
    )

    asyncio.run(Runner.run(sdk_agent(server, agent), "Forget that."))

    result = json.loads(server.requests[1].body["messages"][-1]["content"])
    assert "Invalid arguments for forget" in result["error"]


def test_a_session_keeps_the_turns_and_gives_the_model_its_memory(
    server: WireServer, hive: Hive
) -> None:
    agent = hive.agent("assistant")
    agent.set_profile("## User\n- Name: Ann\n")
    session = HivekeepSession(agent, compact=False)
    arguments = json.dumps({"query": "tea"})
    server.script(
        openai_reply(None, [("call_1", "recall", arguments)], finish="tool_calls"),
        openai_reply("You like tea."),
        openai_reply("Still tea."),
    )
    bot = sdk_agent(server, agent)

    asyncio.run(Runner.run(bot, "What do I drink?", session=session))
    asyncio.run(Runner.run(bot, "And now?", session=session))

    stored = agent.messages(session.conversation_id)
    assert [(m.role, m.content) for m in stored if m.role != "tool"] == [
        ("user", "What do I drink?"),
        ("assistant", ""),
        ("assistant", "You like tea."),
        ("user", "And now?"),
        ("assistant", "Still tea."),
    ]
    assert stored[1].tool_calls[0].name == "recall" and stored[2].role == "tool"
    sent = server.requests[2].body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[1]["role"] == "system" and "- Name: Ann" in sent[1]["content"]  # the profile
    assert [m["content"] for m in sent if m["role"] == "user"] == ["What do I drink?", "And now?"]
    assert sent[3]["tool_calls"][0]["function"]["name"] == "recall"
    assert sent[4]["role"] == "tool" and sent[4]["tool_call_id"] == "call_1"
    reopened = HivekeepSession(agent, int(session.session_id))
    assert asyncio.run(reopened.get_items(limit=2)) == [
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "Still tea."},
    ]


LIMITS: list[tuple[dict[str, Any] | SessionSettings | None, int | None]] = [
    (None, None),
    (None, 2),
    (SessionSettings(limit=2), None),
    ({"limit": 3}, None),
    (SessionSettings(limit=2), 4),  # an explicit limit wins over the settings'
    (SessionSettings(limit=2), 0),
    (SessionSettings(limit=0), None),
    (SessionSettings(limit=-1), None),
    (SessionSettings(limit=50), None),
    (SessionSettings(), 1),
]


@pytest.mark.parametrize(("settings", "limit"), LIMITS)
def test_get_items_applies_limit_and_session_settings_as_the_sdks_sqlite_session(
    hive: Hive, settings: dict[str, Any] | SessionSettings | None, limit: int | None
) -> None:
    """Side by side with the SDK's own SQLiteSession, given the same items and settings: the same
    number of items, the latest ones. (hivekeep's first item is its system item, the profile.)"""
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"question {n}"}
        if n % 2
        else {"role": "assistant", "content": f"answer {n}"}
        for n in range(1, 7)
    ]
    agent = hive.agent("assistant")
    agent.set_profile("## User\n- Name: Ann\n")
    ours = HivekeepSession(agent, compact=False, session_settings=settings)
    sdk = SQLiteSession("side-by-side", session_settings=settings)

    async def both() -> tuple[list[Any], list[Any], list[Any]]:
        await ours.add_items(items)
        await sdk.add_items(items)
        everything = await ours.get_items(limit=-1)
        return await ours.get_items(limit), await sdk.get_items(limit), everything

    got, expected, everything = asyncio.run(both())
    sdk.close()
    assert everything[1:] == items and everything[0]["role"] == "system"
    if len(expected) == len(items):  # every item: ours has its system item too
        assert got == everything
    else:
        assert (
            got == (everything[-len(expected) :] if expected else []) and got[-1:] == expected[-1:]
        )


def test_pop_is_refused_and_clear_starts_a_new_conversation(hive: Hive) -> None:
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, compact=False)
    asyncio.run(session.add_items([{"role": "user", "content": "Hello"}]))
    first = session.conversation_id

    with pytest.raises(ValidationError, match="cannot pop"):
        asyncio.run(session.pop_item())
    asyncio.run(session.clear_session())

    assert session.conversation_id != first and session.session_id == str(session.conversation_id)
    assert [item.get("role") for item in asyncio.run(session.get_items())] == ["system"]
    assert [m.content for m in agent.messages(first)] == ["Hello"]  # kept in the hive


def test_items_hivekeep_cannot_keep_are_refused_before_anything_is_stored(hive: Hive) -> None:
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, compact=False)
    image: Any = {"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}
    search: Any = {"type": "web_search_call", "id": "ws_1", "status": "completed"}

    for item in (image, search):
        with pytest.raises(ValidationError, match=r"cannot be stored|has no place"):
            asyncio.run(session.add_items([{"role": "user", "content": "Look"}, item]))

    assert agent.messages(session.conversation_id) == []
    with pytest.raises(ValidationError, match=r"No LLM|model"):  # compaction needs a model
        asyncio.run(HivekeepSession(agent).add_items([{"role": "user", "content": "Hi"}]))
    assert agent.messages(session.conversation_id) == []


def test_reasoning_items_are_left_out_and_text_parts_joined(hive: Hive) -> None:
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, compact=False)
    items: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Hi "},
                {"type": "input_text", "text": "there"},
            ],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello!", "annotations": []}],
        },
    ]

    asyncio.run(session.add_items(items))

    assert [(m.role, m.content) for m in agent.messages(session.conversation_id)] == [
        ("user", "Hi there"),
        ("assistant", "Hello!"),
    ]


# -- a long session compacts --------------------------------------------------------------------


def turn(n: int) -> list[TResponseInputItem]:
    """One exchange as the SDK stores it: the user's input, then the model's output message."""
    asked = f"Turn {n}: " + " ".join(f"word{n}x{i}" for i in range(60))
    answer = f"Answer {n}: " + " ".join(f"reply{n}y{i}" for i in range(30))
    return [
        {"role": "user", "content": asked},
        {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer, "annotations": []}],
        },
    ]


def test_a_long_session_compacts_into_dated_summaries_memories_and_profile(
    db_path: Path, local_embedder: LocalEmbedder, server: WireServer
) -> None:
    archive = [{"op": "add", "content": "Ann keeps bees on her roof", "category": "fact"}]
    upkeep = by_prompt(fold="Ann talked about her bees.", maintenance=maintenance_reply(archive))
    llm = ScriptedLLM([upkeep] * 20, context_window=6000)
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as hive:
        agent = hive.agent("assistant")
        session = HivekeepSession(agent)

        for n in range(60):
            asyncio.run(session.add_items(turn(n)))

        context = agent.context(session.conversation_id)
        kinds = [call_site_of(list(call.messages)) for call in llm.calls]
        assert kinds.count("fold") >= 1 and kinds.count("maintenance") == kinds.count("fold")
        assert context.summaries and context.raw
        assert agent.recall("who keeps bees?").hits[0].memory.content == (
            "Ann keeps bees on her roof"
        )
        assert "- Name: Ann" in agent.profile_text()

        items = asyncio.run(session.get_items())
        system = items[0]
        assert system["role"] == "system"  # type: ignore[typeddict-item]
        shown = str(system["content"])  # type: ignore[typeddict-item]
        assert SUMMARIES_HEADING in shown and "Ann talked about her bees." in shown
        assert "<profile>" in shown and "- Name: Ann" in shown
        assert f"[{context.summaries[0].first_at[:10]}" in shown  # dated
        tail = [str(item["content"]) for item in items[1:]]  # type: ignore[typeddict-item]
        assert tail[-1].startswith("Answer 59:") and len(tail) == len(context.raw)
        assert not any(text.startswith("Turn 0:") for text in tail)  # folded away

        server.script(openai_reply("Bees, yes."))
        asyncio.run(Runner.run(sdk_agent(server), "What do I keep?", session=session))
        sent = server.requests[0].body["messages"]
        assert "Ann talked about her bees." in sent[1]["content"]
        assert sent[-1] == {"role": "user", "content": "What do I keep?"}
