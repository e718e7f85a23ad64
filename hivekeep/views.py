"""How a memory looks in tool results and API responses (one shape for every interface)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hivekeep.core.text import age
from hivekeep.store.base import MemoryRecord


def memory_view(
    memory: MemoryRecord, viewer_id: int, *, score: float | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """A JSON-ready memory; ``shared_by`` names the author of another agent's shared memory."""
    view: dict[str, Any] = {
        "id": memory.id,
        "content": memory.content,
        "category": memory.category.value,
        "subject": memory.subject,
        "importance": memory.importance,
        "scope": memory.scope.value,
        "age": age(memory.created_at, now),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "retrieval_count": memory.retrieval_count,
    }
    if memory.source_context:
        view["source_context"] = memory.source_context
    if memory.agent_id != viewer_id:
        view["shared_by"] = memory.author_name
    if score is not None:
        view["score"] = round(score, 6)
    return view
