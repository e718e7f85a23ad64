"""Issues 24 and 33 through every interface, with the bundled model: a restatement of the writer's
own memory becomes its text (the previous one kept in its history, restorable), another agent's
shared memory is never rewritten, and an old fact read back points at the newer near-twin that
followed it (tool, REST, MCP, CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client

from hivekeep import Hive, Settings
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server import create_app
from tests.integration.test_mcp import over_stdio

OLD = "Team standup is at 10am on Tuesdays"
NEW = "Team standup moved to 11am on Tuesdays"
RESTATED = "team standup is at 10am on tuesdays!"


def _standups(hive: Hive) -> tuple[int, int]:
    """Alice's shared old fact, and bob's private newer one (which lists it as similar)."""
    alice, bob = hive.create_agent("alice"), hive.create_agent("bob")
    old = alice.memorize(OLD, category="fact", scope="shared")
    new = bob.memorize(NEW, category="fact")
    assert not new.duplicate and [m.id for m in new.similar] == [old.memory.id]
    return old.memory.id, new.memory.id


def test_recall_points_an_old_fact_at_the_newer_one(hive: Hive) -> None:
    old, new = _standups(hive)
    bob, alice = hive.get_agent("bob"), hive.get_agent("alice")
    hits = {h["id"]: h for h in bob.call_tool("recall", {"query": "standup"})["memories"]}
    assert set(hits) == {old, new}
    assert hits[old]["newer"] == {
        "id": new,
        "content": NEW,
        "created_at": bob.memory(new).created_at,
    }
    assert "newer" not in hits[new]
    # alice cannot see bob's private memory: no pointer to it
    [seen] = alice.call_tool("recall", {"query": "standup"})["memories"]
    assert seen["id"] == old and "newer" not in seen
    assert bob.memory(old).newer is not None and alice.memory(old).newer is None
    listed = {m.id: m for m in bob.list_memories().memories}
    newer = listed[old].newer
    assert newer is not None and newer.id == new
    bob.forget(new)  # a forgotten newer memory is no pointer
    assert bob.memory(old).newer is None


def test_a_restatement_rewords_the_memory_and_undo_restores_it(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    first = agent.call_tool("memorize", {"content": OLD, "category": "fact"})
    again = agent.call_tool("memorize", {"content": RESTATED, "category": "fact"})
    assert again["duplicate"] is True and again["id"] == first["id"]
    assert again["reworded"] is True and again["content"] == RESTATED
    assert "merged_as_version" not in again and "previous text" in again["note"]
    [reword, create] = agent.memory_history(first["id"])
    assert (reword["operation"], reword["content"], reword["changed_by"]) == (
        "reword",
        RESTATED,
        "agent",
    )
    assert create["content"] == OLD
    restored = agent.restore_memory(first["id"], version=1)
    assert restored.content == OLD  # a wrong merge undone
    repeat = agent.call_tool("memorize", {"content": OLD, "category": "fact"})
    assert repeat["duplicate"] is True and "reworded" not in repeat  # its text already
    # a dated write older than the memory's text is kept as a version, restorable
    [older] = agent.memorize_many(
        [{"content": RESTATED, "category": "fact", "created_at": "2020-01-01"}]
    )
    assert (older.duplicate, older.reworded) == (True, False)
    assert older.merged_version is not None and agent.memory(first["id"]).content == OLD
    assert agent.restore_memory(first["id"], version=older.merged_version).content == RESTATED


def test_rest_shows_the_merge_and_the_newer_fact(hive: Hive) -> None:
    old, new = _standups(hive)
    with TestClient(create_app(hive), base_url="http://127.0.0.1") as client:
        written = client.post(
            "/api/agents/alice/memories",
            json={"content": RESTATED, "category": "fact", "scope": "shared"},
        )
        found = client.get("/api/agents/bob/memories", params={"query": "standup"})
        one = client.get(f"/api/agents/bob/memories/{old}")
        listed = client.get("/api/agents/bob/memories")
    assert written.status_code == 200, written.text
    body = written.json()
    assert body["duplicate"] is True and body["memory"]["id"] == old
    assert body["reworded"] is True and body["memory"]["content"] == RESTATED
    assert "merged_as_version" not in body
    hits = {m["id"]: m for m in found.json()["memories"]}
    assert hits[old]["newer"]["id"] == new and hits[old]["newer"]["content"] == NEW
    assert "newer" not in hits[new]
    assert one.json()["newer"]["id"] == new
    assert {m["id"]: m.get("newer", {}).get("id") for m in listed.json()["memories"]} == {
        old: new,
        new: None,
    }


def test_cli_recall_and_memorize_show_them(db_path: Path, local_embedder: LocalEmbedder) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        old, new = _standups(hive)
        created = hive.get_agent("bob").memory(new).created_at[:10]
    runner = CliRunner()
    found = runner.invoke(cli, ["--db", str(db_path), "recall", "--agent", "bob", "standup"])
    assert found.exit_code == 0, found.output
    assert f"  ↳ newer: #{new} ({created}) {NEW}" in found.output
    assert found.output.count("↳ newer") == 1
    args = ["memorize", "--agent", "alice", RESTATED, "--category", "fact", "--scope", "shared"]
    merged = runner.invoke(cli, ["--db", str(db_path), *args])
    assert merged.exit_code == 0, merged.output
    assert f"Reworded memory {old}: the same fact, now in your words" in merged.output
    assert f"hivekeep history --agent alice {old}" in merged.output
    repeat = runner.invoke(cli, ["--db", str(db_path), *args])
    assert f"Already known as memory {old} (duplicate)." in repeat.output


def test_mcp_tools_show_them(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    db = tmp_path / "hive.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        old, new = _standups(hive)
        hive.create_agent("assistant")  # the agent test_mcp's server runs as

    async def scenario(client: Client) -> list[dict[str, Any]]:
        again = await client.call_tool("memorize", {"content": RESTATED, "category": "fact"})
        before = await client.call_tool("recall", {"query": "standup"})
        reworded = await client.call_tool("memorize", {"content": OLD + ".", "category": "fact"})
        return [r.structured_content or {} for r in (again, before, reworded)]

    again, before, reworded = over_stdio(db, scenario)
    # alice's shared memory is never rewritten by this agent: its words are its own memory
    assert again["duplicate"] is False and again["content"] == RESTATED
    assert [m["id"] for m in again["similar"]] == [old]
    hits = {m["id"]: m for m in before["memories"]}
    assert hits[old]["newer"]["id"] == again["id"]  # bob's newer memory is private
    assert hits[old]["newer"]["content"] == RESTATED and "newer" not in hits[again["id"]]
    assert reworded["reworded"] is True and reworded["id"] == again["id"]
    assert reworded["content"] == OLD + "." and new not in hits
