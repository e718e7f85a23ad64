"""Rows to records, shared by every SQL backend: one column order, one mapping."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hivekeep.errors import ValidationError
from hivekeep.store.base import (
    PERSON,
    AgentRecord,
    MemoryRecord,
    MemoryVersion,
    NewMemory,
    ProfileRecord,
    ProfileVersion,
    TrashedMemory,
)
from hivekeep.types import Actor, Category, EmbeddingState, Operation, Scope, Source

MEMORY_COLUMNS = (
    "id, agent_id, author_name, content, category, subject, importance, scope, source_context, "
    "source, source_message_id, retrieval_count, last_retrieved_at, created_at, updated_at, "
    "embedding_state"
)


def memory_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A memory from a row selected with ``MEMORY_COLUMNS`` (extra trailing columns ignored)."""
    return MemoryRecord(
        id=row[0],
        agent_id=row[1],
        author_name=row[2],
        content=row[3],
        category=Category(row[4]),
        subject=row[5],
        importance=row[6],
        scope=Scope(row[7]),
        source_context=row[8],
        source=Source(row[9]),
        source_message_id=row[10],
        retrieval_count=row[11],
        last_retrieved_at=row[12],
        created_at=row[13],
        updated_at=row[14],
        embedding_state=EmbeddingState(row[15]),
    )


# Every stored column of a memory row, in the order the trash table repeats them.
STORED_COLUMNS = (
    "id, agent_id, author_name, content, text_key, category, subject, importance, scope, "
    "source_context, source, source_message_id, retrieval_count, last_retrieved_at, "
    "embedding_state, embedding_model, created_at, updated_at"
)
VERSION_COLUMNS = (
    "memory_id, version, content, category, subject, importance, scope, changed_at, changed_by, "
    "operation, agent_id"
)
PROFILE_VERSION_COLUMNS = "agent_id, version, text, tokens, changed_at, changed_by, operation"
# Who wrote version 1 of a memory that has no recorded versions yet, from its ``source``.
CREATOR_SQL = "CASE source WHEN 'automatic' THEN 'maintenance' ELSE 'agent' END"


def writer(source: Source) -> Actor:
    """Who makes a write of this source (``CREATOR_SQL`` in Python): the maintenance call for
    an automatic memory, else the agent."""
    return Actor.MAINTENANCE if source is Source.AUTOMATIC else Actor.AGENT


def described(memory: NewMemory, text_key: str) -> tuple[Any, ...]:
    """A new memory's values for the columns ``content`` through ``last_retrieved_at`` (in
    ``STORED_COLUMNS`` order): the run every insert of a memory, live or trashed, writes."""
    return (
        memory.content,
        text_key,
        memory.category.value,
        memory.subject,
        memory.importance,
        memory.scope.value,
        memory.source_context,
        memory.source.value,
        memory.source_message_id,
        memory.retrieval_count,
        memory.last_retrieved_at,
    )


def version_from_row(row: Sequence[Any]) -> MemoryVersion:
    return MemoryVersion(
        memory_id=int(row[0]),
        version=int(row[1]),
        content=row[2],
        category=Category(row[3]),
        subject=row[4],
        importance=row[5],
        scope=Scope(row[6]),
        changed_at=row[7],
        changed_by=Actor(row[8]),
        operation=Operation(row[9]),
        agent_id=None if row[10] is None else int(row[10]),
    )


def version_values(v: MemoryVersion) -> tuple[Any, ...]:
    """A version's columns after ``memory_id``, in ``VERSION_COLUMNS`` order."""
    return (
        v.version,
        v.content,
        v.category.value,
        v.subject,
        v.importance,
        v.scope.value,
        v.changed_at,
        v.changed_by.value,
        v.operation.value,
        v.agent_id,
    )


def profile_version_values(v: ProfileVersion) -> tuple[Any, ...]:
    """A profile version's columns after ``agent_id``, in ``PROFILE_VERSION_COLUMNS`` order."""
    return (v.version, v.text, v.tokens, v.changed_at, v.changed_by.value, v.operation.value)


def first_version(memory: MemoryRecord) -> MemoryVersion:
    """Version 1 of a memory never changed since it was written (nothing recorded yet)."""
    return MemoryVersion(
        memory_id=memory.id,
        version=1,
        content=memory.content,
        category=memory.category,
        subject=memory.subject,
        importance=memory.importance,
        scope=memory.scope,
        changed_at=memory.created_at,
        changed_by=writer(memory.source),
        operation=Operation.CREATE,
        agent_id=memory.agent_id,
    )


def trashed_from_row(row: Sequence[Any]) -> TrashedMemory:
    """A trashed memory from a row selected with ``MEMORY_COLUMNS, deleted_at, deleted_by``."""
    return TrashedMemory(memory_from_row(row), row[16], Actor(row[17]))


def forgotten_version(item: TrashedMemory, version: int) -> MemoryVersion:
    """The state of a trashed memory whose recorded history does not end with its forget (an
    import's trash line with no history, or one cut short): the current state comes first."""
    memory = item.memory
    return MemoryVersion(
        memory_id=memory.id,
        version=version,
        content=memory.content,
        category=memory.category,
        subject=memory.subject,
        importance=memory.importance,
        scope=memory.scope,
        changed_at=item.deleted_at,
        changed_by=item.deleted_by,
        operation=Operation.FORGET,
    )


def profile_version_from_row(row: Sequence[Any]) -> ProfileVersion:
    return ProfileVersion(
        agent_id=int(row[0]),
        version=int(row[1]),
        text=row[2],
        tokens=int(row[3]),
        changed_at=row[4],
        changed_by=Actor(row[5]),
        operation=Operation(row[6]),
    )


def with_current(profile: ProfileRecord, versions: list[ProfileVersion]) -> list[ProfileVersion]:
    """A profile's recorded versions, newest first, with its current state first if it was never
    recorded (a new agent's empty profile, or one written before history existed: who wrote it
    is inferred from its stamps)."""
    if versions and versions[0].version == profile.revision:
        return versions
    manual = profile.revision == 0 or profile.manually_edited_at == profile.updated_at
    operation = Operation.SET if manual else Operation.REWRITE
    current = ProfileVersion(
        agent_id=profile.agent_id,
        version=profile.revision,
        text=profile.text,
        tokens=profile.tokens,
        changed_at=profile.updated_at or "",
        changed_by=Actor.PERSON if manual else Actor.MAINTENANCE,
        operation=Operation.CREATE if profile.revision == 0 else operation,
    )
    return [current, *versions]


def author_of(
    memory: NewMemory, authors: dict[int, str], agent: Callable[[int], AgentRecord]
) -> str:
    """The name a new memory is stored under: its author's (looked up once per call, in
    ``authors``), or for a deleted author's shared memory (an import) the name it carries."""
    if memory.agent_id == PERSON:
        if memory.scope is not Scope.SHARED or not memory.author_name:
            raise ValidationError(
                "A memory without an author agent must be shared and carry its author's name."
            )
        return memory.author_name
    if memory.agent_id not in authors:
        authors[memory.agent_id] = agent(memory.agent_id).name
    return authors[memory.agent_id]
