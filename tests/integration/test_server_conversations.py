"""Conversations, chat streaming, compaction, regenerate and settings over HTTP, against a real
server process whose only double is the model (``ScriptedLLM``, see ``scripted_server``)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.leases import LEASE_TTL_SECONDS, lease_name, new_holder
from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import SSE, Server, read_sse, start_server

STREAM_TIMEOUT = httpx.Timeout(20.0)
FAIL = str(DEFAULT_SCRIPT["fail_marker"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("scripted"))
    yield started
    started.stop()


@pytest.fixture
def api(server: Server) -> httpx.Client:
    return server.client()


def new_agent(api: httpx.Client) -> dict[str, Any]:
    response = api.post("/api/agents", json={"name": f"a{secrets.token_hex(6)}"})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def new_conversation(api: httpx.Client, agent: dict[str, Any], title: str = "") -> int:
    response = api.post(f"/api/agents/{agent['id']}/conversations", json={"title": title})
    assert response.status_code == 201, response.text
    conversation_id: int = response.json()["id"]
    return conversation_id


def chat(api: httpx.Client, conversation_id: int, message: str) -> list[SSE]:
    """One turn; the SSE events of the response body, in order."""
    with api.stream(
        "POST", f"/api/conversations/{conversation_id}/chat", json={"message": message}
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [event for event in read_sse(response) if event.event]


def test_conversations_are_created_listed_and_checked(api: httpx.Client) -> None:
    agent = new_agent(api)
    first = new_conversation(api, agent, "  Trip   planning ")
    second = new_conversation(api, agent)
    listed = api.get(f"/api/agents/{agent['name']}/conversations").json()["conversations"]
    assert {c["id"] for c in listed} == {first, second}
    assert next(c for c in listed if c["id"] == first)["title"] == "Trip planning"
    assert api.get(f"/api/conversations/{first}/messages").json()["messages"] == []
    assert api.get("/api/conversations/999999/messages").status_code == 404
    assert api.get("/api/conversations/0/context").status_code == 422
    too_long = api.post(f"/api/agents/{agent['id']}/conversations", json={"title": "x" * 201})
    assert too_long.status_code == 422
    assert api.get(f"/api/conversations/{first}/messages?limit=5000").status_code == 422


def test_conversations_are_renamed_deleted_to_the_trash_and_restored(api: httpx.Client) -> None:
    agent = new_agent(api)
    first = new_conversation(api, agent)
    kept = new_conversation(api, agent, "kept")
    chat(api, first, "Hi there, I am Ann and I plan a trip to Porto in May.")
    listed = api.get(f"/api/agents/{agent['id']}/conversations").json()["conversations"]
    titles = {c["id"]: c["title"] for c in listed}
    assert titles == {first: "Hi there, I am Ann and I plan a trip to Porto in May.", kept: "kept"}
    renamed = api.patch(f"/api/conversations/{first}", json={"title": "  Porto  trip "})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Porto trip"
    assert api.patch(f"/api/conversations/{first}", json={"title": ""}).status_code == 422
    deleted = api.delete(f"/api/conversations/{first}")
    assert deleted.status_code == 200 and deleted.json()["deleted_at"]
    listed = api.get(f"/api/agents/{agent['id']}/conversations").json()["conversations"]
    assert [c["id"] for c in listed] == [kept]
    trash = api.get(f"/api/agents/{agent['id']}/conversations?trashed=true").json()
    assert [c["id"] for c in trash["conversations"]] == [first]
    gone = api.get(f"/api/conversations/{first}/messages")
    assert gone.status_code == 404 and "in the trash" in gone.json()["error"]["message"]
    assert api.post(f"/api/conversations/{kept}/restore").status_code == 422  # not deleted
    back = api.post(f"/api/conversations/{first}/restore")
    assert back.status_code == 200 and back.json()["deleted_at"] is None
    messages = api.get(f"/api/conversations/{first}/messages").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]


def test_a_turn_goes_on_when_its_client_goes_away(api: httpx.Client) -> None:
    """A page reload mid-stream closes the request: the turn still ends, stored and announced."""
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    with api.stream(
        "POST", f"/api/conversations/{conversation}/chat", json={"message": "slow: hello"}
    ) as response:
        assert response.status_code == 200
    # the client is gone before the model answered (it waits 2 s)
    deadline = time.monotonic() + 15
    stored: list[dict[str, Any]] = []
    while len(stored) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        stored = api.get(f"/api/conversations/{conversation}/messages").json()["messages"]
    assert [m["content"] for m in stored] == ["slow: hello", DEFAULT_SCRIPT["chat"]]
    with api.stream(
        "GET", f"/api/events?agent={agent['id']}&after=0", timeout=STREAM_TIMEOUT
    ) as events:
        done = next(e for e in read_sse(events) if e.event == "chat:done")
    assert done.data and done.data["data"]["content"] == DEFAULT_SCRIPT["chat"]


def test_chat_streams_deltas_then_the_reply_and_publishes_them(
    api: httpx.Client, server: Server
) -> None:
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    events = chat(api, conversation, "Hi there, I am Ann.")
    kinds = [e.event for e in events]
    assert kinds[-1] == "reply" and kinds.count("delta") >= 2, kinds
    assert set(kinds[:-1]) == {"delta"}
    text = "".join(e.data["text"] for e in events if e.event == "delta" and e.data)
    reply = events[-1].data
    assert reply is not None
    assert text == reply["content"] == DEFAULT_SCRIPT["chat"]
    assert [m["role"] for m in reply["messages"]] == ["user", "assistant"]
    assert reply["compaction"] is None
    stored = api.get(f"/api/conversations/{conversation}/messages").json()["messages"]
    assert [m["content"] for m in stored] == ["Hi there, I am Ann.", DEFAULT_SCRIPT["chat"]]
    after = api.get(f"/api/conversations/{conversation}/messages?after_id={stored[0]['id']}")
    assert len(after.json()["messages"]) == 1
    # the same tokens reached the bus, for /api/events clients: replay them
    with api.stream(
        "GET", f"/api/events?agent={agent['id']}&after=0", timeout=STREAM_TIMEOUT
    ) as response:
        seen = []
        for event in read_sse(response):
            if event.event:
                seen.append(event)
            if event.event == "chat:done":
                break
    deltas = [e.data["data"]["text"] for e in seen if e.event == "chat:delta" and e.data]
    assert "".join(deltas) == DEFAULT_SCRIPT["chat"]
    assert seen[-1].data and seen[-1].data["data"]["conversation_id"] == conversation


def test_chat_tool_use_is_streamed_and_failures_end_the_stream(api: httpx.Client) -> None:
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    events = chat(api, conversation, "remember: Ann's cat is called Miso")
    tools = [e.data for e in events if e.event == "tool" and e.data]
    assert tools[0]["name"] == "memorize" and "error" not in tools[0]["result"], tools
    memories = api.get(f"/api/agents/{agent['id']}/memories").json()["memories"]
    assert memories[0]["content"] == "Ann's cat is called Miso"
    failed = chat(api, conversation, f"{FAIL} now")
    assert failed[-1].event == "error" and failed[-1].data
    assert failed[-1].data["code"] == "provider_error"
    empty = api.post(f"/api/conversations/{conversation}/chat", json={"message": ""})
    assert empty.status_code == 422
    unknown = api.post(f"/api/conversations/{conversation}/chat", json={"message": "a", "x": 1})
    assert unknown.status_code == 422


def test_context_reports_tokens_window_and_threshold(api: httpx.Client) -> None:
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    context = api.get(f"/api/conversations/{conversation}/context").json()
    assert context["window"] == DEFAULT_SCRIPT["context_window"]
    assert context["threshold_percent"] == 75.0
    assert 0 < context["tokens"] < context["window"]
    # why nothing is compacted yet, for the context bar; the 8,192 window leaves room enough
    to_go = int(0.75 * context["window"]) - context["tokens"]
    assert context["waiting"] == (
        f"Compaction waits until the context passes 75 % (6,144 tokens): {to_go:,} to go."
    )
    assert context["warning"] is None and context["answering"] is False
    chat(api, conversation, "A longer message " * 20)
    assert (
        api.get(f"/api/conversations/{conversation}/context").json()["tokens"] > (context["tokens"])
    )


def test_force_compact_returns_the_outcome_and_streams_its_events(
    api: httpx.Client, server: Server
) -> None:
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    for turn in range(3):
        chat(api, conversation, f"Turn {turn}: I like green tea and I live in Lisbon.")
    seen: list[SSE] = []
    outcome: dict[str, Any] = {}

    def compact() -> None:
        response = server.client().post(f"/api/conversations/{conversation}/compact")
        outcome.update(status=response.status_code, body=response.json())

    with server.client().stream(
        "GET", f"/api/events?agent={agent['id']}", timeout=STREAM_TIMEOUT
    ) as response:
        lines = read_sse(response)
        assert next(lines).comment == "connected"
        worker = threading.Thread(target=compact)
        worker.start()
        for event in lines:
            if event.event:
                seen.append(event)
            if event.event in ("compacting:done", "compacting:error"):
                break
    worker.join(30)
    kinds = [e.event for e in seen]
    assert kinds[0] == "compacting:start" and kinds[-1] == "compacting:done", kinds
    assert "compacting:progress" in kinds and "memory:created" in kinds
    assert "profile:updated" in kinds
    done = seen[-1].data
    assert done is not None
    assert done["data"]["conversation_id"] == conversation
    assert outcome["status"] == 200, outcome
    body = outcome["body"]
    assert body["status"] == "done" and body["messages_folded"] >= 2
    assert body["memories_extracted"] == 1 and body["profile_updated"] is True
    assert body["summary"] == DEFAULT_SCRIPT["fold"]
    assert done["data"]["messages_folded"] == body["messages_folded"]
    messages = api.get(f"/api/conversations/{conversation}/messages").json()["messages"]
    record = [m for m in messages if m["is_compaction_record"]]
    assert record and record[0]["record"]["messages_folded"] == body["messages_folded"]
    assert record[0]["id"] == body["record_id"]


def test_compact_while_busy_is_409(
    api: httpx.Client, server: Server, local_embedder: LocalEmbedder
) -> None:
    agent = new_agent(api)
    conversation = new_conversation(api, agent)
    db = Path(server.log).parent / "hive.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        holder = new_holder()
        assert hive.store.acquire_lease(lease_name(agent["id"]), holder, LEASE_TTL_SECONDS) is None
        try:
            busy = api.post(f"/api/conversations/{conversation}/compact")
        finally:
            hive.store.release_lease(lease_name(agent["id"]), holder)
    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["code"] == "conflict"
    assert "already running" in busy.json()["error"]["message"]
    assert api.post(f"/api/conversations/{conversation}/compact").json()["status"] == "nothing"


def test_regenerate_succeeds_or_fails_with_the_reason(api: httpx.Client) -> None:
    agent = new_agent(api)
    memories = f"/api/agents/{agent['id']}/memories"
    empty = api.post(f"/api/agents/{agent['id']}/profile/regenerate")
    assert empty.status_code == 200 and empty.json()["updated"] is False
    api.post(memories, json={"content": "Ann lives in Lisbon", "category": "fact"})
    done = api.post(f"/api/agents/{agent['id']}/profile/regenerate")
    assert done.status_code == 200, done.text
    assert done.json()["success"] is True and done.json()["updated"] is True
    assert "Name: Ann" in api.get(f"/api/agents/{agent['id']}/profile").json()["text"]
    api.post(memories, json={"content": f"{FAIL} this one", "category": "fact"})
    failed = api.post(f"/api/agents/{agent['id']}/profile/regenerate")
    assert failed.status_code == 502
    assert failed.json()["error"]["code"] == "regenerate_failed"
    assert "no usable <profile> block" in failed.json()["error"]["message"]


def test_settings_show_models_and_validate_changes(api: httpx.Client) -> None:
    hive_settings = api.get("/api/settings").json()
    assert hive_settings["llm"]["configured"] is True
    assert hive_settings["embedder"]["spec"] == "local" and hive_settings["embedder"]["model_id"]
    assert "key" not in str(hive_settings).lower()
    agent = new_agent(api)
    url = f"/api/agents/{agent['id']}/settings"
    current = api.get(url).json()
    assert current["model"] is None and current["compaction"] == {}
    assert current["model_id"] == "scripted" and current["effective"]["threshold_percent"] == 75.0
    changed = api.put(url, json={"compaction": {"threshold_percent": 60, "max_summaries": 8}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["effective"]["threshold_percent"] == 60.0
    assert changed.json()["effective"]["max_summaries"] == 8
    for bad in (
        {"compaction": {"keep_percent": 80}},  # not below the threshold (75)
        {"compaction": {"colour": 1}},
        {"model": "nonsense"},
        {"model": "nosuch:model"},
        {},
        {"compaction": {f"k{i}": 1 for i in range(30)}},
    ):
        refused = api.put(url, json=bad)
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["error"]["message"]
    assert api.get(url).json()["effective"]["threshold_percent"] == 60.0
    cleared = api.put(url, json={"compaction": {}}).json()
    assert cleared["effective"]["threshold_percent"] == 75.0


@pytest.mark.slow
def test_without_a_model_the_errors_say_what_to_set(tmp_path: Path) -> None:
    plain = start_server(tmp_path / "hive.db", tmp_path / "serve.log")
    try:
        api = plain.client()
        agent = new_agent(api)
        conversation = new_conversation(api, agent)
        for response in (
            api.post(f"/api/conversations/{conversation}/chat", json={"message": "hi"}),
            api.post(f"/api/conversations/{conversation}/compact"),
            api.post(f"/api/agents/{agent['id']}/profile/regenerate"),
            api.post(f"/api/agents/{agent['id']}/remember", json={"text": "I moved to Lisbon."}),
        ):
            assert response.status_code == 422, response.text
            assert response.json()["error"]["code"] == "llm_not_configured"
            assert "HIVEKEEP_LLM" in response.json()["error"]["message"]
        context = api.get(f"/api/conversations/{conversation}/context").json()
        assert context["window"] is None and "HIVEKEEP_LLM" in context["llm_error"]
    finally:
        plain.stop()


def test_settings_set_and_clear_the_context_window(api: httpx.Client) -> None:
    agent = new_agent(api)
    url = f"/api/agents/{agent['id']}/settings"
    assert api.get(url).json()["context_window_setting"] is None
    changed = api.put(url, json={"context_window": 32768})
    assert changed.status_code == 200, changed.text
    assert changed.json()["context_window_setting"] == 32768
    assert api.get(url).json()["context_window_setting"] == 32768
    for bad in (0, -5, 1.5, "32768", True, 10**12):
        refused = api.put(url, json={"context_window": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert "context_window" in refused.text
    assert api.get(url).json()["context_window_setting"] == 32768
    kept = api.put(url, json={"compaction": {"threshold_percent": 60}}).json()
    assert kept["context_window_setting"] == 32768  # a field left out is kept
    cleared = api.put(url, json={"context_window": None}).json()
    assert cleared["context_window_setting"] is None
