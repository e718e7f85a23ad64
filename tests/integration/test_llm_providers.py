"""The LLM providers, through the real SDKs, against a local server speaking each wire format.

The server on 127.0.0.1 records every request (path, headers, JSON body) and answers from a
script: OpenAI chat-completions JSON or SSE chunks, Anthropic Messages JSON or its SSE event
stream, error replies with each API's error body, or a reply that stalls past the timeout. The
SDKs are not patched: what is tested is the request they really send and what we parse from the
bytes they really receive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ProviderError, ValidationError
from hivekeep.providers.llm import (
    RAW_ARGUMENTS_KEY,
    Completion,
    Message,
    TextDelta,
    ToolCall,
    UsageLog,
    available_llms,
    create_llm,
    register_llm,
)
from hivekeep.providers.llm import registry as llm_registry
from hivekeep.providers.llm.anthropic import AnthropicLLM
from hivekeep.providers.llm.openai_compat import OpenAICompatLLM
from hivekeep.providers.llm.sdk import SDKChatLLM
from hivekeep.testing import ScriptedLLM
from hivekeep.tools import tool_schemas
from tests.wire_servers import Received, Reply, WireServer, openai_reply, openai_stream

KEY = "sk-hivekeep-test-9b1d3f5e7a-NEVER-PRINT-ME"
FAST = {"retry-after-ms": "10"}  # the SDKs honour it, so retries in these tests take 10 ms

# -- the server ---------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


# -- each API's replies -------------------------------------------------------------------------


ANTHROPIC_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 40,
    "cache_creation_input_tokens": 2,
}


def anthropic_reply(blocks: list[dict[str, Any]], stop: str = "end_turn") -> Reply:
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-served",
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": ANTHROPIC_USAGE,
        }
    )


def event(name: str, **data: Any) -> tuple[str, dict[str, Any]]:
    """One Anthropic SSE event: its name is repeated as the data's ``type``."""
    return name, {"type": name, **data}


def anthropic_stream(pieces: list[str], tool: tuple[str, str, list[str]] | None) -> Reply:
    start: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-served",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**ANTHROPIC_USAGE, "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [event("message_start", message=start)]
    events.append(event("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    for piece in pieces:
        delta = {"type": "text_delta", "text": piece}
        events.append(event("content_block_delta", index=0, delta=delta))
    events.append(event("content_block_stop", index=0))
    if tool is not None:
        tool_id, name, parts = tool
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
        events.append(event("content_block_start", index=1, content_block=block))
        for part in parts:
            delta = {"type": "input_json_delta", "partial_json": part}
            events.append(event("content_block_delta", index=1, delta=delta))
        events.append(event("content_block_stop", index=1))
    stop = {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None}
    events.append(event("message_delta", delta=stop, usage={"output_tokens": 15}))
    events.append(event("message_stop"))
    return Reply(events=events)


# -- the providers under test -------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    name: str
    path: str
    success: Callable[[], Reply]
    error: Callable[[int, str, str], Reply]  # status, error type, message


OPENAI = Wire(
    "openai",
    "/v1/chat/completions",
    lambda: openai_reply("All good."),
    lambda status, kind, message: Reply(
        status,
        {"error": {"message": message, "type": kind, "param": None, "code": None}},
        headers=dict(FAST),
    ),
)
ANTHROPIC = Wire(
    "anthropic",
    "/v1/messages",
    lambda: anthropic_reply([{"type": "text", "text": "All good."}]),
    lambda status, kind, message: Reply(
        status, {"type": "error", "error": {"type": kind, "message": message}}, headers=dict(FAST)
    ),
)
each_wire = pytest.mark.parametrize("wire", [OPENAI, ANTHROPIC], ids=lambda w: w.name)

MakeLLM = Callable[..., SDKChatLLM]

ENV = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OLLAMA_CONTEXT_LENGTH",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "VLLM_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real keys, base URLs or proxies from the machine running the tests."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def make(server: WireServer) -> Iterator[MakeLLM]:
    """Builds a provider aimed at the test server, and closes it afterwards."""
    created: list[SDKChatLLM] = []

    def build(wire: Wire, model: str = "test-model", **kwargs: Any) -> SDKChatLLM:
        kwargs.setdefault("api_key", KEY)
        kwargs.setdefault("max_retries", 2)
        llm: SDKChatLLM
        if wire is ANTHROPIC:
            llm = AnthropicLLM(model, base_url=kwargs.pop("base_url", server.url), **kwargs)
        else:
            kwargs.setdefault("base_url", server.url + "/v1")
            llm = OpenAICompatLLM(model, **kwargs)
        created.append(llm)
        return llm

    yield build
    for llm in created:
        llm.close()


@pytest.fixture
def from_spec() -> Iterator[Callable[..., SDKChatLLM]]:
    """``create_llm`` for the built-in providers, closing what it made afterwards."""
    created: list[SDKChatLLM] = []

    def build(spec: str, **options: Any) -> SDKChatLLM:
        llm = create_llm(spec, **options)
        assert isinstance(llm, SDKChatLLM)
        created.append(llm)
        return llm

    yield build
    for llm in created:
        llm.close()


FromSpec = Callable[..., SDKChatLLM]


def error_texts(error: BaseException) -> str:
    """Everything a traceback of an error shows: str and repr of each error in its chain."""
    texts = []
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current)]
        hidden = current.__suppress_context__
        current = current.__cause__ or (None if hidden else current.__context__)
    return "\n".join(texts)


def sent_key(request: Received) -> str:
    """The API key a request carried: Anthropic's SDKs send x-api-key, newer ones a Bearer."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    return request.headers.get("x-api-key") or bearer


CONVERSATION = [
    Message("system", "You are Ada. <profile>likes tea</profile>"),
    Message("user", "What do I like?", name="Grace Hopper"),
    Message(
        "assistant",
        "Let me look.",
        tool_calls=[ToolCall("call_1", "recall", {"query": "likes"})],
    ),
    Message("tool", '{"results": ["tea"]}', tool_call_id="call_1", name="recall"),
    Message("system", "Summary of older turns: none."),
    Message("user", "And?"),
]

# -- OpenAI-compatible --------------------------------------------------------------------------


def test_openai_request_shape_and_parsed_completion(server: WireServer, make: MakeLLM) -> None:
    server.script(openai_reply("You like tea."))
    log = UsageLog()
    llm = make(OPENAI, "gpt-4o-mini", usage_log=log)
    tools = tool_schemas("openai")

    completion = llm.complete(CONVERSATION, tools=tools, max_tokens=300, call_site="maintenance")

    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "gpt-4o-mini"
    assert body["max_tokens"] == 300
    assert body["tools"] == tools
    assert "stream" not in body or body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": "You are Ada. <profile>likes tea</profile>"},
        {"role": "user", "content": "What do I like?", "name": "Grace_Hopper"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "recall", "arguments": '{"query": "likes"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"results": ["tea"]}', "tool_call_id": "call_1"},
        {"role": "system", "content": "Summary of older turns: none."},
        {"role": "user", "content": "And?"},
    ]
    assert completion.content == "You like tea."
    assert completion.tool_calls == []
    assert completion.model == "served-model"
    assert completion.stop_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (31, 7)
    assert completion.usage.cached_input_tokens == 16
    assert completion.usage.call_site == "maintenance"
    assert not completion.usage.estimated
    assert log.entries == [completion.usage]
    assert llm.model_id == "openai:gpt-4o-mini"
    assert llm.context_window == 128_000


def test_openai_tool_calls_are_decoded_and_bad_json_is_kept_raw(
    server: WireServer, make: MakeLLM
) -> None:
    server.script(
        openai_reply(
            None,
            [("call_a", "recall", '{"query": "tea", "limit": 3}'), ("call_b", "archive", "{oops")],
            finish="tool_calls",
        )
    )

    completion = make(OPENAI).complete([Message("user", "hi")])

    good, bad = completion.tool_calls
    assert good == ToolCall("call_a", "recall", {"query": "tea", "limit": 3})
    assert good.invalid_arguments is None
    assert bad.arguments == {RAW_ARGUMENTS_KEY: "{oops"}
    assert bad.invalid_arguments == "{oops"
    assert completion.content == ""
    assert completion.stop_reason == "tool_calls"


def test_openai_reasoning_models_get_max_completion_tokens(
    server: WireServer, make: MakeLLM
) -> None:
    server.script(openai_reply(), openai_reply())

    make(OPENAI, "o3-mini").complete([Message("user", "hi")], max_tokens=50)
    make(OPENAI, "gpt-4o").complete([Message("user", "hi")])

    first, second = (request.body for request in server.requests)
    assert first["max_completion_tokens"] == 50 and "max_tokens" not in first
    assert "max_tokens" not in second and "max_completion_tokens" not in second


def test_openai_stream_yields_text_then_the_whole_completion(
    server: WireServer, make: MakeLLM
) -> None:
    server.script(
        openai_stream(
            ["You ", "like ", "tea."], [("call_9", "recall", ['{"que', 'ry": "tea"}'])], usage=True
        )
    )
    llm = make(OPENAI)

    events = list(llm.stream([Message("user", "hi")], call_site="chat"))

    assert events[:3] == [TextDelta("You "), TextDelta("like "), TextDelta("tea.")]
    [completion] = events[3:]
    assert isinstance(completion, Completion)
    assert completion.content == "You like tea."
    assert completion.tool_calls == [ToolCall("call_9", "recall", {"query": "tea"})]
    assert completion.stop_reason == "tool_calls"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (20, 9)
    assert llm.usage_log.entries == [completion.usage]
    assert server.last["stream"] is True
    assert server.last["stream_options"] == {"include_usage": True}


@each_wire
def test_leaving_a_stream_early_records_nothing_and_leaks_nothing(
    wire: Wire, server: WireServer, make: MakeLLM
) -> None:
    reply = openai_stream(["a ", "b ", "c"], [], usage=True)
    server.script(reply if wire is OPENAI else anthropic_stream(["a ", "b ", "c"], None))
    llm = make(wire)

    for event in llm.stream([Message("user", "hi")]):
        assert event == TextDelta("a ")
        break

    assert llm.usage_log.entries == []  # usage is known only once the answer is complete
    llm.close()


def test_openai_stream_without_usage_is_estimated(server: WireServer, make: MakeLLM) -> None:
    server.script(openai_stream(["Hello ", "there."], [], usage=False))

    *_, completion = make(OPENAI).stream([Message("user", "Say hello to me")])

    assert isinstance(completion, Completion)
    assert completion.usage.estimated
    assert completion.usage.input_tokens > count_tokens("Say hello to me")
    assert completion.usage.output_tokens == count_tokens("Hello there.")


def test_ollama_needs_no_key_and_reads_ollama_host(
    server: WireServer, from_spec: FromSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    server.script(openai_reply("hi"))

    llm = from_spec("ollama:llama3.1:8b")
    assert llm.complete([Message("user", "hi")]).content == "hi"
    assert llm.model_id == "ollama:llama3.1:8b"
    assert llm.context_window == 4096  # what Ollama serves unless configured

    assert server.requests[0].path == "/v1/chat/completions"
    assert server.last["model"] == "llama3.1:8b"

    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "32768")
    assert from_spec("ollama:llama3.1").context_window == 32768
    assert from_spec("ollama:llama3.1", context_window=3000).context_window == 3000
    assert from_spec("ollama:llama3").context_window == 8192  # what the model was trained for
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "2048")
    assert from_spec("ollama:llama3.1").context_window == 2048
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "65536")
    assert from_spec("ollama:some-new-model").context_window == 65536


def test_openai_base_url_and_key_come_from_the_environment(
    server: WireServer, from_spec: FromSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.script(openai_reply("from env"))

    llm = from_spec("openai:gpt-4.1-mini")
    assert llm.complete([Message("user", "hi")]).content == "from env"
    assert llm.context_window == 1_047_576

    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


# -- Anthropic ----------------------------------------------------------------------------------


def test_anthropic_request_shape_and_parsed_completion(server: WireServer, make: MakeLLM) -> None:
    server.script(
        anthropic_reply(
            [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "recall", "input": {"query": "x"}},
            ],
            stop="tool_use",
        )
    )
    llm = make(ANTHROPIC, "claude-3-5-haiku-latest")
    tools = tool_schemas("openai")

    completion = llm.complete(CONVERSATION, tools=tools, call_site="review")

    [request] = server.requests
    assert request.path == "/v1/messages"
    assert sent_key(request) == KEY
    assert "anthropic-version" in request.headers
    body = request.body
    assert body["model"] == "claude-3-5-haiku-latest"
    assert body["max_tokens"] == 4096
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are Ada. <profile>likes tea</profile>\n\nSummary of older turns: none.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What do I like?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "call_1", "name": "recall", "input": {"query": "likes"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": '{"results": ["tea"]}'},
                {"type": "text", "text": "And?"},
            ],
        },
    ]
    assert body["tools"] == tool_schemas("anthropic")
    assert completion.content == "Checking."
    assert completion.tool_calls == [ToolCall("toolu_1", "recall", {"query": "x"})]
    assert completion.stop_reason == "tool_calls"
    assert completion.model == "claude-served"
    usage = completion.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (52, 40, 5)
    assert usage.call_site == "review"
    assert llm.usage_log.by_site() == {"review": usage}
    assert llm.context_window == 200_000


def test_anthropic_explicit_max_tokens_and_no_caching(server: WireServer, make: MakeLLM) -> None:
    server.script(anthropic_reply([{"type": "text", "text": "ok"}], stop="max_tokens"))

    completion = make(ANTHROPIC, prompt_caching=False).complete(
        [Message("system", "sys"), Message("user", "hi")], max_tokens=64, timeout=5
    )

    assert server.last["max_tokens"] == 64
    assert server.last["system"] == [{"type": "text", "text": "sys"}]
    assert "tools" not in server.last
    assert completion.stop_reason == "length"


def test_anthropic_stream_yields_text_then_the_whole_completion(
    server: WireServer, make: MakeLLM
) -> None:
    server.script(anthropic_stream(["Hel", "lo!"], ("toolu_2", "recall", ['{"query"', ': "tea"}'])))
    llm = make(ANTHROPIC)

    events = list(llm.stream([Message("user", "hi")], call_site="bootstrap"))

    assert events[:2] == [TextDelta("Hel"), TextDelta("lo!")]
    [completion] = events[2:]
    assert isinstance(completion, Completion)
    assert completion.content == "Hello!"
    assert completion.tool_calls == [ToolCall("toolu_2", "recall", {"query": "tea"})]
    assert completion.stop_reason == "tool_calls"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (52, 15)
    assert llm.usage_log.total("bootstrap") == completion.usage
    assert server.last["stream"] is True


def test_anthropic_base_url_and_key_come_from_the_environment(
    server: WireServer, from_spec: FromSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.script(anthropic_reply([{"type": "text", "text": "from env"}]))

    llm = from_spec("anthropic:claude-haiku-4-5", context_window=50_000)
    assert llm.complete([Message("user", "hi")]).content == "from env"
    assert llm.context_window == 50_000

    assert sent_key(server.requests[0]) == KEY


# -- retries and failures (both SDKs) -----------------------------------------------------------


@each_wire
@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit_error"), (500, "api_error")])
def test_429_and_5xx_are_retried_by_the_sdk(
    wire: Wire, status: int, kind: str, server: WireServer, make: MakeLLM
) -> None:
    server.script(wire.error(status, kind, "slow down"), wire.success())

    completion = make(wire).complete([Message("user", "hi")])

    assert completion.content == "All good."
    assert [request.path for request in server.requests] == [wire.path, wire.path]


@each_wire
def test_400_is_not_retried_and_the_error_says_why(
    wire: Wire, server: WireServer, make: MakeLLM
) -> None:
    server.script(wire.error(400, "invalid_request_error", f"messages: bad role (key {KEY})"))

    with pytest.raises(ProviderError) as caught:
        make(wire).complete([Message("user", "hi")])

    message = str(caught.value)
    assert len(server.requests) == 1
    assert "HTTP 400 invalid_request_error: messages: bad role" in message
    assert "'test-model'" in message
    assert ("OpenAI" if wire is OPENAI else "Anthropic") in message
    assert "invalid_request_error" in message
    assert KEY not in error_texts(caught.value)


@each_wire
def test_retries_give_up_with_a_provider_error(
    wire: Wire, server: WireServer, make: MakeLLM
) -> None:
    server.script(*[wire.error(503, "overloaded_error", "busy")] * 2)

    with pytest.raises(ProviderError, match=r"HTTP 503 overloaded_error: busy; gave up after 2"):
        make(wire, max_retries=1).complete([Message("user", "hi")])
    assert len(server.requests) == 2


@each_wire
def test_401_names_the_key_variable(wire: Wire, server: WireServer, make: MakeLLM) -> None:
    server.script(wire.error(401, "authentication_error", "invalid x-api-key"))
    env = "OPENAI_API_KEY" if wire is OPENAI else "ANTHROPIC_API_KEY"

    with pytest.raises(
        ProviderError, match=f"HTTP 401 authentication_error \\(check the key in {env}\\)"
    ):
        make(wire).complete([Message("user", "hi")])


@each_wire
def test_a_slow_server_is_a_timeout(wire: Wire, server: WireServer, make: MakeLLM) -> None:
    slow = wire.success()
    slow.delay = 3.0
    server.script(slow)

    with pytest.raises(ProviderError, match=r"timed out after 0.2 s \(1 attempt\)"):
        make(wire, max_retries=0).complete([Message("user", "hi")], timeout=0.2)


@each_wire
def test_an_unreachable_server_is_a_provider_error(wire: Wire, make: MakeLLM) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if wire is OPENAI else "")

    with pytest.raises(ProviderError, match="could not reach"):
        make(wire, base_url=base, max_retries=0).complete([Message("user", "hi")])


@each_wire
def test_a_failing_stream_is_a_provider_error(
    wire: Wire, server: WireServer, make: MakeLLM
) -> None:
    server.script(wire.error(400, "invalid_request_error", "no streaming today"))

    with pytest.raises(ProviderError, match="no streaming today"):
        list(make(wire).stream([Message("user", "hi")]))


# -- construction and the registry --------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ("openai:gpt-4o", "OPENAI_API_KEY"),
        ("anthropic:claude-3-7-sonnet-latest", "ANTHROPIC_API_KEY"),
        ("openrouter:openai/gpt-4o", "OPENROUTER_API_KEY"),
        ("groq:llama-3.1-8b-instant", "GROQ_API_KEY"),
    ],
)
def test_a_missing_key_fails_at_construction_naming_the_variable(spec: str, env: str) -> None:
    with pytest.raises(ValidationError, match=env):
        create_llm(spec)


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        create_llm("gemini:pro")
    for name in ("anthropic", "ollama", "openai"):
        assert name in str(caught.value)


@pytest.mark.parametrize("spec", ["openai", "openai:", "anthropic:  "])
def test_a_spec_without_model_is_refused(spec: str) -> None:
    with pytest.raises(ValidationError, match="names no model"):
        create_llm(spec, api_key=KEY)


@pytest.mark.parametrize(
    "options",
    [{"timeout": 0}, {"max_retries": -1}, {"max_tokens": 0}, {"context_window": 0}],
)
def test_bad_settings_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        create_llm("lmstudio:qwen2.5-7b-instruct", **options)


def test_keyless_presets_and_model_table(from_spec: FromSpec) -> None:
    llm = from_spec("lmstudio:qwen2.5-7b-instruct")
    assert llm.base_url == "http://localhost:1234/v1"
    assert llm.context_window == 32_768
    llm = from_spec("vllm:meta-llama/Llama-3.1-8B-Instruct")
    assert llm.base_url == "http://localhost:8000/v1"
    assert llm.context_window == 131_072
    llm = from_spec("openrouter:anthropic/claude-3.5-sonnet", api_key=KEY)
    assert llm.context_window == 200_000
    assert KEY not in repr(llm)


def test_outside_providers_register_like_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_registry, "_REGISTRY", dict(llm_registry._REGISTRY))
    seen: dict[str, Any] = {}

    def factory(model: str, /, **options: Any) -> ScriptedLLM:
        seen.update(options, model=model)
        return ScriptedLLM(["hi"], model_id=f"mine:{model}")

    register_llm("mine", factory)

    llm = create_llm("mine:small", context_window=2048, temperature=0)
    assert llm.model_id == "mine:small"
    assert seen == {"model": "small", "context_window": 2048, "temperature": 0}
    assert "mine" in available_llms()
    with pytest.raises(ValidationError):
        register_llm("bad:name", factory)
