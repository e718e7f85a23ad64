"""The agent loop (the seed's "Data Flow"): one user message in, the reply out, memory kept.

Each step builds the context (profile in the system prefix, summaries, the raw keep-window; no
search and no extra LLM call), offers the seven memory tools, runs the tool calls the model makes
through the one dispatcher and feeds the results back, for at most ``max_steps`` model calls (the
last one is offered no tools, so a turn always ends in text). Every message is stored with its
speaker, tool calls, tool name and time. After the turn the compaction check runs.

A turn that fails (the model is down) keeps the user's message stored: sending the same message
again retries that turn in place rather than storing it twice (``_user_turn``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hivekeep.core.messages import ToolCall
from hivekeep.core.tokens import count_tokens
from hivekeep.providers.llm.base import Completion, TextDelta
from hivekeep.services.compaction import CompactionOutcome, CompactionService
from hivekeep.services.conversation import ConversationService
from hivekeep.services.llms import LLMResolver
from hivekeep.services.profile import ProfileService
from hivekeep.store.base import AgentRecord, Store
from hivekeep.store.conversations import MessageRecord, NewMessage, ToolCallRecord

MAX_STEPS = 8
MAX_MESSAGE_CHARS = 100_000
_MESSAGE_OVERHEAD = 4  # tokens of role and separators per message, as OpenAI counts them

ToolRunner = Callable[[str, dict[str, Any]], dict[str, Any]]  # the façade's dispatcher, per agent


@dataclass(frozen=True)
class ToolUse:
    """A tool call the model made during the turn, and what the tool returned."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


@dataclass(frozen=True)
class ChatReply:
    """The end of a turn: the reply, what was stored, and the compaction it triggered (if any)."""

    conversation_id: int
    content: str
    messages: list[MessageRecord]
    tool_uses: list[ToolUse]
    steps: int
    compaction: CompactionOutcome | None


ChatEvent = TextDelta | ToolUse | ChatReply


def message_tokens(content: str, calls: tuple[ToolCallRecord, ...] = ()) -> int:
    """Tokens a stored message takes in the context (what compaction planning adds up)."""
    return (
        _MESSAGE_OVERHEAD
        + count_tokens(content)
        + sum(count_tokens(c.name) + count_tokens(c.arguments) for c in calls)
    )


class ChatService:
    def __init__(
        self,
        store: Store,
        conversations: ConversationService,
        profiles: ProfileService,
        compaction: CompactionService,
        llms: LLMResolver,
        max_steps: int = MAX_STEPS,
    ) -> None:
        self.store = store
        self.conversations = conversations
        self.profiles = profiles
        self.compaction = compaction
        self.llms = llms
        self.max_steps = max_steps

    def stream(
        self,
        agent: AgentRecord,
        run_tool: ToolRunner,
        message: str,
        conversation_id: int,
        speaker: str | None = None,
    ) -> Iterator[ChatEvent]:
        """Yield text as it streams, each tool use as it completes, then one ``ChatReply``."""
        llm = self.llms.chat_model(agent.id)
        stored = self._user_turn(conversation_id, message, speaker)
        uses: list[ToolUse] = []
        steps = 0
        content = ""
        while True:
            steps += 1
            last = steps >= self.max_steps
            context = self.conversations.context(
                agent, conversation_id, self.profiles.get(agent.id).text
            )
            completion = Completion()
            for event in llm.stream(
                context.messages, tools=None if last else self.conversations.tools, call_site="chat"
            ):
                if isinstance(event, TextDelta):
                    yield event
                else:
                    completion = event
            content = completion.content
            calls = () if last else tuple(completion.tool_calls)
            records = tuple(ToolCallRecord(c.id, c.name, c.arguments_json()) for c in calls)
            stored += self.store.add_messages(
                conversation_id,
                [NewMessage("assistant", content, message_tokens(content, records), records)],
            )
            if not calls:
                break
            results = []
            for call in calls:
                use = ToolUse(call.id, call.name, call.arguments, _run(run_tool, call))
                uses.append(use)
                yield use
                text = json.dumps(use.result, ensure_ascii=False)
                results.append(
                    NewMessage(
                        "tool",
                        text,
                        message_tokens(text),
                        tool_call_id=call.id,
                        tool_name=call.name,
                    )
                )
            stored += self.store.add_messages(conversation_id, results)
        outcome = self.compaction.after_turn(agent, conversation_id)
        yield ChatReply(conversation_id, content, stored, uses, steps, outcome)

    def _user_turn(
        self, conversation_id: int, message: str, speaker: str | None
    ) -> list[MessageRecord]:
        """The user's message, stored; or, when the conversation ends with this same message
        unanswered (its turn failed before any reply was stored), that one, answered in place: a
        retry is never stored twice, and the model never reads the message twice in a row."""
        raw = self.store.raw_messages(conversation_id)
        last = raw[-1] if raw else None
        if last and (last.role, last.content, last.speaker) == ("user", message, speaker):
            return [last]
        return self.store.add_messages(
            conversation_id,
            [NewMessage("user", message, message_tokens(message), speaker=speaker)],
        )


def _run(run_tool: ToolRunner, call: ToolCall) -> dict[str, Any]:
    """The tool's result; a call whose arguments were not a JSON object gets a precise error."""
    raw = call.invalid_arguments
    if raw is not None:
        return {
            "error": f"The arguments of {call.name} were not a JSON object ({raw[:200]!r}); "
            "call it again with a JSON object of its parameters."
        }
    return run_tool(call.name, call.arguments)
