"""A hostile or broken import file: every problem is a line error, nothing is written, and no bad
value (an impossible date, a megabyte of text, a control character) reaches the hive.

Includes the fuzz suite of the file format: hypothesis writes arbitrary lines, and an import either
succeeds or fails with a ``ValidationError`` naming lines; it never raises anything else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Hive, Settings, ValidationError
from hivekeep.services.transfer import MAX_CONTENT_CHARS
from hivekeep.tools import MemorizeArgs
from tests.integration.import_lines import AGENT, STAMP, write
from tests.support import VectorTable

HEADER = {
    "type": "header",
    "format": "hivekeep-jsonl",
    "version": 1,
    "hivekeep_version": "0",
    "exported_at": STAMP,
    "embedding": None,
}


def memory(**changes: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "author": "sam",
        "content": "Ann likes tea.",
        "category": "fact",
        "created_at": STAMP,
        **changes,
    }


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Hive]:
    with Hive(tmp_path / "target.db", embedder=VectorTable(), settings=Settings()) as hive:
        yield hive


def refused(hive: Hive, path: Path, says: str, line: int) -> str:
    with pytest.raises(ValidationError) as raised:
        hive.import_(path)
    message = str(raised.value)
    assert f"line {line}: " in message and says in message, message
    assert hive.store.list_agents() == [], "a refused file must write nothing"
    return message


def stored_contents(hive: Hive) -> list[str]:
    return [m.content for m, _ in hive.store.memories_with_vectors(None)]


@pytest.mark.parametrize(
    "stamp",
    [
        "2024-02-31T00:00:00.000000Z",  # the finding: passed the regex, broke every read
        "2023-02-29T00:00:00.000000Z",
        "2024-13-01T00:00:00.000000Z",
        "2024-05-01T24:00:00.000000Z",
        "2024-05-01T12:60:00.000000Z",
    ],
)
def test_an_impossible_date_is_a_line_error(target: Hive, tmp_path: Path, stamp: str) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(created_at=stamp))
    refused(target, path, "is not a real date and time", 3)


@pytest.mark.parametrize("field", ["updated_at", "last_retrieved_at"])
def test_every_timestamp_field_is_a_real_date(target: Hive, tmp_path: Path, field: str) -> None:
    path = write(
        tmp_path / "f.jsonl", HEADER, AGENT, memory(**{field: "2024-02-30T00:00:00.000000Z"})
    )
    refused(target, path, "is not a real date", 3)


def test_a_far_future_created_at_is_refused(target: Hive, tmp_path: Path) -> None:
    path = write(
        tmp_path / "f.jsonl", HEADER, AGENT, memory(created_at="2999-01-01T00:00:00.000000Z")
    )
    refused(target, path, "more than a day ahead of now", 3)


def test_imported_memories_get_the_memorize_tools_limits(target: Hive, tmp_path: Path) -> None:
    assert MemorizeArgs.model_fields["content"].metadata[-1].max_length == MAX_CONTENT_CHARS
    huge = memory(content="x" * 1_000_000)  # the finding: 1 MB of content imported fine
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, huge)
    refused(target, path, "at most 2000 characters", 3)
    path = write(tmp_path / "g.jsonl", HEADER, AGENT, memory(subject="s" * 201))
    refused(target, path, "'subject'", 3)


def test_a_profile_over_the_budget_needs_the_explicit_flag(target: Hive, tmp_path: Path) -> None:
    text = "## Notes\n" + "- the user likes long lists of words\n" * 2000  # ~20k tokens
    path = write(
        tmp_path / "f.jsonl", HEADER, AGENT, {"type": "profile", "agent": "sam", "text": text}
    )
    message = refused(target, path, "over this hive's budget of 1500", 3)
    assert "--allow-over-budget" in message
    target.import_(path, allow_over_budget=True)
    assert target.get_agent("sam").profile().text == text


def test_control_characters_in_an_import_are_dropped_and_nul_refused(
    target: Hive, tmp_path: Path
) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(content="a \u0000 b"))
    refused(target, path, "NUL", 3)
    path = write(
        tmp_path / "g.jsonl",
        HEADER,
        AGENT,
        memory(content="red \u001b[31malert\u001b[0m\u009b", subject="Ann\u0007"),
    )
    target.import_(path)
    [(stored, _)] = target.store.memories_with_vectors(None)
    assert stored.content == "red [31malert[0m" and stored.subject == "Ann"


def test_a_deeply_nested_line_is_a_line_error(target: Hive, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # the finding: a RecursionError traceback
    path = write(tmp_path / "f.jsonl", HEADER, deep)
    refused(target, path, "nested too deeply", 2)
    nested_record = '{"type":"agent","name":"sam","settings":{"compaction":' + "[" * 5000
    nested_record += "]" * 5000 + "}}"
    path = write(tmp_path / "g.jsonl", HEADER, nested_record)
    with pytest.raises(ValidationError, match="line 2: "):
        target.import_(path)


def test_a_non_utf8_byte_is_a_line_error(target: Hive, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory())
    path.write_bytes(path.read_bytes().replace(b"Ann likes", b"Ann \xff likes"))
    message = refused(target, path, "not valid UTF-8 (byte 0xff", 3)
    assert "nothing was imported" in message


# -- fuzz: hypothesis-generated lines -----------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
FIELD_VALUES = st.one_of(
    JSON,
    st.sampled_from(
        [
            STAMP,
            "2024-02-31T00:00:00.000000Z",
            "9999-12-31T23:59:59.999999Z",
            "sam",
            "fact",
            "shared",
            "\u0000",
            "\u001b[2J",
            "x" * 3000,
            -1,
            2**63,
        ]
    ),
)
TYPES = st.sampled_from(["agent", "profile", "memory", "conversation", "message", "summary"])


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any] | str:
    kind = draw(st.sampled_from(["mutated", "free", "raw"]))
    if kind == "raw":
        return draw(st.text(max_size=60).map(lambda t: t.replace("\n", " ")))
    base: dict[str, Any] = draw(
        st.sampled_from([AGENT, memory(), {"type": "profile", "agent": "sam", "text": "x"}])
    )
    record = dict(base) if kind == "mutated" else {"type": draw(TYPES)}
    for key in draw(
        st.lists(st.sampled_from(sorted({*memory(), "text", "name", "key", "role"})), max_size=3)
    ):
        record[key] = draw(FIELD_VALUES)
    return record


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=st.lists(records(), min_size=0, max_size=6))
def test_fuzzed_files_import_cleanly_or_fail_with_line_errors(
    target: Hive, tmp_path: Path, lines: list[dict[str, Any] | str]
) -> None:
    path = tmp_path / "fuzz.jsonl"
    body = [json.dumps(r) if isinstance(r, dict) else r for r in [HEADER, AGENT, *lines]]
    path.write_text("\n".join(body) + "\n", encoding="utf-8", errors="surrogatepass")
    before = stored_contents(target)
    try:
        target.import_(path)
    except ValidationError as exc:
        assert "line " in str(exc)
        assert stored_contents(target) == before
        return
    for content in stored_contents(target):
        assert "\x00" not in content and "\x1b" not in content
        assert 0 < len(content) <= MAX_CONTENT_CHARS
    for m, _ in target.store.memories_with_vectors(None):
        assert "2024-02-31" not in m.created_at
        target.get_agent("sam").list_memories()  # every stored row can be read back
