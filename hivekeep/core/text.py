"""Text keys used by the archive: exact-duplicate keys, embedding input, timestamps, and the
control-character rule of every stored text."""

from __future__ import annotations

import logging
import re
import unicodedata
from datetime import UTC, date, datetime, timedelta

from hivekeep.errors import ValidationError

log = logging.getLogger(__name__)

_SPACE = re.compile(r"\s+")
# what a text may start or end with and still be the same text: spaces and the punctuation that
# marks no meaning (a sign, a currency, "?", "%", "+" or "#" at an edge is part of the fact:
# "-5 °C", "grade A+", "$40", "in F#")
_EDGE_PUNCT = re.compile(
    r"""^[\s.,;:!"'()\[\]{}\u2018-\u201f\u2026]+|[\s.,;:!"()\[\]{}\u2018-\u201f\u2026]+$"""
)
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# C0 and C1 control characters and DEL, except tab (\x09) and newline (\x0a); NUL is refused.
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
# The bidirectional controls: stored as written (they are legitimate in right-to-left text), but
# shown visibly on a terminal, where U+202E would make "price \u202e0001$" read "price $1000".
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # a regex class's body
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
MAX_FUTURE = timedelta(days=1)  # a timestamp further ahead of now than this is refused


def clean_text(text: str, name: str = "content") -> str:
    """``text`` without control characters (C0, DEL, C1) but tab and newline; NUL is an error.

    Applied where text is written, so what an agent, an LLM or an import wrote can never carry
    terminal escape sequences (``\\x1b[31m``) into a later reader's terminal.

    >>> clean_text("red \\x1b[31malert\\x1b[0m\\r\\n")
    'red [31malert[0m\\n'
    """
    if "\x00" in text:
        raise ValidationError(
            f"'{name}' contains a NUL character (\\u0000), which hivekeep does not store. "
            "Remove it and send the text again."
        )
    return _CONTROL.sub("", text)


def safe_for_terminal(text: str) -> str:
    """``text`` with every control character but newline and tab shown as a visible escape, and
    every bidirectional control as ``<U+XXXX>``.

    >>> safe_for_terminal("a\\x1b[2Jb")
    'a\\\\x1b[2Jb'
    >>> safe_for_terminal("price \\u202e0001$")
    'price <U+202E>0001$'
    """
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text.replace("\x00", "\\x00"))
    return _BIDI.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", shown)


_LINE_FORGING = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")


def forges_lines(text: str) -> bool:
    """Whether ``text`` holds a character that could fake or reorder lines where it is shown
    inline (a name in a listing): any control (newline and tab included), a Unicode line or
    paragraph separator, or a bidi control.

    >>> forges_lines("notes.md"), forges_lines("a.md\\n/memories/b.md"), forges_lines("a\\u202eb")
    (False, True, True)
    """
    return _LINE_FORGING.search(text) is not None


def normalise_text(content: str) -> str:
    """Key under which two memories count as the same text: case, spacing and edge punctuation
    that carries no meaning ignored (never a sign, symbol, currency or "?").

    >>> normalise_text("  The user likes TEA. ")
    'the user likes tea'
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return _EDGE_PUNCT.sub("", _SPACE.sub(" ", folded).strip())


def wording(content: str) -> str:
    """The text as the write-path invariant compares it (SPEC 4.1): Unicode NFC and whitespace
    collapsed, nothing else. Two texts with the same wording are one text; any other difference
    (case, punctuation, a sign) may carry meaning, so only this equality is an exact repeat.

    >>> wording("  Caf\u0065\u0301  opens\tat 9 ") == wording("Caf\u00e9 opens at 9")
    True
    >>> wording("getUserID") == wording("getUserId")
    False
    """
    return " ".join(unicodedata.normalize("NFC", content).split())


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


def check_not_future(stamp: str, name: str = "created_at", now: datetime | None = None) -> str:
    """``stamp`` (stored format) unless it is more than ``MAX_FUTURE`` ahead of ``now``.

    A memory cannot have been created tomorrow; a far-future date would also sort it first for
    ever among equally relevant memories.
    """
    limit = (now or datetime.now(UTC)) + MAX_FUTURE
    if stamp > format_timestamp(limit):
        raise ValidationError(
            f"'{name}' has value {stamp!r}, more than a day ahead of now ({format_timestamp(limit)}"
            " is the latest accepted). Give the date the remembered thing happened."
        )
    return stamp


def parse_created_at(value: str | datetime, now: datetime | None = None) -> str:
    """A memory's creation time from an ISO date/datetime (or a datetime): real, not far ahead."""
    if isinstance(value, datetime):
        try:
            stamp = format_timestamp(value)
        except (ValueError, OverflowError):
            raise ValidationError(f"'created_at' has value {value!r}, out of range.") from None
    else:
        stamp = parse_since(str(value), name="created_at")
    return check_not_future(stamp, now=now)


def parse_timestamp(value: str) -> datetime:
    return datetime.strptime(value, TIMESTAMP_FORMAT).replace(tzinfo=UTC)


def age(created_at: str, now: datetime | None = None) -> str:
    """A short human age such as "just now", "5m ago", "3d ago", "2y ago".

    A stored value that is not a real timestamp (an old import let "2024-02-31" in) reads as
    "unknown age", with a warning in the log, so one bad row cannot break every listing.
    """
    try:
        moment = parse_timestamp(created_at)
    except (TypeError, ValueError):
        log.warning("A memory has an invalid stored timestamp %r; shown as unknown", created_at)
        return "unknown age"
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 60:
        return "just now"
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds // 60)}m ago"
