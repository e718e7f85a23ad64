"""HivekeepMemoryTool against the SDK's own reference backend (``BetaLocalFilesystemMemoryTool``
on a temp dir): the same command sequences on both, the same observable outcomes (success or
error, with the same words, and the same files with the same text afterwards); and on hivekeep's
side, every memory is a file's text: none is stale, and none outlives its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic.tools.memory", reason="needs anthropic>=2.17")

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

from hivekeep import Hive
from hivekeep.integrations.anthropic_memory import HivekeepMemoryTool

A, B, C = "/memories/a.md", "/memories/notes/b.md", "/memories/c.md"
TEA, OFFICE = "Ann drinks green tea", "The office is in Berlin"

Command = dict[str, Any]
Outcome = tuple[str, str]

SEQUENCES: dict[str, list[Command]] = {
    "create on an existing path": [
        {"command": "create", "path": A, "file_text": TEA},
        {"command": "create", "path": A, "file_text": OFFICE},
        {"command": "view", "path": A},
    ],
    "a known text under a new name, renamed and deleted": [
        {"command": "create", "path": A, "file_text": TEA},
        {"command": "create", "path": B, "file_text": TEA},
        {"command": "view", "path": B},
        {"command": "rename", "old_path": B, "new_path": C},
        {"command": "view", "path": B},
        {"command": "view", "path": C},
        {"command": "delete", "path": C},
        {"command": "view", "path": A},
    ],
    "rename onto an existing file, from a missing one, then for real": [
        {"command": "create", "path": A, "file_text": TEA},
        {"command": "create", "path": B, "file_text": OFFICE},
        {"command": "rename", "old_path": A, "new_path": B},
        {"command": "rename", "old_path": "/memories/none.md", "new_path": C},
        {"command": "rename", "old_path": A, "new_path": C},
        {"command": "view", "path": A},
        {"command": "view", "path": C},
    ],
    "a duplicate renamed onto its twin, then its twin edited": [
        {"command": "create", "path": A, "file_text": TEA},
        {"command": "create", "path": B, "file_text": TEA},
        {"command": "rename", "old_path": B, "new_path": A},
        {"command": "str_replace", "path": A, "old_str": "green", "new_str": "black"},
        {"command": "view", "path": B},
    ],
    "str_replace and insert errors, then edits": [
        {"command": "create", "path": A, "file_text": "Ann drinks tea, Bob drinks tea"},
        {"command": "str_replace", "path": A, "old_str": "coffee", "new_str": "x"},
        {"command": "str_replace", "path": A, "old_str": "tea", "new_str": "x"},
        {"command": "str_replace", "path": B, "old_str": "tea", "new_str": "x"},
        {"command": "insert", "path": A, "insert_line": 5, "insert_text": "x"},
        {"command": "insert", "path": A, "insert_line": -1, "insert_text": "x"},
        {"command": "insert", "path": B, "insert_line": 0, "insert_text": "x"},
        {"command": "str_replace", "path": A, "old_str": "Bob drinks", "new_str": "Bo likes"},
        {"command": "insert", "path": A, "insert_line": 1, "insert_text": "every morning\n"},
        {"command": "insert", "path": A, "insert_line": 0, "insert_text": "Tea:"},
        {"command": "view", "path": A},
        {"command": "view", "path": A, "view_range": [2, 3]},
    ],
    "files that share a text are edited one by one": [
        {"command": "create", "path": A, "file_text": OFFICE},
        {"command": "create", "path": B, "file_text": OFFICE},
        {"command": "str_replace", "path": B, "old_str": "Berlin", "new_str": "Hamburg"},
        {"command": "insert", "path": A, "insert_line": 1, "insert_text": "since 2019"},
        {"command": "create", "path": C, "file_text": "The office is in Hamburg"},
        {"command": "delete", "path": A},
        {"command": "view", "path": C},
    ],
    "delete a missing file, delete twice, create again": [
        {"command": "delete", "path": A},
        {"command": "create", "path": A, "file_text": TEA},
        {"command": "delete", "path": A},
        {"command": "delete", "path": A},
        {"command": "view", "path": A},
        {"command": "create", "path": A, "file_text": OFFICE},
        {"command": "view", "path": A},
    ],
    "paths outside /memories and the root itself": [
        {"command": "view", "path": "/etc/passwd"},
        {"command": "create", "path": "/memories/../secret.md", "file_text": TEA},
        {"command": "delete", "path": "/memories"},
        {"command": "rename", "old_path": "/memories", "new_path": C},
    ],
}


def outcome(tool: BetaAbstractMemoryTool, command: Command) -> Outcome:
    try:
        result = tool.call(command)
    except ToolError as exc:
        return "error", str(exc)
    assert isinstance(result, str)
    return "ok", result


def files(root: Path) -> dict[str, str]:
    """Every file under ``root/memories``, by its path as Claude names it."""
    memories = root / "memories"
    return {
        f"/memories/{f.relative_to(memories).as_posix()}": f.read_text()
        for f in memories.rglob("*")
        if f.is_file()
    }


@pytest.mark.parametrize("sequence", list(SEQUENCES), ids=list(SEQUENCES))
def test_the_same_commands_have_the_same_outcomes_as_the_reference_backend(
    sequence: str, hive: Hive, tmp_path: Path
) -> None:
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    agent = hive.agent("assistant")
    ours = HivekeepMemoryTool(agent, tmp_path / "ours")

    for command in SEQUENCES[sequence]:
        assert outcome(ours, command) == outcome(reference, command), command

    written = files(tmp_path / "ours")
    assert written == files(tmp_path / "reference")
    remembered = {m.content for m in agent.list_memories(limit=200).memories}
    texts = {text.strip() for text in written.values()}
    # every memory is a file's text (none stale, none left by a deleted file), and a file holds
    # a text; two files the archive judges one fact share one memory, in the newest wording
    assert remembered <= texts and bool(remembered) == bool(texts)
