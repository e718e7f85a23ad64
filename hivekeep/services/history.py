"""Reading and undoing memory changes: versions, restore, the trash, its retention, and purge.

Every change to a memory is recorded as its next version by the store, in the write's own
transaction; ``forget`` moves it to the trash. Restoring never rewrites history: it writes a new
version (``restore``) whose state is the one asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hivekeep.core.limits import check_live_fields
from hivekeep.core.text import format_timestamp
from hivekeep.errors import ConflictError, NotFound, StoreError, ValidationError
from hivekeep.services.archive import ArchiveService
from hivekeep.store.base import (
    KEEP,
    PERSON,
    Change,
    MemoryChanges,
    MemoryRecord,
    MemoryVersion,
    Store,
    TrashedMemory,
)
from hivekeep.types import Actor, Operation, Scope

TRASH_DAYS = 30  # setting MEMORY_TRASH_DAYS


def retention_cutoff(days: int, now: datetime | None = None) -> str:
    """The stored-format timestamp before which trashed memories are purged."""
    return format_timestamp((now or datetime.now(UTC)) - timedelta(days=days))


@dataclass(frozen=True)
class TrashPage:
    """One page of an agent's trash (``Agent.trash``), with the total it was cut from."""

    memories: list[TrashedMemory]
    total: int
    has_more: bool


class HistoryService:
    def __init__(self, store: Store, archive: ArchiveService, trash_days: int) -> None:
        self.store = store
        self.archive = archive
        self.trash_days = trash_days
        self.resumed: set[int] = set()  # purges cut short whose clean-up this service finished

    def history(self, agent_id: int, memory_id: int) -> list[MemoryVersion]:
        """Every kept version, newest first (the current state is first)."""
        return self.store.memory_history(memory_id, agent_id)

    def restore(
        self, agent_id: int, memory_id: int, version: int | None, *, by: Actor
    ) -> MemoryRecord:
        """Undo a forget (``version`` None), or make an older version current again (out of the
        trash first if it is there). Either way a new version records the restore.

        What becomes live is judged as a write first, before anything changes: the live limits
        of its fields (ValidationError), the duplicate rule (ConflictError naming the live memory
        it repeats), and for a person a version that was private to its author is refused
        rather than published (only versions the caller can see are found at all)."""
        versions = self.store.memory_history(memory_id, agent_id)  # NotFound: not visible
        live = self.store.fetch_memories(agent_id, [memory_id]).get(memory_id)
        target = versions[0]  # in the trash: its state as forgotten
        if version is not None:
            found = next((v for v in versions if v.version == version), None)
            if found is None:
                kept = ", ".join(str(v.version) for v in versions)
                raise NotFound(
                    f"Memory {memory_id} has no version {version}; its kept versions are {kept}."
                )
            target = found
        elif live is not None:
            raise NotFound(
                f"Memory {memory_id} is not in the trash; pass a version to restore an older one."
            )
        self._check_restorable(agent_id, memory_id, target, live, whole=version is None)
        restored = None
        if live is None:
            restored = self.store.restore_memory(memory_id, agent_id, by=by)
            self.archive.events.publish(
                "memory:created",
                restored.agent_id,
                memory_id=restored.id,
                scope=restored.scope.value,
                restored=True,
            )
        if version is None:
            assert restored is not None
            return restored
        changes = MemoryChanges(
            content=target.content,
            category=target.category,
            subject=target.subject,
            importance=target.importance,
            scope=KEEP if agent_id == PERSON else target.scope,  # a person keeps it shared
        )
        return self.archive.update(
            agent_id, memory_id, changes, written=Change(by, Operation.RESTORE)
        )

    def _check_restorable(
        self,
        agent_id: int,
        memory_id: int,
        target: MemoryVersion,
        live: MemoryRecord | None,
        *,
        whole: bool,
    ) -> None:
        """Refuse a restore that no live write could make (see ``restore``); ``live``: the
        memory's current state, None in the trash; ``whole``: a restore from the trash as is."""
        if agent_id == PERSON and target.scope is Scope.PRIVATE:
            raise ValidationError(
                f"Version {target.version} of memory {memory_id} was private to its author when "
                "it was current; restoring it as a person would publish it to every agent. "
                "Restore a version that was shared, or let its author restore it.",
                field="version",
            )
        check_live_fields(target.content, target.subject, target.importance)
        if live is not None and target.content == live.content:
            return  # the text is live already: the restore adds no copy of it
        known = self.archive.known_as(
            agent_id,
            target.content,
            target.subject,
            excluding=memory_id,
            shared=target.scope is Scope.SHARED,
        )
        if known is not None:
            what = f"memory {memory_id}"
            if not whole:
                what = f"version {target.version} of {what}"
            raise ConflictError(
                f"The text of {what} is already known as #{known.id} ({known.content!r}); "
                f"restoring it would make two live copies, so memory {memory_id} is left as it "
                f"is. Update or forget #{known.id} first if memory {memory_id} should be the one "
                "kept."
            )

    def trash(self, agent_id: int, limit: int, offset: int) -> tuple[list[TrashedMemory], int]:
        """The agent's trashed memories, newest deletion first (``PERSON``: shared ones)."""
        self.purge_expired()
        return self.store.list_trash(agent_id, limit, offset)

    def purge_owned(self, owner_id: int, memory_id: int) -> None:
        """Purge a memory that ``owner_id`` may forget or restore (``PERSON``: a shared one),
        live or trashed; NotFound for anything else."""
        versions = self.store.memory_history(memory_id, owner_id)  # NotFound: not visible
        live = self.store.fetch_memories(owner_id, [memory_id]).get(memory_id)
        mine = versions[0].operation is Operation.FORGET  # in the trash: only its owner sees it
        if live is not None:
            mine = owner_id == PERSON or live.agent_id == owner_id
        if not mine:
            raise NotFound(
                f"No memory with id {memory_id} belongs to this agent "
                "(shared memories can only be purged by their author or a person)."
            )
        self.purge(memory_id)

    def purge(self, memory_id: int) -> bool:
        """Erase a memory for good, live or trashed, leaving no trace of its text. True also for
        a memory already erased by a purge cut short during its clean-up: this finishes it (or
        the opening of the hive just did). False when there is nothing of it to purge;
        StoreError when its scrub could not complete (``check_scrubbed``)."""
        erased = self.store.erase_memory(memory_id)
        cut_short = not erased and (
            memory_id in self.resumed or memory_id in self.store.pending_scrubs()
        )
        self.finish_purges()
        self.resumed.discard(memory_id)  # reported once: purging it again is a NotFound
        self.check_scrubbed([memory_id])
        return erased or cut_short

    def finish_purges(self) -> list[int]:
        """Finish the clean-up of every purge cut short (a crash, a kill during the scrub);
        returns the ids of those this service has finished so far, here or earlier."""
        self.resumed.update(self.store.finish_scrubs())
        return sorted(self.resumed)

    def check_scrubbed(self, ids: list[int] | None = None) -> None:
        """StoreError when the scrub of a purge of ``ids`` (None: of any) is still pending: the
        memory is erased, but its text may still be in the file (SQLite: a reader kept the WAL
        from being truncated); the next open or ``hivekeep purge --resume`` finishes it."""
        pending = [i for i in self.store.pending_scrubs() if ids is None or i in ids]
        if pending:
            which = "Memory" if len(pending) == 1 else "Memories"
            raise StoreError(
                f"{which} {', '.join(map(str, pending))} erased, but the clean-up of the file "
                "could not complete (another connection is reading it): the text may still be "
                "in the file. Run `hivekeep purge --resume` when the hive is idle."
            )

    def purge_expired(self) -> int:
        """Purge what has been in the trash longer than the retention period: memories, and
        (counted apart, not in the number returned) deleted conversations."""
        cutoff = retention_cutoff(self.trash_days)
        self.store.purge_conversations(cutoff)
        return self.store.purge_trash(cutoff)
