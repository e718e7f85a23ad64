"""``GET /api/events``: every EventBus event as Server-Sent Events, with replay on reconnect.

Each event is sent as::

    id: 42
    event: memory:created
    data: {"id": 42, "type": "memory:created", "agent_id": 1, "at": "...", "data": {...}}

A client that reconnects sends ``Last-Event-ID`` (browsers do it themselves) or ``?after=``, and
first gets the missed events still in the bus's replay buffer. A comment line is sent every
``heartbeat_s`` seconds so proxies keep the stream open and a vanished client is noticed.

The bus calls subscribers synchronously on the publisher's thread (a threadpool worker running a
route); ``Subscription`` hands each event to this connection's event loop with
``call_soon_threadsafe`` into a bounded queue. A client too slow to drain it is disconnected, and
resumes from its last event id on reconnect, rather than letting the queue grow without limit.

A stream lives no longer than the right to open it (issue 32): a scoped token's stream checks
that its token is still live before each event it sends, and at least every ``RECHECK_S`` seconds
while idle (a revocation by another process, ``hivekeep tokens revoke``, is seen there); it also
ends when the token is revoked through this server (``EventStreams.close_where``) and when one of
the token's agents, or the agent it watches, is deleted (``agent:deleted``, or a gone agent found
by the periodic check when another process deleted it). The client may reconnect: its token is
then checked as on any request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from hivekeep import Access, Hive
from hivekeep.core.bounds import MAX_ID
from hivekeep.events import REPLAY, Event, EventBus
from hivekeep.metrics import EVENT_SUBSCRIBERS
from hivekeep.server.auth import AccessDep
from hivekeep.server.deps import HiveDep, resolve_agent, unknown_agent

HEARTBEAT_S = 15.0
RECHECK_S = 1.0  # how soon an idle stream notices a revocation or deletion by another process
RETRY_MS = 3000  # how long a browser waits before reconnecting
QUEUE_SIZE = REPLAY + 1024  # room for a full replay plus a burst
EVERYONE = Access()  # the admin: every agent's events

router = APIRouter(tags=["events"])


def format_event(event: Event) -> str:
    """One SSE message; the JSON is on one line (json.dumps escapes newlines in strings)."""
    payload = {
        "id": event.id,
        "type": event.type,
        "agent_id": event.agent_id,
        "at": event.at,
        "data": event.data,
    }
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n"


def _always() -> bool:
    return True


class Subscription:
    """A bus subscriber that forwards (matching) events into one connection's asyncio queue.

    ``token_live``: whether the request's token is still live (checked before each event; None
    for the admin, whose right cannot be revoked); ``agents_exist``: whether the agents the
    stream depends on still exist (checked every ``RECHECK_S``). Both run in a worker thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        agent_id: int | None,
        access: Access = EVERYONE,
        *,
        token_live: Callable[[], bool] | None = None,
        agents_exist: Callable[[], bool] = _always,
    ) -> None:
        self._loop = loop
        self.agent_id = agent_id
        self.access = access  # a scoped token never gets another agent's events
        self.token_live = token_live
        self.agents_exist = agents_exist
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self.overflowed = False
        self.closed = False

    def wants(self, event: Event) -> bool:
        chosen = self.agent_id is None or event.agent_id == self.agent_id
        return chosen and self.access.sees(event.agent_id)

    @property
    def finished(self) -> bool:
        """Closed, or overflowed and drained: the client resumes from its last id on reconnect."""
        return self.closed or (self.overflowed and self.queue.empty())

    def __call__(self, event: Event) -> None:
        """Runs on the publisher's thread: never blocks, never raises into the write."""
        if self.closed:
            return
        if self.wants(event):
            self._send(event)
        if event.type == "agent:deleted" and self.depends_on(event.agent_id):
            self.close()

    def depends_on(self, agent_id: int | None) -> bool:
        """Whether deleting the agent ends this stream: the one it watches, or one of a scoped
        token's agents."""
        ids = self.access.agent_ids
        return agent_id is not None and (
            agent_id == self.agent_id or (ids is not None and agent_id in ids)
        )

    async def allowed(self, *, fully: bool) -> bool:
        """Whether the stream may go on: the token live; with ``fully``, its agents there too."""
        if self.token_live is not None and not await run_in_threadpool(self.token_live):
            return False
        return not fully or await run_in_threadpool(self.agents_exist)

    def close(self) -> None:
        """End the stream now, from any thread (what it had not sent, a reconnect replays)."""
        self.closed = True
        self._send(None)  # wakes the stream up

    def _send(self, event: Event | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the server has stopped
            self._loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: Event | None) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True


class EventStreams:
    """The open streams of one app, so that a stopping server can end them instead of waiting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[Subscription] = set()

    def add(self, subscription: Subscription) -> None:
        with self._lock:
            self._open.add(subscription)

    def discard(self, subscription: Subscription) -> None:
        with self._lock:
            self._open.discard(subscription)

    def close_all(self) -> None:
        """Safe from any thread, and from a signal handler."""
        self.close_where(lambda _: True)

    def close_where(self, ending: Callable[[Subscription], bool]) -> None:
        """End the open streams ``ending`` picks (e.g. those of a revoked token), now."""
        with self._lock:
            subscriptions = [s for s in self._open if ending(s)]
        for subscription in subscriptions:
            subscription.close()


async def stream_events(
    bus: EventBus,
    streams: EventStreams,
    subscription: Subscription,
    after: int | None,
    heartbeat_s: float,
) -> AsyncGenerator[str, None]:
    """Replay what was missed after ``after``, then live events, until the client leaves."""
    streams.add(subscription)
    bus.subscribe(subscription)  # before reading the buffer, so no event falls in between
    EVENT_SUBSCRIBERS.inc()
    try:
        yield f"retry: {RETRY_MS}\n: connected\n\n"
        newest = 0
        if after is not None:
            for event in bus.since(after):
                newest = event.id
                if subscription.wants(event):
                    yield format_event(event)
        clock = asyncio.get_running_loop().time
        next_ping, next_check = clock() + heartbeat_s, clock() + RECHECK_S
        while not subscription.finished:
            if clock() >= next_check:
                if not await subscription.allowed(fully=True):
                    return
                next_check = clock() + RECHECK_S
            if clock() >= next_ping:
                yield ": ping\n\n"
                next_ping = clock() + heartbeat_s
            try:
                wait = max(0.0, min(next_ping, next_check) - clock())
                queued = await asyncio.wait_for(subscription.queue.get(), wait)
            except TimeoutError:
                continue
            if queued is None or queued.id <= newest:  # closing, or already replayed
                continue
            if not await subscription.allowed(fully=False):  # revoked by another process
                return
            yield format_event(queued)
    finally:
        EVENT_SUBSCRIBERS.dec()
        bus.unsubscribe(subscription)
        streams.discard(subscription)


@router.get(
    "/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "An SSE stream."}},
)
async def events(
    request: Request,
    hive: HiveDep,
    access: AccessDep,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_ID, description="Replay events after this id.")
    ] = None,
    agent: Annotated[
        str | None,
        Query(min_length=1, max_length=64, description="Only this agent's events (id or name)."),
    ] = None,
    last_event_id: Annotated[
        int | None,
        Header(ge=0, le=MAX_ID, description="Sent by reconnecting clients; wins over ?after."),
    ] = None,
) -> StreamingResponse:
    """Live events: memory:created|updated|deleted, profile:updated, compacting:*; a scoped
    token gets only its agents' events."""
    agent_id = None
    if agent is not None:
        agent_id = (await run_in_threadpool(resolve_agent, hive, agent)).id
        if not access.sees(agent_id):
            raise unknown_agent(agent)  # as for an agent that does not exist
    watched = await run_in_threadpool(_existing, hive, _depended(access, agent_id))
    subscription = Subscription(
        asyncio.get_running_loop(),
        agent_id,
        access,
        token_live=request.state.token_live,
        agents_exist=(lambda: _existing(hive, watched) == watched) if watched else _always,
    )
    start = last_event_id if last_event_id is not None else after
    return StreamingResponse(
        stream_events(
            hive.events,
            request.app.state.event_streams,
            subscription,
            start,
            request.app.state.heartbeat_s,
        ),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _depended(access: Access, agent_id: int | None) -> set[int]:
    """The agents whose deletion ends the stream (``Subscription.depends_on``)."""
    return {*(access.agent_ids or ()), *(() if agent_id is None else (agent_id,))}


def _existing(hive: Hive, ids: set[int]) -> set[int]:
    return {agent.id for agent in hive.agents() if agent.id in ids} if ids else set()
