"""Integers at the edges: every id, version, count, offset and limit from an import line, a CLI
argument or option, or a Python call is held to its column's range (``core/bounds.py``) with a
sentence naming the field and the range; never an OverflowError, a driver's "out of range" or
"this is a bug in hivekeep". Real hive files (and a real PostgreSQL schema where an engine's
column is narrower); the CLI runs in-process through click, as a shell would call it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hivekeep import Hive, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.core.bounds import MAX_COUNT, MAX_ID, MAX_IMPORTED_VERSION
from tests.integration.import_lines import AGENT, HEADER, STAMP, write
from tests.postgres import hive_target
from tests.support import VectorTable

HUGE = [2**63 - 1, 2**63, 2**64, 10**40]
NOT_INTEGERS = [True, False, 5.0, 5.5, "5", "1_000", None, [1], {"n": 1}]


def memory(**changes: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "author": "sam",
        "content": "Ann likes tea.",
        "category": "fact",
        "scope": "shared",
        "created_at": STAMP,
        **changes,
    }


def version(number: Any, **changes: Any) -> dict[str, Any]:
    return {
        "version": number,
        "content": "Ann likes tea.",
        "category": "fact",
        "scope": "shared",
        "changed_at": STAMP,
        "changed_by": "agent",
        "operation": "create",
        **changes,
    }


@pytest.fixture
def hive(tmp_path: Path) -> Iterator[Hive]:
    with Hive(tmp_path / "hive.db", embedder=VectorTable(), settings=Settings()) as opened:
        yield opened


def refused(hive: Hive, path: Path, *says: str) -> str:
    with pytest.raises(ValidationError) as raised:
        hive.import_(path)
    message = str(raised.value)
    assert "line 3: " in message, message
    for part in says:
        assert part in message, message
    assert hive.store.list_agents() == [], "a refused file writes nothing"
    return message


# -- import lines ----------------------------------------------------------------------------


@pytest.mark.parametrize("number", [*HUGE, MAX_IMPORTED_VERSION + 1, 0, -1, -(2**63) - 1])
def test_a_memory_version_out_of_range_is_a_line_error(
    hive: Hive, tmp_path: Path, number: int
) -> None:
    """The report: 2^63-1 made the memory impossible to update; 2^63 and 2^64 crashed."""
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(history=[version(number)]))
    refused(hive, path, "'history.0.version'", f"from 1 to {MAX_IMPORTED_VERSION}")


@pytest.mark.parametrize("value", NOT_INTEGERS)
def test_a_version_that_is_not_a_json_integer_is_a_line_error(
    hive: Hive, tmp_path: Path, value: Any
) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(history=[version(value)]))
    refused(hive, path, "'history.0.version'", "must be an integer")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("retrieval_count", MAX_COUNT + 1, f"from 0 to {MAX_COUNT}"),
        ("retrieval_count", 2**64, f"from 0 to {MAX_COUNT}"),
        ("retrieval_count", -1, f"from 0 to {MAX_COUNT}"),
        ("retrieval_count", True, "must be an integer"),
        ("retrieval_count", 3.0, "must be an integer"),
        ("retrieval_count", "7", "must be an integer"),
        ("importance", 11, "from 1 to 10"),
        ("importance", 0, "from 1 to 10"),
        ("importance", True, "must be an integer"),
        ("importance", 2**63, "from 1 to 10"),
    ],
)
def test_memory_counts_are_bounded(
    hive: Hive, tmp_path: Path, field: str, value: Any, says: str
) -> None:
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(**{field: value}))
    refused(hive, path, f"'{field}'", says)


@pytest.mark.parametrize(
    ("profile", "says"),
    [
        ({"revision": 2**63}, "'revision'"),
        ({"revision": -1}, "'revision'"),
        ({"tokens": 2**64}, "'tokens'"),
        ({"history": [{"version": 2**63 - 1}]}, "'history.0.version'"),
        ({"history": [{"version": False}]}, "'history.0.version'"),
    ],
)
def test_profile_revisions_and_versions_are_bounded(
    hive: Hive, tmp_path: Path, profile: dict[str, Any], says: str
) -> None:
    if "history" in profile:
        kept = {"text": "", "changed_at": STAMP, "changed_by": "person", "operation": "set"}
        profile = {"history": [{**kept, **profile["history"][0]}]}
    line = {"type": "profile", "agent": "sam", "text": "", **profile}
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, line), says)


@pytest.mark.parametrize(
    "summary",
    [
        {"tokens": 2**63},
        {"message_count": MAX_COUNT + 1},
        {"depth": -1},
        {"maintenance_attempts": 2**64},
    ],
)
def test_summary_counts_are_bounded(hive: Hive, tmp_path: Path, summary: dict[str, Any]) -> None:
    conversation = {
        "type": "conversation",
        "key": "c1",
        "agent": "sam",
        "created_at": STAMP,
        "updated_at": STAMP,
    }
    line = {
        "type": "summary",
        "conversation": "c1",
        "key": "s1",
        "text": "They talked.",
        "tokens": 3,
        "first_at": STAMP,
        "last_at": STAMP,
        "message_count": 1,
        "created_at": STAMP,
        **summary,
    }
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, conversation, line)
    with pytest.raises(ValidationError, match=rf"line 4: .*'{next(iter(summary))}'"):
        hive.import_(path)
    assert hive.store.list_agents() == []


def test_a_number_too_long_to_read_is_a_line_error(hive: Hive, tmp_path: Path) -> None:
    """Python will not convert an integer of over 4,300 digits: json.loads raises ValueError."""
    line = json.dumps(memory()).replace(
        '"created_at"', '"retrieval_count": ' + "9" * 5000 + ', "created_at"'
    )
    refused(hive, write(tmp_path / "f.jsonl", HEADER, AGENT, line), "too long to read")


def test_a_memory_imported_at_the_highest_version_can_still_change(
    hive: Hive, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "f.jsonl",
        HEADER,
        AGENT,
        memory(scope="private", history=[version(MAX_IMPORTED_VERSION, scope="private")]),
    )
    hive.import_(path)
    sam = hive.get_agent("sam")
    [stored] = sam.list_memories().memories
    sam.update_memory(stored.id, content="Ann likes green tea.")
    sam.forget(stored.id)
    sam.restore_memory(stored.id)
    versions = [v["version"] for v in sam.memory_history(stored.id)]
    assert versions[:4] == [MAX_IMPORTED_VERSION + n for n in (3, 2, 1, 0)]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    with hive_target(request.param) as where:
        yield where


def test_a_shared_memory_at_the_highest_retrieval_count_keeps_recall_working(
    target: str, tmp_path: Path
) -> None:
    """PostgreSQL keeps retrieval_count in 32 bits: one memory at the top must not break the
    recall of every agent that finds it (the count saturates)."""
    path = write(tmp_path / "f.jsonl", HEADER, AGENT, memory(retrieval_count=MAX_COUNT))
    with Hive(target, embedder=VectorTable(), settings=Settings()) as hive:
        hive.import_(path)
        other = hive.create_agent("other")
        for _ in range(2):
            [hit] = other.recall("Ann likes tea").hits
            assert hit.memory.content == "Ann likes tea."
        [stored] = other.list_memories(scope="shared").memories
        assert stored.retrieval_count == MAX_COUNT


# -- the Python API ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [2**63, 2**64, 0, -1, True, 1.0, "1"])
def test_python_ids_out_of_range_are_validation_errors(hive: Hive, value: Any) -> None:
    sam = hive.create_agent("sam")
    for call in (
        lambda: sam.memory_history(value),
        lambda: sam.restore_memory(value),
        lambda: sam.purge(value),
        lambda: sam.forget(value),
        lambda: sam.memory(value),
        lambda: sam.conversation(value),
        lambda: hive.purge(value),
        lambda: hive.memory_history(value),
        lambda: hive.restore_memory(value),
        lambda: hive.forget_memory(value),
        lambda: hive.purge_shared(value),
    ):
        with pytest.raises(ValidationError, match=r"must be an integer|greater than|less than"):
            call()


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"offset": 2**63}, "'offset' must be an integer from 0 to"),
        ({"offset": -1}, "'offset' must be an integer from 0 to"),
        ({"offset": 1.5}, "'offset' must be an integer"),
        ({"offset": True}, "'offset' must be an integer"),
        ({"limit": 0}, "'limit' must be an integer from 1 to 200"),
        ({"limit": 2**64}, "'limit' must be an integer from 1 to 200"),
        ({"limit": "5"}, "'limit' must be an integer from 1 to 200"),
    ],
)
def test_trash_paging_is_bounded(hive: Hive, options: dict[str, Any], says: str) -> None:
    """The report: ``Agent.trash(offset=2**63)`` crashed with OverflowError."""
    sam = hive.create_agent("sam")
    with pytest.raises(ValidationError, match=says):
        sam.trash(**options)
    with pytest.raises(ValidationError, match=says):
        hive.trash(**options)


@pytest.mark.parametrize("version", [2**63, -1, True, 2.0])
def test_a_version_to_restore_is_bounded(hive: Hive, version: Any) -> None:
    sam = hive.create_agent("sam")
    memory_id = sam.memorize("Ann likes tea.", category="fact").memory.id
    with pytest.raises(ValidationError, match="'version' must be an integer from 0 to"):
        sam.restore_memory(memory_id, version)
    with pytest.raises(ValidationError, match="'version' must be an integer from 0 to"):
        sam.restore_profile(version)
    with pytest.raises(ValidationError, match="'expected_revision' must be an integer from 0 to"):
        sam.set_profile("## User\n- Ann", expected_revision=version)


def test_an_agent_key_past_any_id_is_not_found_or_refused(hive: Hive) -> None:
    from hivekeep import AgentNotFound

    with pytest.raises(AgentNotFound):
        hive.get_agent("99999999999999999999")
    with pytest.raises(ValidationError, match="'agent' must be an integer"):
        hive.get_agent(2**64)


# -- the CLI ----------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "cli.db"
    with Hive(path, settings=Settings()) as hive:
        hive.create_agent("sam").memorize("Ann likes tea.", category="fact")
    return str(path)


def cli_error(db: str, *args: str) -> str:
    """Runs ``hivekeep ARGS --db DB``, which must fail as a usage or hivekeep error."""
    result = CliRunner().invoke(cli, [*args, "--db", db], catch_exceptions=False)
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output and "bug in hivekeep" not in result.output
    return result.output


ID_RANGE = f"'memory_id' must be an integer from 1 to {MAX_ID}"


@pytest.mark.parametrize("value", ["9223372036854775808", "18446744073709551616", "9" * 5000])
@pytest.mark.parametrize(
    "command",
    [
        ["history", "--agent", "sam"],
        ["restore", "--agent", "sam"],
        ["purge", "--yes"],
    ],
)
def test_cli_ids_past_the_range_are_usage_errors(db: str, command: list[str], value: str) -> None:
    """The report: ``purge``/``history``/``restore`` with an id above 2^63-1 crashed."""
    output = cli_error(db, *command, value)
    assert ID_RANGE in output, output


@pytest.mark.parametrize("value", ["0", "1.0", "1e3", "0x10", "1_000", "seven", "", "٣"])
def test_cli_ids_that_are_not_plain_positive_integers_are_usage_errors(db: str, value: str) -> None:
    assert ID_RANGE in cli_error(db, "history", "--agent", "sam", value)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["restore", "--agent", "sam", "1", "--version", "2147483648"], "'version'"),
        (["restore", "--agent", "sam", "--profile", "--version", "-1"], "'version'"),
        (["trash", "--agent", "sam", "--limit", "0"], "'limit' must be an integer from 1 to 200"),
        (["trash", "--agent", "sam", "--limit", "9" * 30], "'limit'"),
        # the tools' own options: the tool's validation answers (exit 1), as for any argument
        (["recall", "--agent", "sam", "tea", "--limit", "51"], "'--limit'"),
        (["recall", "--agent", "sam", "tea", "--limit", "9" * 30], "'--limit'"),
        (["memorize", "--agent", "sam", "x", "--importance", "11"], "'--importance'"),
        (["memorize", "--agent", "sam", "x", "--importance", "2.5"], "'--importance'"),
        (["compact", "--agent", "sam", "--conversation", "9" * 25], "'conversation_id'"),
        (["chat", "--agent", "sam", "--conversation", "-3"], "'conversation_id'"),
    ],
)
def test_cli_versions_limits_and_counts_are_bounded(db: str, args: list[str], says: str) -> None:
    assert says in cli_error(db, *args)


def test_cli_an_agent_id_past_the_range_is_not_found(db: str) -> None:
    output = cli_error(db, "history", "--agent", "99999999999999999999")
    assert "No agent '99999999999999999999'" in output


def test_cli_an_id_in_range_that_does_not_exist_is_not_found(db: str) -> None:
    output = cli_error(db, "purge", "--yes", str(MAX_ID))
    assert f"No memory with id {MAX_ID}" in output
