"""Lines of an import file for the tests that feed hostile or edge-case files to ``import_``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STAMP = "2024-05-01T12:00:00.000000Z"
HEADER = {
    "type": "header",
    "format": "hivekeep-jsonl",
    "version": 2,
    "hivekeep_version": "0",
    "exported_at": STAMP,
    "embedding": None,
}
AGENT = {"type": "agent", "name": "sam", "role": ""}


def write(path: Path, *records: dict[str, Any] | str) -> Path:
    """``records`` as JSONL at ``path`` (a string is written as is: a broken line)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
