"""Writes to the archive: one path for every write, with dedup at insert and pending backfill."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hivekeep.core.text import embedding_text, normalise_text
from hivekeep.errors import ProviderError
from hivekeep.services.embedding import EmbeddingService
from hivekeep.store.base import (
    KEEP,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    NewMemory,
    Store,
    Vector,
    _Keep,
)

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True)
class Memorized:
    memory: MemoryRecord
    duplicate: bool  # True: an equivalent memory already existed and is returned instead


@dataclass(frozen=True)
class Backfill:
    embedded: int
    remaining: int
    error: str | None = None  # why it stopped early, when it did


class ArchiveService:
    def __init__(self, store: Store, embeddings: EmbeddingService, dedup_threshold: float) -> None:
        self.store = store
        self.embeddings = embeddings
        self.dedup_threshold = dedup_threshold

    def memorize(self, memory: NewMemory) -> Memorized:
        """Store a memory unless the author can already see the same one (text or >= threshold)."""
        vector = self.embeddings.try_embed_one(embedding_text(memory.content, memory.subject))
        record, duplicate = self.store.insert_memory(
            memory,
            vector,
            text_key=normalise_text(memory.content),
            dedup_threshold=self.dedup_threshold,
        )
        return Memorized(record, duplicate)

    def update(self, agent_id: int, memory_id: int, changes: MemoryChanges) -> MemoryRecord:
        """Owner-only update; re-embeds only when the embedded text changed."""
        current = self.store.get_memory(memory_id, agent_id)
        content = current.content if isinstance(changes.content, _Keep) else changes.content
        subject = current.subject if isinstance(changes.subject, _Keep) else changes.subject
        old_text = embedding_text(current.content, current.subject)
        new_text = embedding_text(content, subject)
        vector: Vector | _Keep | None = KEEP
        if new_text != old_text:
            vector = self.embeddings.try_embed_one(new_text)
        text_key = None if isinstance(changes.content, _Keep) else normalise_text(content)
        return self.store.update_memory(
            memory_id, agent_id, changes, text_key=text_key, vector=vector
        )

    def forget(self, agent_id: int, memory_id: int) -> None:
        self.store.delete_memory(memory_id, agent_id)

    def list(
        self, agent_id: int, filters: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        return self.store.list_memories(agent_id, filters, limit, offset)

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
