"""The storage interface for conversations: messages, summaries, maintenance state and leases.

Split from ``base.py`` because it is a separate concern (the agent loop and compaction), but every
backend implements both: ``Store`` extends ``ConversationStore``. The fold and merge writes are
single transactions on purpose: a summary and the messages (or summaries) it replaces change
together or not at all, so a crash can never leave a batch both summarised and raw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hivekeep.errors import ValidationError

MaintenanceStatus = Literal["pending", "done", "failed"]


@dataclass(frozen=True)
class ToolCallRecord:
    """A tool call as stored on an assistant message (arguments as the model sent them)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ConversationRecord:
    id: int
    agent_id: int
    title: str
    created_at: str
    updated_at: str
    deleted_at: str | None = None  # set while it is in the trash (``delete_conversation``)


@dataclass(frozen=True)
class NewMessage:
    role: str
    content: str
    tokens: int
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    speaker: str | None = None
    is_compaction_record: bool = False
    record: Mapping[str, Any] | None = None  # a compaction record's details (JSON)
    created_at: str | None = None  # None: now


@dataclass(frozen=True)
class MessageRecord:
    id: int
    conversation_id: int
    role: str
    content: str
    tokens: int
    tool_calls: tuple[ToolCallRecord, ...]
    tool_call_id: str | None
    tool_name: str | None
    speaker: str | None
    summary_id: int | None  # None: still raw
    is_compaction_record: bool
    record: dict[str, Any] | None
    created_at: str


@dataclass(frozen=True)
class NewSummary:
    text: str
    tokens: int
    first_at: str
    last_at: str
    message_count: int
    first_message_id: int | None = None
    last_message_id: int | None = None
    depth: int = 0
    source_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class SummaryRecord:
    id: int
    conversation_id: int
    agent_id: int
    text: str
    tokens: int
    first_at: str
    last_at: str
    message_count: int
    first_message_id: int | None
    last_message_id: int | None
    depth: int
    source_ids: tuple[int, ...]
    in_context: bool
    maintenance_status: MaintenanceStatus
    maintenance_attempts: int
    maintenance_error: str | None
    created_at: str

    @property
    def compressed(self) -> bool:
        """Merged from other summaries (shown to the model as ``[compressed]``)."""
        return self.depth > 0


@dataclass(frozen=True)
class RestoredMessage:
    """A message recreated as it was exported; relations are positions in the same conversation.

    ``summary``: the summary (position in ``RestoredConversation.summaries``) it is folded into.
    ``record_summaries``: keys of ``message.record`` that list summary ids (a compaction record's
    ``summary_ids``), as positions; the store writes the new ids there.
    """

    message: NewMessage
    summary: int | None = None
    record_summaries: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class RestoredSummary:
    """A summary recreated as it was exported; message and source relations are positions."""

    text: str
    tokens: int
    first_at: str
    last_at: str
    message_count: int
    created_at: str
    first_message: int | None = None
    last_message: int | None = None
    depth: int = 0
    sources: tuple[int, ...] = ()  # positions of earlier summaries it was merged from
    in_context: bool = True
    maintenance_status: MaintenanceStatus = "pending"
    maintenance_attempts: int = 0
    maintenance_error: str | None = None


@dataclass(frozen=True)
class RestoredConversation:
    title: str
    created_at: str
    updated_at: str
    messages: tuple[RestoredMessage, ...] = ()
    summaries: tuple[RestoredSummary, ...] = ()

    def check_positions(self) -> None:
        """Every relation points inside the conversation (a merge's sources: earlier summaries);
        checked by every backend before it writes anything."""
        messages, summaries = len(self.messages), len(self.summaries)

        def check(position: int | None, size: int, what: str) -> None:
            if position is not None and not 0 <= position < size:
                raise ValidationError(
                    f"Conversation {self.title!r}: {what} points at position {position}, "
                    f"outside its {size}."
                )

        for m in self.messages:
            check(m.summary, summaries, "a message's summary")
            for positions in m.record_summaries.values():
                for position in positions:
                    check(position, summaries, "a compaction record's summary")
        for index, s in enumerate(self.summaries):
            check(s.first_message, messages, "a summary's first message")
            check(s.last_message, messages, "a summary's last message")
            for position in s.sources:
                check(position, index, "a merged summary's source (an earlier summary)")


@dataclass(frozen=True)
class Restored:
    """The new ids, position for position."""

    conversation: ConversationRecord
    message_ids: tuple[int, ...]
    summary_ids: tuple[int, ...]


@dataclass(frozen=True)
class AgentSettings:
    """Per-agent overrides stored with the agent: model specs and compaction numbers.

    ``model`` chats; ``compacting_model`` writes and merges summaries and ``extraction_model``
    runs the maintenance call, bootstrap and regenerate (None: the hive's COMPACTING_MODEL /
    MEMORY_EXTRACTION_MODEL, else the agent's chat model). ``context_window``: the window, in
    tokens, of the agent's chat model when it is named by a spec (None: HIVEKEEP_CONTEXT_WINDOW,
    else the model's known window); stored in the settings' JSON, so no migration.
    """

    model: str | None = None
    compaction: dict[str, Any] = field(default_factory=dict)
    compacting_model: str | None = None
    extraction_model: str | None = None
    context_window: int | None = None
    secrets: str | None = None  # this agent's credential policy (None: the hive's HIVEKEEP_SECRETS)
    review: str | None = None  # which of its own writes wait for a person: off, shared, all

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "compaction": self.compaction,
            "compacting_model": self.compacting_model,
            "extraction_model": self.extraction_model,
            "context_window": self.context_window,
            "secrets": self.secrets,
            "review": self.review,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentSettings:
        return cls(
            model=data.get("model"),
            compaction=dict(data.get("compaction", {})),
            compacting_model=data.get("compacting_model"),
            extraction_model=data.get("extraction_model"),
            context_window=data.get("context_window"),
            secrets=data.get("secrets"),
            review=data.get("review"),
        )


class ConversationStore(Protocol):
    """Conversations and their compaction state. Each method is one transaction."""

    # per-agent settings -----------------------------------------------------------------------
    def get_agent_settings(self, agent_id: int) -> AgentSettings: ...

    def save_agent_settings(self, agent_id: int, settings: AgentSettings) -> None: ...

    # conversations ----------------------------------------------------------------------------
    def create_conversation(self, agent_id: int, title: str) -> ConversationRecord: ...

    def get_conversation(self, conversation_id: int) -> ConversationRecord:
        """Raises NotFound."""
        ...

    def list_conversations(
        self, agent_id: int, *, deleted: bool = False
    ) -> list[ConversationRecord]:
        """Newest activity first; ``deleted``: the ones in the trash instead, newest deletion
        first."""
        ...

    def rename_conversation(self, conversation_id: int, title: str) -> ConversationRecord:
        """Set the title (``updated_at`` is activity and stays). Raises NotFound."""
        ...

    def set_conversation_deleted(
        self, conversation_id: int, deleted_at: str | None
    ) -> ConversationRecord:
        """Move the conversation to the trash (a timestamp) or back out of it (None); its
        messages and summaries are untouched either way. Raises NotFound."""
        ...

    def purge_conversations(self, deleted_before: str) -> int:
        """Erase, with their messages and summaries, the conversations trashed before this
        time; returns how many."""
        ...

    def restore_conversation(self, agent_id: int, conversation: RestoredConversation) -> Restored:
        """Recreate an exported conversation with its messages and summaries, in one transaction.

        Timestamps, fold and merge relations and maintenance state are kept as given (an import
        into another hive or backend). Raises ValidationError, writing nothing, when a position is
        out of range or a summary's source is not an earlier summary.
        """
        ...

    # messages ---------------------------------------------------------------------------------
    def add_messages(
        self, conversation_id: int, messages: Sequence[NewMessage]
    ) -> list[MessageRecord]:
        """Append in order, in one transaction; bumps the conversation's ``updated_at``."""
        ...

    def raw_messages(self, conversation_id: int) -> list[MessageRecord]:
        """Messages not yet folded into a summary, oldest first, compaction records excluded."""
        ...

    def list_messages(
        self, conversation_id: int, *, after_id: int = 0, limit: int = 200
    ) -> list[MessageRecord]:
        """Every message (folded and records included) with id > ``after_id``, oldest first."""
        ...

    def summary_messages(self, summary_ids: Sequence[int]) -> list[MessageRecord]:
        """The messages folded into these summaries, oldest first."""
        ...

    def delete_raw_message(self, conversation_id: int, message_id: int) -> None:
        """Delete a message not yet folded (a framework session taking its last item back).

        Raises NotFound when it is not a message of this conversation, ConflictError (deleting
        nothing) when it is folded into a summary or is a compaction record: what a summary or
        the archive already drew from it cannot be taken back.
        """
        ...

    def set_message_record(
        self, conversation_id: int, message_id: int, record: Mapping[str, Any] | None
    ) -> None:
        """Replace a message's ``record`` (the JSON an adapter keeps with it); NotFound when it
        is not a message of this conversation."""
        ...

    # summaries --------------------------------------------------------------------------------
    def fold(
        self, conversation_id: int, summary: NewSummary, message_ids: Sequence[int]
    ) -> SummaryRecord:
        """Insert a depth-0 summary and mark ``message_ids`` folded into it, atomically.

        Raises ConflictError (writing nothing) when any of them is not a raw message of this
        conversation any more: another compaction got there first.
        """
        ...

    def merge(
        self, conversation_id: int, summary: NewSummary, source_ids: Sequence[int]
    ) -> SummaryRecord:
        """Insert a merged summary and take its sources out of context, atomically.

        The merged row needs no maintenance of its own (its sources had theirs), so it is stored
        ``done``. Raises ConflictError when a source is not an in-context summary here any more.
        """
        ...

    def context_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        """In-context summaries, oldest first (by the first message they cover)."""
        ...

    def list_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        """Every summary of the conversation, in context or merged away, by id (for export)."""
        ...

    def unmaintained_summaries(self, agent_id: int, max_attempts: int) -> list[SummaryRecord]:
        """Depth-0 summaries whose maintenance is pending or failed fewer than ``max_attempts``
        times, oldest first, across all the agent's conversations."""
        ...

    def record_maintenance(
        self, summary_ids: Sequence[int], status: MaintenanceStatus, error: str | None
    ) -> None:
        """Set the status of these summaries and count one more attempt."""
        ...

    # meta and leases --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        """Take the lease ``name`` for ``holder`` unless someone else holds a live one.

        Returns None on success, else the current holder. A lease past its expiry is free; so is
        one whose holder, on this host, is a process that no longer exists (a crash).
        """
        ...

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease back (only if ``holder`` still holds it)."""
        ...
