"""HivekeepStore as LangGraph uses it: inside a compiled graph, and through every BaseStore call
that ``InMemoryStore`` documents (get, put, search, delete, list_namespaces; batch and abatch;
filters, limits and offsets), on a real hive with the bundled embedding model."""

from __future__ import annotations

import asyncio
from typing import TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from hivekeep import Hive, ValidationError
from hivekeep.integrations.langgraph import HivekeepStore


@pytest.fixture
def store(hive: Hive) -> HivekeepStore:
    return HivekeepStore(hive)


class State(TypedDict, total=False):
    user: str
    message: str
    found: list[str]


def test_a_compiled_graph_puts_in_one_run_and_searches_in_a_later_one(hive: Hive) -> None:
    def remember(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        if state["message"].startswith("remember: "):
            text = state["message"].removeprefix("remember: ")
            runtime.store.put(("assistant", state["user"]), f"m{len(text)}", {"content": text})
        return {}

    def recall(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        hits = runtime.store.search(("assistant", state["user"]), query=state["message"], limit=3)
        return {"found": [hit.value["content"] for hit in hits]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=HivekeepStore(hive))

    graph.invoke({"user": "ann", "message": "remember: Ann keeps bees on her roof in Lisbon"})
    graph.invoke({"user": "ann", "message": "remember: Ann's favourite tea is genmaicha"})
    later = graph.invoke({"user": "ann", "message": "which tea does Ann like best?"})

    assert later["found"][0] == "Ann's favourite tea is genmaicha"
    memory = hive.get_agent("assistant").recall("genmaicha").hits[0].memory
    assert memory.subject == "ann"  # the namespace's second part is the memory's subject


def test_put_then_get_returns_the_value_with_its_namespace_key_and_times(
    store: HivekeepStore,
) -> None:
    store.put(("assistant", "ann"), "tea", {"content": "Ann drinks green tea", "importance": 7})

    item = store.get(("assistant", "ann"), "tea")

    assert item is not None
    assert item.namespace == ("assistant", "ann")
    assert item.key == "tea"
    assert item.value == {
        "content": "Ann drinks green tea",
        "category": "fact",
        "importance": 7,
        "scope": "private",
    }
    assert item.created_at <= item.updated_at
    assert store.get(("assistant", "ann"), "coffee") is None
    assert store.get(("assistant", "bob"), "tea") is None  # another subject, another namespace
    assert store.get(("nobody",), "tea") is None  # reads create no agent
    assert [a.name for a in store.hive.agents()] == ["assistant"]


def test_put_on_an_existing_key_updates_the_memory_and_keeps_its_history(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("assistant", "ann"), "city", {"content": "Ann lives in Porto"})
    store.put(
        ("assistant", "ann"),
        "city",
        {"content": "Ann lives in Lisbon", "category": "fact", "scope": "shared"},
    )

    item = store.get(("assistant", "ann"), "city")
    assert item is not None
    assert item.value["content"] == "Ann lives in Lisbon"
    assert item.value["scope"] == "shared"
    agent = hive.get_agent("assistant")
    assert agent.list_memories().total == 1
    memory = agent.list_memories().memories[0]
    assert [v["content"] for v in agent.memory_history(memory.id)] == [
        "Ann lives in Lisbon",
        "Ann lives in Porto",
    ]


def test_source_context_round_trips_beside_the_stored_key(store: HivekeepStore) -> None:
    value = {"content": "Ann is allergic to peanuts", "source_context": "intake form, May"}
    store.put(("assistant", "ann"), "allergy\nline two", value)

    item = store.get(("assistant", "ann"), "allergy\nline two")

    assert item is not None and item.value["source_context"] == "intake form, May"
    with pytest.raises(ValidationError, match="source_context cannot change"):
        store.put(("assistant", "ann"), "allergy\nline two", {"content": "Ann: peanuts"})


def test_a_memory_written_elsewhere_is_found_under_its_id(store: HivekeepStore, hive: Hive) -> None:
    written = hive.agent("assistant").memorize("The office is in Berlin", category="fact")

    item = store.get(("assistant",), str(written.memory.id))

    assert item is not None and item.value["content"] == "The office is in Berlin"


def test_delete_forgets_the_memory_into_the_trash(store: HivekeepStore, hive: Hive) -> None:
    store.put(("assistant",), "k", {"content": "The standup is at 10am"})

    store.delete(("assistant",), "k")
    store.delete(("assistant",), "k")  # deleting what is gone is a no-op, as in InMemoryStore
    store.delete(("nobody",), "k")

    assert store.get(("assistant",), "k") is None
    assert hive.get_agent("assistant").trash().total == 1


def test_search_with_a_query_is_hybrid_recall_scored_within_the_prefix(
    store: HivekeepStore,
) -> None:
    store.put(("assistant", "ann"), "1", {"content": "Ann plays the cello in an orchestra"})
    store.put(("assistant", "ann"), "2", {"content": "Ann takes the 8:15 train to work"})
    store.put(("assistant", "bob"), "3", {"content": "Bob plays the violin"})
    store.put(("other",), "4", {"content": "Carla plays the piano"})

    ann = store.search(("assistant", "ann"), query="musical instrument cello")
    everyone = store.search(("assistant",), query="who plays the violin?")
    hive_wide = store.search((), query="piano")

    assert ann[0].value["content"] == "Ann plays the cello in an orchestra"
    assert {hit.namespace for hit in ann} == {("assistant", "ann")}
    assert all(hit.score is not None and hit.score > 0 for hit in ann)
    assert everyone[0].namespace == ("assistant", "bob")
    assert all(hit.namespace[0] == "assistant" for hit in everyone)
    assert hive_wide[0].namespace == ("other",)


def test_search_without_a_query_lists_newest_first_with_limit_and_offset(
    store: HivekeepStore,
) -> None:
    for n in range(5):
        store.put(("assistant", "log"), f"k{n}", {"content": f"Deploy number {n} went out"})

    first = store.search(("assistant", "log"), limit=2)
    second = store.search(("assistant", "log"), limit=2, offset=2)
    rest = store.search(("assistant", "log"), limit=10, offset=4)

    assert [hit.key for hit in first + second + rest] == ["k4", "k3", "k2", "k1", "k0"]
    assert all(hit.score is None for hit in first)


def test_search_filters_on_value_fields_with_the_in_memory_store_operators(
    store: HivekeepStore,
) -> None:
    store.put(("assistant",), "a", {"content": "Ships on Fridays", "category": "decision"})
    store.put(("assistant",), "b", {"content": "Likes dark mode", "category": "preference"})
    store.put(("assistant",), "c", {"content": "Uses PostgreSQL 16", "importance": 8})
    store.put(("assistant",), "d", {"content": "Has a cat named Miso", "importance": 3})

    def keys(**kwargs: object) -> set[str]:
        return {hit.key for hit in store.search(("assistant",), **kwargs)}  # type: ignore[arg-type]

    assert keys(filter={"category": "decision"}) == {"a"}
    assert keys(filter={"category": {"$ne": "fact"}}) == {"a", "b"}
    assert keys(filter={"importance": {"$gte": 5}}) == {"c"}
    assert keys(filter={"importance": {"$lt": 5}}) == {"d"}
    assert keys(filter={"category": "fact", "scope": "private"}) == {"c", "d"}
    assert keys(filter={"category": "nonsense"}) == set()
    assert keys(query="which database version?", filter={"importance": {"$gt": 1}}) == {"c"}
    assert keys(query="which database version?", filter={"importance": {"$lt": 5}}) == set()
    with pytest.raises(ValidationError, match="not supported"):
        keys(filter={"importance": {"$in": [1, 2]}})


def test_list_namespaces_with_prefix_suffix_wildcards_depth_limit_and_offset(
    store: HivekeepStore,
) -> None:
    store.put(("assistant", "ann"), "1", {"content": "Ann likes jazz"})
    store.put(("assistant", "bob"), "2", {"content": "Bob likes techno"})
    store.put(("assistant",), "3", {"content": "The team meets on Mondays"})
    store.put(("planner", "ann"), "4", {"content": "Ann's trip is in June"})

    assert store.list_namespaces() == [
        ("assistant",),
        ("assistant", "ann"),
        ("assistant", "bob"),
        ("planner", "ann"),
    ]
    assert store.list_namespaces(prefix=("assistant",)) == [
        ("assistant",),
        ("assistant", "ann"),
        ("assistant", "bob"),
    ]
    assert store.list_namespaces(suffix=("ann",)) == [("assistant", "ann"), ("planner", "ann")]
    assert store.list_namespaces(prefix=("*", "ann")) == [("assistant", "ann"), ("planner", "ann")]
    assert store.list_namespaces(max_depth=1) == [("assistant",), ("planner",)]
    assert store.list_namespaces(limit=2, offset=1) == [("assistant", "ann"), ("assistant", "bob")]


def test_batch_runs_mixed_operations_in_order(store: HivekeepStore) -> None:
    results = store.batch(
        [
            PutOp(("assistant",), "x", {"content": "Ann's birthday is 4 March"}),
            GetOp(("assistant",), "x"),
            SearchOp(("assistant",), None, 5, 0, "birthday"),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("assistant",)),)),
            PutOp(("assistant",), "x", None),
            GetOp(("assistant",), "x"),
        ]
    )

    put, got, found, namespaces, deleted, gone = results
    assert put is None and deleted is None and gone is None
    assert isinstance(got, Item) and got.value["content"] == "Ann's birthday is 4 March"
    assert isinstance(found, list) and [hit.key for hit in found] == ["x"]  # type: ignore[union-attr]
    assert namespaces == [("assistant",)]


def test_the_async_api_goes_through_abatch(store: HivekeepStore) -> None:
    async def scenario() -> list[str]:
        await store.aput(("assistant", "ann"), "1", {"content": "Ann runs marathons"})
        item = await store.aget(("assistant", "ann"), "1")
        assert item is not None
        hits = await store.asearch(("assistant",), query="running")
        spaces = await store.alist_namespaces()
        await store.adelete(("assistant", "ann"), "1")
        assert await store.aget(("assistant", "ann"), "1") is None
        return [item.value["content"], hits[0].key, *map(str, spaces)]

    assert asyncio.run(scenario()) == ["Ann runs marathons", "1", "('assistant', 'ann')"]


def test_bad_namespaces_values_and_options_are_refused_and_write_nothing(
    store: HivekeepStore, hive: Hive
) -> None:
    with pytest.raises(InvalidNamespaceError, match="more parts"):
        store.put(("assistant", "ann", "deep"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"content": "x"})  # LangGraph's own rule, kept
    with pytest.raises(ValidationError, match="would not be stored"):
        store.put(("assistant",), "k", {"content": "x", "tags": ["a"]})
    with pytest.raises(ValidationError, match="needs 'content'"):
        store.put(("assistant",), "k", {"content": {"nested": "object"}})
    with pytest.raises(ValidationError, match="category"):
        store.put(("assistant",), "k", {"content": "x", "category": "gossip"})
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("assistant",), "k", {"content": "x"}, ttl=5)
    with pytest.raises(ValidationError, match="Agent name"):
        store.put(("42",), "k", {"content": "x"})

    assert store.list_namespaces() == []
