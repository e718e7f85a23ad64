"""A local HTTP server that speaks a provider's wire format, so tests run the real client code.

``WireServer`` is a threaded ``http.server`` on 127.0.0.1 (a free port) that records every request
(path, lower-cased headers, JSON body) and answers each with the next scripted ``Reply`` (a JSON
body, raw bytes, or a stream of SSE events, after an optional delay) or, once the script is empty,
with whatever its ``answer`` function says for that request. Nothing on the client side is patched:
what a test checks is the request an SDK or CLI really sent and what it made of the real bytes.

The OpenAI chat-completions replies (JSON and SSE chunks) are here too, as several test modules
script them: the LLM provider tests and the CLI tests whose subprocesses talk to this server.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

SSEEvent = tuple[str | None, Any]  # (event name or None, data: JSON value or a literal string)


@dataclass
class Reply:
    """One answer: JSON ``body``, ``raw`` bytes, or SSE ``events``, with status, headers, delay.

    With neither ``body``, ``raw`` nor ``events``, the server's ``default_body`` for the request is
    sent (JSON null if it has none); ``transform`` edits the JSON body just before it is sent.
    """

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    events: list[SSEEvent] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    transform: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any


def unscripted(request: Received) -> Reply:
    """The default answer once the script is used up: an error the client reports, not a hang."""
    return Reply(500, {"error": {"message": "the test scripted no reply"}})


class WireServer:
    """The URL, the requests received, and a queue of scripted replies. Use it as a context
    manager (``with WireServer() as server:``): it serves from ``__enter__`` until ``__exit__``."""

    def __init__(
        self,
        answer: Callable[[Received], Reply] = unscripted,
        default_body: Callable[[Received], Any] | None = None,
    ) -> None:
        self.url = ""
        self.requests: list[Received] = []
        self.replies: deque[Reply] = deque()
        self.answer = answer
        self.default_body = default_body
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def receive(self, request: Received) -> Reply:
        with self._lock:
            self.requests.append(request)
            return self.replies.popleft() if self.replies else self.answer(request)

    @property
    def last(self) -> Any:
        """The JSON body of the latest request."""
        return self.requests[-1].body

    def __enter__(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.wire = self
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stopping.set()  # ends any scripted delay, so shutdown does not wait for it
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    wire: WireServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        wire = self.server.wire
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Received(self.path, headers, body)
        reply = wire.receive(request)
        if reply.delay:
            wire.stopping.wait(reply.delay)
        try:
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply, request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left

    def _send_events(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in {"Content-Type": "text/event-stream", **reply.headers}.items():
            self.send_header(name, value)
        self.end_headers()
        for event, data in reply.events or ():
            line = f"event: {event}\n" if event else ""
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(f"{line}data: {text}\n\n".encode())
            self.wfile.flush()

    def _send_json(self, reply: Reply, request: Received) -> None:
        if reply.raw is not None:
            payload = reply.raw
        else:
            answer = reply.body
            if answer is None and self.server.wire.default_body is not None:
                answer = self.server.wire.default_body(request)
            if reply.transform is not None:
                answer = reply.transform(answer)
            payload = json.dumps(answer).encode()
        self.send_response(reply.status)
        for name, value in {"Content-Type": "application/json", **reply.headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


# -- OpenAI chat completions ----------------------------------------------------------------------


def openai_reply(
    content: str | None = "Hello.",
    calls: Sequence[tuple[str, str, str]] = (),
    *,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
) -> Reply:
    """A ``chat.completion`` body; ``calls`` are ``(id, tool name, arguments JSON)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "served-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage
            or {
                "prompt_tokens": 31,
                "completion_tokens": 7,
                "total_tokens": 38,
                "prompt_tokens_details": {"cached_tokens": 16},
            },
        }
    )


def openai_chunk(
    delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None
) -> SSEEvent:
    """One ``chat.completion.chunk`` SSE event (``delta=None``: the usage-only last chunk)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "served-model"}
    return None, {**chunk, "choices": choices, **({"usage": usage} if usage else {})}


def openai_stream(
    pieces: Sequence[str],
    calls: Sequence[tuple[str, str, Sequence[str]]] = (),
    usage: bool = True,
) -> Reply:
    """A streamed answer: the text ``pieces``, then each call ``(id, tool name, argument parts)``
    with its arguments split over several chunks, as real servers send them, then ``[DONE]``."""
    events: list[SSEEvent] = [openai_chunk({"role": "assistant", "content": ""})]
    events += [openai_chunk({"content": piece}) for piece in pieces]
    for index, (call_id, name, parts) in enumerate(calls):
        function = {"name": name, "arguments": ""}
        start = {"index": index, "id": call_id, "type": "function", "function": function}
        events.append(openai_chunk({"tool_calls": [start]}))
        for part in parts:
            more = {"index": index, "function": {"arguments": part}}
            events.append(openai_chunk({"tool_calls": [more]}))
    events.append(openai_chunk({}, "tool_calls" if calls else "stop"))
    if usage:
        totals = {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}
        events.append(openai_chunk(None, usage=totals))
    events.append((None, "[DONE]"))
    return Reply(events=events)
