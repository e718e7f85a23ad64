"""Import: a checked file written into this hive in bounded transactions (see the package
docstring)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hivekeep.core.credentials import SecretsPolicy
from hivekeep.core.text import (
    now_timestamp,
)
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ConflictError, NotFound, ValidationError
from hivekeep.services.archive import ArchiveService
from hivekeep.services.conversation import ConversationService
from hivekeep.services.embedding import EmbeddingService
from hivekeep.services.transfer.format import (
    IMPORT_BATCH,
    MAX_ERRORS,
    AgentLine,
    MemoryLine,
    MemoryVersionInfo,
    ProfileLine,
    Progress,
    TrashedLine,
    decode_vector,
)
from hivekeep.services.transfer.reader import (
    Block,
    Item,
    Reader,
    check_compaction,
    restored_conversation,
)
from hivekeep.store.base import (
    PERSON,
    Change,
    EmbeddingSpace,
    MemoryRecord,
    MemoryVersion,
    NewMemory,
    ProfileRecord,
    ProfileVersion,
    Store,
    Vector,
)
from hivekeep.store.conversations import (
    AgentSettings,
)
from hivekeep.types import Actor, Operation, Scope

log = logging.getLogger(__name__)
# The pause after each committed batch, longer than SQLite's longest busy-handler sleep (100 ms):
# a writer of another process waiting for the lock gets it then, instead of finding it taken
# again a microsecond after the commit (measured: without it, a writer waiting through a
# 30,000-memory import still timed out).
BATCH_PAUSE_S = 0.12


@dataclass
class ImportReport:
    """What an import did; ``vectors`` says whether the file's vectors were used."""

    lines: int = 0
    agents_created: int = 0
    agents_merged: int = 0
    profiles_imported: int = 0
    profiles_kept: int = 0  # an existing non-empty profile left as it was
    memories_imported: int = 0
    memories_duplicate: int = 0  # merged into a memory already there: no new memory
    memories_reworded: int = 0  # of those, the ones whose text became that memory's content
    vectors: Literal["reused", "re-embedded"] = "reused"
    memories_embedded: int = 0  # imported memories embedded by this hive's model
    memories_pending: int = 0  # imported without a vector (the embedder failed): backfilled later
    trashed_imported: int = 0  # memories put into the trash (a file from ``export --history``)
    trashed_skipped: int = 0  # already in the trash (same author, text and deletion time)
    conversations_imported: int = 0
    conversations_skipped: int = 0  # already in the hive (same agent, start time and title)
    messages: int = 0
    summaries: int = 0


class Importer:
    """Imports an export file into a hive's store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingService,
        conversations: ConversationService,
        archive: ArchiveService,
        *,
        profile_budget: int | None = None,
    ) -> None:
        self.store = store
        self.embeddings = embeddings
        self.conversations = conversations
        self.archive = archive  # the one write path: dedup, vectors, events
        self.profile_budget = profile_budget  # a profile over it is refused unless allowed

    def validate(self, path: str | Path, *, allow_over_budget: bool = False) -> Reader:
        """Check the whole file; raises ValidationError listing each problem by line."""
        reader = Reader(Path(path), self.conversations)
        reader.profile_budget = None if allow_over_budget else self.profile_budget
        reader.screen = self._screen
        errors: list[str] = []
        for _ in reader.items(errors):
            pass
        if errors:
            more = " (and maybe more)" if len(errors) >= MAX_ERRORS else ""
            raise ValidationError(
                f"{path} is not a valid hivekeep export{more}; nothing was imported:\n  "
                + "\n  ".join(errors)
            )
        return reader

    def _screen(self, agent_name: str, text: str, field: str) -> str:
        """A text of the file as the credential policy of the agent it goes to keeps it (an
        agent the file creates: the hive's policy); raises CredentialRefused under refuse. The
        agent is looked up only for a text that holds a credential."""
        guard = self.archive.guard

        def policy() -> SecretsPolicy:
            try:
                return guard.policy(self.store.get_agent(agent_name).id)
            except NotFound:
                return guard.default

        return guard.screen(text, policy, field).text

    def run(
        self,
        path: str | Path,
        *,
        replace_profiles: bool = False,
        allow_over_budget: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        reader = self.validate(path, allow_over_budget=allow_over_budget)
        assert reader.header is not None  # validate() guarantees it
        header = reader.header.embedding
        space = self.embeddings.space
        reuse = header is not None and EmbeddingSpace(header.model, header.dimension) == space
        run = _Run(self, reader, reuse, replace_profiles)
        run.embed_all()  # before any transaction: the slow part, while nobody waits on us
        items = reader.items(None)
        done = False
        while not done:
            # a bounded transaction (about IMPORT_BATCH lines), so other writers wait for one
            # batch, not the whole file; its events are published once it has committed
            with self.archive.events.deferred(), self.store.transaction():
                done = run.apply_batch(items)
            if progress is not None:
                progress(reader.lines if done else run.line, reader.lines)
            if not done:
                time.sleep(BATCH_PAUSE_S)
        run.report.lines = reader.lines
        return run.report


class _Run:
    """The writing pass of one import."""

    def __init__(self, importer: Importer, reader: Reader, reuse: bool, replace: bool) -> None:
        self.importer = importer
        self.store = importer.store
        self.reader = reader
        self.reuse = reuse
        self.replace_profiles = replace
        embedding = reader.header.embedding if reader.header else None
        self.dimension = embedding.dimension if embedding else 0
        self.report = ImportReport(vectors="reused" if reuse else "re-embedded")
        self.agents: dict[str, int] = {}  # lower-case name -> id in this hive
        self.created: set[str] = set()  # lower-case names of the agents this import created
        self.line = 0  # the last line written
        self.existing: dict[int, set[tuple[str, str]]] = {}  # agent id -> (created_at, title)
        self.messages: dict[str, int] = {}  # message key -> new id, for memories' source_message
        self.batch: list[tuple[int, MemoryLine]] = []  # (line number, memory)
        self.fresh: dict[int, Vector | None] = {}  # line number -> this hive's vector (embed_all)

    def apply_batch(self, items: Iterator[tuple[int, Item]]) -> bool:
        """Write the next batch: ``IMPORT_BATCH`` memories, or about as many lines of anything
        else (a conversation is never split); True once the file is done."""
        start = self.line
        for number, item in items:
            flushed = self.apply(number, item)
            self.line = number
            if flushed or (not self.batch and number - start >= IMPORT_BATCH):
                return False
        self.flush()
        return True

    def apply(self, number: int, item: Item) -> bool:
        """Write one item (a memory waits for its batch); True when that wrote the batch."""
        if isinstance(item, AgentLine):
            self._agent(item)
        elif isinstance(item, ProfileLine):
            self._profile(item)
        elif isinstance(item, Block):
            self._conversation(item)
        elif isinstance(item, TrashedLine):
            self._trashed(number, item)
        elif isinstance(item, MemoryLine):
            self.batch.append((number, item))
            if len(self.batch) >= IMPORT_BATCH:
                self.flush()
                return True
        return False

    def embed_all(self) -> None:
        """Embed, with this hive's model, every memory whose exported vector cannot be reused.

        Done before the writing pass opens its transaction, since writers elsewhere wait while
        it is open. Holds one vector per such memory until the write (None where the embedder
        failed: that memory is stored pending and backfilled later).
        """
        todo: list[tuple[int, MemoryLine]] = []
        for number, item in self.reader.items(None):
            if isinstance(item, MemoryLine) and not (self.reuse and item.vector):
                todo.append((number, item))
            if len(todo) >= IMPORT_BATCH:
                self._embed(todo)
                todo = []
        self._embed(todo)

    def _embed(self, lines: list[tuple[int, MemoryLine]]) -> None:
        if not lines:
            return
        drafts = [  # embedding reads content and subject only
            NewMemory(agent_id=0, content=m.content, category=m.category, subject=m.subject)
            for _, m in lines
        ]
        vectors = self.importer.archive.embed(drafts)
        for (number, _), vector in zip(lines, vectors, strict=True):
            self.fresh[number] = vector

    def _agent(self, line: AgentLine) -> None:
        try:
            agent = self.store.get_agent(line.name)
        except NotFound:
            agent = self.store.create_agent(line.name, line.role)
            self.report.agents_created += 1
            self.created.add(line.name.lower())
            current = AgentSettings()
        else:
            self.report.agents_merged += 1
            if not agent.role.strip() and line.role.strip():
                agent = self.store.update_agent(agent.id, role=line.role)
            current = self.store.get_agent_settings(agent.id)
        self.agents[line.name.lower()] = agent.id
        merged = AgentSettings(  # what the hive already says wins
            model=current.model or line.settings.model,
            compaction={**line.settings.compaction, **current.compaction},
            compacting_model=current.compacting_model or line.settings.compacting_model,
            extraction_model=current.extraction_model or line.settings.extraction_model,
            context_window=current.context_window or line.settings.context_window,
            secrets=current.secrets,  # never the file's: see SettingsInfo.secrets
            review=current.review,
        )
        if merged != current:
            try:
                check_compaction(merged.compaction, self.importer.conversations)
            except ValidationError as exc:
                log.warning("Agent %s keeps its compaction settings: %s", agent.name, exc)
                merged = dataclasses.replace(merged, compaction=current.compaction)
            self.store.save_agent_settings(agent.id, merged)

    def _profile(self, line: ProfileLine) -> None:
        agent_id = self.agents[line.agent.lower()]
        current = self.store.get_profile(agent_id)
        if line.history and current.revision == 0 and not current.text and self._history(line):
            return
        if not line.text.strip() or current.text == line.text:
            return
        if current.text.strip() and not self.replace_profiles:
            self.report.profiles_kept += 1
            return
        # verbatim, even over this hive's budget: an import must not lose part of a profile
        self.store.save_profile(
            agent_id,
            line.text,
            count_tokens(line.text),
            expected_revision=current.revision,
            manual=True,
            written=Change(Actor.IMPORT, Operation.IMPORT),
        )
        self.report.profiles_imported += 1

    def _history(self, line: ProfileLine) -> bool:
        """A profile never written takes the file's state and versions as they were; False
        (nothing written) when it has been written after all."""
        agent_id = self.agents[line.agent.lower()]
        versions = [  # the file's token counts are not trusted: counted here
            ProfileVersion(
                agent_id,
                v.version,
                v.text,
                count_tokens(v.text),
                v.changed_at,
                v.changed_by,
                v.operation,
            )
            for v in line.history or []
        ]
        revision = line.revision if line.revision is not None else max(v.version for v in versions)
        profile = ProfileRecord(
            agent_id,
            line.text,
            count_tokens(line.text),
            revision,
            line.last_rewrite_at,
            line.manually_edited_at,
            line.updated_at,
        )
        try:
            self.store.put_profile_history(profile, versions)
        except ConflictError:
            return False
        if line.text.strip():
            self.report.profiles_imported += 1
        return True

    def _trashed(self, number: int, line: TrashedLine) -> None:
        vector = (
            decode_vector(line.vector, self.dimension)
            if self.reuse and line.vector
            else self.fresh.pop(number, None)
        )
        memory = self._memory(line)
        memory_id = self.store.put_trashed_memory(
            memory, vector, deleted_at=line.deleted_at, deleted_by=line.deleted_by
        )
        if memory_id is None:
            self.report.trashed_skipped += 1
            return
        owner = None if memory.agent_id == PERSON else memory.agent_id
        self.store.put_memory_versions(memory_id, _versions(memory_id, owner, line.history or []))
        self.report.trashed_imported += 1

    def _conversation(self, block: Block) -> None:
        agent_id = self.agents[block.conversation.agent.lower()]
        if agent_id not in self.existing:
            self.existing[agent_id] = {
                (c.created_at, c.title) for c in self.store.list_conversations(agent_id)
            }
        identity = (block.conversation.created_at, block.conversation.title)
        if identity in self.existing[agent_id]:
            self.report.conversations_skipped += 1
            return
        restored = self.store.restore_conversation(
            agent_id, block.restored or restored_conversation(block)
        )
        self.existing[agent_id].add(identity)
        for (_, message), new_id in zip(block.messages, restored.message_ids, strict=True):
            if message.key in self.reader.source_messages:
                self.messages[message.key] = new_id
        self.report.conversations_imported += 1
        self.report.messages += len(restored.message_ids)
        self.report.summaries += len(restored.summary_ids)

    def flush(self) -> None:
        """Write the batch through the archive's write path (dedup, events), with the export's
        vectors where they are of this hive's model, else those ``embed_all`` made."""
        batch, self.batch = self.batch, []
        if not batch:
            return
        vectors: list[Vector | None] = [
            decode_vector(m.vector, self.dimension)
            if self.reuse and m.vector
            else self.fresh.pop(number, None)
            for number, m in batch
        ]
        results = self.importer.archive.memorize_many(  # an import is a person's: never held
            [self._memory(m) for _, m in batch], vectors=vectors, approved=True
        )
        merged_into = {r.memory.id for r in results if r.duplicate}
        for (_, m), vector, result in zip(batch, vectors, results, strict=True):
            if result.duplicate:
                self.report.memories_duplicate += 1
                self.report.memories_reworded += result.reworded
                continue
            # the file's history as it was, or (none in the file) version 1 written by the import
            memory = result.memory
            history = m.history
            versions = (
                _versions(memory.id, memory.agent_id, history) if history else [_imported(memory)]
            )
            if memory.id in merged_into:  # later lines of the batch merged into it: kept after
                versions += self._merged_since(memory, len(versions))
            self.store.put_memory_versions(memory.id, versions)
            self.report.memories_imported += 1
            if vector is None:
                self.report.memories_pending += 1
            elif not (self.reuse and m.vector):
                self.report.memories_embedded += 1

    def _merged_since(self, memory: MemoryRecord, after: int) -> list[MemoryVersion]:
        """The versions later lines of the batch made of a memory the batch created (a reword,
        or an older dated statement kept), renumbered to follow the ``after`` the file gives
        it; the first recorded one is the memory as this batch created it, which the file's
        history already ends with."""
        viewer = PERSON if memory.agent_id is None else memory.agent_id
        recorded = sorted(self.store.memory_history(memory.id, viewer), key=lambda v: v.version)
        return [
            dataclasses.replace(v, version=after + n) for n, v in enumerate(recorded[1:], start=1)
        ]

    def _memory(self, m: MemoryLine) -> NewMemory:
        """The memory to write, attributed as the file says only where the file may say it: a
        shared memory of an agent that was already in this hive (merged, not created by this
        import) is kept as an imported one, owned by no agent, under "NAME (imported)": a file
        cannot make a live agent the author of what every agent reads as its word."""
        name = m.author.lower()
        if m.author_deleted:
            owner, author = PERSON, m.author
        elif m.scope is Scope.SHARED and name not in self.created:
            owner, author = PERSON, f"{m.author} (imported)"
        else:
            owner, author = self.agents[name], None
        return NewMemory(
            agent_id=owner,
            author_name=author,
            content=m.content,
            category=m.category,
            subject=m.subject,
            importance=m.importance,
            scope=m.scope,
            source_context=m.source_context,
            source=m.source,
            source_message_id=self.messages.get(m.source_message or ""),
            created_at=m.created_at,
            updated_at=m.updated_at,
            retrieval_count=m.retrieval_count,
            last_retrieved_at=m.last_retrieved_at,
        )


def _versions(
    memory_id: int, owner: int | None, versions: list[MemoryVersionInfo]
) -> list[MemoryVersion]:
    """An exported history as this hive's versions. An export names no writer per version, so
    each is the memory's owner's (``owner``), but a person's: a ``merge`` another agent's write
    made is attributed to the owner after an import (docs/storage.md)."""
    return [
        MemoryVersion(
            memory_id,
            v.version,
            v.content,
            v.category,
            v.subject,
            v.importance,
            v.scope,
            v.changed_at,
            v.changed_by,
            v.operation,
            None if v.changed_by is Actor.PERSON else owner,
        )
        for v in versions
    ]


def _imported(memory: MemoryRecord) -> MemoryVersion:
    """Version 1 of a memory an import wrote: who wrote it first is not known here."""
    return MemoryVersion(
        memory.id,
        1,
        memory.content,
        memory.category,
        memory.subject,
        memory.importance,
        memory.scope,
        now_timestamp(),
        Actor.IMPORT,
        Operation.CREATE,
        memory.agent_id,
    )
