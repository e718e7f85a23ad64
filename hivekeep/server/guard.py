"""What a web page may not do to a local server: DNS rebinding and cross-site requests.

A page on any site can make the user's browser send requests to ``127.0.0.1``. Two defences, in a
pure-ASGI middleware in front of every route (the UI included), as the MCP SDK's transport security
does for ``hivekeep mcp --http``:

- **Host** (DNS rebinding): a page on ``evil.example`` that rebinds its name to 127.0.0.1 becomes
  same-origin with the server, but its requests still say ``Host: evil.example``. Only the
  allowed hosts are answered; any other gets 421 ``misdirected_request``.
- **Origin and Sec-Fetch-Site** (cross-site requests): a mutating request (POST, PUT, PATCH,
  DELETE) whose ``Origin`` is not this server, or that the browser marks
  ``Sec-Fetch-Site: cross-site``, gets 403 ``cross_site_request``. A mutating request that has a
  body, or declares a content type, must declare ``application/json``, which no HTML form can
  send and a cross-site script can only send after a CORS preflight (which fails: CORS is off);
  anything else gets 415 ``unsupported_media_type``. GET, HEAD and OPTIONS never change anything
  and are not checked for content type.

Clients that are not browsers (curl, SDKs) send no ``Origin`` and are unaffected.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hivekeep.server.errors import error_response

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class AllowedHost:
    """A host name, with the one port it may come with (None: any port, or none)."""

    name: str
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> AllowedHost:
        name, port = split_host(text)
        return cls(name, port)

    def matches(self, name: str, port: int | None) -> bool:
        return name == self.name and (self.port is None or port == self.port)


def split_host(text: str) -> tuple[str, int | None]:
    """``"Example.com:8765"`` -> ``("example.com", 8765)``; ``"[::1]"`` -> ``("[::1]", None)``."""
    text = text.strip().lower()
    if text.startswith("["):  # an IPv6 literal keeps its brackets
        end = text.find("]")
        name, rest = (text[: end + 1], text[end + 1 :]) if end > 0 else (text, "")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") > 1:
        return text, None  # a bare IPv6 address: no port can be told apart from it
    else:
        name, _, port_text = text.partition(":")
    return name, int(port_text) if port_text.isdigit() else None


def bracketed(host: str) -> str:
    """``::1`` -> ``[::1]``: the form of an IPv6 address in a Host header."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare.lower()


def allowed_hosts(
    port: int | None, *, bind_host: str | None = None, extra: Iterable[str] = ()
) -> tuple[AllowedHost, ...]:
    """127.0.0.1, localhost and [::1] on ``port`` (None: any), the bind host, and ``extra``."""
    names = [*LOOPBACK_NAMES]
    if bind_host and bind_host not in ("0.0.0.0", "::", "[::]"):
        names.append(bracketed(bind_host))
    hosts = [AllowedHost(name, port) for name in dict.fromkeys(names)]
    return (*hosts, *(AllowedHost.parse(item) for item in extra))


class RequestGuard:
    """Refuses a foreign Host (421), a cross-site mutation (403) and a non-JSON body (415)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[AllowedHost]) -> None:
        self.app = app
        self.hosts = tuple(hosts)

    def _host_ok(self, host: str | None) -> bool:
        if not host:
            return False
        name, port = split_host(host)
        port = 80 if port is None else port
        return any(allowed.matches(name, port) for allowed in self.hosts)

    def _origin_ok(self, origin: str, host: str) -> bool:
        """Same origin as the request (its Host, already allowed), or one of the allowed hosts."""
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (a sandboxed frame, a file:// page) and anything odd
        if parts.netloc.lower() == host.lower():
            return True
        return self._host_ok(parts.netloc)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        refusal: JSONResponse | None = None
        if not self._host_ok(host):
            log.warning("Refused a request for host %r (DNS rebinding?)", host)
            refusal = error_response(
                421,
                "misdirected_request",
                f"This server does not answer to the host {host!r}. Use http://127.0.0.1 (or "
                "localhost); a public name must be listed in HIVEKEEP_ALLOWED_HOSTS.",
            )
        elif scope["method"] not in SAFE_METHODS:
            refusal = self._mutation_refusal(headers, host or "")
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _mutation_refusal(self, headers: Headers, host: str) -> JSONResponse | None:
        origin = headers.get("origin")
        cross_site = headers.get("sec-fetch-site", "").lower() == "cross-site"
        if cross_site or (origin is not None and not self._origin_ok(origin, host)):
            log.warning("Refused a cross-site request from origin %r", origin)
            return error_response(
                403,
                "cross_site_request",
                f"Refused a request from another site (origin {origin!r}): this server only "
                "accepts changes from its own pages and from clients that are not browsers.",
            )
        content_type = headers.get("content-type")
        has_body = headers.get("content-length", "0").strip() not in ("", "0") or (
            "transfer-encoding" in headers
        )
        if content_type is None and not has_body:
            return None  # nothing to parse (e.g. POST .../compact from curl)
        media = (content_type or "").split(";")[0].strip().lower()
        if media != "application/json":
            return error_response(
                415,
                "unsupported_media_type",
                f"A request that changes something must send its body as application/json, "
                f"not {content_type or 'without a content type'}; send "
                "'Content-Type: application/json'.",
            )
        return None
