"""Conversations over HTTP: chat (streamed as SSE), context size, forced compaction, regenerate,
and each agent's settings (its model and compaction numbers; the hive's models are in ``models``).

A chat reply is streamed as the body of ``POST /api/conversations/{id}/chat`` (``delta``, ``tool``,
then one ``reply`` or ``error`` event), and its tokens are also published on the hive's bus
(``chat:delta`` / ``chat:done``) so every ``/api/events`` client watching the agent sees them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field, StrictInt

from hivekeep import (
    MAX_MESSAGE_CHARS,
    Agent,
    ChatReply,
    CompactionOutcome,
    ConversationRecord,
    Hive,
    HivekeepError,
    MessageRecord,
    TextDelta,
    ToolUse,
    ValidationError,
)
from hivekeep.core.bounds import MAX_ID
from hivekeep.server.deps import AgentDep, ConversationDep, HiveDep
from hivekeep.server.errors import ErrorOut, error_response, library_error
from hivekeep.server.schemas import Body

log = logging.getLogger(__name__)

router = APIRouter(tags=["conversations"])

BUSY: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorOut, "description": "A compaction of this agent is running."}
}


# models -----------------------------------------------------------------------------------------
class ConversationOut(BaseModel):
    id: int
    agent_id: int
    title: str = Field(description="Empty until set or taken from the first message.")
    created_at: str
    updated_at: str
    deleted_at: str | None = Field(description="When it went to the trash; null when live.")


class ConversationList(BaseModel):
    conversations: list[ConversationOut]


class NewConversation(Body):
    title: str = Field(default="", max_length=200)


class Rename(Body):
    title: str = Field(min_length=1, max_length=200)


class ChatBody(Body):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    speaker: str | None = Field(default=None, min_length=1, max_length=100)


class ContextOut(BaseModel):
    conversation_id: int
    tokens: int = Field(description="Tokens of the context the model reads next turn.")
    window: int | None = Field(description="The agent's model window; null without a model.")
    threshold_percent: float = Field(description="Compaction starts past this share of it.")
    raw_messages: int
    summaries: int
    llm_error: str | None = None
    waiting: str | None = Field(
        default=None, description="Why compaction is not running now; null when it is due."
    )
    warning: str | None = Field(
        default=None,
        description="Set when the fixed part (system prompt, profile, tool schemas) leaves the "
        "conversation too little of the window.",
    )
    answering: bool = Field(default=False, description="A turn is running here right now.")


# the largest window a model offers today is 10M tokens; a bigger number is a typo
MAX_CONTEXT_WINDOW = 100_000_000

# A setting's name and value; whether they make sense together is the library's check.
CompactionName = Annotated[str, Field(min_length=1, max_length=64)]
CompactionNumber = Annotated[float, Field(ge=-1e9, le=1e9, allow_inf_nan=False)]


class SettingsPatch(Body):
    """``model``: a provider:model spec, or null for the hive's model; ``compacting_model`` and
    ``extraction_model`` the same for summaries and for maintenance / bootstrap / regenerate
    (null: the hive's, else the chat model); ``context_window``: the chat model's window in
    tokens, for a model hivekeep does not know (null: ``HIVEKEEP_CONTEXT_WINDOW``, else the
    known window); ``compaction``: overrides that replace the current ones (``{}`` clears
    them). A field left out is kept."""

    model: str | None = Field(default=None, min_length=3, max_length=200)
    compacting_model: str | None = Field(default=None, min_length=3, max_length=200)
    extraction_model: str | None = Field(default=None, min_length=3, max_length=200)
    context_window: StrictInt | None = Field(default=None, ge=1, le=MAX_CONTEXT_WINDOW)
    compaction: dict[CompactionName, CompactionNumber] | None = Field(default=None, max_length=20)
    secrets: Literal["redact", "refuse", "allow"] | None = None  # null: HIVEKEEP_SECRETS
    review: Literal["off", "shared", "all"] | None = None  # which own writes wait for a person


MODEL_FIELDS = ("model", "compacting_model", "extraction_model")
# Conversations with a turn running in this server (a reloaded page shows it as under way)
ANSWERING: set[int] = set()


# helpers ----------------------------------------------------------------------------------------
def message_out(message: MessageRecord) -> dict[str, Any]:
    return dataclasses.asdict(message)


def compaction_out(outcome: CompactionOutcome | None) -> dict[str, Any] | None:
    """The outcome as a UI shows it: the headline numbers, and every detail of the record."""
    if outcome is None:
        return None
    return {
        "conversation_id": outcome.conversation_id,
        "status": outcome.status,
        "passes": outcome.passes,
        "messages_folded": outcome.messages_folded,
        "memories_extracted": outcome.memories_extracted,
        "profile_updated": outcome.profile_updated,
        "summary": outcome.summary,
        "error": outcome.error,
        "record_id": outcome.record_id,
        "details": outcome.details,
    }


def _sse(event: str, data: Any) -> str:
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {payload}\n\n"


def _model_info(hive: Hive, agent: Agent) -> dict[str, Any]:
    """The model in force for the agent, or why there is none (never a key)."""
    try:
        llm = agent.chat_model()
    except HivekeepError as exc:
        return {"model_id": None, "context_window": None, "llm_error": str(exc)}
    return {"model_id": llm.model_id, "context_window": llm.context_window, "llm_error": None}


def _agent_settings(hive: Hive, agent: Agent) -> dict[str, Any]:
    stored = agent.settings()
    model = _model_info(hive, agent)
    return {
        "agent_id": agent.id,
        "model": stored.model,
        "compacting_model": stored.compacting_model,
        "extraction_model": stored.extraction_model,
        "context_window_setting": stored.context_window,
        "compaction": stored.compaction,
        "secrets": stored.secrets,
        "secrets_in_force": agent.credential_policy(),
        "review": stored.review or "off",
        "effective": dataclasses.asdict(agent.compaction_settings()),
        **model,
        # the window too small for the part no compaction can fold (None: fine, or no model)
        "room_warning": agent.room_warning() if model["llm_error"] is None else None,
    }


# conversations ----------------------------------------------------------------------------------
def conversation_out(record: ConversationRecord) -> ConversationOut:
    return ConversationOut(**dataclasses.asdict(record))


@router.get("/agents/{agent}/conversations")
def list_conversations(agent: AgentDep, trashed: bool = False) -> ConversationList:
    """The agent's conversations, most recently active first; ``trashed``: the deleted ones
    still in the trash instead, newest deletion first."""
    found = agent.conversations.trash() if trashed else agent.conversations.list()
    return ConversationList(conversations=[conversation_out(c) for c in found])


@router.post("/agents/{agent}/conversations", status_code=201)
def create_conversation(agent: AgentDep, body: NewConversation) -> ConversationOut:
    """A new conversation; left untitled, its first message names it."""
    return conversation_out(agent.conversations.start(body.title))


@router.patch("/conversations/{conversation_id}")
def rename_conversation(conversation: ConversationDep, body: Rename) -> ConversationOut:
    agent, conversation_id = conversation.agent, conversation.id
    return conversation_out(agent.conversations.rename(conversation_id, body.title))


@router.delete("/conversations/{conversation_id}")
def delete_conversation(conversation: ConversationDep) -> ConversationOut:
    """To the trash (``deleted_at`` set): undo with ``POST .../restore`` until the retention
    period ends."""
    agent, conversation_id = conversation.agent, conversation.id
    return conversation_out(agent.conversations.delete(conversation_id))


@router.post("/conversations/{conversation_id}/restore")
def restore_conversation(conversation: ConversationDep) -> ConversationOut:
    """Back from the trash, whole."""
    agent, conversation_id = conversation.agent, conversation.id
    return conversation_out(agent.conversations.restore(conversation_id))


@router.get("/conversations/{conversation_id}/messages")
def list_messages(
    conversation: ConversationDep,
    after_id: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """Stored messages oldest first, folded ones and compaction records (``record``) included."""
    agent, conversation_id = conversation.agent, conversation.id
    messages = agent.messages(conversation_id, after_id=after_id, limit=limit)
    return {
        "conversation_id": conversation_id,
        "messages": [message_out(m) for m in messages],
        "has_more": len(messages) == limit,
    }


@router.get("/conversations/{conversation_id}/context")
def get_context(conversation: ConversationDep, hive: HiveDep) -> ContextOut:
    """How full the next context is, for a context-usage bar with the compaction marker."""
    agent, conversation_id = conversation.agent, conversation.id
    context = agent.context(conversation_id)
    model = _model_info(hive, agent)
    usable = model["llm_error"] is None
    return ContextOut(
        conversation_id=conversation_id,
        tokens=context.tokens,
        window=model["context_window"],
        threshold_percent=agent.compaction_settings().threshold_percent,
        raw_messages=len(context.raw),
        summaries=len(context.summaries),
        llm_error=model["llm_error"],
        waiting=agent.compaction_waiting(conversation_id) if usable else None,
        warning=agent.room_warning() if usable else None,
        answering=conversation_id in ANSWERING,
    )


@router.post(
    "/conversations/{conversation_id}/chat",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "delta/tool/reply."}},
)
def chat(conversation: ConversationDep, body: ChatBody, hive: HiveDep) -> StreamingResponse:
    """One turn, streamed: ``delta`` events (text), ``tool`` events, then ``reply`` (the stored
    messages and any compaction) or ``error``. Bad input or no model fails before streaming."""
    agent, conversation_id = conversation.agent, conversation.id
    events = agent.chat_stream(body.message, conversation_id, speaker=body.speaker)
    return StreamingResponse(
        _stream_chat(hive, agent, conversation_id, events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _stream_chat(
    hive: Hive, agent: Agent, conversation_id: int, events: Iterator[Any]
) -> Iterator[str]:
    """The turn runs in a thread of its own, to its end, whatever the client does: a reload or
    a closed tab mid-stream does not cancel it (its pieces reach every ``/api/events`` client as
    ``chat:delta`` / ``chat:done``, and the reloaded page reads the stored reply). The response
    only relays what the turn produced while its client is there."""
    pieces: queue.Queue[str | None] = queue.Queue()

    def run() -> None:
        try:
            for piece in _turn(hive, agent, conversation_id, events):
                pieces.put(piece)
        except Exception as exc:  # a bug, not a model failure: logged, and the client told
            log.exception("Chat turn of conversation %s failed", conversation_id)
            hive.events.publish(
                "chat:done", agent.id, conversation_id=conversation_id, error=str(exc)
            )
            pieces.put(_sse("error", {"status": 500, "code": "internal", "message": str(exc)}))
        finally:
            ANSWERING.discard(conversation_id)
            pieces.put(None)

    ANSWERING.add(conversation_id)
    threading.Thread(target=run, name=f"chat-{conversation_id}", daemon=True).start()
    while (piece := pieces.get()) is not None:
        yield piece


def _turn(hive: Hive, agent: Agent, conversation_id: int, events: Iterator[Any]) -> Iterator[str]:
    """The turn's SSE pieces, each also published on the hive's bus."""
    try:
        for event in events:
            if isinstance(event, TextDelta):
                hive.events.publish(
                    "chat:delta", agent.id, conversation_id=conversation_id, text=event.text
                )
                yield _sse("delta", {"text": event.text})
            elif isinstance(event, ToolUse):
                yield _sse("tool", dataclasses.asdict(event))
            elif isinstance(event, ChatReply):
                compaction = compaction_out(event.compaction)
                hive.events.publish(
                    "chat:done",
                    agent.id,
                    conversation_id=conversation_id,
                    content=event.content,
                    compacted=compaction is not None,
                )
                yield _sse(
                    "reply",
                    {
                        "conversation_id": event.conversation_id,
                        "content": event.content,
                        "steps": event.steps,
                        "messages": [message_out(m) for m in event.messages],
                        "compaction": compaction,
                    },
                )
    except HivekeepError as exc:  # the status line is sent: the failure is the last event
        status, code = library_error(exc)
        hive.events.publish(
            "chat:done", agent.id, conversation_id=conversation_id, error=str(exc), compacted=False
        )
        yield _sse("error", {"status": status, "code": code, "message": str(exc)})


@router.post("/conversations/{conversation_id}/compact", responses=BUSY)
def compact(conversation: ConversationDep) -> dict[str, Any]:
    """Compact now (forced: folds at least half of the raw history). A failed run is still 200,
    with ``status: "error"`` and the reason, as it is recorded in the conversation."""
    outcome = compaction_out(conversation.agent.compact(conversation.id, force=True))
    assert outcome is not None
    return outcome


@router.post(
    "/agents/{agent}/profile/regenerate",
    responses={502: {"model": ErrorOut, "description": "Failed: code 'regenerate_failed'."}},
)
def regenerate_profile(agent: AgentDep, hive: HiveDep) -> Any:
    """Rewrite the profile from the archive (Pinned kept). A failure answers 502 with the reason
    (the profile is then unchanged)."""
    agent.upkeep_model("maintenance")  # no model: a clear 4xx before anything runs
    outcome = agent.regenerate_profile()
    if not outcome.success:
        return error_response(
            502,
            "regenerate_failed",
            f"Regenerating the profile failed, it was kept as it was: {outcome.error}",
        )
    return JSONResponse(dataclasses.asdict(outcome))


# settings ---------------------------------------------------------------------------------------
@router.get("/agents/{agent}/settings")
def get_agent_settings(agent: AgentDep, hive: HiveDep) -> dict[str, Any]:
    """The agent's model specs, context window (``context_window_setting``: this agent's, null
    for the default) and compaction overrides, and what is in force (``model_id``,
    ``context_window``, ``effective``)."""
    return _agent_settings(hive, agent)


@router.put("/agents/{agent}/settings")
def put_agent_settings(agent: AgentDep, hive: HiveDep, body: SettingsPatch) -> dict[str, Any]:
    """Change the model specs, context window and/or compaction overrides, checked before saving
    (a spec must name a known provider with its key set; numbers must agree with each other)."""
    fields = body.model_dump(exclude_unset=True)
    if not fields:
        raise ValidationError(
            "Send at least one of 'model', 'compacting_model', 'extraction_model', "
            "'context_window', 'compaction', 'secrets' and 'review' to change."
        )
    specs = {k: fields[k] for k in MODEL_FIELDS if k in fields}
    for name, spec in specs.items():
        if spec is not None:
            try:
                hive.check_llm(spec)  # ValidationError (422) when it cannot work
            except ValidationError as exc:
                raise ValidationError(str(exc), field=name) from None
    compaction = fields.get("compaction")
    overrides = None
    if compaction is not None:  # whole numbers where the field is one ({"max_summaries": 8.0})
        overrides = {k: int(v) if float(v).is_integer() else v for k, v in compaction.items()}
        defaults = dataclasses.asdict(hive.compaction_defaults)
        overrides = {
            k: float(v) if isinstance(defaults.get(k), float) else v for k, v in overrides.items()
        }
    kept: dict[str, Any] = {k: fields[k] for k in ("context_window", "secrets") if k in fields}
    if fields.get("review") is not None:
        kept["review"] = fields["review"]
    agent.configure(compaction=overrides, **specs, **kept)
    return _agent_settings(hive, agent)
