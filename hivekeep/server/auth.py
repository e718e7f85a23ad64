"""Bearer-token auth: who a request acts as (``Access``), and whether it may (``scopes.py``).

Two kinds of token are accepted in ``Authorization: Bearer <token>``:

- the server's admin token, ``HIVEKEEP_API_TOKEN``: every agent, every route. It is compared in
  constant time (``hmac.compare_digest``) so its prefix cannot be probed by timing;
- a scoped token of the hive (``hivekeep tokens create``), looked up in the store on every
  request (one indexed read; ``hive.tokens.verify``, also constant-time), so a revoked token is
  refused by the very next request, whichever process revoked it.

With an admin token set, a request without a token gets 401. Without one (a loopback-only
server, as before scoped tokens), a request without a token, or with one that is not shaped as a
hivekeep token, acts as the admin, as it always did; a request that bears a scoped token must
bear a live one (401 otherwise: revoked means refused) and is held to its scope. The scheme is
declared through FastAPI's ``HTTPBearer``, which puts an "Authorize" button in /docs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, cast

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import Scope

from hivekeep import Access, Hive
from hivekeep.core.access_tokens import admin_token_problem
from hivekeep.server.scopes import check_route

_bearer = HTTPBearer(
    auto_error=False,
    description="The server's HIVEKEEP_API_TOKEN, or a scoped token from `hivekeep tokens "
    "create`, sent as `Authorization: Bearer <token>`.",
)


API_PREFIX = "/api"


def _refused(message: str) -> HTTPException:
    return HTTPException(status_code=401, detail=message, headers={"WWW-Authenticate": "Bearer"})


def bearer_auth(admin_token: str | None) -> Callable[..., None]:
    """A dependency that sets ``request.state.access`` and refuses what it may not do."""
    if admin_token is not None:
        problem = admin_token_problem(admin_token)
        if problem is not None:
            raise ValueError(problem)

    def authorize(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        hive = cast(Hive, request.app.state.hive)
        bearer = credentials.credentials if credentials else None
        access = hive.tokens.authenticate(bearer, admin_token)
        if access is None:
            raise _refused(
                "This server needs a valid bearer token (none was sent, or it is wrong or "
                "revoked): send `Authorization: Bearer <token>` with the server's "
                "HIVEKEEP_API_TOKEN or a token from `hivekeep tokens create`."
            )
        request.state.access = access
        # for a long answer (an event stream): is the token still live? (the admin's always is)
        request.state.token_live = (
            None
            if access.admin
            else lambda: hive.tokens.authenticate(bearer, admin_token, record_use=False) == access
        )
        check_route(hive, access, request, route_template(request.scope))

    return authorize


def route_template(scope: Scope) -> str:
    """The matched route's full path template, e.g. ``/api/agents/{agent}/memories``.

    FastAPI (0.16x) keeps an included router's routes relative to the ``/api`` prefix it was
    included under; older versions flatten them to full paths. Both are read the same here.
    """
    path = str(scope["route"].path)
    under_api = str(scope["path"]).startswith(f"{API_PREFIX}/")
    return API_PREFIX + path if under_api and not path.startswith(f"{API_PREFIX}/") else path


def request_access(request: Request) -> Access:
    """Who ``bearer_auth`` found this request acts as."""
    return cast(Access, request.state.access)


AccessDep = Annotated[Access, Depends(request_access)]
