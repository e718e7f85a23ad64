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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncGenerator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from hivekeep import Access
from hivekeep.core.bounds import MAX_ID
from hivekeep.events import REPLAY, Event, EventBus
from hivekeep.metrics import EVENT_SUBSCRIBERS
from hivekeep.server.auth import AccessDep
from hivekeep.server.deps import HiveDep, resolve_agent, unknown_agent

HEARTBEAT_S = 15.0
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


class Subscription:
    """A bus subscriber that forwards (matching) events into one connection's asyncio queue."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, agent_id: int | None, access: Access = EVERYONE
    ) -> None:
        self._loop = loop
        self.agent_id = agent_id
        self.access = access  # a scoped token never gets another agent's events
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
        if self.wants(event):
            self._send(event)

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
        with self._lock:
            subscriptions = list(self._open)
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
        while not subscription.finished:
            try:
                queued = await asyncio.wait_for(subscription.queue.get(), heartbeat_s)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if queued is not None and queued.id > newest:  # else: closing, or already replayed
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
    subscription = Subscription(asyncio.get_running_loop(), agent_id, access)
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
