"""Every request observed once: a request id, metrics by route template, one access log line.

A pure-ASGI middleware (an SSE stream is timed to its end, which ``BaseHTTPMiddleware`` would
not allow). It sets the ``hivekeep.logs`` context variables, so every line logged while the
request runs carries its ``request_id`` and ``agent``; the id is the client's ``X-Request-ID``
when it is a short plain token, else a new one, and is sent back in ``X-Request-ID``. The access
line names the path without its query string: a recall's query is the user's own words.
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
            labels = {"method": scope["method"], "route": route, "status": str(status)}
            HTTP_REQUESTS.labels(**labels).inc()
            HTTP_SECONDS.labels(**labels).observe(elapsed)
            log.info("%s %s %d %.1fms", scope["method"], scope["path"], status, elapsed * 1000)
            REQUEST_ID.reset(tokens[0])
            AGENT.reset(tokens[1])
