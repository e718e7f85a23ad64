"""``recall``: the vector arm and the full-text arm over the agent's visible memories, fused by RRF.

Two further lists may join the fusion, each made of candidates in the order of the first fusion,
so each candidate gains a bounded bonus (at most ``weight / (K + 1)``): subject-aware recall, when
the query names the subject of some candidates (``hivekeep.core.subjects``), and time-aware
recall, when the query asks for a time and some candidates' text states one
(``hivekeep.core.time_words``). Relevance is the only ranking signal; ties break by recency.
Nothing here calls an LLM.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hivekeep.core import fts_query
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.core.subjects import about_named
from hivekeep.core.time_words import asks_when, mentions_time
from hivekeep.errors import ProviderError
from hivekeep.metrics import RECALL_SECONDS, timed
from hivekeep.providers.base import RecallDefaults
from hivekeep.services.embedding import EmbeddingService, FloatArray
from hivekeep.store.base import MemoryFilter, MemoryRecord, Store

log = logging.getLogger(__name__)

POOL_FACTOR = 2  # each arm returns 2x the requested results
FEEDBACK_DOCS = 3  # top full-text hits whose vectors steer the vector query
# A hit is a "strong" match when it holds every word of the query, or its meaning is this close
# (cosine, the bundled MiniLM: related sentences score about 0.4-0.7, an unrelated one that clears
# the 0.2 floor about 0.2-0.35); anything else is "weak": found by some words, or faintly near.
STRONG_SIMILARITY = 0.4
SEARCH_WINDOW = 50  # a person's ranked search pages through at most this many (recall's maximum)
FAINT_WEIGHT = 0.01  # of the full-text weight: ``ArmResults.faint`` ranks after every other hit


@dataclass(frozen=True)
class RecallHit:
    memory: MemoryRecord
    score: float  # fused RRF score: ranks hits, says nothing of how well each one matches
    similarity: float | None  # cosine similarity to the query, when the vector arm found it
    # the arms that found it: "vector", "text" (every query word) or "text_partial" (some)
    found_by: tuple[str, ...] = ()

    @property
    def match(self) -> str:
        """ "strong" (every word of the query, or close in meaning) or "weak" (see above)."""
        return "strong" if self._close or "text" in self.found_by else "weak"

    @property
    def _close(self) -> bool:
        return self.similarity is not None and self.similarity >= STRONG_SIMILARITY

    @property
    def why(self) -> str:
        """The match and which search found it, in a few words: "strong match: every word of
        the query, and close in meaning"."""
        parts = []
        if "text" in self.found_by:
            parts.append("every word of the query")
        elif "text_partial" in self.found_by:
            parts.append("some words of the query")
        if "vector" in self.found_by:
            parts.append("close in meaning" if self._close else "faintly related in meaning")
        return f"{self.match} match: {', and '.join(parts) or 'ranked by the other filters'}"


@dataclass(frozen=True)
class RecallResult:
    hits: list[RecallHit]
    warning: str | None = None  # set when one arm could not run (e.g. the embedder is down)


@dataclass(frozen=True)
class RankedPage:
    """One page of a ranked listing (``Agent.search_memories``): the hits in recall's order, and
    how many of the best ``SEARCH_WINDOW`` matches passed the filters."""

    hits: list[RecallHit]
    total: int
    has_more: bool
    warning: str | None = None


@dataclass(frozen=True)
class ArmResults:
    vector: list[tuple[int, float]]  # (id, similarity), floor applied
    text: list[int]
    every_word: int = 0  # how many of ``text``, first, hold every query word (the rest: some)
    faint: list[int] = dataclasses.field(default_factory=list)  # see ``RecallService.arms``


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
        """Both arms' candidates; the vector arm degrades to empty (with a warning) on failure.

        Hits found only by words every memory holds (see ``_telling``) neither steer the vector
        arm nor rank among the others: those the vector arm missed come back as ``faint``, fused
        after everything else (a word in every memory tells nothing, as BM25 weighs it)."""
        with timed(RECALL_SECONDS, arm="full_text"):
            text, every_word, untelling = self._text_hits(agent_id, query, pool, filters)
        with timed(RECALL_SECONDS, arm="vector"):
            try:
                vector = self.embeddings.embed_one(query)
            except ProviderError as exc:
                log.warning("recall fell back to full-text only: %s", exc)
                warning = f"Vector search unavailable, full-text results only: {exc}"
                return ArmResults([], (text + untelling)[:pool], every_word), warning
            vectors = self.vector_arm(agent_id, vector, text, pool, filters)
        near = {i for i, _ in vectors}
        faint = [i for i in untelling if i not in near]
        return ArmResults(vectors, text, every_word, faint), None

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
        toward = list(text_hits[:FEEDBACK_DOCS]) if weight else []
        hits = self.store.vector_search(
            agent_id, query, pool, filters, toward=toward, weight=weight
        )
        return [(i, s) for i, s in hits if s >= self._floor()]

    def _floor(self) -> float:
        assert self.defaults.similarity_floor is not None
        return self.defaults.similarity_floor

    def text_arm(self, agent_id: int, query: str, pool: int, filters: MemoryFilter) -> list[int]:
        """AND of all terms first; when that finds fewer than ``pool``, OR fills the rest."""
        text, _, untelling = self._text_hits(agent_id, query, pool, filters)
        return (text + untelling)[:pool]

    def _text_hits(
        self, agent_id: int, query: str, pool: int, filters: MemoryFilter
    ) -> tuple[list[int], int, list[int]]:
        """``text_arm``'s list, how many of it (first) the AND of all terms found, and apart the
        OR hits that hold only words every memory holds (``_telling``)."""
        terms = fts_query.terms(query)
        if not terms:
            return [], 0, []
        found, some = self.store.text_search_filled(agent_id, terms, pool, filters)
        every_word = len(found)
        untelling: list[int] = []
        if len(found) < pool and len(terms) > 1:
            if len(some) < pool:  # every match is in: a small archive, or rare words
                telling = self._telling(agent_id, terms, pool, filters)
                if telling != terms:
                    kept = set(
                        self.store.text_search(agent_id, telling, pool, filters, any_term=True)
                        if telling
                        else ()
                    )
                    untelling = [i for i in some if i not in kept and i not in found]
                    some = [i for i in some if i in kept]
            seen = set(found)
            for memory_id in some:
                if memory_id not in seen and len(found) < pool:
                    found.append(memory_id)
                    seen.add(memory_id)
        return found, every_word, untelling

    def _telling(
        self, agent_id: int, terms: tuple[str, ...], pool: int, filters: MemoryFilter
    ) -> tuple[str, ...]:
        """The terms that tell memories apart. In an archive of fewer than ``pool`` memories, a
        term every one of them holds ("user" in four "The user …" facts) ranks them by length
        alone, and would steer the vector arm with that noise. Counting stops at ``pool``: a
        large archive is told apart in ``pool`` rows read (counting it all was the frequent-word
        regression of issue 35: 100k rows counted and sorted on every such recall)."""
        visible = self.store.count_memories(agent_id, filters, pool)
        if not 1 < visible < pool:  # one memory cannot be mis-ranked; a large archive is not
            return terms
        return tuple(
            t for t in terms if len(self.store.text_search(agent_id, [t], pool, filters)) < visible
        )

    def _bonus_lists(
        self,
        query: str,
        ranked: Sequence[int],
        candidates: dict[int, MemoryRecord],
        filters: MemoryFilter,
    ) -> list[Ranked[int]]:
        """The subject list and the time list for this query (each only when switched on and not
        empty), both drawn from ``ranked``, the first fusion's order."""
        out: list[Ranked[int]] = []
        weight = self.defaults.subject_weight or 0.0
        if weight and filters.subject is None:  # a subject filter already keeps only that subject
            subjects = {i: m.subject for i, m in candidates.items()}
            about = about_named(query, ranked, subjects)
            if about:
                out.append(Ranked(about, weight))
        weight = self.defaults.time_weight or 0.0
        if weight and asks_when(query):
            timed = [i for i in ranked if i in candidates and mentions_time(candidates[i].content)]
            if timed:
                out.append(Ranked(timed, weight))
        return out

    def recall(
        self, agent_id: int, query: str, limit: int, filters: MemoryFilter, *, count: bool = True
    ) -> RecallResult:
        """Fused hits, best first; ``count`` False is a person browsing (UI search), which must
        not inflate how often the agent itself recalled a memory."""
        pool = POOL_FACTOR * limit
        arms, warning = self.arms(agent_id, query, pool, filters)
        candidates = self.store.fetch_memories(  # with each one's newer twin: shown as it is
            agent_id, list({*[i for i, _ in arms.vector], *arms.text, *arms.faint}), newer=True
        )
        assert self.defaults.rrf_k is not None and self.defaults.fts_weight is not None
        lists = [
            Ranked([i for i, _ in arms.vector], 1.0),
            Ranked(arms.text, self.defaults.fts_weight),
            Ranked(arms.faint, self.defaults.fts_weight * FAINT_WEIGHT),
        ]
        recency = {i: m.created_at for i, m in candidates.items()}
        with timed(RECALL_SECONDS, arm="fusion"):
            fused = fuse(lists, k=self.defaults.rrf_k, recency=recency)
        with timed(RECALL_SECONDS, arm="subject"):  # the bonus lists: subject, time
            extra = self._bonus_lists(query, [i for i, _ in fused], candidates, filters)
            if extra:
                fused = fuse([*lists, *extra], k=self.defaults.rrf_k, recency=recency)
        similarity = dict(arms.vector)
        ranked = [(candidates[i], score) for i, score in fused if i in candidates][:limit]
        hits = [
            RecallHit(memory, score, similarity.get(memory.id), _found_by(memory.id, arms))
            for memory, score in ranked
        ]
        if count:
            self.store.mark_retrieved([hit.memory.id for hit in hits])
        return RecallResult(hits, warning)


def _found_by(memory_id: int, arms: ArmResults) -> tuple[str, ...]:
    found: tuple[str, ...] = ("vector",) if any(i == memory_id for i, _ in arms.vector) else ()
    if memory_id in arms.text or memory_id in arms.faint:
        whole = memory_id in arms.text[: arms.every_word]
        found += ("text" if whole else "text_partial",)
    return found
