"""The seven tools through ``call_tool``: result shapes, validation, schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hivekeep
from hivekeep import Agent, Hive, Settings
from hivekeep.tools import TOOLS, call_tool, tool_schemas
from tests.support import VectorTable

TOOL_NAMES = [
    "recall",
    "memorize",
    "edit_profile",
    "update_memory",
    "forget",
    "list_memories",
    "review_memories",
]


@pytest.fixture
def alice(table_hive: Hive) -> Agent:
    return table_hive.create_agent("alice")


def test_seven_tools_in_every_schema_flavor() -> None:
    assert [t.name for t in TOOLS] == TOOL_NAMES
    openai = tool_schemas("openai")
    assert [s["function"]["name"] for s in openai] == TOOL_NAMES
    anthropic = hivekeep.tool_schemas("anthropic")
    assert [s["name"] for s in anthropic] == TOOL_NAMES
    memorize = anthropic[1]["input_schema"]
    assert memorize["required"] == ["content", "category"]
    assert memorize["properties"]["category"]["enum"] == [
        "fact",
        "preference",
        "decision",
        "knowledge",
    ]
    assert memorize["properties"]["importance"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "description": "1 (trivial)-10.",
    }
    assert "anyOf" not in json.dumps(openai) and '"title"' not in json.dumps(openai)
    with pytest.raises(ValueError):
        tool_schemas("gemini")  # type: ignore[arg-type]


def test_routing_rule_is_in_memorize_edit_profile_and_the_prompt_block(alice: Agent) -> None:
    rule = "Should this influence the agent's behaviour in most future conversations"
    descriptions = {s["name"]: s["description"] for s in tool_schemas("anthropic")}
    assert rule in descriptions["memorize"] and rule in descriptions["edit_profile"]
    assert rule in alice.system_prompt_block()


def test_memorize_result_and_duplicate(alice: Agent) -> None:
    first = alice.call_tool(
        "memorize", {"content": "Prefers window seats", "category": "preference", "subject": "user"}
    )
    assert first == {
        "id": first["id"],
        "content": "Prefers window seats",
        "category": "preference",
        "subject": "user",
        "scope": "private",
        "duplicate": False,
    }
    again = alice.call_tool(
        "memorize", {"content": "prefers window seats.", "category": "fact", "subject": "User "}
    )
    assert again["duplicate"] is True and again["id"] == first["id"]
    # the same fact in other words: the memory now reads them, the old text is its version 1
    assert again["reworded"] is True and again["content"] == "prefers window seats."
    assert "merged_as_version" not in again and "previous text" in again["note"]
    repeat = alice.call_tool(
        "memorize", {"content": " prefers  window seats.", "category": "fact", "subject": "user"}
    )
    assert (repeat["duplicate"], repeat["id"], "reworded" in repeat) == (True, first["id"], False)
    other = alice.call_tool(
        "memorize", {"content": "Prefers window seats", "category": "fact", "subject": "Bob"}
    )
    assert other["duplicate"] is False  # another subject: another fact


def test_update_memory_and_forget(alice: Agent, table_hive: Hive) -> None:
    memory_id = alice.call_tool("memorize", {"content": "Gym on Mondays", "category": "fact"})["id"]
    updated = alice.call_tool(
        "update_memory", {"memory_id": memory_id, "content": "Gym on Tuesdays", "importance": 4}
    )
    assert (updated["content"], updated["importance"]) == ("Gym on Tuesdays", 4)
    assert alice.recall("Tuesdays").hits[0].memory.id == memory_id
    assert alice.recall("Mondays").hits == []
    cleared = alice.call_tool("update_memory", {"memory_id": memory_id, "importance": None})
    assert cleared["importance"] is None
    assert alice.call_tool("forget", {"memory_id": memory_id}) == {"success": True}
    assert "No memory" in alice.call_tool("forget", {"memory_id": memory_id})["error"]


def test_other_agents_memories_read_as_not_found_for_writes(alice: Agent, table_hive: Hive) -> None:
    bob = table_hive.create_agent("bob")
    shared = bob.call_tool(
        "memorize", {"content": "Team standup at 9", "category": "fact", "scope": "shared"}
    )["id"]
    for tool, args in [
        ("update_memory", {"memory_id": shared, "content": "x"}),
        ("forget", {"memory_id": shared}),
    ]:
        assert "No memory" in alice.call_tool(tool, args)["error"]
    assert bob.list_memories().memories[0].content == "Team standup at 9"


def test_list_memories_pagination(alice: Agent) -> None:
    for i in range(5):
        alice.call_tool("memorize", {"content": f"entry {i} about topic {i}", "category": "fact"})
    page = alice.call_tool("list_memories", {"limit": 2, "offset": 0})
    assert (len(page["memories"]), page["total"], page["has_more"]) == (2, 5, True)
    last = alice.call_tool("list_memories", {"limit": 2, "offset": 4})
    assert (len(last["memories"]), last["has_more"]) == (1, False)
    assert page["memories"][0]["content"] == "entry 4 about topic 4"  # newest first


def test_edit_profile_result_and_budget_error(db_path: Path, table: VectorTable) -> None:
    with Hive(db_path, embedder=table, settings=Settings(profile_max_tokens=30)) as hive:
        agent = hive.create_agent("alice")
        ok = agent.call_tool(
            "edit_profile", {"section": "User", "operation": "append", "content": "Name is Sam"}
        )
        assert ok["success"] is True and ok["budget"] == 30 and "Name is Sam" in ok["profile"]
        assert ok["tokens"] == agent.profile().tokens > 0
        too_big = agent.call_tool(
            "edit_profile", {"section": "Notes", "operation": "append", "content": "word " * 60}
        )
        assert "budget" in too_big["error"] and "memorize" in too_big["error"]
        assert agent.profile_text() == ok["profile"]


def test_appending_a_line_the_section_holds_is_a_reported_no_op(
    db_path: Path, table: VectorTable
) -> None:
    """No new revision, no version, no event; compared trimmed, bullet-, case- and
    space-blind."""
    append = {"section": "User", "operation": "append", "content": "Prefers short answers"}
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        first = agent.call_tool("edit_profile", append)
        assert first["unchanged"] is False and "note" not in first
        more = agent.call_tool("edit_profile", {**append, "content": "Prefers short answers!"})
        assert more["unchanged"] is False  # another line
        revision, versions = agent.profile().revision, len(agent.profile_history())
        seen: list[str] = []
        hive.events.subscribe(lambda event: seen.append(event.type))
        for arguments in (
            append,
            {**append, "section": "user", "content": "  * prefers  SHORT answers  "},
            {**append, "content": "Prefers short answers\n\nprefers short answers!"},
            {**append, "operation": "replace_section", "content": agent.profile_text()[8:]},
        ):
            same = agent.call_tool("edit_profile", arguments)
            assert same["unchanged"] is True and same["success"] is True, (arguments, same)
            assert "nothing was" in same["note"] and same["profile"] == agent.profile_text()
        assert agent.edit_profile("User", "append", "Prefers short answers").unchanged is True
        assert agent.profile().revision == revision and len(agent.profile_history()) == versions
        assert seen == []


def test_an_unchanged_edit_is_not_refused_over_budget(db_path: Path, table: VectorTable) -> None:
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        hive.create_agent("alice").set_profile("## User\n" + "- likes tea a lot\n" * 20)
    with Hive(db_path, embedder=table, settings=Settings(profile_max_tokens=30)) as hive:
        agent = hive.agent("alice")
        same = {"section": "User", "operation": "append", "content": "likes tea a lot"}
        assert agent.call_tool("edit_profile", same)["unchanged"] is True
        assert "budget" in agent.call_tool("edit_profile", {**same, "content": "new"})["error"]


def test_pinned_edits_go_to_the_top(alice: Agent) -> None:
    alice.call_tool(
        "edit_profile", {"section": "Work", "operation": "append", "content": "Writes Rust"}
    )
    alice.call_tool(
        "edit_profile", {"operation": "append", "content": "Never share keys", "pin": True}
    )
    assert alice.profile_text().startswith("## Pinned")


def test_review_memories_says_no_llm_is_configured(alice: Agent) -> None:
    assert "LLM" in alice.call_tool("review_memories", {})["error"]


@pytest.mark.parametrize(
    ("tool", "arguments", "fragment"),
    [
        ("recall", {}, "'query' is required"),
        ("recall", {"query": ""}, "'query'"),
        ("recall", {"query": "x" * 1001}, "'query'"),
        ("recall", {"query": "x", "limit": 0}, "'limit'"),
        ("recall", {"query": "x", "limit": 51}, "'limit'"),
        ("recall", {"query": "x", "category": "gossip"}, "'category'"),
        ("recall", {"query": "x", "colour": "red"}, "'colour' is not a parameter"),
        ("memorize", {"content": "x"}, "'category' is required"),
        ("memorize", {"content": "x" * 2001, "category": "fact"}, "'content'"),
        ("memorize", {"content": "x", "category": "fact", "importance": 11}, "'importance'"),
        ("memorize", {"content": "x", "category": "fact", "scope": "public"}, "'scope'"),
        ("memorize", {"content": "   ", "category": "fact"}, "'content'"),
        ("edit_profile", {"section": "A", "operation": "delete", "content": "x"}, "'operation'"),
        ("edit_profile", {"section": "A#", "operation": "append", "content": "x"}, "#"),
        ("update_memory", {"memory_id": 1}, "at least one"),
        ("update_memory", {"memory_id": "one", "content": "x"}, "'memory_id'"),
        ("update_memory", {"memory_id": 1, "content": None}, "null"),
        ("forget", {}, "'memory_id' is required"),
        ("list_memories", {"limit": 201}, "'limit'"),
        ("list_memories", {"offset": -1}, "'offset'"),
    ],
)
def test_bad_arguments_are_errors_a_model_can_act_on(
    alice: Agent, tool: str, arguments: dict[str, Any], fragment: str
) -> None:
    result = alice.call_tool(tool, arguments)
    assert set(result) == {"error"}, result
    assert fragment in result["error"]


def test_unknown_tool_and_json_string_arguments(alice: Agent) -> None:
    assert "Available tools" in alice.call_tool("remember", {})["error"]
    assert "error" in alice.call_tool("recall", "{not json")
    saved = alice.call_tool("memorize", '{"content": "from JSON", "category": "fact"}')
    assert saved["content"] == "from JSON"


def test_typed_methods_and_call_tool_agree(alice: Agent) -> None:
    alice.memorize("Drives an electric car", category="fact")
    typed = [h.memory.id for h in alice.recall("electric car").hits]
    tool = [m["id"] for m in alice.call_tool("recall", {"query": "electric car"})["memories"]]
    assert typed == tool


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(TOOL_NAMES),
    arguments=st.dictionaries(
        st.sampled_from(
            [
                "query",
                "content",
                "category",
                "memory_id",
                "limit",
                "offset",
                "scope",
                "since",
                "subject",
                "section",
                "operation",
                "pin",
                "importance",
                "x",
            ]
        ),
        st.one_of(
            st.none(),
            st.integers(-5, 300),
            st.text(max_size=40),
            st.booleans(),
            st.lists(st.integers(), max_size=2),
        ),
        max_size=5,
    ),
)
def test_any_arguments_give_a_json_object_never_an_exception(
    alice: Agent, name: str, arguments: dict[str, Any]
) -> None:
    result = call_tool(alice, name, arguments)
    json.dumps(result)
    assert isinstance(result, dict)
    if "error" in result:
        assert isinstance(result["error"], str) and result["error"]
