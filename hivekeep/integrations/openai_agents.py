"""The OpenAI Agents SDK over a hive: a ``Session`` that is a compacting hivekeep conversation,
and the seven memory tools as function tools.

>>> agent = hive.agent("assistant")                                      # doctest: +SKIP
>>> bot = agents.Agent(name="assistant", tools=memory_tools(agent))     # doctest: +SKIP
>>> await Runner.run(bot, "Hi!", session=HivekeepSession(agent))        # doctest: +SKIP

``HivekeepSession`` stores each turn's items as the conversation's messages (``Agent.
add_messages``), then runs the compaction check hivekeep's own ``chat`` runs: old messages fold
into dated summaries and the one maintenance call fills the archive and the profile. Its
``get_items`` is what the model should see next (``Agent.context``): one system item (profile
block and summaries), then the raw tail. Mapping and limits: docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from hivekeep.integrations import needs_extra

try:
    from agents import FunctionTool, RunContextWrapper, Tool
    from agents.items import TResponseInputItem
    from agents.memory import SessionABC, SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as exc:  # the extra is not installed, or too old
    raise needs_extra("openai-agents", exc) from exc

from hivekeep import Agent, Message, ToolCall, ValidationError, tool_schemas
from hivekeep.core.messages import parse_tool_arguments

__all__ = ["HivekeepSession", "memory_tools"]

_TEXT_PARTS = ("input_text", "output_text", "text")
_DROPPED = ("reasoning",)  # one provider's opaque chain of thought; replay works without it


class HivekeepSession(SessionABC):
    """An Agents SDK session kept as a hivekeep conversation of ``agent``, compacted as it grows.

    ``conversation``: an existing conversation's id (the ``session_id`` of an earlier session) to
    continue; None starts one titled ``title``. ``compact=False`` stores turns without the
    compaction check (no model needed). Compaction uses the hive's models for the agent (its chat
    model's context window sets the trigger; ``COMPACTING_MODEL`` / ``MEMORY_EXTRACTION_MODEL``
    write the summaries and run maintenance), not the SDK agent's model. ``session_settings``
    (a ``SessionSettings`` or a dict, as the SDK's own sessions take it): its ``limit`` caps
    ``get_items`` when no ``limit`` is passed there.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        agent: Agent,
        conversation: int | None = None,
        *,
        title: str = "",
        compact: bool = True,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.compact = compact
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        record = (
            agent.start_conversation(title)
            if conversation is None
            else agent.conversation(conversation)
        )
        self.conversation_id = record.id
        self.session_id = str(record.id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """What the model reads next: the system item (profile, summaries), then the raw tail.

        Only the latest ``limit`` items, else ``session_settings.limit``'s, as the SDK's
        ``SQLiteSession`` reads them: None or a negative limit is every item, 0 none."""
        context = await asyncio.to_thread(self.agent.context, self.conversation_id)
        items = session_items(context.messages)
        session_limit = resolve_session_limit(limit, self.session_settings)
        if session_limit is None or session_limit < 0:
            return items
        return items[len(items) - session_limit :] if session_limit else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items as messages in one transaction, then the compaction check."""
        messages = conversation_messages(items)
        if messages:
            await asyncio.to_thread(
                self.agent.add_messages, self.conversation_id, messages, compact=self.compact
            )

    async def pop_item(self) -> TResponseInputItem | None:
        """Refused: a conversation's messages may already be folded into its summaries and
        memories, so hivekeep never takes one back. ``clear_session`` starts afresh."""
        raise ValidationError(
            "A hivekeep conversation keeps every message (it may already be summarised and "
            "remembered), so HivekeepSession cannot pop one; clear_session starts a new one."
        )

    async def clear_session(self) -> None:
        """Continue in a new, empty conversation; the old one stays in the hive with its
        summaries, and what maintenance drew from it stays in the archive and the profile."""
        record = await asyncio.to_thread(self.agent.start_conversation, "")
        self.conversation_id = record.id
        self.session_id = str(record.id)


def memory_tools(agent: Agent) -> list[Tool]:
    """The seven memory tools as the SDK's function tools, each running as ``agent`` through the
    one validating dispatcher (``Agent.call_tool``): a bad call gets ``{"error": ...}`` back."""
    return [_function_tool(agent, schema["function"]) for schema in tool_schemas("openai")]


def _function_tool(agent: Agent, function: Mapping[str, Any]) -> FunctionTool:
    name = str(function["name"])

    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        result = await asyncio.to_thread(agent.call_tool, name, arguments)
        return json.dumps(result, ensure_ascii=False)

    return FunctionTool(
        name=name,
        description=str(function["description"]),
        params_json_schema=dict(function["parameters"]),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # optional parameters stay optional
    )


# the two vocabularies -------------------------------------------------------------------------
def session_items(messages: Iterable[Message]) -> list[TResponseInputItem]:
    """hivekeep's context messages as Responses input items, which every SDK model accepts."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content}
            )
            continue
        if m.content or not m.tool_calls:
            items.append({"role": m.role, "content": m.content})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments_json(),
            }
            for call in m.tool_calls
        )
    return cast(list[TResponseInputItem], items)


def conversation_messages(items: Iterable[TResponseInputItem]) -> list[Message]:
    """SDK items as messages: text messages, function calls (joined to the assistant message
    they follow) and their outputs. Reasoning items are left out; any other item (a hosted
    tool's call, an image) is refused before anything is stored."""
    messages: list[Message] = []
    tool_names: dict[str, str] = {}
    for raw in items:
        item = cast(Mapping[str, Any], raw)
        kind = item.get("type", "message")
        if kind == "message":
            role: Any = "system" if item["role"] == "developer" else item["role"]  # checked
            messages.append(Message(role, _text(item.get("content"), kind)))
        elif kind == "function_call":
            call = ToolCall(item["call_id"], item["name"], parse_tool_arguments(item["arguments"]))
            tool_names[call.id] = call.name
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":  # the reply's text, then its calls
                messages[-1] = Message("assistant", last.content, (*last.tool_calls, call))
            else:
                messages.append(Message("assistant", "", (call,)))
        elif kind == "function_call_output":
            call_id = item["call_id"]
            output = _text(item.get("output"), kind)
            messages.append(
                Message("tool", output, tool_call_id=call_id, name=tool_names.get(call_id))
            )
        elif kind not in _DROPPED:
            raise ValidationError(
                f"HivekeepSession keeps messages, function calls and their outputs; a {kind!r} "
                "item has no place in a hivekeep conversation. Use function tools instead."
            )
    return messages


def _text(content: Any, kind: str) -> str:
    """The text of a message's content or a tool's output: a string, or text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    pieces = []
    for part in content:
        if part.get("type") in _TEXT_PARTS:
            pieces.append(str(part.get("text", "")))
        elif part.get("type") == "refusal":
            pieces.append(str(part.get("refusal", "")))
        else:
            raise ValidationError(
                f"HivekeepSession keeps text; a {kind} with a {part.get('type')!r} part cannot be "
                "stored."
            )
    return "".join(pieces)
