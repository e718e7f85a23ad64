"""The seven memory tools, each defined once: arguments, description, handler.

Every interface renders its schema from these definitions (``tool_schemas``) and calls them through
one dispatcher (``call_tool``), which validates the arguments and always returns a JSON object:
the tool's result, or ``{"error": "..."}`` with a message a model can act on. Errors never escape
into the agent loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from hivekeep.core.bounds import MAX_ID
from hivekeep.core.limits import (
    MAX_CONTENT_CHARS,
    MAX_IMPORTANCE,
    MAX_SUBJECT_CHARS,
    MIN_IMPORTANCE,
)
from hivekeep.core.routing import ROUTING_RULE
from hivekeep.errors import HivekeepError, ValidationError
from hivekeep.services.archive import HeldForReview, Memorized, MemoryPage
from hivekeep.services.recall import RecallResult
from hivekeep.services.review import Review
from hivekeep.store.base import KEEP, MemoryRecord, ProfileRecord, _Keep
from hivekeep.types import Category, Scope
from hivekeep.views import hit_view, memory_view, merged_view, similar_view

log = logging.getLogger(__name__)

CategoryName = Literal["fact", "preference", "decision", "knowledge"]
ScopeName = Literal["private", "shared"]
MAX_SOURCE_CONTEXT = 2000
Subject = Field(
    default=None, min_length=1, max_length=MAX_SUBJECT_CHARS, description="Who or what it is about."
)


class ToolAgent(Protocol):
    """What the handlers call: ``hivekeep.agent.Agent`` is the one implementation. A protocol,
    so that this module sits below ``agent.py`` (which validates with these models) and the
    two do not import each other."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def profile_budget(self) -> int: ...

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        subject: str | None = None,
        category: Category | str | None = None,
        since: str | None = None,
    ) -> RecallResult: ...

    def memorize(
        self,
        content: str,
        *,
        category: Category | str,
        subject: str | None = None,
        importance: int | None = None,
        scope: Scope | str = Scope.PRIVATE,
        source_context: str | None = None,
    ) -> Memorized: ...

    def edit_profile(
        self, section: str, operation: str, content: str, *, pin: bool = False
    ) -> ProfileRecord: ...

    def update_memory(
        self,
        memory_id: int,
        *,
        content: str | _Keep = KEEP,
        category: Category | str | _Keep = KEEP,
        subject: str | _Keep | None = KEEP,
        importance: int | _Keep | None = KEEP,
        scope: Scope | str | _Keep = KEEP,
    ) -> MemoryRecord: ...

    def forget(self, memory_id: int) -> None: ...

    def list_memories(
        self,
        *,
        subject: str | None = None,
        category: Category | str | None = None,
        scope: Scope | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage: ...

    def review_memories(
        self, *, subject: str | None = None, scope: Scope | str | None = None
    ) -> Review: ...


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @pydantic.field_validator(
        "memory_id", "limit", "offset", "importance", mode="before", check_fields=False
    )
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        """pydantic reads ``true`` as 1: a model's ``memory_id: true`` is a mistake to name."""
        if isinstance(value, bool):
            raise ValueError("must be an integer, not true or false")
        return value


class RecallArgs(_Args):
    query: str = Field(min_length=1, max_length=1000, description="What to search for.")
    limit: int | None = Field(default=None, ge=1, le=50, description="How many results (1-50).")
    subject: str | None = Subject
    category: CategoryName | None = None
    since: str | None = Field(
        default=None,
        max_length=40,
        description="Only memories created at or after this ISO date/datetime.",
    )


class MemorizeArgs(_Args):
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="The memory, one sentence."
    )
    category: CategoryName
    subject: str | None = Subject
    importance: int | None = Field(
        default=None, ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE, description="1 (trivial)-10."
    )
    scope: ScopeName = Field(
        default="private", description="'shared' makes it searchable by every agent."
    )
    source_context: str | None = Field(
        default=None, max_length=MAX_SOURCE_CONTEXT, description="Where or how this was learned."
    )


class EditProfileArgs(_Args):
    section: str = Field(default="", max_length=80, description="Section title (## Title).")
    operation: Literal["append", "replace_section", "remove_line"]
    content: str = Field(min_length=1, max_length=6000, description="Lines to add/set/remove.")
    pin: bool = Field(default=False, description="Edit the ## Pinned section instead.")


class UpdateMemoryArgs(_Args):
    memory_id: int = Field(ge=1, le=MAX_ID)
    content: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)
    category: CategoryName | None = None
    subject: str | None = Subject
    scope: ScopeName | None = None
    importance: int | None = Field(default=None, ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)


class ForgetArgs(_Args):
    memory_id: int = Field(ge=1, le=MAX_ID)


class ListMemoriesArgs(_Args):
    subject: str | None = Subject
    category: CategoryName | None = None
    scope: ScopeName | None = Field(
        default=None, description="'shared' lists shared memories of every agent."
    )
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=MAX_ID)


class ReviewMemoriesArgs(_Args):
    subject: str | None = Subject
    scope: ScopeName | None = None


def _recall(agent: ToolAgent, args: RecallArgs) -> dict[str, Any]:
    result = agent.recall(
        args.query,
        limit=args.limit,
        subject=args.subject,
        category=args.category,
        since=args.since,
    )
    # each hit says how well it matches and which search found it (the fused score only ranks)
    views = [hit_view(h, agent.id) for h in result.hits]
    out: dict[str, Any] = {"memories": views}
    if result.warning:
        out["warning"] = result.warning
    return out


PENDING_NOTE = (
    "Held for a person's review: it is not remembered (recalled, listed, shared) until approved. "
    "Do not write it again."
)


def _memorize(agent: ToolAgent, args: MemorizeArgs) -> dict[str, Any]:
    written = agent.memorize(
        args.content,
        category=args.category,
        subject=args.subject,
        importance=args.importance,
        scope=args.scope,
        source_context=args.source_context,
    )
    return memorize_result(written)


def memorize_result(written: Memorized) -> dict[str, Any]:
    """``memorize``'s answer for a write (the tool's, and the CLI's for a person's write)."""
    memory = written.memory
    if written.pending is not None:
        return {
            "pending": True,
            "pending_id": written.pending.id,
            "content": memory.content,
            "scope": memory.scope.value,
            **({"redacted": list(written.redacted)} if written.redacted else {}),
            "note": PENDING_NOTE,
        }
    return {
        "id": memory.id,
        "content": memory.content,
        "category": memory.category.value,
        "subject": memory.subject,
        "scope": memory.scope.value,
        "duplicate": written.duplicate,
        **({"redacted": list(written.redacted)} if written.redacted else {}),
        **merged_view(memory, written.merged_version, reworded=written.reworded),
        **({"similar": [similar_view(m) for m in written.similar]} if written.similar else {}),
    }


def _edit_profile(agent: ToolAgent, args: EditProfileArgs) -> dict[str, Any]:
    profile = agent.edit_profile(args.section, args.operation, args.content, pin=args.pin)
    return {
        "success": True,
        "profile": profile.text,
        "tokens": profile.tokens,
        "budget": agent.profile_budget,
        "unchanged": profile.unchanged,
        **({"note": _unchanged_note(args.operation)} if profile.unchanged else {}),
    }


def _unchanged_note(operation: str) -> str:
    if operation == "append":
        return "The section already holds these lines; nothing was added."
    return "The section already reads exactly like this; nothing was changed."


def _update_memory(agent: ToolAgent, args: UpdateMemoryArgs) -> dict[str, Any]:
    given = {name: getattr(args, name) for name in args.model_fields_set - {"memory_id"}}
    try:
        return memory_view(agent.update_memory(args.memory_id, **given), agent.id)
    except HeldForReview as held:
        return {
            "pending": True,
            "pending_id": held.pending.id,
            "memory_id": args.memory_id,
            "note": PENDING_NOTE,
        }


def _forget(agent: ToolAgent, args: ForgetArgs) -> dict[str, Any]:
    agent.forget(args.memory_id)
    return {"success": True}


def _list_memories(agent: ToolAgent, args: ListMemoriesArgs) -> dict[str, Any]:
    page = agent.list_memories(
        subject=args.subject,
        category=args.category,
        scope=args.scope,
        limit=args.limit,
        offset=args.offset,
    )
    return {
        "memories": [memory_view(m, agent.id) for m in page.memories],
        "total": page.total,
        "has_more": page.has_more,
    }


def _review_memories(agent: ToolAgent, args: ReviewMemoriesArgs) -> dict[str, Any]:
    return agent.review_memories(subject=args.subject, scope=args.scope).as_tool_result()


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[_Args]
    handler: Callable[[ToolAgent, Any], dict[str, Any]]

    def input_schema(self) -> dict[str, Any]:
        return _clean_schema(self.args.model_json_schema())


TOOLS: tuple[Tool, ...] = (
    Tool(
        "recall",
        "Search your archive (your own memories and those shared by other agents) by meaning and "
        "keywords. The archive is never shown automatically: use recall before saying you don't "
        "remember something. Filter by subject, category or since (creation date) when you know "
        "them. A result with 'newer' has a later near-twin that may have changed the fact: read "
        "it before relying on the older one.",
        RecallArgs,
        _recall,
    ),
    Tool(
        "memorize",
        "Save an episodic memory to the archive right away: a dated event, a past detail, a "
        f"one-off fact. {ROUTING_RULE} Use scope 'shared' only for what genuinely helps other "
        "agents (user-wide preferences, infrastructure, decisions affecting everyone). A result "
        "with 'similar' lists close memories you already had: if one is now outdated, "
        "update_memory or forget it. 'reworded' means your memory of the same fact now reads "
        "your words (its old text is kept in its history).",
        MemorizeArgs,
        _memorize,
    ),
    Tool(
        "edit_profile",
        "Patch your profile, the document always in your system prompt: append lines to a "
        "section, replace a section, or remove a line. pin=true edits ## Pinned, which automatic "
        f"rewrites never change. {ROUTING_RULE} The profile has a token budget; when it is full, "
        "prune or move details to the archive.",
        EditProfileArgs,
        _edit_profile,
    ),
    Tool(
        "update_memory",
        "Correct an archive memory you wrote: content, category, subject, scope or importance "
        f"(the old version is kept; a person can undo the change). {ROUTING_RULE}",
        UpdateMemoryArgs,
        _update_memory,
    ),
    Tool(
        "forget",
        "Delete an archive memory you wrote that is outdated or wrong (it goes to a trash a "
        "person can restore it from).",
        ForgetArgs,
        _forget,
    ),
    Tool(
        "list_memories",
        "List archive memories, newest first, filtered by subject, category or scope "
        "('shared' lists memories shared by every agent).",
        ListMemoriesArgs,
        _list_memories,
    ),
    Tool(
        "review_memories",
        "Audit the archive with an LLM for contradictions, duplicates, stale entries and clutter. "
        "Changes nothing itself; returns suggestions.",
        ReviewMemoriesArgs,
        _review_memories,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
# The tools that change nothing: all a read-only API token may call (docs/server.md).
READ_ONLY_TOOLS = frozenset({"recall", "list_memories", "review_memories"})


def validate(name: str, **arguments: Any) -> Any:
    """Check typed-API arguments with the tool's own rules; raises ValidationError."""
    tool = TOOLS_BY_NAME[name]
    try:
        return tool.args.model_validate(arguments)
    except pydantic.ValidationError as exc:
        raise ValidationError(_describe(name, exc)) from None


def call_tool(
    agent: ToolAgent, name: str, arguments: dict[str, Any] | str | None
) -> dict[str, Any]:
    """Validate ``arguments`` and run tool ``name`` for ``agent``; always returns a JSON object."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        return {"error": f"Unknown tool {name!r}. Available tools: {', '.join(TOOLS_BY_NAME)}."}
    try:
        if isinstance(arguments, str):
            args = tool.args.model_validate_json(arguments or "{}")
        else:
            args = tool.args.model_validate(arguments or {})
    except pydantic.ValidationError as exc:
        return {"error": _describe(name, exc)}
    try:
        return tool.handler(agent, args)
    except HivekeepError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a bug must not escape into the agent loop: logged, then reported
        log.exception("Tool %s failed unexpectedly for agent %s", name, agent.name)
        return {
            "error": f"The tool {name} failed unexpectedly ({type(exc).__name__}); this is a "
            "bug in hivekeep, and the details are in its log. Other tools still work."
        }


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a tool call's arguments, for an interface to word its own way."""

    parameter: str  # "" when it concerns the arguments as a whole
    kind: Literal["missing", "unknown", "invalid"]
    message: str  # for "invalid": what the value should be, starting lower-case


def argument_problems(name: str, arguments: dict[str, Any]) -> list[Problem]:
    """What is wrong with ``arguments`` for tool ``name`` (at most five), by the tool's own
    rules; empty when they are valid. The CLI names them as its options (``--importance``)."""
    try:
        TOOLS_BY_NAME[name].args.model_validate(arguments)
    except pydantic.ValidationError as exc:
        return _problems(exc)
    return []


def _problems(exc: pydantic.ValidationError) -> list[Problem]:
    kinds: dict[str, Literal["missing", "unknown"]] = {
        "missing": "missing",
        "extra_forbidden": "unknown",
    }
    return [
        Problem(
            ".".join(str(part) for part in error["loc"]),
            kinds.get(error["type"], "invalid"),
            f"{error['msg'][0].lower()}{error['msg'][1:]}",
        )
        for error in exc.errors(include_url=False)[:5]
    ]


def _describe(tool: str, exc: pydantic.ValidationError) -> str:
    problems = []
    for problem in _problems(exc):
        where = problem.parameter or "arguments"
        if problem.kind == "unknown":
            problems.append(f"'{where}' is not a parameter of {tool}")
        elif problem.kind == "missing":
            problems.append(f"'{where}' is required")
        else:
            problems.append(f"'{where}' {problem.message}")
    valid = ", ".join(TOOLS_BY_NAME[tool].args.model_fields)
    return f"Invalid arguments for {tool}: {'; '.join(problems)}. Parameters: {valid}."


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Plain JSON Schema for model APIs: no titles, optional fields as their non-null type."""
    properties: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        options = prop.pop("anyOf", None)
        if options:
            non_null = [o for o in options if o.get("type") != "null"]
            prop = {**non_null[0], **prop} if len(non_null) == 1 else {"anyOf": options, **prop}
        if prop.get("default", ...) is None:
            del prop["default"]
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": schema.get("required", []),
        "additionalProperties": False,
    }


def tool_schemas(flavor: Literal["openai", "anthropic", "mcp"] = "openai") -> list[dict[str, Any]]:
    """Every tool's schema in the format of an LLM API (or MCP's ``inputSchema``)."""
    if flavor == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema(),
                },
            }
            for t in TOOLS
        ]
    if flavor == "anthropic":
        return [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema()}
            for t in TOOLS
        ]
    if flavor == "mcp":
        return [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema()}
            for t in TOOLS
        ]
    raise ValueError(f"Unknown schema flavor {flavor!r}; use 'openai', 'anthropic' or 'mcp'.")
