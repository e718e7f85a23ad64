"""Writes publish events on the hive's bus (the server streams them; tests collect them)."""

from __future__ import annotations

from hivekeep import Hive
from hivekeep.events import Event


def test_memory_and_profile_writes_publish_events(table_hive: Hive) -> None:
    seen: list[Event] = []
    table_hive.events.subscribe(seen.append)
    agent = table_hive.create_agent("alice")
    assert [(e.type, e.agent_id) for e in seen] == [("agent:created", agent.id)]
    seen.clear()
    created = agent.memorize("Likes rock climbing", category="preference").memory
    agent.memorize("Likes  rock climbing", category="preference")  # exact repeat: no event
    agent.memorize("likes rock climbing", category="preference")  # reworded: an update
    agent.update_memory(created.id, importance=6)
    agent.forget(created.id)
    agent.edit_profile("User", "append", "Climbs on weekends")
    agent.set_profile("## User\n- Climbs on Sundays\n")
    assert [(e.type, e.agent_id) for e in seen] == [
        ("memory:created", agent.id),
        ("memory:updated", agent.id),
        ("memory:updated", agent.id),
        ("memory:deleted", agent.id),
        ("profile:updated", agent.id),
        ("profile:updated", agent.id),
    ]
    assert seen[0].data == {"memory_id": created.id, "scope": "private"}
    assert seen[1].data == {"memory_id": created.id, "scope": "private"}
    assert [e.data["source"] for e in seen[4:]] == ["edit_profile", "user"]
    assert seen[5].data["revision"] == 2


def test_failed_writes_publish_nothing(table_hive: Hive) -> None:
    seen: list[Event] = []
    table_hive.events.subscribe(seen.append)
    alice, bob = table_hive.create_agent("alice"), table_hive.create_agent("bob")
    memory_id = alice.memorize("Private note", category="fact").memory.id
    seen.clear()
    assert "error" in bob.call_tool("forget", {"memory_id": memory_id})
    assert "error" in bob.call_tool(
        "edit_profile", {"section": "X", "operation": "remove_line", "content": "absent"}
    )
    assert seen == []
