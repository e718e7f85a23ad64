"""What a hive target names: a PostgreSQL URL or a SQLite file (no driver imported here), and
how a message shows it (never with its password)."""

from __future__ import annotations

import re

_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def is_postgres_url(target: str) -> bool:
    """``postgresql://...`` or ``postgres://...``: a hive on a PostgreSQL server."""
    return bool(_URL.match(target))


_PASSWORD_PARAMETER = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact_url(target: str) -> str:
    """``target`` with any password replaced by ``***`` (``postgresql://user:***@host/db``, and
    a ``?password=`` parameter): what a start line, a log or an error message may show."""
    scheme, sep, rest = target.partition("://")
    if not sep:
        return target
    authority, slash, tail = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.split(':', 1)[0]}:***@{host}"
    return _PASSWORD_PARAMETER.sub(r"\1***", f"{scheme}://{authority}{slash}{tail}")
