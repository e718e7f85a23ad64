"""Dependencies shared by the route modules: the Hive, and the ids of the path, parsed once.

An id in a path (``{agent}`` by id, ``{memory_id}``, ``{conversation_id}``) has one spelling:
ASCII digits, no sign, no leading zero, nothing around them, at most ``MAX_ID``
(``canonical_id``). Anything else is refused (422 for a memory or conversation id, 404 for an
agent key, which may also be a name), never read as another spelling of an id: ``+2``, `` 2``,
``2.0``, ``1_2``, ``02``, ``²`` or ``٢`` would otherwise pass a digits-only scope check and then
be read as 2 by an integer parser (issue 32).

The agent and the conversation of a request are found once, by ``scopes.check_route`` (the /api
router's dependency, which runs before the route's own): it judges the token's scope on the
value found and keeps that value in ``request.state``, and ``AgentDep`` / ``ConversationDep``
hand the very same value to the route. A route that did not go through the check gets nothing
(fail closed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends, HTTPException, Path, Request

from hivekeep.agent import Agent
from hivekeep.core.bounds import MAX_ID, shown
from hivekeep.core.names import AGENT_NAME
from hivekeep.errors import AgentNotFound, ValidationError
from hivekeep.hive import Hive

_ID = re.compile(r"[1-9][0-9]*")  # a str pattern: [0-9] is the ASCII digits only
_ID_DIGITS = len(str(MAX_ID))
ID_RULE = "ASCII digits without sign, spaces or leading zeros"


def get_hive(request: Request) -> Hive:
    return cast(Hive, request.app.state.hive)


HiveDep = Annotated[Hive, Depends(get_hive)]


def canonical_id(text: str) -> int | None:
    """The id ``text`` spells canonically (1 to ``MAX_ID``), else None."""
    if len(text) > _ID_DIGITS or not _ID.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_ID else None


def path_id(text: str, name: str) -> int:
    """The id ``text`` spells canonically; ValidationError (422) for anything else."""
    found = canonical_id(text)
    if found is None:
        raise ValidationError(
            f"'{name}' must be an integer from 1 to {MAX_ID} in plain ASCII digits, "
            f"got {shown(text)}.",
            field=name,
        )
    return found


def unknown_agent(key: str) -> AgentNotFound:
    """The 404 for ``key`` when no agent answers to it: the same text whether the agent does not
    exist or a scoped token may not see it (``scopes.py``)."""
    agent_id = canonical_id(key)
    return AgentNotFound(
        f"No agent {key if agent_id is None else agent_id!r}. List agents with GET /api/agents."
    )


def resolve_agent(hive: Hive, key: str) -> Agent:
    """The agent by canonical id, or by name (the name rule, any case); 404 for anything else."""
    agent_id = canonical_id(key)
    if agent_id is None and not AGENT_NAME.fullmatch(key.strip()):
        raise unknown_agent(key)
    try:
        return hive.get_agent(key if agent_id is None else agent_id)
    except AgentNotFound:
        raise unknown_agent(key) from None


@dataclass(frozen=True)
class PathConversation:
    """The conversation of the path, and its agent (found and judged by ``check_route``)."""

    id: int
    agent: Agent


def conversation_in_path(hive: Hive, text: str) -> PathConversation:
    """The conversation by canonical id (422 for another spelling, 404 for none)."""
    conversation_id = path_id(text, "conversation_id")
    return PathConversation(conversation_id, hive.conversation_agent(conversation_id))


def _checked(request: Request, name: str) -> object:
    found = getattr(request.state, name, None)
    if found is None:  # the route was not behind ``check_route``: refuse rather than guess
        raise HTTPException(status_code=403, detail="This route was not authorized.")
    return found


def get_agent(
    request: Request,
    agent: Annotated[str, Path(min_length=1, max_length=64, description="The agent's id or name.")],
) -> Agent:
    """The agent ``check_route`` found for ``{agent}`` (declared here for the API document)."""
    return cast(Agent, _checked(request, "path_agent"))


def get_conversation(
    request: Request,
    conversation_id: Annotated[
        str, Path(max_length=64, description=f"The conversation's id ({ID_RULE}).")
    ],
) -> PathConversation:
    """The conversation ``check_route`` found for ``{conversation_id}``."""
    return cast(PathConversation, _checked(request, "path_conversation"))


def get_memory_id(
    memory_id: Annotated[str, Path(max_length=64, description=f"The memory's id ({ID_RULE}).")],
) -> int:
    """The memory id of the path (422 for another spelling); the store judges visibility."""
    return path_id(memory_id, "memory_id")


AgentDep = Annotated[Agent, Depends(get_agent)]
ConversationDep = Annotated[PathConversation, Depends(get_conversation)]
MemoryId = Annotated[int, Depends(get_memory_id)]
