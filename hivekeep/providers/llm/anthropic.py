"""Claude models through Anthropic's Messages API and the official ``anthropic`` SDK.

``anthropic:MODEL``; the key comes from ``api_key=`` or ``ANTHROPIC_API_KEY``, the server from
``base_url=``, ``ANTHROPIC_BASE_URL`` or https://api.anthropic.com.

hivekeep speaks OpenAI-style messages; this module converts them to what the Messages API
requires: system messages become the ``system`` parameter (all of them, in order, wherever they
stood); an assistant's tool calls become ``tool_use`` blocks and tool results ``tool_result``
blocks in a user turn; consecutive turns of one role are merged, since roles must alternate;
empty text is dropped, since the API refuses empty blocks. A message's ``name`` has no place in
this API and is not sent. OpenAI-format tool schemas become ``{name, description, input_schema}``.

The system prompt is marked as a prompt-cache breakpoint (``prompt_caching=False`` turns that
off), so the tools and system prompt, where hivekeep keeps the profile, are billed as cache reads
on every turn they stay the same. ``max_tokens`` is required by the API: it defaults to 4,096,
which every Claude model accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar, Unpack

import anthropic
from anthropic.types import Message as AnthropicMessage
from anthropic.types import TextBlock, ToolUseBlock

from hivekeep.core.messages import RAW_ARGUMENTS_KEY, Message, ToolCall
from hivekeep.providers.llm.base import CallSite, Completion, StreamEvent, TextDelta, Usage
from hivekeep.providers.llm.calls import LLMCall
from hivekeep.providers.llm.sdk import ClientOptions, Endpoint, SDKChatLLM, SDKErrors

ENDPOINT = Endpoint(
    "anthropic", "Anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
)

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicLLM(SDKChatLLM):
    """A Claude model::

    with AnthropicLLM("claude-haiku-4-5") as llm:
        answer = llm.complete([Message("user", "Hello")], max_tokens=200).content
    """

    sdk_errors: ClassVar[SDKErrors] = SDKErrors(
        anthropic.AnthropicError,
        anthropic.APIStatusError,
        anthropic.APIConnectionError,
        anthropic.APITimeoutError,
    )
    default_max_tokens: ClassVar[int | None] = 4096

    def __init__(
        self, model: str, *, prompt_caching: bool = True, **options: Unpack[ClientOptions]
    ) -> None:
        super().__init__(model, ENDPOINT, **options)
        self.prompt_caching = prompt_caching
        self._client = anthropic.Anthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def _request(self, call: LLMCall) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` (and ``messages.stream``)."""
        system, turns = to_anthropic_messages(call.messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": call.max_tokens or self.default_max_tokens,
            "messages": turns,
        }
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if self.prompt_caching:
                block["cache_control"] = {"type": "ephemeral"}
            request["system"] = [block]
        if call.tools:
            request["tools"] = [to_anthropic_tool(tool) for tool in call.tools]
        if call.timeout is not None:
            request["timeout"] = call.timeout
        return request

    def _complete(self, call: LLMCall) -> Completion:
        reply = self._client.messages.create(**self._request(call))
        return self._completion(reply, call.call_site)

    def _stream(self, call: LLMCall) -> Iterator[StreamEvent]:
        with self._client.messages.stream(**self._request(call)) as stream:
            for text in stream.text_stream:
                if text:
                    yield TextDelta(text)
            reply = stream.get_final_message()
        yield self._completion(reply, call.call_site)

    def _close(self) -> None:
        self._client.close()

    def _completion(self, reply: AnthropicMessage, call_site: CallSite) -> Completion:
        blocks = reply.content
        calls = [
            ToolCall(block.id, block.name, _tool_input(block.input))
            for block in blocks
            if isinstance(block, ToolUseBlock)
        ]
        usage = reply.usage
        cache_read = getattr(usage, "cache_read_input_tokens", None) or 0
        cache_write = getattr(usage, "cache_creation_input_tokens", None) or 0
        return Completion(
            content="".join(block.text for block in blocks if isinstance(block, TextBlock)),
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.input_tokens + cache_read + cache_write,
                output_tokens=usage.output_tokens,
                call_site=call_site,
                cached_input_tokens=cache_read,
            ),
            model=reply.model or self.model,
            stop_reason=_STOP_REASONS.get(reply.stop_reason or "end_turn", str(reply.stop_reason)),
        )


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, turns)`` for the Messages API from OpenAI-style messages (see the docstring)."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content.strip():
                system.append(message.content)
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # the API wants a user turn's tool results before any text
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(system), turns


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        result = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        return "user", [{**result, "content": message.content}]
    blocks: list[dict[str, Any]] = []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return message.role, blocks


def to_anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-format function schema as an Anthropic tool (Anthropic-format ones pass)."""
    if "input_schema" in tool:
        return tool
    function = tool.get("function", tool)
    converted: dict[str, Any] = {
        "name": function["name"],
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        converted["description"] = function["description"]
    return converted


def _tool_input(value: object) -> dict[str, Any]:
    """The ``input`` of a ``tool_use`` block, which the API promises is an object."""
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: json.dumps(value)}


__all__ = ["AnthropicLLM", "to_anthropic_messages", "to_anthropic_tool"]
