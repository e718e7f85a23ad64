"""URLs shown or logged without the credentials they may carry (issue 32, items 7 and 8).

A base URL may hold a user and password (``https://user:pass@host/v1``) or a key in its query
string (``?api-key=...``). Everything hivekeep shows (``GET /api/settings``, error messages,
reprs) and every log line of a server (httpx's own request lines included) goes through here.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

HIDDEN = "…"
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@]*@")
_QUERY = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#\"']*)[?#][^\s\"']*")


def shown_url(url: str) -> str:
    """``url`` without its user, password, query string and fragment (each marked ``…``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_urls(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = HIDDEN if parts.query or parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it shown as ``shown_url`` would (for log lines)."""
    if "://" not in text:
        return text
    return _QUERY.sub(rf"\1?{HIDDEN}", _USERINFO.sub(rf"\1{HIDDEN}@", text))
