"""Values an agent, an LLM or an old import may have written: control characters, impossible and
far-future dates. Each is refused or normalised at the write path, and a bad value already stored
breaks no reader (tools, REST, CLI): every answer is still a JSON object or clean text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hivekeep import Hive, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.core.text import normalise_text
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server.app import create_app
from hivekeep.store.base import NewMemory
from hivekeep.tools import TOOLS_BY_NAME
from hivekeep.types import Category, Scope
from tests.support import VectorTable, insert_one, random_unit

ESCAPES = "Ann \u001b[31mlikes\u001b[0m tea\u0007\u009b\r"
BAD_STAMP = "2024-02-31T00:00:00.000000Z"


@pytest.fixture
def hive(tmp_path: Path) -> Iterator[Hive]:
    with Hive(tmp_path / "hive.db", embedder=VectorTable(), settings=Settings()) as opened:
        yield opened


@pytest.fixture
def api(hive: Hive) -> Iterator[TestClient]:
    with TestClient(create_app(hive), base_url="http://127.0.0.1:8765") as client:
        yield client


def raw_insert(hive: Hive, agent_id: int, content: str, **fields: Any) -> int:
    """A row as an older hivekeep (or a hand-edited database) could have stored it."""
    memory = NewMemory(agent_id=agent_id, content=content, category=Category.FACT, **fields)
    record, _ = insert_one(
        hive.store,
        memory,
        random_unit(content, 16),
        text_key=normalise_text(content),
        dedup_threshold=0.99,
    )
    return record.id


# -- control characters (finding 4) -----------------------------------------------------------


def test_tools_strip_control_characters_and_refuse_nul(hive: Hive) -> None:
    sam = hive.create_agent("sam")
    saved = sam.call_tool("memorize", {"content": ESCAPES, "category": "fact", "subject": "A\x1b"})
    assert saved["content"] == "Ann [31mlikes[0m tea"
    stored = sam.list_memories().memories[0]
    assert stored.content == "Ann [31mlikes[0m tea" and stored.subject == "A"
    refused = sam.call_tool("memorize", {"content": "a\u0000b", "category": "fact"})
    assert "NUL" in refused["error"]
    changed = sam.call_tool("update_memory", {"memory_id": saved["id"], "content": "x\u001b[2Jy"})
    assert changed["content"] == "x[2Jy"
    assert (
        "NUL"
        in sam.call_tool("update_memory", {"memory_id": saved["id"], "content": "\0"})["error"]
    )
    assert (
        "nothing is left"
        in sam.call_tool("memorize", {"content": "\x1b\x07", "category": "fact"})["error"]
    )
    with pytest.raises(ValidationError, match="NUL"):
        sam.memorize_many([{"content": "ok", "category": "fact", "source_context": "\0"}])


def test_rest_strips_control_characters_and_refuses_nul(hive: Hive, api: TestClient) -> None:
    sam = hive.create_agent("sam")
    base = f"/api/agents/{sam.id}/memories"
    created = api.post(base, json={"content": ESCAPES, "category": "fact"})
    assert (
        created.status_code == 201 and created.json()["memory"]["content"] == "Ann [31mlikes[0m tea"
    )
    nul = api.post(base, json={"content": "a\u0000b", "category": "fact"})
    assert nul.status_code == 422 and "NUL" in nul.json()["error"]["message"]
    memory_id = created.json()["memory"]["id"]
    patched = api.patch(f"{base}/{memory_id}", json={"content": "b\u001b]0;title\u0007"})
    assert patched.json()["content"] == "b]0;title"
    assert sam.list_memories().total == 1


def test_profiles_strip_control_characters_and_refuse_nul(hive: Hive, api: TestClient) -> None:
    """The profile's write paths (the tool, a person's PUT, an automatic rewrite) clean it too."""
    sam = hive.create_agent("sam")
    edited = sam.call_tool(
        "edit_profile", {"section": "User", "operation": "append", "content": "Likes \x1b[31mtea"}
    )
    assert "\x1b" not in edited["profile"] and "Likes [31mtea" in edited["profile"]
    refused = sam.call_tool(
        "edit_profile", {"section": "User", "operation": "append", "content": "a\u0000b"}
    )
    assert "NUL" in refused["error"]
    put = api.put(f"/api/agents/{sam.id}/profile", json={"text": "## User\n- Bell\u0007 here\n"})
    assert put.status_code == 200, put.text
    assert sam.profile_text().strip() == "## User\n- Bell here"
    nul = api.put(f"/api/agents/{sam.id}/profile", json={"text": "## User\n- a\u0000\n"})
    assert nul.status_code == 422 and sam.profile_text().strip() == "## User\n- Bell here"
    profile = sam.profile()
    rewritten = hive._services.profiles.rewrite(
        sam.id, "## User\n- From the model\x00\x1b[2J\n", profile.revision, "maintenance"
    )
    assert rewritten.updated and sam.profile_text().strip() == "## User\n- From the model[2J"


def test_the_cli_prints_stored_escapes_visibly(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    db = tmp_path / "cli.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        sam = hive.create_agent("sam")
        memory = NewMemory(
            sam.id, "The user likes \u001b[2J\u001b]0;pwned\u0007 green tea.", Category.FACT
        )
        [vector] = local_embedder.embed([memory.content])
        insert_one(
            hive.store,
            memory,
            vector,
            text_key=normalise_text(memory.content),
            dedup_threshold=0.99,
        )
    result = CliRunner().invoke(cli, ["recall", "--agent", "sam", "--db", str(db), "green tea"])
    assert result.exit_code == 0, result.output
    assert "green tea" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b[2J" in result.output
    as_json = CliRunner().invoke(
        cli, ["recall", "--agent", "sam", "--db", str(db), "tea", "--json"]
    )
    assert "\x1b" not in as_json.output and "\\u001b" in as_json.output


# -- impossible and far-future dates (finding 3) ----------------------------------------------


def test_far_future_and_impossible_created_at_are_refused(hive: Hive, api: TestClient) -> None:
    sam = hive.create_agent("sam")
    for stamp, says in [("2999-01-01", "more than a day ahead"), ("2024-02-31", "not an ISO date")]:
        with pytest.raises(ValidationError, match=says):
            sam.memorize_many([{"content": "x", "category": "fact", "created_at": stamp}])
        response = api.post(
            f"/api/agents/{sam.id}/memories",
            json={"content": "x", "category": "fact", "created_at": stamp},
        )
        assert response.status_code == 422 and says in response.json()["error"]["message"]
    with pytest.raises(ValidationError, match="since"):
        sam.recall("x", since="2024-02-31")
    assert "since" in sam.call_tool("recall", {"query": "x", "since": "2024-02-30"})["error"]
    assert sam.list_memories().total == 0


def test_a_bad_stored_date_breaks_no_reader_of_any_agent(
    hive: Hive, api: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    sam, kit = hive.create_agent("sam"), hive.create_agent("kit")
    raw_insert(
        hive, sam.id, "The office wifi is hivenet.", created_at=BAD_STAMP, scope=Scope.SHARED
    )
    for agent in (sam, kit):  # shared: the finding broke every agent of the hive
        listed = agent.call_tool("list_memories", {})
        assert [m["age"] for m in listed["memories"]] == ["unknown age"]
        recalled = agent.call_tool("recall", {"query": "office wifi"})
        assert recalled["memories"] and recalled["memories"][0]["age"] == "unknown age"
        assert api.get(f"/api/agents/{agent.id}/memories").status_code == 200
        found = api.get(f"/api/agents/{agent.id}/memories", params={"query": "wifi"})
        assert found.status_code == 200 and found.json()["memories"]
    assert "invalid stored timestamp" in caplog.text


def test_call_tool_always_returns_a_json_object(
    hive: Hive, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sam = hive.create_agent("sam")

    def broken(agent: Any, args: Any) -> dict[str, Any]:
        raise ValueError("a bug deep inside")

    tool = TOOLS_BY_NAME["list_memories"]
    monkeypatch.setitem(
        TOOLS_BY_NAME, "list_memories", type(tool)(tool.name, tool.description, tool.args, broken)
    )
    result = sam.call_tool("list_memories", {})
    assert set(result) == {"error"} and "ValueError" in result["error"]
    assert "a bug deep inside" not in result["error"]
    assert "a bug deep inside" in caplog.text  # the traceback is logged, not lost
