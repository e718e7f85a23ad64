from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hivekeep.core.text import age, format_timestamp, normalise_text, parse_since
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
