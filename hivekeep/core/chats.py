"""Chats kept elsewhere, read into plain messages: ChatGPT and Claude exports, Claude Code
transcripts. Pure: each function takes what one JSON value (or one transcript's lines) holds and
returns the user and assistant text turns, with their times; the files are read by
``services/transfer/chat_exports.py`` and ``integrations/claude_code.py``.

What is kept, and why: only the text a person or the assistant wrote. ChatGPT's ``mapping`` is a
tree (an edited message starts a branch); the conversation as the user last saw it is the path from
``current_node`` back to the root, so only that branch is read. System messages, tool calls and
results, hidden nodes (``metadata.is_visually_hidden_from_conversation``) and empty ones are
skipped. A value of the wrong shape raises ``ValidationError`` saying what is wrong, so a bad file
stops an import before anything is stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hivekeep.core.messages import Message
from hivekeep.core.text import format_timestamp
from hivekeep.errors import ValidationError

SOURCES = ("chatgpt", "claude")


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "user" | "assistant"
    content: str
    created_at: str | None  # stored-format timestamp; None: unknown (the chat's time is used)


@dataclass(frozen=True)
class Chat:
    """One conversation as an export holds it."""

    key: str  # its id in the export, so a rerun finds it again
    title: str
    created_at: str | None
    updated_at: str | None
    messages: tuple[ChatMessage, ...]


def chat_from(source: str, value: Any) -> Chat:
    """One conversation of a ``source`` export (``chatgpt`` or ``claude``)."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"a conversation is a JSON object, got {_kind(value)}")
    if source == "chatgpt":
        return chatgpt_chat(value)
    if source == "claude":
        return claude_chat(value)
    raise ValidationError(f"Unknown chat export {source!r}; known: {', '.join(SOURCES)}.")


def chatgpt_chat(value: Mapping[str, Any]) -> Chat:
    """A conversation of ChatGPT's ``conversations.json``: the branch ending at
    ``current_node``, root first."""
    mapping = value.get("mapping")
    if not isinstance(mapping, Mapping):
        raise ValidationError("a ChatGPT conversation needs a 'mapping' object")
    node_id = value.get("current_node")
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        if not isinstance(node_id, str) or node_id not in mapping:
            raise ValidationError(f"node {node_id!r} is not in the conversation's mapping")
        if node_id in seen:
            raise ValidationError(f"node {node_id!r} is its own ancestor")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, Mapping):
            raise ValidationError(f"node {node_id!r} is {_kind(node)}, not an object")
        path.append(node)
        node_id = node.get("parent")
    messages = [m for m in (_chatgpt_message(n.get("message")) for n in reversed(path)) if m]
    created = _epoch(value.get("create_time"), "create_time")
    key = value.get("conversation_id") or value.get("id")
    return Chat(
        key=str(key) if key else _fallback_key(value.get("title"), created),
        title=_title(value.get("title")),
        created_at=created,
        updated_at=_epoch(value.get("update_time"), "update_time"),
        messages=tuple(messages),
    )


def _chatgpt_message(message: Any) -> ChatMessage | None:
    if message is None:
        return None
    if not isinstance(message, Mapping):
        raise ValidationError(f"a node's message is {_kind(message)}, not an object")
    author = message.get("author")
    role = author.get("role") if isinstance(author, Mapping) else None
    metadata = message.get("metadata")
    hidden = isinstance(metadata, Mapping) and metadata.get("is_visually_hidden_from_conversation")
    content = message.get("content")
    if role not in ("user", "assistant") or hidden or not isinstance(content, Mapping):
        return None
    if content.get("content_type") not in ("text", "multimodal_text"):
        return None  # code for a tool, browsing output, reasoning: not what was said
    if message.get("recipient", "all") != "all":
        return None  # addressed to a tool
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise ValidationError("a text message needs a 'parts' list")
    text = "\n".join(p for p in parts if isinstance(p, str)).strip()  # images are objects
    if not text:
        return None
    return ChatMessage(role, text, _epoch(message.get("create_time"), "create_time"))


def claude_chat(value: Mapping[str, Any]) -> Chat:
    """A conversation of Claude's ``conversations.json`` (``chat_messages``, human/assistant)."""
    messages = value.get("chat_messages")
    if not isinstance(messages, list):
        raise ValidationError("a Claude conversation needs a 'chat_messages' list")
    found = [m for m in (_claude_message(x) for x in messages) if m]
    key = value.get("uuid")
    created = _iso(value.get("created_at"), "created_at")
    return Chat(
        key=str(key) if key else _fallback_key(value.get("name"), created),
        title=_title(value.get("name")),
        created_at=created,
        updated_at=_iso(value.get("updated_at"), "updated_at"),
        messages=tuple(found),
    )


def _claude_message(message: Any) -> ChatMessage | None:
    if not isinstance(message, Mapping):
        raise ValidationError(f"a chat message is {_kind(message)}, not an object")
    role = {"human": "user", "assistant": "assistant"}.get(str(message.get("sender")))
    if role is None:
        return None
    text = text_of(message.get("content"))
    if not text:
        fallback = message.get("text")
        text = fallback.strip() if isinstance(fallback, str) else ""
    if not text:
        return None
    return ChatMessage(role, text, _iso(message.get("created_at"), "created_at"))


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` blocks of a block list
    (Anthropic's form; tool use, tool results, thinking and images are left out)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [
        block["text"]
        for block in content
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n\n".join(t.strip() for t in texts if t.strip())


def claude_code_messages(lines: Iterable[str]) -> list[ChatMessage]:
    """The user and assistant text turns of a Claude Code transcript (JSON Lines).

    Left out: lines that are not JSON objects (a line still being written), entries other than
    ``user``/``assistant``, sidechains (a subagent's work), meta entries, Claude Code's own
    compaction summaries, tool calls and tool results, thinking, and slash-command echoes.
    """
    found: list[ChatMessage] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, Mapping) or entry.get("type") not in ("user", "assistant"):
            continue
        if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        message = entry.get("message")
        if not isinstance(message, Mapping):
            continue
        text = text_of(message.get("content"))
        if not text or text.startswith(("<command-", "<local-command-")):
            continue
        try:
            at = _iso(entry.get("timestamp"), "timestamp")
        except ValidationError:
            at = None
        found.append(ChatMessage(str(entry["type"]), text, at))
    return found


def _epoch(value: Any, name: str) -> str | None:
    """ChatGPT's times: seconds since the epoch, as a float (or null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"'{name}' is {value!r}, not a number of seconds")
    try:
        return format_timestamp(datetime.fromtimestamp(value, UTC))
    except (ValueError, OverflowError, OSError):
        raise ValidationError(f"'{name}' is {value!r}, out of range") from None


def _iso(value: Any, name: str) -> str | None:
    """Claude's times: ISO 8601 strings (or null)."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return format_timestamp(moment)
    except (ValueError, OverflowError):
        raise ValidationError(f"'{name}' is {value!r}, not an ISO date and time") from None


def _title(value: Any) -> str:
    return " ".join(value.split())[:200] if isinstance(value, str) else ""


def _fallback_key(title: Any, created: str | None) -> str:
    """An export without ids: the title and time name the conversation."""
    return hashlib.sha256(f"{title}\x00{created}".encode()).hexdigest()[:32]


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else repr(value)


def given_message(value: Message | Mapping[str, Any] | str) -> Message:
    """A message given to ``remember``: a text (the user's), a ``Message``, or an OpenAI-style
    dict, checked so that a wrong one is a ``ValidationError`` naming what is wrong."""
    if isinstance(value, str):
        return Message("user", value)
    if isinstance(value, Message):
        return value
    if not isinstance(value, Mapping) or not isinstance(value.get("role"), str):
        raise ValidationError(
            "remember takes a text or messages (Message objects or dicts with a 'role'), "
            f"got {value!r:.80}."
        )
    if value["role"] not in ("user", "assistant", "system", "tool"):
        raise ValidationError(
            f"A message's role is user, assistant, system or tool, got {value['role']!r}."
        )
    content = value.get("content")
    if not (content is None or isinstance(content, str | list)):
        raise ValidationError(
            f"A message's content is a string or a list of parts, got {content!r:.80}."
        )
    try:
        return Message.from_openai(value)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(f"A message is not in the OpenAI form: {exc!r}.") from None
