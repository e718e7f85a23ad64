"""Bearer-token auth: with a token, every /api route but /api/health needs ``Authorization``.

The token is compared in constant time (``hmac.compare_digest``) so its prefix cannot be probed
by timing. The scheme is declared through FastAPI's ``HTTPBearer``, which puts an "Authorize"
button in /docs.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(
    auto_error=False,
    description="The server's HIVEKEEP_API_TOKEN, sent as `Authorization: Bearer <token>`.",
)


def bearer_auth(token: str) -> Callable[[HTTPAuthorizationCredentials | None], None]:
    """A dependency that refuses (401) any request not bearing ``token``."""
    if not token.strip():
        raise ValueError("An API token must not be empty.")
    expected = token.encode()

    def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        given = credentials.credentials.encode() if credentials else b""
        if not hmac.compare_digest(given, expected):
            raise HTTPException(
                status_code=401,
                detail="This server needs a bearer token: send `Authorization: Bearer <token>` "
                "with the server's HIVEKEEP_API_TOKEN.",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return require_token
