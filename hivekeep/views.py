"""How a memory looks in tool results and API responses (one shape for every interface)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from hivekeep.core.text import age
from hivekeep.store.base import (
    AgentFootprint,
    MemoryRecord,
    MemoryVersion,
    ProfileVersion,
    TrashedMemory,
)
from hivekeep.store.tokens import TokenRecord


class Hit(Protocol):
    """A search hit as ``hit_view`` reads it (``RecallHit``)."""

    @property
    def memory(self) -> MemoryRecord: ...

    @property
    def score(self) -> float: ...

    @property
    def found_by(self) -> tuple[str, ...]: ...

    @property
    def match(self) -> str: ...

    @property
    def why(self) -> str: ...


def hit_view(hit: Hit, viewer_id: int) -> dict[str, Any]:
    """A search hit: the memory with its score, match, the searches that found it, and why."""
    return memory_view(
        hit.memory,
        viewer_id,
        score=hit.score,
        match=hit.match,
        found_by=hit.found_by,
        why=hit.why,
    )


def memory_view(
    memory: MemoryRecord,
    viewer_id: int,
    *,
    score: float | None = None,
    now: datetime | None = None,
    match: str | None = None,
    found_by: Sequence[str] = (),
    why: str | None = None,
) -> dict[str, Any]:
    """A JSON-ready memory. ``author`` is the writer's name (kept after a delete); ``shared_by``
    repeats it for another agent's shared memory, the form the model reads ("shared by NAME"), and
    ``author_deleted`` (present only when true) says that author was deleted. A search hit may
    carry ``match`` ("strong" / "weak", ``RecallHit.match``), ``found_by`` (the arms) and
    ``why`` (both in words, ``RecallHit.why``)."""
    view: dict[str, Any] = {
        "id": memory.id,
        "content": memory.content,
        "category": memory.category.value,
        "subject": memory.subject,
        "importance": memory.importance,
        "scope": memory.scope.value,
        "author": memory.author_name,
        "age": age(memory.created_at, now),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "retrieval_count": memory.retrieval_count,
    }
    if memory.source_context:
        view["source_context"] = memory.source_context
    if memory.agent_id != viewer_id:
        view["shared_by"] = memory.author_name
    if memory.author_deleted:  # kept after its author was deleted; no agent may change it
        view["author_deleted"] = True
    if score is not None:
        view["score"] = round(score, 6)
    if match is not None:
        view["match"] = match
        view["found_by"] = list(found_by)
    if why is not None:
        view["why"] = why
    if memory.newer is not None:  # a later near-twin: this fact may have changed (SPEC 4.1)
        view["newer"] = {
            "id": memory.newer.id,
            "content": memory.newer.content,
            "created_at": memory.newer.created_at,
        }
    return view


def version_view(version: MemoryVersion) -> dict[str, Any]:
    """One version of a memory: ``version``, ``content``, its fields, and who changed it when."""
    return {
        "version": version.version,
        "content": version.content,
        "category": version.category.value,
        "subject": version.subject,
        "importance": version.importance,
        "scope": version.scope.value,
        "changed_at": version.changed_at,
        "changed_by": version.changed_by.value,
        "operation": version.operation.value,
    }


def profile_version_view(version: ProfileVersion) -> dict[str, Any]:
    """One version of a profile: ``version`` (its revision), ``text``, who changed it when."""
    return {
        "version": version.version,
        "text": version.text,
        "tokens": version.tokens,
        "changed_at": version.changed_at,
        "changed_by": version.changed_by.value,
        "operation": version.operation.value,
    }


def trashed_view(trashed: TrashedMemory, viewer_id: int) -> dict[str, Any]:
    """A memory in the trash: its view, plus when and by whom it was forgotten."""
    view = memory_view(trashed.memory, viewer_id)
    view["deleted_at"] = trashed.deleted_at
    view["deleted_by"] = trashed.deleted_by.value
    return view


def deletion_preview(name: str, has: AgentFootprint) -> str:
    """What deleting agent ``name`` removes and keeps, asked first (the CLI's prompt)."""
    return (
        f"Delete agent {name!r}? This deletes its profile, "
        f"{_count(has.private_memories, 'private memory')} and "
        f"{_count(has.conversations, 'conversation')} (with their messages and summaries). "
        f"Kept: its {_count(has.shared_memories, 'shared memory')}, recallable by every agent "
        f"as shared by {name} (deleted)."
    )


def merged_view(
    memory: MemoryRecord, merged_version: int | None, *, reworded: bool
) -> dict[str, Any]:
    """What a write that merged into an existing memory did (SPEC 4.1): ``reworded`` when its
    text became that memory's content (the previous text kept as a version), or for a dated
    write older than the memory's text, ``merged_as_version``; each with a note. Nothing for a
    stored write or an exact repeat."""
    if reworded:
        return {
            "reworded": True,
            "note": (
                f"Memory {memory.id} said the same fact; your text is now its content and the "
                "previous text is kept in its history (restoring the version before the newest "
                "undoes this)."
            ),
        }
    if merged_version is None:
        return {}
    version = merged_version
    return {
        "merged_as_version": version,
        "note": (
            f"Memory {memory.id} holds a later statement of the same fact; your text was kept "
            f"as version {version} in its history; restoring that version makes it the "
            "memory's content."
        ),
    }


def similar_view(memory: MemoryRecord) -> dict[str, Any]:
    """A close neighbour of a new memory, as ``memorize`` lists it (SPEC 4.1)."""
    return {
        "id": memory.id,
        "content": memory.content,
        "author": memory.author_name,
        "created_at": memory.created_at,
    }


def deletion_summary(name: str, gone: AgentFootprint) -> str:
    """What deleting agent ``name`` removed and kept, told afterwards (REST, CLI)."""
    return (
        f"Deleted agent {name!r}: its profile, {_count(gone.private_memories, 'private memory')} "
        f"and {_count(gone.conversations, 'conversation')}. Kept "
        f"{_count(gone.shared_memories, 'shared memory')}, recallable by every agent as shared by "
        f"{name} (deleted)."
    )


def _count(number: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {noun if number == 1 else plural}"


def token_view(token: TokenRecord, agent_names: Mapping[int, str]) -> dict[str, Any]:
    """A scoped token as JSON (never its secret): ``agents`` by name, null for every agent; a
    deleted agent's id is left out (ids are never reused, so it grants nothing)."""
    agents = None
    if token.agent_ids is not None:
        agents = [agent_names[i] for i in token.agent_ids if i in agent_names]
    return {
        "label": token.label,
        "agents": agents,
        "read_only": token.read_only,
        "created_at": token.created_at,
        "last_used_at": token.last_used_at,
    }
