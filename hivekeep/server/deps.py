"""Dependencies shared by the route modules: the Hive, and the agent named in the path."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Path, Request

from hivekeep.agent import Agent
from hivekeep.core.bounds import MAX_ID
from hivekeep.errors import AgentNotFound
from hivekeep.hive import Hive


def get_hive(request: Request) -> Hive:
    return cast(Hive, request.app.state.hive)


HiveDep = Annotated[Hive, Depends(get_hive)]


def unknown_agent(key: str) -> AgentNotFound:
    """The 404 for ``key`` when no agent answers to it: the same text whether the agent does not
    exist or a scoped token may not see it (``scopes.py``)."""
    bare = key.strip()
    named: int | str = bare
    if bare.isdigit():  # as ``Hive.get_agent`` takes it: an id, unless too big to be one
        named = int(bare) if int(bare) <= MAX_ID else key
    return AgentNotFound(f"No agent {named!r}. List agents with GET /api/agents.")


def resolve_agent(hive: Hive, key: str) -> Agent:
    """The agent by id (digits) or name; NotFound (404) for anything else."""
    try:
        if key.strip().isdigit() and int(key) > MAX_ID:
            raise AgentNotFound
        return hive.get_agent(key)
    except AgentNotFound:
        raise unknown_agent(key) from None


def get_agent(
    agent: Annotated[str, Path(min_length=1, max_length=64, description="The agent's id or name.")],
    hive: HiveDep,
) -> Agent:
    return resolve_agent(hive, agent)


AgentDep = Annotated[Agent, Depends(get_agent)]
MemoryId = Annotated[int, Path(ge=1, le=MAX_ID, description="The memory's id.")]
