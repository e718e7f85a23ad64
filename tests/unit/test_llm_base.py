"""The LLM value types, the usage log, the context-window table and the message conversions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from hivekeep.errors import ValidationError
from hivekeep.providers.llm import (
    DEFAULT_CONTEXT_WINDOW,
    LLM,
    RAW_ARGUMENTS_KEY,
    CallSite,
    Completion,
    Message,
    TextDelta,
    ToolCall,
    Usage,
    UsageLog,
    context_window_for,
)
from hivekeep.providers.llm.anthropic import to_anthropic_messages, to_anthropic_tool
from hivekeep.providers.llm.base import parse_tool_arguments
from hivekeep.providers.llm.openai_compat import to_openai_message


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-4", 8_192),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("anthropic/claude-3.7-sonnet", 200_000),
        ("claude-opus-4-1", 200_000),
        ("llama3.1:70b", 131_072),
        ("meta-llama/Llama-3.3-70B-Instruct", 131_072),
        ("qwen2.5:7b", 32_768),
        ("mistral:7b", 32_768),
        ("mistral-nemo", 128_000),
        ("some-new-model", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_windows_match_the_longest_known_prefix(model: str, window: int) -> None:
    assert context_window_for(model) == window


def test_context_window_override_wins_and_is_checked() -> None:
    assert context_window_for("gpt-4o", 50_000) == 50_000
    assert context_window_for("unknown", 1_000_000) == 1_000_000
    for bad in (0, -5, True):
        with pytest.raises(ValidationError, match="context_window"):
            context_window_for("gpt-4o", bad)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"query": "tea"}', {"query": "tea"}),
        ("", {}),
        (None, {}),
        ("{broken", {RAW_ARGUMENTS_KEY: "{broken"}),
        ('["a list"]', {RAW_ARGUMENTS_KEY: '["a list"]'}),
    ],
)
def test_tool_arguments_keep_what_is_not_an_object_raw(raw: str | None, expected: object) -> None:
    assert parse_tool_arguments(raw) == expected


def test_tool_call_round_trips_its_arguments() -> None:
    assert ToolCall("c", "recall", {"q": "é"}).arguments_json() == '{"q": "é"}'
    assert ToolCall("c", "recall", {RAW_ARGUMENTS_KEY: "{x"}).arguments_json() == "{x"


def test_messages_are_validated() -> None:
    with pytest.raises(ValidationError, match="role"):
        Message("robot", "hi")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="tool_call_id"):
        Message("tool", "result")
    with pytest.raises(ValidationError, match="assistant"):
        Message("user", "hi", tool_calls=[ToolCall("c", "recall")])
    assert Message("assistant", tool_calls=[ToolCall("c", "recall")]).tool_calls == (
        ToolCall("c", "recall"),
    )


def test_messages_from_openai_dicts() -> None:
    data = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "recall", "arguments": "{}"}}
        ],
    }
    message = Message.from_openai(data)

    assert message == Message("assistant", "", (ToolCall("c1", "recall", {}),))
    assert to_openai_message(message) == data
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert Message.from_openai(parts).content == "ab"


def test_usage_log_sums_by_call_site() -> None:
    seen: list[Usage] = []
    log = UsageLog(on_record=seen.append)
    log.record(Usage(100, 10, "chat", cached_input_tokens=50))
    log.record(Usage(200, 20, "chat"))
    log.record(Usage(300, 30, "maintenance", estimated=True))

    assert log.total("chat") == Usage(300, 30, "chat", cached_input_tokens=50)
    assert log.total().total_tokens == 660
    assert log.total().estimated
    assert list(log.by_site()) == ["chat", "maintenance"]
    assert seen == log.entries
    log.clear()
    assert log.entries == [] and log.total("review") == Usage(call_site="review")


def test_completion_defaults_make_scripting_easy() -> None:
    completion = Completion("hi")
    assert (completion.tool_calls, completion.stop_reason, completion.usage) == (
        [],
        "stop",
        Usage(),
    )


def test_anthropic_conversion_merges_roles_and_drops_empty_text() -> None:
    call = ToolCall("t1", "recall", {"query": "x"})
    system, turns = to_anthropic_messages(
        [
            Message("user", "one"),
            Message("user", "two"),
            Message("assistant", "", tool_calls=[call]),
            Message("tool", "r1", tool_call_id="t1"),
            Message("user", "  "),
            Message("assistant", "done"),
        ]
    )

    assert system == ""
    one, two = {"type": "text", "text": "one"}, {"type": "text", "text": "two"}
    assert turns == [
        {"role": "user", "content": [one, two]},
        {"role": "assistant", "content": [{"type": "tool_use", **vars_of(call)}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r1"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


def vars_of(call: ToolCall) -> dict[str, object]:
    return {"id": call.id, "name": call.name, "input": call.arguments}


def test_anthropic_tool_conversion() -> None:
    openai_tool = {"type": "function", "function": {"name": "f", "parameters": None}}
    native = {"name": "g", "input_schema": {"type": "object"}}

    assert to_anthropic_tool(openai_tool) == {
        "name": "f",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert to_anthropic_tool(native) is native


class _WholeAnswers(LLM):
    """A user's own LLM that only implements ``complete``; ``stream`` comes from the protocol."""

    model_id = "mine:echo"
    context_window = 1000

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        call_site: CallSite = "chat",
    ) -> Completion:
        return Completion(messages[-1].content, usage=Usage(call_site=call_site))


def test_a_subclass_of_the_protocol_gets_a_one_piece_stream() -> None:
    events = list(_WholeAnswers().stream([Message("user", "echo")], call_site="review"))

    assert events == [TextDelta("echo"), Completion("echo", usage=Usage(call_site="review"))]
