"""Hive: the public entry point. Opens a store and the providers, and hands out Agent objects."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from hivekeep.agent import Agent, memory_changes
from hivekeep.config import Settings
from hivekeep.core.bounds import MAX_ID, bounded, check_id, check_offset, check_version
from hivekeep.core.compaction import CompactionSettings
from hivekeep.core.names import agent_name, agent_role
from hivekeep.errors import (
    AgentNotFound,
    ConflictError,
    EmbedderMismatch,
    HiveBusy,
    HivekeepError,
    NotFound,
    ProviderError,
    StoreError,
    ValidationError,
    install_extra,
)
from hivekeep.providers.base import Embedder
from hivekeep.providers.embeddings.registry import create_embedder
from hivekeep.providers.llm.base import LLM
from hivekeep.services.archive import Backfill, Memorized, Progress
from hivekeep.services.compile import BootstrapOutcome
from hivekeep.services.credential_scan import CredentialScan
from hivekeep.services.embedding import EmbeddingService
from hivekeep.services.inbox import Inbox
from hivekeep.services.llms import NO_LLM, LLMNotConfigured
from hivekeep.services.maintenance import MaintenanceOutcome
from hivekeep.services.tokens import TokenService
from hivekeep.services.transfer.chat_exports import BOOTSTRAP, ChatImport
from hivekeep.services.wiring import wire
from hivekeep.store.base import (
    KEEP,
    PERSON,
    AgentFootprint,
    Change,
    EmbeddingSpace,
    MemoryRecord,
    Store,
    TrashedMemory,
    _Keep,
)
from hivekeep.store.leases import AgentLease
from hivekeep.store.pending import PendingWrite
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.store.sqlite.backup import Progress as BackupProgress
from hivekeep.store.sqlite.backup import backup as backup_file
from hivekeep.store.target import is_postgres_url
from hivekeep.tools import tool_schemas
from hivekeep.types import Actor, Category, Operation
from hivekeep.views import version_view

if TYPE_CHECKING:  # imported when used: export/import's models and PostgreSQL's driver
    from hivekeep.services.transfer import ExportReport, ImportReport
    from hivekeep.store.postgres.relay import EventRelay

log = logging.getLogger(__name__)

BACKFILL_ON_OPEN = 500  # a bigger backlog is left to `hivekeep reembed` (with a progress bar)


def _postgres_store(url: str, history_limit: int) -> Store:
    """The PostgreSQL store, whose driver is imported only now (the ``postgres`` extra)."""
    try:
        from hivekeep.store.postgres import PostgresStore
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith(("psycopg", "psycopg_pool")):
            raise
        raise StoreError(
            f"A PostgreSQL hive needs the PostgreSQL driver ({exc.name} is not installed). "
            f"Install it with: {install_extra('postgres')}."
        ) from exc
    return PostgresStore(url, history_limit=history_limit)


@dataclass(frozen=True)
class Resumed:
    bootstrap: BootstrapOutcome
    maintenance: tuple[MaintenanceOutcome, ...]


class Hive:
    """A set of agents and their memories, in one SQLite file or one PostgreSQL schema.

    >>> with Hive("memory.db") as hive:                       # doctest: +SKIP
    ...     agent = hive.create_agent("assistant", role="General helper")
    ...     agent.call_tool("memorize", {"content": "User likes tea", "category": "preference"})

    ``path``: the file, or a ``postgresql://`` URL (default: ``HIVEKEEP_DB``, else
    ``./hivekeep.db``; see docs/storage.md, "PostgreSQL"). ``embedder``: an object
    implementing ``Embedder``, or a spec such as ``"openai:text-embedding-3-small"`` (default:
    ``HIVEKEEP_EMBEDDINGS``, else the bundled local model). A hive remembers which model made its
    vectors; opening it with another raises ``EmbedderMismatch`` unless ``switch_embedder=True``,
    which drops the old vectors (memories stay searchable by full text) so that ``reembed()`` can
    rebuild them.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: Embedder | str | None = None,
        settings: Settings | None = None,
        switch_embedder: bool = False,
        llm: LLM | str | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        target = str(path) if path is not None else self.settings.db
        if isinstance(embedder, str) or embedder is None:
            embedder = create_embedder(embedder or self.settings.embeddings)
        embeddings = EmbeddingService(embedder)
        limit = self.settings.history_limit
        self.store: Store = (
            _postgres_store(target, limit)
            if is_postgres_url(target)
            else SQLiteStore(
                target,
                synchronous=self.settings.sqlite_synchronous,
                history_limit=limit,
                vector_cache_mb=self.settings.vector_cache_mb,
            )
        )
        self.path = target
        try:
            self._check_embedding_space(embeddings, switch_embedder)
        except BaseException:
            self.store.close()
            raise
        defaults = self.settings.recall_defaults(getattr(embedder, "recall_defaults", None))
        self._services = wire(
            self.store, self.settings, embeddings, defaults, llm, tool_schemas("openai")
        )
        self.events = self._services.events  # subscribe here: memory:*, profile:*, compacting:*
        self._tokens = TokenService(self.store)
        self._secrets = CredentialScan(self.store, self._services.archive)
        self._inbox = Inbox(self.store, self._services.archive)
        # PostgreSQL: events reach (and come from) every process on the hive (LISTEN/NOTIFY)
        self._relay: EventRelay | None = None
        if is_postgres_url(target):
            from hivekeep.store.postgres.relay import EventRelay

            self._relay = EventRelay(target, self.events)
        try:
            self._services.history.finish_purges()  # purges cut short (docs/memory.md, "Purge")
            self._services.history.purge_expired()  # the trash's retention period
        except HiveBusy as exc:  # another process writes: opening must not wait on upkeep
            log.warning("Clean-up of the hive postponed to its next open: %s", exc)
        if not switch_embedder and self.store.count_pending():
            self._services.archive.backfill(
                limit=BACKFILL_ON_OPEN
            )  # switching: reembed() shows progress

    def _check_embedding_space(self, embeddings: EmbeddingService, switch: bool) -> None:
        wanted = embeddings.space
        stored = self.store.embedding_space()
        if stored == wanted:
            return
        if stored is not None and switch:  # the old vectors go: only for a model that works
            try:
                embeddings.embed_one("hivekeep checks the new embedding model")
            except ProviderError as exc:
                raise ProviderError(
                    f"{exc} Nothing was switched: the hive still uses {stored.model!r}."
                ) from exc
        if stored is None or switch:
            self.store.reset_embedding_space(wanted)
            return
        raise EmbedderMismatch(
            f"This hive's vectors were made by {stored.model!r} ({stored.dimension}-d), but the "
            f"configured embedder is {wanted.model!r} ({wanted.dimension}-d); vectors of two "
            f"models cannot be mixed. Run `hivekeep reembed` to re-embed every memory with "
            f"{wanted.model!r}, or configure {stored.model!r} again."
        )

    # agents -------------------------------------------------------------------------------------
    def create_agent(self, name: str, role: str = "") -> Agent:
        """A new agent with an empty profile; the name must be unused (case-insensitive)."""
        agent = Agent(self._services, self.store.create_agent(agent_name(name), agent_role(role)))
        self.events.publish("agent:created", agent.id, name=agent.name, role=agent.role)
        return agent

    def agent(self, name: str, *, role: str = "") -> Agent:
        """The agent named ``name``, created (with ``role``) if there is none: get-or-create.

        An existing agent is returned as it is (its role is not changed; use ``update_agent``), so
        a script that calls this on every run keeps working on its second run.

        >>> agent = hive.agent("assistant", role="General helper")  # doctest: +SKIP
        """
        name = agent_name(name)  # starts with a letter: never taken for an id
        try:
            return self.get_agent(name)
        except NotFound:
            pass
        try:
            return self.create_agent(name, role)
        except ConflictError:  # another process created it meanwhile
            return self.get_agent(name)

    def get_agent(self, key: int | str) -> Agent:
        """By id or by name (a string of digits is taken as an id)."""
        if isinstance(key, str):
            key = key.strip()
            if key.isascii() and key.isdigit() and len(key) <= len(str(MAX_ID)):
                key = int(key) if int(key) <= MAX_ID else key  # past any id: a name, unknown
        if not isinstance(key, str):
            check_offset(key, "agent")
        return Agent(self._services, self.store.get_agent(key))

    def conversation_agent(self, conversation_id: int) -> Agent:
        """The agent a conversation belongs to (NotFound when there is no such conversation):
        for an interface addressed by conversation id alone."""
        conversation = self.store.get_conversation(check_id(conversation_id, "conversation"))
        return self.get_agent(conversation.agent_id)

    def agents(self) -> list[Agent]:
        return [Agent(self._services, record) for record in self.store.list_agents()]

    def update_agent(
        self, key: int | str, *, name: str | None = None, role: str | None = None
    ) -> Agent:
        """Rename an agent and/or change its role (None keeps it); names stay unique."""
        agent_id = self.get_agent(key).id
        name = None if name is None else agent_name(name)
        role = None if role is None else agent_role(role)
        agent = Agent(self._services, self.store.update_agent(agent_id, name=name, role=role))
        self.events.publish("agent:updated", agent.id, name=agent.name, role=agent.role)
        return agent

    def agent_footprint(self, key: int | str) -> AgentFootprint:
        """What deleting the agent would remove (private memories, conversations) and keep
        (shared memories), as counts: for a confirmation before ``delete_agent``."""
        return self.store.agent_footprint(self.get_agent(key).id)

    def delete_agent(self, key: int | str) -> AgentFootprint:
        """Delete an agent: its profile, settings, private memories and conversations (with their
        messages, summaries and compaction records). Its shared memories stay, recallable by
        every agent under its name with ``author_deleted`` set; no agent owns them any more (a new
        agent of the same name does not), so only ``forget_memory`` removes them. Returns the
        counts of what went and what stayed."""
        agent = self.get_agent(key)
        footprint = self.store.delete_agent(agent.id)
        self.events.publish("agent:deleted", agent.id, name=agent.name)
        return footprint

    # the admin path: a person acting on the hive, not as any agent ------------------------------
    def update_memory(
        self,
        memory_id: int,
        *,
        content: str | _Keep = KEEP,
        category: Category | str | _Keep = KEEP,
        subject: str | _Keep | None = KEEP,
        importance: int | _Keep | None = KEEP,
    ) -> MemoryRecord:
        """Change a shared memory as a person, whoever wrote it (a deleted author's included);
        re-embedded when its text changes, as ``Agent.update_memory``. Its scope stays shared:
        only its author may make it private."""
        memory_id, changes = memory_changes(
            memory_id, content=content, category=category, subject=subject, importance=importance
        )
        try:
            return self._services.archive.update(
                PERSON, memory_id, changes, written=Change(Actor.PERSON, Operation.UPDATE)
            )
        except NotFound:
            raise NotFound(f"No shared memory with id {memory_id}.") from None

    def forget_memory(self, memory_id: int) -> None:
        """Forget a shared memory as a person (the web UI's delete button, ``DELETE
        /api/memories/{id}``), whoever wrote it: the only way to remove a deleted author's shared
        memories. It goes to the trash (``restore_memory`` brings it back); ``purge`` erases it.
        Private memories are reached only through their agent (``Agent.forget``)."""
        try:
            self._services.archive.forget(PERSON, check_id(memory_id), by=Actor.PERSON)
        except NotFound:
            raise NotFound(
                f"No shared memory with id {memory_id}. A private memory can only be forgotten "
                "through its agent."
            ) from None

    def memory_history(self, memory_id: int) -> list[dict[str, Any]]:
        """A shared memory's versions as a person sees them (``Agent.memory_history``)."""
        versions = self._services.history.history(PERSON, check_id(memory_id))
        return [version_view(v) for v in versions]

    def restore_memory(self, memory_id: int, version: int | None = None) -> MemoryRecord:
        """Undo a person's forget of a shared memory, or restore one of its versions."""
        if version is not None:
            check_version(version)
        return self._services.history.restore(PERSON, check_id(memory_id), version, by=Actor.PERSON)

    def trash(self, *, limit: int = 50, offset: int = 0) -> list[TrashedMemory]:
        """Shared memories in the trash (any author's), newest deletion first."""
        bounded(limit, "limit", 1, 200)
        check_offset(offset)
        return self._services.history.trash(PERSON, limit, offset)[0]

    def purge_shared(self, memory_id: int) -> None:
        """Erase a shared memory for good as a person, whoever wrote it (``DELETE
        /api/memories/{id}?purge=true``); NotFound for a private one."""
        self._services.history.purge_owned(PERSON, check_id(memory_id))

    def purge(self, memory_id: int) -> None:
        """Erase a memory for good, whoever wrote it, live or in the trash: its rows, full-text
        and vector entries and its whole history, leaving no trace of its text in the SQLite
        file or its WAL (docs/memory.md, "Purge"). Raises NotFound when there is no such memory.
        An operator's action: it takes a memory id, not an agent. Purging again a memory whose
        purge was cut short during its clean-up finishes that clean-up instead of failing."""
        if not self._services.history.purge(check_id(memory_id)):
            raise NotFound(f"No memory with id {memory_id}, live or in the trash.")

    # the review inbox ---------------------------------------------------------------------------
    def pending(self, agent: int | str | None = None) -> list[PendingWrite]:
        """Writes held for a person's review (``agent.configure(review=...)``), oldest first:
        every agent's, or one's. Nothing held is recalled, listed or exported as a memory."""
        agent_id = None if agent is None else self.get_agent(agent).id
        return self._inbox.pending(agent_id)

    def approve(self, pending_id: int, content: str | None = None) -> Memorized | MemoryRecord:
        """Write a held write through the write path (dedup, history, the credential check),
        with ``content`` as its text when given (an edit, recorded as a person's). A held memorize
        answers its ``Memorized``, a held update the memory as it is now."""
        return self._inbox.approve(check_id(pending_id), content)

    def reject(self, pending_id: int) -> None:
        """Drop a held write; nothing of it is kept. NotFound when no such write waits."""
        self._inbox.reject(check_id(pending_id))

    def finish_purges(self) -> list[int]:
        """Finish the clean-up of every purge cut short by a crash or a kill (``hivekeep purge
        --resume``; opening the hive does it too). Returns the ids of the purges this hive has
        finished, here or when it opened; raises StoreError if one still could not finish."""
        finished = self._services.history.finish_purges()
        self._services.history.check_scrubbed()
        return finished

    # models and upkeep --------------------------------------------------------------------------
    def set_agent_llm(self, key: int | str, llm: LLM | str | None) -> None:
        """The agent's chat model: an object (this process only), a ``provider:model`` spec
        (stored with the agent), or None (back to the hive's model)."""
        agent = self.get_agent(key)
        if isinstance(llm, str) or llm is None:
            self._services.llms.set_agent_llm(agent.id, None)
            self._services.conversations.configure(agent.id, model=llm)
        else:
            self._services.llms.set_agent_llm(agent.id, llm)

    def bootstrap(self) -> BootstrapOutcome:
        """Compile a first profile for agents whose profile is empty (once per hive; SPEC §9)."""
        return self._services.compiler.bootstrap()

    def resume(self, agent: int | str | None = None) -> Resumed:
        """The deferred start-up work: bootstrap (unless ``HIVEKEEP_BOOTSTRAP=off``), then every
        batch whose maintenance is still pending (left by a crash or an LLM outage). Servers and
        the CLI call this after opening; without it, a batch is retried at its agent's next
        compaction. ``agent``: only that agent's work (``hivekeep chat`` reports on its own)."""
        only = None if agent is None else {self.get_agent(agent).id}
        bootstrap = (
            self._services.compiler.bootstrap(only)
            if self.settings.bootstrap == "on"
            else BootstrapOutcome(False, False)
        )
        maintained = []
        for record in self.store.list_agents():
            if only is not None and record.id not in only:
                continue
            if not self._services.maintenance.pending(record.id):
                continue
            try:
                with AgentLease(self.store, record.id):
                    llm = self._services.llms.for_purpose(record.id, "maintenance")
                    outcome = self._services.maintenance.run_pending(record.id, record.name, llm)
            except HivekeepError as exc:
                log.warning("Pending maintenance of agent %s not run: %s", record.name, exc)
                continue
            if outcome is not None:
                maintained.append(outcome)
        return Resumed(bootstrap, tuple(maintained))

    def import_chats(
        self,
        source: str,
        path: str | Path,
        *,
        agent: str,
        bootstrap: bool = False,
        progress: Progress | None = None,
    ) -> ChatImport:
        """``Agent.import_chats`` for the agent named ``agent``, created if it does not exist,
        once the file is checked and (``bootstrap``) a model found: a bad file or a missing
        model stores nothing, not even the agent (``hivekeep import-chats``)."""
        importer = self._services.chat_imports
        total = importer.check(source, Path(path))
        try:
            record = self.get_agent(agent).record
        except AgentNotFound:
            if bootstrap and not (self.llm_configured or self.settings.extraction_model):
                raise LLMNotConfigured(NO_LLM.format(what=BOOTSTRAP)) from None
            record = self.agent(agent).record
        return importer.run(
            record, source, Path(path), bootstrap=bootstrap, progress=progress, checked=total
        )

    def set_llm_credentials(
        self, provider: str, *, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        """Use this API key and/or base URL for ``provider``'s models in this process only: never
        stored in the hive, exported or logged (a server's Settings page sets them). Both None
        forgets them."""
        self._services.llms.set_credentials(provider, api_key=api_key, base_url=base_url)

    def llm_credentials(self) -> dict[str, dict[str, str | bool | None]]:
        """The credentials set in this process per provider: ``api_key_set`` and ``base_url``."""
        return self._services.llms.credentials()

    def llm_status(self) -> tuple[str | None, str | None]:
        """The hive's chat model (spec or model id, None without one) and why it cannot be used
        (e.g. its API key is missing), or None when it can."""
        return self._services.llms.default_status()

    def check_llm(self, spec: str) -> str:
        """The model id a ``provider:model`` spec gives here (with the credentials set in this
        process); ValidationError when it cannot work."""
        return self._services.llms.build(spec).model_id

    @property
    def secrets(self) -> CredentialScan:
        """Credentials the hive already holds: ``scan(agents=None, redact=False, purge=False)``
        (docs/guarantees.md, "Credentials").

        >>> [f.what for f in hive.secrets.scan()]  # doctest: +SKIP
        """
        return self._secrets

    @property
    def tokens(self) -> TokenService:
        """The hive's scoped API tokens: ``create``, ``list``, ``revoke``, ``verify``
        (docs/server.md, "Scoped tokens").

        >>> hive.tokens.create("notes-app", ["assistant"], read_only=True).token  # doctest: +SKIP
        """
        return self._tokens

    # what interfaces show about the hive's set-up -----------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedding model this hive's vectors are made with."""
        return self._services.embeddings.embedder

    @property
    def embedding_space(self) -> EmbeddingSpace:
        """The embedder's model id and dimension, as the hive records them."""
        return self._services.embeddings.space

    def data_version(self) -> int | None:
        """Changes when another process writes to the hive (``Store.data_version``); None on
        PostgreSQL. A server polls it to tell its pages about CLI writes."""
        return self.store.data_version()

    @property
    def llm_configured(self) -> bool:
        """Whether the hive has a default chat model (or an agent has one in this process)."""
        return self._services.llms.configured

    def has_upkeep_model(self) -> bool:
        """Whether any upkeep can run: the hive's model, or any agent's own (chat or
        extraction); a server runs ``resume`` at start only then."""
        llms = self._services.llms
        return llms.configured or any(llms.has_upkeep_model(a.id) for a in self.store.list_agents())

    @property
    def profile_budget(self) -> int:
        """The token budget of every agent's profile."""
        return self._services.profiles.budget

    @property
    def compaction_defaults(self) -> CompactionSettings:
        """The hive's compaction numbers (an agent's overrides apply on top: ``configure``)."""
        return self._services.conversations.defaults

    # embeddings ---------------------------------------------------------------------------------
    def backfill(self, progress: Progress | None = None) -> Backfill:
        """Embed every memory still waiting for a vector (e.g. after an embedder outage)."""
        return self._services.archive.backfill(progress=progress)

    def reembed(self, progress: Progress | None = None, *, everything: bool = False) -> Backfill:
        """Finish switching embedders: embed every pending memory (``everything``: all of them)."""
        if everything:
            self.store.reset_embedding_space(self._services.embeddings.space)
        return self._services.archive.backfill(progress=progress)

    # export and import --------------------------------------------------------------------------
    def export(
        self, out: TextIO, *, agent: int | str | None = None, history: bool = False
    ) -> ExportReport:
        """Write the hive (or one agent) to ``out`` as JSONL: a backup, or a move to another hive
        or backend (docs/storage.md, "Export and import"). ``history``: the kept versions of
        memories and profiles, and the trash, too; ``import_`` puts them back as they were."""
        agent_id = None if agent is None else self.get_agent(agent).id
        from hivekeep.services.transfer import export_jsonl

        return export_jsonl(self.store, out, agent_id=agent_id, history=history)

    def import_(
        self,
        path: str | Path,
        *,
        replace_profiles: bool = False,
        allow_over_budget: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Merge an export file into this hive. Every line is checked first (a bad file writes
        nothing); agents merge by name and memories are deduplicated, so re-importing is safe.
        It is written in batches (one transaction each, so other writers never wait long): one
        that stopped part-way is finished by importing the same file again.

        Memories get the ``memorize`` tool's limits; a profile over this hive's token budget is
        refused unless ``allow_over_budget`` (then it is imported whole)."""
        from hivekeep.services.transfer import Importer

        importer = Importer(
            self.store,
            self._services.embeddings,
            self._services.conversations,
            self._services.archive,
            profile_budget=self.settings.profile_max_tokens,
        )
        return importer.run(
            path,
            replace_profiles=replace_profiles,
            allow_over_budget=allow_over_budget,
            progress=progress,
        )

    # backup -------------------------------------------------------------------------------------
    @staticmethod
    def backup(db: str | Path, target: str | Path, progress: BackupProgress | None = None) -> Path:
        """Copy the SQLite hive at ``db`` to ``target`` (a new file) with SQLite's online backup
        API, without opening it: safe while other processes write, the copy is one committed
        state (docs/storage.md). A PostgreSQL hive is backed up with pg_dump instead."""
        if is_postgres_url(str(db)):
            raise ValidationError(
                "hivekeep backup copies SQLite files; back up a PostgreSQL hive with pg_dump "
                "(see docs/storage.md)."
            )
        return backup_file(db, target, progress)

    # lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
        self.store.close()

    def __enter__(self) -> Hive:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
