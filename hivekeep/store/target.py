"""What a hive target names: a PostgreSQL URL or a SQLite file (no driver imported here)."""

from __future__ import annotations

import re

_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def is_postgres_url(target: str) -> bool:
    """``postgresql://...`` or ``postgres://...``: a hive on a PostgreSQL server."""
    return bool(_URL.match(target))
