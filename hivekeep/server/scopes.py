"""What a scoped token may do: every /api route is classified here, and unknown ones refused.

A request's ``Access`` (``auth.py``, ``hive.tokens.authenticate``) is the admin
(``HIVEKEEP_API_TOKEN``, or anyone on a server without one) or a scoped token of the hive. The
rules, checked before any route runs (``check_route``):

- a route of an agent (``{agent}`` in its path), or of a conversation (``{conversation_id}``),
  of an agent outside the token's scope answers 404 with the very message of a missing one, so a
  token cannot learn which other agents exist. The id is parsed once, canonically
  (``deps.canonical_id``), and the agent found is the one the route gets (``AgentDep``);
- a route that acts on the whole hive as a person (creating or deleting an agent, forgetting any
  author's shared memory) needs a token of every agent; managing tokens needs the admin token;
- a read-only token gets 403 on every request that may change something: any method but GET,
  HEAD and OPTIONS, except the few POSTs that only read (``READ_POSTS``, ``READ_ONLY_TOOLS``);
- a route missing from this table is refused to every token but the admin's (fail closed), and
  ``tests/integration/test_scoped_tokens.py`` checks that every route of the app is in it.

Listings (``GET /api/agents``) and the event stream filter themselves with ``Access.sees``.
"""

from __future__ import annotations

from enum import Enum

from fastapi import HTTPException, Request

from hivekeep import Access, Hive, NotFound
from hivekeep.server.deps import conversation_in_path, resolve_agent, unknown_agent
from hivekeep.server.guard import SAFE_METHODS
from hivekeep.tools import READ_ONLY_TOOLS


class Kind(Enum):
    AGENT = "one agent's (the {agent} in its path)"
    CONVERSATION = "one conversation's (its agent's)"
    OPEN = "any access (reads nothing of an agent, or filters by scope)"
    EVERY_AGENT = "a person acting on the whole hive: a token of every agent"
    ADMIN = "the admin token only"


# Routes that name neither an agent nor a conversation, by path template.
HIVE_ROUTES: dict[str, Kind] = {
    "/api/health": Kind.OPEN,  # no token needed at all
    "/api/agents": Kind.OPEN,  # GET lists only the token's agents; POST: see EVERY_AGENT_ACTS
    "/api/memories/{memory_id}": Kind.EVERY_AGENT,  # a person forgets any author's shared memory
    "/api/tools": Kind.OPEN,
    "/api/tokens": Kind.OPEN,  # counts text with the profile's tokenizer
    "/api/settings": Kind.OPEN,  # model specs, never a key
    "/api/settings/llm-credentials": Kind.ADMIN,  # a provider key for the whole server
    "/api/events": Kind.OPEN,  # the stream keeps to the token's agents
    "/api/access-tokens": Kind.ADMIN,
    "/api/access-tokens/{label}": Kind.ADMIN,
    "/api/review": Kind.ADMIN,  # a person reviews agents' writes: never an agent's token
    "/api/review/{pending_id}/approve": Kind.ADMIN,
    "/api/review/{pending_id}/reject": Kind.ADMIN,
    "/metrics": Kind.OPEN,
}
# Creating or deleting an agent is not acting as one: a token of one agent may not delete it
# (with its private memories and conversations) any more than it may create another.
EVERY_AGENT_ACTS = frozenset({("POST", "/api/agents"), ("DELETE", "/api/agents/{agent}")})
READ_POSTS = frozenset({"/api/tokens"})  # POSTs that change nothing
TOOL_ROUTE = "/api/agents/{agent}/tools/{tool}"


def route_kind(template: str) -> Kind | None:
    if "{agent}" in template:
        return Kind.AGENT
    if "{conversation_id}" in template:
        return Kind.CONVERSATION
    return HIVE_ROUTES.get(template)


def _forbidden(message: str) -> HTTPException:
    return HTTPException(status_code=403, detail=message)


def _mutates(request: Request, template: str) -> bool:
    if request.method in SAFE_METHODS or template in READ_POSTS:
        return False
    return not (template == TOOL_ROUTE and request.path_params.get("tool") in READ_ONLY_TOOLS)


def check_route(hive: Hive, access: Access, request: Request, template: str) -> None:
    """Raise 403 / 404 when ``access`` may not make this request (the admin always may).

    The agent or conversation of the path is found first, by the one rule of ``deps.py``, and
    kept in ``request.state`` for the route: the scope is judged on the very value the route
    uses. One that the token may not see answers as one that does not exist."""
    kind = route_kind(template)
    if kind is Kind.AGENT:
        agent = resolve_agent(hive, str(request.path_params["agent"]))
        if not access.sees(agent.id):
            raise unknown_agent(str(request.path_params["agent"]))
        request.state.path_agent = agent
    elif kind is Kind.CONVERSATION:
        text = str(request.path_params["conversation_id"])
        conversation = conversation_in_path(hive, text)
        if not access.sees(conversation.agent.id):  # the store's words for a missing one
            raise NotFound(f"No conversation with id {conversation.id}.")
        request.state.path_conversation = conversation
    if not access.admin:
        _check_rights(access, request, template, kind)


def _check_rights(access: Access, request: Request, template: str, kind: Kind | None) -> None:
    if kind is None or kind is Kind.ADMIN:
        raise _forbidden("This route needs the admin token (HIVEKEEP_API_TOKEN).")
    if access.read_only and _mutates(request, template):
        raise _forbidden(
            f"The token {access.label!r} is read-only: it may read and recall, not change anything."
        )
    every_agent = kind is Kind.EVERY_AGENT or (request.method, template) in EVERY_AGENT_ACTS
    if every_agent and access.agent_ids is not None:
        raise _forbidden(
            f"The token {access.label!r} acts only as some agents; this acts on the whole hive."
        )
