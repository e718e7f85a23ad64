"""``recall``: the vector arm and the full-text arm over the agent's visible memories, fused by RRF.

Subject-aware recall adds a third list when the query names the subject of some candidates (see
``hivekeep.core.subjects``): those candidates, in the order of the first fusion, so each gains a
bounded bonus (at most ``subject_weight / (K + 1)``). Relevance is the only ranking signal; ties
break by recency. Nothing here calls an LLM.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hivekeep.core import fts_query
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.core.subjects import about_named
from hivekeep.errors import ProviderError
from hivekeep.metrics import RECALL_SECONDS, timed
from hivekeep.providers.base import RecallDefaults
from hivekeep.services.embedding import EmbeddingService, FloatArray
from hivekeep.store.base import MemoryFilter, MemoryRecord, Store

log = logging.getLogger(__name__)

POOL_FACTOR = 2  # each arm returns 2x the requested results
FEEDBACK_DOCS = 3  # top full-text hits whose vectors steer the vector query


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

    def arms(
        self, agent_id: int, query: str, pool: int, filters: MemoryFilter
    ) -> tuple[ArmResults, str | None]:
        """Both arms' candidates; the vector arm degrades to empty (with a warning) on failure."""
        with timed(RECALL_SECONDS, arm="full_text"):
            text = self.text_arm(agent_id, query, pool, filters)
        with timed(RECALL_SECONDS, arm="vector"):
            try:
                vector = self.embeddings.embed_one(query)
            except ProviderError as exc:
                log.warning("recall fell back to full-text only: %s", exc)
                warning = f"Vector search unavailable, full-text results only: {exc}"
                return ArmResults([], text), warning
            return ArmResults(self.vector_arm(agent_id, vector, text, pool, filters), text), None

    def vector_arm(
        self,
        agent_id: int,
        query: FloatArray,
        text_hits: Sequence[int],
        pool: int,
        filters: MemoryFilter,
    ) -> list[tuple[int, float]]:
        """Nearest memories to the query, each with its cosine similarity to the query itself.

        Lexical feedback: the search vector moves toward the top full-text hits (Rocchio), so the
        words the user typed steer the semantic search too. The similarity floor still compares
        each hit with the query as asked, so it stays a spam filter.
        """
        weight = self.defaults.feedback_weight or 0.0
        feedback = self.store.vectors(agent_id, list(text_hits[:FEEDBACK_DOCS])) if weight else {}
        if not feedback:
            hits = self.store.vector_search(agent_id, query, pool, filters)
            return [(i, s) for i, s in hits if s >= self._floor()]
        moved = query + weight * np.mean(np.stack(list(feedback.values())), axis=0)
        moved /= np.linalg.norm(moved)
        ids = [i for i, _ in self.store.vector_search(agent_id, moved, pool, filters)]
        vectors = self.store.vectors(agent_id, ids)
        similarity = {i: float(np.dot(query, v)) for i, v in vectors.items()}
        return [(i, similarity[i]) for i in ids if similarity.get(i, -1.0) >= self._floor()]

    def _floor(self) -> float:
        assert self.defaults.similarity_floor is not None
        return self.defaults.similarity_floor

    def text_arm(self, agent_id: int, query: str, pool: int, filters: MemoryFilter) -> list[int]:
        """AND of all terms first; when that finds fewer than ``pool``, OR fills the rest."""
        terms = fts_query.terms(query)
        if not terms:
            return []
        found = self.store.text_search(agent_id, terms, pool, filters)
        if len(found) < pool and len(terms) > 1:
            seen = set(found)
            for memory_id in self.store.text_search(agent_id, terms, pool, filters, any_term=True):
                if memory_id not in seen and len(found) < pool:
                    found.append(memory_id)
                    seen.add(memory_id)
        return found

    def recall(
        self, agent_id: int, query: str, limit: int, filters: MemoryFilter, *, count: bool = True
    ) -> RecallResult:
        """Fused hits, best first; ``count`` False is a person browsing (UI search), which must
        not inflate how often the agent itself recalled a memory."""
        pool = POOL_FACTOR * limit
        arms, warning = self.arms(agent_id, query, pool, filters)
        candidates = self.store.fetch_memories(
            agent_id, list({*[i for i, _ in arms.vector], *arms.text})
        )
        assert self.defaults.rrf_k is not None and self.defaults.fts_weight is not None
        lists = [
            Ranked([i for i, _ in arms.vector], 1.0),
            Ranked(arms.text, self.defaults.fts_weight),
        ]
        recency = {i: m.created_at for i, m in candidates.items()}
        with timed(RECALL_SECONDS, arm="fusion"):
            fused = fuse(lists, k=self.defaults.rrf_k, recency=recency)
        weight = self.defaults.subject_weight or 0.0
        if weight and filters.subject is None:  # a subject filter already keeps only that subject
            with timed(RECALL_SECONDS, arm="subject"):
                subjects = {i: m.subject for i, m in candidates.items()}
                about = about_named(query, [i for i, _ in fused], subjects)
                if about:
                    lists.append(Ranked(about, weight))
                    fused = fuse(lists, k=self.defaults.rrf_k, recency=recency)
        similarity = dict(arms.vector)
        hits = [
            RecallHit(candidates[i], score, similarity.get(i))
            for i, score in fused
            if i in candidates
        ][:limit]
        if count:
            self.store.mark_retrieved([hit.memory.id for hit in hits])
        return RecallResult(hits, warning)
