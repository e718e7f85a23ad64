"""``/api/review``: the writes agents made that wait for a person (the review inbox).

The same as ``hivekeep review`` and ``hive.pending / approve / reject``. A person's act: the
admin token only (a scoped token is an agent's or an app's, and must not approve its own writes).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from pydantic import Field

from hivekeep import MemoryRecord
from hivekeep.core.bounds import MAX_ID
from hivekeep.server.deps import HiveDep
from hivekeep.server.schemas import Body
from hivekeep.views import memory_view

router = APIRouter(prefix="/review", tags=["review"])
PendingId = Annotated[int, Path(ge=1, le=MAX_ID, description="The held write's id.")]


class Approval(Body):
    """``content``: the text to write instead of the agent's (an edit); null keeps it."""

    content: str | None = Field(default=None, min_length=1, max_length=10_000)


@router.get("")
def list_pending(hive: HiveDep) -> list[dict[str, Any]]:
    """Every held write, oldest first, with its agent's name."""
    names = {agent.id: agent.name for agent in hive.agents()}
    return [{**dataclasses.asdict(p), "agent": names.get(p.agent_id)} for p in hive.pending()]


@router.post("/{pending_id}/approve")
def approve(pending_id: PendingId, hive: HiveDep, body: Approval | None = None) -> dict[str, Any]:
    """Write it through the write path; answers the memory written (or found, a duplicate)."""
    outcome = hive.approve(pending_id, None if body is None else body.content)
    if isinstance(outcome, MemoryRecord):
        return {"memory": memory_view(outcome, outcome.agent_id or 0), "duplicate": False}
    return {
        "memory": memory_view(outcome.memory, outcome.memory.agent_id or 0),
        "duplicate": outcome.duplicate,
        "redacted": list(outcome.redacted),
    }


@router.post("/{pending_id}/reject", status_code=204)
def reject(pending_id: PendingId, hive: HiveDep) -> Response:
    """Drop it; nothing of it is kept."""
    hive.reject(pending_id)
    return Response(status_code=204)
