"""An in-process event bus: what happened to agents, memories, profiles and compactions, live.

Services publish; interfaces subscribe (the server streams events over SSE, tests collect them).
Every event gets a sequence number so a client that reconnects can ask for what it missed, from a
bounded replay buffer. Subscribers are called synchronously on the publisher's thread and must be
quick; a subscriber that raises is logged and detached, never allowed to break a write. Events of
writes made inside a store transaction are held until it commits (``deferred``).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)

EVENT_TYPES = frozenset(
    {
        "agent:created",  # agent create, rename / role change, delete (the UI's agent list)
        "agent:updated",
        "agent:deleted",
        "memory:created",
        "memory:updated",
        "memory:deleted",
        "profile:updated",
        "compacting:start",
        "compacting:progress",
        "compacting:done",
        "compacting:error",
        "chat:delta",  # a streamed piece of a reply (the server publishes it)
        "chat:done",
        "hive:changed",  # another process wrote to the hive (a server watching it says so)
        "review:changed",  # a write held for review, approved or rejected (the UI's Inbox)
    }
)
REPLAY = 1000


@dataclass(frozen=True)
class Event:
    id: int
    type: str
    agent_id: int | None
    data: dict[str, Any] = field(default_factory=dict)
    at: str = ""


Subscriber = Callable[[Event], None]


class EventBus:
    """Publish/subscribe with sequence numbers and a bounded replay buffer."""

    def __init__(self, replay: int = REPLAY) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._subscribers: list[Subscriber] = []
        self._recent: deque[Event] = deque(maxlen=replay)
        self._held = threading.local()  # .events: this thread's, inside deferred()

    def publish(self, type: str, agent_id: int | None, **data: Any) -> Event | None:
        """Send an event to every subscriber; None when it is held by ``deferred()``."""
        if type not in EVENT_TYPES:
            raise ValueError(f"Unknown event type {type!r}; known: {sorted(EVENT_TYPES)}.")
        held: list[tuple[str, int | None, dict[str, Any]]] | None = getattr(
            self._held, "events", None
        )
        if held is not None:
            held.append((type, agent_id, data))
            return None
        with self._lock:
            event = Event(next(self._ids), type, agent_id, data, datetime.now(UTC).isoformat())
            self._recent.append(event)
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            try:
                subscriber(event)
            except Exception:  # a broken listener must never break the write that published
                log.exception("Event subscriber %r failed and was detached", subscriber)
                self.unsubscribe(subscriber)
        return event

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold the events this thread publishes inside the block, and publish them, in order,
        when it ends; drop them if it raises.

        Wrap a store transaction in it (``with bus.deferred(), store.transaction():``): the
        transaction commits first, so nobody hears of a write that was rolled back. Nested:
        the outermost block decides. Other threads' events are not held.
        """
        if getattr(self._held, "events", None) is not None:
            yield
            return
        events: list[tuple[str, int | None, dict[str, Any]]] = []
        self._held.events = events
        try:
            yield
        finally:
            self._held.events = None
        for type, agent_id, data in events:
            self.publish(type, agent_id, **data)

    def subscribe(self, subscriber: Subscriber, *, after: int | None = None) -> None:
        """Call ``subscriber`` for every new event; with ``after``, first replay the missed ones."""
        with self._lock:
            missed = [e for e in self._recent if after is not None and e.id > after]
            self._subscribers.append(subscriber)
        for event in missed:
            subscriber(event)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def since(self, after: int) -> list[Event]:
        """Buffered events newer than ``after`` (older ones may have left the buffer)."""
        with self._lock:
            return [e for e in self._recent if e.id > after]
