"""Every request observed once: a request id, metrics by route template, one access log line.

A pure-ASGI middleware (an SSE stream is timed to its end, which ``BaseHTTPMiddleware`` would
not allow). It sets the ``hivekeep.logs`` context variables, so every line logged while the
request runs carries its ``request_id`` and ``agent``; the id is the client's ``X-Request-ID``
when it is a short plain token, else a new one, and is sent back in ``X-Request-ID``. The access
line names the path without its query string: a recall's query is the user's own words.

What a client sends never widens the metrics (issue 32): a method outside ``METHODS`` is counted
as ``other``, a path no route answered as ``unmatched``, so ``/metrics`` holds a bounded set of
series whatever arrives. Nor does it forge log lines: the access line shows the method and path
with control characters escaped (``%0A`` in a path is a newline once decoded).
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hivekeep.logs import AGENT, REQUEST_ID
from hivekeep.metrics import HTTP_REQUESTS, HTTP_SECONDS
from hivekeep.server.auth import route_template

log = logging.getLogger("hivekeep.server.access")

_CLIENT_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_AGENT_PATH = re.compile(r"^/api/agents/([^/]+)")
UNMATCHED = "unmatched"  # one label for every path no route answered (bounded cardinality)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"  # one label for every other method a client makes up


def printable(text: str) -> str:
    """``text`` for one log line: control and other unprintable characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _request_id(headers: Headers) -> str:
    given = headers.get("x-request-id", "")
    return given if _CLIENT_ID.fullmatch(given) else uuid.uuid4().hex[:16]


class Observe:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(Headers(scope=scope))
        agent = _AGENT_PATH.match(scope["path"])
        tokens = (REQUEST_ID.set(request_id), AGENT.set(agent.group(1) if agent else None))
        status = 500  # what the client gets if the app fails before answering
        start = time.perf_counter()

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)["X-Request-ID"] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            elapsed = time.perf_counter() - start
            route = route_template(scope) if "route" in scope else UNMATCHED
            method = scope["method"] if scope["method"] in METHODS else OTHER_METHOD
            labels = {"method": method, "route": route, "status": str(status)}
            HTTP_REQUESTS.labels(**labels).inc()
            HTTP_SECONDS.labels(**labels).observe(elapsed)
            log.info(
                "%s %s %d %.1fms",
                printable(scope["method"]),
                printable(scope["path"]),
                status,
                elapsed * 1000,
            )
            REQUEST_ID.reset(tokens[0])
            AGENT.reset(tokens[1])
