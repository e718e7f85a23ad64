"""Rows to records, shared by every SQL backend: one column order, one mapping."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hivekeep.store.base import MemoryRecord
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
