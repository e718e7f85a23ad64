"""The integer ranges of what hivekeep stores, and the one check of a value against them.

Every id, version, count and offset that comes from outside (an import line, a CLI argument, a
REST parameter, a tool argument, a Python call) is checked here before it reaches SQL, so no driver
ever sees an integer its column cannot hold (SQLite's OverflowError, PostgreSQL's "integer out of
range") and the caller gets a sentence naming the field and its range instead.

The ranges are those of the narrower engine, so a hive moves between SQLite and PostgreSQL whole:
ids are signed 64-bit on both (SQLite INTEGER, PostgreSQL bigint); counts, tokens, versions and
revisions are PostgreSQL ``integer`` (signed 32-bit).
"""

from __future__ import annotations

from hivekeep.errors import ValidationError

MAX_ID = 2**63 - 1  # SQLite INTEGER and PostgreSQL bigint: a larger id cannot exist
MAX_COUNT = 2**31 - 1  # PostgreSQL integer: tokens, counts, retrieval_count, versions
# An imported version or revision: half the 32-bit range, so the memory or profile it lands on
# still has 2^30 changes of room before its next version would overflow the column.
MAX_IMPORTED_VERSION = 2**30
_SHOWN_DIGITS = 30  # a huge value is described, not printed (str() fails past 4,300 digits)


def shown(value: object) -> str:
    """``value`` for an error message: a number too long to read is described by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"a {value.bit_length()}-bit {'negative ' if value < 0 else ''}integer"
    text = repr(value)
    return text if len(text) <= _SHOWN_DIGITS + 10 else text[:_SHOWN_DIGITS] + "…"


def _wording(value: object, low: int, high: int) -> str:
    return f"must be an integer from {low} to {high}, got {shown(value)}"


def problem(value: object, low: int, high: int) -> str | None:
    """What is wrong with ``value`` as an int (not a bool, float or string) in ``low..high``, in
    the one wording every interface uses; None when nothing is."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return _wording(value, low, high)
    return None


def bounded(value: object, name: str, low: int, high: int) -> int:
    """``value`` if it is an int (not a bool, not a float, not a string) in ``low..high``.

    >>> bounded(3, "limit", 1, 200)
    3
    >>> bounded(2**64, "memory_id", 1, MAX_ID)
    Traceback (most recent call last):
    ...
    hivekeep.errors.ValidationError: 'memory_id' must be an integer from 1 to 9223372036854775807, got 18446744073709551616.
    """  # noqa: E501
    wrong = problem(value, low, high)
    if wrong is not None:
        raise ValidationError(f"'{name}' {wrong}.", field=name)
    assert isinstance(value, int)
    return value


def check_id(value: object, name: str = "memory_id") -> int:
    """A row id: 1 to ``MAX_ID``."""
    return bounded(value, name, 1, MAX_ID)


def check_offset(value: object, name: str = "offset") -> int:
    """How many rows to skip: 0 to ``MAX_ID``."""
    return bounded(value, name, 0, MAX_ID)


def check_version(value: object, name: str = "version") -> int:
    """A memory version or profile revision asked for: 0 to ``MAX_COUNT`` (none is larger)."""
    return bounded(value, name, 0, MAX_COUNT)


def parse_bounded(text: str, name: str, low: int, high: int) -> int:
    """A decimal integer typed by a person (a CLI argument), checked like ``bounded``.

    Only an optional sign and ASCII digits are read ("1e3", "0x10", "1_000" and "4.0" are
    refused), and a string too long to be in range is refused before it is converted.
    """
    digits = text.strip()
    body = digits[1:] if digits[:1] in "+-" else digits
    if (
        not body.isascii()
        or not body.isdigit()
        or len(body.lstrip("0")) > len(str(max(abs(low), abs(high))))
        or not low <= int(digits) <= high
    ):
        raise ValidationError(f"'{name}' {_wording(text, low, high)}.", field=name)
    return int(digits)
