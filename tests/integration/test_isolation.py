"""Isolation is a security property: no agent ever sees or changes another's private memories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Hive, Settings
from hivekeep.store.base import MemoryFilter, MemoryWrite, NewMemory
from hivekeep.types import Category
from tests.postgres import hive_target
from tests.support import VectorTable, insert_pairs, random_unit, with_cosine

AGENTS = 4
WORDS = ["apple", "river", "engine", "violet", "harbor", "comet"]

operation = st.one_of(
    st.tuples(
        st.just("memorize"),
        st.integers(0, AGENTS - 1),
        st.sampled_from(WORDS),
        st.sampled_from(["private", "shared"]),
        st.integers(0, 999),
    ),
    st.tuples(
        st.just("update"),
        st.integers(0, AGENTS - 1),
        st.integers(0, 40),
        st.sampled_from(["private", "shared"]),
        st.integers(0, 999),
    ),
    st.tuples(st.just("forget"), st.integers(0, AGENTS - 1), st.integers(0, 40)),
    st.tuples(st.just("recall"), st.integers(0, AGENTS - 1), st.sampled_from(WORDS)),
    st.tuples(
        st.just("list"), st.integers(0, AGENTS - 1), st.sampled_from([None, "private", "shared"])
    ),
)


def _check_visible(
    memories: list[dict[str, Any]], viewer: str, truth: dict[int, tuple[str, str]]
) -> None:
    for memory in memories:
        owner, scope = truth[memory["id"]]
        assert owner == viewer or scope == "shared", (viewer, memory)
        assert memory["scope"] == scope
        if owner != viewer:
            assert memory["shared_by"] == owner


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=40))
def test_random_operations_never_cross_private_boundaries(
    backend: str, ops: list[tuple[Any, ...]]
) -> None:
    with (
        hive_target(backend) as target,
        Hive(target, embedder=VectorTable(), settings=Settings()) as hive,
    ):
        agents = [hive.create_agent(f"agent{i}") for i in range(AGENTS)]
        truth: dict[int, tuple[str, str]] = {}  # id -> (owner name, scope)
        contents: dict[int, str] = {}
        for op in ops:
            kind, who = op[0], agents[op[1]]
            if kind == "memorize":
                result = who.call_tool(
                    "memorize",
                    {"content": f"{op[2]} note {op[4]}", "category": "fact", "scope": op[3]},
                )
                if not result["duplicate"]:
                    truth[result["id"]] = (who.name, op[3])
                    contents[result["id"]] = result["content"]
                else:  # a duplicate must be visible to the writer
                    owner, scope = truth[result["id"]]
                    assert owner == who.name or scope == "shared"
            elif kind == "update":
                result = who.call_tool(
                    "update_memory",
                    {"memory_id": op[2], "scope": op[3], "content": f"changed {op[4]}"},
                )
                owned = op[2] in truth and truth[op[2]][0] == who.name
                assert ("error" not in result) == owned, result
                if owned:
                    truth[op[2]] = (who.name, op[3])
                    contents[op[2]] = result["content"]
            elif kind == "forget":
                result = who.call_tool("forget", {"memory_id": op[2]})
                owned = op[2] in truth and truth[op[2]][0] == who.name
                assert ("error" not in result) == owned, result
                if owned:
                    del truth[op[2]]
            elif kind == "recall":
                _check_visible(
                    who.call_tool("recall", {"query": op[2]})["memories"], who.name, truth
                )
            else:
                args = {"limit": 200} | ({"scope": op[2]} if op[2] else {})
                listed = who.call_tool("list_memories", args)["memories"]
                _check_visible(listed, who.name, truth)
                expected = {
                    i
                    for i, (owner, scope) in truth.items()
                    if (op[2] == "shared" and scope == "shared")
                    or (op[2] == "private" and owner == who.name and scope == "private")
                    or (op[2] is None and (owner == who.name or scope == "shared"))
                }
                assert {m["id"] for m in listed} == expected
        # nothing an agent did changed another agent's memories
        for memory_id, (owner, _) in truth.items():
            assert (
                hive.store.get_memory(memory_id, hive.get_agent(owner).id).content
                == (contents[memory_id])
            )


def bulk_load(hive: Hive, agent_id: int, texts: list[str], table: VectorTable) -> None:
    """Insert without dedup: recall is what these tests check, not the write path."""
    insert_pairs(
        hive.store,
        [
            MemoryWrite(NewMemory(agent_id, text, Category.FACT), table.vectors[text], text)
            for text in texts
        ],
        2.0,
    )


def check_own_best_match(db: Path | str, per_agent: int, chosen: int) -> None:
    """20 agents; every other agent's private memories are closer to the query than agent 7's
    one good match, which must still be agent 7's top hit (visibility inside the KNN)."""
    table = VectorTable(dimension=24)
    query = random_unit("the query", table.dimension)
    table.set("the query", query)
    with Hive(db, embedder=table, settings=Settings()) as hive:
        agents = [hive.create_agent(f"agent{i}") for i in range(20)]
        for a, agent in enumerate(agents):
            texts = []
            for m in range(per_agent):
                text = f"agent {a} memory {m}"
                spread = ((a * per_agent + m) % 97) / 97
                if a == 7:  # the agent under test: one good match, the rest unrelated
                    cosine = 0.62 if m == chosen else 0.1 + 0.2 * spread
                else:  # every other agent's private memories are closer to the query
                    cosine = 0.75 + 0.2 * spread
                table.set(text, with_cosine(query, cosine, text))
                texts.append(text)
            bulk_load(hive, agent.id, texts, table)
        hits = agents[7].recall("the query", limit=1).hits
        assert hits[0].memory.content == f"agent 7 memory {chosen}"
        assert all(h.memory.agent_id == agents[7].id for h in agents[7].recall("the query").hits)


def check_near_duplicate_beyond_global_top3(db: Path | str, per_other: int) -> None:
    """A near-duplicate of the writer's own memory is found although 10 other agents hold
    ``per_other`` closer private vectors each (dedup searches the writer's visible set)."""
    table = VectorTable(dimension=24)
    new_text = "The user's sister lives in Oslo"
    target = random_unit(new_text, table.dimension)
    table.set(new_text, target)
    with Hive(db, embedder=table, settings=Settings()) as hive:
        alice = hive.create_agent("alice")
        others = [hive.create_agent(f"other{i}") for i in range(10)]
        existing = "The user\u2019s sister lives in Oslo!"  # a restatement: the same fact
        table.set(existing, with_cosine(target, 0.93, "existing"))
        kept = alice.memorize(existing, category="fact").memory
        for o, other in enumerate(others):
            texts = []
            for m in range(per_other):  # closer vectors, all private to other agents
                text = f"other {o} item {m}"
                table.set(text, with_cosine(target, 0.97 + 0.02 * (m % 10) / 10, text))
                texts.append(text)
            bulk_load(hive, other.id, texts, table)
        global_top = hive.store.vector_search(others[0].id, target, 3, MemoryFilter())
        assert kept.id not in [i for i, _ in global_top]
        result = alice.call_tool("memorize", {"content": new_text, "category": "fact"})
        assert result["duplicate"] is True and result["id"] == kept.id
        # and another agent's private near-copies never count as the writer's duplicates
        assert others[0].memorize("Fresh fact for other0", category="fact").duplicate is False


@pytest.mark.slow
def test_own_best_match_survives_20_agents_of_500_memories(db_path: Path) -> None:
    check_own_best_match(db_path, per_agent=500, chosen=123)


def test_near_duplicate_beyond_global_top3_is_detected(db_path: Path) -> None:
    check_near_duplicate_beyond_global_top3(db_path, per_other=300)
