"""Property-based fuzzing of every tool's arguments: never an exception, always a JSON object,
and an error is a message a model can act on. The hive stays consistent afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Agent, Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from hivekeep.tools import TOOLS

NAMES = [tool.name for tool in TOOLS]
KEYS = sorted({key for tool in TOOLS for key in tool.args.model_fields} | {"extra", ""})

texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300
) | st.sampled_from(
    [
        "fact",
        "shared",
        "append",
        "Pinned",
        "2024-05-01",
        '") OR 1=1 --',
        "NEAR(a b)",
        "*",
        "\x00\x1b[31m",
        "x" * 2100,
    ]
)
scalars = (
    texts
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True)
    | st.booleans()
    | st.none()
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
arguments = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)


def review_reply(messages: Any, tools: Any) -> str:
    return json.dumps({"issues": [], "summary": "fine"})


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hive]:
    path = tmp_path_factory.mktemp("fuzz") / "hive.db"
    llm = ScriptedLLM([review_reply] * 10_000)
    with Hive(path, embedder=LocalEmbedder(), settings=Settings(), llm=llm) as opened:
        yield opened


@pytest.fixture(scope="module")
def agent(hive: Hive) -> Agent:
    agent = hive.create_agent("fuzz")
    agent.memorize("A seed memory about tea", category="fact", subject="tea")
    return agent


def check(result: Any) -> None:
    assert isinstance(result, dict)
    json.dumps(result)  # JSON-ready
    if "error" in result:
        assert isinstance(result["error"], str) and len(result["error"]) > 10


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES), args=arguments)
def test_any_arguments_give_a_json_object(agent: Agent, name: str, args: dict[str, Any]) -> None:
    check(agent.call_tool(name, args))


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from([*NAMES, "nope", ""]), raw=st.text(max_size=200))
def test_raw_argument_text_gives_a_json_object(agent: Agent, name: str, raw: str) -> None:
    check(agent.call_tool(name, raw))


def test_the_hive_is_consistent_after_fuzzing(hive: Hive, agent: Agent) -> None:
    """Run after the properties above (same module-scoped hive): every index agrees."""
    conn = apsw.Connection(hive.path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        memories = {row[0] for row in conn.execute("SELECT id FROM memories")}
        fts = {row[0] for row in conn.execute("SELECT rowid FROM memory_fts")}
        assert memories == fts
    finally:
        conn.close()
    assert agent.list_memories(limit=200).total == len(memories)


def test_control_characters_and_huge_input_are_refused_clearly(agent: Agent) -> None:
    result = agent.call_tool("memorize", {"content": "x" * 2001, "category": "fact"})
    assert "at most 2000" in result["error"] or "2000" in result["error"]
    result = agent.call_tool("recall", {"query": "tea", "limit": 10**30})
    assert "limit" in result["error"]
    result = agent.call_tool("forget", {"memory_id": 2**80})
    assert "error" in result
