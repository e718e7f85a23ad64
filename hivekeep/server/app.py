"""``create_app``: the FastAPI application over one Hive.

Routes are plain (sync) functions: FastAPI runs them in its threadpool, and the SQLite store
serialises access with its own lock. Only the event stream is async. CORS is deliberately off: the
API is for local tools and same-origin pages, and a token-protected server is not meant to be
called from arbitrary web origins.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib.metadata import version

from fastapi import APIRouter, Depends, FastAPI, Response
from fastapi.responses import RedirectResponse
from fastapi_offline import FastAPIOffline

from hivekeep.hive import Hive
from hivekeep.metrics import render
from hivekeep.server.auth import API_PREFIX, bearer_auth
from hivekeep.server.errors import ERROR_RESPONSES, install_error_handlers
from hivekeep.server.events import HEARTBEAT_S, EventStreams
from hivekeep.server.guard import AllowedHost, RequestGuard, allowed_hosts
from hivekeep.server.limits import BodyLimit
from hivekeep.server.observe import Observe
from hivekeep.server.routes import ROUTERS
from hivekeep.server.schemas import Health
from hivekeep.server.ui import mount_ui
from hivekeep.server.watch import WATCH_S, watch_hive

DESCRIPTION = """Persistent memory for LLM agents: agents, their archive of memories, their
profile, the seven memory tools, and live events (SSE).

Errors are JSON: `{"error": {"code": "not_found", "message": "..."}}`; a request body over 1 MiB
is refused with 413 `body_too_large`. With a server token (`HIVEKEEP_API_TOKEN`), every `/api`
route except `/api/health` needs `Authorization: Bearer <token>`.

A request for another host name is refused with 421 `misdirected_request` (DNS rebinding); a
POST, PUT, PATCH or DELETE from another site's page with 403 `cross_site_request`; a body that is
not `application/json` on those methods with 415 `unsupported_media_type`."""


def create_app(
    hive: Hive,
    *,
    token: str | None = None,
    heartbeat_s: float = HEARTBEAT_S,
    hosts: Iterable[AllowedHost] | None = None,
    watch_s: float | None = WATCH_S,
) -> FastAPI:
    """The API over ``hive``; with ``token``, /api routes (but health) need it as a bearer token.

    ``hosts``: the Host names answered (``guard.allowed_hosts``); by default 127.0.0.1,
    localhost and [::1] on any port, plus the hive's ``allowed_hosts`` setting. The caller keeps
    ownership of ``hive`` (opens and closes it around the server's life). ``watch_s``: how often
    to look for other processes' writes (``watch.py``); None: never.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        watcher = asyncio.create_task(watch_hive(hive, watch_s)) if watch_s else None
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    # /docs loads Swagger UI from the package (fastapi-offline), never from a CDN. No ReDoc: its
    # bundle fetches a logo from cdn.redoc.ly whatever the options, so it is not fully offline;
    # /redoc, where FastAPI users look by habit, redirects to /docs rather than answer 404.
    app = FastAPIOffline(
        title="hivekeep",
        version=version("hivekeep"),
        description=DESCRIPTION,
        docs_url="/docs",
        redoc_url=None,
        static_url="/static-docs",
        favicon_url="/favicon.ico",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
        lifespan=lifespan,
    )
    app.state.hive = hive
    app.state.heartbeat_s = heartbeat_s
    app.state.event_streams = EventStreams()  # ``close_all()`` when the server stops
    install_error_handlers(app)
    app.add_middleware(BodyLimit)  # 413 for a body over 1 MiB, before any route reads it
    if hosts is None:
        hosts = allowed_hosts(None, extra=hive.settings.allowed_hosts)
    app.add_middleware(RequestGuard, hosts=hosts)  # 421 / 403 / 415, before anything else
    app.add_middleware(Observe)  # outermost: request id, metrics, access log for every answer

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> RedirectResponse:
        return RedirectResponse("/docs", status_code=307)

    @app.get("/api/health", tags=["health"])
    def health() -> Health:
        """Liveness, open without a token (it reveals nothing of the hive)."""
        return Health(status="ok", version=app.version, auth=token is not None)

    authorize = Depends(bearer_auth(token))  # who the request acts as, and may it (scopes.py)
    api = APIRouter(prefix=API_PREFIX, dependencies=[authorize], responses=ERROR_RESPONSES)
    for router in ROUTERS:
        api.include_router(router)
    app.include_router(api)

    @app.get("/metrics", tags=["metrics"], dependencies=[authorize], response_class=Response)
    def metrics() -> Response:
        """The server's metrics in the Prometheus text format (behind the same auth as /api)."""
        body, content_type = render()
        return Response(body, media_type=content_type)

    mount_ui(app)  # the web UI at /
    return app
