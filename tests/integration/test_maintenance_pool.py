"""The maintenance call's known memories: the agent's own, however many others share.

The rule (``MaintenanceService._own_memories``): the pool the index is chosen from is the agent's
own newest memories, private and shared; other agents' shared memories never take a place in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, Settings
from hivekeep.core.maintenance import MAX_KNOWN_MEMORIES
from hivekeep.services.maintenance import KNOWN_POOL
from hivekeep.store.base import NewMemory
from hivekeep.testing import ScriptedLLM
from hivekeep.types import Category, Scope
from tests.support import VectorTable

from .conversation_support import add_turns, maintenance_reply

OWN = 100
SHARED_BY_OTHERS = 10 * OWN


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=16_000)


@pytest.fixture
def hive(db_path: Path, llm: ScriptedLLM) -> Iterator[Hive]:
    with Hive(db_path, embedder=VectorTable(), settings=Settings(), llm=llm) as opened:
        yield opened


def _day(i: int, month: int) -> str:
    return f"2024-{month:02d}-{i % 28 + 1:02d}T{i % 24:02d}:{i % 60:02d}:00.000000Z"


def test_shared_memories_ten_to_one_leave_the_agents_own_in_the_prompt(
    hive: Hive, llm: ScriptedLLM
) -> None:
    sam, bob = hive.create_agent("sam"), hive.create_agent("bob")
    own = [
        NewMemory(
            agent_id=sam.id,
            content=f"Sam's note {i}: locker {i} holds box {i * 7}",
            category=Category.FACT,
            scope=Scope.SHARED if i % 2 else Scope.PRIVATE,
            created_at=_day(i, 1),  # older than everything bob shares
        )
        for i in range(OWN)
    ]
    shared = [
        NewMemory(
            agent_id=bob.id,
            content=f"Bob's shared note {i}: shelf {i} holds crate {i * 3}",
            category=Category.FACT,
            scope=Scope.SHARED,
            created_at=_day(i, 5),
        )
        for i in range(SHARED_BY_OTHERS)
    ]
    assert SHARED_BY_OTHERS >= KNOWN_POOL  # enough to fill a pool drawn from everything visible
    assert not any(r.duplicate for r in hive._services.archive.memorize_many(own + shared))

    conversation = sam.start_conversation().id
    add_turns(hive, conversation, 6, start="2024-06-02T10:00")
    llm.enqueue("Sam sorted the lockers.", maintenance_reply())
    sam.compact(conversation)

    prompt = next(c for c in llm.calls if c.call_site == "maintenance").text
    listed = [m.content for m in own if m.content in prompt]
    assert len(listed) == min(OWN, MAX_KNOWN_MEMORIES)  # every one of sam's own, private and shared
    assert "Bob's shared note" not in prompt  # others' shared memories take no place
