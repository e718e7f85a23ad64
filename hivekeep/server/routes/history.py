"""History, restore and the trash: ``/api/agents/{agent}/memories/{id}/history`` and ``/restore``,
``/api/agents/{agent}/profile/history`` and ``/restore``, and ``/api/agents/{agent}/trash``.

A person acts here (the web UI's History and Trash views), so restores are recorded as ``person``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hivekeep.core.bounds import MAX_ID
from hivekeep.errors import ValidationError
from hivekeep.server.deps import AgentDep, MemoryId
from hivekeep.server.routes.profile import _out as profile_out
from hivekeep.server.schemas import (
    MemoryOut,
    MemoryVersionOut,
    ProfileOut,
    ProfileVersionOut,
    RestoreBody,
    TrashedOut,
    TrashList,
)
from hivekeep.types import Actor
from hivekeep.views import memory_view, trashed_view

router = APIRouter(prefix="/agents/{agent}", tags=["history"])


@router.get("/memories/{memory_id}/history")
def memory_history(agent: AgentDep, memory_id: MemoryId) -> list[MemoryVersionOut]:
    """The memory's versions, newest first (the current state first); a trashed memory of this
    agent's too."""
    return [MemoryVersionOut(**v) for v in agent.memory_history(memory_id)]


@router.post("/memories/{memory_id}/restore", response_model_exclude_unset=True)
def restore_memory(agent: AgentDep, memory_id: MemoryId, body: RestoreBody) -> MemoryOut:
    """Without ``version``: undo a forget (back from the trash). With it: make that version
    current again. Either way a new version records the restore."""
    memory = agent.restore_memory(memory_id, body.version, by=Actor.PERSON)
    return MemoryOut.model_validate(memory_view(memory, agent.id))


@router.get("/trash", response_model_exclude_unset=True)
def trash(
    agent: AgentDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> TrashList:
    """This agent's forgotten memories, newest deletion first, restorable until the retention
    period (``MEMORY_TRASH_DAYS``) ends."""
    page = agent.trash(limit=limit, offset=offset)
    return TrashList(
        memories=[TrashedOut.model_validate(trashed_view(t, agent.id)) for t in page.memories],
        total=page.total,
        has_more=page.has_more,
    )


@router.get("/profile/history")
def profile_history(agent: AgentDep) -> list[ProfileVersionOut]:
    """The profile's versions, newest first (the current revision first)."""
    return [ProfileVersionOut(**v) for v in agent.profile_history()]


@router.post("/profile/restore")
def restore_profile(agent: AgentDep, body: RestoreBody) -> ProfileOut:
    """Make ``version`` of the profile current again, as a new revision."""
    if body.version is None:
        raise ValidationError("Restoring a profile needs a version (see its history).")
    return profile_out(agent, agent.restore_profile(body.version, by=Actor.PERSON))
