"""Export: a hive (or one agent) written as JSONL, streamed page by page in constant memory."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from hivekeep.core.text import (
    now_timestamp,
)
from hivekeep.services.transfer.format import (
    FORMAT,
    HISTORY_VERSION,
    MEMORY_PAGE,
    MESSAGE_PAGE,
    RECORD_SUMMARY_FIELDS,
    conversation_key,
    encode_vector,
    message_key,
    summary_key,
)
from hivekeep.store.base import (
    PERSON,
    AgentRecord,
    MemoryRecord,
    ProfileVersion,
    Store,
    TrashedMemory,
)
from hivekeep.store.conversations import (
    AgentSettings,
    ConversationRecord,
    MessageRecord,
    SummaryRecord,
)


@dataclass(frozen=True)
class ExportReport:
    agents: int
    memories: int
    conversations: int
    messages: int
    summaries: int
    trashed: int = 0  # memories in the trash (``history`` only)


def hivekeep_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hivekeep")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0"


def _dump(out: TextIO, line: dict[str, Any]) -> None:
    out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def export_jsonl(
    store: Store, out: TextIO, *, agent_id: int | None = None, history: bool = False
) -> ExportReport:
    """Write the hive (or one agent: its conversations and the memories it wrote, shared ones
    included) to ``out``, one line at a time; with ``history``, the kept versions of profiles
    and memories and the trash too."""
    agents = [store.get_agent(agent_id)] if agent_id is not None else store.list_agents()
    space = store.embedding_space()
    _dump(
        out,
        {
            "type": "header",
            "format": FORMAT,
            "version": HISTORY_VERSION if history else 1,
            "hivekeep_version": hivekeep_version(),
            "exported_at": now_timestamp(),
            "embedding": None
            if space is None
            else {"model": space.model, "dimension": space.dimension},
            "agent": agents[0].name if agent_id is not None else None,
        },
    )
    for agent in agents:
        _dump(out, _agent_line(agent, store.get_agent_settings(agent.id)))
        profile = store.get_profile(agent.id)
        _dump(
            out,
            {
                "type": "profile",
                "agent": agent.name,
                "text": profile.text,
                "tokens": profile.tokens,
                "revision": profile.revision,
                "last_rewrite_at": profile.last_rewrite_at,
                "manually_edited_at": profile.manually_edited_at,
                "updated_at": profile.updated_at,
                **(
                    {"history": [_profile_version(v) for v in store.profile_history(agent.id)]}
                    if history
                    else {}
                ),
            },
        )
    conversations = messages = summaries = 0
    keys: set[str] = set()
    for agent in agents:
        for conversation in sorted(store.list_conversations(agent.id), key=lambda c: c.id):
            key = conversation_key(agent.name, conversation.created_at, conversation.title)
            while key in keys:  # same agent, title and microsecond: practically never
                key += "+"
            keys.add(key)
            counts = _export_conversation(store, out, agent.name, conversation, key)
            conversations += 1
            messages += counts[0]
            summaries += counts[1]
    memories = 0
    after = 0
    authors = {agent.id for agent in agents}  # not an agent created while this export runs
    while page := store.memories_with_vectors(agent_id, after_id=after, limit=MEMORY_PAGE):
        for memory, vector in page:
            if memory.agent_id in authors or memory.author_deleted:
                line = _memory_line(memory, vector)
                if history:
                    line["history"] = _memory_versions(store, memory)
                _dump(out, line)
                memories += 1
        after = page[-1][0].id
    trashed = _export_trash(store, out, agent_id, authors) if history else 0
    return ExportReport(len(agents), memories, conversations, messages, summaries, trashed)


def _export_trash(store: Store, out: TextIO, agent_id: int | None, authors: set[int]) -> int:
    count = after = 0
    while page := store.trash_with_vectors(agent_id, after_id=after, limit=MEMORY_PAGE):
        for item, vector in page:
            memory = item.memory
            if memory.agent_id in authors or memory.author_deleted:
                line = _trashed_line(item, vector)
                line["history"] = _memory_versions(store, memory)
                _dump(out, line)
                count += 1
        after = page[-1][0].memory.id
    return count


def _memory_versions(store: Store, memory: MemoryRecord) -> list[dict[str, Any]]:
    viewer = PERSON if memory.author_deleted or memory.agent_id is None else memory.agent_id
    return [
        {
            "version": v.version,
            "content": v.content,
            "category": v.category.value,
            "subject": v.subject,
            "importance": v.importance,
            "scope": v.scope.value,
            "changed_at": v.changed_at,
            "changed_by": v.changed_by.value,
            "operation": v.operation.value,
        }
        for v in store.memory_history(memory.id, viewer)
    ]


def _profile_version(v: ProfileVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "text": v.text,
        "tokens": v.tokens,
        "changed_at": v.changed_at,
        "changed_by": v.changed_by.value,
        "operation": v.operation.value,
    }


def _trashed_line(item: TrashedMemory, vector: npt.NDArray[np.float32] | None) -> dict[str, Any]:
    line = _memory_line(item.memory, vector)
    line["type"] = "trashed"
    line["source_message"] = None  # its conversation may be gone; a trashed memory needs none
    return {**line, "deleted_at": item.deleted_at, "deleted_by": item.deleted_by.value}


def _agent_line(agent: AgentRecord, settings: AgentSettings) -> dict[str, Any]:
    return {
        "type": "agent",
        "name": agent.name,
        "role": agent.role,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "settings": _settings(settings),
    }


def _export_conversation(
    store: Store, out: TextIO, agent: str, conversation: ConversationRecord, key: str
) -> tuple[int, int]:
    _dump(
        out,
        {
            "type": "conversation",
            "key": key,
            "agent": agent,
            "title": conversation.title,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
        },
    )
    messages = 0
    after = 0
    while page := store.list_messages(conversation.id, after_id=after, limit=MESSAGE_PAGE):
        for message in page:
            _dump(out, _message_line(message, key))
        messages += len(page)
        after = page[-1].id
    summaries = store.list_summaries(conversation.id)
    for summary in summaries:
        _dump(out, _summary_line(summary, key))
    return messages, len(summaries)


def _message_line(m: MessageRecord, conversation: str) -> dict[str, Any]:
    record = m.record
    if record is not None:
        record = dict(record)
        for name in RECORD_SUMMARY_FIELDS:
            ids = record.get(name)
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                record[name] = [summary_key(i) for i in ids]
    return {
        "type": "message",
        "conversation": conversation,
        "key": message_key(m.id),
        "role": m.role,
        "content": m.content,
        "tokens": m.tokens,
        "tool_calls": [dataclasses.asdict(call) for call in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "tool_name": m.tool_name,
        "speaker": m.speaker,
        "summary": None if m.summary_id is None else summary_key(m.summary_id),
        "compaction_record": m.is_compaction_record,
        "record": record,
        "created_at": m.created_at,
    }


def _summary_line(s: SummaryRecord, conversation: str) -> dict[str, Any]:
    return {
        "type": "summary",
        "conversation": conversation,
        "key": summary_key(s.id),
        "text": s.text,
        "tokens": s.tokens,
        "first_at": s.first_at,
        "last_at": s.last_at,
        "message_count": s.message_count,
        "first_message": None if s.first_message_id is None else message_key(s.first_message_id),
        "last_message": None if s.last_message_id is None else message_key(s.last_message_id),
        "depth": s.depth,
        "sources": [summary_key(i) for i in s.source_ids],
        "in_context": s.in_context,
        "maintenance_status": s.maintenance_status,
        "maintenance_attempts": s.maintenance_attempts,
        "maintenance_error": s.maintenance_error,
        "created_at": s.created_at,
    }


def _memory_line(m: MemoryRecord, vector: npt.NDArray[np.float32] | None) -> dict[str, Any]:
    deleted = {"author_deleted": True} if m.author_deleted else {}
    return {
        "type": "memory",
        "author": m.author_name,
        **deleted,
        "content": m.content,
        "category": m.category.value,
        "subject": m.subject,
        "importance": m.importance,
        "scope": m.scope.value,
        "source": m.source.value,
        "source_context": m.source_context,
        "source_message": None if m.source_message_id is None else message_key(m.source_message_id),
        "retrieval_count": m.retrieval_count,
        "last_retrieved_at": m.last_retrieved_at,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "vector": None if vector is None else encode_vector(vector),
    }


def _settings(settings: AgentSettings) -> dict[str, Any]:
    """An agent's settings as the file carries them; ``context_window``, ``secrets`` and
    ``review`` only when set, so an export of an agent without them still imports into a
    hivekeep that predates the fields."""
    out = settings.to_json()
    for name in ("context_window", "secrets", "review"):
        if out[name] is None:
            del out[name]
    return out
