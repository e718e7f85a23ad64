"""The month names both SQL backends index with each memory's creation date ('8 May 2023').

Questions name months and years ("what happened in May 2023?") that appear only in when a
memory was made, so both full-text indexes hold the date in words (docs/benchmarks.md).
"""

from __future__ import annotations

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def month_cases() -> str:
    """The ``WHEN '01' THEN 'January' ...`` arms of a SQL CASE over a timestamp's month digits."""
    return " ".join(f"WHEN '{n:02d}' THEN '{name}'" for n, name in enumerate(MONTHS, start=1))
