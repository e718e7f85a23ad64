"""The one range check (``core/bounds.py``) and the text helpers that keep stored text from
forging terminal output or listing lines (``core/text.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from hivekeep.core.bounds import (
    MAX_COUNT,
    MAX_ID,
    MAX_IMPORTED_VERSION,
    bounded,
    check_id,
    check_offset,
    parse_bounded,
    shown,
)
from hivekeep.core.text import forges_lines, safe_for_terminal
from hivekeep.errors import ValidationError


def test_the_ranges_are_the_columns() -> None:
    assert MAX_ID == 9_223_372_036_854_775_807  # SQLite INTEGER, PostgreSQL bigint
    assert MAX_COUNT == 2_147_483_647  # PostgreSQL integer
    assert MAX_IMPORTED_VERSION + MAX_IMPORTED_VERSION <= MAX_COUNT + 1  # room to grow


@pytest.mark.parametrize("value", [1, 42, MAX_ID])
def test_an_id_in_range_passes(value: int) -> None:
    assert check_id(value) == value


@pytest.mark.parametrize(
    "value", [0, -1, MAX_ID + 1, 2**64, -(2**63), True, False, 1.0, "1", None, [1]]
)
def test_anything_else_is_a_validation_error_naming_field_and_range(value: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        check_id(value, "memory_id")
    assert str(raised.value).startswith(f"'memory_id' must be an integer from 1 to {MAX_ID}, got")
    assert raised.value.field == "memory_id"


def test_a_huge_value_is_described_not_printed() -> None:
    assert shown(10**5000) == "a 16610-bit integer"  # str() of it would raise
    with pytest.raises(ValidationError, match="got a 16610-bit integer"):
        check_offset(10**5000)
    assert shown("9" * 100).endswith("…") and len(shown("9" * 100)) < 40


@pytest.mark.parametrize(
    ("text", "expected"), [("7", 7), (" 7 ", 7), ("+7", 7), ("007", 7), ("200", 200)]
)
def test_typed_integers_in_range_are_read(text: str, expected: int) -> None:
    assert parse_bounded(text, "limit", 1, 200) == expected


@pytest.mark.parametrize(
    "text", ["0", "-1", "201", "1e3", "0x10", "1_000", "4.0", "", "seven", "٣", "9" * 5000]
)
def test_typed_integers_out_of_range_or_malformed_are_refused(text: str) -> None:
    with pytest.raises(ValidationError, match="'limit' must be an integer from 1 to 200"):
        parse_bounded(text, "limit", 1, 200)


def test_negative_ranges_read_a_sign() -> None:
    assert parse_bounded("-5", "delta", -10, 10) == -5
    assert bounded(-10, "delta", -10, 10) == -10


def test_the_terminal_sees_bidi_controls_as_visible_marks() -> None:
    assert safe_for_terminal("price \u202e0001$") == "price <U+202E>0001$"
    assert safe_for_terminal("\u2066a\u2069 \u200e\u200f\u061c") == (
        "<U+2066>a<U+2069> <U+200E><U+200F><U+061C>"
    )
    assert safe_for_terminal("line\nnext\ttab") == "line\nnext\ttab"


@pytest.mark.parametrize(
    "name", ["a\nb", "a\rb", "a\tb", "a\x1bb", "a\x85b", "a\u2028b", "a\u2029b", "a\u202eb"]
)
def test_names_that_would_forge_lines_are_spotted(name: str) -> None:
    assert forges_lines(name)


def test_plain_names_do_not_forge_lines() -> None:
    assert not forges_lines("notes about tea (2024) — café.md")
