"""The storage interface: everything a service may ask of a backend, and nothing more.

Visibility is part of the contract, not a caller's duty: every read that takes a ``viewer_id``
returns only that agent's own memories and shared ones, and every write that takes an ``owner_id``
touches only that agent's memories (anything else reads as ``NotFound``). Vectors are unit-length
float32 sequences of the hive's embedding dimension.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hivekeep.core.dedup import DedupRule
from hivekeep.store.conversations import ConversationStore
from hivekeep.store.pending import PendingStore
from hivekeep.store.tokens import TokenStore
from hivekeep.types import Actor, Category, EmbeddingState, Operation, Scope, Source

Vector = Sequence[float] | npt.NDArray[np.floating[Any]]


class _Keep:
    """Sentinel type: "leave this field as it is" (distinct from setting it to None)."""

    _instance: _Keep | None = None

    def __new__(cls) -> _Keep:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "KEEP"


KEEP = _Keep()

# The viewer and owner id of a person acting on the hive, not as any agent (the admin path:
# ``Hive.forget_memory``, ``Hive.update_memory``). No agent has id 0, so as a viewer it sees shared
# memories only, and as an owner it may change or forget any shared memory, a deleted author's too.
PERSON = 0


@dataclass(frozen=True)
class AgentRecord:
    id: int
    name: str
    role: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class EmbeddingSpace:
    """The model whose vectors the hive holds; vectors of two models never mix."""

    model: str
    dimension: int


@dataclass(frozen=True)
class AgentFootprint:
    """What an agent has: what deleting it removes, and the shared memories that stay."""

    private_memories: int  # deleted with the agent
    shared_memories: int  # kept, attributed to the agent's name (``author_deleted``)
    conversations: int  # deleted, with their messages, summaries and compaction records


@dataclass(frozen=True)
class NewMemory:
    # PERSON: a shared memory whose author was deleted (imports only), stored owned by no agent
    # under ``author_name``; dedup then checks it against the shared memories, as PERSON sees
    agent_id: int
    content: str
    category: Category
    subject: str | None = None
    importance: int | None = None
    scope: Scope = Scope.PRIVATE
    source_context: str | None = None
    source: Source = Source.EXPLICIT
    source_message_id: int | None = None
    created_at: str | None = None  # None: now; set by imports and tests
    # set by imports only, to restore a memory as it was exported:
    updated_at: str | None = None  # None: now
    retrieval_count: int = 0
    last_retrieved_at: str | None = None
    author_name: str | None = None  # with agent_id PERSON: the deleted author's name


@dataclass(frozen=True)
class MemoryWrite:
    """One memory to insert, with its vector (None: embedding failed) and exact-duplicate key."""

    memory: NewMemory
    vector: Vector | None
    text_key: str
    by: Actor | None = None  # who writes it, as history records a reword (None: ``writer``)


@dataclass(frozen=True)
class Inserted:
    """What became of one write: the stored memory, or the existing one it duplicates."""

    memory: MemoryRecord
    duplicate: bool
    similar: tuple[MemoryRecord, ...] = ()  # close neighbours of a stored memory, closest first
    # a duplicate: the version of ``memory`` that keeps the text the write carried (``merge``)
    merged_version: int | None = None
    reworded: bool = False  # a duplicate whose text became ``memory``'s current text


@dataclass(frozen=True)
class MemoryChanges:
    """Fields to change on update; ``KEEP`` leaves a field as it is."""

    content: str | _Keep = KEEP
    category: Category | _Keep = KEEP
    subject: str | _Keep | None = KEEP
    importance: int | _Keep | None = KEEP
    scope: Scope | _Keep = KEEP
    source_context: str | _Keep | None = KEEP  # where the integrations keep an item's names


@dataclass(frozen=True)
class MemoryRecord:
    id: int
    agent_id: int | None  # None: a shared memory that outlived its author (author_deleted)
    author_name: str
    content: str
    category: Category
    subject: str | None
    importance: int | None
    scope: Scope
    source_context: str | None
    source: Source
    source_message_id: int | None
    retrieval_count: int
    last_retrieved_at: str | None
    created_at: str
    updated_at: str
    embedding_state: EmbeddingState
    # a later near-twin the viewer can see (a write that listed this one as similar): set by
    # reads that show it (recall, get, list), from ``Store.newer_memories``
    newer: MemoryRecord | None = None

    @property
    def author_deleted(self) -> bool:
        """The author was deleted; the memory stays shared under ``author_name``, owned by no
        agent (only the admin path, ``PERSON``, may change or forget it)."""
        return self.agent_id is None


@dataclass(frozen=True)
class MemoryFilter:
    """Filters applied inside both search arms and in listings (all optional, ANDed)."""

    subject: str | None = None  # case-insensitive exact match
    category: Category | None = None
    since: str | None = None  # stored-format timestamp; memories created at or after it
    scope: Scope | None = None  # listings only: "shared" lists every agent's shared memories
    own: bool = False  # listings only: just the viewer's own memories (private and shared)


@dataclass(frozen=True)
class ProfileRecord:
    agent_id: int
    text: str
    tokens: int
    revision: int
    last_rewrite_at: str | None
    manually_edited_at: str | None
    updated_at: str | None
    unchanged: bool = False  # an edit's result: the edit changed nothing, so nothing was written


@dataclass(frozen=True)
class PendingEmbedding:
    memory_id: int
    content: str
    subject: str | None


ProfileChange = Callable[[ProfileRecord], tuple[str, int]]


@dataclass(frozen=True)
class Change:
    """Who made a write, and what it did: recorded with the version it creates."""

    by: Actor
    operation: Operation


BY_AGENT = Change(Actor.AGENT, Operation.UPDATE)
HISTORY_LIMIT = 50  # versions kept per memory and per profile (setting MEMORY_HISTORY_LIMIT)


@dataclass(frozen=True)
class MemoryVersion:
    """One state of a memory: version 1 is as it was created; each change adds the next."""

    memory_id: int
    version: int
    content: str
    category: Category
    subject: str | None
    importance: int | None
    scope: Scope
    changed_at: str
    changed_by: Actor
    operation: Operation
    # the agent whose write made this version (None: a person's, or no agent is left)
    agent_id: int | None = None


@dataclass(frozen=True)
class ProfileVersion:
    """One state of a profile; ``version`` is the profile's revision it had then."""

    agent_id: int
    version: int
    text: str
    tokens: int
    changed_at: str
    changed_by: Actor
    operation: Operation


@dataclass(frozen=True)
class TrashedMemory:
    """A forgotten memory: out of recall, listings and dedup until restored or purged."""

    memory: MemoryRecord
    deleted_at: str
    deleted_by: Actor


class Store(ConversationStore, TokenStore, PendingStore, Protocol):
    """What services may ask of storage. Each method is one transaction, unless called inside
    ``transaction()``, which joins several into one."""

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Make the calls this thread makes inside the block one transaction.

        Every write in the block commits together when it ends, or none does if it raises (or the
        process dies first). Inside, each method joins the transaction instead of committing on
        its own, and reads see the block's own writes; other threads and processes see none of
        them until the commit. Nested blocks are savepoints: an inner one that raises undoes only
        its own writes. Writers elsewhere wait while it is open (SQLite's write lock, PostgreSQL's
        row and insert locks), so keep slow work, such as embedding, outside it.
        """
        ...

    # agents -----------------------------------------------------------------------------------
    def create_agent(self, name: str, role: str) -> AgentRecord:
        """Raises ConflictError when the name is taken."""
        ...

    def get_agent(self, key: int | str) -> AgentRecord:
        """By id (int) or name (str); raises NotFound."""
        ...

    def list_agents(self) -> list[AgentRecord]: ...

    def update_agent(
        self, agent_id: int, *, name: str | None = None, role: str | None = None
    ) -> AgentRecord:
        """Rename (the memories' author name follows) and/or re-describe; None keeps a field.

        Raises NotFound, or ConflictError when another agent has the name.
        """
        ...

    def agent_footprint(self, agent_id: int) -> AgentFootprint:
        """Counts of the agent's private and shared memories and conversations; raises NotFound."""
        ...

    def delete_agent(self, agent_id: int) -> AgentFootprint:
        """The agent, its profile, settings, private memories (rows, full text, vectors) and
        conversations (messages, summaries, compaction records), at once; returns the counts.

        Its shared memories stay, visible to every agent under the author's name, owned by no
        agent (``agent_id`` None): an agent created later with the same name does not own them.
        """
        ...

    # embedding space --------------------------------------------------------------------------
    def embedding_space(self) -> EmbeddingSpace | None: ...

    def reset_embedding_space(self, space: EmbeddingSpace) -> int:
        """Switch models: drop every vector, mark every memory pending; returns the count."""
        ...

    # memories ---------------------------------------------------------------------------------
    def insert_memories(self, writes: Sequence[MemoryWrite], *, dedup: DedupRule) -> list[Inserted]:
        """Insert each memory unless it merges into one visible to its author, in one
        transaction; afterwards the write's text is live (SPEC 4.1: a write is never hidden).

        Returns one ``Inserted`` per write, in order. Only memories with the same subject are
        candidates (``subject_key``: trimmed and case-folded; no subject matches only no
        subject): the author's visible memories of that subject with the same ``text_key``, and
        the ``NEIGHBOURS`` closest of them at or above ``dedup.floor`` — memories inserted or
        reworded earlier in the same call included. ``dedup.judge`` decides (the key alone never
        merges): an exact repeat of a memory's text changes nothing; the same fact as a memory
        the author owns, of the write's scope, makes the write's text that memory's content (a
        ``reword`` version; ``reworded``), or for a dated write older than that text keeps it as
        a ``merge`` version (``merged_version``); another agent's memory is never changed. A
        stored memory carries the neighbours the rule chose to show, and is linked to each as
        their newer near-twin (``newer_memories``). A write with ``vector`` None is stored (or
        reworded) as pending (found by full text, backfilled later).
        """
        ...

    def get_memory(self, memory_id: int, viewer_id: int) -> MemoryRecord:
        """A memory the viewer can see; raises NotFound otherwise."""
        ...

    def find_same_text(
        self, viewer_id: int, text_key: str, subject: str | None, *, excluding: int = 0
    ) -> list[int]:
        """The memories visible to the viewer, other than ``excluding``, with this ``text_key``
        and subject, oldest first (at most ``NEIGHBOURS``): the exact-text candidates of
        ``insert_memories``, for a restore."""
        ...

    def newer_memories(self, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        """For each of ``ids`` that has one: the newest live memory the viewer can see that was
        stored listing it as similar (one query for all ``ids``)."""
        ...

    def update_memory(
        self,
        memory_id: int,
        owner_id: int,
        changes: MemoryChanges,
        *,
        text_key: str | None,
        vector: Vector | _Keep | None,
        written: Change = BY_AGENT,
    ) -> MemoryRecord:
        """Owner-only (``PERSON``: any shared memory); ``vector`` KEEP keeps the stored one, None
        marks the memory pending. The new state is recorded as the memory's next version."""
        ...

    def delete_memory(self, memory_id: int, owner_id: int, *, by: Actor = Actor.AGENT) -> None:
        """Move to the trash: out of every read (recall, listings, dedup, export) until restored.

        Owner-only (``PERSON``: any shared memory); raises NotFound for anything else. Records a
        ``forget`` version; the vector is kept with the trashed row for a restore.
        """
        ...

    def restore_memory(self, memory_id: int, owner_id: int, *, by: Actor) -> MemoryRecord:
        """Bring a trashed memory back, with its id, vector and history; records a ``restore``
        version. Owner-only, as ``delete_memory``; raises NotFound when it is not in the trash."""
        ...

    def list_trash(self, owner_id: int, limit: int, offset: int) -> tuple[list[TrashedMemory], int]:
        """The owner's trashed memories (``PERSON``: trashed shared ones), newest deletion first,
        with the total count."""
        ...

    def memory_history(self, memory_id: int, viewer_id: int) -> list[MemoryVersion]:
        """Every kept version, newest first: of a memory the viewer can see, or of one it may
        restore from the trash. Raises NotFound otherwise."""
        ...

    def erase_memory(self, memory_id: int) -> bool:
        """The first half of a purge: delete a memory, live or trashed, with its history,
        full-text and vector rows, and record a pending scrub of it, in one transaction. False
        when there was nothing to erase. An operator's action: no visibility check."""
        ...

    def finish_scrubs(self) -> list[int]:
        """The second half: remove every trace of the erased text from the database files the
        backend controls (docs/memory.md, "Purge"), then clear the pending records it covered;
        returns their memory ids. A record stays, for the next call, until its scrub completed:
        a purge cut short (a crash, a kill) is finished by the next one."""
        ...

    def pending_scrubs(self) -> list[int]:
        """The memory ids erased by a purge whose scrub has not completed yet."""
        ...

    def purge_trash(self, deleted_before: str) -> int:
        """Purge (erase, then scrub) every memory trashed before the timestamp (retention);
        returns the count."""
        ...

    # history carried by an export (``export --history``) and put back by an import ------------
    def trash_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[TrashedMemory, npt.NDArray[np.float32] | None]]:
        """Trashed memories written by ``agent_id`` (None: by anyone, deleted authors included)
        with id > ``after_id``, oldest id first, each with its kept vector: export's pages."""
        ...

    def put_memory_versions(self, memory_id: int, versions: Sequence[MemoryVersion]) -> None:
        """Make ``versions`` the recorded history of a memory, live or trashed, as they are:
        numbers, content, who, when and operation (each one's ``memory_id`` is ignored). Any
        versions recorded before are replaced; past ``history_limit`` the oldest are left out.
        Import only."""
        ...

    def put_trashed_memory(
        self, memory: NewMemory, vector: Vector | None, *, deleted_at: str, deleted_by: Actor
    ) -> int | None:
        """Put a memory straight into the trash, with a new id (import). None, writing nothing,
        when the same author's trash already holds the same text deleted at the same time
        (importing a file twice)."""
        ...

    def vector_search(
        self,
        viewer_id: int,
        vector: Vector,
        k: int,
        filters: MemoryFilter,
        *,
        toward: Sequence[int] = (),
        weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        """(memory id, cosine similarity to ``vector``), best first, over the viewer's visible
        memories.

        Lexical feedback (Rocchio): with ``toward`` and a ``weight``, the search runs with
        ``vector`` moved by ``weight`` times the mean of the visible vectors among ``toward``,
        renormalised; the hits are the moved vector's nearest, in its order, and each one's
        similarity is still to ``vector`` as asked. None visible among them: a plain search.
        PostgreSQL moves it inside the search's own statement (one round trip)."""
        ...

    def text_search(
        self,
        viewer_id: int,
        terms: Sequence[str],
        k: int,
        filters: MemoryFilter,
        *,
        any_term: bool = False,
    ) -> list[int]:
        """Ids of visible memories matching the search terms: best rank first, then newer, then
        larger id.

        Terms are plain words (``hivekeep.core.fts_query.terms``), each matched as a prefix after
        the backend's stemming, over content, subject and context (source context and the creation
        date in words). Every term must match, or with ``any_term`` at least one. A term is never
        query syntax (each backend quotes it); a term without a letter or digit is ignored, and
        no terms match nothing. Ranking is the backend's own (bm25 in SQLite, ``ts_rank`` in
        PostgreSQL: see docs/storage.md), and so is one ranking liberty: a word found in a very
        large share of the hive may count as *common* (Lucene's common terms). A common word is
        matched whole rather than as a prefix, and with ``any_term`` it only adds to the score of
        rows that hold a rarer term of the query (a query of common words only needs them all).
        Both apply this above 2,000 rows a word (PostgreSQL by its table statistics:
        docs/storage.md).
        """
        ...

    def text_search_filled(
        self, viewer_id: int, terms: Sequence[str], k: int, filters: MemoryFilter
    ) -> tuple[list[int], list[int]]:
        """Recall's two full-text searches: ``text_search`` of every term, then, when it found
        fewer than ``k`` and there are several terms, ``text_search(..., any_term=True)`` (else
        an empty fill). The same results as the two calls; PostgreSQL sends the first search
        with the common-terms check of the second in one round trip."""
        ...

    def vectors(self, viewer_id: int, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Stored unit vectors of the visible memories among ``ids`` (pending ones are absent)."""
        ...

    def fetch_memories(
        self, viewer_id: int, ids: Sequence[int], *, newer: bool = False
    ) -> dict[int, MemoryRecord]:
        """The visible memories among ``ids`` (invisible or missing ids are left out); with
        ``newer``, each one's ``newer`` set as ``newer_memories`` finds it (recall's hits:
        PostgreSQL sends both reads in one round trip)."""
        ...

    def list_memories(
        self, viewer_id: int, filters: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        """Newest first, with the total count of matches."""
        ...

    def count_memories(self, viewer_id: int, filters: MemoryFilter, at_most: int) -> int:
        """How many visible memories pass the filters, counted no further than ``at_most``: a
        question such as "fewer than 20?" reads at most 20 rows, whatever the hive's size."""
        ...

    def mark_retrieved(self, ids: Sequence[int]) -> None: ...

    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]: ...

    def store_embedding(self, memory_id: int, content: str, vector: Vector) -> bool:
        """Attach a vector if the memory still has ``content`` (else False: it changed)."""
        ...

    def count_pending(self) -> int:
        """Memories waiting for a vector."""
        ...

    def data_version(self) -> int | None:
        """A number that changes when another connection (another process: the CLI, a script)
        commits to the hive, and not on this store's own writes; None where the backend cannot
        tell (PostgreSQL)."""
        ...

    def memories_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[MemoryRecord, npt.NDArray[np.float32] | None]]:
        """Memories written by ``agent_id`` (None: by anyone) with id > ``after_id``, oldest id
        first, each with its stored vector (None while pending): export reads page by page."""
        ...

    # profiles ---------------------------------------------------------------------------------
    def get_profile(self, agent_id: int) -> ProfileRecord: ...

    def save_profile(
        self,
        agent_id: int,
        text: str,
        tokens: int,
        *,
        expected_revision: int,
        manual: bool,
        written: Change = BY_AGENT,
    ) -> ProfileRecord:
        """Compare-and-swap: raises ConflictError when the revision moved on since it was read.
        The new text is recorded as the version of the new revision."""
        ...

    def profile_history(self, agent_id: int) -> list[ProfileVersion]:
        """Every kept version of the profile, newest first (the current one included)."""
        ...

    def drop_memory_versions(self, memory_id: int, versions: Sequence[int]) -> int:
        """Delete these recorded versions of a memory (a credential scrub: a version keeps the
        text it had); returns how many were deleted."""
        ...

    def drop_profile_versions(self, agent_id: int, versions: Sequence[int]) -> int:
        """Delete these recorded versions of a profile, never its current revision; returns
        how many were deleted."""
        ...

    def put_profile_history(
        self, profile: ProfileRecord, versions: Sequence[ProfileVersion]
    ) -> ProfileRecord:
        """Give a profile never written (revision 0, nothing recorded) the exported state as it
        was: ``profile``'s text, tokens, revision and stamps (its ``agent_id`` says whose), and
        ``versions`` as its history (numbers, who, when, operation kept). Import only; raises
        ConflictError when the profile has been written."""
        ...

    def modify_profile(
        self, agent_id: int, change: ProfileChange, *, manual: bool, written: Change = BY_AGENT
    ) -> ProfileRecord:
        """Read, change and write the profile in one write transaction, so concurrent edits
        serialise instead of conflicting. ``change`` gets the current record and returns the new
        text and its token count; if it raises, nothing is written and the error propagates. A
        text equal to the current one writes nothing either (no revision, no version): the
        current record comes back."""
        ...
