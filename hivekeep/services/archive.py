"""Writes to the archive: one path for every write, with dedup at insert and pending backfill."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from functools import partial
from typing import Any

from hivekeep.core.credentials import SecretsPolicy
from hivekeep.core.dedup import NEIGHBOURS, Candidate, DedupRule, Writing
from hivekeep.core.subjects import subject_key
from hivekeep.core.text import clean_text, embedding_text, normalise_text
from hivekeep.errors import HivekeepError, NotFound, ProviderError, ValidationError
from hivekeep.events import EventBus
from hivekeep.metrics import MEMORIZED
from hivekeep.services.credentials import CredentialGuard, automatic
from hivekeep.services.embedding import EmbeddingService
from hivekeep.services.newer import with_newer
from hivekeep.store.base import (
    BY_AGENT,
    KEEP,
    Change,
    Inserted,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    MemoryWrite,
    NewMemory,
    Store,
    Vector,
    _Keep,
)
from hivekeep.store.pending import PendingWrite
from hivekeep.store.rows import first_version
from hivekeep.types import Actor, EmbeddingState, Scope, Source

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True)
class Memorized:
    """What became of one write (SPEC 4.1: its text is live in ``memory`` when it returns, but
    for a dated write older than the memory's text, kept as ``merged_version``)."""

    memory: MemoryRecord
    duplicate: bool  # True: no new memory; the write merged into ``memory``, returned instead
    similar: tuple[MemoryRecord, ...] = ()  # close neighbours of a stored memory (see SPEC 4.1)
    # a dated duplicate older than the memory's text: the version of ``memory`` that keeps the
    # text this write carried; ``restore_memory`` makes it current
    merged_version: int | None = None
    # a duplicate whose text became ``memory``'s content (the same fact, reworded): the
    # previous text is its version before the newest; undo restores it
    reworded: bool = False
    redacted: tuple[str, ...] = ()  # the kind of each credential this write's text lost
    # held for review (the agent's ``review`` setting): no memory yet; ``memory`` shows what it
    # would be (id 0) until a person approves it (``hive.approve``)
    pending: PendingWrite | None = None


class HeldForReview(HivekeepError):
    """An agent's update was held for a person's review: the memory is unchanged until then."""

    def __init__(self, pending: PendingWrite) -> None:
        super().__init__(
            f"Held for review as pending write {pending.id}: memory {pending.memory_id} stays "
            f"as it is until a person approves the change (`hivekeep review approve "
            f"{pending.id}`)."
        )
        self.pending = pending


@dataclass(frozen=True)
class MemoryPage:
    """One page of a listing (``Agent.list_memories``), with the total it was cut from."""

    memories: list[MemoryRecord]
    total: int
    has_more: bool


@dataclass(frozen=True)
class Backfill:
    embedded: int
    remaining: int
    error: str | None = None  # why it stopped early, when it did


class ArchiveService:
    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingService,
        dedup_threshold: float,
        events: EventBus,
        guard: CredentialGuard,
    ) -> None:
        self.store = store
        self.embeddings = embeddings
        self.dedup = DedupRule(threshold=dedup_threshold)
        self.events = events
        self.guard = guard

    def memorize_many(
        self,
        memories: Sequence[NewMemory],
        *,
        batch_size: int = 256,
        vectors: Sequence[Vector | None] | None = None,
        by: Actor = Actor.AGENT,
        approved: bool = False,
    ) -> list[Memorized]:
        """The one write path: embed in batches, then dedup and insert all in one transaction.

        If the embedder fails for a batch, those memories are stored as pending (found by full
        text at once, backfilled later) rather than lost. ``vectors`` (import): one per memory,
        already made by this hive's model (``embed``, or an export's own), None to store that
        memory pending; nothing is embedded here then. Events are sent as each memory is stored,
        or, inside ``EventBus.deferred``, when the caller's transaction has committed. ``by``:
        who wrote them; another than the agent (a person typing into a UI) is recorded as the
        first version, in the same transaction, so history does not say "create by agent".
        An agent's own writes (``by`` AGENT) are held instead where its ``review`` setting says
        so, unless ``approved`` (a person's approval, ``Inbox.approve``).
        """
        memories = [_cleaned(m) for m in memories]  # control characters: see clean_text
        if vectors is not None and len(vectors) != len(memories):
            raise ValueError(f"{len(vectors)} vectors for {len(memories)} memories.")
        memories, redacted = self._screened(memories)  # before anything is written
        held = {} if approved or by is not Actor.AGENT else self._hold(memories)
        rest = [i for i in range(len(memories)) if i not in held]  # the held wait in the inbox
        written = iter(
            self._insert(
                [memories[i] for i in rest],
                [redacted[i] for i in rest],
                None if vectors is None else [vectors[i] for i in rest],
                batch_size=batch_size,
                by=by,
            )
            if rest
            else []
        )
        return [
            _held(memories[i], held[i], redacted[i]) if i in held else next(written)
            for i in range(len(memories))
        ]

    def _insert(
        self,
        memories: list[NewMemory],
        redacted: list[tuple[str, ...]],
        vectors: Sequence[Vector | None] | None,
        *,
        batch_size: int,
        by: Actor,
    ) -> list[Memorized]:
        """``memorize_many``'s writing half, for memories already cleaned and screened."""
        if vectors is None:
            vectors = self.embed(memories, batch_size=batch_size)
        elif any(redacted):  # a vector made from the credential's text would keep its trace
            vectors = [None if r else v for v, r in zip(vectors, redacted, strict=True)]
        writer = None if by is Actor.AGENT else by  # None: as each memory's source says
        writes = [
            MemoryWrite(memory, vector, normalise_text(memory.content), writer)
            for memory, vector in zip(memories, vectors, strict=True)
        ]
        if by is Actor.AGENT:
            inserted = self.store.insert_memories(writes, dedup=self.dedup)
        else:
            with self.store.transaction():
                inserted = self.store.insert_memories(writes, dedup=self.dedup)
                for result in inserted:
                    if not result.duplicate:
                        first = replace(first_version(result.memory), changed_by=by)
                        self.store.put_memory_versions(result.memory.id, [first])
        for result in inserted:
            MEMORIZED.labels(outcome=_outcome(result)).inc()
            if result.reworded:
                self._publish("memory:updated", result.memory)
            elif not result.duplicate:
                self._publish("memory:created", result.memory)
        return [
            Memorized(r.memory, r.duplicate, r.similar, r.merged_version, r.reworded, kinds)
            for r, kinds in zip(inserted, redacted, strict=True)
        ]

    def review_mode(self, agent_id: int) -> str:
        """The agent's ``review`` setting: ``off``, ``shared`` or ``all``."""
        try:
            return self.store.get_agent_settings(agent_id).review or "off"
        except NotFound:  # a deleted author's memory: nobody's writes to hold
            return "off"

    def _hold(self, memories: Sequence[NewMemory]) -> dict[int, PendingWrite]:
        """The memories the authors' review settings hold, stored in the inbox, by position."""
        modes: dict[int, str] = {}
        held: dict[int, PendingWrite] = {}
        for i, memory in enumerate(memories):
            if memory.agent_id not in modes:
                modes[memory.agent_id] = self.review_mode(memory.agent_id)
            mode = modes[memory.agent_id]
            if mode == "all" or (mode == "shared" and memory.scope is Scope.SHARED):
                source = "maintenance" if memory.source is Source.AUTOMATIC else "agent"
                held[i] = self.store.hold_write(
                    memory.agent_id, "memorize", None, _fields(memory), source
                )
                self.events.publish(
                    "review:changed", memory.agent_id, pending_id=held[i].id, action="held"
                )
        return held

    def _screened(
        self, memories: Sequence[NewMemory]
    ) -> tuple[list[NewMemory], list[tuple[str, ...]]]:
        """The memories as each author's credential policy keeps them, and what each lost; one
        refused memory refuses the whole call, before anything is written. A policy is read
        only for an author whose text holds a credential, once a call."""
        policies: dict[int, SecretsPolicy] = {}

        def policy_of(memory: NewMemory) -> SecretsPolicy:
            if memory.agent_id not in policies:
                policies[memory.agent_id] = self.guard.policy(memory.agent_id)
            chosen = policies[memory.agent_id]
            # nobody reads a refusal of the model's own writes: see automatic()
            return automatic(chosen) if memory.source is Source.AUTOMATIC else chosen

        kept: list[NewMemory] = []
        redacted: list[tuple[str, ...]] = []
        for memory in memories:
            policy = partial(policy_of, memory)
            content = self.guard.screen(memory.content, policy, "content")
            subject = self.guard.screen_optional(memory.subject, policy, "subject")
            context = self.guard.screen_optional(memory.source_context, policy, "source_context")
            lost = content.redacted + (subject.redacted if subject else ())
            lost += context.redacted if context else ()
            if lost:
                memory = dataclasses.replace(
                    memory,
                    content=content.text,
                    subject=subject.text if subject else None,
                    source_context=context.text if context else None,
                )
            kept.append(memory)
            redacted.append(lost)
        return kept, redacted

    def embed(self, memories: Sequence[NewMemory], *, batch_size: int = 256) -> list[Vector | None]:
        """The vectors ``memorize_many`` would store, one per memory, in batches: None for the
        memories of a batch the embedder failed on (they are stored pending)."""
        texts = [embedding_text(m.content, m.subject) for m in (_cleaned(m) for m in memories)]
        vectors: list[Vector | None] = []
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            try:
                vectors += self.embeddings.embed(batch)
            except ProviderError as exc:
                log.warning("Embedding failed; %d memories kept as pending: %s", len(batch), exc)
                vectors += [None] * len(batch)
        return vectors

    def _publish(self, event: str, memory: MemoryRecord) -> None:
        self.events.publish(event, memory.agent_id, memory_id=memory.id, scope=memory.scope.value)

    def update(
        self,
        agent_id: int,
        memory_id: int,
        changes: MemoryChanges,
        *,
        written: Change = BY_AGENT,
        approved: bool = False,
    ) -> MemoryRecord:
        """Owner-only update; re-embeds only when the embedded text changed. The new state is
        the memory's next version, recorded as ``written`` (who, which operation). An agent's
        own update that its ``review`` setting holds raises HeldForReview (unless ``approved``)."""
        changes = self._screened_changes(agent_id, _cleaned_changes(changes), written)
        current = self.store.get_memory(memory_id, agent_id)
        if not approved and written.by is Actor.AGENT and current.agent_id == agent_id:
            mode = self.review_mode(agent_id)
            shared = current.scope is Scope.SHARED or changes.scope == Scope.SHARED
            if mode == "all" or (mode == "shared" and shared):
                held = self.store.hold_write(
                    agent_id, "update", memory_id, _changed(changes), "agent"
                )
                self.events.publish("review:changed", agent_id, pending_id=held.id, action="held")
                raise HeldForReview(held)
        content = current.content if isinstance(changes.content, _Keep) else changes.content
        subject = current.subject if isinstance(changes.subject, _Keep) else changes.subject
        old_text = embedding_text(current.content, current.subject)
        new_text = embedding_text(content, subject)
        vector: Vector | _Keep | None = KEEP
        if new_text != old_text:
            vector = self.embeddings.try_embed_one(new_text)
        text_key = None if isinstance(changes.content, _Keep) else normalise_text(content)
        updated = self.store.update_memory(
            memory_id, agent_id, changes, text_key=text_key, vector=vector, written=written
        )
        self._publish("memory:updated", updated)
        return updated

    def _screened_changes(
        self, agent_id: int, changes: MemoryChanges, written: Change
    ) -> MemoryChanges:
        """An update's texts as the owner's credential policy keeps them (read only when a text
        holds a credential)."""

        def policy() -> SecretsPolicy:
            chosen = self.guard.policy(agent_id)
            return automatic(chosen) if written.by is Actor.MAINTENANCE else chosen

        def kept(value: str | _Keep | None, name: str) -> str | _Keep | None:
            return self.guard.screen(value, policy, name).text if isinstance(value, str) else value

        content = changes.content
        return dataclasses.replace(
            changes,
            content=self.guard.screen(content, policy).text
            if isinstance(content, str)
            else content,
            subject=kept(changes.subject, "subject"),
            source_context=kept(changes.source_context, "source_context"),
        )

    def known_as(
        self,
        viewer_id: int,
        content: str,
        subject: str | None,
        *,
        excluding: int,
        shared: bool = False,
    ) -> MemoryRecord | None:
        """The live memory, visible to ``viewer_id`` and other than ``excluding``, that a write
        of this text (``shared``: of that scope) would merge into, by the same rule as
        ``memorize_many`` over the same candidates; None when there is none. For a restore,
        which brings back an existing memory rather than inserting one."""
        same = self.store.find_same_text(
            viewer_id, normalise_text(content), subject, excluding=excluding
        )
        close = [(memory_id, 1.0) for memory_id in same]  # the same text key is judged too
        vector = self.embeddings.try_embed_one(embedding_text(content, subject))
        if vector is not None:  # else the text-key candidates stand alone, as for a pending write
            close += [
                (memory_id, similarity)
                for memory_id, similarity in self.store.vector_search(
                    viewer_id, vector, NEIGHBOURS + 1, MemoryFilter(subject=subject)
                )
                if memory_id != excluding
                and memory_id not in same
                and similarity >= self.dedup.floor
            ]
        rows = self.store.fetch_memories(viewer_id, [memory_id for memory_id, _ in close])
        wanted = subject_key(subject)  # a filter of None keeps every subject: compare here
        candidates = [
            Candidate(
                i,
                rows[i].content,
                score,
                own=rows[i].agent_id == viewer_id,
                shared=rows[i].scope is Scope.SHARED,
            )
            for i, score in close
            if i in rows and subject_key(rows[i].subject) == wanted
        ]
        found = self.dedup.judge(Writing(content, shared), candidates).duplicate_of
        return None if found is None else self.store.get_memory(found, viewer_id)

    def forget(self, agent_id: int, memory_id: int, *, by: Actor = Actor.AGENT) -> None:
        """Owner-only: the memory goes to the trash (restorable until the retention ends)."""
        memory = self.store.get_memory(memory_id, agent_id)
        self.store.delete_memory(memory_id, agent_id, by=by)
        self._publish("memory:deleted", memory)

    def get(self, agent_id: int, memory_id: int) -> MemoryRecord:
        """One visible memory, pointing at its newer near-twin if there is one."""
        [memory] = with_newer(self.store, agent_id, [self.store.get_memory(memory_id, agent_id)])
        return memory

    def list(
        self, agent_id: int, filters: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        """A page of visible memories, each pointing at its newer near-twin if there is one."""
        memories, total = self.store.list_memories(agent_id, filters, limit, offset)
        return with_newer(self.store, agent_id, memories), total

    def backfill(
        self, *, limit: int | None = None, batch_size: int = 64, progress: Progress | None = None
    ) -> Backfill:
        """Embed pending memories, in batches, until none are left (or ``limit`` are done).

        Stops at the first provider failure and reports it: the rows stay pending and findable.
        """
        done = 0
        total = self.store.count_pending()
        while limit is None or done < limit:
            size = batch_size if limit is None else min(batch_size, limit - done)
            pending = self.store.pending_embeddings(size)
            if not pending:
                break
            texts = [embedding_text(p.content, p.subject) for p in pending]
            try:
                vectors = self.embeddings.embed(texts)
            except ProviderError as exc:
                log.warning("Backfill stopped after %d memories: %s", done, exc)
                return Backfill(done, self.store.count_pending(), str(exc))
            stored = sum(
                self.store.store_embedding(item.memory_id, item.content, vector)
                for item, vector in zip(pending, vectors, strict=True)
            )
            if stored == 0:  # every row changed under us; the next call picks up the new text
                break
            done += stored
            if progress:
                progress(done, total)
        return Backfill(done, self.store.count_pending())


def _fields(memory: NewMemory) -> dict[str, Any]:
    """A held memory's fields as the inbox keeps them (JSON)."""
    return {
        "content": memory.content,
        "category": memory.category.value,
        "subject": memory.subject,
        "importance": memory.importance,
        "scope": memory.scope.value,
        "source_context": memory.source_context,
        "source": memory.source.value,
        "source_message_id": memory.source_message_id,
        "created_at": memory.created_at,
    }


def _changed(changes: MemoryChanges) -> dict[str, Any]:
    """A held update's changed fields (JSON); a field left out is kept."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(changes):
        value = getattr(changes, f.name)
        if not isinstance(value, _Keep):
            out[f.name] = value.value if isinstance(value, Enum) else value
    return out


def _held(memory: NewMemory, pending: PendingWrite, redacted: tuple[str, ...]) -> Memorized:
    """A held write's result: the memory it would become, id 0 (not a memory yet)."""
    record = MemoryRecord(
        id=0,
        agent_id=memory.agent_id,
        author_name=memory.author_name or "",
        content=memory.content,
        category=memory.category,
        subject=memory.subject,
        importance=memory.importance,
        scope=memory.scope,
        source_context=memory.source_context,
        source=memory.source,
        source_message_id=memory.source_message_id,
        retrieval_count=0,
        last_retrieved_at=None,
        created_at=memory.created_at or pending.created_at,
        updated_at=pending.created_at,
        embedding_state=EmbeddingState.PENDING,
    )
    return Memorized(record, False, redacted=redacted, pending=pending)


def _clean_field(value: str, name: str) -> str:
    """``value`` through ``clean_text`` and stripped (dropped controls may uncover spaces)."""
    cleaned = clean_text(value, name).strip()
    if name == "content" and not cleaned:
        raise ValidationError(
            f"'content' has value {value!r}: nothing is left without its "
            "control characters. Send the memory's text."
        )
    return cleaned


def _optional(value: str | None, name: str) -> str | None:
    """An optional text field: None stays None, and so does one that cleans to nothing."""
    return None if value is None else (_clean_field(value, name) or None)


def _outcome(result: Inserted) -> str:
    """A write's ``hivekeep_memorize`` outcome."""
    if result.reworded:
        return "reworded"
    if result.duplicate:
        return "duplicate"
    pending = result.memory.embedding_state is EmbeddingState.PENDING
    return "pending_embedding" if pending else "stored"


def _cleaned(memory: NewMemory) -> NewMemory:
    """The memory with its texts through ``clean_text`` (NUL refused, other controls dropped)."""
    return dataclasses.replace(
        memory,
        content=_clean_field(memory.content, "content"),
        subject=_optional(memory.subject, "subject"),
        source_context=_optional(memory.source_context, "source_context"),
    )


def _kept_or(value: str | _Keep | None, name: str) -> str | _Keep | None:
    """An optional text field of an update: ``KEEP`` stays, else as ``_optional``."""
    return value if isinstance(value, _Keep) else _optional(value, name)


def _cleaned_changes(changes: MemoryChanges) -> MemoryChanges:
    content = changes.content
    return dataclasses.replace(
        changes,
        content=content if isinstance(content, _Keep) else _clean_field(content, "content"),
        subject=_kept_or(changes.subject, "subject"),
        source_context=_kept_or(changes.source_context, "source_context"),
    )
