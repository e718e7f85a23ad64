"""HivekeepStore as LangGraph uses it: inside a compiled graph, and through every BaseStore call
that ``InMemoryStore`` documents (get, put, search, delete, list_namespaces; batch and abatch;
filters, limits and offsets), on a real hive with the bundled embedding model."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    assert item.value == {"content": "Ann drinks green tea", "importance": 7}
    assert item.created_at <= item.updated_at
    assert store.get(("assistant", "ann"), "coffee") is None
    assert store.get(("assistant", "bob"), "tea") is None  # another subject, another namespace
    assert store.get(("nobody",), "tea") is None  # reads create no agent
    assert [a.name for a in store.hive.agents()] == ["assistant"]


ANY_JSON = {
    "text": "Ann\u2019s 🐝 hives — «Lisbon»",
    "nested": {"list": [1, 2.5, -0.0, True, None, {"deep": ["x", []]}], "empty": {}},
    "big": 10**30,
    "float": 0.1 + 0.2,
    "line\nbreak key": "tab\there",
}


def test_any_json_value_comes_back_exactly_as_put(store: HivekeepStore, hive: Hive) -> None:
    store.put(("assistant", "ann"), "odd key\n2", ANY_JSON)

    item = store.get(("assistant", "ann"), "odd key\n2")
    listed = store.search(("assistant",))

    assert item is not None and item.value == ANY_JSON
    assert json.dumps(item.value) == json.dumps(ANY_JSON)  # key order and float bits too
    assert [hit.value for hit in listed] == [ANY_JSON]
    memory = hive.get_agent("assistant").list_memories().memories[0]
    assert memory.content.startswith("Ann\u2019s 🐝 hives — «Lisbon»\n1\n2.5")  # the value's text


def test_put_on_an_existing_key_updates_the_memory_and_keeps_its_history(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("assistant", "ann"), "city", {"content": "Ann lives in Porto"})
    created = store.get(("assistant", "ann"), "city")
    store.put(("assistant", "ann"), "city", {"content": "Ann lives in Lisbon", "since": 2024})

    item = store.get(("assistant", "ann"), "city")
    assert created is not None and item is not None
    assert item.value == {"content": "Ann lives in Lisbon", "since": 2024}  # replaced whole
    assert item.created_at == created.created_at and item.updated_at > created.updated_at
    agent = hive.get_agent("assistant")
    assert agent.list_memories().total == 1
    memory = agent.list_memories().memories[0]
    assert [v["content"] for v in agent.memory_history(memory.id)] == [
        "Ann lives in Lisbon\n2024",
        "Ann lives in Porto",
    ]


def test_namespaces_of_any_depth_map_onto_agents_and_subjects(
    store: HivekeepStore, hive: Hive
) -> None:
    store.put(("assistant", "ann", "prefs", "food"), "k", {"content": "Ann is vegetarian"})
    store.put(("7c0f-uuid", "notes"), "k", {"content": "Release notes are due Friday"})
    store.put(("assistant",), "k", {"content": "The team meets on Mondays"})

    assistant = {m.content: m.subject for m in hive.get_agent("assistant").list_memories().memories}
    fallback = hive.get_agent("langgraph").list_memories().memories

    assert assistant == {"Ann is vegetarian": "ann/prefs/food", "The team meets on Mondays": None}
    assert [(m.content, m.subject) for m in fallback] == [
        ("Release notes are due Friday", "7c0f-uuid/notes")  # not an agent name: one agent
    ]
    assert store.get(("assistant", "ann", "prefs", "food"), "k") is not None
    assert store.get(("assistant", "ann", "prefs"), "k") is None  # exact namespaces
    assert store.get(("7c0f-uuid", "notes"), "k") is not None
    assert [hit.namespace for hit in store.search(("7c0f-uuid",), query="release notes")] == [
        ("7c0f-uuid", "notes")
    ]
    deep = ("assistant", *(f"level-{n:03d}-" + "x" * 40 for n in range(6)))  # a 300-char subject
    store.put(deep, "k", {"content": "Deep namespaces keep their items"})
    assert store.get(deep, "k") is not None and store.list_namespaces(prefix=deep) == [deep]
    long_query = "which items do deep namespaces keep? " * 40  # past recall's 1,000 characters
    assert [hit.key for hit in store.search(deep, query=long_query)] == ["k"]


def test_index_names_the_fields_that_are_searched_per_store_and_per_put(hive: Hive) -> None:
    store = HivekeepStore(hive, index={"fields": ["title"]})
    store.put(("docs",), "a", {"title": "Ann keeps bees", "body": "on the roof in Lisbon"})
    store.put(
        ("docs",), "b", {"title": "Bob's cello", "tags": ["music", "strings"]}, index=["tags[*]"]
    )
    store.put(("docs",), "c", {"title": "Carla's piano lessons", "when": "Tuesdays"}, index=False)

    contents = {m.content for m in hive.get_agent("docs").list_memories().memories}

    assert {"Ann keeps bees", "music\nstrings"} <= contents  # what index named, only
    assert [hit.key for hit in store.search(("docs",), query="bees")] == ["a"]
    assert store.search(("docs",), query="rooftop in Lisbon") == [] or all(
        hit.key != "a" or hit.score for hit in store.search(("docs",), query="rooftop")
    )
    assert "b" in [hit.key for hit in store.search(("docs",), query="strings music")]
    # paths that name one field several times: a text of 2,400 characters, a value of 600
    nested = {"meta": {"note": "日本語の" * 150}}
    store.put(("docs",), "d", nested, index=["meta.note", "meta", "meta.note", "meta.note"])
    item = store.get(("docs",), "d")
    assert item is not None and item.value == nested  # whole; the memory's text is cut at 2,000


def test_code_written_for_sqlite_store_runs_unchanged(hive: Hive) -> None:
    store = HivekeepStore(hive, index={"text_fields": ["title"]})
    store.setup()  # LangGraph's SQL stores need it; code written for them calls it

    store.put(("docs",), "a", {"title": "Ann keeps bees", "body": "on the roof in Lisbon"})

    assert [m.content for m in hive.get_agent("docs").list_memories().memories] == [
        "Ann keeps bees"
    ]


def test_an_item_put_with_index_false_is_listed_and_gettable_but_not_query_searched(
    store: HivekeepStore,
) -> None:
    store.put(("assistant",), "k", {"content": "Ann collects vinyl records"}, index=False)
    store.put(("assistant",), "j", {"content": "Ann collects vinyl records too"})

    item = store.get(("assistant",), "k")
    found = store.search(("assistant",), query="vinyl records")

    assert item is not None and item.value == {"content": "Ann collects vinyl records"}
    assert "k" not in [hit.key for hit in found] and "j" in [hit.key for hit in found]
    assert sorted(hit.key for hit in store.search(("assistant",))) == ["j", "k"]
    store.put(("assistant",), "k", {"content": "Ann collects vinyl records"})  # indexed now
    assert "k" in [hit.key for hit in store.search(("assistant",), query="vinyl records")]


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


def test_search_filters_on_value_fields_with_langgraphs_operators(
    store: HivekeepStore,
) -> None:
    store.put(("assistant",), "a", {"content": "Ships on Fridays", "kind": "decision"})
    store.put(("assistant",), "b", {"content": "Likes dark mode", "kind": "preference"})
    store.put(("assistant",), "c", {"content": "Uses PostgreSQL 16", "weight": 8, "db": {"v": 16}})
    store.put(("assistant",), "d", {"content": "Has a cat named Miso", "weight": 3})

    def keys(**kwargs: object) -> set[str]:
        return {hit.key for hit in store.search(("assistant",), **kwargs)}  # type: ignore[arg-type]

    assert keys(filter={"kind": "decision"}) == {"a"}
    assert keys(filter={"kind": {"$ne": "decision"}}) == {"b", "c", "d"}
    assert keys(filter={"weight": {"$gte": 5}}) == {"c"}
    assert keys(filter={"weight": {"$lt": 5}}) == {"d"}
    assert keys(filter={"weight": {"$gt": 1, "$lte": 3}}) == {"d"}
    assert keys(filter={"db.v": {"$eq": 16}}) == {"c"}  # a field path into the value
    assert keys(filter={"kind": "nonsense"}) == set()
    assert keys(query="which database version?", filter={"weight": {"$gt": 1}}) == {"c"}
    assert keys(query="which database version?", filter={"weight": {"$lt": 5}}) == set()
    with pytest.raises(ValidationError, match="not supported"):
        keys(filter={"weight": {"$in": [1, 2]}})
    with pytest.raises(ValueError, match="Invalid filter key"):
        keys(filter={"weight') OR 1=1": 1})


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
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"content": "x"})  # LangGraph's own rules, kept
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a", "b.c"), "k", {"content": "x"})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"content": "x"})])
    with pytest.raises(ValidationError, match="not JSON"):
        store.put(("assistant",), "k", {"when": object()})
    with pytest.raises(ValidationError, match="not JSON"):
        store.put(("assistant",), "k", {"ratio": float("nan")})
    with pytest.raises(ValidationError, match="list of field paths"):
        store.put(("assistant",), "k", {"content": "x"}, index=True)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="too large"):
        store.put(("assistant",), "k", {"content": "x" * 2500})
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("assistant",), "k", {"content": "x"}, ttl=5)
    with pytest.raises(ValidationError, match="no ttl"):
        store.batch([PutOp(("assistant",), "k", {"content": "x"}, ttl=5)])
    with pytest.raises(ValidationError, match="no ttl config"):
        HivekeepStore(hive, ttl={"default_ttl": 5})

    assert store.list_namespaces() == []
    assert all(agent.list_memories().total == 0 for agent in hive.agents())


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


def test_a_put_of_a_text_another_agent_shares_is_stored_or_refused_never_dropped(
    store: HivekeepStore, hive: Hive
) -> None:
    hive.agent("planner").memorize("The release is on 3 June", category="fact", scope="shared")

    try:
        store.put(("assistant",), "a", {"content": "The release is on 3 June"})
    except ValidationError as refused:  # answered as refused: nothing is stored
        assert "another agent's shared memory" in str(refused)
        assert store.get(("assistant",), "a") is None
    else:  # answered as stored: it reads back
        item = store.get(("assistant",), "a")
        assert item is not None and item.value == {"content": "The release is on 3 June"}


def test_labels_are_case_sensitive_and_case_twins_are_namespaces_of_their_own(
    store: HivekeepStore,
) -> None:
    store.put(("Foo",), "k", {"content": "Foo's build runs nightly"})
    store.put(("foo",), "k", {"content": "foo's build runs weekly"})
    store.put(("a", "Ann"), "k", {"content": "Ann sings in a choir"})
    store.put(("a", "ann"), "k", {"content": "Ann paints watercolours"})

    upper, lower = store.get(("Foo",), "k"), store.get(("foo",), "k")

    assert upper is not None and upper.value == {"content": "Foo's build runs nightly"}
    assert lower is not None and lower.value == {"content": "foo's build runs weekly"}
    assert [hit.namespace for hit in store.search(("foo",))] == [("foo",)]
    assert [hit.key for hit in store.search(("a", "ann"), query="choir")] == []
    assert [hit.key for hit in store.search(("a", "Ann"), query="choir")] == ["k"]
    store.delete(("foo",), "k")
    assert store.get(("Foo",), "k") is not None and store.get(("foo",), "k") is None
    assert store.list_namespaces() == [("Foo",), ("a", "Ann"), ("a", "ann")]


def test_threads_putting_one_text_under_many_keys_lose_no_key(store: HivekeepStore) -> None:
    store.put(("assistant",), "k0", {"content": "Ann's flat is on the fourth floor"})

    def put(n: int) -> None:
        store.put(("assistant",), f"k{n}", {"content": "Ann's flat is on the fourth floor"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, range(1, 17)))

    assert [n for n in range(17) if store.get(("assistant",), f"k{n}") is None] == []


JSON_VALUES = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=40),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=10,
    ),
    max_size=4,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=JSON_VALUES, index=st.sampled_from([None, False, ["$"], ["a", "b.c", "l[*]"]]))
def test_any_json_value_put_reads_back_exactly_by_get_and_listing(
    store: HivekeepStore, value: dict[str, object], index: object
) -> None:
    namespace = ("assistant", f"n{len(store.list_namespaces(limit=1000))}")  # each its own

    store.put(namespace, "k", value, index=index)  # type: ignore[arg-type]

    item = store.get(namespace, "k")
    assert item is not None and json.dumps(item.value) == json.dumps(value)
    assert [json.dumps(hit.value) for hit in store.search(namespace)] == [json.dumps(value)]
