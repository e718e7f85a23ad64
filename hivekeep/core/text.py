"""Text keys used by the archive: exact-duplicate keys, embedding input, timestamps."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime

from hivekeep.errors import ValidationError

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def normalise_text(content: str) -> str:
    """Key under which two memories count as the same text: case, spacing, edge punctuation ignored.

    >>> normalise_text("  The user likes TEA. ")
    'the user likes tea'
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return _EDGE_PUNCT.sub("", _SPACE.sub(" ", folded).strip())


def embedding_text(content: str, subject: str | None) -> str:
    """What a memory's vector is computed from (one place, so it can be tuned by measurement)."""
    return content


def format_timestamp(moment: datetime) -> str:
    """UTC timestamps in one fixed-width format, so text comparison is time comparison."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    # %Y is not zero-padded below year 1000 on every platform: pad it by hand (fixed width)
    return f"{moment.year:04d}" + moment.strftime(TIMESTAMP_FORMAT.removeprefix("%Y"))


def now_timestamp() -> str:
    return format_timestamp(datetime.now(UTC))


def parse_since(value: str, name: str = "since") -> str:
    """An ISO date or datetime as a stored-format timestamp; naive datetimes are taken as UTC.

    >>> parse_since("2024-05-01")
    '2024-05-01T00:00:00.000000Z'
    """
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return format_timestamp(datetime(day.year, day.month, day.day, tzinfo=UTC))
        return format_timestamp(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # OverflowError: out of range once moved to UTC
        raise ValidationError(
            f"'{name}' has value {value!r}, which is not an ISO date or datetime. "
            "Use e.g. '2024-05-01' or '2024-05-01T14:30:00Z'."
        ) from None


def parse_timestamp(value: str) -> datetime:
    return datetime.strptime(value, TIMESTAMP_FORMAT).replace(tzinfo=UTC)


def age(created_at: str, now: datetime | None = None) -> str:
    """A short human age such as "just now", "5m ago", "3d ago", "2y ago"."""
    seconds = ((now or datetime.now(UTC)) - parse_timestamp(created_at)).total_seconds()
    if seconds < 60:
        return "just now"
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds // 60)}m ago"
