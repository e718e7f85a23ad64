"""``/api/agents/{agent}/memories``: an agent's archive as it sees it (own + shared memories)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from hivekeep.agent import Agent
from hivekeep.server.deps import AgentDep, HiveDep, MemoryId
from hivekeep.server.schemas import (
    MemoryList,
    MemoryOut,
    MemoryPatch,
    MemoryQuery,
    MemoryWritten,
    NewMemoryBody,
    SimilarMemory,
)
from hivekeep.types import Actor
from hivekeep.views import hit_view, memory_view, merged_view, similar_view

router = APIRouter(prefix="/agents/{agent}/memories", tags=["memories"])
# a person acting on the hive, not as any agent (the web UI's delete button on shared memories)
shared_router = APIRouter(prefix="/memories", tags=["memories"])


def _out(view: dict[str, Any]) -> MemoryOut:
    return MemoryOut.model_validate(view)


def _search(agent: Agent, params: MemoryQuery) -> MemoryList:
    """``Agent.search_memories``: recall's ranking, paged by limit/offset."""
    assert params.query is not None
    found = agent.search_memories(
        params.query,
        subject=params.subject,
        category=params.category,
        scope=params.scope,
        limit=params.limit,
        offset=params.offset,
    )
    listed = MemoryList(
        memories=[_out(hit_view(hit, agent.id)) for hit in found.hits],
        total=found.total,
        has_more=found.has_more,
    )
    if found.warning:  # set only when there is one: absent rather than null in the JSON
        listed.warning = found.warning
    return listed


@router.get("", response_model_exclude_unset=True)
def list_memories(agent: AgentDep, params: Annotated[MemoryQuery, Query()]) -> MemoryList:
    """With ``query``: ranked by relevance (hybrid recall). Without: newest first."""
    if params.query:
        return _search(agent, params)
    page = agent.list_memories(
        subject=params.subject,
        category=params.category,
        scope=params.scope,
        limit=params.limit,
        offset=params.offset,
    )
    return MemoryList(
        memories=[_out(memory_view(memory, agent.id)) for memory in page.memories],
        total=page.total,
        has_more=page.has_more,
    )


@router.post(
    "",
    status_code=201,
    response_model_exclude_unset=True,
    responses={200: {"model": MemoryWritten, "description": "Already known: the existing one."}},
)
def create_memory(agent: AgentDep, body: NewMemoryBody, response: Response) -> MemoryWritten:
    """Save a memory (201), or return the equivalent one already visible (200, duplicate). The
    writer is a person (the UI's form, a script): history records "create by person"."""
    [written] = agent.memorize_many([body.model_dump()], by=Actor.PERSON)
    if written.duplicate:
        response.status_code = 200
    similar = [SimilarMemory(**similar_view(m)) for m in written.similar]
    # reworded, merged_as_version and similar are left out when none, as in the tool
    extra = merged_view(written.memory, written.merged_version, reworded=written.reworded)
    if similar:
        extra["similar"] = similar
    if written.redacted:
        extra["redacted"] = list(written.redacted)
    return MemoryWritten(
        memory=_out(memory_view(written.memory, agent.id)), duplicate=written.duplicate, **extra
    )


@router.get("/{memory_id}", response_model_exclude_unset=True)
def get_memory(agent: AgentDep, memory_id: MemoryId, hive: HiveDep) -> MemoryOut:
    """One memory the agent can see: its own, or another agent's shared one."""
    return _out(memory_view(agent.memory(memory_id), agent.id))


@router.patch("/{memory_id}", response_model_exclude_unset=True)
def update_memory(agent: AgentDep, memory_id: MemoryId, body: MemoryPatch) -> MemoryOut:
    """Change a memory this agent wrote; fields left out are kept."""
    changes = body.model_dump(exclude_unset=True)
    updated = agent.update_memory(memory_id, **changes, by=Actor.PERSON)
    return _out(memory_view(updated, agent.id))


Purge = Annotated[
    bool, Query(description="Erase it for good (no trash, no history, no trace in the file).")
]


@router.delete("/{memory_id}", status_code=204)
def delete_memory(
    agent: AgentDep, memory_id: MemoryId, hive: HiveDep, purge: Purge = False
) -> None:
    """Forget a memory this agent wrote: it goes to the trash (``POST …/restore`` undoes it).
    ``?purge=true`` erases it, or one already in the trash, for good."""
    if purge:
        agent.purge(memory_id)
    else:
        agent.forget(memory_id, by=Actor.PERSON)


@shared_router.delete("/{memory_id}", status_code=204)
def forget_shared_memory(memory_id: MemoryId, hive: HiveDep, purge: Purge = False) -> None:
    """Forget a shared memory as a person, whoever wrote it: the way to remove a shared memory
    whose author was deleted (no agent owns it); it goes to the trash. ``?purge=true`` erases
    it for good. Private memories are not reached here."""
    if purge:
        hive.purge_shared(memory_id)
    else:
        hive.forget_memory(memory_id)
