"""``recall``: the vector arm and the full-text arm over the agent's visible memories, fused by RRF.

Relevance is the only ranking signal; ties break by recency. Nothing here calls an LLM.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hivekeep.core import fts_query
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.errors import ProviderError
from hivekeep.providers.base import RecallDefaults
from hivekeep.services.embedding import EmbeddingService
from hivekeep.store.base import MemoryFilter, MemoryRecord, Store

log = logging.getLogger(__name__)

POOL_FACTOR = 2  # each arm returns 2x the requested results


@dataclass(frozen=True)
class RecallHit:
    memory: MemoryRecord
    score: float  # fused RRF score
    similarity: float | None  # cosine similarity to the query, when the vector arm found it


@dataclass(frozen=True)
class RecallResult:
    hits: list[RecallHit]
    warning: str | None = None  # set when one arm could not run (e.g. the embedder is down)


@dataclass(frozen=True)
class ArmResults:
    vector: list[tuple[int, float]]  # (id, similarity), floor applied
    text: list[int]


class RecallService:
    def __init__(
        self, store: Store, embeddings: EmbeddingService, defaults: RecallDefaults
    ) -> None:
        self.store = store
        self.embeddings = embeddings
        self.defaults = defaults

    @property
    def floor(self) -> float:
        assert self.defaults.similarity_floor is not None
        return self.defaults.similarity_floor

    def arms(
        self, agent_id: int, query: str, pool: int, filters: MemoryFilter
    ) -> tuple[ArmResults, str | None]:
        """Both arms' candidates; the vector arm degrades to empty (with a warning) on failure."""
        warning = None
        vector_hits: list[tuple[int, float]] = []
        try:
            vector = self.embeddings.embed_one(query)
        except ProviderError as exc:
            log.warning("recall fell back to full-text only: %s", exc)
            warning = f"Vector search unavailable, full-text results only: {exc}"
        else:
            vector_hits = [
                (memory_id, similarity)
                for memory_id, similarity in self.store.vector_search(
                    agent_id, vector, pool, filters
                )
                if similarity >= self.floor
            ]
        return ArmResults(vector_hits, self.text_arm(agent_id, query, pool, filters)), warning

    def text_arm(self, agent_id: int, query: str, pool: int, filters: MemoryFilter) -> list[int]:
        """AND of all terms first; when that finds fewer than ``pool``, OR fills the rest."""
        expression = fts_query.build(query)
        if not expression:
            return []
        found = self.store.text_search(agent_id, expression.all_terms, pool, filters)
        if len(found) < pool and len(expression.terms) > 1:
            seen = set(found)
            for memory_id in self.store.text_search(agent_id, expression.any_term, pool, filters):
                if memory_id not in seen and len(found) < pool:
                    found.append(memory_id)
                    seen.add(memory_id)
        return found

    def recall(self, agent_id: int, query: str, limit: int, filters: MemoryFilter) -> RecallResult:
        pool = POOL_FACTOR * limit
        arms, warning = self.arms(agent_id, query, pool, filters)
        candidates = self.store.fetch_memories(
            agent_id, list({*[i for i, _ in arms.vector], *arms.text})
        )
        assert self.defaults.rrf_k is not None and self.defaults.fts_weight is not None
        fused = fuse(
            [
                Ranked([i for i, _ in arms.vector], 1.0),
                Ranked(arms.text, self.defaults.fts_weight),
            ],
            k=self.defaults.rrf_k,
            recency={i: m.created_at for i, m in candidates.items()},
        )
        similarity = dict(arms.vector)
        hits = [
            RecallHit(candidates[i], score, similarity.get(i))
            for i, score in fused
            if i in candidates
        ][:limit]
        self.store.mark_retrieved([hit.memory.id for hit in hits])
        return RecallResult(hits, warning)
