"""History, restore, trash and purge through REST (in-process) and the CLI: the same names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hivekeep import Hive, Settings
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server import create_app


@pytest.fixture
def client(hive: Hive) -> Iterator[TestClient]:
    with TestClient(create_app(hive), base_url="http://127.0.0.1") as opened:
        yield opened


def test_rest_memory_history_restore_trash_and_purge(hive: Hive, client: TestClient) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize("Standup is at 10am", category="fact").memory
    path = f"/api/agents/alice/memories/{memory.id}"
    assert client.patch(path, json={"content": "Standup is at 11am"}).status_code == 200
    history = client.get(f"{path}/history").json()
    assert [(v["version"], v["operation"], v["changed_by"]) for v in history] == [
        (2, "update", "person"),
        (1, "create", "agent"),
    ]
    assert client.delete(path).status_code == 204
    trash = client.get("/api/agents/alice/trash").json()
    assert [m["id"] for m in trash["memories"]] == [memory.id] and trash["total"] == 1
    assert trash["memories"][0]["deleted_by"] == "person"
    assert client.get(path).status_code == 404
    restored = client.post(f"{path}/restore", json={})
    assert restored.status_code == 200 and restored.json()["content"] == "Standup is at 11am"
    again = client.post(f"{path}/restore", json={"version": 1}).json()
    assert again["content"] == "Standup is at 10am"
    assert client.post(f"{path}/restore", json={"version": 99}).status_code == 404
    assert client.delete(f"{path}?purge=true").status_code == 204
    assert client.get(f"{path}/history").status_code == 404


def test_rest_create_is_recorded_as_the_persons(hive: Hive, client: TestClient) -> None:
    """The REST create route acts for a person (the UI's form): its history says so, while the
    agent's own writes stay "by agent", and a duplicate adds no version."""
    agent = hive.create_agent("alice")
    tea = {"content": "Ann drinks green tea", "category": "preference"}
    typed = client.post("/api/agents/alice/memories", json=tea)
    assert typed.status_code == 201
    path = f"/api/agents/alice/memories/{typed.json()['memory']['id']}"
    assert client.post("/api/agents/alice/memories", json=tea)
    assert client.patch(path, json={"content": "Ann drinks black tea"}).status_code == 200
    history = client.get(f"{path}/history").json()
    assert [(v["version"], v["operation"], v["changed_by"]) for v in history] == [
        (2, "update", "person"),
        (1, "create", "person"),
    ]
    own = agent.memorize("Standup is at 10am", category="fact").memory
    assert [v["changed_by"] for v in agent.memory_history(own.id)] == ["agent"]


def test_rest_purge_is_owner_only(hive: Hive, client: TestClient) -> None:
    alice, bob = hive.create_agent("alice"), hive.create_agent("bob")
    shared = alice.memorize("Team offsite in May", category="fact", scope="shared").memory
    bob.memorize("bob's own", category="fact")
    assert client.delete(f"/api/agents/bob/memories/{shared.id}?purge=true").status_code == 404
    assert client.delete(f"/api/memories/{shared.id}?purge=true").status_code == 204
    assert client.get(f"/api/agents/alice/memories/{shared.id}").status_code == 404


def test_rest_profile_history_and_restore(hive: Hive, client: TestClient) -> None:
    hive.create_agent("alice")
    client.put("/api/agents/alice/profile", json={"text": "## Health\n- allergic to peanuts\n"})
    client.put("/api/agents/alice/profile", json={"text": "## Health\n- nothing\n"})
    history = client.get("/api/agents/alice/profile/history").json()
    assert [v["version"] for v in history] == [2, 1, 0]
    restored = client.post("/api/agents/alice/profile/restore", json={"version": 1})
    assert restored.status_code == 200 and "peanuts" in restored.json()["text"]
    assert client.post("/api/agents/alice/profile/restore", json={}).status_code == 422
    newest = client.get("/api/agents/alice/profile/history").json()[0]
    assert (newest["operation"], newest["changed_by"]) == ("restore", "person")


def _run(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_history_restore_trash_and_purge(db_path: Path, local_embedder: LocalEmbedder) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        memory = agent.memorize("Tea at five", category="fact").memory
        agent.update_memory(memory.id, content="Tea at six")
        agent.forget(memory.id)
        agent.set_profile("## Likes\n- tea\n")
    versions = json.loads(_run(db_path, "history", "--agent", "alice", str(memory.id), "--json"))
    assert [v["operation"] for v in versions] == ["forget", "update", "create"]
    assert "Tea at six" in _run(db_path, "trash", "--agent", "alice")
    assert "Tea at five" in _run(
        db_path, "restore", "--agent", "alice", str(memory.id), "--version", "1"
    )
    assert "The trash is empty." in _run(db_path, "trash", "--agent", "alice")
    profile = json.loads(_run(db_path, "history", "--agent", "alice", "--json"))
    assert [v["version"] for v in profile] == [1, 0]
    _run(db_path, "restore", "--agent", "alice", "--profile", "--version", "0")
    assert "Memory" in _run(db_path, "purge", str(memory.id), "--yes")
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        assert hive.get_agent("alice").profile_text() == ""
        assert hive.get_agent("alice").list_memories().total == 0


def test_cli_export_history_carries_versions_and_trash_into_an_import(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    source, copy, backup = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "backup.jsonl"
    with Hive(source, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        memory = agent.memorize("Tea at five", category="fact").memory
        agent.update_memory(memory.id, content="Tea at six")
        gone = agent.memorize("The spare key is under the mat", category="fact").memory
        agent.forget(gone.id)
        agent.set_profile("## Likes\n- tea\n")
        want = agent.memory_history(memory.id), agent.profile_history()
    assert "1 memory in the trash" in _run(source, "export", "--history", "-o", str(backup))
    assert "Trash: 1 imported, 0 already there." in _run(copy, "import", str(backup))
    assert "Trash: 0 imported, 1 already there." in _run(copy, "import", str(backup))
    with Hive(copy, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.get_agent("alice")
        [live] = agent.list_memories().memories
        assert (agent.memory_history(live.id), agent.profile_history()) == want
        [trashed] = agent.trash().memories
        assert trashed.memory.content == "The spare key is under the mat"
        assert [v["operation"] for v in agent.memory_history(trashed.memory.id)] == [
            "forget",
            "create",
        ]
        agent.restore_memory(trashed.memory.id)  # back from the trash, found again
        assert agent.recall("spare key").hits


def test_an_import_without_history_writes_version_one_as_the_import(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    backup = tmp_path / "plain.jsonl"
    with Hive(tmp_path / "a.db", embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("alice").memorize("Tea at five", category="fact")
        hive.create_agent("bob").set_profile("## Likes\n- coffee\n")
    _run(tmp_path / "a.db", "export", "-o", str(backup))
    with Hive(tmp_path / "b.db", embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("bob").set_profile("## Likes\n- water\n")
    _run(tmp_path / "b.db", "import", str(backup), "--replace-profiles")
    with Hive(tmp_path / "b.db", embedder=local_embedder, settings=Settings()) as hive:
        alice = hive.get_agent("alice")
        [memory] = alice.list_memories().memories
        [first] = alice.memory_history(memory.id)
        assert (first["version"], first["changed_by"], first["operation"]) == (
            1,
            "import",
            "create",
        )
        alice.update_memory(memory.id, content="Tea at six")
        assert [v["changed_by"] for v in alice.memory_history(memory.id)] == ["agent", "import"]
        newest, before = hive.get_agent("bob").profile_history()[:2]
        assert (newest["changed_by"], newest["operation"], "coffee" in newest["text"]) == (
            "import",
            "import",
            True,
        )
        assert "water" in before["text"]  # what the import replaced stays in the history
