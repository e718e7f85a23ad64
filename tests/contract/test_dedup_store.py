"""Dedup that cannot lose a fact, the store's side (issues 24 and 33), on every backend: dedup stays
within one subject, a write is never hidden (the same fact rewords the writer's own memory, an
exact repeat adds nothing, another agent's memory is never touched), and a stored write is linked
to the older memories it listed as similar."""

from __future__ import annotations

import dataclasses
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
    MemoryFilter,
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


# merges: a write is never hidden (SPEC 4.1) -----------------------------------------------------
def _history(store: Store, memory_id: int, viewer: int) -> list[tuple[int, str, Operation]]:
    return [(v.version, v.content, v.operation) for v in store.memory_history(memory_id, viewer)]


def test_a_restatement_rewords_the_writers_memory(store: Store, agents: tuple[int, int]) -> None:
    """The same fact as the writer's own memory: the write's text becomes its content, the
    previous text stays version 1, and the new vector is the one searched."""
    alice, _ = agents
    base = vec("vegetarian")
    first = put(store, alice, "The user is vegetarian.", base, importance=5)
    restated = "the user is vegetarian!"
    moved = with_cosine(base, 0.95, "r")
    [merged] = _insert(store, _write(alice, restated, moved, category=Category.PREFERENCE))
    assert (merged.duplicate, merged.reworded, merged.merged_version) == (True, True, None)
    assert merged.memory.id == first and merged.memory.content == restated
    assert store.get_memory(first, alice).importance == 5  # only the wording changes
    assert _history(store, first, alice) == [
        (2, restated, Operation.REWORD),
        (1, "The user is vegetarian.", Operation.CREATE),
    ]
    reworded = store.memory_history(first, alice)[0]
    assert (reworded.changed_by, reworded.agent_id) == (Actor.AGENT, alice)
    [(found, score)] = store.vector_search(alice, moved, 1, MemoryFilter())
    assert found == first and score == pytest.approx(1.0, abs=1e-5)


def test_an_exact_repeat_adds_nothing(store: Store, agents: tuple[int, int]) -> None:
    """Exact: the same text after Unicode NFC and whitespace collapse only. Case, punctuation
    or a sign is another wording, which becomes current; the same writer looping on one text
    never churns the history."""
    alice, _ = agents
    base = vec("loop")
    first = put(store, alice, "Standup is at 10am.", base)
    for text in ("Standup is at 10am.", "  Standup  is at\t10am. ", "Standup is at 10am."):
        [same] = _insert(store, _write(alice, text, with_cosine(base, 0.95, text)))
        assert (same.duplicate, same.reworded, same.memory.id) == (True, False, first)
    assert store.memory_history(first, alice)[0].version == 1  # nothing recorded
    cafe = put(store, alice, "Meet at the cafe\u0301.", vec("cafe"))
    [composed] = _insert(store, _write(alice, "Meet at the caf\u00e9.", vec("cafe")))
    assert (composed.duplicate, composed.reworded, composed.memory.id) == (True, False, cafe)
    restated = _write(alice, "standup is at 10AM", with_cosine(base, 0.95, "s"))
    results = [_insert(store, restated)[0] for _ in range(3)]
    assert [(r.duplicate, r.reworded) for r in results] == [(True, True), *[(True, False)] * 2]
    assert [v.version for v in store.memory_history(first, alice)] == [2, 1]


def test_another_agents_shared_memory_is_never_rewritten(
    store: Store, agents: tuple[int, int]
) -> None:
    """Issue 32 item 6: bob's writes never touch alice's shared memory or its history. The same
    fact in bob's words is bob's own memory, pointing at the shared one; the exact text adds
    nothing (bob sees it already)."""
    alice, bob = agents
    base = vec("office")
    shared = put(store, alice, "The office opens at nine.", base, scope=Scope.SHARED)
    [own] = _insert(store, _write(bob, "the office opens at nine!", with_cosine(base, 0.96, "b")))
    assert not own.duplicate and own.memory.agent_id == bob
    assert own.memory.content == "the office opens at nine!"
    assert [m.id for m in own.similar] == [shared]
    [same] = _insert(store, _write(bob, "The office opens at nine.", with_cosine(base, 0.99, "c")))
    assert (same.duplicate, same.reworded, same.memory.id) == (True, False, shared)
    for _ in range(3):  # also as a shared write, and through the text key at similarity 1
        _insert(store, _write(bob, "THE OFFICE OPENS AT NINE", base, scope=Scope.SHARED))
    assert store.get_memory(shared, alice).content == "The office opens at nine."
    assert _history(store, shared, PERSON) == [(1, "The office opens at nine.", Operation.CREATE)]
    [automatic] = _insert(
        store,
        _write(
            alice,
            "The office opens at nine",
            with_cosine(base, 0.95, "m"),
            source=Source.AUTOMATIC,
            scope=Scope.SHARED,
        ),
    )
    assert automatic.reworded and automatic.memory.id == shared  # its owner may reword it
    [newest, _] = store.memory_history(shared, alice)
    assert (newest.changed_by, newest.agent_id, newest.operation) == (
        Actor.MAINTENANCE,
        alice,
        Operation.REWORD,
    )


def test_a_reword_never_crosses_scopes(store: Store, agents: tuple[int, int]) -> None:
    """A private write never rewords the writer's shared memory (its text would be published),
    nor a shared write a private one (it would stay unshared): each gets a memory of its
    scope. A private exact repeat of one's shared text adds nothing: it is visible already."""
    alice, _ = agents
    base = vec("scopes")
    shared = put(store, alice, "Deploys happen on Fridays.", base, scope=Scope.SHARED)
    [private] = _insert(store, _write(alice, "deploys happen on Fridays!", base))
    assert not private.duplicate and private.memory.scope is Scope.PRIVATE
    assert store.get_memory(shared, alice).content == "Deploys happen on Fridays."
    [repeat] = _insert(store, _write(alice, "Deploys happen on Fridays.", base))
    assert repeat.duplicate and repeat.memory.id == shared
    [published] = _insert(
        store, _write(alice, "deploys happen on Fridays!", base, scope=Scope.SHARED)
    )
    assert (published.duplicate, published.reworded, published.memory.id) == (True, True, shared)
    mine = put(store, alice, "Lunch is at noon.", vec("lunch"))
    [lunch] = _insert(store, _write(alice, "Lunch is at noon.", vec("lunch"), scope=Scope.SHARED))
    assert not lunch.duplicate and lunch.memory.scope is Scope.SHARED and lunch.memory.id != mine


def test_the_later_dated_statement_is_current(store: Store, agents: tuple[int, int]) -> None:
    """Dated writes (an import, bootstrap, ``created_at``): an older statement of the fact is
    kept as a ``merge`` version, a newer one rewords the memory."""
    alice, _ = agents
    base = vec("dated")
    first = put(store, alice, "The boiler was serviced in May.", base, created_at=_day(2024))
    [older] = _insert(
        store, _write(alice, "the boiler was serviced in May", base, created_at=_day(2023))
    )
    assert (older.duplicate, older.reworded, older.merged_version) == (True, False, 2)
    assert older.memory.content == "The boiler was serviced in May."
    [newer] = _insert(
        store, _write(alice, "The boiler was serviced in may!", base, created_at=_day(2025))
    )
    assert (newer.duplicate, newer.reworded) == (True, True)
    assert store.get_memory(first, alice).content == "The boiler was serviced in may!"
    assert [v.operation for v in store.memory_history(first, alice)] == [
        Operation.REWORD,
        Operation.MERGE,
        Operation.CREATE,
    ]
    [undated] = _insert(store, _write(alice, "The boiler was serviced in MAY", base))
    assert undated.reworded  # now is later than any date a write may carry


def _day(year: int) -> str:
    return f"{year}-01-01T00:00:00.000000Z"


def test_a_batch_restatement_of_its_own_earlier_row_rewords_it(
    store: Store, agents: tuple[int, int]
) -> None:
    alice, _ = agents
    base = vec("cats")
    first, second, third = _insert(
        store,
        _write(alice, "The user owns two cats.", base),
        _write(alice, "the user owns two cats!", with_cosine(base, 0.96, "b")),
        _write(alice, "the user owns two cats!", with_cosine(base, 0.97, "c")),
    )
    assert second.reworded and second.memory.id == first.memory.id
    assert (third.duplicate, third.reworded, third.memory.id) == (True, False, first.memory.id)
    assert store.get_memory(first.memory.id, alice).content == "the user owns two cats!"
    assert _history(store, first.memory.id, alice)[0] == (
        2,
        "the user owns two cats!",
        Operation.REWORD,
    )


def test_rewords_follow_the_history_limit(store: Store, agents: tuple[int, int]) -> None:
    alice, _ = agents
    store.history_limit = 3  # type: ignore[attr-defined]  # both SQL stores
    base = vec("limit")
    first = put(store, alice, "Tea at five.", base)
    for mark in "!;:,":
        [merged] = _insert(store, _write(alice, f"tea at five{mark}", base))
        assert merged.reworded
    assert [v.version for v in store.memory_history(first, alice)] == [5, 4, 3]
    assert store.get_memory(first, alice).content == "tea at five,"


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


def test_fetched_memories_carry_their_newer_twin_when_asked(
    store: Store, agents: tuple[int, int]
) -> None:
    """``fetch_memories(..., newer=True)``: each record as ``newer_memories`` completes it."""
    alice, bob = agents
    base = vec("standup")
    old = put(store, alice, "Team standup is at 10am", base, scope=Scope.SHARED)
    [new] = _insert(store, _write(bob, "Team standup is at 11am", with_cosine(base, 0.99, "n")))
    other = put(store, alice, "Lunch is at noon", vec("lunch"))
    ids = [old, new.memory.id, other]
    for viewer in (alice, bob):
        plain = store.fetch_memories(viewer, ids)
        later = store.newer_memories(viewer, ids)
        wanted = {i: dataclasses.replace(m, newer=later.get(i)) for i, m in plain.items()}
        assert store.fetch_memories(viewer, ids, newer=True) == wanted
    assert store.fetch_memories(bob, [old], newer=True)[old].newer.id == new.memory.id  # type: ignore[union-attr]
    assert store.fetch_memories(alice, [old], newer=True)[old].newer is None  # bob's is private
    assert store.fetch_memories(alice, [], newer=True) == {}


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
    assert again.reworded and again.memory.id == euros.memory.id  # "€40" is "40 EUR"
    [plain] = _insert(
        store, MemoryWrite(NewMemory(alice, "40 is the budget", Category.FACT), vec("b"), key)
    )
    assert not plain.duplicate
