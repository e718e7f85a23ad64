"""Credentials never become memories: every write path applies the agent's policy (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hivekeep import Agent, Hive, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server import create_app
from hivekeep.testing import ScriptedLLM

from .conversation_support import add_turns, maintenance_reply, own_memories
from .import_lines import AGENT, HEADER, STAMP, write

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
SAID = f"The deploy token for the staging cluster is {TOKEN}"
KEPT = "The deploy token for the staging cluster is [redacted GitHub token]"


@pytest.fixture
def hive(scripted_hive: Hive) -> Hive:
    return scripted_hive


@pytest.fixture
def sam(hive: Hive) -> Agent:
    return hive.create_agent("sam")


def everything_stored(agent: Agent) -> str:
    """Every text the hive keeps for ``agent``: memories, their versions, the profile's."""
    texts = [m.content for m in agent.list_memories(limit=200).memories]
    for memory in agent.list_memories(limit=200).memories:
        texts += [v["content"] for v in agent.memory_history(memory.id)]
    texts += [v["text"] for v in agent.profile_history()]
    return "\n".join(texts)


def test_redact_is_the_default_and_the_answer_says_what_was_redacted(sam: Agent) -> None:
    answer = sam.call_tool("memorize", {"content": SAID, "category": "fact", "scope": "shared"})
    assert answer["content"] == KEPT and answer["redacted"] == ["GitHub token"]
    assert [m.content for m in sam.list_memories().memories] == [KEPT]
    assert TOKEN not in everything_stored(sam)
    assert not sam.recall(TOKEN).hits or TOKEN not in sam.recall(TOKEN).hits[0].memory.content
    clean = sam.call_tool("memorize", {"content": "Ann likes green tea", "category": "preference"})
    assert "redacted" not in clean


def test_refuse_writes_nothing_and_says_why(hive: Hive, sam: Agent) -> None:
    sam.configure(secrets="refuse")
    answer = sam.call_tool("memorize", {"content": SAID, "category": "fact"})
    assert "GitHub token" in answer["error"] and "HIVEKEEP_SECRETS=refuse" in answer["error"]
    with pytest.raises(Exception, match="credential"):
        sam.memorize_many(
            [{"content": "fine", "category": "fact"}, {"content": SAID, "category": "fact"}]
        )
    assert own_memories(sam) == []  # the clean one of the batch was not written either
    assert "error" in sam.call_tool(
        "edit_profile", {"section": "Ops", "operation": "append", "content": SAID}
    )
    assert TOKEN not in sam.profile_text()


def test_allow_stores_as_written_and_the_hive_policy_is_the_default(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings(secrets="refuse")) as hive:
        strict, loose = hive.create_agent("strict"), hive.create_agent("loose")
        loose.configure(secrets="allow")
        assert strict.credential_policy() == "refuse" and loose.credential_policy() == "allow"
        assert "error" in strict.call_tool("memorize", {"content": SAID, "category": "fact"})
        assert loose.call_tool("memorize", {"content": SAID, "category": "fact"})["content"] == SAID
        loose.configure(secrets=None)  # back to the hive's
        assert loose.credential_policy() == "refuse"
    with pytest.raises(ValidationError, match="redact, refuse or allow"):
        Settings(secrets="maybe")


def test_update_and_profile_edits_are_screened(sam: Agent) -> None:
    memory = sam.memorize("The staging cluster has a deploy token", category="fact").memory
    updated = sam.call_tool("update_memory", {"memory_id": memory.id, "content": SAID})
    assert KEPT in json.dumps(updated) and TOKEN not in json.dumps(updated)
    sam.call_tool("edit_profile", {"section": "Ops", "operation": "append", "content": SAID})
    sam.set_profile(sam.profile_text() + f"\n## Keys\n- stripe sk_live_{'a' * 30}\n")
    text = sam.profile_text()
    assert KEPT in text and "[redacted Stripe access key]" in text
    assert TOKEN not in everything_stored(sam)


def test_the_maintenance_call_redacts_even_under_refuse(
    hive: Hive, sam: Agent, llm: ScriptedLLM
) -> None:
    """Nobody reads a refusal of the model's own output: its credential is redacted instead."""
    sam.configure(secrets="refuse")
    conversation = sam.start_conversation().id
    add_turns(hive, conversation, 6)
    archive = [{"op": "add", "content": SAID, "category": "fact"}]
    llm.enqueue("They set up staging.", maintenance_reply(archive, f"## Ops\n- token {TOKEN}\n"))
    outcome = sam.compact(conversation)
    assert outcome.maintenance is not None and outcome.maintenance.status == "done"
    assert own_memories(sam) == [KEPT]
    assert TOKEN not in sam.profile_text() and "[redacted GitHub token]" in sam.profile_text()


def _export_with_secret(tmp_path: Path) -> Path:
    memory = {
        "type": "memory",
        "author": "sam",
        "content": SAID,
        "category": "fact",
        "created_at": STAMP,
    }
    profile = {"type": "profile", "agent": "sam", "text": f"## Ops\n- {TOKEN}\n"}
    return write(tmp_path / "in.jsonl", HEADER, AGENT, profile, memory)


def test_import_redacts_every_text(hive: Hive, tmp_path: Path) -> None:
    hive.import_(_export_with_secret(tmp_path))
    sam = hive.get_agent("sam")
    assert own_memories(sam) == [KEPT]
    assert TOKEN not in sam.profile_text()


def test_import_under_refuse_writes_nothing_and_names_the_line(
    db_path: Path, local_embedder: LocalEmbedder, tmp_path: Path
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings(secrets="refuse")) as hive:
        with pytest.raises(Exception, match=r"line 3.*credential"):
            hive.import_(_export_with_secret(tmp_path))
        assert hive.agents() == []


def test_rest_and_cli_answers_name_the_redaction(hive: Hive, sam: Agent, db_path: Path) -> None:
    with TestClient(create_app(hive), base_url="http://127.0.0.1") as client:
        response = client.post(
            "/api/agents/sam/memories", json={"content": SAID, "category": "fact"}
        )
        assert response.status_code in (200, 201), response.text
        written = response.json()
        assert written["memory"]["content"] == KEPT and written["redacted"] == ["GitHub token"]
        settings = client.put("/api/agents/sam/settings", json={"secrets": "refuse"})
        assert settings.json()["secrets"] == "refuse"
        refused = client.post(
            "/api/agents/sam/memories", json={"content": "again " + SAID, "category": "fact"}
        )
        assert refused.status_code == 422 and "credential" in refused.text
        client.put("/api/agents/sam/settings", json={"secrets": None})
    hive.close()
    result = CliRunner().invoke(
        cli,
        [
            "memorize",
            "--agent",
            "sam",
            "--db",
            str(db_path),
            "--json",
            "--category",
            "fact",
            "key " + TOKEN,
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["redacted"] == ["GitHub token"]


def test_a_langgraph_value_is_screened_leaf_by_leaf(hive: Hive, sam: Agent) -> None:
    """The adapter keeps values as JSON records: a string's credential becomes its marker, and a
    bare number, an id more often than a card, stays a number (the record still reads back)."""
    from hivekeep.integrations.langgraph import HivekeepStore

    store = HivekeepStore(hive)
    value = {"note": f"token {TOKEN}", "n": 4836859485564911616, "ok": [1, "two"]}
    store.put(("sam", "ops"), "k", value)
    item = store.get(("sam", "ops"), "k")
    assert item is not None
    assert item.value == {
        "note": "token [redacted GitHub token]",
        "n": 4836859485564911616,
        "ok": [1, "two"],
    }
    sam.configure(secrets="refuse")
    with pytest.raises(ValidationError, match="credential"):
        store.put(("sam", "ops"), "k2", {"note": TOKEN})
    assert store.get(("sam", "ops"), "k2") is None
