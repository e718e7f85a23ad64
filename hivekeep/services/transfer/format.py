"""The export file's format: its constants, one pydantic model per line type, and the keys and
vector encoding that let records name each other without database ids (docs/storage.md, "Export
and import")."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, StringConstraints

from hivekeep.core.bounds import MAX_COUNT, MAX_IMPORTED_VERSION, problem
from hivekeep.core.limits import MAX_CONTENT_CHARS, MAX_SUBJECT_CHARS
from hivekeep.core.text import (
    check_not_future,
    clean_text,
    parse_timestamp,
)
from hivekeep.errors import ValidationError
from hivekeep.services.chat import MAX_MESSAGE_CHARS
from hivekeep.services.conversation import MAX_TITLE_CHARS
from hivekeep.store.base import (
    Vector,
)
from hivekeep.types import Actor, Category, Operation, Scope, Source

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
# The longest line read: far above any line an export writes (a memory with its vector and kept
# versions, a message of MAX_MESSAGE_CHARS), so a longer one is not an export's.
MAX_LINE_BYTES = 16 * 1024 * 1024

Progress = Callable[[int, int], None]  # (lines done, lines in the file)

# -- the line models -----------------------------------------------------------------------------

# The memorize tool's limits (core/limits.py) apply to imported memories too.
MAX_SOURCE_CONTEXT_CHARS = 2000
MAX_NAME_CHARS = 200  # a tool call's id or name
MAX_SPEAKER_CHARS = 100  # as ``Agent.chat``'s speaker


_STORED_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _timestamp_shape(value: str) -> str:
    """The stored format, said in words (a hand-written file gets an example, not a regex)."""
    if not _STORED_TIMESTAMP.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a timestamp as an export writes it: UTC with six decimals and a "
            "Z, like 2024-05-01T10:00:00.000000Z"
        )
    return value


def _real_timestamp(value: str) -> str:
    """The stored format is not enough: "2024-02-31T00:00:00.000000Z" must not get in."""
    try:
        parse_timestamp(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None
    return value


def _not_future(value: str) -> str:
    """No date of a hive lies ahead: a far-future one would sort a memory newest, or keep a
    trashed one from ever expiring. A day of clock skew is allowed (``MAX_FUTURE``)."""
    try:
        return check_not_future(value)
    except ValidationError:
        raise ValueError(
            f"{value!r} is more than a day ahead of now; a hive holds no date in the future"
        ) from None


def _clean(value: str) -> str:
    """Control characters as on every write (``clean_text``): NUL refused, the others dropped."""
    try:
        return clean_text(value, "text")
    except ValidationError as exc:
        raise ValueError(str(exc).rstrip(".")) from None


def _scrub(value: str) -> str:
    """A transcript's text (messages, summaries, titles, speakers): control characters dropped,
    NUL too (a conversation is kept as it went, so a stray NUL is not worth refusing it)."""
    return clean_text(value.replace("\x00", ""))


def _within(low: int, high: int) -> Callable[[object], int]:
    """An integer field's check: a JSON integer in ``low..high``; not true/false, not 5.0, not
    "5" (an export writes integers), never a number its column cannot hold (``core/bounds``)."""

    def check(value: object) -> int:
        wrong = problem(value, low, high)
        if wrong is not None:
            raise ValueError(wrong)
        assert isinstance(value, int)
        return value

    return check


Count = Annotated[int, PlainValidator(_within(0, MAX_COUNT))]  # tokens, counts, attempts
Positive = Annotated[int, PlainValidator(_within(1, MAX_COUNT))]
# a kept version (memory: from 1) or revision (profile: from 0), leaving room for later ones
Version = Annotated[int, PlainValidator(_within(1, MAX_IMPORTED_VERSION))]
Revision = Annotated[int, PlainValidator(_within(0, MAX_IMPORTED_VERSION))]
Importance = Annotated[int, PlainValidator(_within(1, 10))]
Timestamp = Annotated[
    str,
    AfterValidator(_timestamp_shape),
    AfterValidator(_real_timestamp),
    AfterValidator(_not_future),  # at most a day ahead of now
]
Text = Annotated[str, StringConstraints(min_length=1)]
Content = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CONTENT_CHARS),
    AfterValidator(_clean),
]
Subject = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_SUBJECT_CHARS), AfterValidator(_clean)
]
Said = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_CHARS), AfterValidator(_scrub)]
Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS), AfterValidator(_scrub)]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingInfo(_Line):
    model: Text
    dimension: Positive


class HeaderLine(_Line):
    type: Literal["header"]
    format: Literal["hivekeep-jsonl"]
    version: Positive
    hivekeep_version: str
    exported_at: Timestamp
    embedding: EmbeddingInfo | None
    agent: str | None = None  # set when one agent was exported (``--agent``)


class SettingsInfo(_Line):
    model: str | None = None
    compaction: dict[str, Any] = Field(default_factory=dict)
    compacting_model: str | None = None
    extraction_model: str | None = None
    context_window: int | None = Field(default=None, ge=1)
    # read, never applied: a file must not loosen the importing hive's credential policy or
    # review setting
    secrets: Literal["redact", "refuse", "allow"] | None = None
    review: Literal["off", "shared", "all"] | None = None  # read, never applied, as secrets


class AgentLine(_Line):
    type: Literal["agent"]
    name: Text
    role: str = ""
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    settings: SettingsInfo = Field(default_factory=SettingsInfo)


class ProfileVersionInfo(_Line):
    """One kept version of a profile (``export --history``)."""

    version: Revision
    text: Annotated[str, AfterValidator(_clean)]  # its budget is checked by the reader
    tokens: Count | None = None  # informational: recounted on import
    changed_at: Timestamp
    changed_by: Actor
    operation: Operation


class MemoryVersionInfo(_Line):
    """One kept version of a memory (``export --history``)."""

    version: Version
    content: Content
    category: Category
    subject: Subject | None = None
    importance: Importance | None = None
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
    tokens: Count | None = None  # informational: recounted on import
    revision: Revision | None = None
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
    subject: Subject | None = None
    importance: Importance | None = None
    scope: Scope = Scope.PRIVATE
    source: Source = Source.EXPLICIT
    source_context: (
        Annotated[
            str, StringConstraints(max_length=MAX_SOURCE_CONTEXT_CHARS), AfterValidator(_clean)
        ]
        | None
    ) = None
    source_message: str | None = None  # a message's key; dropped if that line is not in the file
    retrieval_count: Count = 0
    last_retrieved_at: Timestamp | None = None
    created_at: Timestamp
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
    title: Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS), AfterValidator(_scrub)] = (
        ""
    )
    created_at: Timestamp
    updated_at: Timestamp


class ToolCallInfo(_Line):
    id: Name
    name: Name
    arguments: Said


class MessageLine(_Line):
    type: Literal["message"]
    conversation: Text
    key: Text
    role: Literal["system", "user", "assistant", "tool"]
    content: Said = ""
    tokens: Count = 0
    tool_calls: list[ToolCallInfo] = Field(default_factory=list)
    tool_call_id: Name | None = None
    tool_name: Name | None = None
    speaker: (
        Annotated[str, StringConstraints(max_length=MAX_SPEAKER_CHARS), AfterValidator(_scrub)]
        | None
    ) = None
    summary: str | None = None  # the key of the summary it is folded into
    compaction_record: bool = False
    record: dict[str, Any] | None = None
    created_at: Timestamp


class SummaryLine(_Line):
    type: Literal["summary"]
    conversation: Text
    key: Text
    text: Said
    tokens: Count
    first_at: Timestamp
    last_at: Timestamp
    message_count: Count
    first_message: str | None = None
    last_message: str | None = None
    depth: Count = 0
    sources: list[str] = Field(default_factory=list)  # keys of the summaries merged into it
    in_context: bool = True
    maintenance_status: Literal["pending", "done", "failed"] = "pending"
    maintenance_attempts: Count = 0
    maintenance_error: Said | None = None
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
LINE: pydantic.TypeAdapter[AnyLine] = pydantic.TypeAdapter(AnyLine)
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
