"""Issue 25, item 6 and the last sentence of item 5: a restore is judged like a write.

What a restore makes live (a trashed memory, or an old version) passes the write path's duplicate
rule (refused, naming the live copy, rather than making two), the live limits of its fields, and
for a profile the token budget, its tokens counted anew. A refused restore changes nothing.
"""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from hivekeep import Agent, Hive
from hivekeep.core.text import now_timestamp
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import BudgetError, ConflictError, ValidationError
from hivekeep.server import create_app
from hivekeep.store.base import MemoryVersion, NewMemory, ProfileVersion
from hivekeep.types import Actor, Category, Operation, Scope


def _live(agent: Agent) -> list[str]:
    return sorted(m.content for m in agent.list_memories().memories)


def test_restoring_from_the_trash_a_text_known_again_is_refused(backend_hive: Hive) -> None:
    alice = backend_hive.create_agent("alice")
    first = alice.memorize("The office wifi password is on the fridge", category="fact").memory
    alice.forget(first.id)
    again = alice.memorize("The office wifi password is on the fridge", category="fact")
    assert not again.duplicate  # a trashed memory is no duplicate of a new write
    with pytest.raises(ConflictError, match=f"already known as #{again.memory.id}"):
        alice.restore_memory(first.id)
    assert [t.memory.id for t in alice.trash().memories] == [first.id]  # nothing lost
    assert _live(alice) == ["The office wifi password is on the fridge"]  # one live copy


def test_restoring_a_version_that_repeats_another_memory_is_refused(backend_hive: Hive) -> None:
    alice, bob = backend_hive.create_agent("alice"), backend_hive.create_agent("bob")
    memory = alice.memorize("The team standup is at 9am every weekday", category="fact").memory
    alice.update_memory(memory.id, content="The team standup is at 11am every weekday")
    shared = bob.memorize(
        "The team standup is at 9am every weekday", category="fact", scope="shared"
    )
    with pytest.raises(ConflictError, match=f"already known as #{shared.memory.id}"):
        alice.restore_memory(memory.id, version=1)  # the same text
    assert alice.memory(memory.id).content == "The team standup is at 11am every weekday"
    assert [v["version"] for v in alice.memory_history(memory.id)] == [2, 1]
    # a near-twin in bob's words: never rewritten by alice, so a write of the text is hers
    bob.update_memory(shared.memory.id, content="Team standup is at 9am every weekday.")
    twin = alice.memorize("The team standup is at 9am every weekday", category="fact")
    assert not twin.duplicate and shared.memory.id in [m.id for m in twin.similar]
    with pytest.raises(ConflictError, match=f"already known as #{twin.memory.id}"):
        alice.restore_memory(memory.id, version=1)  # judged as that write: her own copy
    alice.forget(twin.memory.id)
    restored = alice.restore_memory(memory.id, version=1)  # bob's near-twin is no copy of hers
    assert restored.content == "The team standup is at 9am every weekday"
    assert memory.id in [h.memory.id for h in alice.recall("standup at 9am").hits][:2]


def _version(memory_id: int, version: int, **fields: object) -> MemoryVersion:
    base = MemoryVersion(
        memory_id=memory_id,
        version=version,
        content="Tea at five",
        category=Category.FACT,
        subject=None,
        importance=None,
        scope=Scope.PRIVATE,
        changed_at=now_timestamp(),
        changed_by=Actor.IMPORT,
        operation=Operation.CREATE if version == 1 else Operation.UPDATE,
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [("subject", "x" * 100_000), ("content", "y" * 2001), ("importance", 11)],
)
def test_a_version_past_the_live_limits_is_not_made_live(
    backend_hive: Hive, field: str, value: object
) -> None:
    alice = backend_hive.create_agent("alice")
    memory = alice.memorize("Tea at five", category="fact").memory
    planted = _version(memory.id, 1, **{"content": "Tea at four", field: value})  # as an import can
    backend_hive.store.put_memory_versions(memory.id, [planted, _version(memory.id, 2)])
    with pytest.raises(ValidationError, match=field) as refused:
        alice.restore_memory(memory.id, version=1)
    assert refused.value.field == field
    assert alice.memory(memory.id).content == "Tea at five"
    assert [v["version"] for v in alice.memory_history(memory.id)] == [2, 1]


def test_a_trashed_memory_past_the_live_limits_stays_in_the_trash(backend_hive: Hive) -> None:
    alice = backend_hive.create_agent("alice")
    planted = NewMemory(
        agent_id=alice.id,
        content="Tea at four",
        category=Category.FACT,
        subject="s" * 100_000,
    )
    memory_id = backend_hive.store.put_trashed_memory(
        planted, None, deleted_at=now_timestamp(), deleted_by=Actor.IMPORT
    )
    assert memory_id is not None
    with pytest.raises(ValidationError, match="subject"):
        alice.restore_memory(memory_id)
    assert [t.memory.id for t in alice.trash().memories] == [memory_id]
    assert _live(alice) == []


def test_a_profile_restore_is_held_to_the_budget_and_counts_its_tokens(
    backend_hive: Hive,
) -> None:
    alice = backend_hive.create_agent("alice")
    huge = "## Notes\n" + "".join(f"- fact number {i} about the user\n" for i in range(4000))
    small = "## Likes\n- tea\n- long walks\n"
    current = backend_hive.store.get_profile(alice.id)
    versions = [
        ProfileVersion(alice.id, 1, huge, 3, now_timestamp(), Actor.IMPORT, Operation.IMPORT),
        ProfileVersion(alice.id, 2, small, 999, now_timestamp(), Actor.IMPORT, Operation.IMPORT),
        ProfileVersion(
            alice.id, 3, "## Likes\n- tea\n", 4, now_timestamp(), Actor.IMPORT, Operation.IMPORT
        ),
    ]
    backend_hive.store.put_profile_history(
        dataclasses.replace(current, text="## Likes\n- tea\n", tokens=4, revision=3), versions
    )
    with pytest.raises(BudgetError, match="over the budget"):
        alice.restore_profile(1)
    assert alice.profile_text() == "## Likes\n- tea\n"
    restored = alice.restore_profile(2)
    assert restored.text == small and restored.tokens == count_tokens(small) != 999
    assert alice.profile_history()[0]["tokens"] == count_tokens(small)


def test_a_trashed_memory_imported_without_history_comes_back(backend_hive: Hive) -> None:
    alice = backend_hive.create_agent("alice")
    planted = NewMemory(agent_id=alice.id, content="Tea at four", category=Category.FACT)
    memory_id = backend_hive.store.put_trashed_memory(
        planted, None, deleted_at=now_timestamp(), deleted_by=Actor.IMPORT
    )
    assert memory_id is not None
    [forgotten] = alice.memory_history(memory_id)  # its state as forgotten comes first
    assert (forgotten["operation"], forgotten["content"]) == ("forget", "Tea at four")
    assert alice.restore_memory(memory_id).content == "Tea at four"
    assert _live(alice) == ["Tea at four"]


def test_rest_answers_a_refused_restore_with_409_naming_the_live_copy(backend_hive: Hive) -> None:
    alice = backend_hive.create_agent("alice")
    first = alice.memorize("Parking is on level 3", category="fact").memory
    alice.forget(first.id)
    again = alice.memorize("Parking is on level 3", category="fact").memory
    with TestClient(create_app(backend_hive), base_url="http://127.0.0.1") as client:
        refused = client.post(f"/api/agents/alice/memories/{first.id}/restore", json={})
    assert refused.status_code == 409
    assert f"already known as #{again.id}" in refused.json()["error"]["message"]
