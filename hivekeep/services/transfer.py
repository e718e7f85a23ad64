"""Export a hive to JSONL and import one back: backups, and moves between hives and backends.

The format is described in docs/storage.md ("Export and import"). In short: one JSON object per
line with a ``type`` — a ``header`` first, then ``agent`` and ``profile`` lines, each conversation
(``conversation`` then its ``message`` and ``summary`` lines), then every ``memory`` with its
vector. With ``history`` (``export --history``, format version 2) profile and memory lines carry
their kept versions and the trash follows as ``trashed`` lines; an import puts both back as they
were (who, when, operation kept).

Records name each other by agent name or by export key, never by database id, because ids
differ between hives and backends. Everything goes through the ``Store`` protocol, so the same code
exports from and imports into any backend.

Export streams page by page (constant memory). Import reads the file three times: the first pass
checks every line and every reference and writes nothing if anything is wrong; the second embeds,
by this hive's model, the memories whose vectors are of another model (or absent), before any
transaction opens; the last pass writes everything in **one** transaction, so a failure
or a killed process part-way leaves nothing of the file. Memories go through the archive's one
write path (``ArchiveService.memorize_many``: the same dedup as ``memorize``), in batches, and its
``memory:created`` events are held until the commit (``EventBus.deferred``), then reach the UI and,
on PostgreSQL, the other processes. Conversations already present are skipped and agents are
merged by name, so importing a file twice adds nothing the second time.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

import numpy as np
import numpy.typing as npt
import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from hivekeep.core.text import (
    check_not_future,
    clean_text,
    now_timestamp,
    parse_timestamp,
)
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ConflictError, NotFound, ValidationError
from hivekeep.services.archive import ArchiveService
from hivekeep.services.conversation import ConversationService
from hivekeep.services.embedding import EmbeddingService
from hivekeep.store.base import (
    PERSON,
    AgentRecord,
    Change,
    EmbeddingSpace,
    MemoryRecord,
    MemoryVersion,
    NewMemory,
    ProfileRecord,
    ProfileVersion,
    Store,
    TrashedMemory,
    Vector,
)
from hivekeep.store.conversations import (
    AgentSettings,
    ConversationRecord,
    MessageRecord,
    NewMessage,
    RestoredConversation,
    RestoredMessage,
    RestoredSummary,
    SummaryRecord,
    ToolCallRecord,
)
from hivekeep.types import Actor, Category, Operation, Scope, Source

log = logging.getLogger(__name__)

FORMAT = "hivekeep-jsonl"
FORMAT_VERSION = 2  # the newest this reads; an export without history is still written as 1
HISTORY_VERSION = 2  # the format version that may carry history and trash (``--history``)
# Keys of a compaction record (a message's ``record``) that list summary ids: exported as summary
# keys and written back as the new ids.
RECORD_SUMMARY_FIELDS = ("summary_ids", "merged_summary_ids")
MEMORY_PAGE = 500  # memories read per store call on export
MESSAGE_PAGE = 1000  # messages read per store call on export
IMPORT_BATCH = 500  # memories embedded, and written through the archive, per call on import
MAX_ERRORS = 10  # an invalid file reports this many problems, then stops looking

Progress = Callable[[int, int], None]  # (lines done, lines in the file)

# -- the line models -----------------------------------------------------------------------------

# The memorize tool's limits (tools.py), applied to imported memories too.
MAX_CONTENT_CHARS = 2000
MAX_SUBJECT_CHARS = 200
MAX_SOURCE_CONTEXT_CHARS = 2000


def _real_timestamp(value: str) -> str:
    """The stored format is not enough: "2024-02-31T00:00:00.000000Z" must not get in."""
    try:
        parse_timestamp(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None
    return value


def _not_future(value: str) -> str:
    try:
        return check_not_future(value)
    except ValidationError as exc:
        raise ValueError(str(exc).rstrip(".")) from None


def _clean(value: str) -> str:
    """Control characters as on every write (``clean_text``): NUL refused, the others dropped."""
    try:
        return clean_text(value, "text")
    except ValidationError as exc:
        raise ValueError(str(exc).rstrip(".")) from None


Timestamp = Annotated[
    str,
    StringConstraints(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"),
    AfterValidator(_real_timestamp),
]
CreatedAt = Annotated[Timestamp, AfterValidator(_not_future)]  # at most a day ahead of now
Text = Annotated[str, StringConstraints(min_length=1)]
Content = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CONTENT_CHARS),
    AfterValidator(_clean),
]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingInfo(_Line):
    model: Text
    dimension: int = Field(ge=1)


class HeaderLine(_Line):
    type: Literal["header"]
    format: Literal["hivekeep-jsonl"]
    version: int = Field(ge=1)
    hivekeep_version: str
    exported_at: Timestamp
    embedding: EmbeddingInfo | None
    agent: str | None = None  # set when one agent was exported (``--agent``)


class SettingsInfo(_Line):
    model: str | None = None
    compaction: dict[str, Any] = Field(default_factory=dict)
    compacting_model: str | None = None
    extraction_model: str | None = None


class AgentLine(_Line):
    type: Literal["agent"]
    name: Text
    role: str = ""
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    settings: SettingsInfo = Field(default_factory=SettingsInfo)


class ProfileVersionInfo(_Line):
    """One kept version of a profile (``export --history``)."""

    version: int = Field(ge=0)
    text: Annotated[str, AfterValidator(_clean)]
    tokens: int = Field(ge=0)
    changed_at: Timestamp
    changed_by: Actor
    operation: Operation


class MemoryVersionInfo(_Line):
    """One kept version of a memory (``export --history``)."""

    version: int = Field(ge=1)
    content: Content
    category: Category
    subject: Annotated[str, AfterValidator(_clean)] | None = None
    importance: int | None = Field(default=None, ge=1, le=10)
    scope: Scope
    changed_at: Timestamp
    changed_by: Actor
    operation: Operation


def _distinct(versions: list[Any] | None) -> list[Any] | None:
    if versions is not None and len({v.version for v in versions}) != len(versions):
        raise ValueError("two versions have the same number")
    return versions


class ProfileLine(_Line):
    """``revision`` and the dates are informational (the importing hive keeps its own counter),
    except where ``history`` is put into a profile never written: then they are restored."""

    type: Literal["profile"]
    agent: Text
    text: Annotated[str, AfterValidator(_clean)]  # its budget is checked by the reader
    tokens: int | None = Field(default=None, ge=0)
    revision: int | None = Field(default=None, ge=0)
    last_rewrite_at: Timestamp | None = None
    manually_edited_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    history: Annotated[list[ProfileVersionInfo] | None, AfterValidator(_distinct)] = None


class MemoryLine(_Line):
    type: Literal["memory"]
    author: Text
    # the author was deleted: a shared memory kept under its name, owned by no agent (no agent
    # line is needed, and a live agent of the same name does not become its owner)
    author_deleted: bool = False
    content: Content
    category: Category
    subject: (
        Annotated[
            str,
            StringConstraints(min_length=1, max_length=MAX_SUBJECT_CHARS),
            AfterValidator(_clean),
        ]
        | None
    ) = None
    importance: int | None = Field(default=None, ge=1, le=10)
    scope: Scope = Scope.PRIVATE
    source: Source = Source.EXPLICIT
    source_context: (
        Annotated[
            str, StringConstraints(max_length=MAX_SOURCE_CONTEXT_CHARS), AfterValidator(_clean)
        ]
        | None
    ) = None
    source_message: str | None = None  # a message's key; dropped if that line is not in the file
    retrieval_count: int = Field(default=0, ge=0)
    last_retrieved_at: Timestamp | None = None
    created_at: CreatedAt
    updated_at: Timestamp | None = None
    vector: str | None = None  # base64 of little-endian float32, the header's dimension
    history: Annotated[list[MemoryVersionInfo] | None, AfterValidator(_distinct)] = None


class TrashedLine(MemoryLine):
    """A memory in the trash (``export --history``): a memory line, and when and by whom it was
    forgotten."""

    type: Literal["trashed"]  # type: ignore[assignment]
    deleted_at: Timestamp
    deleted_by: Actor


class ConversationLine(_Line):
    type: Literal["conversation"]
    key: Text
    agent: Text
    title: str = ""
    created_at: Timestamp
    updated_at: Timestamp


class ToolCallInfo(_Line):
    id: str
    name: str
    arguments: str


class MessageLine(_Line):
    type: Literal["message"]
    conversation: Text
    key: Text
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tokens: int = Field(default=0, ge=0)
    tool_calls: list[ToolCallInfo] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    speaker: str | None = None
    summary: str | None = None  # the key of the summary it is folded into
    compaction_record: bool = False
    record: dict[str, Any] | None = None
    created_at: Timestamp


class SummaryLine(_Line):
    type: Literal["summary"]
    conversation: Text
    key: Text
    text: str
    tokens: int = Field(ge=0)
    first_at: Timestamp
    last_at: Timestamp
    message_count: int = Field(ge=0)
    first_message: str | None = None
    last_message: str | None = None
    depth: int = Field(default=0, ge=0)
    sources: list[str] = Field(default_factory=list)  # keys of the summaries merged into it
    in_context: bool = True
    maintenance_status: Literal["pending", "done", "failed"] = "pending"
    maintenance_attempts: int = Field(default=0, ge=0)
    maintenance_error: str | None = None
    created_at: Timestamp


AnyLine = Annotated[
    HeaderLine
    | AgentLine
    | ProfileLine
    | MemoryLine
    | TrashedLine
    | ConversationLine
    | MessageLine
    | SummaryLine,
    Field(discriminator="type"),
]
_LINE: pydantic.TypeAdapter[AnyLine] = pydantic.TypeAdapter(AnyLine)
TYPES = ("header", "agent", "profile", "conversation", "message", "summary", "memory", "trashed")


# -- keys and vectors ------------------------------------------------------------------------------


def conversation_key(agent: str, created_at: str, title: str) -> str:
    """A key that survives round trips: the same conversation gets it from any hive or backend."""
    digest = hashlib.sha256(f"{agent.lower()}\n{created_at}\n{title}".encode()).hexdigest()
    return f"c-{digest[:16]}"


def message_key(message_id: int) -> str:
    return f"m{message_id}"


def summary_key(summary_id: int) -> str:
    return f"s{summary_id}"


def encode_vector(vector: Vector) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str, dimension: int) -> npt.NDArray[np.float32]:
    """A unit float32 vector; raises ValueError naming what is wrong with it."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("'vector' is not valid base64") from None
    if len(raw) != 4 * dimension:
        raise ValueError(
            f"'vector' has {len(raw) / 4:g} dimensions but the header says {dimension}"
        )
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    norm = float(np.linalg.norm(vector))
    if not np.all(np.isfinite(vector)) or norm == 0:
        raise ValueError("'vector' is zero or not finite")
    return vector if abs(norm - 1) < 1e-4 else vector / norm


# -- export ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportReport:
    agents: int
    memories: int
    conversations: int
    messages: int
    summaries: int
    trashed: int = 0  # memories in the trash (``history`` only)


def hivekeep_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hivekeep")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0"


def _dump(out: TextIO, line: dict[str, Any]) -> None:
    out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def export_jsonl(
    store: Store, out: TextIO, *, agent_id: int | None = None, history: bool = False
) -> ExportReport:
    """Write the hive (or one agent: its conversations and the memories it wrote, shared ones
    included) to ``out``, one line at a time; with ``history``, the kept versions of profiles
    and memories and the trash too."""
    agents = [store.get_agent(agent_id)] if agent_id is not None else store.list_agents()
    space = store.embedding_space()
    _dump(
        out,
        {
            "type": "header",
            "format": FORMAT,
            "version": HISTORY_VERSION if history else 1,
            "hivekeep_version": hivekeep_version(),
            "exported_at": now_timestamp(),
            "embedding": None
            if space is None
            else {"model": space.model, "dimension": space.dimension},
            "agent": agents[0].name if agent_id is not None else None,
        },
    )
    for agent in agents:
        _dump(out, _agent_line(agent, store.get_agent_settings(agent.id)))
        profile = store.get_profile(agent.id)
        _dump(
            out,
            {
                "type": "profile",
                "agent": agent.name,
                "text": profile.text,
                "tokens": profile.tokens,
                "revision": profile.revision,
                "last_rewrite_at": profile.last_rewrite_at,
                "manually_edited_at": profile.manually_edited_at,
                "updated_at": profile.updated_at,
                **(
                    {"history": [_profile_version(v) for v in store.profile_history(agent.id)]}
                    if history
                    else {}
                ),
            },
        )
    conversations = messages = summaries = 0
    keys: set[str] = set()
    for agent in agents:
        for conversation in sorted(store.list_conversations(agent.id), key=lambda c: c.id):
            key = conversation_key(agent.name, conversation.created_at, conversation.title)
            while key in keys:  # same agent, title and microsecond: practically never
                key += "+"
            keys.add(key)
            counts = _export_conversation(store, out, agent.name, conversation, key)
            conversations += 1
            messages += counts[0]
            summaries += counts[1]
    memories = 0
    after = 0
    authors = {agent.id for agent in agents}  # not an agent created while this export runs
    while page := store.memories_with_vectors(agent_id, after_id=after, limit=MEMORY_PAGE):
        for memory, vector in page:
            if memory.agent_id in authors or memory.author_deleted:
                line = _memory_line(memory, vector)
                if history:
                    line["history"] = _memory_versions(store, memory)
                _dump(out, line)
                memories += 1
        after = page[-1][0].id
    trashed = _export_trash(store, out, agent_id, authors) if history else 0
    return ExportReport(len(agents), memories, conversations, messages, summaries, trashed)


def _export_trash(store: Store, out: TextIO, agent_id: int | None, authors: set[int]) -> int:
    count = after = 0
    while page := store.trash_with_vectors(agent_id, after_id=after, limit=MEMORY_PAGE):
        for item, vector in page:
            memory = item.memory
            if memory.agent_id in authors or memory.author_deleted:
                line = _trashed_line(item, vector)
                line["history"] = _memory_versions(store, memory)
                _dump(out, line)
                count += 1
        after = page[-1][0].memory.id
    return count


def _memory_versions(store: Store, memory: MemoryRecord) -> list[dict[str, Any]]:
    viewer = PERSON if memory.author_deleted or memory.agent_id is None else memory.agent_id
    return [
        {
            "version": v.version,
            "content": v.content,
            "category": v.category.value,
            "subject": v.subject,
            "importance": v.importance,
            "scope": v.scope.value,
            "changed_at": v.changed_at,
            "changed_by": v.changed_by.value,
            "operation": v.operation.value,
        }
        for v in store.memory_history(memory.id, viewer)
    ]


def _profile_version(v: ProfileVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "text": v.text,
        "tokens": v.tokens,
        "changed_at": v.changed_at,
        "changed_by": v.changed_by.value,
        "operation": v.operation.value,
    }


def _trashed_line(item: TrashedMemory, vector: npt.NDArray[np.float32] | None) -> dict[str, Any]:
    line = _memory_line(item.memory, vector)
    line["type"] = "trashed"
    line["source_message"] = None  # its conversation may be gone; a trashed memory needs none
    return {**line, "deleted_at": item.deleted_at, "deleted_by": item.deleted_by.value}


def _agent_line(agent: AgentRecord, settings: AgentSettings) -> dict[str, Any]:
    return {
        "type": "agent",
        "name": agent.name,
        "role": agent.role,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "settings": settings.to_json(),
    }


def _export_conversation(
    store: Store, out: TextIO, agent: str, conversation: ConversationRecord, key: str
) -> tuple[int, int]:
    _dump(
        out,
        {
            "type": "conversation",
            "key": key,
            "agent": agent,
            "title": conversation.title,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
        },
    )
    messages = 0
    after = 0
    while page := store.list_messages(conversation.id, after_id=after, limit=MESSAGE_PAGE):
        for message in page:
            _dump(out, _message_line(message, key))
        messages += len(page)
        after = page[-1].id
    summaries = store.list_summaries(conversation.id)
    for summary in summaries:
        _dump(out, _summary_line(summary, key))
    return messages, len(summaries)


def _message_line(m: MessageRecord, conversation: str) -> dict[str, Any]:
    record = m.record
    if record is not None:
        record = dict(record)
        for name in RECORD_SUMMARY_FIELDS:
            ids = record.get(name)
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                record[name] = [summary_key(i) for i in ids]
    return {
        "type": "message",
        "conversation": conversation,
        "key": message_key(m.id),
        "role": m.role,
        "content": m.content,
        "tokens": m.tokens,
        "tool_calls": [dataclasses.asdict(call) for call in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "tool_name": m.tool_name,
        "speaker": m.speaker,
        "summary": None if m.summary_id is None else summary_key(m.summary_id),
        "compaction_record": m.is_compaction_record,
        "record": record,
        "created_at": m.created_at,
    }


def _summary_line(s: SummaryRecord, conversation: str) -> dict[str, Any]:
    return {
        "type": "summary",
        "conversation": conversation,
        "key": summary_key(s.id),
        "text": s.text,
        "tokens": s.tokens,
        "first_at": s.first_at,
        "last_at": s.last_at,
        "message_count": s.message_count,
        "first_message": None if s.first_message_id is None else message_key(s.first_message_id),
        "last_message": None if s.last_message_id is None else message_key(s.last_message_id),
        "depth": s.depth,
        "sources": [summary_key(i) for i in s.source_ids],
        "in_context": s.in_context,
        "maintenance_status": s.maintenance_status,
        "maintenance_attempts": s.maintenance_attempts,
        "maintenance_error": s.maintenance_error,
        "created_at": s.created_at,
    }


def _memory_line(m: MemoryRecord, vector: npt.NDArray[np.float32] | None) -> dict[str, Any]:
    deleted = {"author_deleted": True} if m.author_deleted else {}
    return {
        "type": "memory",
        "author": m.author_name,
        **deleted,
        "content": m.content,
        "category": m.category.value,
        "subject": m.subject,
        "importance": m.importance,
        "scope": m.scope.value,
        "source": m.source.value,
        "source_context": m.source_context,
        "source_message": None if m.source_message_id is None else message_key(m.source_message_id),
        "retrieval_count": m.retrieval_count,
        "last_retrieved_at": m.last_retrieved_at,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "vector": None if vector is None else encode_vector(vector),
    }


# -- reading and checking a file -----------------------------------------------------------------


class _LineError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class _Block:
    """One conversation with its message and summary lines (each with its line number)."""

    line: int
    conversation: ConversationLine
    messages: list[tuple[int, MessageLine]] = field(default_factory=list)
    summaries: list[tuple[int, SummaryLine]] = field(default_factory=list)
    restored: RestoredConversation | None = None  # set once every reference is checked

    @property
    def last_line(self) -> int:
        return max([self.line, *(n for n, _ in self.messages), *(n for n, _ in self.summaries)])


Item = HeaderLine | AgentLine | ProfileLine | MemoryLine | _Block


def _restored(block: _Block) -> RestoredConversation:
    """The block with keys turned into positions; raises _LineError on a dangling reference."""
    messages: dict[str, int] = {}
    summaries: dict[str, int] = {}
    for keys, lines in ((messages, block.messages), (summaries, block.summaries)):
        for number, line in lines:
            if line.key in keys:
                raise _LineError(
                    number, f"{line.type} key {line.key!r} is used twice in this conversation"
                )
            keys[line.key] = len(keys)

    def position(number: int, keys: dict[str, int], key: str, what: str) -> int:
        if key not in keys:
            raise _LineError(
                number,
                f"{what} {key!r} is not in conversation {block.conversation.key!r} "
                f"(line {block.line})",
            )
        return keys[key]

    def optional(number: int, keys: dict[str, int], key: str | None, what: str) -> int | None:
        return None if key is None else position(number, keys, key, what)

    restored_summaries = []
    for index, (number, s) in enumerate(block.summaries):
        sources = tuple(position(number, summaries, k, "source summary") for k in s.sources)
        if any(source >= index for source in sources):
            raise _LineError(number, "a merged summary must come after the summaries it merges")
        restored_summaries.append(
            RestoredSummary(
                text=s.text,
                tokens=s.tokens,
                first_at=s.first_at,
                last_at=s.last_at,
                message_count=s.message_count,
                created_at=s.created_at,
                first_message=optional(number, messages, s.first_message, "first message"),
                last_message=optional(number, messages, s.last_message, "last message"),
                depth=s.depth,
                sources=sources,
                in_context=s.in_context,
                maintenance_status=s.maintenance_status,
                maintenance_attempts=s.maintenance_attempts,
                maintenance_error=s.maintenance_error,
            )
        )
    restored_messages = []
    for number, m in block.messages:
        record_summaries: dict[str, tuple[int, ...]] = {}
        for name in RECORD_SUMMARY_FIELDS:
            listed = (m.record or {}).get(name)
            if isinstance(listed, list) and all(isinstance(k, str) for k in listed):
                # a record is a note of what happened: a summary missing from it is left out
                record_summaries[name] = tuple(summaries[k] for k in listed if k in summaries)
        restored_messages.append(
            RestoredMessage(
                NewMessage(
                    role=m.role,
                    content=m.content,
                    tokens=m.tokens,
                    tool_calls=tuple(
                        ToolCallRecord(call.id, call.name, call.arguments) for call in m.tool_calls
                    ),
                    tool_call_id=m.tool_call_id,
                    tool_name=m.tool_name,
                    speaker=m.speaker,
                    is_compaction_record=m.compaction_record,
                    record=m.record,
                    created_at=m.created_at,
                ),
                summary=optional(number, summaries, m.summary, "summary"),
                record_summaries=record_summaries,
            )
        )
    c = block.conversation
    return RestoredConversation(
        title=c.title,
        created_at=c.created_at,
        updated_at=c.updated_at,
        messages=tuple(restored_messages),
        summaries=tuple(restored_summaries),
    )


def _describe(exc: pydantic.ValidationError) -> str:
    """Pydantic's errors as one short sentence per problem."""
    parts = []
    for error in exc.errors():
        kind = error["type"]
        if kind == "union_tag_invalid":
            tag = error.get("ctx", {}).get("tag")
            parts.append(f"unknown type {tag!r} (expected one of: {', '.join(TYPES)})")
        elif kind == "union_tag_not_found":
            parts.append("no 'type' field")
        else:
            where = ".".join(str(part) for part in error["loc"][1:])
            parts.append(f"{where!r}: {error['msg']}" if where else str(error["msg"]))
    return "; ".join(parts)


class _Reader:
    """Parses a file into items, checking every line and reference; used by both passes."""

    def __init__(self, path: Path, conversations: ConversationService) -> None:
        self.path = path
        self.conversations = conversations
        self.header: HeaderLine | None = None
        self.lines = 0
        self.source_messages: set[str] = set()  # message keys that memories point at
        self.profile_budget: int | None = None  # None: a profile of any size is accepted

    def items(self, errors: list[str] | None) -> Iterator[tuple[int, Item]]:
        """(line number, item) in file order. ``errors``: collect problems (up to MAX_ERRORS)
        and go on; None: raise at the first one."""
        agents: dict[str, str] = {}  # lower-case name -> name
        profiles: set[str] = set()
        conversation_keys: set[str] = set()
        block: _Block | None = None
        number = 0

        def fail(exc: _LineError) -> None:
            if errors is None:
                raise ValidationError(f"Line {exc.line} of {self.path}: {exc}.")
            errors.append(f"line {exc.line}: {exc}")

        with self.path.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if errors is not None and len(errors) >= MAX_ERRORS:
                    break
                if not raw.strip():
                    continue  # a blank line (e.g. an editor's last newline)
                try:
                    line = self._parse(number, _decode(number, raw))
                    if isinstance(line, MessageLine | SummaryLine):
                        if block is None or line.conversation != block.conversation.key:
                            raise _LineError(
                                number,
                                f"a {line.type} must follow its conversation's line and the "
                                f"other lines of conversation {line.conversation!r}",
                            )
                        if isinstance(line, MessageLine):
                            block.messages.append((number, line))
                        else:
                            block.summaries.append((number, line))
                        continue
                    if block is not None:
                        finished, block = block, None
                        finished.restored = _restored(finished)
                        yield finished.last_line, finished
                    self._check(number, line, agents, profiles, conversation_keys)
                    if isinstance(line, ConversationLine):
                        block = _Block(number, line)
                        continue
                    yield number, line
                except _LineError as exc:
                    fail(exc)
            self.lines = number
        if block is not None:
            try:
                block.restored = _restored(block)
                yield block.last_line, block
            except _LineError as exc:
                fail(exc)
        if self.header is None and (errors is None or not errors):
            fail(_LineError(1, "the file is empty; an export starts with a header line"))

    def _parse(self, number: int, text: str) -> AnyLine:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _LineError(number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise _LineError(number, "JSON nested too deeply to read") from None
        if not isinstance(data, dict):
            raise _LineError(number, "not a JSON object")
        try:
            line = _LINE.validate_python(data)
        except RecursionError:
            raise _LineError(number, "JSON nested too deeply to read") from None
        except pydantic.ValidationError as exc:
            kind = data.get("type")
            label = f" ({kind})" if isinstance(kind, str) and kind in TYPES else ""
            raise _LineError(number, f"invalid record{label}: {_describe(exc)}") from None
        if number == 1 and not isinstance(line, HeaderLine):
            raise _LineError(number, "an export starts with a header line")
        if number > 1 and isinstance(line, HeaderLine):
            raise _LineError(number, "a second header line")
        return line

    def _v2(self) -> bool:
        return self.header is not None and self.header.version >= HISTORY_VERSION

    def _check(
        self,
        number: int,
        line: HeaderLine | AgentLine | ProfileLine | MemoryLine | ConversationLine,
        agents: dict[str, str],
        profiles: set[str],
        conversation_keys: set[str],
    ) -> None:
        """References and values a model alone cannot check."""

        def known(name: str) -> None:
            if name.lower() not in agents:
                raise _LineError(
                    number, f"agent {name!r} has no agent line before this one in the file"
                )

        if isinstance(line, HeaderLine):
            if line.version > FORMAT_VERSION:
                raise _LineError(
                    number,
                    f"format version {line.version} is newer than this hivekeep reads "
                    f"({FORMAT_VERSION}); upgrade hivekeep to import it",
                )
            self.header = line
        elif isinstance(line, AgentLine):
            if line.name.lower() in agents:
                raise _LineError(number, f"agent {line.name!r} appears twice")
            try:
                _check_agent(line, self.conversations)
            except ValidationError as exc:
                raise _LineError(number, str(exc).rstrip(".")) from None
            agents[line.name.lower()] = line.name
        elif isinstance(line, ProfileLine):
            known(line.agent)
            if line.agent.lower() in profiles:
                raise _LineError(number, f"agent {line.agent!r} has two profile lines")
            profiles.add(line.agent.lower())
            if line.history is not None and not self._v2():
                raise _LineError(number, f"history needs format version {HISTORY_VERSION}")
            if self.profile_budget is not None:
                tokens = count_tokens(line.text)
                if tokens > self.profile_budget:
                    raise _LineError(
                        number,
                        f"the profile of {line.agent!r} has {tokens} tokens, over this hive's "
                        f"budget of {self.profile_budget} (MEMORY_PROFILE_MAX_TOKENS); shorten "
                        "it, raise the budget, or import with allow_over_budget "
                        "(--allow-over-budget) to keep it whole",
                    )
        elif isinstance(line, ConversationLine):
            known(line.agent)
            if line.key in conversation_keys:
                raise _LineError(number, f"conversation key {line.key!r} is used twice")
            conversation_keys.add(line.key)
        elif isinstance(line, MemoryLine):
            if (line.history is not None or isinstance(line, TrashedLine)) and not self._v2():
                raise _LineError(
                    number, f"history and the trash need format version {HISTORY_VERSION}"
                )
            if not line.author_deleted:
                known(line.author)
            elif line.scope is not Scope.SHARED:
                raise _LineError(number, "a memory whose author was deleted must be shared")
            if line.vector is not None:
                space = self.header.embedding if self.header else None
                if space is None:
                    raise _LineError(number, "a memory has a vector but the header names no model")
                try:
                    decode_vector(line.vector, space.dimension)
                except ValueError as exc:
                    raise _LineError(number, str(exc)) from None
            if line.source_message is not None:
                self.source_messages.add(line.source_message)


def _decode(number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _LineError(
            number,
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "an export is UTF-8 text",
        ) from None


def _check_agent(line: AgentLine, conversations: ConversationService) -> None:
    from hivekeep.hive import _agent_name, _agent_role  # the rules `create_agent` applies

    if _agent_name(line.name) != line.name:
        raise ValidationError(f"Agent name {line.name!r} has spaces around it.")
    _agent_role(line.role)
    model = line.settings.model
    if model is not None and ":" not in model:
        raise ValidationError(f"Agent model {model!r} must be a provider:model spec.")
    _check_compaction(line.settings.compaction, conversations)


def _check_compaction(compaction: Mapping[str, Any], conversations: ConversationService) -> None:
    known = {f.name for f in dataclasses.fields(conversations.defaults)}
    unknown = sorted(set(compaction) - known)
    if unknown:
        raise ValidationError(f"Unknown compaction settings {unknown}.")
    dataclasses.replace(conversations.defaults, **compaction)  # raises ValidationError if bad


# -- import ----------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What an import did; ``vectors`` says whether the file's vectors were used."""

    lines: int = 0
    agents_created: int = 0
    agents_merged: int = 0
    profiles_imported: int = 0
    profiles_kept: int = 0  # an existing non-empty profile left as it was
    memories_imported: int = 0
    memories_duplicate: int = 0
    vectors: Literal["reused", "re-embedded"] = "reused"
    memories_embedded: int = 0  # imported memories embedded by this hive's model
    memories_pending: int = 0  # imported without a vector (the embedder failed): backfilled later
    trashed_imported: int = 0  # memories put into the trash (a file from ``export --history``)
    trashed_skipped: int = 0  # already in the trash (same author, text and deletion time)
    conversations_imported: int = 0
    conversations_skipped: int = 0  # already in the hive (same agent, start time and title)
    messages: int = 0
    summaries: int = 0


class Importer:
    """Imports an export file into a hive's store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingService,
        conversations: ConversationService,
        archive: ArchiveService,
        *,
        profile_budget: int | None = None,
    ) -> None:
        self.store = store
        self.embeddings = embeddings
        self.conversations = conversations
        self.archive = archive  # the one write path: dedup, vectors, events
        self.profile_budget = profile_budget  # a profile over it is refused unless allowed

    def validate(self, path: str | Path, *, allow_over_budget: bool = False) -> _Reader:
        """Check the whole file; raises ValidationError listing each problem by line."""
        reader = _Reader(Path(path), self.conversations)
        reader.profile_budget = None if allow_over_budget else self.profile_budget
        errors: list[str] = []
        for _ in reader.items(errors):
            pass
        if errors:
            more = " (and maybe more)" if len(errors) >= MAX_ERRORS else ""
            raise ValidationError(
                f"{path} is not a valid hivekeep export{more}; nothing was imported:\n  "
                + "\n  ".join(errors)
            )
        return reader

    def run(
        self,
        path: str | Path,
        *,
        replace_profiles: bool = False,
        allow_over_budget: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        reader = self.validate(path, allow_over_budget=allow_over_budget)
        assert reader.header is not None  # validate() guarantees it
        header = reader.header.embedding
        space = self.embeddings.space
        reuse = header is not None and EmbeddingSpace(header.model, header.dimension) == space
        run = _Run(self, reader, reuse, replace_profiles)
        run.embed_all()  # before the transaction: the slow part, while nobody waits on us
        # one transaction; its events are published only once it has committed
        with self.archive.events.deferred(), self.store.transaction():
            for number, item in reader.items(None):
                run.apply(number, item)
                if progress is not None:
                    progress(number, reader.lines)
            run.flush()
        run.report.lines = reader.lines
        return run.report


class _Run:
    """The writing pass of one import."""

    def __init__(self, importer: Importer, reader: _Reader, reuse: bool, replace: bool) -> None:
        self.importer = importer
        self.store = importer.store
        self.reader = reader
        self.reuse = reuse
        self.replace_profiles = replace
        embedding = reader.header.embedding if reader.header else None
        self.dimension = embedding.dimension if embedding else 0
        self.report = ImportReport(vectors="reused" if reuse else "re-embedded")
        self.agents: dict[str, int] = {}  # lower-case name -> id in this hive
        self.existing: dict[int, set[tuple[str, str]]] = {}  # agent id -> (created_at, title)
        self.messages: dict[str, int] = {}  # message key -> new id, for memories' source_message
        self.batch: list[tuple[int, MemoryLine]] = []  # (line number, memory)
        self.fresh: dict[int, Vector | None] = {}  # line number -> this hive's vector (embed_all)

    def apply(self, number: int, item: Item) -> None:
        if isinstance(item, AgentLine):
            self._agent(item)
        elif isinstance(item, ProfileLine):
            self._profile(item)
        elif isinstance(item, _Block):
            self._conversation(item)
        elif isinstance(item, TrashedLine):
            self._trashed(number, item)
        elif isinstance(item, MemoryLine):
            self.batch.append((number, item))
            if len(self.batch) >= IMPORT_BATCH:
                self.flush()

    def embed_all(self) -> None:
        """Embed, with this hive's model, every memory whose exported vector cannot be reused.

        Done before the writing pass opens its transaction, since writers elsewhere wait while
        it is open. Holds one vector per such memory until the write (None where the embedder
        failed: that memory is stored pending and backfilled later).
        """
        todo: list[tuple[int, MemoryLine]] = []
        for number, item in self.reader.items(None):
            if isinstance(item, MemoryLine) and not (self.reuse and item.vector):
                todo.append((number, item))
            if len(todo) >= IMPORT_BATCH:
                self._embed(todo)
                todo = []
        self._embed(todo)

    def _embed(self, lines: list[tuple[int, MemoryLine]]) -> None:
        if not lines:
            return
        drafts = [  # embedding reads content and subject only
            NewMemory(agent_id=0, content=m.content, category=m.category, subject=m.subject)
            for _, m in lines
        ]
        vectors = self.importer.archive.embed(drafts)
        for (number, _), vector in zip(lines, vectors, strict=True):
            self.fresh[number] = vector

    def _agent(self, line: AgentLine) -> None:
        try:
            agent = self.store.get_agent(line.name)
        except NotFound:
            agent = self.store.create_agent(line.name, line.role)
            self.report.agents_created += 1
            current = AgentSettings()
        else:
            self.report.agents_merged += 1
            if not agent.role.strip() and line.role.strip():
                agent = self.store.update_agent(agent.id, role=line.role)
            current = self.store.get_agent_settings(agent.id)
        self.agents[line.name.lower()] = agent.id
        merged = AgentSettings(  # what the hive already says wins
            model=current.model or line.settings.model,
            compaction={**line.settings.compaction, **current.compaction},
            compacting_model=current.compacting_model or line.settings.compacting_model,
            extraction_model=current.extraction_model or line.settings.extraction_model,
        )
        if merged != current:
            try:
                _check_compaction(merged.compaction, self.importer.conversations)
            except ValidationError as exc:
                log.warning("Agent %s keeps its compaction settings: %s", agent.name, exc)
                merged = dataclasses.replace(merged, compaction=current.compaction)
            self.store.save_agent_settings(agent.id, merged)

    def _profile(self, line: ProfileLine) -> None:
        agent_id = self.agents[line.agent.lower()]
        current = self.store.get_profile(agent_id)
        if line.history and current.revision == 0 and not current.text and self._history(line):
            return
        if not line.text.strip() or current.text == line.text:
            return
        if current.text.strip() and not self.replace_profiles:
            self.report.profiles_kept += 1
            return
        # verbatim, even over this hive's budget: an import must not lose part of a profile
        self.store.save_profile(
            agent_id,
            line.text,
            count_tokens(line.text),
            expected_revision=current.revision,
            manual=True,
            written=Change(Actor.IMPORT, Operation.IMPORT),
        )
        self.report.profiles_imported += 1

    def _history(self, line: ProfileLine) -> bool:
        """A profile never written takes the file's state and versions as they were; False
        (nothing written) when it has been written after all."""
        agent_id = self.agents[line.agent.lower()]
        versions = [
            ProfileVersion(
                agent_id, v.version, v.text, v.tokens, v.changed_at, v.changed_by, v.operation
            )
            for v in line.history or []
        ]
        revision = line.revision if line.revision is not None else max(v.version for v in versions)
        profile = ProfileRecord(
            agent_id,
            line.text,
            count_tokens(line.text),
            revision,
            line.last_rewrite_at,
            line.manually_edited_at,
            line.updated_at,
        )
        try:
            self.store.put_profile_history(profile, versions)
        except ConflictError:
            return False
        if line.text.strip():
            self.report.profiles_imported += 1
        return True

    def _trashed(self, number: int, line: TrashedLine) -> None:
        vector = (
            decode_vector(line.vector, self.dimension)
            if self.reuse and line.vector
            else self.fresh.pop(number, None)
        )
        memory_id = self.store.put_trashed_memory(
            self._memory(line), vector, deleted_at=line.deleted_at, deleted_by=line.deleted_by
        )
        if memory_id is None:
            self.report.trashed_skipped += 1
            return
        self.store.put_memory_versions(memory_id, _versions(memory_id, line.history or []))
        self.report.trashed_imported += 1

    def _conversation(self, block: _Block) -> None:
        agent_id = self.agents[block.conversation.agent.lower()]
        if agent_id not in self.existing:
            self.existing[agent_id] = {
                (c.created_at, c.title) for c in self.store.list_conversations(agent_id)
            }
        identity = (block.conversation.created_at, block.conversation.title)
        if identity in self.existing[agent_id]:
            self.report.conversations_skipped += 1
            return
        restored = self.store.restore_conversation(agent_id, block.restored or _restored(block))
        self.existing[agent_id].add(identity)
        for (_, message), new_id in zip(block.messages, restored.message_ids, strict=True):
            if message.key in self.reader.source_messages:
                self.messages[message.key] = new_id
        self.report.conversations_imported += 1
        self.report.messages += len(restored.message_ids)
        self.report.summaries += len(restored.summary_ids)

    def flush(self) -> None:
        """Write the batch through the archive's write path (dedup, events), with the export's
        vectors where they are of this hive's model, else those ``embed_all`` made."""
        batch, self.batch = self.batch, []
        if not batch:
            return
        vectors: list[Vector | None] = [
            decode_vector(m.vector, self.dimension)
            if self.reuse and m.vector
            else self.fresh.pop(number, None)
            for number, m in batch
        ]
        results = self.importer.archive.memorize_many(
            [self._memory(m) for _, m in batch], vectors=vectors
        )
        for (_, m), vector, result in zip(batch, vectors, results, strict=True):
            if result.duplicate:
                self.report.memories_duplicate += 1
                continue
            # the file's history as it was, or (none in the file) version 1 written by the import
            memory = result.memory
            versions = _versions(memory.id, m.history) if m.history else [_imported(memory)]
            self.store.put_memory_versions(memory.id, versions)
            self.report.memories_imported += 1
            if vector is None:
                self.report.memories_pending += 1
            elif not (self.reuse and m.vector):
                self.report.memories_embedded += 1

    def _memory(self, m: MemoryLine) -> NewMemory:
        return NewMemory(
            agent_id=PERSON if m.author_deleted else self.agents[m.author.lower()],
            author_name=m.author if m.author_deleted else None,
            content=m.content,
            category=m.category,
            subject=m.subject,
            importance=m.importance,
            scope=m.scope,
            source_context=m.source_context,
            source=m.source,
            source_message_id=self.messages.get(m.source_message or ""),
            created_at=m.created_at,
            updated_at=m.updated_at,
            retrieval_count=m.retrieval_count,
            last_retrieved_at=m.last_retrieved_at,
        )


def _versions(memory_id: int, versions: list[MemoryVersionInfo]) -> list[MemoryVersion]:
    return [
        MemoryVersion(
            memory_id,
            v.version,
            v.content,
            v.category,
            v.subject,
            v.importance,
            v.scope,
            v.changed_at,
            v.changed_by,
            v.operation,
        )
        for v in versions
    ]


def _imported(memory: MemoryRecord) -> MemoryVersion:
    """Version 1 of a memory an import wrote: who wrote it first is not known here."""
    return MemoryVersion(
        memory.id,
        1,
        memory.content,
        memory.category,
        memory.subject,
        memory.importance,
        memory.scope,
        now_timestamp(),
        Actor.IMPORT,
        Operation.CREATE,
    )
