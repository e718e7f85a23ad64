"""``hivekeep secrets scan``: credentials an older hive already holds (written before the check
existed, or under ``allow``), found, and fixed through the write path (docs/guarantees.md,
"Credentials")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivekeep.core.credentials import find_credentials
from hivekeep.core.credentials import redact as redact_text  # ``redact`` is a flag here
from hivekeep.core.tokens import count_tokens
from hivekeep.services.archive import ArchiveService
from hivekeep.store.base import Change, MemoryChanges, MemoryFilter, Store
from hivekeep.types import Actor, Operation


@dataclass(frozen=True)
class Finding:
    """A credential an older hive already holds: where (``what``: memory, memory version,
    profile, profile version, trash), whose, and which kinds."""

    agent: str
    what: str
    id: int  # the memory's id; for a profile, the agent's
    version: int | None
    kinds: tuple[str, ...]
    fixed: bool = False  # redacted (current text) or purged (a version, the trash)


class CredentialScan:
    """``hivekeep secrets scan``: find what was written before the check existed (or under
    ``allow``), and fix it through the write path, history kept unless a purge is asked for."""

    def __init__(self, store: Store, archive: ArchiveService) -> None:
        self.store = store
        self.archive = archive

    def scan(
        self, agents: Sequence[str] | None = None, *, redact: bool = False, purge: bool = False
    ) -> list[Finding]:
        """Every credential the named agents hold (None: every agent); ``redact`` rewrites their
        current texts as new versions (history kept), ``purge`` deletes the older versions and
        trashed memories that hold one (a version keeps the text it had).

        >>> hive.secrets.scan(redact=True, purge=True)  # doctest: +SKIP
        """
        named = None if agents is None else {self.store.get_agent(n).id for n in agents}
        agents_ = [a for a in self.store.list_agents() if named is None or a.id in named]
        found: list[Finding] = []
        for agent in agents_:
            found += self._memories(agent.id, agent.name, redact=redact, purge=purge)
            found += self._profile(agent.id, agent.name, redact=redact, purge=purge)
        return found

    def _memories(self, agent_id: int, name: str, *, redact: bool, purge: bool) -> list[Finding]:
        found: list[Finding] = []
        offset = 0
        while True:
            page, total = self.store.list_memories(agent_id, MemoryFilter(own=True), 500, offset)
            for memory in page:
                kinds = _kinds(memory.content, memory.subject, memory.source_context)
                if kinds:
                    if redact:
                        changes = MemoryChanges(
                            content=redact_text(memory.content),
                            subject=memory.subject and redact_text(memory.subject),
                            source_context=memory.source_context
                            and redact_text(memory.source_context),
                        )
                        self.archive.update(agent_id, memory.id, changes, written=BY_SCRUB)
                    found.append(Finding(name, "memory", memory.id, None, kinds, redact))
                found += self._versions(agent_id, name, memory.id, purge=purge)
            offset += len(page)
            if not page or offset >= total:
                break
        offset = 0
        while True:
            trashed, total = self.store.list_trash(agent_id, 500, offset)
            for item in trashed:
                memory = item.memory
                kinds = _kinds(memory.content, memory.subject, memory.source_context)
                if kinds:
                    if purge:
                        self.store.erase_memory(memory.id)
                    found.append(Finding(name, "trash", memory.id, None, kinds, purge))
            offset += len(trashed)
            if not trashed or offset >= total:
                break
        return found

    def _versions(self, agent_id: int, name: str, memory_id: int, *, purge: bool) -> list[Finding]:
        """Older versions of a memory holding a credential (the current one is the memory)."""
        versions = self.store.memory_history(memory_id, agent_id)[1:]
        held = [(v.version, _kinds(v.content, v.subject)) for v in versions]
        held = [(version, kinds) for version, kinds in held if kinds]
        if purge and held:
            self.store.drop_memory_versions(memory_id, [version for version, _ in held])
        return [
            Finding(name, "memory version", memory_id, version, kinds, purge)
            for version, kinds in held
        ]

    def _profile(self, agent_id: int, name: str, *, redact: bool, purge: bool) -> list[Finding]:
        found: list[Finding] = []
        current = self.store.get_profile(agent_id)
        kinds = _kinds(current.text)
        if kinds:
            if redact:
                text = redact_text(current.text)
                self.store.save_profile(
                    agent_id,
                    text,
                    count_tokens(text),
                    expected_revision=current.revision,
                    manual=True,
                    written=BY_SCRUB,
                )
            found.append(Finding(name, "profile", agent_id, None, kinds, redact))
        older = [
            (v.version, _kinds(v.text))
            for v in self.store.profile_history(agent_id)
            if v.version != current.revision
        ]
        held = [(version, kinds) for version, kinds in older if kinds]
        if purge and held:
            self.store.drop_profile_versions(agent_id, [version for version, _ in held])
        found += [
            Finding(name, "profile version", agent_id, version, kinds, purge)
            for version, kinds in held
        ]
        return found


BY_SCRUB = Change(Actor.PERSON, Operation.UPDATE)


def _kinds(*texts: str | None) -> tuple[str, ...]:
    return tuple(c.kind for text in texts if text for c in find_credentials(text))
