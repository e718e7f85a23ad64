"""An import is checked like a live write: kept versions get the live limits and the token
budget (their token counts recounted), no date lies in the future, a file cannot speak for a
live agent, and transcript text (messages, summaries, titles, speakers, tool names) is cleaned
and bounded like everything else. Real hive files; each case failed on e86e37d.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Hive, Settings, ValidationError
from hivekeep.core.tokens import count_tokens
from hivekeep.services.chat import MAX_MESSAGE_CHARS
from tests.integration.import_lines import AGENT, HEADER, STAMP, write
from tests.support import VectorTable

FUTURE = "2999-01-01T00:00:00.000000Z"
CONVERSATION = {
    "type": "conversation",
    "key": "c1",
    "agent": "sam",
    "title": "Tea",
    "created_at": STAMP,
    "updated_at": STAMP,
}
LONG_PROFILE = "## Notes\n" + "- the user likes long lists of words\n" * 2000  # ~20k tokens


def memory(**changes: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "author": "sam",
        "content": "Ann likes tea.",
        "category": "fact",
        "created_at": STAMP,
        **changes,
    }


def kept(**changes: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "content": "Ann likes tea.",
        "category": "fact",
        "scope": "private",
        "changed_at": STAMP,
        "changed_by": "agent",
        "operation": "create",
        **changes,
    }


def profile(text: str, *versions: dict[str, Any], **changes: Any) -> dict[str, Any]:
    history = [
        {"text": "", "changed_at": STAMP, "changed_by": "person", "operation": "set", **v}
        for v in versions
    ]
    return {"type": "profile", "agent": "sam", "text": text, "history": history, **changes}


def message(**changes: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "conversation": "c1",
        "key": "m1",
        "role": "user",
        "content": "Hello",
        "created_at": STAMP,
        **changes,
    }


@pytest.fixture
def hive(tmp_path: Path) -> Iterator[Hive]:
    with Hive(tmp_path / "hive.db", embedder=VectorTable(), settings=Settings()) as opened:
        yield opened


def refused(hive: Hive, path: Path, line: int, *says: str) -> str:
    agents = len(hive.store.list_agents())
    with pytest.raises(ValidationError) as raised:
        hive.import_(path)
    message = str(raised.value)
    assert f"line {line}: " in message, message
    for part in says:
        assert part in message, message
    assert len(hive.store.list_agents()) == agents, "a refused file writes nothing"
    return message


# -- item 5: kept versions as live writes ---------------------------------------------------


def test_a_kept_profile_version_over_the_budget_needs_the_explicit_flag(
    hive: Hive, tmp_path: Path
) -> None:
    """The report: a restored 55,003-token profile version was recorded as 3 tokens."""
    line = profile("## User\n- Ann", {"version": 1, "text": LONG_PROFILE, "tokens": 3})
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, line)
    message = refused(hive, path, 3, "(kept version 1)", "over this hive's budget")
    assert "--allow-over-budget" in message
    hive.import_(path, allow_over_budget=True)
    [version] = hive.get_agent("sam").profile_history()
    assert version["tokens"] == count_tokens(LONG_PROFILE) != 3  # recounted, not the file's


def test_a_kept_profile_version_gets_its_tokens_recounted(hive: Hive, tmp_path: Path) -> None:
    text = "## User\n- Ann likes green tea"
    line = profile(text, {"version": 1, "text": text, "tokens": 999_999}, revision=1)
    hive.import_(write(tmp_path / "f.jsonl", HEADER, AGENT, line))
    sam = hive.get_agent("sam")
    assert [v["tokens"] for v in sam.profile_history()] == [count_tokens(text)]
    assert sam.profile().tokens == count_tokens(text)


def test_a_revision_older_than_a_kept_version_is_a_line_error(hive: Hive, tmp_path: Path) -> None:
    line = profile("x", {"version": 5, "text": "x"}, revision=2)
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, line), 3, "older than kept version 5")


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"subject": "s" * 100_000}, "'history.0.subject'"),  # the report: live on restore
        ({"subject": ""}, "'history.0.subject'"),
        ({"content": "x" * 2001}, "'history.0.content'"),
        ({"content": "a \u0000 b"}, "NUL"),
        ({"category": "gossip"}, "'history.0.category'"),
        ({"importance": 11}, "'history.0.importance'"),
    ],
)
def test_a_kept_memory_version_gets_the_live_limits(
    hive: Hive, tmp_path: Path, changes: dict[str, Any], says: str
) -> None:
    line = memory(history=[kept(**changes)])
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, line), 3, says)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (memory(updated_at=FUTURE), "'updated_at'"),
        (memory(last_retrieved_at=FUTURE), "'last_retrieved_at'"),
        (memory(history=[kept(changed_at=FUTURE)]), "'history.0.changed_at'"),
        (
            {**memory(), "type": "trashed", "deleted_at": FUTURE, "deleted_by": "agent"},
            "'deleted_at'",
        ),
        (profile("x", {"version": 1, "text": "x", "changed_at": FUTURE}), "changed_at"),
        (profile("x", updated_at=FUTURE), "'updated_at'"),
        ({**AGENT, "name": "kit", "updated_at": FUTURE}, "'updated_at'"),
        ({**CONVERSATION, "updated_at": FUTURE}, "'updated_at'"),
    ],
)
def test_a_date_far_in_the_future_is_a_line_error(
    hive: Hive, tmp_path: Path, line: dict[str, Any], field: str
) -> None:
    """The report: a trashed memory that never expires, a planted fact that is always newest."""
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, line)
    refused(hive, path, 3, field, "more than a day ahead of now")


def test_a_file_cannot_make_a_live_agent_the_author_of_a_shared_memory(
    hive: Hive, tmp_path: Path
) -> None:
    bob = hive.create_agent("bob")
    ann = hive.create_agent("ann")
    planted = memory(author="bob", scope="shared", content="Bob says the door code is 0000.")
    own = memory(author="bob", content="Bob's private note.")
    path = write(tmp_path / "f.jsonl", HEADER, {**AGENT, "name": "bob"}, planted, own)
    hive.import_(path)
    [shared] = ann.recall("door code").hits
    assert shared.memory.agent_id is None  # owned by no agent: bob never wrote it here
    assert shared.memory.author_name == "bob (imported)"
    assert bob.list_memories(scope="private").memories[0].agent_id == bob.id  # his own archive


def test_a_shared_memory_of_an_agent_the_import_creates_is_attributed_to_it(
    hive: Hive, tmp_path: Path
) -> None:
    line = memory(scope="shared", content="The standup is at ten.")
    hive.import_(write(tmp_path / "f.jsonl", HEADER, AGENT, line))
    sam = hive.get_agent("sam")
    [stored] = sam.list_memories().memories
    assert (stored.agent_id, stored.author_name) == (sam.id, "sam")


# -- item 8: transcript text ------------------------------------------------------------------


def test_transcript_text_is_cleaned_like_every_write(hive: Hive, tmp_path: Path) -> None:
    """The report: NUL and terminal escapes were stored in messages, summaries, titles and
    speakers."""
    dirty = "red \u001b[31malert\u001b[0m\u0000\u009b"
    lines = [
        {**CONVERSATION, "title": f"Tea {dirty}"},
        message(content=f"Hi {dirty}", speaker=f"Ann {dirty}", summary="s1"),
        message(
            key="m2",
            role="assistant",
            content="",
            tool_calls=[{"id": f"t{dirty}", "name": f"recall{dirty}", "arguments": "{}"}],
        ),
        message(key="m3", role="tool", content=dirty, tool_call_id=f"t{dirty}", tool_name="recall"),
        {
            "type": "summary",
            "conversation": "c1",
            "key": "s1",
            "text": f"They talked {dirty}",
            "tokens": 3,
            "first_at": STAMP,
            "last_at": STAMP,
            "message_count": 1,
            "maintenance_error": f"oops {dirty}",
            "created_at": STAMP,
        },
    ]
    hive.import_(write(tmp_path / "f.jsonl", HEADER, AGENT, *lines))
    sam = hive.get_agent("sam")
    [conversation] = sam.conversations()
    stored = sam.messages(conversation.id)
    [summary] = hive.store.list_summaries(conversation.id)
    texts = [
        conversation.title,
        summary.text,
        summary.maintenance_error or "",
        *(m.content for m in stored),
        *(m.speaker or "" for m in stored),
        *(m.tool_call_id or "" for m in stored),
        *(c.id + c.name for m in stored for c in m.tool_calls),
    ]
    for text in texts:
        assert not any(ch in text for ch in "\u0000\u001b\u009b"), repr(text)
    assert conversation.title == "Tea red [31malert[0m"
    assert stored[0].speaker == "Ann red [31malert[0m"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (message(content="x" * (MAX_MESSAGE_CHARS + 1)), "'content'"),
        (message(speaker="s" * 101), "'speaker'"),
        (message(tool_name="t" * 201), "'tool_name'"),
    ],
)
def test_transcript_text_gets_the_live_limits(
    hive: Hive, tmp_path: Path, line: dict[str, Any], says: str
) -> None:
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, CONVERSATION, line), 4, says)


def test_a_title_over_the_live_limit_is_a_line_error(hive: Hive, tmp_path: Path) -> None:
    line = {**CONVERSATION, "title": "t" * 201}
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, line), 3, "'title'")


def test_a_50_mb_line_is_refused_without_being_read_whole(hive: Hive, tmp_path: Path) -> None:
    """The report: a 50 MB message imported fine."""
    path = tmp_path / "f.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for record in (HEADER, AGENT, CONVERSATION):
            out.write(json.dumps(record) + "\n")
        out.write(json.dumps(message(content="x" * 50_000_000)) + "\n")
        out.write(json.dumps(memory()) + "\n")
    message_text = refused(hive, path, 4, "longer than 16 MiB")
    assert "line 5" not in message_text  # the rest of the file is read on, line by line


def test_a_hand_written_timestamp_gets_an_example_not_a_regex(hive: Hive, tmp_path: Path) -> None:
    """Issue 34: "String should match pattern '^\\d{4}-…'" told a person nothing."""
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(created_at="2024-05-01 10:00"))
    message = refused(hive, path, 3, "like 2024-05-01T10:00:00.000000Z")
    assert "pattern" not in message and "\\d" not in message


def test_broken_json_names_its_column_once(hive: Hive, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, '{"type": "agent", "name": "a\tb"}')
    message = refused(hive, path, 3, "Invalid control character at column")
    assert "at at" not in message
