"""The /api routers, one module per resource; ``app.create_app`` mounts every one in ``ROUTERS``.

A new resource (e.g. conversations) is a new module with an ``APIRouter``, added here.
"""

from __future__ import annotations

from fastapi import APIRouter

from hivekeep.server import events
from hivekeep.server.routes import (
    access_tokens,
    agents,
    conversations,
    history,
    memories,
    models,
    profile,
    remember,
    review,
    tokens,
    tools,
)

ROUTERS: tuple[APIRouter, ...] = (
    agents.router,
    memories.router,
    memories.shared_router,
    profile.router,
    history.router,
    tools.router,
    remember.router,
    tokens.router,
    access_tokens.router,
    review.router,
    conversations.router,
    models.router,
    events.router,
)
