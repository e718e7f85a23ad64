"""``hivekeep memories``, ``update`` and ``forget`` (issue 26, item 4): the real command on a real
hive file, each a thin layer over the Agent methods with the tools' rules and messages."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from hivekeep import Hive
from tests.integration.test_cli import Hivekeep, run


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HIVEKEEP_DB", "HIVEKEEP_AGENT", "HIVEKEEP_EMBEDDINGS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def hk(tmp_path: Path) -> Hivekeep:
    """A hive where 'assistant' wrote five facts (ids 1-5, about tea then ann) and 'planner'
    one shared decision (id 6)."""
    hk = Hivekeep(str(tmp_path / "hive.db"))
    hk("agents create assistant")
    hk("agents create planner")
    for n in range(1, 6):
        subject = "tea" if n <= 3 else "ann"
        hk(f"memorize --agent assistant --category fact --subject {subject}", f"Fact {n} here.")
    hk("memorize --agent planner --category decision --scope shared", "Deploys on Tuesdays.")
    return hk


def texts(lines: list[str]) -> list[str]:
    """The memories' texts in a listing (the indented lines under each heading)."""
    return [line[3:] for line in lines if line.startswith("   ")]


def test_memories_pages_newest_first_and_says_where_the_next_page_starts(hk: Hivekeep) -> None:
    first = hk("memories --agent assistant --limit 2").stdout.splitlines()
    assert first[0].startswith("#6 · decision · ") and first[0].endswith(" · shared by planner")
    assert first[1:3] == ["   Deploys on Tuesdays.", "#5 · fact · subject: ann · just now"]
    assert first[3] == "   Fact 5 here."
    assert first[-1] == "2 of 6 memories (1-2), next: --offset 2."
    last = hk("memories --agent assistant --limit 4 --offset 4").stdout.splitlines()
    assert last[-1] == "2 of 6 memories (5-6)."
    assert [line for line in last if line.startswith("   ")] == [
        "   Fact 2 here.",
        "   Fact 1 here.",
    ]
    beyond = hk("memories --agent assistant --offset 9").stdout
    assert beyond == "No memories at --offset 9 (there are 6).\n"
    assert hk("memories --agent planner --category fact").stdout == "No memories found.\n"


def test_memories_filters_and_json_are_the_tools(hk: Hivekeep) -> None:
    tea = hk("memories --agent assistant --subject tea").stdout.splitlines()
    assert [line for line in tea if line.startswith("   ")] == [
        f"   Fact {n} here." for n in (3, 2, 1)
    ]
    assert tea[-1] == "3 of 3 memories."
    shared = hk.json("memories --agent assistant --scope shared")
    assert [m["id"] for m in shared["memories"]] == [6] and shared["total"] == 1
    listed = hk.json("memories --agent assistant --category fact --limit 2 --offset 1")
    with Hive(hk.db) as hive:
        direct = hive.get_agent("assistant").call_tool(
            "list_memories", {"category": "fact", "limit": 2, "offset": 1}
        )
    assert listed == direct and listed["has_more"] is True and listed["total"] == 5
    bad = hk("memories --agent assistant --limit 500", code=1)
    assert bad.stderr == (
        "Error: Invalid value for '--limit': input should be less than or equal to 200.\n"
    )
    assert "--scope" in hk("memories --agent assistant --scope team", code=1).stderr


def test_memories_query_ranks_by_relevance_as_the_server_search(hk: Hivekeep) -> None:
    hk("memorize --agent assistant --category fact", "The user lives in Lisbon, Portugal.")
    hk("memorize --agent assistant --category fact", "The user's cat is called Tom.")
    query = "where does the user live?"
    ranked = hk("memories --agent assistant --limit 2 --query", query).stdout.splitlines()
    assert ranked[0].startswith("1. #7 · fact · just now · strong match: ")
    assert ranked[1] == "   The user lives in Lisbon, Portugal."
    assert ranked[-1].startswith("2 of ") and ranked[-1].endswith(", next: --offset 2.")
    listed = hk.json("memories --agent assistant --limit 3 --offset 1 --query", query)
    with Hive(hk.db) as hive:
        direct = hive.get_agent("assistant").search_memories(query, limit=3, offset=1)
        counts = {
            m.id: m.retrieval_count for m in hive.get_agent("assistant").list_memories().memories
        }
    assert [m["id"] for m in listed["memories"]] == [h.memory.id for h in direct.hits]
    assert (listed["total"], listed["has_more"]) == (direct.total, direct.has_more)
    assert {"score", "match", "found_by", "why"} <= set(listed["memories"][0])
    assert set(counts.values()) == {0}  # a person's search is not the agent's recall
    deploys = "when are deploys?"
    shared = hk.json("memories --agent assistant --scope shared --query", deploys)
    assert [m["id"] for m in shared["memories"]] == [6]
    everything = "Deploys on Tuesdays. Fact here."
    assert 6 in [
        m["id"] for m in hk.json("memories --agent assistant --query", everything)["memories"]
    ]
    private = hk.json("memories --agent assistant --scope private --query", everything)
    assert private["memories"] and 6 not in [m["id"] for m in private["memories"]]
    bad = hk("memories --agent assistant --query tea --limit 0", code=1)
    assert "'--limit'" in bad.stderr


def test_update_changes_only_the_given_fields_as_a_person(hk: Hivekeep) -> None:
    out = hk("update --agent assistant 2 --content", "Fact 2, corrected.", "--importance", "8")
    assert out.stdout.splitlines() == [
        "Updated memory 2: Fact 2, corrected.",
        "   #2 · fact · subject: tea · just now",
    ]
    view = hk.json("update --agent assistant 2 --scope shared")
    assert (view["content"], view["importance"], view["scope"]) == (
        "Fact 2, corrected.",
        8,
        "shared",
    )
    assert view["subject"] == "tea" and view["category"] == "fact"
    history = hk.json("history --agent assistant 2")
    assert [(v["operation"], v["changed_by"]) for v in history] == [
        ("update", "person"),
        ("update", "person"),
        ("create", "person"),  # `hivekeep memorize` is a person's write too (issue 34)
    ]


def test_update_refuses_what_the_tool_refuses_with_option_names(hk: Hivekeep) -> None:
    with Hive(hk.db) as hive:
        tool = hive.get_agent("assistant").call_tool
        not_theirs = tool("update_memory", {"memory_id": 6, "content": "x"})["error"]
        unknown = tool("update_memory", {"memory_id": 99, "content": "x"})["error"]
    assert hk("update --agent assistant 6 --content x", code=1).stderr == f"Error: {not_theirs}\n"
    assert hk("update --agent assistant 99 --content x", code=1).stderr == f"Error: {unknown}\n"
    assert "No memory with id 99" in unknown and "can only be changed by their author" in not_theirs
    nothing = hk("update --agent assistant 2", code=2).stderr
    assert "Nothing to change" in nothing and "--content" in nothing
    too_high = hk("update --agent assistant 2 --importance 11", code=1).stderr
    assert too_high == (
        "Error: Invalid value for '--importance': input should be less than or equal to 10.\n"
    )
    assert "Parameters:" not in too_high
    assert "Invalid value for 'ID'" in hk("update --agent assistant 0 --content x", code=1).stderr
    assert "'--category'" in hk("update --agent assistant 2 --category gossip", code=1).stderr
    assert len(hk.json("history --agent assistant 2")) == 1  # none of those changed it


def test_forget_moves_the_agents_own_memory_to_the_trash(hk: Hivekeep) -> None:
    out = hk("forget --agent assistant 3")
    assert out.stdout == (
        "Memory 3 is in the trash; `hivekeep restore --agent assistant 3` brings it back.\n"
    )
    assert 3 not in [m["id"] for m in hk.json("memories --agent assistant")["memories"]]
    assert [m["id"] for m in hk.json("trash --agent assistant")["memories"]] == [3]
    assert hk.json("history --agent assistant 3")[0]["changed_by"] == "person"
    assert hk.json("forget --agent assistant 4 --yes") == {"success": True}
    again = hk("forget --agent assistant 3", code=1).stderr
    assert again == "Error: No memory with id 3 is visible to this agent.\n"
    not_theirs = hk("forget --agent assistant 6", code=1).stderr
    assert "can only be changed by their author" in not_theirs
    assert hk.json("memories --agent planner")["total"] == 1
    assert "Invalid value for 'ID'" in hk("forget --agent assistant 0", code=1).stderr
    hk("restore --agent assistant 3")
    assert hk.json("memories --agent assistant")["total"] == 5


def test_forget_on_a_terminal_shows_the_memory_and_asks(hk: Hivekeep) -> None:
    """The real command on a pseudo-terminal: 'n' keeps the memory, 'y' forgets it."""
    for answer, code in (("n", 1), ("y", 0)):
        controller, terminal = pty.openpty()
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hivekeep",
                "forget",
                "--agent",
                "assistant",
                "5",
                "--db",
                hk.db,
            ],
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        )
        os.close(terminal)
        seen = b""
        while b"Forget this memory?" not in seen:
            seen += os.read(controller, 1024)
        os.write(controller, f"{answer}\n".encode())
        assert process.wait(timeout=60) == code
        os.close(controller)
        assert b"#5  Fact 5 here." in seen
        total = hk.json("memories --agent assistant")["total"]
        assert total == (6 if answer == "n" else 5)


def test_every_new_command_is_listed_by_help() -> None:
    listed = run(["--help"]).stdout
    for name in ("memories", "update", "forget"):
        assert f"  {name} " in listed


def test_history_of_an_unknown_id_says_it_is_neither_live_nor_in_the_trash(hk: Hivekeep) -> None:
    unknown = hk("history --agent assistant 99", code=1).stderr
    assert unknown == "Error: No memory with id 99 is visible to this agent or in its trash.\n"
    hk("forget --agent assistant 5")
    assert hk.json("history --agent assistant 5")[0]["operation"] == "forget"  # the trash's
