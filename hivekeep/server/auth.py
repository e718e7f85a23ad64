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


MIN_TOKEN_CHARS = 16


def token_problem(secret: str) -> str | None:
    """Why ``secret`` cannot protect a server, or None.

    Refused at start rather than failing every request later: a header is read as latin-1, so a
    non-ASCII token could never match, and a short one could be guessed.
    """
    if not secret.strip():
        return "An API token must not be empty."
    if not secret.isascii() or not secret.isprintable():
        return (
            "The API token (HIVEKEEP_API_TOKEN) must be printable ASCII: an HTTP header cannot "
            "carry other characters reliably, so no client could ever match it. Use e.g. "
            "`openssl rand -hex 32`."
        )
    if len(secret) < MIN_TOKEN_CHARS:
        return (
            f"The API token (HIVEKEEP_API_TOKEN) has {len(secret)} characters; use at least "
            f"{MIN_TOKEN_CHARS}, e.g. `openssl rand -hex 32`."
        )
    return None


def bearer_auth(token: str) -> Callable[[HTTPAuthorizationCredentials | None], None]:
    """A dependency that refuses (401) any request not bearing ``token``."""
    problem = token_problem(token)
    if problem is not None:
        raise ValueError(problem)
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
