"""Remember now: the maintenance call over messages given to it, not waiting for compaction.

The messages are stored in a conversation of the agent and folded into batches whose summary is a
short label written here (no summariser call: the maintenance call reads the messages
themselves), then each batch gets its maintenance call, through the one write path. The same
steps serve the threads kept elsewhere (a Claude Code session, an imported chat): their batches
wait as ``pending`` until ``catch_up`` (or ``hive.resume()``) runs them, oldest first, so a crash
or an outage leaves nothing half done and a rerun goes on where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hivekeep.core.chats import Chat
from hivekeep.core.text import now_timestamp
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ValidationError
from hivekeep.services.archive import ArchiveService, Memorized
from hivekeep.services.chat import message_tokens
from hivekeep.services.conversation import ConversationService
from hivekeep.services.llms import LLMNotConfigured, LLMResolver
from hivekeep.services.maintenance import MaintenanceOutcome, MaintenanceService
from hivekeep.services.profile import ProfileService
from hivekeep.services.threads import Synced, ThreadService
from hivekeep.store.base import AgentRecord, MemoryChanges, MemoryRecord, NewMemory, Store
from hivekeep.store.conversations import MessageRecord, NewMessage, NewSummary, SummaryRecord
from hivekeep.store.leases import AgentLease

BATCH_SHARE = 0.4  # of the maintenance model's window one batch of messages may fill
DEFAULT_WINDOW = 8192  # the batch size of a thread stored while no model is configured
REMEMBER_LABEL = "Messages given to the agent to remember now."


@dataclass(frozen=True)
class Remembered:
    """What one ``remember`` did to the agent's memory."""

    conversation_id: int
    status: str  # "done" | "failed" (the batch stays pending and is retried later)
    added: tuple[MemoryRecord, ...] = ()  # new memories
    reworded: tuple[MemoryRecord, ...] = ()  # existing memories changed to the new wording
    left_alone: tuple[MemoryRecord, ...] = ()  # already known: the existing memory kept
    consolidated: int = 0  # near twins merged away or retired by the same call
    profile_updated: bool = False
    notes: tuple[str, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        def brief(memories: tuple[MemoryRecord, ...]) -> list[dict[str, Any]]:
            return [
                {"id": m.id, "content": m.content, "category": m.category.value} for m in memories
            ]

        return {
            "conversation_id": self.conversation_id,
            "status": self.status,
            "added": brief(self.added),
            "reworded": brief(self.reworded),
            "left_alone": brief(self.left_alone),
            "consolidated": self.consolidated,
            "profile_updated": self.profile_updated,
            "notes": list(self.notes),
            "error": self.error,
        }


@dataclass(frozen=True)
class CaughtUp:
    """What ``catch_up`` ran: one maintenance outcome per batch, oldest first."""

    outcomes: tuple[MaintenanceOutcome, ...] = ()
    left: int = 0  # batches still waiting (a failure stops the run: the rest wait for the next)

    @property
    def memories_added(self) -> int:
        return sum(o.memories_added for o in self.outcomes)


class _Noted(ArchiveService):
    """The hive's archive (the same store, embedder, dedup rule and events), noting what each
    write of one maintenance call did, so ``remember`` can say it."""

    def __init__(self, archive: ArchiveService) -> None:
        self.__dict__.update(archive.__dict__)
        self.written: list[Memorized] = []
        self.changed: dict[int, MemoryRecord] = {}

    def memorize_many(self, memories: Sequence[NewMemory], **options: Any) -> list[Memorized]:
        results = super().memorize_many(memories, **options)
        self.written.extend(results)
        return results

    def update(
        self, agent_id: int, memory_id: int, changes: MemoryChanges, **options: Any
    ) -> MemoryRecord:
        updated = super().update(agent_id, memory_id, changes, **options)
        self.changed[memory_id] = updated
        return updated


class RememberService:
    def __init__(
        self,
        store: Store,
        archive: ArchiveService,
        profiles: ProfileService,
        conversations: ConversationService,
        maintenance: MaintenanceService,
        llms: LLMResolver,
        threads: ThreadService,
    ) -> None:
        self.store = store
        self.threads = threads
        self.archive = archive
        self.profiles = profiles
        self.conversations = conversations
        self.maintenance = maintenance
        self.llms = llms

    def remember(
        self, agent: AgentRecord, messages: Sequence[NewMessage], title: str
    ) -> Remembered:
        """The maintenance call, now, over ``messages``, stored first in a new conversation
        titled ``title``; under the agent's lease (``AgentBusy``). Without a model, raises
        ``LLMNotConfigured`` (naming HIVEKEEP_LLM) and stores nothing."""
        llm = self.llms.for_purpose(agent.id, "maintenance", what="remember")
        if not messages:
            raise ValidationError("remember needs at least one message with some text.")
        with AgentLease(self.store, agent.id):  # busy: nothing stored, nothing left unmined
            conversation_id = self.conversations.create(agent.id, title).id
            self.store.add_messages(conversation_id, messages)
            batches = self.fold(conversation_id, REMEMBER_LABEL, llm.context_window)
            noted = _Noted(self.archive)
            service = MaintenanceService(self.store, noted, self.profiles)
            outcomes = [service.run(agent.id, agent.name, llm, [s]) for s in batches]
        failed = [o for o in outcomes if o.status != "done"]
        added = tuple(r.memory for r in noted.written if not r.duplicate)
        reworded = {m.id: m for m in noted.changed.values()}
        reworded |= {
            r.memory.id: r.memory
            for r in noted.written
            if r.duplicate and getattr(r, "reworded", False)  # the write path's "same fact"
        }
        known = {r.memory.id: r.memory for r in noted.written if r.duplicate}
        return Remembered(
            conversation_id=conversation_id,
            status="failed" if failed else "done",
            added=added,
            reworded=tuple(reworded.values()),
            left_alone=tuple(m for i, m in known.items() if i not in reworded),
            consolidated=sum(o.memories_consolidated for o in outcomes),
            profile_updated=any(o.profile_updated for o in outcomes),
            notes=tuple(n for o in outcomes for n in o.notes),
            error=failed[0].error if failed else None,
        )

    def check_model(self, agent_id: int, what: str = "remember") -> None:
        """Raise ``LLMNotConfigured`` (naming HIVEKEEP_LLM and ``what``) before anything is
        stored."""
        self.llms.for_purpose(agent_id, "maintenance", what=what)

    def batch_window(self, agent_id: int) -> int:
        """The window batches are sized for: the maintenance model's, or a default without one
        (the batches then wait for a model)."""
        try:
            return self.llms.for_purpose(agent_id, "maintenance").context_window
        except LLMNotConfigured:
            return DEFAULT_WINDOW

    def fold(self, conversation_id: int, label: str, window: int) -> list[SummaryRecord]:
        """Fold the conversation's raw messages into batches waiting for maintenance, each within
        ``BATCH_SHARE`` of ``window`` (a longer message is a batch of its own)."""
        limit = max(1, int(BATCH_SHARE * window))
        folded = []
        for batch in _batches(self.store.raw_messages(conversation_id), limit):
            summary = NewSummary(
                text=label,
                tokens=count_tokens(label),
                first_at=batch[0].created_at,
                last_at=batch[-1].created_at,
                message_count=len(batch),
                first_message_id=batch[0].id,
                last_message_id=batch[-1].id,
            )
            folded.append(self.store.fold(conversation_id, summary, [m.id for m in batch]))
        return folded

    def keep_chat(
        self, agent_id: int, source: str, chat: Chat, *, fold: bool = True, label: str = ""
    ) -> Synced:
        """Store the messages of ``chat`` not stored yet (``ThreadService.sync``), each at its
        time (else the chat's); with ``fold``, fold them into batches waiting for maintenance
        (summary ``label``). No model needed: the batches then wait for one."""
        first = chat.created_at or next((m.created_at for m in chat.messages if m.created_at), None)
        first = first or now_timestamp()
        synced = self.threads.sync(
            agent_id,
            source,
            chat.key,
            chat.title,
            [
                NewMessage(
                    m.role, m.content, message_tokens(m.content), created_at=m.created_at or first
                )
                for m in chat.messages
            ],
            created_at=first,
            updated_at=chat.updated_at
            or next((m.created_at for m in reversed(chat.messages) if m.created_at), first),
        )
        if fold:
            label = label or f"A conversation kept from {source}."
            self.fold(synced.conversation_id, label, self.batch_window(agent_id))
        return synced

    def catch_up(self, agent: AgentRecord) -> CaughtUp:
        """Every batch of the agent still waiting, one maintenance call each, oldest first (by
        when its messages were written, so memories keep their dates); under the agent's lease
        (``AgentBusy``). Stops at the first failure: what is left waits for the next run."""
        llm = self.llms.for_purpose(agent.id, "maintenance")
        with AgentLease(self.store, agent.id):
            waiting = sorted(self.maintenance.pending(agent.id), key=lambda s: (s.first_at, s.id))
            outcomes: list[MaintenanceOutcome] = []
            for summary in waiting:
                outcome = self.maintenance.run(agent.id, agent.name, llm, [summary])
                outcomes.append(outcome)
                if outcome.status != "done":
                    break
        return CaughtUp(tuple(outcomes), len(waiting) - sum(o.status == "done" for o in outcomes))


def _batches(messages: Sequence[MessageRecord], limit: int) -> list[list[MessageRecord]]:
    batches: list[list[MessageRecord]] = []
    used = 0
    for message in messages:
        if not batches or used + message.tokens > limit:
            batches.append([])
            used = 0
        batches[-1].append(message)
        used += message.tokens
    return batches
