"""Lossless transfer (a property): export -> import into an empty hive -> export carries the same
hive, on SQLite and on PostgreSQL.

Each example builds a random hive: agents with profiles, private and shared memories (random
categories, subjects, importance and creation times) and conversations, plus one author who wrote
private and shared memories and a conversation and was then deleted. Its shared memories must
survive both trips, still attributed to it and owned by no agent; its private ones must not.

With ``history`` (``export --history``), random updates, forgets, restores and profile edits come
on top, and every kept version of memories and profiles (who, when, operation) and the trash must
come back as they were.
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Hive, Settings
from hivekeep.store.conversations import NewMessage
from tests.postgres import hive_target
from tests.support import VectorTable

pytestmark = pytest.mark.slow

NAMES = ("ann", "ben", "cat")
DELETED = "dee"
WORDS = ("tea", "Lisbon", "invoice", "standup", "piano", "garden", "flight", "budget", "owl")
CATEGORIES = ("fact", "preference", "decision", "knowledge")
# what export -> import -> export must keep, per memory
MEMORY_FIELDS = (
    "content",
    "scope",
    "category",
    "subject",
    "author",
    "author_deleted",
    "importance",
    "created_at",
    "updated_at",
)

stamps = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2025, 12, 31)).map(
    lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
)

memories = st.lists(
    st.fixed_dictionaries(
        {
            "author": st.sampled_from((*NAMES, DELETED)),
            "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
            "scope": st.sampled_from(("private", "shared")),
            "category": st.sampled_from(CATEGORIES),
            "subject": st.none() | st.sampled_from(("user", "team", "Project X")),
            "importance": st.none() | st.integers(1, 10),
            "created_at": stamps,
        }
    ),
    min_size=1,
    max_size=12,
)
hives = st.fixed_dictionaries(
    {
        "agents": st.integers(1, len(NAMES)),
        "memories": memories,
        "profiles": st.lists(st.text(st.sampled_from("abc xyz\n#-"), max_size=40), min_size=3),
        "conversations": st.lists(
            st.tuples(st.sampled_from((*NAMES, DELETED)), st.integers(1, 3), stamps), max_size=4
        ),
    }
)


changes = st.lists(
    st.tuples(
        st.integers(0, 11),  # which memory (modulo the count)
        st.sampled_from(("update", "forget", "restore", "restore-version", "profile")),
        st.sampled_from(WORDS),
    ),
    max_size=10,
)


def change(hive: Hive, agents: dict[str, Any], steps: list[tuple[int, str, str]]) -> None:
    """Updates, forgets, restores (of the trash, of an older version) and profile edits."""
    written = [
        (agent, memory.id)
        for agent in agents.values()
        for memory in agent.list_memories(scope="private").memories
    ]
    for number, (pick, operation, word) in enumerate(steps):
        if not written:
            return
        agent, memory_id = written[pick % len(written)]
        history = agent.memory_history(memory_id)
        trashed = history[0]["operation"] == "forget"
        if operation == "profile":
            agent.set_profile(f"{word} profile {number}")
        elif operation == "update" and not trashed:
            agent.update_memory(memory_id, content=f"{word} changed {number} of {memory_id}")
        elif operation == "forget" and not trashed:
            agent.forget(memory_id)
        elif operation == "restore" and trashed:
            agent.restore_memory(memory_id)
        elif operation == "restore-version" and not trashed and len(history) > 1:
            agent.restore_memory(memory_id, version=history[-1]["version"])


def build(hive: Hive, spec: dict[str, Any]) -> None:
    names = [*NAMES[: spec["agents"]], DELETED]
    agents = {name: hive.create_agent(name, role=f"{name}'s role") for name in names}
    for name, text in zip(names, spec["profiles"], strict=False):
        if text.strip():
            agents[name].set_profile(text)
    for number, memory in enumerate(spec["memories"]):
        author = memory["author"] if memory["author"] in agents else names[0]
        [written] = agents[author].memorize_many(
            [
                {
                    # a number of its own: no two memories are duplicates of each other
                    "content": f"{' '.join(memory['words'])} note {number}",
                    "category": memory["category"],
                    "subject": memory["subject"],
                    "importance": memory["importance"],
                    "scope": memory["scope"],
                    "created_at": memory["created_at"],
                }
            ]
        )
        assert not written.duplicate
    for number, (name, count, stamp) in enumerate(spec["conversations"]):
        agent = agents[name if name in agents else names[0]]
        conversation = agent.start_conversation(f"talk {number}")
        hive.store.add_messages(
            conversation.id,
            [
                NewMessage(
                    role="user" if i % 2 == 0 else "assistant",
                    content=f"message {i} of talk {number}",
                    tokens=5,
                    created_at=stamp,
                )
                for i in range(count)
            ],
        )
    agents[DELETED].memorize_many(  # the deleted author always leaves one of each behind
        [
            {"content": "dee's shared parting note", "category": "fact", "scope": "shared"},
            {"content": "dee's private parting note", "category": "fact"},
        ]
    )
    if "changes" in spec:
        change(hive, agents, spec["changes"])
        # the deleted author's trashed shared memory stays in the trash, ownerless
        forgotten = agents[DELETED].memorize(
            "dee's shared note, forgotten", category="fact", scope="shared"
        )
        agents[DELETED].update_memory(forgotten.memory.id, content="dee's shared note, changed")
        agents[DELETED].forget(forgotten.memory.id)
    hive.delete_agent(DELETED)


def export_lines(hive: Hive, path: Path, *, history: bool = False) -> list[dict[str, Any]]:
    with path.open("w", encoding="utf-8") as out:
        hive.export(out, history=history)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def content(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """What must survive, free of ids and export keys (which differ between hives)."""
    by_type: dict[str, list[Any]] = {}
    conversations: dict[str, tuple[str, str, str]] = {}
    for line in lines:
        kind = line["type"]
        history = tuple(tuple(sorted(v.items())) for v in line.get("history") or ())
        if kind in ("memory", "trashed"):
            item: Any = (*(line.get(name, False) for name in MEMORY_FIELDS), history)
            if kind == "trashed":
                item += (line["deleted_at"], line["deleted_by"])
        elif kind == "agent":
            item = (line["name"], line["role"])
        elif kind == "profile":
            item = (line["agent"], line["text"], history)
            if history:  # put back as it was, revision and stamps included
                item += (line["revision"], line["updated_at"], line["manually_edited_at"])
        elif kind == "conversation":
            conversations[line["key"]] = (line["agent"], line["title"], line["created_at"])
            item = conversations[line["key"]]
        elif kind == "message":
            conversation = conversations[line["conversation"]]
            item = (conversation, line["role"], line["content"], line["created_at"])
        else:
            continue
        by_type.setdefault(kind, []).append(item)
    return {kind: sorted(items, key=repr) for kind, items in by_type.items()}


def round_trip(backend: str, spec: dict[str, Any], *, history: bool = False) -> None:
    table = VectorTable()
    with tempfile.TemporaryDirectory() as folder:
        first, second = Path(folder) / "first.jsonl", Path(folder) / "second.jsonl"
        with (
            hive_target(backend) as target,
            Hive(target, embedder=table, settings=Settings()) as source,
        ):
            build(source, spec)
            want = content(export_lines(source, first, history=history))
        with (
            hive_target(backend) as target,
            Hive(target, embedder=table, settings=Settings()) as copy,
        ):
            copy.import_(first)
            got = content(export_lines(copy, second, history=history))
            if history:
                assert "dee's shared note, changed" in [m[0] for m in want["trashed"]]
                assert copy.trash()  # a person sees the deleted author's trashed shared note
            kept = [
                m for m in want.get("memory", []) if m[MEMORY_FIELDS.index("author")] == DELETED
            ]
            assert "dee's shared parting note" in [m[0] for m in kept]
            assert "dee's private parting note" not in [m[0] for m in want["memory"]]
            assert all(m[MEMORY_FIELDS.index("scope")] == "shared" for m in kept)
            assert all(m[MEMORY_FIELDS.index("author_deleted")] is True for m in kept)
            orphans = [
                m
                for m in copy.agents()[0].list_memories(scope="shared").memories
                if m.author_deleted
            ]
            assert sorted(m.content for m in orphans) == sorted(m[0] for m in kept)
    assert DELETED not in [agent for agent, _ in want["agent"]]
    assert got == want


@pytest.mark.parametrize(("backend", "examples"), [("sqlite", 25), ("postgres", 10)])
def test_export_import_export_keeps_everything(backend: str, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(spec=hives)
    def check(spec: dict[str, Any]) -> None:
        round_trip(backend, spec)

    check()


@pytest.mark.parametrize(("backend", "examples"), [("sqlite", 20), ("postgres", 8)])
def test_export_history_import_export_keeps_history_and_trash(backend: str, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(spec=hives, steps=changes)
    def check(spec: dict[str, Any], steps: list[tuple[int, str, str]]) -> None:
        round_trip(backend, {**spec, "changes": steps}, history=True)

    check()


def test_a_deleted_authors_shared_memories_survive_a_round_trip(tmp_path: Path) -> None:
    """The plain case, spelled out: kept, attributed, ownerless, and not taken by a namesake."""
    table = VectorTable()
    with Hive(tmp_path / "a.db", embedder=table, settings=Settings()) as source:
        dee = source.create_agent(DELETED)
        source.create_agent("ann")
        dee.memorize("Dee's shared note on the budget", category="fact", scope="shared")
        dee.memorize("Dee's private note on the budget", category="fact")
        source.delete_agent(DELETED)
        source.create_agent(DELETED)  # a namesake, created later, owns nothing of the old one
        export_lines(source, tmp_path / "a.jsonl")
    with Hive(tmp_path / "b.db", embedder=table, settings=Settings()) as copy:
        report = copy.import_(tmp_path / "a.jsonl")
        assert report.memories_imported == 1
        [kept] = copy.get_agent("ann").list_memories().memories
        assert (kept.content, kept.author_name, kept.author_deleted) == (
            "Dee's shared note on the budget",
            DELETED,
            True,
        )
        namesake = copy.get_agent(DELETED)
        assert namesake.list_memories(scope="private").memories == []
        again = copy.import_(tmp_path / "a.jsonl")  # idempotent: deduplicated against itself
        assert (again.memories_imported, again.memories_duplicate) == (0, 1)
