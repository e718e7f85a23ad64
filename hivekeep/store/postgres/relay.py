"""Live events across processes on one PostgreSQL hive: LISTEN/NOTIFY around the local EventBus.

The ``EventBus`` stays in-process and backend-agnostic. ``EventRelay`` is one more subscriber of
it, plus one thread with one connection of its own:

- every event published locally is queued (never blocking the write that published it) and sent
  with ``pg_notify`` on the channel ``hivekeep_events_<schema>`` as JSON carrying this relay's
  ``origin`` id;
- the same connection ``LISTEN``\\ s on that channel; a notification from another origin is
  republished into the local bus (so SSE clients of every server see every server's events), one
  from our own origin is dropped (it was delivered locally already).

Events the thread republishes are not sent again: the bus calls subscribers on the publisher's
thread, and the relay ignores what its own thread publishes. NOTIFY payloads must stay under 8000
bytes: a long ``summary`` (compaction) is cut and flagged ``summary_truncated``; other long strings
are cut to ``TRIM_CHARS`` if that is not enough; an event that still does not fit is not relayed.

The connection is reopened (with backoff) when it fails; events published meanwhile are queued
(at most ``QUEUE_MAX``, oldest dropped), notifications sent by others meanwhile are lost, as a
disconnected SSE client loses what left the replay buffer. ``close()`` sends what is queued (for a
short while) and stops the thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import select
import socket
import threading
import uuid
from collections import deque
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from hivekeep.events import Event, EventBus

log = logging.getLogger(__name__)

Connection = psycopg.Connection[TupleRow]

CHANNEL_PREFIX = "hivekeep_events_"
PAYLOAD_LIMIT = 7900  # bytes; PostgreSQL refuses NOTIFY payloads of 8000 bytes or more
TRIM_CHARS = 500
QUEUE_MAX = 10_000
SEND_BATCH = 200  # events sent by one statement
POLL_S = 5.0  # wake up at least this often to notice a dead connection
BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0)
CLOSE_WAIT_S = 5.0
CONNECT_TIMEOUT_S = 10


def channel_for(schema: str) -> str:
    """The channel of a hive's schema (identifiers are at most 63 bytes: long names are hashed)."""
    channel = CHANNEL_PREFIX + schema
    if len(channel.encode()) > 63:
        channel = CHANNEL_PREFIX + hashlib.sha256(schema.encode()).hexdigest()[:32]
    return channel


def _dump(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def _cut(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` UTF-8 bytes (on a character boundary)."""
    return text.encode()[: max(0, size)].decode(errors="ignore")


def encode_event(origin: str, event: Event) -> str | None:
    """The NOTIFY payload of ``event``, trimmed to fit; None if it cannot be made to fit."""
    data = dict(event.data)
    payload = {"o": origin, "t": event.type, "a": event.agent_id, "at": event.at, "d": data}
    raw = _dump(payload)
    if len(raw) <= PAYLOAD_LIMIT:
        return raw.decode()
    summary = data.get("summary")
    if isinstance(summary, str):
        over = len(raw) - PAYLOAD_LIMIT + 64  # room for the flag
        data["summary"] = _cut(summary, len(summary.encode()) - over)
        data["summary_truncated"] = True
        raw = _dump(payload)
        if len(raw) <= PAYLOAD_LIMIT:
            return raw.decode()
    for key, value in list(data.items()):
        if isinstance(value, str) and len(value) > TRIM_CHARS:
            data[key] = value[:TRIM_CHARS]
            data[f"{key}_truncated"] = True
    raw = _dump(payload)
    return raw.decode() if len(raw) <= PAYLOAD_LIMIT else None


class EventRelay:
    """Sends a hive's local events to the other processes on its schema, and theirs to it."""

    def __init__(self, url: str, bus: EventBus) -> None:
        self.url = url
        self.bus = bus
        self.origin = uuid.uuid4().hex
        self.channel: str | None = None
        self._outbox: deque[Event] = deque(maxlen=QUEUE_MAX)
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._conn: Connection | None = None
        self.received = 0  # notifications from other origins republished (for tests)
        try:  # listening before the hive is handed out, so no event of another process is missed
            self._conn = self._connect()
        except psycopg.Error as exc:
            log.warning("Event relay: cannot listen yet (%s); retrying in the background", exc)
        self._thread = threading.Thread(target=self._run, name="hivekeep-event-relay", daemon=True)
        self._thread.start()
        bus.subscribe(self._on_event)

    # publisher side (any thread) ---------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        """A bus subscriber: queue a local event for NOTIFY; never blocks, never raises."""
        if threading.current_thread() is self._thread or self._stop.is_set():
            return  # republished from another process, or closing
        self._outbox.append(event)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (already woken) or closed
            self._wake_w.send(b"\0")

    def close(self) -> None:
        """Send what is queued (up to ``CLOSE_WAIT_S``), then stop listening."""
        if self._stop.is_set():
            return
        self.bus.unsubscribe(self._on_event)
        self._stop.set()
        self._wake()
        self._thread.join(CLOSE_WAIT_S)
        if self._thread.is_alive():
            log.warning("Event relay: the relay thread did not stop in %.0f s", CLOSE_WAIT_S)
            return  # it closes its connection and sockets when it ends
        self._wake_r.close()
        self._wake_w.close()

    # the relay thread -----------------------------------------------------------------------------
    def _connect(self) -> Connection:
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        try:
            row = conn.execute("SELECT current_schema()").fetchone()
            if not row or row[0] is None:
                raise psycopg.OperationalError("no current schema")
            self.channel = channel_for(str(row[0]))
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self) -> None:
        failures = 0
        try:
            while True:
                stopping = self._stop.is_set()
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                        failures = 0
                    self._send(self._conn)
                    if stopping:
                        return
                    self._wait(self._conn)
                    self._receive(self._conn)
                except psycopg.Error as exc:
                    self._drop_connection()
                    if stopping:
                        log.warning("Event relay: %d events not sent at close", len(self._outbox))
                        return
                    delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                    failures += 1
                    log.warning("Event relay: %s; reconnecting in %.1f s", exc, delay)
                    self._stop.wait(delay)
        finally:
            self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def _wait(self, conn: Connection) -> None:
        """Until the server sends something, an event is queued, or ``close()``."""
        wake = self._wake_r.fileno()
        readable, _, _ = select.select([conn.fileno(), wake], [], [], POLL_S)
        if wake in readable:
            with contextlib.suppress(OSError):
                while self._wake_r.recv(4096):
                    pass
        if not readable:
            conn.execute("SELECT 1")  # a dead connection shows itself here

    def _send(self, conn: Connection) -> None:
        """The queued events, up to ``SEND_BATCH`` a statement (a bulk write publishes one event a
        memory: a statement each cost its round trip a thousand times)."""
        while self._outbox:
            payloads: dict[str, None] = {}  # in order
            taken = 0
            for event in list(itertools.islice(self._outbox, SEND_BATCH)):
                payload = encode_event(self.origin, event)
                if payload in payloads:
                    break  # PostgreSQL delivers a payload repeated in a transaction once
                taken += 1
                if payload is None:
                    log.warning("Event relay: %s event too large to relay; skipped", event.type)
                else:
                    payloads[payload] = None
            if payloads:
                conn.execute(  # notified in the array's order
                    "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p",
                    (self.channel, list(payloads)),
                )
            for _ in range(taken):  # only once sent: a failed send is retried after reconnecting
                self._outbox.popleft()

    def _receive(self, conn: Connection) -> None:
        for notify in conn.notifies(timeout=0):
            if notify.channel != self.channel:
                continue
            try:
                message = json.loads(notify.payload)
                if message.get("o") == self.origin:
                    continue
                data = message.get("d") or {}
                self.bus.publish(str(message["t"]), message.get("a"), **data)
                self.received += 1
            except Exception:  # a foreign or malformed payload must not stop the relay
                log.warning("Event relay: ignored a notification %.200r", notify.payload)
