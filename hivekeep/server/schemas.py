"""Request and response models: every body and query is validated before a route runs.

Limits are those of the tools (``hivekeep.tools``): a memory's body *is* ``MemorizeArgs``, and the
other models repeat its field limits, so the API accepts and refuses what the tools do. Responses
mirror ``hivekeep.views.memory_view``, the one JSON shape of a memory.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hivekeep.core.bounds import MAX_COUNT, MAX_ID
from hivekeep.tools import CategoryName, MemorizeArgs, ScopeName

AGENT_NAME = Field(
    min_length=1,
    max_length=64,
    description="1-64 letters, digits, spaces, '_', '.' or '-', starting with a letter.",
)
SUBJECT = Field(default=None, min_length=1, max_length=200, description="Who or what it is about.")


class Body(BaseModel):
    """Request bodies refuse unknown fields, so a typo is an error rather than silently ignored."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


# agents -----------------------------------------------------------------------------------------
class AgentOut(BaseModel):
    id: int
    name: str
    role: str
    created_at: str
    updated_at: str


class AgentList(BaseModel):
    agents: list[AgentOut]


class AgentDeleted(BaseModel):
    """What deleting an agent removed, and the shared memories it kept."""

    name: str
    private_memories_deleted: int
    conversations_deleted: int = Field(description="With their messages and summaries.")
    shared_memories_kept: int = Field(
        description="Still recallable by every agent, attributed to the deleted agent's name."
    )
    message: str


class NewAgent(Body):
    name: str = AGENT_NAME
    role: str = Field(default="", max_length=4000, description="What the agent is for.")


class AgentPatch(Body):
    name: str | None = Field(
        default=None, min_length=1, max_length=64, description=AGENT_NAME.description
    )
    role: str | None = Field(default=None, max_length=4000)


class TokenText(Body):
    text: str = Field(max_length=1_000_000, description="The text to count.")


class TokenCount(BaseModel):
    tokens: int


# scoped API tokens (docs/server.md) -------------------------------------------------------------
class NewAccessToken(Body):
    label: str = Field(min_length=1, max_length=64, description="A name for the token.")
    agents: list[Annotated[str, AGENT_NAME]] | None = Field(
        min_length=1,
        max_length=100,
        description="Agents it acts as; null: every agent. Required: an empty list is refused.",
    )
    read_only: bool = Field(default=False, description="May read and recall, change nothing.")


class AccessTokenOut(BaseModel):
    """``token_view``: a token's label and scope, never its secret."""

    label: str
    agents: list[str] | None = Field(description="By name; null: every agent.")
    read_only: bool
    created_at: str
    last_used_at: str | None


class CreatedAccessToken(AccessTokenOut):
    token: str = Field(description="The token itself: in this response only.")


# memories ---------------------------------------------------------------------------------------
class NewerMemory(BaseModel):
    """The newest later near-twin of a memory (``memory_view``'s ``newer``)."""

    id: int
    content: str
    created_at: str


class MemoryOut(BaseModel):
    """``memory_view``: optional keys are left out (not null) when they do not apply."""

    id: int
    content: str
    category: CategoryName
    subject: str | None
    importance: int | None
    scope: ScopeName
    author: str = Field(description="The name of the agent that wrote it (kept after a delete).")
    age: str
    created_at: str
    updated_at: str
    retrieval_count: int
    source_context: str | None = None
    shared_by: str | None = Field(default=None, description="Author of another agent's memory.")
    author_deleted: bool | None = Field(
        default=None, description="True when the author was deleted (the memory stays shared)."
    )
    score: float | None = Field(
        default=None,
        description="Search results only: the fused rank score (reciprocal-rank fusion), which "
        "orders the hits; it is not a similarity and is not comparable across queries.",
    )
    match: Literal["strong", "weak"] | None = Field(
        default=None,
        description="Search results only: 'strong' when the memory holds every word of the "
        "query or is close in meaning to it, else 'weak' (some words, or faintly related).",
    )
    found_by: list[Literal["vector", "text", "text_partial"]] | None = Field(
        default=None,
        description="Search results only: the arms that found it: 'vector' (meaning), 'text' "
        "(every query word), 'text_partial' (some of the words).",
    )
    why: str | None = Field(
        default=None,
        description="Search results only: the match and the searches that found it, in words "
        "('strong match: every word of the query, and close in meaning').",
    )
    newer: NewerMemory | None = Field(
        default=None,
        description="A later near-twin visible to the agent (a write that listed this memory "
        "as similar): this fact may have changed.",
    )


class MemoryList(BaseModel):
    memories: list[MemoryOut]
    total: int = Field(description="Matches in all (a search ranks at most 50).")
    has_more: bool
    warning: str | None = Field(default=None, description="Set when search was degraded.")


class MemoryVersionOut(BaseModel):
    """``version_view``: one state of a memory, and who made it, when and how."""

    version: int
    content: str
    category: CategoryName
    subject: str | None
    importance: int | None
    scope: ScopeName
    changed_at: str
    changed_by: str = Field(description="agent, person, maintenance or import.")
    operation: str = Field(description="create, update, forget or restore.")


class ProfileVersionOut(BaseModel):
    """``profile_version_view``: one revision of a profile."""

    version: int = Field(description="The profile's revision.")
    text: str
    tokens: int
    changed_at: str
    changed_by: str = Field(description="agent, person, maintenance or import.")
    operation: str = Field(description="create, edit, set, rewrite, regenerate, import, restore.")


class RestoreBody(Body):
    version: int | None = Field(
        default=None,
        ge=0,
        le=MAX_COUNT,
        description="The version to make current again; a memory without one leaves the trash.",
    )


class TrashedOut(MemoryOut):
    deleted_at: str
    deleted_by: str


class TrashList(BaseModel):
    memories: list[TrashedOut]
    total: int
    has_more: bool


class NewMemoryBody(MemorizeArgs):
    """``memorize``'s arguments, plus when the remembered thing happened (for imports)."""

    created_at: str | None = Field(
        default=None, description="ISO date or datetime; default: now.", max_length=40
    )


class SimilarMemory(BaseModel):
    id: int
    content: str
    author: str
    created_at: str


class MemoryWritten(BaseModel):
    memory: MemoryOut
    duplicate: bool = Field(
        description="True: no new memory; the write merged into the memory returned."
    )
    reworded: bool | None = Field(
        default=None,
        description="A duplicate of the same fact in other words: the text sent is now the "
        "memory's content, the previous text kept in its history; left out otherwise.",
    )
    merged_as_version: int | None = Field(
        default=None,
        description="A dated write older than the memory's text: the version of its history "
        "that keeps the text sent (restoring it makes it current); left out otherwise.",
    )
    note: str | None = Field(default=None, description="Says what a merge did with the text.")
    redacted: list[str] = Field(
        default_factory=list,
        description="The kind of each credential replaced by a marker (HIVEKEEP_SECRETS=redact); "
        "left out when none.",
    )
    similar: list[SimilarMemory] = Field(
        default_factory=list,
        description="Close memories already visible (at most 3, left out when none): one may "
        "be outdated by this one.",
    )


class MemoryPatch(Body):
    """Fields to change; a field left out is kept. ``subject`` and ``importance`` may be null."""

    content: str | None = Field(default=None, min_length=1, max_length=2000)
    category: CategoryName | None = None
    subject: str | None = SUBJECT
    importance: int | None = Field(default=None, ge=1, le=10)
    scope: ScopeName | None = None


class MemoryQuery(BaseModel):
    """``GET .../memories``: with ``query``, ranked by relevance; without, newest first."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: str | None = Field(default=None, max_length=1000, description="Search text.")
    category: CategoryName | None = None
    subject: str | None = SUBJECT
    scope: ScopeName | None = Field(
        default=None, description="'private': own private only; 'shared': every agent's shared."
    )
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=MAX_ID)

    @field_validator("query", mode="after")
    @classmethod
    def _blank_is_absent(cls, value: str | None) -> str | None:
        """An empty search box lists memories instead of failing."""
        return value or None


# profile ----------------------------------------------------------------------------------------
class ProfileOut(BaseModel):
    agent_id: int
    text: str = Field(description="The profile document (markdown).")
    tokens: int
    budget: int = Field(description="Token budget; an edit may not leave the document over it.")
    revision: int = Field(description="Send it back as expected_revision to avoid lost updates.")
    updated_at: str | None
    manually_edited_at: str | None
    last_rewrite_at: str | None


class ProfileUpdate(Body):
    text: str = Field(max_length=200_000, description="The whole new document (markdown).")
    expected_revision: int | None = Field(
        default=None,
        ge=0,
        le=MAX_COUNT,
        description="Fail with 409 if the profile moved past this revision.",
    )


# tools ------------------------------------------------------------------------------------------
class ToolOut(BaseModel):
    name: str
    description: str
    input_schema: dict[str, Any]


class ToolList(BaseModel):
    tools: list[ToolOut]


# health -----------------------------------------------------------------------------------------
class Health(BaseModel):
    status: str
    version: str
    auth: bool = Field(description="Whether /api routes need a bearer token.")
