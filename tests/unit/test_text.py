from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hivekeep.core.text import (
    age,
    clean_text,
    format_timestamp,
    normalise_text,
    parse_created_at,
    parse_since,
    safe_for_terminal,
)
from hivekeep.core.tokens import count_tokens, encoding
from hivekeep.errors import ValidationError


def test_normalise_text_ignores_case_spacing_and_edge_punctuation() -> None:
    assert normalise_text("  The user   likes TEA. ") == normalise_text("the user likes tea")


def test_normalise_text_keeps_inner_punctuation() -> None:
    assert normalise_text("Port 5433, not 5432") != normalise_text("Port 5433 not 5432")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01", "2024-05-01T00:00:00.000000Z"),
        ("2024-05-01T14:30:00Z", "2024-05-01T14:30:00.000000Z"),
        ("2024-05-01T14:30:00+02:00", "2024-05-01T12:30:00.000000Z"),
        ("2024-05-01T14:30:00", "2024-05-01T14:30:00.000000Z"),
    ],
)
def test_parse_since_accepts_iso_dates_and_datetimes(value: str, expected: str) -> None:
    assert parse_since(value) == expected


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "01/05/2024", ""])
def test_parse_since_rejects_bad_dates_clearly(value: str) -> None:
    with pytest.raises(ValidationError, match="since"):
        parse_since(value)


def test_timestamps_sort_as_text() -> None:
    early = format_timestamp(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    late = format_timestamp(datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC))
    assert early < late


def test_age() -> None:
    now = datetime(2024, 6, 1, tzinfo=UTC)
    stamp = format_timestamp(now - timedelta(days=3, hours=2))
    assert age(stamp, now) == "3d ago"
    assert age(format_timestamp(now), now) == "just now"


def test_token_counting_uses_real_bpe_offline() -> None:
    assert count_tokens("hello world") == 2
    assert encoding().name == "cl100k_base"
    assert count_tokens("<|endoftext|>") > 1  # special tokens count as plain text


def test_clean_text_drops_control_characters_but_newline_and_tab() -> None:
    assert clean_text("a\tb\nc") == "a\tb\nc"
    assert clean_text("\u001b[31mred\u001b[0m") == "[31mred[0m"
    assert clean_text("bell\u0007 del\u007f csi\u009b cr\r\n") == "bell del csi cr\n"
    assert clean_text("café \u2013 ünïcode") == "café \u2013 ünïcode"


def test_clean_text_refuses_nul() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        clean_text("a\u0000b")


def test_safe_for_terminal_shows_every_control_character() -> None:
    shown = safe_for_terminal("x\u001b]0;pwned\u0007\u0000\u009b y\n\tz")
    assert shown == "x\\x1b]0;pwned\\x07\\x00\\x9b y\n\tz"


@pytest.mark.parametrize("value", ["2024-02-31", "2023-02-29T10:00:00Z", "2024-04-31"])
def test_created_at_must_be_a_real_date(value: str) -> None:
    with pytest.raises(ValidationError, match="created_at"):
        parse_created_at(value)


def test_created_at_at_most_a_day_ahead() -> None:
    now = datetime(2024, 6, 1, tzinfo=UTC)
    assert parse_created_at("2024-06-01T23:00:00Z", now=now) == "2024-06-01T23:00:00.000000Z"
    assert parse_created_at(now + timedelta(hours=23), now=now).startswith("2024-06-01T23")
    late_values: list[str | datetime] = [
        "2024-06-02T00:00:01Z",
        "2999-01-01",
        now + timedelta(days=2),
    ]
    for late in late_values:
        with pytest.raises(ValidationError, match="more than a day ahead"):
            parse_created_at(late, now=now)


def test_age_of_a_bad_stored_value_is_unknown_not_a_crash(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert age("2024-02-31T00:00:00.000000Z") == "unknown age"
    assert age("garbage") == "unknown age"
    assert "invalid stored timestamp" in caplog.text
