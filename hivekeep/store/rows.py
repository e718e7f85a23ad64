"""Rows to records, shared by every SQL backend: one column order, one mapping."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hivekeep.errors import ValidationError
from hivekeep.store.base import PERSON, AgentRecord, MemoryRecord, NewMemory
from hivekeep.types import Category, EmbeddingState, Scope, Source

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
