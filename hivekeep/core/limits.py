"""The bounds of a live memory's fields, defined once for every path that makes a memory live:
the tools (``tools.py``), the import format and a restore, which re-checks an old version or a
trashed memory before it becomes current again (a stored version is no proof it is valid now).
"""

from __future__ import annotations

from hivekeep.errors import ValidationError

MAX_CONTENT_CHARS = 2000
MAX_SUBJECT_CHARS = 200
MIN_IMPORTANCE, MAX_IMPORTANCE = 1, 10


def check_live_fields(content: str, subject: str | None, importance: int | None) -> None:
    """Raise ValidationError, naming the field, unless a live write could have stored these."""
    if not content.strip() or len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"'content' is {len(content)} characters; a memory holds 1-{MAX_CONTENT_CHARS}.",
            field="content",
        )
    if subject is not None and not 1 <= len(subject) <= MAX_SUBJECT_CHARS:
        raise ValidationError(
            f"'subject' is {len(subject)} characters; a subject holds 1-{MAX_SUBJECT_CHARS}.",
            field="subject",
        )
    if importance is not None and not MIN_IMPORTANCE <= importance <= MAX_IMPORTANCE:
        raise ValidationError(
            f"'importance' is {importance}; it is {MIN_IMPORTANCE}-{MAX_IMPORTANCE} or null.",
            field="importance",
        )
