"""ScriptedLLM: the public test double that replies from a script and records every call."""

from __future__ import annotations

from typing import Any

import pytest

from hivekeep.core.tokens import count_tokens
from hivekeep.errors import HivekeepError, ProviderError, ValidationError
from hivekeep.providers.llm import LLM, Completion, Message, TextDelta, ToolCall, Usage
from hivekeep.testing import ScriptedLLM, ScriptExhausted

HELLO = [Message("system", "You are Ada."), Message("user", "Hello there")]


def test_string_replies_are_used_in_order_and_calls_are_recorded() -> None:
    llm = ScriptedLLM(["first", "second"])
    tools = [{"type": "function", "function": {"name": "recall", "parameters": {}}}]

    one = llm.complete(HELLO, tools=tools, max_tokens=100, call_site="compaction", timeout=3.0)
    two = llm.complete([Message("user", "again")])

    assert (one.content, two.content) == ("first", "second")
    assert one.tool_calls == [] and one.stop_reason == "stop" and one.model == "scripted"
    first, second = llm.calls
    assert first.messages == HELLO
    assert first.tools == tools
    assert (first.max_tokens, first.call_site, first.timeout) == (100, "compaction", 3.0)
    assert not first.streamed
    assert "You are Ada." in first.text and "Hello there" in first.text
    assert (second.tools, second.max_tokens, second.call_site) == (None, None, "chat")
    assert llm.remaining == 0


def test_usage_is_estimated_and_recorded_per_call_site() -> None:
    llm = ScriptedLLM(["You said hello."])

    completion = llm.complete(HELLO, call_site="maintenance")

    usage = completion.usage
    assert usage.estimated and usage.call_site == "maintenance"
    assert usage.output_tokens == count_tokens("You said hello.")
    prompt = count_tokens("You are Ada.") + count_tokens("Hello there")
    assert usage.input_tokens > prompt  # plus per-message overhead
    assert llm.usage_log.by_site() == {"maintenance": usage}


def test_completion_replies_keep_tool_calls_and_get_the_call_site() -> None:
    call = ToolCall("call_1", "recall", {"query": "tea"})
    reported = Usage(input_tokens=500, output_tokens=20)
    llm = ScriptedLLM(
        [Completion(tool_calls=[call], stop_reason="tool_calls"), Completion("ok", usage=reported)]
    )

    with_tools = llm.complete(HELLO, call_site="review")
    with_usage = llm.complete(HELLO, call_site="merge")

    assert with_tools.tool_calls == [call] and with_tools.stop_reason == "tool_calls"
    assert with_tools.usage.estimated and with_tools.usage.call_site == "review"
    assert with_usage.usage == Usage(500, 20, "merge")


def test_callable_replies_see_the_messages_and_tools() -> None:
    seen: list[Any] = []

    def reply(messages: list[Message], tools: list[dict[str, Any]] | None) -> str:
        seen.append((messages, tools))
        return f"{len(messages)} messages"

    def tool_reply(messages: list[Message], tools: list[dict[str, Any]] | None) -> Completion:
        return Completion(tool_calls=[ToolCall("c", "archive", {"content": messages[-1].content})])

    llm = ScriptedLLM([reply, tool_reply])

    assert llm.complete(HELLO).content == "2 messages"
    assert llm.complete([Message("user", "keep this")]).tool_calls[0].arguments == {
        "content": "keep this"
    }
    assert seen == [(HELLO, None)]


def test_exception_replies_are_raised_to_simulate_outages() -> None:
    llm = ScriptedLLM([ProviderError("The LLM is down."), "back"])

    with pytest.raises(ProviderError, match="down"):
        llm.complete(HELLO)
    assert llm.complete(HELLO).content == "back"
    assert len(llm.calls) == 2


def test_running_out_of_replies_fails_the_test_loudly() -> None:
    llm = ScriptedLLM(["only one"])
    llm.complete(HELLO)

    with pytest.raises(ScriptExhausted, match=r"got call 2 \('bootstrap'\) but only 1 replies"):
        llm.complete(HELLO, call_site="bootstrap")

    assert issubclass(ScriptExhausted, AssertionError)
    assert not issubclass(ScriptExhausted, HivekeepError)  # no graceful degradation hides it
    assert len(llm.calls) == 2  # the extra call is still on record


def test_enqueue_adds_replies_and_counts_them_in_the_error() -> None:
    llm = ScriptedLLM()
    llm.enqueue("a", "b")
    llm.enqueue("c")

    assert [llm.complete(HELLO).content for _ in range(3)] == ["a", "b", "c"]
    with pytest.raises(ScriptExhausted, match="only 3 replies"):
        llm.complete(HELLO)


def test_stream_yields_the_text_in_pieces_then_the_completion() -> None:
    text = "Tea, green, no sugar: that is what you like best."
    llm = ScriptedLLM([text, ""])

    events = list(llm.stream(HELLO, call_site="chat"))

    *deltas, completion = events
    assert 1 < len(deltas) <= 3
    assert all(isinstance(delta, TextDelta) for delta in deltas)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text
    assert isinstance(completion, Completion) and completion.content == text
    assert llm.calls[0].streamed

    [only] = llm.stream(HELLO)  # no text: no deltas, just the completion
    assert isinstance(only, Completion) and only.content == ""


def test_it_satisfies_the_protocol_and_checks_its_settings() -> None:
    llm: LLM = ScriptedLLM(context_window=4096, model_id="scripted:small")

    assert (llm.model_id, llm.context_window) == ("scripted:small", 4096)
    with pytest.raises(ValidationError):
        ScriptedLLM(context_window=0)
    with pytest.raises(ValidationError, match="call_site"):
        ScriptedLLM(["x"]).complete(HELLO, call_site="chatt")  # type: ignore[arg-type]
