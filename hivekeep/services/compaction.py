"""Compaction (SPEC §7): fold old messages into dated summaries, merge old summaries, then one
maintenance call — one agent at a time, across processes, with a record and events for each run.

A run is: take the agent's lease; pass after pass (bounded), fold what the planner says into a new
summary and merge summaries when they grow too many or too big; then run the maintenance call once
over every batch still waiting (the new ones and any left by a crash or an outage); write a
compaction record into the conversation; publish ``compacting:*`` events throughout.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hivekeep.core import compaction as plan
from hivekeep.core.context import message_info
from hivekeep.core.messages import Message
from hivekeep.core.tokens import count_tokens
from hivekeep.core.transcript import fold_messages, merge_messages, transcript
from hivekeep.errors import HivekeepError, ProviderError
from hivekeep.events import EventBus
from hivekeep.metrics import COMPACTION, COMPACTION_SECONDS, timed
from hivekeep.providers.llm.base import LLM
from hivekeep.services.conversation import ConversationService, dated
from hivekeep.services.llms import LLMResolver
from hivekeep.services.maintenance import MaintenanceOutcome, MaintenanceService
from hivekeep.services.profile import ProfileService
from hivekeep.store.base import AgentRecord, Store
from hivekeep.store.conversations import MessageRecord, NewMessage, NewSummary
from hivekeep.store.leases import AgentBusy, AgentLease

log = logging.getLogger(__name__)

FOLD_READ_SHARE = 0.6  # of the compaction model's window one summariser call may read
SUMMARY_MAX_TOKENS = 2048


@dataclass(frozen=True)
class CompactionOutcome:
    """What one compaction run did; also stored as the conversation's compaction record."""

    conversation_id: int
    status: str  # "done" | "nothing" (nothing to fold) | "error"
    passes: int = 0
    messages_folded: int = 0
    summary_ids: tuple[int, ...] = ()
    merged_ids: tuple[int, ...] = ()
    summary: str = ""
    maintenance: MaintenanceOutcome | None = None
    error: str | None = None
    record_id: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def memories_extracted(self) -> int:
        return self.maintenance.memories_added if self.maintenance else 0

    @property
    def profile_updated(self) -> bool:
        return bool(self.maintenance and self.maintenance.profile_updated)


class CompactionService:
    def __init__(
        self,
        store: Store,
        events: EventBus,
        conversations: ConversationService,
        profiles: ProfileService,
        maintenance: MaintenanceService,
        llms: LLMResolver,
    ) -> None:
        self.store = store
        self.events = events
        self.conversations = conversations
        self.profiles = profiles
        self.maintenance = maintenance
        self.llms = llms

    def needed(self, agent: AgentRecord, conversation_id: int) -> bool:
        """§7.1 and §7.5 for the agent's model: over the trigger, with a fold worth a call (or
        summaries to merge). Over the trigger with nothing foldable yet waits for more."""
        return self.waiting(agent, conversation_id) is None

    def waiting(self, agent: AgentRecord, conversation_id: int) -> str | None:
        """Why compaction is not running now (for the context bar), or None when it is due."""
        window = self.llms.chat_model(agent.id).context_window
        settings = self.conversations.compaction_settings(agent.id)
        context = self.conversations.context(
            agent, conversation_id, self.profiles.get(agent.id).text
        )
        trigger = int(settings.threshold_percent * window / 100)
        if not plan.needs_compaction(context.tokens, window, settings):
            return (
                f"Compaction waits until the context passes {settings.threshold_percent:g} % "
                f"({trigger:,} tokens): {trigger - context.tokens:,} to go."
            )
        infos = [message_info(m) for m in context.raw]
        summaries = [
            plan.SummaryInfo(s.id, s.tokens, s.depth, s.first_at, s.first_message_id or 0)
            for s in context.summaries
        ]
        if (
            plan.plan_fold(infos, window, settings, reserved_tokens=context.reserved_tokens)
            is not None
            or plan.plan_merge(summaries, window, settings) is not None
        ):
            return None
        if not context.raw:
            return (
                f"Over the {settings.threshold_percent:g} % trigger with no message to fold: the "
                f"system prompt, profile, tool schemas and summaries alone take "
                f"{context.reserved_tokens:,} of the {window:,} tokens."
            )
        return (
            f"Over the {settings.threshold_percent:g} % trigger, but the messages older than the "
            f"recent ones kept word for word are under {plan.min_batch(window, settings):,} "
            "tokens, too few to summarise yet: compaction runs after a later turn (or Force "
            "compact now)."
        )

    def room_warning(self, agent: AgentRecord) -> str | None:
        """What the agent's model window leaves for the conversation, when that is too little."""
        window = self.llms.chat_model(agent.id).context_window
        settings = self.conversations.compaction_settings(agent.id)
        fixed = self.conversations.fixed_tokens(agent, self.profiles.get(agent.id).text)
        return plan.room_warning(fixed, window, settings)

    def after_turn(self, agent: AgentRecord, conversation_id: int) -> CompactionOutcome | None:
        """The check after each turn: compact when over the trigger, else only retry upkeep.

        Never raises for a busy agent (another process is compacting it right now).
        """
        try:
            if self.needed(agent, conversation_id):
                return self.compact(agent, conversation_id)
            if self.maintenance.pending(agent.id):
                with AgentLease(self.store, agent.id):
                    self._maintain(agent)
        except AgentBusy:
            log.info("Agent %s is being compacted elsewhere; skipping this check", agent.id)
        return None

    def compact(
        self, agent: AgentRecord, conversation_id: int, *, force: bool = False
    ) -> CompactionOutcome:
        """One compaction run. Raises AgentBusy if one is already running for this agent; every
        other failure is returned (status ``error``), recorded and published, never raised."""
        with AgentLease(self.store, agent.id), timed(COMPACTION_SECONDS):
            outcome = self._run(agent, conversation_id, force)
        COMPACTION.labels(outcome=outcome.status).inc()
        return outcome

    def _run(self, agent: AgentRecord, conversation_id: int, force: bool) -> CompactionOutcome:
        self.events.publish(
            "compacting:start", agent.id, conversation_id=conversation_id, force=force
        )
        run = _Run(conversation_id)
        try:
            settings = self.conversations.compaction_settings(agent.id)
            window = self.llms.chat_model(agent.id, "compaction").context_window
            summariser = self.llms.for_purpose(agent.id, "compaction")
            while True:
                run.passes += 1
                self._progress(agent, run, "summarising")
                folded = self._fold(
                    agent, conversation_id, settings, window, summariser, force and run.passes == 1
                )
                if folded is not None:
                    run.folded.extend(folded[0])
                    run.summaries.append(folded[1])
                    run.texts.append(folded[2])
                merged = self._merge(agent, run, settings, window, summariser)
                run.merged.extend(merged or ())
                if folded is None and merged is None:
                    break
                tokens = self.conversations.context(
                    agent, conversation_id, self.profiles.get(agent.id).text
                ).tokens
                if not plan.should_catch_up(run.passes, tokens, window, settings):
                    break
            if run.summaries or self.maintenance.pending(agent.id):
                self._progress(agent, run, "maintenance")
                run.maintenance = self._maintain(agent)
        except HivekeepError as exc:
            return self._finish(agent, run, str(exc))
        return self._finish(agent, run, None)

    def _progress(self, agent: AgentRecord, run: _Run, stage: str, **data: Any) -> None:
        self.events.publish(
            "compacting:progress",
            agent.id,
            conversation_id=run.conversation_id,
            stage=stage,
            pass_number=run.passes,
            **data,
        )

    def _fold(
        self,
        agent: AgentRecord,
        conversation_id: int,
        settings: plan.CompactionSettings,
        window: int,
        summariser: LLM,
        force: bool,
    ) -> tuple[list[int], int, str] | None:
        context = self.conversations.context(
            agent, conversation_id, self.profiles.get(agent.id).text
        )
        raw = context.raw
        chosen = plan.plan_fold(
            [message_info(m) for m in raw],
            window,
            settings,
            force=force,
            max_fold_tokens=max(1, int(FOLD_READ_SHARE * summariser.context_window)),
            reserved_tokens=context.reserved_tokens,
        )
        if chosen is None:
            return None
        batch = [m for m in raw if m.id in set(chosen.fold)]
        prompt = [
            Message.from_openai(x) for x in fold_messages(agent.name, transcript(batch, agent.name))
        ]
        longest = plan.summary_max_tokens(window, settings, SUMMARY_MAX_TOKENS)
        reply = summariser.complete(prompt, max_tokens=longest, call_site="compaction")
        text = reply.content.strip()
        if not text:
            raise ProviderError("the summariser returned an empty summary; nothing was folded")
        summary = self.store.fold(conversation_id, _new_summary(text, batch), chosen.fold)
        return list(chosen.fold), summary.id, text

    def _merge(
        self,
        agent: AgentRecord,
        run: _Run,
        settings: plan.CompactionSettings,
        window: int,
        summariser: LLM,
    ) -> list[int] | None:
        live = self.store.context_summaries(run.conversation_id)
        infos = [
            plan.SummaryInfo(s.id, s.tokens, s.depth, s.first_at, s.first_message_id or 0)
            for s in live
        ]
        chosen = plan.plan_merge(infos, window, settings)
        if chosen is None:
            return None
        sources = [s for s in live if s.id in set(chosen)]
        self._progress(agent, run, "merging", summaries=len(sources))
        prompt = [Message.from_openai(x) for x in merge_messages([dated(s) for s in sources])]
        longest = plan.summary_max_tokens(window, settings, SUMMARY_MAX_TOKENS)
        reply = summariser.complete(prompt, max_tokens=longest, call_site="merge")
        text = reply.content.strip()
        if not text:
            raise ProviderError("the merge call returned an empty summary; nothing was merged")
        self.store.merge(
            run.conversation_id,
            NewSummary(
                text=text,
                tokens=count_tokens(text),
                first_at=sources[0].first_at,
                last_at=sources[-1].last_at,
                message_count=sum(s.message_count for s in sources),
                first_message_id=sources[0].first_message_id,
                last_message_id=sources[-1].last_message_id,
                depth=max(s.depth for s in sources) + 1,
                source_ids=tuple(s.id for s in sources),
            ),
            chosen,
        )
        return list(chosen)

    def _maintain(self, agent: AgentRecord) -> MaintenanceOutcome | None:
        """The one maintenance call of this run (over every waiting batch that fits)."""
        llm = self.llms.for_purpose(agent.id, "maintenance")
        return self.maintenance.run_pending(agent.id, agent.name, llm)

    def _finish(self, agent: AgentRecord, run: _Run, error: str | None) -> CompactionOutcome:
        status = "error" if error else "done" if run.summaries or run.merged else "nothing"
        m = run.maintenance
        details: dict[str, Any] = {
            "status": status,
            "passes": run.passes,
            "messages_folded": len(run.folded),
            "summary_ids": run.summaries,
            "merged_summary_ids": run.merged,
            "summary": "\n\n".join(run.texts),
            "memories_extracted": m.memories_added if m else 0,
            "memories_updated": m.memories_updated if m else 0,
            "memories_consolidated": m.memories_consolidated if m else 0,
            "profile_updated": bool(m and m.profile_updated),
            # the profile History entry of this run's rewrite (the UI's card links to its diff)
            "profile_version": m.profile_version if m else None,
            "profile_version_before": m.profile_version_before if m else None,
            "maintenance_status": m.status if m else None,
            "maintenance_error": m.error if m else None,
            "notes": list(m.notes) if m else [],
            "error": error,
        }
        record_id = None
        if status != "nothing" or m is not None:
            record = NewMessage(
                role="system",
                content=_record_text(details),
                tokens=0,
                is_compaction_record=True,
                record=details,
            )
            record_id = self.store.add_messages(run.conversation_id, [record])[0].id
        self.events.publish(
            "compacting:error" if error else "compacting:done",
            agent.id,
            conversation_id=run.conversation_id,
            record_id=record_id,
            **details,
        )
        return CompactionOutcome(
            conversation_id=run.conversation_id,
            status=status,
            passes=run.passes,
            messages_folded=len(run.folded),
            summary_ids=tuple(run.summaries),
            merged_ids=tuple(run.merged),
            summary=details["summary"],
            maintenance=m,
            error=error,
            record_id=record_id,
            details=details,
        )


@dataclass
class _Run:
    """What a run has done so far (it is reported even when a later step fails)."""

    conversation_id: int
    passes: int = 0
    folded: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    merged: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    maintenance: MaintenanceOutcome | None = None


def _new_summary(text: str, batch: list[MessageRecord]) -> NewSummary:
    return NewSummary(
        text=text,
        tokens=count_tokens(text),
        first_at=batch[0].created_at,
        last_at=batch[-1].created_at,
        message_count=len(batch),
        first_message_id=batch[0].id,
        last_message_id=batch[-1].id,
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _record_text(details: dict[str, Any]) -> str:
    """The compaction record as a person reads it in the history."""
    if details["error"]:
        return f"Compaction failed: {details['error']}"
    parts = [f"Compacted {_count(details['messages_folded'], 'message', 'messages')}"]
    if details["merged_summary_ids"]:
        parts.append(f"merged {_count(len(details['merged_summary_ids']), 'summary', 'summaries')}")
    parts.append(f"{_count(details['memories_extracted'], 'memory', 'memories')} extracted")
    if details["memories_consolidated"]:
        consolidated = _count(details["memories_consolidated"], "memory", "memories")
        parts.append(f"{consolidated} consolidated")
    parts.append("profile updated" if details["profile_updated"] else "profile unchanged")
    if details["maintenance_error"]:
        parts.append(f"maintenance failed ({details['maintenance_error']}); it will be retried")
    return ", ".join(parts) + "."
