"""The review inbox: an agent's own writes held for a person (``agent.configure(review=...)``).

``off``: nothing is held; ``shared``: the writes that would be read by every agent (a shared
memory written, a shared memory changed, a memory made shared); ``all``: every write of the agent
(its tool calls and the maintenance call). A person's writes (UI, REST, CLI) and imports are
never held. A held write is not a memory until approved: nothing recalls, lists or exports it.
Approving goes through the one write path (dedup, history, the credential check).
"""

from __future__ import annotations

from typing import Any

from hivekeep.errors import ValidationError
from hivekeep.services.archive import ArchiveService, Memorized
from hivekeep.store.base import KEEP, Change, MemoryChanges, MemoryRecord, NewMemory, Store
from hivekeep.store.pending import PendingWrite
from hivekeep.types import Actor, Category, Operation, Scope, Source

REVIEW_MODES = ("off", "shared", "all")


class Inbox:
    def __init__(self, store: Store, archive: ArchiveService) -> None:
        self.store = store
        self.archive = archive

    def pending(self, agent_id: int | None = None) -> list[PendingWrite]:
        """The held writes, oldest first (``agent_id`` None: every agent's)."""
        return self.store.pending_writes(agent_id)

    def approve(self, pending_id: int, content: str | None = None) -> Memorized | MemoryRecord:
        """Write a held write, ``content`` replacing its text when given (a person's edit: the
        version is recorded as theirs). A memorize answers a ``Memorized``, an update the
        memory as it is now."""
        held = self.store.get_pending(pending_id)  # NotFound: no such write waits
        if content is not None and not content.strip():
            raise ValidationError("An approved write needs some text; reject it instead.")
        by = Actor.AGENT if content is None else Actor.PERSON
        with self.store.transaction():
            if held.operation == "memorize":
                [result] = self.archive.memorize_many(
                    [_memory(held, content)], by=by, approved=True
                )
                outcome: Memorized | MemoryRecord = result
            else:
                assert held.memory_id is not None  # an update always names its memory
                outcome = self.archive.update(
                    held.agent_id,
                    held.memory_id,
                    _changes(held.fields, content),
                    written=Change(by, Operation.UPDATE),
                    approved=True,
                )
            self.store.drop_pending(pending_id)
        self.archive.events.publish(
            "review:changed", held.agent_id, pending_id=pending_id, action="approved"
        )
        return outcome

    def reject(self, pending_id: int) -> None:
        """Drop a held write: nothing of it is kept."""
        held = self.store.get_pending(pending_id)  # NotFound: no such write waits
        self.store.drop_pending(pending_id)
        self.archive.events.publish(
            "review:changed", held.agent_id, pending_id=pending_id, action="rejected"
        )


def _memory(held: PendingWrite, content: str | None) -> NewMemory:
    f = held.fields
    return NewMemory(
        agent_id=held.agent_id,
        content=f["content"] if content is None else content,
        category=Category(f["category"]),
        subject=f.get("subject"),
        importance=f.get("importance"),
        scope=Scope(f.get("scope", "private")),
        source_context=f.get("source_context"),
        source=Source(f.get("source", "explicit")),
        source_message_id=f.get("source_message_id"),
        created_at=f.get("created_at"),
    )


def _changes(fields: dict[str, Any], content: str | None) -> MemoryChanges:
    def kept(name: str, kind: Any = None) -> Any:
        if name not in fields:
            return KEEP
        value = fields[name]
        return kind(value) if kind is not None and value is not None else value

    return MemoryChanges(
        content=content if content is not None else kept("content"),
        category=kept("category", Category),
        subject=kept("subject"),
        importance=kept("importance"),
        scope=kept("scope", Scope),
        source_context=kept("source_context"),
    )
