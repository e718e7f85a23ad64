"""HivekeepStore as LangGraph uses it: inside a compiled graph, and through every BaseStore call
that ``InMemoryStore`` documents (get, put, search, delete, list_namespaces; batch and abatch;
filters, limits and offsets), on a real hive with the bundled embedding model."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
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
    store.put(("assistant", "ann"), "allergy\nline two", {"content": "Ann: peanuts"})
    again = store.get(("assistant", "ann"), "allergy\nline two")
    assert again is not None  # a put replaces the whole value, as in InMemoryStore
    assert again.value == {
        "content": "Ann: peanuts",
        "category": "fact",
        "importance": None,
        "scope": "private",
    }


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
    for label in (" ann", "ann ", "a\x07nn"):  # the hive would store these changed
        with pytest.raises(InvalidNamespaceError, match="would store it changed"):
            store.put(("assistant", label), "k", {"content": "x"})
        with pytest.raises(InvalidNamespaceError, match="would store it changed"):
            store.put((label,), "k", {"content": "x"})

    assert store.list_namespaces() == []


# -- no put is lost: keys that share a memory, users, case ---------------------------------------


def test_a_known_text_put_under_a_new_key_is_gettable_under_both_keys(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("assistant", "ann"), "k1", {"content": "Ann drinks green tea"})
    store.put(("assistant", "ann"), "k2", {"content": "Ann drinks green tea"})

    first, second = store.get(("assistant", "ann"), "k1"), store.get(("assistant", "ann"), "k2")

    assert first is not None and second is not None
    assert (second.namespace, second.key) == (("assistant", "ann"), "k2")
    assert first.value == second.value
    assert second.value["content"] == "Ann drinks green tea"
    assert hive.get_agent("assistant").list_memories().total == 1  # one memory, two keys
    listed = store.search(("assistant", "ann"))
    found = store.search(("assistant", "ann"), query="what does Ann drink?")
    assert sorted(hit.key for hit in listed) == sorted(hit.key for hit in found) == ["k1", "k2"]


@pytest.mark.parametrize("deleted, kept", [("k1", "k2"), ("k2", "k1")])
def test_deleting_one_key_of_a_shared_memory_keeps_the_other(
    store: HivekeepStore, hive: Hive, deleted: str, kept: str
) -> None:
    store.put(("assistant",), "k1", {"content": "The standup is at 10am"})
    store.put(("assistant",), "k2", {"content": "The standup is at 10am"})

    store.delete(("assistant",), deleted)

    assert store.get(("assistant",), deleted) is None
    item = store.get(("assistant",), kept)
    assert item is not None and item.value["content"] == "The standup is at 10am"
    assert [hit.key for hit in store.search(("assistant",))] == [kept]
    agent = hive.get_agent("assistant")
    assert agent.trash().total == 0  # the memory stays while a key reaches it
    store.delete(("assistant",), kept)
    assert agent.list_memories().total == 0 and agent.trash().total == 1


def test_a_put_on_a_shared_key_changes_that_key_only(store: HivekeepStore) -> None:
    store.put(("assistant",), "k1", {"content": "The office is in Berlin"})
    store.put(("assistant",), "k2", {"content": "The office is in Berlin"})

    store.put(("assistant",), "k2", {"content": "The office moved to Hamburg in May"})

    first, second = store.get(("assistant",), "k1"), store.get(("assistant",), "k2")
    assert first is not None and first.value["content"] == "The office is in Berlin"
    assert second is not None and second.value["content"] == "The office moved to Hamburg in May"


def test_a_memory_written_elsewhere_keeps_its_id_key_when_a_put_shares_it(
    store: HivekeepStore, hive: Hive
) -> None:
    written = hive.agent("assistant").memorize("Ann's dog is called Rex", category="fact")
    store.put(("assistant",), "dog", {"content": "Ann's dog is called Rex"})

    by_id, by_key = (
        store.get(("assistant",), str(written.memory.id)),
        store.get(("assistant",), "dog"),
    )

    assert by_id is not None and by_key is not None
    assert by_id.value["content"] == by_key.value["content"] == "Ann's dog is called Rex"


def test_puts_through_abatch_of_one_text_under_many_keys_are_all_gettable(
    store: HivekeepStore,
) -> None:
    async def scenario() -> list[str | None]:
        await store.abatch(
            [PutOp(("assistant",), f"k{n}", {"content": "Ann was born in Porto"}) for n in range(3)]
        )
        got = await store.abatch([GetOp(("assistant",), f"k{n}") for n in range(3)])
        return [item.value["content"] if isinstance(item, Item) else None for item in got]

    assert asyncio.run(scenario()) == ["Ann was born in Porto"] * 3


def test_a_put_without_an_index_is_still_gettable_and_found(store: HivekeepStore) -> None:
    store.put(("assistant",), "k", {"content": "Ann collects vinyl records"}, index=False)

    item = store.get(("assistant",), "k")
    found = store.search(("assistant",), query="vinyl records")

    assert item is not None and [hit.key for hit in found] == ["k"]  # as InMemoryStore's are


def test_langmem_users_who_store_the_same_text_each_keep_their_own_item(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("memories", "user-1"), "a1", {"content": "Prefers dark mode"})
    store.put(("memories", "user-2"), "b1", {"content": "Prefers dark mode"})

    one, two = store.get(("memories", "user-1"), "a1"), store.get(("memories", "user-2"), "b1")

    assert one is not None and two is not None
    assert one.value["content"] == two.value["content"] == "Prefers dark mode"
    assert {m.subject for m in hive.get_agent("memories").list_memories().memories} == {
        "user-1",
        "user-2",
    }
    store.delete(("memories", "user-1"), "a1")
    assert store.get(("memories", "user-2"), "b1") is not None
    assert [hit.key for hit in store.search(("memories", "user-2"), query="dark mode")] == ["b1"]


def test_a_text_another_agent_shares_is_refused_with_where_it_is(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("planner",), "p", {"content": "The release is on 3 June", "scope": "shared"})

    with pytest.raises(ValidationError, match=r"memory \d+, key 'p' of \('planner',\)"):
        store.put(("assistant",), "a", {"content": "The release is on 3 June"})

    assert store.get(("assistant",), "a") is None  # refused, not answered as stored
    assert store.get(("planner",), "p") is not None


def test_agent_labels_are_case_sensitive_and_a_case_twin_is_refused(
    store: HivekeepStore,
) -> None:
    store.put(("Foo",), "k", {"content": "Foo's build runs nightly"})

    with pytest.raises(InvalidNamespaceError, match=r"agent 'Foo' in another case"):
        store.put(("foo",), "k", {"content": "foo's build runs weekly"})

    assert store.get(("foo",), "k") is None
    assert store.search(("foo",)) == []
    item = store.get(("Foo",), "k")
    assert item is not None and item.namespace == ("Foo",)
    assert item.value["content"] == "Foo's build runs nightly"
    store.delete(("foo",), "k")  # another namespace: nothing there to delete
    assert store.get(("Foo",), "k") is not None


def test_subject_labels_are_case_sensitive_and_a_case_twin_is_refused(
    store: HivekeepStore,
) -> None:
    store.put(("assistant", "Ann"), "k", {"content": "Ann sings in a choir"})

    with pytest.raises(InvalidNamespaceError, match=r"subject 'Ann'"):
        store.put(("assistant", "ann"), "k2", {"content": "Ann paints watercolours"})

    assert store.get(("assistant", "ann"), "k") is None
    assert store.search(("assistant", "ann")) == []
    assert store.search(("assistant", "ann"), query="choir") == []
    assert [hit.key for hit in store.search(("assistant", "Ann"), query="choir")] == ["k"]
    assert store.list_namespaces() == [("assistant", "Ann")]


def test_threads_putting_one_text_under_many_keys_lose_no_key(store: HivekeepStore) -> None:
    store.put(("assistant",), "k0", {"content": "Ann's flat is on the fourth floor"})

    def put(n: int) -> None:
        store.put(("assistant",), f"k{n}", {"content": "Ann's flat is on the fourth floor"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, range(1, 17)))

    assert [n for n in range(17) if store.get(("assistant",), f"k{n}") is None] == []
