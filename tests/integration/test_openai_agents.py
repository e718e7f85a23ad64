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
from agents import (
    ModelRetrySettings,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    retry_policies,
    set_tracing_disabled,
)
from agents.items import TResponseInputItem
from agents.memory import SessionSettings, SQLiteSession
from agents.testing import ScriptedModel, function_call
from openai import AsyncOpenAI

from hivekeep import (
    Agent,
    ConflictError,
    Hive,
    Message,
    NotFound,
    Settings,
    ValidationError,
    tool_schemas,
)
from hivekeep.core.context import SUMMARIES_HEADING
from hivekeep.integrations.openai_agents import HivekeepSession, memory_tools
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from tests.integration.agents_sdk_suite.responses import get_text_message
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


def sdk_agent(
    server: WireServer, agent: Agent | None = None, session: HivekeepSession | None = None
) -> SdkAgent[Any]:
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    model = OpenAIChatCompletionsModel(model="served-model", openai_client=client)
    tools = memory_tools(agent) if agent is not None else []
    instructions = session.instructions("Be brief.") if session is not None else "Be brief."
    return SdkAgent(name="assistant", instructions=instructions, model=model, tools=tools)


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
    bot = sdk_agent(server, agent, session)

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
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith("Be brief.")
    assert "- Name: Ann" in sent[0]["content"]  # the profile, through the instructions
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["What do I drink?", "And now?"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "recall"
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "call_1"
    reopened = HivekeepSession(agent, int(session.session_id))
    tail: list[Any] = asyncio.run(reopened.get_items(limit=2))
    assert tail[0] == {"role": "user", "content": "And now?"}
    assert tail[1]["content"][0]["text"] == "Still tea."  # the SDK's output item, verbatim
    assert asyncio.run(reopened.get_items()) == asyncio.run(session.get_items())


@pytest.mark.parametrize("limit", [1, 2, 4])
@pytest.mark.parametrize("mode", ["run", "run_sync", "run_streamed"])
def test_the_profile_and_summaries_reach_the_model_under_every_limit_and_run_mode(
    hive: Hive, limit: int, mode: str
) -> None:
    """With the SDK's own ScriptedModel: the instructions carry the profile however few items
    the limit lets through, in every run mode, and each turn is stored once."""
    agent = hive.agent("assistant")
    agent.set_profile("## User\n- Name: Ann\n")
    session = HivekeepSession(
        agent, "limits", compact=False, session_settings=SessionSettings(limit=limit)
    )
    model = ScriptedModel()
    bot = SdkAgent(name="assistant", instructions=session.instructions("Be brief."), model=model)

    async def turn(text: str) -> None:
        if mode == "run":
            await Runner.run(bot, text, session=session)
        elif mode == "run_sync":
            await asyncio.to_thread(_run_sync, bot, text, session)
        else:
            async for _ in Runner.run_streamed(bot, text, session=session).stream_events():
                pass

    for n in range(3):
        model.enqueue([get_text_message(f"answer {n}")])
        asyncio.run(turn(f"question {n}"))

    for call in model.calls:
        assert call.system_instructions is not None
        assert call.system_instructions.startswith("Be brief.")
        assert "- Name: Ann" in call.system_instructions
    assert len(model.calls[-1].input) == limit + 1  # the history the limit lets through, the turn
    stored = [(m.role, m.content) for m in agent.messages(session.conversation_id)]
    assert stored == [
        (role, f"{word} {n}")
        for n in range(3)
        for role, word in (("user", "question"), ("assistant", "answer"))
    ]


def _run_sync(bot: SdkAgent[Any], text: str, session: HivekeepSession) -> None:
    """Runner.run_sync in a thread with its own event loop, as the SDK's tests run it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        Runner.run_sync(bot, text, session=session)
    finally:
        loop.close()


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
    assert everything == items  # exactly the items added: no system item
    assert got == expected


def test_pop_takes_an_item_back_until_it_is_folded(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    llm = ScriptedLLM([by_prompt(fold="They said hello.", maintenance=maintenance_reply([]))] * 4)
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as hive:
        agent = hive.agent("assistant")
        session = HivekeepSession(agent, compact=False)
        first: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi"},
            {"role": "user", "content": "Bye"},
        ]
        asyncio.run(session.add_items(first))

        assert asyncio.run(session.pop_item()) == first[2]
        assert asyncio.run(session.get_items()) == first[:2]
        assert [m.content for m in agent.messages(session.conversation_id)] == ["Hello", "Hi"]
        agent.compact(session.conversation_id)  # the older half folds into a summary

        assert asyncio.run(session.get_items()) == first[1:2]  # the items not yet folded
        assert asyncio.run(session.pop_item()) == first[1]
        with pytest.raises(ConflictError, match="folded into a summary"):
            asyncio.run(session.pop_item())
        assert "They said hello." in session.memory_prompt()


def test_clear_starts_a_new_conversation_and_a_named_session_keeps_its_name(hive: Hive) -> None:
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, compact=False)
    asyncio.run(session.add_items([{"role": "user", "content": "Hello"}]))
    first = session.conversation_id

    asyncio.run(session.clear_session())

    assert session.conversation_id != first and session.session_id == str(session.conversation_id)
    assert asyncio.run(session.get_items()) == []
    assert [m.content for m in agent.messages(first)] == ["Hello"]  # kept in the hive
    named = HivekeepSession(agent, "user-42", compact=False)
    asyncio.run(named.add_items([{"role": "user", "content": "Hi"}]))
    again = HivekeepSession(agent, "user-42", compact=False)
    assert again.session_id == "user-42" and again.conversation_id == named.conversation_id
    asyncio.run(again.clear_session())
    assert again.session_id == "user-42" and asyncio.run(again.get_items()) == []
    assert HivekeepSession(agent, "user-42").conversation_id == again.conversation_id
    with pytest.raises(ValidationError, match="session name"):
        HivekeepSession(agent, " padded ")
    again.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(again.get_items())


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


def test_reasoning_items_are_kept_with_a_message_and_popped_one_by_one(hive: Hive) -> None:
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, compact=False)
    reasoning: Any = {"type": "reasoning", "id": "rs_1", "summary": []}
    said: Any = {
        "role": "user",
        "content": [{"type": "input_text", "text": "Hi "}, {"type": "input_text", "text": "there"}],
    }
    answer: Any = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hello!", "annotations": []}],
    }
    call: Any = {"type": "function_call", "call_id": "c1", "name": "recall", "arguments": "{}"}

    asyncio.run(session.add_items([said, reasoning, answer, reasoning]))
    asyncio.run(session.add_items([reasoning, call]))  # leads the batch: kept with the call

    assert [(m.role, m.content) for m in agent.messages(session.conversation_id)] == [
        ("user", "Hi there"),
        ("assistant", "Hello!"),
        ("assistant", ""),
    ]
    everything = [said, reasoning, answer, reasoning, reasoning, call]
    assert asyncio.run(session.get_items()) == everything
    for n in range(len(everything), 0, -1):
        assert asyncio.run(session.pop_item()) == everything[n - 1]
        assert asyncio.run(session.get_items()) == everything[: n - 1]
    assert agent.messages(session.conversation_id) == []
    with pytest.raises(ValidationError, match="reasoning items alone"):
        asyncio.run(session.add_items([reasoning]))


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

        items: list[Any] = asyncio.run(session.get_items())
        shown = session.memory_prompt()
        assert SUMMARIES_HEADING in shown and "Ann talked about her bees." in shown
        assert "<profile>" in shown and "- Name: Ann" in shown
        assert f"[{context.summaries[0].first_at[:10]}" in shown  # dated
        assert items == [item for n in range(60) for item in turn(n)][-len(items) :]
        assert len(items) == len(context.raw)  # the items not yet folded, verbatim
        assert len(items) < 120 and items[-1] == turn(59)[1]  # the first turns folded away

        server.script(openai_reply("Bees, yes."))
        bot = sdk_agent(server, session=session)
        asyncio.run(Runner.run(bot, "What do I keep?", session=session))
        sent = server.requests[0].body["messages"]
        assert sent[0]["role"] == "system" and "Ann talked about her bees." in sent[0]["content"]
        assert sent[-1] == {"role": "user", "content": "What do I keep?"}


def test_a_resumed_write_that_failed_after_storing_is_not_stored_twice(hive: Hive) -> None:
    """The SDK 0.24 settles a resumed run's write through the session: it reads the tail
    (``get_items(limit=len(expected))``) to tell whether a failed append was stored. Here the
    first append is stored and then reported failed; the retry finds it in the tail and appends
    nothing, so every item is stored once."""
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, "approvals", compact=False)
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return f"noted {text}"

    model = ScriptedModel([[function_call("note", {"text": "milk"}, call_id="call_1")]])
    model.enqueue([get_text_message("Done.")])
    bot = SdkAgent(name="assistant", instructions=session.instructions(), model=model, tools=[note])
    first = asyncio.run(Runner.run(bot, "Note milk.", session=session))
    state = first.to_state()
    state.approve(first.interruptions[0])
    stored_add = session.add_items
    failures = [RuntimeError("the reply was lost after the write")]

    async def lost_reply(items: list[TResponseInputItem]) -> None:
        await stored_add(items)
        if failures:
            raise failures.pop()

    session.add_items = lost_reply  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="reply was lost"):
        asyncio.run(Runner.run(bot, state, session=session))
    resumed = asyncio.run(Runner.run(bot, state, session=session))

    assert resumed.final_output == "Done." and ran == ["milk"]
    items: list[Any] = asyncio.run(session.get_items())
    kinds = [item.get("type", "message") for item in items]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    assert [m.role for m in agent.messages(session.conversation_id)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_the_session_write_path_keeps_json_records_and_takes_back_only_raw_messages(
    hive: Hive,
) -> None:
    """Agent.add_messages(records=…), set_message_record and delete_message: what the session
    stands on, with their refusals (nothing is written by a refused call)."""
    agent = hive.agent("assistant")
    conversation = agent.start_conversation().id
    hello = Message("user", "Hello")

    refused: list[tuple[Any, str]] = [
        ([{"items": []}, None], "2 records for 1 messages"),
        (["items"], "JSON object"),
        ([{"items": [object()]}], "plain JSON"),
        ([{"items": ["x" * 400_001]}], "at most 400,000 characters"),
    ]
    for records, error in refused:
        with pytest.raises(ValidationError, match=error):
            agent.add_messages(conversation, [hello], compact=False, records=records)
    assert agent.messages(conversation) == []

    first, second = agent.add_messages(
        conversation, [hello, Message("user", "Bye")], compact=False, records=[{"items": [1]}, None]
    )
    agent.set_message_record(conversation, second.id, {"items": [2]})
    assert [m.record for m in agent.messages(conversation)] == [{"items": [1]}, {"items": [2]}]
    with pytest.raises(ValidationError, match="JSON object"):
        agent.set_message_record(conversation, second.id, ["items"])  # type: ignore[arg-type]
    agent.delete_message(conversation, second.id)
    assert [m.id for m in agent.messages(conversation)] == [first.id]
    other = agent.start_conversation().id
    with pytest.raises(NotFound):
        agent.delete_message(other, first.id)


def test_a_model_call_retried_after_a_network_error_stores_each_item_once(hive: Hive) -> None:
    """The SDK 0.24 retries a model call that failed on the network (ModelRetrySettings) without
    storing the input again: as its own test does with SQLiteSession."""
    agent = hive.agent("assistant")
    session = HivekeepSession(agent, "retry", compact=False)
    asyncio.run(session.add_items([{"role": "user", "content": "previous"}]))
    model = ScriptedModel()
    model.extend([TimeoutError("the network dropped"), [get_text_message("done")]])
    retry = ModelRetrySettings(max_retries=1, policy=retry_policies.network_error())
    bot = SdkAgent(name="test", model=model, model_settings=ModelSettings(retry=retry))

    result = asyncio.run(Runner.run(bot, "test", session=session))

    items: list[Any] = asyncio.run(session.get_items())
    assert result.final_output == "done"
    assert [item.get("role") for item in items] == ["user", "user", "assistant"]
    assert [item["content"] for item in items[:2]] == ["previous", "test"]
    assert len(agent.messages(session.conversation_id)) == 3
