"""Chat models behind OpenAI's chat-completions API, through the official ``openai`` SDK.

One class serves every server that speaks that API; a *preset* says where it lives and how it
authenticates (``base_url=`` overrides any default)::

    spec           default base URL                  API key                base URL also from
    openai:M       https://api.openai.com/v1         OPENAI_API_KEY         OPENAI_BASE_URL
    ollama:M       http://localhost:11434/v1         none                   OLLAMA_HOST (+ /v1)
    openrouter:M   https://openrouter.ai/api/v1      OPENROUTER_API_KEY
    groq:M         https://api.groq.com/openai/v1    GROQ_API_KEY
    vllm:M         http://localhost:8000/v1          VLLM_API_KEY (opt.)    VLLM_BASE_URL
    lmstudio:M     http://localhost:1234/v1          none                   LMSTUDIO_BASE_URL

Ollama serves every model with a 4,096-token context unless its server was started with
``OLLAMA_CONTEXT_LENGTH``, whatever the model could do, and silently drops the oldest prompt text
past that (the system prompt first). So an Ollama model's window is ``OLLAMA_CONTEXT_LENGTH``
when that is set here too, else 4,096, capped by the model's own; ``context_window=`` overrides.

OpenAI's reasoning models (o1, o3, o4, gpt-5) refuse ``max_tokens``; they are sent
``max_completion_tokens``, every other model and server the ``max_tokens`` all of them accept.
A message's ``name`` is sent as the API's ``[A-Za-z0-9_-]{1,64}`` allows (``Grace Hopper`` →
``Grace_Hopper``) rather than have the request refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, ClassVar, Unpack

import openai

from hivekeep.core.messages import Message, ToolCall, parse_tool_arguments
from hivekeep.errors import ValidationError
from hivekeep.providers.llm.base import Completion, StreamEvent, TextDelta, Usage, estimate_usage
from hivekeep.providers.llm.calls import LLMCall
from hivekeep.providers.llm.context_windows import known_context_window
from hivekeep.providers.llm.sdk import ClientOptions, Endpoint, SDKChatLLM, SDKErrors

PRESETS: dict[str, Endpoint] = {
    "openai": Endpoint(
        "openai", "OpenAI", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL"
    ),
    "ollama": Endpoint(
        "ollama",
        "Ollama",
        "http://localhost:11434/v1",
        None,
        "OLLAMA_HOST",
        key_required=False,
        env_url_path="/v1",
    ),
    "openrouter": Endpoint(
        "openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"
    ),
    "groq": Endpoint("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "vllm": Endpoint(
        "vllm",
        "vLLM",
        "http://localhost:8000/v1",
        "VLLM_API_KEY",
        "VLLM_BASE_URL",
        key_required=False,
    ),
    "lmstudio": Endpoint(
        "lmstudio",
        "LM Studio",
        "http://localhost:1234/v1",
        None,
        "LMSTUDIO_BASE_URL",
        key_required=False,
    ),
}

OLLAMA_DEFAULT_CONTEXT = 4096
_KEY_PLACEHOLDER = "not-needed"  # the SDK insists on a key; keyless servers ignore it
_REASONING_MODELS = re.compile(r"^(o\d|gpt-5)")  # they refuse max_tokens
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")  # OpenAI's pattern for a message's name


class OpenAICompatLLM(SDKChatLLM):
    """A model behind an OpenAI-compatible chat-completions endpoint::

    with OpenAICompatLLM("llama3.1", preset="ollama") as llm:
        answer = llm.complete([Message("user", "Hello")]).content
    """

    sdk_errors: ClassVar[SDKErrors] = SDKErrors(
        openai.OpenAIError, openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError
    )
    # Some servers do not send usage in a stream when asked (or reject the option); set this to
    # False on an instance for those, and usage is estimated instead.
    stream_usage: bool = True

    def __init__(
        self, model: str, *, preset: str = "openai", **options: Unpack[ClientOptions]
    ) -> None:
        endpoint = PRESETS.get(preset)
        if endpoint is None:
            raise ValidationError(
                f"Unknown OpenAI-compatible preset {preset!r}; use one of: {', '.join(PRESETS)}."
            )
        if preset == "ollama" and options.get("context_window") is None:
            options["context_window"] = _ollama_window(model)
        super().__init__(model, endpoint, **options)
        self._client = openai.OpenAI(
            api_key=self._api_key or _KEY_PLACEHOLDER,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def _request(self, call: LLMCall) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create``, the same for both modes."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in call.messages],
        }
        if call.tools:
            request["tools"] = call.tools
        if call.max_tokens is not None:
            reasoning = self.endpoint.provider == "openai" and _REASONING_MODELS.match(self.model)
            request["max_completion_tokens" if reasoning else "max_tokens"] = call.max_tokens
        if call.timeout is not None:
            request["timeout"] = call.timeout
        return request

    def _complete(self, call: LLMCall) -> Completion:
        response = self._client.chat.completions.create(**self._request(call))
        if not response.choices:
            raise self._error("returned no choices")
        choice = response.choices[0]
        content = choice.message.content or ""
        calls = [
            ToolCall(wire.id, function.name, parse_tool_arguments(function.arguments))
            for wire in choice.message.tool_calls or ()
            if (function := getattr(wire, "function", None)) is not None
        ]
        return Completion(
            content=content,
            tool_calls=calls,
            usage=_usage(response.usage, call, content, calls),
            model=response.model or self.model,
            stop_reason=choice.finish_reason or "stop",
        )

    def _stream(self, call: LLMCall) -> Iterator[StreamEvent]:
        request = self._request(call)
        if self.stream_usage:
            request["stream_options"] = {"include_usage": True}
        text: list[str] = []
        partial: dict[int, list[str]] = {}  # index -> [id, name, argument text]
        usage: Any = None
        model, finish = self.model, "stop"
        with self._client.chat.completions.create(stream=True, **request) as chunks:
            for chunk in chunks:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices[:1]:
                    if choice.delta.content:
                        text.append(choice.delta.content)
                        yield TextDelta(choice.delta.content)
                    for delta in choice.delta.tool_calls or ():
                        pending = partial.setdefault(delta.index, ["", "", ""])
                        pending[0] = pending[0] or delta.id or ""
                        if delta.function is not None:
                            pending[1] = pending[1] or delta.function.name or ""
                            pending[2] += delta.function.arguments or ""
                    finish = choice.finish_reason or finish
        content = "".join(text)
        calls = [
            ToolCall(call_id or f"call_{index}", name, parse_tool_arguments(arguments))
            for index, (call_id, name, arguments) in sorted(partial.items())
        ]
        yield Completion(
            content=content,
            tool_calls=calls,
            usage=_usage(usage, call, content, calls),
            model=model,
            stop_reason=finish,
        )

    def _close(self) -> None:
        self._client.close()


def to_openai_message(message: Message) -> dict[str, Any]:
    """A hivekeep ``Message`` in the chat-completions wire format."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
    elif message.name:
        # The API allows a name only in [A-Za-z0-9_-]{1,64}; speakers are often free text.
        out["name"] = _NAME_UNSAFE.sub("_", message.name)[:64]
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call in message.tool_calls
        ]
    return out


def _usage(reported: Any, call: LLMCall, content: str, calls: list[ToolCall]) -> Usage:
    """The server's token counts, or an estimate when it sent none."""
    if reported is None:
        return estimate_usage(call.messages, content, calls, call.call_site)
    details = getattr(reported, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=int(reported.prompt_tokens or 0),
        output_tokens=int(reported.completion_tokens or 0),
        call_site=call.call_site,
        cached_input_tokens=int(cached),
    )


def _ollama_window(model: str) -> int:
    """What Ollama will actually serve (see the module docstring)."""
    configured = os.environ.get("OLLAMA_CONTEXT_LENGTH", "").strip()
    served = int(configured) if configured.isdigit() and int(configured) > 0 else None
    trained = known_context_window(model)
    return min(served or OLLAMA_DEFAULT_CONTEXT, trained or served or OLLAMA_DEFAULT_CONTEXT)


__all__ = ["PRESETS", "OpenAICompatLLM", "to_openai_message"]
