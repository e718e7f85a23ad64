"""The maintenance call (SPEC §8): one LLM call that mines summarised batches into the archive and
rewrites the profile, with the guards, and a status per summary so no batch is silently skipped.

Order of writes, chosen for crash safety: the consolidation ops (all in one transaction, each on a
memory unchanged since it was shown, so a retry after a crash finds other groups), then new
memories (deduplicated, so a retry re-adds nothing), then memory updates, then the profile
(compare-and-swap), then the summaries' status. A crash anywhere before the last step leaves them
``pending`` and the whole step is retried.

Privacy follows the text: the call writes into private memories only. New memories are private,
an update of a memory shared since it was shown is skipped (checked in the update's transaction),
and consolidation ops apply only to memories unchanged since they were shown in private groups.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from hivekeep.core import consolidation as c
from hivekeep.core import maintenance as m
from hivekeep.core.messages import Message
from hivekeep.core.transcript import DatedText, summary_heading, transcript
from hivekeep.errors import HivekeepError, NotFound, ProviderError
from hivekeep.metrics import MAINTENANCE, MAINTENANCE_SECONDS, timed
from hivekeep.providers.llm.base import LLM
from hivekeep.services.archive import ArchiveService
from hivekeep.services.profile import ProfileService
from hivekeep.store.base import (
    KEEP,
    Change,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    NewMemory,
    Store,
)
from hivekeep.store.conversations import SummaryRecord
from hivekeep.types import Actor, Operation, Scope, Source

log = logging.getLogger(__name__)

BY_MAINTENANCE = Change(Actor.MAINTENANCE, Operation.UPDATE)

MAX_ATTEMPTS = 5  # after this many failures a batch stays 'failed' (visible) until retried by hand
KNOWN_POOL = 1000  # newest own memories (only own: see _own_memories) the index is chosen from
MAX_OUTPUT_TOKENS = 4096
BATCH_SHARE = 0.5  # of the model's window that one call's batch of summaries may fill


class _SharedNow(Exception):
    """Rolls back a maintenance update of a memory that is shared by the time it is written."""


@dataclass(frozen=True)
class MaintenanceOutcome:
    summary_ids: tuple[int, ...]
    status: str  # "done" | "failed"
    memories_added: int = 0
    memories_updated: int = 0
    profile_updated: bool = False
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the profile version (revision) the rewrite wrote, and the one it replaced; None: no rewrite
    profile_version: int | None = None
    profile_version_before: int | None = None
    memories_consolidated: int = 0  # forgotten by the consolidate ops (merged away or retired)


class MaintenanceService:
    def __init__(self, store: Store, archive: ArchiveService, profiles: ProfileService) -> None:
        self.store = store
        self.archive = archive
        self.profiles = profiles

    def pending(self, agent_id: int) -> list[SummaryRecord]:
        """Batches still waiting for (or failed at) their maintenance call, oldest first."""
        return self.store.unmaintained_summaries(agent_id, MAX_ATTEMPTS)

    def run_pending(self, agent_id: int, agent_name: str, llm: LLM) -> MaintenanceOutcome | None:
        """One maintenance call over the oldest waiting batches that fit; None if none wait."""
        waiting = self.pending(agent_id)
        if not waiting:
            return None
        chosen: list[SummaryRecord] = []
        used = 0
        for summary in waiting:
            cost = summary.tokens + sum(
                msg.tokens for msg in self.store.summary_messages([summary.id])
            )
            if chosen and used + cost > BATCH_SHARE * llm.context_window:
                break
            chosen.append(summary)
            used += cost
        return self.run(agent_id, agent_name, llm, chosen)

    def run(
        self, agent_id: int, agent_name: str, llm: LLM, summaries: Sequence[SummaryRecord]
    ) -> MaintenanceOutcome:
        with timed(MAINTENANCE_SECONDS):
            outcome = self._run(agent_id, agent_name, llm, summaries)
        MAINTENANCE.labels(outcome=outcome.status).inc()
        return outcome

    def _run(
        self, agent_id: int, agent_name: str, llm: LLM, summaries: Sequence[SummaryRecord]
    ) -> MaintenanceOutcome:
        ids = tuple(s.id for s in summaries)
        messages = self.store.summary_messages(ids)
        lines = transcript(messages, agent_name)
        profile = self.profiles.get(agent_id)
        summary_text = "\n\n".join(f"{summary_heading(_dated(s))}\n{s.text}" for s in summaries)
        batch_text = summary_text + "\n" + "\n".join(line.text for line in lines)
        pool = self._own_memories(agent_id)
        known = m.select_known_memories([_known(r) for r in pool], batch_text)
        twins = self._twin_groups(agent_id, pool, since=min(s.first_at for s in summaries))
        request = m.MaintenanceInput(
            agent_name=agent_name,
            profile=profile.text,
            summary=summary_text,
            transcript=lines,
            memories=known,
            budget_tokens=self.profiles.budget,
            today=datetime.now(UTC).date().isoformat(),
            twins=twins,
        )
        prompt = [Message.from_openai(x) for x in m.build_messages(request)]
        try:
            reply = llm.complete(prompt, max_tokens=MAX_OUTPUT_TOKENS, call_site="maintenance")
        except ProviderError as exc:
            return self._failed(ids, f"the maintenance model failed: {exc}")
        parsed = m.parse_reply(reply.content, known, twins)
        if parsed.archive_error and parsed.profile_error:
            return self._failed(
                ids, f"unusable reply: {parsed.archive_error}; {parsed.profile_error}"
            )
        notes = list(parsed.notes)
        consolidated = self._consolidate(agent_id, parsed.consolidate, twins, notes)
        added, updated = self._apply(agent_id, parsed.operations, summaries, notes)
        if parsed.archive_error:
            notes.append(parsed.archive_error)
        rewrite = self.profiles.rewrite(
            agent_id, parsed.profile, profile.revision, source="maintenance"
        )
        notes.extend(rewrite.notes)
        self.store.record_maintenance(ids, "done", None)
        return MaintenanceOutcome(
            ids,
            "done",
            added,
            updated,
            rewrite.updated,
            None,
            tuple(notes),
            profile_version=rewrite.profile.revision if rewrite.updated else None,
            profile_version_before=profile.revision if rewrite.updated else None,
            memories_consolidated=consolidated,
        )

    def _own_memories(self, agent_id: int) -> list[MemoryRecord]:
        """The pool the known memories are chosen from: the agent's own newest ``KNOWN_POOL``.

        The rule: the agent's own memories, private and shared, get the whole pool, and other
        agents' shared memories never take a place in it, however many there are. The model may
        only update what the agent owns (updates are owner-only), and what it re-extracts from
        others' shared memories is caught by the write path's dedup; if shared memories could
        fill the pool, the model would not see the agent's own and would extract them again.
        """
        own = MemoryFilter(own=True)
        return self.store.list_memories(agent_id, own, KNOWN_POOL, 0)[0]

    def _twin_groups(
        self, agent_id: int, pool: Sequence[MemoryRecord], *, since: str
    ) -> list[c.TwinGroup]:
        """Near twins of the agent's memories written since the batch began (the newest
        ``MAX_RECENT``), found in the pool: one read of stored vectors, one matrix product.

        Memories written before the batch began were shown to an earlier maintenance call, which
        left them apart; showing them again every time would only cost tokens.
        """
        if not any(r.updated_at >= since for r in pool):
            return []
        vectors = self.store.vectors(agent_id, [r.id for r in pool])
        recent = [r for r in pool if r.updated_at >= since and r.id in vectors][: c.MAX_RECENT]
        others = [r for r in pool if r.id in vectors]
        if not recent:
            return []
        similarity = (
            np.stack([vectors[r.id] for r in recent]) @ np.stack([vectors[r.id] for r in others]).T
        )
        links = []
        for memory, row in zip(recent, similarity, strict=True):
            close = np.flatnonzero(row >= c.TWIN_SIMILARITY)
            ranked = close[np.argsort(-row[close], kind="stable")]
            links.append(
                c.TwinLinks(
                    _candidate(memory), [(_candidate(others[j]), float(row[j])) for j in ranked]
                )
            )
        return c.twin_groups(links)

    def _consolidate(
        self,
        agent_id: int,
        plan: c.Consolidation,
        twins: Sequence[c.TwinGroup],
        notes: list[str],
    ) -> int:
        """Apply every op of ``plan`` through the write path, in one transaction, or none.

        None when the plan was invalid, or when a memory it touches was changed or forgotten
        since it was shown (by a person or a tool while the model was thinking): the ops were
        written against the texts shown. Returns how many memories were forgotten.
        """
        if plan.errors:
            notes.append("consolidation not applied: " + "; ".join(plan.errors))
            return 0
        if not plan.ops:
            return 0
        shown = {member.memory_id: member for group in twins for member in group.members}
        ids = [i for op in plan.ops for i in op.ids]
        forgotten = 0
        try:
            with self.archive.events.deferred(), self.store.transaction():
                current = self.store.fetch_memories(agent_id, ids)
                stale = [
                    i
                    for i in ids
                    if i not in current
                    or current[i].agent_id != agent_id
                    or current[i].updated_at != shown[i].updated_at
                ]
                if stale:
                    notes.append(
                        f"consolidation not applied: memory {stale[0]} changed or was forgotten "
                        "since it was shown"
                    )
                    return 0
                for op in plan.ops:
                    if isinstance(op, c.Merge):
                        changes = MemoryChanges(content=op.content)
                        self.archive.update(agent_id, op.keep, changes, written=BY_MAINTENANCE)
                    for memory_id in op.forget:
                        self.archive.forget(agent_id, memory_id, by=Actor.MAINTENANCE)
                        forgotten += 1
        except HivekeepError as exc:
            notes.append(f"consolidation not applied: {exc}")
            return 0
        notes.extend(_described(op) for op in plan.ops)
        return forgotten

    def _apply(
        self,
        agent_id: int,
        operations: Sequence[m.AddMemory | m.UpdateMemory],
        summaries: Sequence[SummaryRecord],
        notes: list[str],
    ) -> tuple[int, int]:
        last = summaries[-1]
        context = f"From a conversation, {last.first_at[:10]} to {last.last_at[:10]}"
        adds = [
            NewMemory(
                agent_id=agent_id,
                content=op.content,
                category=op.category,
                subject=op.subject,
                importance=op.importance,
                scope=Scope.PRIVATE,
                source_context=context,
                source=Source.AUTOMATIC,
                source_message_id=last.last_message_id,
                created_at=last.last_at,  # when it happened, so `since` and dates work
            )
            for op in operations
            if isinstance(op, m.AddMemory)
        ]
        added = sum(not r.duplicate for r in self.archive.memorize_many(adds)) if adds else 0
        updated = 0
        for op in operations:
            if not isinstance(op, m.UpdateMemory):
                continue
            changes = MemoryChanges(
                content=KEEP if op.content is None else op.content,
                category=KEEP if op.category is None else op.category,
                subject=KEEP if op.subject is None else op.subject,
                importance=KEEP if op.importance is None else op.importance,
            )
            try:
                if self._update_private(agent_id, op.memory_id, changes):
                    updated += 1
                else:
                    notes.append(
                        f"update of memory {op.memory_id} skipped: it is shared now "
                        "(maintenance never changes a shared memory)"
                    )
            except NotFound:
                notes.append(f"update of memory {op.memory_id} skipped: it no longer exists")
            except HivekeepError as exc:
                notes.append(f"update of memory {op.memory_id} skipped: {exc}")
        return added, updated

    def _update_private(self, agent_id: int, memory_id: int, changes: MemoryChanges) -> bool:
        """Update the memory if it is private when written, or roll the update back and say
        False: a person may share it while the model thinks, and the update was written for a
        private memory. The scope is the one the update's row lock saw (both engines)."""
        try:
            with self.archive.events.deferred(), self.store.transaction():
                written = self.archive.update(agent_id, memory_id, changes, written=BY_MAINTENANCE)
                if written.scope is not Scope.PRIVATE:
                    raise _SharedNow
        except _SharedNow:
            return False
        return True

    def _failed(self, ids: tuple[int, ...], error: str) -> MaintenanceOutcome:
        log.warning("Maintenance of summaries %s failed: %s", ids, error)
        self.store.record_maintenance(ids, "failed", error)
        return MaintenanceOutcome(ids, "failed", error=error)


def _known(r: MemoryRecord) -> m.KnownMemory:
    return m.KnownMemory(r.id, r.content, r.category.value, r.subject, r.created_at, r.scope)


def _candidate(r: MemoryRecord) -> c.TwinCandidate:
    return c.TwinCandidate(r.id, r.content, r.subject, r.created_at, r.updated_at, r.scope)


def _described(op: c.Merge | c.Retire) -> str:
    if isinstance(op, c.Merge):
        return f"merged memories {', '.join(map(str, op.forget))} into memory {op.keep}"
    return f"retired memory {op.memory_id}" + (f": {op.reason}" if op.reason else "")


def _dated(s: SummaryRecord) -> DatedText:
    return DatedText(s.text, s.first_at, s.last_at, s.message_count, s.depth)
