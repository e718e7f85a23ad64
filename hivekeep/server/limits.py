"""A size limit on every request body: 413 ``body_too_large`` past ``MAX_BODY_BYTES``.

Neither FastAPI nor Starlette bounds a body by default, and a route's model only sees it once it is
read whole into memory, so the limit is a pure-ASGI middleware in front of the app. A request that
declares a larger ``Content-Length`` is refused before a byte of its body is read; a body sent
without one (chunked) is counted as it arrives, and refused as soon as it passes the limit. Either
way the client gets the usual error JSON and the connection is closed (what is left of the body is
never read).

1 MiB is far above any body that can succeed: the largest field, a profile's text, must fit the
profile's token budget (1,500 tokens by default), and a chat message is at most 100,000 characters.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hivekeep.server.errors import error_response

MAX_BODY_BYTES = 1024 * 1024


class BodyTooLarge(Exception):
    """Raised into the app by ``receive`` when the body passes the limit."""


def _declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, or None (absent or not a number: the server's concern)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


class BodyLimit:
    """Refuses (413) any HTTP request whose body is over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        size = self.max_bytes
        limit = f"{size // 2**20} MiB" if size % 2**20 == 0 else f"{size:,} bytes"
        response = error_response(
            413,
            "body_too_large",
            f"The request body is over the server's limit of {limit}; send less at a time.",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send)
            return

        received = 0
        overflowed = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    overflowed = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if overflowed and not started:
                return  # the app's own answer to the failed read: ours is sent instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not overflowed:
                raise
        if overflowed and not started:
            await self._refuse(scope, receive, send)
