"""Dedup that cannot lose a fact, the store's side (issue 24), on every backend: dedup stays within
one subject, a duplicate write's text is kept as a ``merge`` version of the memory it matched, and
a stored write is linked to the older memories it listed as similar."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hivekeep.core.dedup import NEIGHBOURS, DedupRule
from hivekeep.store.base import (
    KEEP,
    PERSON,
    Change,
    Inserted,
    MemoryChanges,
    MemoryWrite,
    NewMemory,
    Store,
)
from hivekeep.types import Actor, Category, Operation, Scope, Source
from tests.contract.test_store import put, vec
from tests.support import with_cosine

RULE = DedupRule(threshold=0.9)


@pytest.fixture
def agents(store: Store) -> tuple[int, int]:
    return store.create_agent("alice", "").id, store.create_agent("bob", "").id


def _write(agent_id: int, content: str, vector: np.ndarray, **fields: Any) -> MemoryWrite:
    memory = NewMemory(agent_id, content, fields.pop("category", Category.FACT), **fields)
    return MemoryWrite(memory, vector, content.lower())


def _insert(store: Store, *writes: MemoryWrite) -> list[Inserted]:
    return store.insert_memories(list(writes), dedup=RULE)


def _links(store: Store) -> int:
    with store._reading() as s:  # type: ignore[attr-defined]  # both SQL stores
        return int(s.one("SELECT count(*) FROM memory_links")[0])


# subjects -------------------------------------------------------------------------------------
def test_the_same_text_about_another_subject_is_another_memory(
    store: Store, agents: tuple[int, int]
) -> None:
    """Subjects compare trimmed and case-folded; no subject matches only no subject."""
    alice, _ = agents
    text = "Prefers the window seat."
    ann, bob, none, ann_again, none_again = _insert(
        store,
        _write(alice, text, vec("seat"), subject="Ann"),
        _write(alice, text, vec("seat"), subject="Bob"),
        _write(alice, text, vec("seat")),
        _write(alice, text, vec("seat"), subject="  ann "),
        _write(alice, text, vec("seat")),
    )
    assert not ann.duplicate and not bob.duplicate and not none.duplicate
    assert len({ann.memory.id, bob.memory.id, none.memory.id}) == 3
    assert ann_again.duplicate and ann_again.memory.id == ann.memory.id
    assert none_again.duplicate and none_again.memory.id == none.memory.id
    [later] = _insert(
        store, _write(alice, text, with_cosine(vec("seat"), 0.99, "c"), subject="BOB")
    )
    assert later.duplicate and later.memory.id == bob.memory.id  # before the batch, too


def test_a_restatement_is_found_behind_closer_twins_about_other_subjects(
    store: Store, agents: tuple[int, int]
) -> None:
    """The subject is applied inside the neighbour lookup: more other-subject twins than the
    rule's candidates, all closer, do not hide the same-subject restatement."""
    alice, _ = agents
    base = vec("kyoto")
    for n in range(NEIGHBOURS + 2):
        put(
            store,
            alice,
            "The flight to Kyoto is on 3 June!",
            with_cosine(base, 0.99, f"t{n}"),
            subject=f"traveller {n}",
        )
    mine = put(store, alice, "The flight to Kyoto is on 3 June.", with_cosine(base, 0.93, "m"))
    [written] = _insert(store, _write(alice, "The flight to Kyoto is on 3 June", base))
    assert written.duplicate and written.memory.id == mine


def test_similar_lists_only_the_same_subject(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    base = vec("rent")
    same = put(store, alice, "Rent is due on day 1.", with_cosine(base, 0.93, "s"), subject="flat")
    put(store, alice, "Rent is due on day 2.", with_cosine(base, 0.97, "o"), subject="office")
    [written] = _insert(store, _write(alice, "Rent is due on day 5.", base, subject="Flat"))
    assert not written.duplicate and [m.id for m in written.similar] == [same]


# merges ---------------------------------------------------------------------------------------
def test_a_duplicate_keeps_its_text_as_a_merge_version(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    base = vec("vegetarian")
    first = put(store, alice, "The user is vegetarian.", base, importance=5)
    restated = "the user is vegetarian!"
    [merged] = _insert(
        store, _write(alice, restated, with_cosine(base, 0.95, "r"), category=Category.PREFERENCE)
    )
    assert merged.duplicate and merged.memory.id == first and merged.merged_version == 2
    assert merged.memory.content == "The user is vegetarian."  # the memory is unchanged
    kept, created = store.memory_history(first, alice)
    assert (kept.version, kept.content, kept.operation) == (2, restated, Operation.MERGE)
    assert (kept.category, kept.importance, kept.scope) == (
        Category.PREFERENCE,
        None,
        Scope.PRIVATE,
    )
    assert (kept.changed_by, kept.agent_id) == (Actor.AGENT, alice)
    assert (created.version, created.content, created.operation) == (
        1,
        "The user is vegetarian.",
        Operation.CREATE,
    )
    assert created.agent_id == alice


def test_repeating_a_write_does_not_churn_the_history(
    store: Store, agents: tuple[int, int]
) -> None:
    """The same merge by the same writer again adds nothing (it gets that version back); the
    memory's own current text repeated adds nothing either."""
    alice, _ = agents
    base = vec("loop")
    first = put(store, alice, "Standup is at 10am.", base)
    restated = _write(alice, "standup is at 10am!", with_cosine(base, 0.95, "r"))
    results = [_insert(store, restated)[0] for _ in range(3)]
    assert [r.merged_version for r in results] == [2, 2, 2]
    [exact] = _insert(store, _write(alice, "Standup is at 10am.", base))
    assert exact.duplicate and exact.merged_version is None
    assert [v.version for v in store.memory_history(first, alice)] == [2, 1]
    [again] = _insert(store, _write(alice, "Standup is at 10AM", with_cosine(base, 0.95, "s")))
    assert again.merged_version == 3  # another text: kept


def test_another_writers_merge_is_attributed_to_it(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    base = vec("office")
    shared = put(store, alice, "The office opens at nine.", base, scope=Scope.SHARED)
    [merged] = _insert(
        store, _write(bob, "the office opens at nine!", with_cosine(base, 0.96, "b"))
    )
    assert merged.duplicate and merged.memory.id == shared and merged.merged_version == 2
    [kept, _] = store.memory_history(shared, bob)
    assert (kept.agent_id, kept.scope, kept.changed_by) == (bob, Scope.PRIVATE, Actor.AGENT)
    assert [v.version for v in store.memory_history(shared, PERSON)] == [2, 1]
    assert [v.version for v in store.memory_history(shared, alice)] == [1]  # bob's private text
    [automatic] = _insert(
        store,
        _write(
            alice, "The office opens at nine", with_cosine(base, 0.95, "m"), source=Source.AUTOMATIC
        ),
    )
    [newest, *_] = store.memory_history(shared, alice)
    assert automatic.merged_version == 3
    assert (newest.changed_by, newest.agent_id) == (Actor.MAINTENANCE, alice)


def test_a_batch_duplicate_of_its_own_earlier_row_is_kept_too(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    base = vec("cats")
    first, second = _insert(
        store,
        _write(alice, "The user owns two cats.", base),
        _write(alice, "the user owns two cats!", with_cosine(base, 0.96, "b")),
    )
    assert second.duplicate and second.memory.id == first.memory.id
    assert second.merged_version == 2
    assert store.memory_history(first.memory.id, alice)[0].content == "the user owns two cats!"


def test_merges_follow_the_history_limit(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    store.history_limit = 3  # type: ignore[attr-defined]  # both SQL stores
    base = vec("limit")
    first = put(store, alice, "Tea at five.", base)
    for n, mark in enumerate("!;:,"):
        [merged] = _insert(
            store, _write(alice, f"tea at five{mark}", with_cosine(base, 0.95, mark))
        )
        assert merged.merged_version == n + 2
    assert [v.version for v in store.memory_history(first, alice)] == [5, 4, 3]


def test_versions_name_the_agent_whose_write_made_them(
    store: Store, agents: tuple[int, int]
) -> None:
    """``agent_id``: the owner for its own changes, None for a person's."""
    alice, _ = agents
    memory_id = put(store, alice, "Lunch at noon.", scope=Scope.SHARED)
    store.update_memory(memory_id, alice, MemoryChanges(importance=3), text_key=None, vector=KEEP)
    store.update_memory(
        memory_id,
        PERSON,
        MemoryChanges(importance=4),
        text_key=None,
        vector=KEEP,
        written=Change(Actor.PERSON, Operation.UPDATE),
    )
    person, agent, created = store.memory_history(memory_id, alice)
    assert (created.agent_id, agent.agent_id, person.agent_id) == (alice, alice, None)


# links ----------------------------------------------------------------------------------------
def test_a_stored_write_points_the_older_ones_at_it(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    base = vec("standup")
    old = put(store, alice, "Team standup is at 10am", base, scope=Scope.SHARED)
    [new] = _insert(store, _write(bob, "Team standup is at 11am", with_cosine(base, 0.99, "n")))
    assert [m.id for m in new.similar] == [old]
    assert {i: m.content for i, m in store.newer_memories(bob, [old, new.memory.id]).items()} == {
        old: "Team standup is at 11am"
    }
    assert store.newer_memories(alice, [old]) == {}  # bob's newer memory is private
    assert store.newer_memories(bob, []) == {}


def test_the_newest_visible_twin_is_the_one_shown(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    base = vec("rent day")
    old = put(store, alice, "Rent is due on the 1st.", base)
    [second] = _insert(
        store, _write(alice, "Rent is due on the 2nd.", with_cosine(base, 0.98, "a"))
    )
    [third] = _insert(store, _write(alice, "Rent is due on the 3rd.", with_cosine(base, 0.97, "b")))
    assert old in [m.id for m in third.similar] and second.memory.id in [
        m.id for m in third.similar
    ]
    assert store.newer_memories(alice, [old])[old].id == third.memory.id
    store.delete_memory(third.memory.id, alice)
    assert store.newer_memories(alice, [old])[old].id == second.memory.id  # live ones only
    store.restore_memory(third.memory.id, alice, by=Actor.AGENT)
    assert store.newer_memories(alice, [old])[old].id == third.memory.id  # the trash kept it


def test_a_purge_takes_the_links_with_it(store: Store, agents: tuple[int, int]) -> None:
    alice, bob = agents
    base = vec("purge links")
    old = put(store, alice, "The boat is blue.", base, scope=Scope.SHARED)
    [new] = _insert(store, _write(alice, "The boat is red.", with_cosine(base, 0.98, "r")))
    [bobs] = _insert(store, _write(bob, "The boat is green.", with_cosine(base, 0.97, "g")))
    assert [m.id for m in bobs.similar] == [old]  # bob cannot see alice's private red boat
    assert _links(store) == 2  # red -> blue, green -> blue
    store.erase_memory(new.memory.id)
    assert _links(store) == 1
    store.delete_agent(bob)  # its private memory goes, and its links
    assert _links(store) == 0
    assert store.newer_memories(alice, [old]) == {}
    assert bobs.memory.id not in store.fetch_memories(alice, [bobs.memory.id])


@pytest.mark.slow
def test_subject_lookups_hold_in_a_large_hive(store: Store, agents: tuple[int, int]) -> None:
    """Past 2,000 visible rows of a subject PostgreSQL walks HNSW, below it sorts them exactly:
    both find the restatement, whichever the author's other subjects hold."""
    alice, _ = agents
    base = vec("kyoto")
    crowd = np.random.default_rng(3).standard_normal((2_500, base.shape[0])).astype(np.float32)
    filler = [
        _write(alice, f"Filler note {n}.", row / np.linalg.norm(row), subject="crowd")
        for n, row in enumerate(crowd)
    ]
    twins = [  # closer than the restatement, about the same subject, another fact
        _write(alice, f"The bus to Osaka leaves on 5 July, seat {n}.", vector, subject="crowd")
        for n, vector in enumerate(with_cosine(base, 0.99, f"t{n}") for n in range(5))
    ]
    store.insert_memories(filler + twins, dedup=DedupRule(threshold=2.0))
    restated = "The flight to Kyoto is on 3 June."
    few, many = _insert(
        store,
        _write(alice, restated, with_cosine(base, 0.93, "f"), subject="Ann"),
        _write(alice, restated, with_cosine(base, 0.93, "m"), subject="crowd"),
    )
    assert not few.duplicate and not many.duplicate
    found = _insert(
        store,
        _write(alice, "The flight to Kyoto is on 3 June", base, subject="ann"),
        _write(alice, "The flight to Kyoto is on 3 June", base, subject="Crowd"),
    )
    assert [(r.duplicate, r.memory.id) for r in found] == [
        (True, few.memory.id),
        (True, many.memory.id),
    ]


# the exact-text key ------------------------------------------------------------------------------
def test_the_same_text_key_merges_only_what_the_rule_calls_one_fact(
    store: Store, agents: tuple[int, int]
) -> None:
    """A text key stored by an older hivekeep dropped a sign or a currency at a text's edge
    ("$40 ..." and "€40 ..." were both "40 ..."): a key match is judged by the rule too, within a
    batch and against the rows from before it."""
    alice, _ = agents
    key = "40 is the budget"
    [dollars] = _insert(
        store, MemoryWrite(NewMemory(alice, "$40 is the budget", Category.FACT), vec("b"), key)
    )
    euros, again = _insert(
        store,
        MemoryWrite(NewMemory(alice, "€40 is the budget", Category.FACT), vec("b"), key),
        MemoryWrite(NewMemory(alice, "40 EUR is the budget", Category.FACT), vec("b"), key),
    )
    assert not euros.duplicate and euros.memory.id != dollars.memory.id
    assert again.duplicate and again.memory.id == euros.memory.id  # "€40" is "40 EUR"
    [plain] = _insert(
        store, MemoryWrite(NewMemory(alice, "40 is the budget", Category.FACT), vec("b"), key)
    )
    assert not plain.duplicate
