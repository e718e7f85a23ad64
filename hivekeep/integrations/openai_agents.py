"""The OpenAI Agents SDK over a hive: a ``Session`` that is a compacting hivekeep conversation,
and the seven memory tools as function tools.

>>> agent = hive.agent("assistant")                                      # doctest: +SKIP
>>> session = HivekeepSession(agent, "user-42")                          # doctest: +SKIP
>>> bot = agents.Agent(name="assistant", instructions=session.instructions("Be brief."),
...                    tools=memory_tools(agent))                        # doctest: +SKIP
>>> await Runner.run(bot, "Hi!", session=session)                        # doctest: +SKIP

``HivekeepSession`` stores each item the SDK adds as a conversation message (``Agent.
add_messages``) with the item itself kept beside it, verbatim, then runs the compaction check
hivekeep's own ``chat`` runs: old messages fold into dated summaries and the one maintenance call
fills the archive and the profile. ``get_items`` returns exactly the items added that are not yet
folded, in order, as any SDK session does; the profile and the summaries reach the model through
the agent's instructions (``instructions``). Mapping and limits: docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, cast

from hivekeep.integrations import needs_extra

try:
    from agents import Agent as SdkAgent
    from agents import FunctionTool, RunContextWrapper, Tool
    from agents.items import TResponseInputItem
    from agents.memory import SessionABC, SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as exc:  # the extra is not installed, or too old
    raise needs_extra("openai-agents", exc) from exc

from hivekeep import (
    Agent,
    ConflictError,
    Message,
    MessageRecord,
    ToolCall,
    ValidationError,
    tool_schemas,
)
from hivekeep.core.messages import parse_tool_arguments

__all__ = ["HivekeepSession", "memory_tools"]

_TEXT_PARTS = ("input_text", "output_text", "text")
_MESSAGES = ("message", "function_call", "function_call_output")  # items that are a message
_CARRIED = ("reasoning",)  # one provider's chain of thought: kept with a message's items
ITEMS = "items"  # the key of a message's record that holds its SDK items

Instructions = Callable[[RunContextWrapper[Any], SdkAgent[Any]], Awaitable[str]]
BaseInstructions = (
    str | Callable[[RunContextWrapper[Any], SdkAgent[Any]], str | Awaitable[str]] | None
)


class HivekeepSession(SessionABC):
    """An Agents SDK session kept as a hivekeep conversation of ``agent``, compacted as it grows.

    ``conversation``: None starts a conversation titled ``title``; an int continues that
    conversation (the ``session_id`` of an earlier unnamed session); a string names the session,
    as the SDK's own sessions are named: the agent's newest conversation with that title, started
    on first use, and ``session_id`` is the name. ``compact=False`` stores turns without the
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
        conversation: int | str | None = None,
        *,
        title: str = "",
        compact: bool = True,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.compact = compact
        self.closed = False
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.name = _session_name(conversation) if isinstance(conversation, str) else None
        if self.name is not None:
            self.conversation_id = _named_conversation(agent, self.name)
        elif isinstance(conversation, int):
            self.conversation_id = agent.conversation(conversation).id
        else:
            self.conversation_id = agent.start_conversation(title).id
        self.session_id = self.name if self.name is not None else str(self.conversation_id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items added and not yet folded into a summary, exactly as added, in order.

        Only the latest ``limit`` items, else ``session_settings.limit``'s, as the SDK's
        ``SQLiteSession`` reads them: None or a negative limit is every item, 0 none. The
        profile and the summaries are not items: ``instructions`` brings them to the model."""
        self._check_open()
        items = await asyncio.to_thread(self._items)
        session_limit = resolve_session_limit(limit, self.session_settings)
        if session_limit is None or session_limit < 0:
            return items
        return items[max(0, len(items) - session_limit) :] if session_limit else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items as messages in one transaction, then the compaction check."""
        self._check_open()
        messages, records = conversation_messages(items)
        if messages:
            await asyncio.to_thread(
                self.agent.add_messages,
                self.conversation_id,
                messages,
                compact=self.compact,
                records=records,
            )

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the latest item back and return it (None when the session has none). An item
        already folded into a summary is refused (``ConflictError``): the summary, and what
        maintenance drew from it into the archive and the profile, cannot be taken back."""
        self._check_open()
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Continue in a new, empty conversation (a named session keeps its name); the old one
        stays in the hive with its summaries, and what maintenance drew from it stays in the
        archive and the profile."""
        self._check_open()
        record = await asyncio.to_thread(self.agent.start_conversation, self.name or "")
        self.conversation_id = record.id
        self.session_id = self.name if self.name is not None else str(record.id)

    def close(self) -> None:
        """End this session object, as the SDK's ``SQLiteSession.close`` does: later calls raise
        ``RuntimeError``. The conversation stays in the hive; the hive owns the connection."""
        self.closed = True

    def instructions(self, base: BaseInstructions = None) -> Instructions:
        """Dynamic instructions for the SDK agent (``Agent(instructions=...)``) that bring this
        session's memory to the model on every call, whatever ``limit`` and run mode: ``base``
        (the agent's own instructions: a string, or a function as the SDK takes it), then the
        hivekeep agent's system prompt (its role, profile block and routing rules), then the
        conversation's dated summaries of the items folded away."""

        async def with_memory(context: RunContextWrapper[Any], sdk_agent: SdkAgent[Any]) -> str:
            own = base(context, sdk_agent) if callable(base) else base
            own = await own if inspect.isawaitable(own) else own
            memory = await asyncio.to_thread(self.memory_prompt)
            return f"{own.rstrip()}\n\n{memory}" if own else memory

        return with_memory

    def memory_prompt(self) -> str:
        """The hivekeep agent's system prompt for this conversation: role, profile block,
        routing rules, then the dated summaries."""
        return self.agent.context(self.conversation_id).messages[0].content

    # stored items -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("HivekeepSession is closed")

    def _items(self) -> list[TResponseInputItem]:
        """The items the raw (not yet folded) messages hold, oldest first."""
        raw = self.agent.context(self.conversation_id).raw
        return [item for message in raw for item in message_items(message)]

    def _pop(self) -> TResponseInputItem | None:
        context = self.agent.context(self.conversation_id)
        if not context.raw:
            if context.summaries:
                raise ConflictError(
                    "The session's latest item is already folded into a summary (compacted), "
                    "so it cannot be popped: the summary and the memories drawn from it stay."
                )
            return None
        groups = [(m, message_items(m)) for m in context.raw]
        last, items = groups[-1]
        item = items[-1]
        at = _message_at(items)
        if len(items) == 1:
            self.agent.delete_message(self.conversation_id, last.id)
        elif at != len(items) - 1:  # a carried item after the message: only it goes
            self.agent.set_message_record(self.conversation_id, last.id, {ITEMS: items[:-1]})
        else:  # the message itself: carried items before it move to the message before
            self.agent.delete_message(self.conversation_id, last.id)
            if len(groups) > 1:
                before, kept = groups[-2]
                record = {ITEMS: [*kept, *items[:-1]]}
                self.agent.set_message_record(self.conversation_id, before.id, record)
        return item


def _session_name(name: str) -> str:
    if not name or " ".join(name.split()) != name or len(name) > 200:
        raise ValidationError(
            f"A session name is 1-200 characters without spaces around it or runs of them, "
            f"got {name!r}."
        )
    return name


def _named_conversation(agent: Agent, name: str) -> int:
    """The id of the agent's newest conversation titled ``name``; a new one if there is none."""
    named = [c.id for c in agent.conversations() if c.title == name]
    return max(named) if named else agent.start_conversation(name).id


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
def message_items(message: MessageRecord) -> list[TResponseInputItem]:
    """The SDK items a stored message holds: those kept with it, verbatim; for a message stored
    another way (hivekeep's own chat), the Responses input items it reads as."""
    if message.record is not None and ITEMS in message.record:
        return cast(list[TResponseInputItem], list(message.record[ITEMS]))
    calls = tuple(
        ToolCall(call.id, call.name, parse_tool_arguments(call.arguments))
        for call in message.tool_calls
    )
    role: Any = message.role
    return session_items(
        [Message(role, message.content, calls, message.tool_call_id, message.tool_name)]
    )


def session_items(messages: Iterable[Message]) -> list[TResponseInputItem]:
    """hivekeep's messages as Responses input items, which every SDK model accepts."""
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


def conversation_messages(
    items: Iterable[TResponseInputItem],
) -> tuple[list[Message], list[dict[str, Any]]]:
    """SDK items as messages, each with the record of the items it holds: one message per text
    message, function call or output. A reasoning item is carried by the message before it in
    the batch (the first message when it leads the batch). Any other item (a hosted tool's call,
    an image) is refused before anything is stored."""
    messages: list[Message] = []
    groups: list[list[Any]] = []
    leading: list[Any] = []
    tool_names: dict[str, str] = {}  # call id: the name its output is shown under
    for raw in items:
        item = cast(Mapping[str, Any], raw)
        kind = item.get("type", "message")
        if kind in _CARRIED:
            (groups[-1] if groups else leading).append(raw)
            continue
        messages.append(_message(item, kind, tool_names))
        groups.append([*leading, raw])
        leading = []
    if leading:
        raise ValidationError(
            "HivekeepSession keeps reasoning items with the message they led to; a batch of "
            "reasoning items alone has none."
        )
    return messages, [{ITEMS: group} for group in groups]


def _message(item: Mapping[str, Any], kind: str, tool_names: dict[str, str]) -> Message:
    """The message an item reads as in the conversation (compaction, the UI, hivekeep's chat)."""
    if kind == "message":
        role: Any = "system" if item["role"] == "developer" else item["role"]  # checked
        return Message(role, _text(item.get("content"), kind))
    if kind == "function_call":
        call = ToolCall(item["call_id"], item["name"], parse_tool_arguments(item["arguments"]))
        tool_names[call.id] = call.name
        return Message("assistant", "", (call,))
    if kind == "function_call_output":
        call_id = item["call_id"]
        output = _text(item.get("output"), kind)
        return Message("tool", output, tool_call_id=call_id, name=tool_names.get(call_id))
    raise ValidationError(
        f"HivekeepSession keeps messages, function calls and their outputs; a {kind!r} "
        "item has no place in a hivekeep conversation. Use function tools instead."
    )


def _message_at(items: list[Any]) -> int:
    """Where the item that is the message stands among a message's items."""
    return next(n for n, item in enumerate(items) if item.get("type", "message") not in _CARRIED)


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
