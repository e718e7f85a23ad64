"""Agent: one agent's memory — its archive, its profile, and the tools that reach both."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from hivekeep import tools
from hivekeep.core import profile as profile_doc
from hivekeep.core.bounds import bounded, check_id, check_offset, check_version
from hivekeep.core.chats import Chat, given_message
from hivekeep.core.compaction import CompactionSettings
from hivekeep.core.messages import Message
from hivekeep.core.text import parse_created_at, parse_since
from hivekeep.errors import ValidationError
from hivekeep.providers.llm.base import LLM
from hivekeep.services import review
from hivekeep.services.archive import Memorized, MemoryPage
from hivekeep.services.chat import MAX_MESSAGE_CHARS, ChatEvent, ChatReply, message_tokens
from hivekeep.services.compaction import CompactionOutcome
from hivekeep.services.compile import CompileOutcome
from hivekeep.services.conversation import Context
from hivekeep.services.history import TrashPage
from hivekeep.services.llms import Purpose
from hivekeep.services.recall import SEARCH_WINDOW, RankedPage, RecallResult
from hivekeep.services.remember import CaughtUp, Remembered
from hivekeep.services.threads import Synced
from hivekeep.services.transfer.chat_exports import ChatImport, Progress
from hivekeep.services.wiring import Services
from hivekeep.store.base import (
    KEEP,
    AgentRecord,
    Change,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    NewMemory,
    ProfileRecord,
    _Keep,
)
from hivekeep.store.conversations import (
    AgentSettings,
    ConversationRecord,
    MessageRecord,
    NewMessage,
    ToolCallRecord,
)
from hivekeep.types import Actor, Category, Operation, Scope, Source
from hivekeep.views import profile_version_view, version_view


def _created_at(value: str | datetime | None) -> str | None:
    """A real date, at most a day ahead of now (``parse_created_at``); None means now."""
    return None if value is None else parse_created_at(value)


def memory_changes(
    memory_id: int,
    *,
    content: str | _Keep = KEEP,
    category: Category | str | _Keep = KEEP,
    subject: str | _Keep | None = KEEP,
    importance: int | _Keep | None = KEEP,
    scope: Scope | str | _Keep = KEEP,
    source_context: str | _Keep | None = KEEP,
) -> tuple[int, MemoryChanges]:
    """``update_memory``'s arguments, checked as the tool checks them (``Agent.update_memory``,
    ``Hive.update_memory``): the memory id and the changes. ``source_context`` is not a tool
    argument: only the library changes it (the integrations keep their item names there). The id
    is checked strictly first: a Python caller passes an int (the tool's model also reads "5" and
    5.0, as models send)."""
    check_id(memory_id)
    given = {
        name: value
        for name, value in (
            ("content", content),
            ("category", category),
            ("subject", subject),
            ("importance", importance),
            ("scope", scope),
        )
        if value is not KEEP
    }
    if not given and source_context is KEEP:
        raise ValidationError(
            "update_memory needs at least one of content, category, subject, scope, importance."
        )
    if source_context is not None and not isinstance(source_context, _Keep | str):
        raise ValidationError(f"source_context must be a string, got {source_context!r}.")
    if isinstance(source_context, str) and len(source_context) > tools.MAX_SOURCE_CONTEXT:
        raise ValidationError(
            f"source_context is at most {tools.MAX_SOURCE_CONTEXT} characters, "
            f"got {len(source_context)}."
        )
    for required in ("content", "category", "scope"):
        if required in given and given[required] is None:
            raise ValidationError(f"update_memory cannot set '{required}' to null.")
    args = tools.validate("update_memory", memory_id=memory_id, **given)
    changes = MemoryChanges(
        content=args.content if "content" in given else KEEP,
        category=Category(args.category) if "category" in given else KEEP,
        subject=args.subject if "subject" in given else KEEP,
        importance=args.importance if "importance" in given else KEEP,
        scope=Scope(args.scope) if "scope" in given else KEEP,
        source_context=source_context,
    )
    return args.memory_id, changes


MAX_RECORD_CHARS = 4 * MAX_MESSAGE_CHARS  # an adapter's items: the message's text and their fields


def _new_message(
    message: Message | Mapping[str, Any], record: Mapping[str, Any] | None = None
) -> NewMessage:
    """A message to store, counted as the context counts it (``Agent.add_messages``): a
    ``Message``, or an OpenAI-style dict (``{"role": "user", "content": "..."}``), with the
    JSON object an adapter keeps beside it (``record``)."""
    if isinstance(message, Mapping):
        data = dict(message)
        try:
            message = Message.from_openai(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValidationError(
                f"add_messages could not read {data!r} as an OpenAI-style message "
                f"(it needs 'role' and 'content'; missing or malformed: {exc})."
            ) from None
    if not isinstance(message, Message):
        raise ValidationError(
            "add_messages takes Message objects or OpenAI-style dicts, got "
            f"{type(message).__name__}."
        )
    if len(message.content) > MAX_MESSAGE_CHARS:
        raise ValidationError(
            f"A message is at most {MAX_MESSAGE_CHARS:,} characters, got {len(message.content):,}."
        )
    calls = tuple(ToolCallRecord(c.id, c.name, c.arguments_json()) for c in message.tool_calls)
    return NewMessage(
        message.role,
        message.content,
        message_tokens(message.content, calls),
        calls,
        tool_call_id=message.tool_call_id,
        tool_name=message.name if message.role == "tool" else None,
        speaker=message.name if message.role == "user" else None,
        record=_checked_record(record),
    )


def _checked_record(record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``record`` if it is a JSON object within its size (an adapter's items), else refused."""
    if record is None:
        return None
    if not isinstance(record, Mapping):
        raise ValidationError(f"A message's record is a JSON object, got {type(record).__name__}.")
    try:
        size = len(json.dumps(record, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"A message's record must be plain JSON: {exc}.") from exc
    if size > MAX_RECORD_CHARS:
        raise ValidationError(
            f"A message's record is at most {MAX_RECORD_CHARS:,} characters of JSON, got {size:,}."
        )
    return record


class Conversations:
    """An agent's conversations as objects to list, rename, delete and restore.

    >>> [c.title for c in agent.conversations.list()]  # doctest: +SKIP
    >>> agent.conversations.delete(3); agent.conversations.restore(3)  # doctest: +SKIP
    """

    def __init__(self, services: Services, agent_id: int) -> None:
        self._service = services.conversations
        self._store = services.store
        self._agent_id = agent_id

    def __call__(self) -> builtins.list[ConversationRecord]:
        """The same as ``list()``."""
        return self.list()

    def list(self) -> list[ConversationRecord]:
        """The conversations not in the trash, most recently active first."""
        return self._store.list_conversations(self._agent_id)

    def trash(self) -> builtins.list[ConversationRecord]:
        """The deleted conversations still in the trash, newest deletion first."""
        return self._store.list_conversations(self._agent_id, deleted=True)

    def get(self, conversation_id: int) -> ConversationRecord:
        """One conversation (NotFound for another agent's, or one in the trash)."""
        return self._service.get(self._agent_id, check_id(conversation_id, "conversation"))

    def start(self, title: str = "") -> ConversationRecord:
        """A new, empty conversation (untitled: named after its first message)."""
        return self._service.create(self._agent_id, title)

    def rename(self, conversation_id: int, title: str) -> ConversationRecord:
        return self._service.rename(
            self._agent_id, check_id(conversation_id, "conversation"), title
        )

    def delete(self, conversation_id: int) -> ConversationRecord:
        """Move it to the trash: out of the list at once, restorable with ``restore`` until the
        retention period ends (``trash_days``, as for memories); then erased for good."""
        return self._service.delete(self._agent_id, check_id(conversation_id, "conversation"))

    def restore(self, conversation_id: int) -> ConversationRecord:
        """Undo a delete: the conversation is back with all its messages and summaries."""
        return self._service.restore(self._agent_id, check_id(conversation_id, "conversation"))


class Agent:
    """Handed out by ``Hive``; every method acts as this agent and sees only what it may see.

    >>> agent = hive.create_agent("assistant", role="General helper")   # doctest: +SKIP
    >>> agent.memorize("The user moved to Lisbon in May 2024.", category="fact")  # doctest: +SKIP
    >>> agent.recall("where does the user live?").hits[0].memory.content  # doctest: +SKIP
    """

    def __init__(self, services: Services, record: AgentRecord) -> None:
        self._services = services  # the hive's, wired once (services/wiring.py)
        self.record = record

    def __repr__(self) -> str:
        return f"<Agent {self.record.id} {self.record.name!r}>"

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def role(self) -> str:
        return self.record.role

    # tools --------------------------------------------------------------------------------------
    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """Run a memory tool exactly as an LLM would call it; returns its JSON result."""
        return tools.call_tool(self, name, arguments)

    # archive ------------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        subject: str | None = None,
        category: Category | str | None = None,
        since: str | None = None,
        count_retrieval: bool = True,
    ) -> RecallResult:
        """Hybrid search over this agent's own and shared memories, ranked by relevance.

        ``count_retrieval=False`` for a person's search (UI, API): it leaves the memories'
        retrieval counts, which record the agent's own recalls, untouched."""
        args = tools.validate(
            "recall", query=query, limit=limit, subject=subject, category=category, since=since
        )
        filters = MemoryFilter(
            subject=args.subject,
            category=Category(args.category) if args.category else None,
            since=parse_since(args.since) if args.since else None,
        )
        limit = args.limit or self._services.settings.recall_limit
        return self._services.recall.recall(
            self.id, args.query, limit, filters, count=count_retrieval
        )

    def memory(self, memory_id: int) -> MemoryRecord:
        """One memory this agent can see: its own, or another agent's shared one (``newer``:
        the later near-twin it may be outdated by, when the agent can see one)."""
        return self._services.archive.get(self.id, check_id(memory_id))

    def memorize(
        self,
        content: str,
        *,
        category: Category | str,
        subject: str | None = None,
        importance: int | None = None,
        scope: Scope | str = Scope.PRIVATE,
        source_context: str | None = None,
        by: Actor = Actor.AGENT,
    ) -> Memorized:
        """Save a memory now. Its text is live when this returns (SPEC 4.1): an exact repeat
        returns the memory that holds it (``duplicate=True``), a restatement of this agent's own
        memory rewords that memory (``duplicate=True, reworded=True``; undo with
        ``restore_memory``), anything else is a new memory (``similar``: close ones). ``by``:
        who wrote it, as history records it (a person's command line: ``PERSON``)."""
        return self.memorize_many(
            [
                {
                    "content": content,
                    "category": category,
                    "subject": subject,
                    "importance": importance,
                    "scope": scope,
                    "source_context": source_context,
                }
            ],
            by=by,
        )[0]

    def memorize_many(
        self, items: Iterable[Mapping[str, Any]], *, by: Actor = Actor.AGENT
    ) -> list[Memorized]:
        """Bulk write, e.g. importing history: one result per item, in order.

        Each item takes ``memorize``'s arguments, plus an optional ``created_at`` (an ISO date or
        datetime: when the remembered thing happened, for memories of past events). Every item is
        validated before anything is written, and all are written in one transaction, deduplicated
        against the archive and against each other. ``by``: who wrote them, as history records it
        (an interface acting for a person passes ``Actor.PERSON``).
        """
        memories = []
        for item in items:
            fields = dict(item)
            created_at = fields.pop("created_at", None)
            args = tools.validate("memorize", **fields)
            memories.append(
                NewMemory(
                    agent_id=self.id,
                    content=args.content,
                    category=Category(args.category),
                    subject=args.subject,
                    importance=args.importance,
                    scope=Scope(args.scope),
                    source_context=args.source_context,
                    source=Source.EXPLICIT,
                    created_at=_created_at(created_at),
                )
            )
        return self._services.archive.memorize_many(memories, by=by)

    def update_memory(
        self,
        memory_id: int,
        *,
        content: str | _Keep = KEEP,
        category: Category | str | _Keep = KEEP,
        subject: str | _Keep | None = KEEP,
        importance: int | _Keep | None = KEEP,
        scope: Scope | str | _Keep = KEEP,
        source_context: str | _Keep | None = KEEP,
        by: Actor = Actor.AGENT,
    ) -> MemoryRecord:
        """Change a memory this agent wrote; fields left as ``KEEP`` are unchanged. The old state
        stays in ``memory_history``; ``by``: who is changing it (an interface acting for a
        person passes ``Actor.PERSON``). ``source_context`` is where the integrations keep the
        names (LangGraph keys, memory-tool files) that address a memory."""
        memory_id, changes = memory_changes(
            memory_id,
            content=content,
            category=category,
            subject=subject,
            importance=importance,
            scope=scope,
            source_context=source_context,
        )
        return self._services.archive.update(
            self.id, memory_id, changes, written=Change(by, Operation.UPDATE)
        )

    def forget(self, memory_id: int, *, by: Actor = Actor.AGENT) -> None:
        """Move a memory this agent wrote to the trash: out of recall and listings at once,
        restorable with ``restore_memory`` until the retention period ends (``trash_days``)."""
        args = tools.validate("forget", memory_id=check_id(memory_id))
        self._services.archive.forget(self.id, args.memory_id, by=by)

    def purge(self, memory_id: int) -> None:
        """Erase a memory this agent wrote, live or in its trash, for good (``Hive.purge``)."""
        self._services.history.purge_owned(self.id, check_id(memory_id))

    # history ------------------------------------------------------------------------------------
    def memory_history(self, memory_id: int) -> list[dict[str, Any]]:
        """The versions of a memory this agent can see (or has in its trash), newest first: each
        a dict with ``version``, ``content``, ``category``, ``subject``, ``importance``,
        ``scope``, ``changed_at``, ``changed_by`` (agent, person, maintenance, import) and
        ``operation`` (create, update, forget, restore). The first is the current state."""
        versions = self._services.history.history(self.id, check_id(memory_id))
        return [version_view(v) for v in versions]

    def restore_memory(
        self, memory_id: int, version: int | None = None, *, by: Actor = Actor.PERSON
    ) -> MemoryRecord:
        """Undo a forget (no ``version``: back from the trash with its id and vector), or make
        ``version`` of the memory current again. Either way a new version records it; history is
        never rewritten. Only the memory's author restores it."""
        if version is not None:
            check_version(version)
        return self._services.history.restore(self.id, check_id(memory_id), version, by=by)

    def trash(self, *, limit: int = 50, offset: int = 0) -> TrashPage:
        """This agent's forgotten memories still in the trash, newest deletion first."""
        bounded(limit, "limit", 1, 200)
        check_offset(offset)
        found, total = self._services.history.trash(self.id, limit, offset)
        return TrashPage(found, total, offset + len(found) < total)

    def profile_history(self) -> list[dict[str, Any]]:
        """The versions of this agent's profile, newest first: each a dict with ``version``
        (the revision), ``text``, ``tokens``, ``changed_at``, ``changed_by`` and ``operation``
        (create, edit, set, rewrite, regenerate, import, restore)."""
        return [profile_version_view(v) for v in self._services.profiles.history(self.id)]

    def restore_profile(self, version: int, *, by: Actor = Actor.PERSON) -> ProfileRecord:
        """Make ``version`` of the profile current again, as a new revision."""
        return self._services.profiles.restore(self.id, check_version(version), by=by)

    def list_memories(
        self,
        *,
        subject: str | None = None,
        category: Category | str | None = None,
        scope: Scope | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """Newest first; ``scope="shared"`` lists every agent's shared memories."""
        bounded(limit, "limit", 1, 200)
        check_offset(offset)
        args = tools.validate(
            "list_memories",
            subject=subject,
            category=category,
            scope=scope,
            limit=limit,
            offset=offset,
        )
        filters = MemoryFilter(
            subject=args.subject,
            category=Category(args.category) if args.category else None,
            scope=Scope(args.scope) if args.scope else None,
        )
        memories, total = self._services.archive.list(self.id, filters, args.limit, args.offset)
        return MemoryPage(memories, total, args.offset + len(memories) < total)

    def search_memories(
        self,
        query: str,
        *,
        subject: str | None = None,
        category: Category | str | None = None,
        scope: Scope | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RankedPage:
        """A person's ranked listing (the UI's search box, ``hivekeep memories --query``):
        recall's order over its best ``SEARCH_WINDOW`` matches, then ``scope``, then the page.
        Unlike ``recall`` it leaves the retrieval counts, which record the agent's own recalls."""
        bounded(limit, "limit", 1, 200)
        check_offset(offset)
        args = tools.validate("list_memories", scope=scope, limit=limit, offset=offset)
        result = self.recall(
            query,
            limit=SEARCH_WINDOW,
            subject=subject,
            category=category,
            count_retrieval=False,
        )
        # recall sees only the agent's own memories and shared ones, so a private hit is its own
        hits = [h for h in result.hits if args.scope in (None, h.memory.scope.value)]
        page = hits[args.offset : args.offset + args.limit]
        return RankedPage(page, len(hits), args.offset + len(page) < len(hits), result.warning)

    # profile ------------------------------------------------------------------------------------
    @property
    def profile_budget(self) -> int:
        return self._services.profiles.budget

    def profile(self) -> ProfileRecord:
        return self._services.profiles.get(self.id)

    def profile_text(self) -> str:
        """The current profile document (markdown)."""
        return self.profile().text

    def edit_profile(
        self, section: str, operation: str, content: str, *, pin: bool = False
    ) -> ProfileRecord:
        """append / replace_section / remove_line on one section, under the token budget. An
        edit that would leave the text as it is (appending lines the section already holds)
        writes nothing: the result has ``unchanged=True``."""
        args = tools.validate(
            "edit_profile", section=section, operation=operation, content=content, pin=pin
        )
        return self._services.profiles.edit(
            self.id, args.section, args.operation, args.content, pin=args.pin
        )

    def set_profile(self, text: str, *, expected_revision: int | None = None) -> ProfileRecord:
        """Replace the whole document (a user's edit), under the same budget rule as the tool;
        the old text stays in ``profile_history``."""
        if expected_revision is not None:
            check_version(expected_revision, "expected_revision")
        return self._services.profiles.replace(self.id, text, expected_revision)

    def system_prompt_block(self) -> str:
        """The memory block for the cached system-prompt prefix: profile plus the routing rule."""
        return profile_doc.system_prompt_block(self.profile_text())

    # conversations ------------------------------------------------------------------------------
    def start_conversation(self, title: str = "") -> ConversationRecord:
        """A new conversation (``conversations.start``); untitled, its first message names it."""
        return self.conversations.start(title)

    @property
    def conversations(self) -> Conversations:
        """This agent's conversations: ``list()``, ``rename``, ``delete`` (to the trash),
        ``restore``, ``trash()``; calling it, ``agent.conversations()``, is ``list()``."""
        return Conversations(self._services, self.id)

    def conversation(self, conversation_id: int) -> ConversationRecord:
        return self.conversations.get(conversation_id)

    def messages(
        self, conversation_id: int, *, after_id: int = 0, limit: int = 200
    ) -> list[MessageRecord]:
        """Every stored message (folded ones and compaction records too), oldest first."""
        self.conversation(conversation_id)
        check_offset(after_id, "after_id")
        bounded(limit, "limit", 1, 1000)
        return self._services.store.list_messages(conversation_id, after_id=after_id, limit=limit)

    def context(self, conversation_id: int) -> Context:
        """What the model would read next turn, with its size (for a context-usage bar)."""
        self.conversation(conversation_id)
        return self._services.conversations.context(
            self.record, conversation_id, self.profile_text()
        )

    def chat(
        self, message: str, conversation: int | None = None, *, speaker: str | None = None
    ) -> ChatReply:
        """One turn: store ``message``, let the model answer (using its memory tools), store the
        reply, then compact if the context is over the trigger. ``conversation`` None starts one.
        """
        reply: ChatReply | None = None
        for event in self.chat_stream(message, conversation, speaker=speaker):
            if isinstance(event, ChatReply):
                reply = event
        assert reply is not None  # chat_stream always ends with one
        return reply

    def chat_stream(
        self, message: str, conversation: int | None = None, *, speaker: str | None = None
    ) -> Iterator[ChatEvent]:
        """``chat``, yielding ``TextDelta`` pieces and ``ToolUse``s as they happen, then the
        ``ChatReply``. The conversation is created (if None) and the message checked at once."""
        if not isinstance(message, str) or not message.strip():
            raise ValidationError("A chat message needs some text.")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ValidationError(
                f"A chat message is at most {MAX_MESSAGE_CHARS:,} characters, got {len(message):,}."
            )
        if speaker is not None and not 1 <= len(speaker.strip()) <= 100:
            raise ValidationError("speaker must be 1-100 characters when given.")
        self._services.llms.chat_model(self.id)  # fail now, clearly, when no model is configured
        record = (
            self.start_conversation() if conversation is None else self.conversation(conversation)
        )
        self._services.conversations.title_from_first_message(record, message)
        conversation_id = record.id
        return self._services.chats.stream(
            self.record, self.call_tool, message, conversation_id, speaker
        )

    def add_messages(
        self,
        conversation_id: int,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        compact: bool = True,
        records: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[MessageRecord]:
        """Store a turn that ran outside hivekeep's own loop (another framework called the
        model), in order and in one transaction; then, with ``compact``, the after-turn
        compaction check ``chat`` runs. The write path of a framework's session adapter
        (``hivekeep.integrations.openai_agents``). ``compact`` needs the agent's chat model,
        whose window drives the trigger: it is checked first, so without one nothing is written.
        ``records``: one JSON object (or None) per message, kept with it, which the adapter reads
        back (the framework's own items, verbatim).
        """
        self.conversation(conversation_id)
        if records is not None and len(records) != len(messages):
            raise ValidationError(
                f"add_messages got {len(records)} records for {len(messages)} messages."
            )
        stored = [
            _new_message(m, None if records is None else records[n]) for n, m in enumerate(messages)
        ]
        if compact:
            self._services.llms.chat_model(self.id, "compacting a conversation")
        added = self._services.store.add_messages(conversation_id, stored)
        if compact:
            self._services.compaction.after_turn(self.record, conversation_id)
        return added

    def delete_message(self, conversation_id: int, message_id: int) -> None:
        """Take back a message not yet folded into a summary (a framework session's pop);
        ``ConflictError`` for a folded one: what a summary or the archive drew from it stays."""
        self.conversation(conversation_id)
        self._services.store.delete_raw_message(conversation_id, message_id)

    def set_message_record(
        self, conversation_id: int, message_id: int, record: Mapping[str, Any] | None
    ) -> None:
        """Replace the JSON object an adapter keeps with a message (``add_messages(records=)``)."""
        self.conversation(conversation_id)
        self._services.store.set_message_record(
            conversation_id, message_id, _checked_record(record)
        )

    def room_warning(self) -> str | None:
        """What is wrong when the chat model's window leaves too little room for a conversation
        beside the part no compaction can fold (system prompt, profile, tool schemas); None
        when it is fine. Needs the chat model (``LLMNotConfigured`` otherwise)."""
        return self._services.compaction.room_warning(self.record)

    def compaction_waiting(self, conversation_id: int) -> str | None:
        """Why the conversation is not being compacted now (under the trigger, or too little
        old enough to fold), or None when the next turn compacts it."""
        self.conversation(conversation_id)
        return self._services.compaction.waiting(self.record, conversation_id)

    def compact(self, conversation_id: int, *, force: bool = True) -> CompactionOutcome:
        """Compact now (``force``: fold at least half of the raw history, SPEC §7.5). Raises
        ``AgentBusy`` if a compaction of this agent is already running; other failures are in
        the outcome."""
        self.conversation(conversation_id)
        self._services.llms.chat_model(self.id, "compaction")
        return self._services.compaction.compact(self.record, conversation_id, force=force)

    # remember now, and chats kept elsewhere ---------------------------------------------------
    def remember(self, messages: str | Sequence[Message | Mapping[str, Any]]) -> Remembered:
        """Run the maintenance call now over ``messages`` (a text, or messages: ``Message``
        objects or OpenAI-style dicts), as compaction would later: new facts are added to the
        archive through the one write path, known ones left alone, and the profile rewritten.
        The messages are kept in a new conversation. Needs a model (``LLMNotConfigured``, naming
        HIVEKEEP_LLM, and nothing stored without one); ``AgentBusy`` while a compaction of this
        agent runs.

        >>> agent.remember("I moved to Lisbon in May 2024.").added  # doctest: +SKIP
        """
        self._services.remember.check_model(self.id)
        given = [messages] if isinstance(messages, str) else list(messages)
        stored = [_new_message(given_message(m)) for m in given]
        stored = [m for m in stored if m.content.strip() or m.tool_calls]
        title = next((m.content for m in stored if m.role == "user"), "")
        title = " ".join(title.split())[:60]
        return self._services.remember.remember(self.record, stored, f"Remember: {title}")

    def import_chats(
        self,
        source: str,
        path: str | Path,
        *,
        bootstrap: bool = False,
        progress: Progress | None = None,
    ) -> ChatImport:
        """Import a chat export (``source``: ``chatgpt`` or ``claude``; ``path``: its
        ``conversations.json``, or ChatGPT's zip) as conversations of this agent, each keeping
        its title and times; a rerun imports nothing twice. ``bootstrap``: then run the
        maintenance call over them, oldest first (needs a model; a rerun goes on where it
        stopped). A bad file raises ``ValidationError`` naming it and where, storing nothing.
        """
        return self._services.chat_imports.run(
            self.record, source, Path(path), bootstrap=bootstrap, progress=progress
        )

    def keep_chat(self, source: str, chat: Chat, *, fold: bool = True) -> Synced:
        """Store the messages of ``chat`` (a thread kept elsewhere, e.g. a Claude Code session,
        known by ``source`` and ``chat.key``) not stored yet, in its conversation; with ``fold``,
        fold its unfolded messages into batches that wait for the maintenance call
        (``catch_up``), sized for the maintenance model's window. Needs no model."""
        return self._services.remember.keep_chat(self.id, source, chat, fold=fold)

    def catch_up(self) -> CaughtUp:
        """The maintenance call for every batch of this agent still waiting, oldest first, one
        each; stops at a failure (the rest wait). Needs a model; ``AgentBusy`` while another
        compaction or catch-up of this agent runs."""
        return self._services.remember.catch_up(self.record)

    # models and upkeep --------------------------------------------------------------------------
    def chat_model(self, what: str = "chatting") -> LLM:
        """The model this agent chats with; raises ``LLMNotConfigured`` (saying what to set,
        and that ``what`` needs it) when there is none."""
        return self._services.llms.chat_model(self.id, what)

    def upkeep_model(self, purpose: Purpose, *, what: str | None = None) -> LLM:
        """The model in force for ``purpose`` (compaction, maintenance, review); raises
        ``LLMNotConfigured`` when there is none, naming ``what`` (default: the purpose)."""
        return self._services.llms.for_purpose(self.id, purpose, what=what)

    def regenerate_profile(self) -> CompileOutcome:
        """Rewrite the profile from the archive (Pinned kept); the outcome reports any failure."""
        return self._services.compiler.regenerate(self.record)

    def review_memories(
        self,
        *,
        subject: str | None = None,
        scope: Scope | str | None = None,
        timeout: float = review.DEFAULT_TIMEOUT,
    ) -> review.Review:
        """An LLM audit of the selected archive (changes nothing)."""
        args = tools.validate("review_memories", subject=subject, scope=scope)
        llm = self._services.llms.for_purpose(self.id, "review")
        return review.review(
            self._services.store,
            llm,
            self.id,
            subject=args.subject,
            scope=Scope(args.scope) if args.scope else None,
            timeout=timeout,
        )

    def configure(
        self,
        *,
        model: str | _Keep | None = KEEP,
        compaction: Mapping[str, Any] | None = None,
        compacting_model: str | _Keep | None = KEEP,
        extraction_model: str | _Keep | None = KEEP,
        context_window: int | _Keep | None = KEEP,
        secrets: str | _Keep | None = KEEP,
        review: str | _Keep = KEEP,
    ) -> AgentSettings:
        """Set this agent's model specs and/or compaction overrides (``{}`` clears them; None
        returns a model to the hive's). ``compacting_model`` writes the summaries,
        ``extraction_model`` runs maintenance, bootstrap and regenerate. ``context_window``:
        the window in tokens of its chat model, for a model hivekeep does not know (None: back
        to ``HIVEKEEP_CONTEXT_WINDOW``, else the known window); it sets when compaction starts.
        ``secrets``: what this agent's writes do with a credential, ``"redact"``, ``"refuse"`` or
        ``"allow"`` (None: the hive's ``HIVEKEEP_SECRETS``). ``review``: which of its own writes
        wait for a person (``hive.pending()``): ``"off"``, ``"shared"`` or ``"all"``.

        >>> agent.configure(compacting_model="ollama:llama3.1")  # doctest: +SKIP
        """
        return self._services.conversations.configure(
            self.id,
            model=model,
            compaction=compaction,
            compacting_model=compacting_model,
            extraction_model=extraction_model,
            context_window=context_window,
            secrets=secrets,
            review=review,
        )

    def credential_policy(self) -> str:
        """What this agent's writes do with a credential, in force: its own, else the hive's."""
        return self._services.archive.guard.policy(self.id).value

    def settings(self) -> AgentSettings:
        return self._services.store.get_agent_settings(self.id)

    def compaction_settings(self) -> CompactionSettings:
        """The numbers in force for this agent: the hive's, with its overrides applied."""
        return self._services.conversations.compaction_settings(self.id)
