"""Helpers for agent-loop and compaction tests: scripted replies and prepared histories."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hivekeep import Agent, Hive
from hivekeep.core.maintenance import SYSTEM_PROMPT as MAINTENANCE_PROMPT
from hivekeep.core.transcript import FOLD_SYSTEM, MERGE_SYSTEM
from hivekeep.providers.llm.base import Message
from hivekeep.services.chat import message_tokens
from hivekeep.store.conversations import NewMessage, ToolCallRecord


def maintenance_reply(archive: object = (), profile: str | None = "## User\n- Name: Ann\n") -> str:
    body = archive if isinstance(archive, str) else json.dumps(list(archive))  # type: ignore[call-overload]
    out = f"<archive>\n{body}\n</archive>\n"
    if profile is not None:
        out += f"<profile>\n{profile}\n</profile>"
    return out


def call_site_of(messages: list[Message]) -> str:
    """Which upkeep prompt a scripted call received (by its system prompt)."""
    system = messages[0].content if messages and messages[0].role == "system" else ""
    if system == FOLD_SYSTEM:
        return "fold"
    if system == MERGE_SYSTEM:
        return "merge"
    if system == MAINTENANCE_PROMPT:
        return "maintenance"
    return "chat"


def by_prompt(
    fold: str = "They talked.", merge: str = "Merged talk.", maintenance: str | None = None
) -> Callable[[list[Message], Any], str]:
    """A reply that answers any upkeep call by its prompt (for scripts of unknown length)."""

    def reply(messages: list[Message], tools: Any) -> str:
        kind = call_site_of(messages)
        if kind == "fold":
            return fold
        if kind == "merge":
            return merge
        if kind == "maintenance":
            return maintenance if maintenance is not None else maintenance_reply()
        return "ok"

    return reply


def add_turns(
    hive: Hive,
    conversation_id: int,
    turns: int,
    *,
    words: int = 100,
    start: str = "2024-05-01T10:00",
    with_tools: bool = False,
) -> None:
    """Store ``turns`` user/assistant exchanges of about ``words`` tokens each, one minute apart."""
    messages: list[NewMessage] = []
    for turn in range(turns):
        at = f"{start[:14]}{turn % 60:02d}:00.000000Z"
        user = f"Turn {turn}: " + " ".join(f"word{turn}x{i}" for i in range(words // 2))
        messages.append(
            NewMessage("user", user, message_tokens(user), speaker="Ann", created_at=at)
        )
        if with_tools:
            call = ToolCallRecord(f"call_{turn}", "recall", json.dumps({"query": f"q{turn}"}))
            messages.append(
                NewMessage("assistant", "", message_tokens("", (call,)), (call,), created_at=at)
            )
            result = json.dumps({"memories": [], "n": "r" * 200})
            messages.append(
                NewMessage(
                    "tool",
                    result,
                    message_tokens(result),
                    tool_call_id=call.id,
                    tool_name="recall",
                    created_at=at,
                )
            )
        reply = f"Answer {turn}: " + " ".join(f"reply{turn}x{i}" for i in range(words // 2))
        messages.append(NewMessage("assistant", reply, message_tokens(reply), created_at=at))
    hive.store.add_messages(conversation_id, messages)


def calls_by_site(llm: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in llm.calls:
        counts[call.call_site] = counts.get(call.call_site, 0) + 1
    return counts


def own_memories(agent: Agent) -> list[str]:
    return [m.content for m in agent.list_memories(limit=200).memories]
