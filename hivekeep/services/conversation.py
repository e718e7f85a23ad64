"""Conversations: their records, each agent's compaction numbers, and the context of a turn."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivekeep.core import profile as profile_doc
from hivekeep.core.compaction import CompactionSettings
from hivekeep.core.context import build_context
from hivekeep.core.credentials import SecretsPolicy
from hivekeep.core.messages import Message
from hivekeep.core.text import now_timestamp
from hivekeep.core.tokens import count_tokens
from hivekeep.core.transcript import DatedText
from hivekeep.errors import NotFound, ValidationError
from hivekeep.providers.llm.base import estimate_usage
from hivekeep.providers.llm.context_windows import check_context_window
from hivekeep.store.base import KEEP, AgentRecord, Store, _Keep
from hivekeep.store.conversations import (
    AgentSettings,
    ConversationRecord,
    MessageRecord,
    SummaryRecord,
)

MAX_TITLE_CHARS = 200
TITLE_FROM_MESSAGE_CHARS = 60


def clean_title(title: str) -> str:
    """One line, spaces collapsed, at most ``MAX_TITLE_CHARS`` (else a ValidationError)."""
    if not isinstance(title, str):
        raise ValidationError(f"A conversation title is text, got {type(title).__name__}.")
    title = " ".join(title.split())
    if len(title) > MAX_TITLE_CHARS:
        raise ValidationError(
            f"A conversation title is at most {MAX_TITLE_CHARS} characters, got {len(title)}."
        )
    return title


def first_words(message: str) -> str:
    """A title from a message: its first line's words, cut at a word near 60 characters."""
    words = " ".join(message.split())
    if len(words) <= TITLE_FROM_MESSAGE_CHARS:
        return words
    cut = words[:TITLE_FROM_MESSAGE_CHARS].rsplit(" ", 1)[0] or words[:TITLE_FROM_MESSAGE_CHARS]
    return f"{cut}…"


@dataclass(frozen=True)
class Context:
    """What the model will read next turn, and how full that leaves its window."""

    messages: list[Message]
    tokens: int  # the messages plus the tool schemas offered with them
    raw: list[MessageRecord]
    summaries: list[SummaryRecord]
    reserved_tokens: int  # what compaction cannot fold now: tool schemas, system prompt, summaries


def system_prompt(agent: AgentRecord, profile_text: str) -> str:
    """The cached system prefix: who the agent is, then its memory block (profile + rules)."""
    persona = agent.role.strip() or f"You are {agent.name}, an AI agent with persistent memory."
    return f"{persona}\n\n{profile_doc.system_prompt_block(profile_text)}"


def dated(summary: SummaryRecord) -> DatedText:
    return DatedText(
        summary.text, summary.first_at, summary.last_at, summary.message_count, summary.depth
    )


class ConversationService:
    def __init__(
        self, store: Store, defaults: CompactionSettings, tools: list[dict[str, Any]]
    ) -> None:
        """``tools``: the schemas offered with every turn (``tools.tool_schemas``), handed in by
        the façade; they take room in the window, so a context's size counts them."""
        self.store = store
        self.defaults = defaults
        self.tools = tools
        self._tool_tokens = count_tokens(json.dumps(tools))

    # records ------------------------------------------------------------------------------------
    def create(self, agent_id: int, title: str = "") -> ConversationRecord:
        return self.store.create_conversation(agent_id, clean_title(title))

    def get(
        self, agent_id: int, conversation_id: int, *, trashed: bool = False
    ) -> ConversationRecord:
        """The conversation if it belongs to this agent (another agent's reads as NotFound);
        one in the trash is NotFound too, saying how to restore it, unless ``trashed``."""
        conversation = self.store.get_conversation(conversation_id)
        if conversation.agent_id != agent_id:
            raise NotFound(f"No conversation with id {conversation_id} for this agent.")
        if conversation.deleted_at is not None and not trashed:
            raise NotFound(
                f"Conversation {conversation_id} is in the trash (deleted "
                f"{conversation.deleted_at}): restore it first (`hivekeep conversations restore "
                f"{conversation_id}`, or agent.conversations.restore({conversation_id}))."
            )
        return conversation

    def rename(self, agent_id: int, conversation_id: int, title: str) -> ConversationRecord:
        self.get(agent_id, conversation_id)
        title = clean_title(title)
        if not title:
            raise ValidationError("A conversation's new title needs some text.")
        return self.store.rename_conversation(conversation_id, title)

    def delete(self, agent_id: int, conversation_id: int) -> ConversationRecord:
        """To the trash: out of listings at once, restorable until the retention period ends."""
        self.get(agent_id, conversation_id)
        return self.store.set_conversation_deleted(conversation_id, now_timestamp())

    def restore(self, agent_id: int, conversation_id: int) -> ConversationRecord:
        """Back from the trash, with every message and summary it had."""
        if self.get(agent_id, conversation_id, trashed=True).deleted_at is None:
            raise ValidationError(f"Conversation {conversation_id} is not in the trash.")
        return self.store.set_conversation_deleted(conversation_id, None)

    def title_from_first_message(self, conversation: ConversationRecord, message: str) -> None:
        """An untitled conversation is named after its first message (the UI's, the API's)."""
        if not conversation.title:
            self.store.rename_conversation(conversation.id, first_words(message))

    # settings -----------------------------------------------------------------------------------
    def compaction_settings(self, agent_id: int) -> CompactionSettings:
        """The hive's numbers with this agent's overrides applied."""
        overrides = self.store.get_agent_settings(agent_id).compaction
        return dataclasses.replace(self.defaults, **overrides)

    def configure(
        self,
        agent_id: int,
        *,
        model: str | _Keep | None = KEEP,
        compaction: Mapping[str, Any] | None = None,
        compacting_model: str | _Keep | None = KEEP,
        extraction_model: str | _Keep | None = KEEP,
        context_window: int | _Keep | None = KEEP,
        secrets: str | _Keep | None = KEEP,
        review: str | _Keep = KEEP,
    ) -> AgentSettings:
        """Change the agent's model spec and/or compaction overrides (validated before saving).

        ``compaction`` replaces the overrides: keys are ``CompactionSettings`` fields; ``{}``
        returns to the hive's numbers. ``context_window``: its chat model's window (None: back
        to the hive's).
        """
        current = self.store.get_agent_settings(agent_id)
        new = current
        if not isinstance(context_window, _Keep):
            if context_window is not None:
                check_context_window(context_window)
            new = dataclasses.replace(new, context_window=context_window)
        if not isinstance(secrets, _Keep):
            if secrets is not None and secrets not in set(SecretsPolicy):
                raise ValidationError(
                    f"secrets {secrets!r} must be one of redact, refuse, allow (or None: the "
                    "hive's HIVEKEEP_SECRETS).",
                    field="secrets",
                )
            new = dataclasses.replace(new, secrets=secrets)
        if not isinstance(review, _Keep):
            if review not in ("off", "shared", "all"):
                raise ValidationError(
                    f"review {review!r} must be one of off, shared, all.", field="review"
                )
            new = dataclasses.replace(new, review=None if review == "off" else review)
        specs: dict[str, str | _Keep | None] = {
            "model": model,
            "compacting_model": compacting_model,
            "extraction_model": extraction_model,
        }
        for name, spec in specs.items():
            if isinstance(spec, _Keep):
                continue
            if spec is not None and ":" not in spec:
                raise ValidationError(
                    f"Model {spec!r} must be a provider:model spec such as 'openai:gpt-4o-mini'.",
                    field=name,
                )
            changed: dict[str, Any] = {name: spec}
            new = dataclasses.replace(new, **changed)
        if compaction is not None:
            known = {f.name for f in dataclasses.fields(CompactionSettings)}
            unknown = sorted(set(compaction) - known)
            if unknown:
                raise ValidationError(
                    f"Unknown compaction settings {unknown}; known: {sorted(known)}."
                )
            dataclasses.replace(self.defaults, **compaction)  # raises ValidationError if bad
            new = dataclasses.replace(new, compaction=dict(compaction))
        self.store.save_agent_settings(agent_id, new)
        return new

    # context ------------------------------------------------------------------------------------
    def context(self, agent: AgentRecord, conversation_id: int, profile_text: str) -> Context:
        settings = self.compaction_settings(agent.id)
        raw = self.store.raw_messages(conversation_id)
        summaries = self.store.context_summaries(conversation_id)
        messages = build_context(
            system_prompt(agent, profile_text), [dated(s) for s in summaries], raw, settings
        )
        # Stored messages carry their token count; only what the pipeline re-rendered (and the
        # system prefix) is counted again, so a turn does not re-tokenize the whole history.
        reserved = self._tool_tokens + estimate_usage(messages[:1], "").input_tokens
        tokens = reserved
        for shown, stored in zip(messages[1:], raw, strict=True):
            same = shown.content == stored.content
            tokens += stored.tokens if same else estimate_usage([shown], "").input_tokens
        return Context(messages, tokens, raw, summaries, reserved)

    def fixed_tokens(self, agent: AgentRecord, profile_text: str) -> int:
        """The part of every context no compaction can fold: tool schemas, system prompt and
        profile (an empty conversation's context)."""
        prompt = [Message("system", system_prompt(agent, profile_text))]
        return self._tool_tokens + estimate_usage(prompt, "").input_tokens
