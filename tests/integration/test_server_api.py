"""The REST API against a real ``hivekeep serve`` process on 127.0.0.1, spoken to with httpx.

One server per module (auth off), one more with a token; each test makes its own agents, so tests
share the servers without seeing each other's data. A few checks that need to reach inside the
application (an unexpected exception, the SSE heartbeat timing) run in-process.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi.testclient import TestClient

from hivekeep import Hive
from hivekeep.cli.serve import is_loopback
from hivekeep.events import EventBus
from hivekeep.server import create_app
from hivekeep.server.events import EventStreams, Subscription, stream_events
from tests.integration.server_support import (
    SSE,
    Server,
    free_port,
    read_sse,
    serve_command,
    server_env,
    start_server,
)

if TYPE_CHECKING:
    import httpx2  # what TestClient's responses are

STREAM_TIMEOUT = httpx.Timeout(10.0)  # below the 15 s heartbeat: a missing event fails, not hangs


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("serve")
    started = start_server(root / "hive.db", root / "serve.log")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("serve-secured")
    started = start_server(
        root / "hive.db", root / "serve.log", token=f"tok-{secrets.token_hex(16)}"
    )
    yield started
    started.stop()


@pytest.fixture
def api(server: Server) -> httpx.Client:
    return server.client()


def new_agent(api: httpx.Client, role: str = "") -> dict[str, Any]:
    """A fresh agent with a unique name (the servers are shared by the module's tests)."""
    response = api.post("/api/agents", json={"name": f"a{secrets.token_hex(6)}", "role": role})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


@pytest.fixture
def agent(api: httpx.Client) -> dict[str, Any]:
    return new_agent(api)


def memorize(api: httpx.Client, agent: dict[str, Any], content: str, **fields: Any) -> int:
    body = {"content": content, "category": "fact", **fields}
    response = api.post(f"/api/agents/{agent['id']}/memories", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["duplicate"] is False
    memory_id: int = response.json()["memory"]["id"]
    return memory_id


def error(response: httpx.Response | httpx2.Response, status: int, code: str) -> str:
    """Check the one error shape, and return its message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    message: str = body["error"]["message"]
    assert message and "Traceback" not in message
    return message


# health and errors ------------------------------------------------------------------------------
def test_health_is_open_and_says_whether_auth_is_on(server: Server, secured: Server) -> None:
    assert server.client().get("/api/health").json() == {
        "status": "ok",
        "version": server.client().get("/openapi.json").json()["info"]["version"],
        "auth": False,
    }
    assert secured.client(authorized=False).get("/api/health").json()["auth"] is True


def test_openapi_docs_are_served(api: httpx.Client) -> None:
    assert api.get("/docs").status_code == 200
    paths = api.get("/openapi.json").json()["paths"]
    assert {"/api/agents", "/api/agents/{agent}/memories", "/api/events"} <= set(paths)


def test_unknown_routes_and_methods_answer_the_error_shape(api: httpx.Client) -> None:
    assert "/docs" in error(api.get("/api/nothing-here"), 404, "not_found")
    error(api.put("/api/agents"), 405, "method_not_allowed")


# agents ---------------------------------------------------------------------------------------
def test_agent_crud(api: httpx.Client) -> None:
    created = new_agent(api, role="General helper")
    assert created["role"] == "General helper"
    assert api.get(f"/api/agents/{created['id']}").json() == created
    assert api.get(f"/api/agents/{created['name'].upper()}").json() == created
    assert created in api.get("/api/agents").json()["agents"]
    assert "already exists" in error(
        api.post("/api/agents", json={"name": created["name"]}), 409, "conflict"
    )

    renamed = api.patch(f"/api/agents/{created['id']}", json={"name": "Renamed " + created["name"]})
    assert renamed.status_code == 200
    assert (renamed.json()["name"], renamed.json()["role"]) == (
        "Renamed " + created["name"],
        "General helper",
    )
    error(api.get(f"/api/agents/{created['name']}"), 404, "not_found")
    role = api.patch(f"/api/agents/{created['id']}", json={"role": "Researcher"}).json()
    assert role["role"] == "Researcher"

    deleted = api.delete(f"/api/agents/{created['id']}")
    assert deleted.status_code == 200
    assert deleted.json() == {
        "name": "Renamed " + created["name"],
        "private_memories_deleted": 0,
        "conversations_deleted": 0,
        "shared_memories_kept": 0,
        "message": f"Deleted agent 'Renamed {created['name']}': its profile, 0 private memories "
        f"and 0 conversations. Kept 0 shared memories, recallable by every agent as shared by "
        f"Renamed {created['name']} (deleted).",
    }
    error(api.get(f"/api/agents/{created['id']}"), 404, "not_found")
    error(api.delete(f"/api/agents/{created['id']}"), 404, "not_found")


def test_deleting_an_agent_keeps_its_shared_memories(api: httpx.Client) -> None:
    author, reader = new_agent(api), new_agent(api)
    shared = memorize(api, author, "The office wifi password rotates monthly.", scope="shared")
    private = memorize(api, author, "I keep the spare office key in my desk.")
    deleted = api.delete(f"/api/agents/{author['id']}").json()
    assert (deleted["private_memories_deleted"], deleted["shared_memories_kept"]) == (1, 1)
    assert "Kept 1 shared memory" in deleted["message"]
    kept = api.get(f"/api/agents/{reader['id']}/memories/{shared}").json()
    assert (kept["shared_by"], kept["author_deleted"]) == (author["name"], True)
    error(api.get(f"/api/agents/{reader['id']}/memories/{private}"), 404, "not_found")
    search = api.get(f"/api/agents/{reader['id']}/memories", params={"query": "wifi password"})
    assert shared in [m["id"] for m in search.json()["memories"]]
    listed = api.get(f"/api/agents/{reader['id']}/memories", params={"scope": "shared"}).json()
    assert shared in [m["id"] for m in listed["memories"]]
    recalled = api.post(
        f"/api/agents/{reader['id']}/tools/recall", json={"query": "office wifi password"}
    )
    assert recalled.status_code == 200, recalled.text
    [hit] = [m for m in recalled.json()["memories"] if m["id"] == shared]
    assert (hit["shared_by"], hit["author_deleted"]) == (author["name"], True)

    # a new agent with the same name does not own it; no agent may change or forget it
    again = api.post("/api/agents", json={"name": author["name"]}).json()
    for agent in (again, reader):
        error(api.delete(f"/api/agents/{agent['id']}/memories/{shared}"), 404, "not_found")
        patch = api.patch(f"/api/agents/{agent['id']}/memories/{shared}", json={"content": "x"})
        error(patch, 404, "not_found")
        for tool, arguments in (
            ("forget", {"memory_id": shared}),
            ("update_memory", {"memory_id": shared, "content": "taken over"}),
        ):
            refused = api.post(f"/api/agents/{agent['id']}/tools/{tool}", json=arguments)
            assert "belongs to this agent" in error(refused, 422, "tool_error")
    assert api.get(f"/api/agents/{again['id']}/memories/{shared}").json()["author_deleted"]

    # only a person may, through the hive-level route (the UI's delete button)
    own_private = memorize(api, reader, "Reader's private note on the wifi.")
    error(api.delete(f"/api/memories/{own_private}"), 404, "not_found")  # private: never here
    assert api.delete(f"/api/memories/{shared}").status_code == 204
    error(api.get(f"/api/agents/{reader['id']}/memories/{shared}"), 404, "not_found")
    error(api.delete(f"/api/memories/{shared}"), 404, "not_found")


def test_agent_bodies_are_validated(api: httpx.Client, agent: dict[str, Any]) -> None:
    assert "not valid" in error(
        api.post("/api/agents", json={"name": "9lives"}), 422, "validation_error"
    )
    message = error(api.post("/api/agents", json={"role": "x"}), 422, "validation_error")
    assert "'body.name' is required" in message
    error(api.post("/api/agents", json={"name": "ok", "colour": "red"}), 422, "validation_error")
    error(api.post("/api/agents", json={"name": "ok", "role": "x" * 4001}), 422, "validation_error")
    error(api.patch(f"/api/agents/{agent['id']}", json={}), 422, "validation_error")
    error(api.get("/api/agents/99999999999999999999999"), 404, "not_found")


# memories -------------------------------------------------------------------------------------
def test_memory_crud(api: httpx.Client, agent: dict[str, Any]) -> None:
    base = f"/api/agents/{agent['id']}/memories"
    body = {"content": "The user moved to Lisbon in May 2024.", "category": "fact"}
    created = api.post(base, json={**body, "subject": "user", "importance": 7})
    assert created.status_code == 201
    memory = created.json()["memory"]
    assert memory["content"] == body["content"]
    assert (memory["subject"], memory["importance"], memory["scope"]) == ("user", 7, "private")
    assert "shared_by" not in memory and "score" not in memory

    again = api.post(base, json={**body, "subject": "user", "importance": 7})
    # the memory's own state repeated: nothing new to keep, so no merged_as_version
    assert again.status_code == 200 and again.json() == {"memory": memory, "duplicate": True}
    assert api.get(f"{base}/{memory['id']}").json() == memory

    patched = api.patch(f"{base}/{memory['id']}", json={"content": "The user lives in Porto."})
    assert patched.status_code == 200
    assert (patched.json()["content"], patched.json()["subject"]) == (
        "The user lives in Porto.",
        "user",
    )
    cleared = api.patch(f"{base}/{memory['id']}", json={"subject": None, "importance": None})
    assert (cleared.json()["subject"], cleared.json()["importance"]) == (None, None)

    assert api.delete(f"{base}/{memory['id']}").status_code == 204
    error(api.get(f"{base}/{memory['id']}"), 404, "not_found")
    error(api.delete(f"{base}/{memory['id']}"), 404, "not_found")


def test_listing_is_newest_first_with_total_and_has_more(
    api: httpx.Client, agent: dict[str, Any]
) -> None:
    base = f"/api/agents/{agent['id']}/memories"
    ids = [
        memorize(api, agent, text, created_at=f"2024-0{month}-01")
        for month, text in enumerate(
            ["Bought a red bicycle.", "Adopted a cat named Miso.", "Started learning Italian."],
            start=1,
        )
    ]
    own = {"scope": "private"}  # other tests' shared memories are visible too
    first = api.get(base, params={**own, "limit": 2}).json()
    assert [m["id"] for m in first["memories"]] == ids[::-1][:2]
    assert (first["total"], first["has_more"]) == (3, True)
    rest = api.get(base, params={**own, "limit": 2, "offset": 2}).json()
    assert ([m["id"] for m in rest["memories"]], rest["has_more"]) == ([ids[0]], False)
    assert api.get(base, params={"category": "decision"}).json()["total"] == 0


def test_search_ranks_by_relevance(api: httpx.Client, agent: dict[str, Any]) -> None:
    base = f"/api/agents/{agent['id']}/memories"
    tea = memorize(api, agent, "The user drinks green tea every morning.", category="preference")
    memorize(api, agent, "The quarterly report is due on Friday.")
    memorize(api, agent, "The user's sister lives in Canada.")
    found = api.get(base, params={"query": "what does the user drink?"}).json()
    assert found["memories"][0]["id"] == tea
    assert found["memories"][0]["score"] > 0
    assert found["memories"][0]["match"] == "strong"
    assert set(found["memories"][0]["found_by"]) <= {"vector", "text", "text_partial"}
    assert found["total"] >= 1
    only = api.get(base, params={"query": "tea", "category": "preference", "limit": 1}).json()
    assert [m["id"] for m in only["memories"]] == [tea]
    blank = api.get(
        base, params={"query": "  ", "scope": "private"}
    ).json()  # an empty search box lists instead
    assert blank["total"] == 3 and "score" not in blank["memories"][0]
    assert "match" not in blank["memories"][0] and "found_by" not in blank["memories"][0]
    # A person searching is not the agent recalling: retrieval counts stay as they were.
    assert all(m["retrieval_count"] == 0 for m in blank["memories"])
    tool = api.post(f"/api/agents/{agent['id']}/tools/recall", json={"query": "green tea"})
    assert tool.status_code == 200
    assert api.get(f"{base}/{tea}").json()["retrieval_count"] == 1  # the agent's own recall


def test_another_agents_memories_private_hidden_shared_read_only(api: httpx.Client) -> None:
    alice, bob = new_agent(api), new_agent(api)
    private = memorize(api, alice, "Alice keeps her notes in a blue notebook.")
    shared = memorize(api, alice, "The team standup is at 9:30.", scope="shared")
    bob_base = f"/api/agents/{bob['id']}/memories"

    for response in (
        api.get(f"{bob_base}/{private}"),
        api.patch(f"{bob_base}/{private}", json={"content": "hijacked"}),
        api.delete(f"{bob_base}/{private}"),
    ):
        error(response, 404, "not_found")
    seen = api.get(f"{bob_base}/{shared}").json()
    assert seen["shared_by"] == alice["name"]
    error(api.patch(f"{bob_base}/{shared}", json={"content": "x"}), 404, "not_found")
    error(api.delete(f"{bob_base}/{shared}"), 404, "not_found")

    listing = api.get(bob_base).json()
    assert [m["id"] for m in listing["memories"]] == [shared]
    assert api.get(bob_base, params={"scope": "private"}).json()["total"] == 0
    search = api.get(bob_base, params={"query": "blue notebook"}).json()
    assert private not in [m["id"] for m in search["memories"]]


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"limit": "ten"},
        {"offset": -1},
        {"category": "gossip"},
        {"scope": "public"},
        {"subject": ""},
        {"query": "q" * 1001},
        {"colour": "red"},
    ],
)
def test_bad_query_params_are_422(
    api: httpx.Client, agent: dict[str, Any], params: dict[str, Any]
) -> None:
    response = api.get(f"/api/agents/{agent['id']}/memories", params=params)
    message = error(response, 422, "validation_error")
    [name] = params
    assert f"query.{name}" in message
    assert response.json()["error"]["details"][0]["field"] == f"query.{name}"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"category": "fact"}, "body.content"),
        ({"content": "x"}, "body.category"),
        ({"content": "x" * 2001, "category": "fact"}, "body.content"),
        ({"content": "x", "category": "fact", "importance": 11}, "body.importance"),
        ({"content": "x", "category": "fact", "scope": "everyone"}, "body.scope"),
        ({"content": "x", "category": "fact", "mood": "happy"}, "body.mood"),
    ],
)
def test_bad_memory_bodies_are_422(
    api: httpx.Client, agent: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    response = api.post(f"/api/agents/{agent['id']}/memories", json=body)
    assert f"'{field}'" in error(response, 422, "validation_error")


def test_bad_json_and_bad_patches_are_422(api: httpx.Client, agent: dict[str, Any]) -> None:
    base = f"/api/agents/{agent['id']}/memories"
    broken = api.post(base, content=b"{not json", headers={"Content-Type": "application/json"})
    assert "not valid JSON" in error(broken, 422, "validation_error")
    memory_id = memorize(api, agent, "A memory to patch.")
    error(api.patch(f"{base}/{memory_id}", json={}), 422, "validation_error")
    assert "null" in error(
        api.patch(f"{base}/{memory_id}", json={"content": None}), 422, "validation_error"
    )
    error(api.get(f"{base}/0"), 422, "validation_error")
    error(api.get(f"{base}/abc"), 422, "validation_error")
    error(api.get("/api/agents/nobody-here/memories"), 404, "not_found")
    error(
        api.post("/api/agents/nobody-here/memories", json={"content": "x", "category": "fact"}),
        404,
        "not_found",
    )


# profile --------------------------------------------------------------------------------------
def test_profile_read_replace_conflict_and_budget(api: httpx.Client, agent: dict[str, Any]) -> None:
    base = f"/api/agents/{agent['id']}/profile"
    empty = api.get(base).json()
    assert (empty["text"], empty["revision"], empty["tokens"]) == ("", 0, 0)
    assert empty["budget"] == 1500

    saved = api.put(base, json={"text": "## User\n- Lives in Lisbon\n", "expected_revision": 0})
    assert saved.status_code == 200
    assert saved.json()["revision"] == 1 and "Lisbon" in saved.json()["text"]
    assert api.get(base).json() == saved.json()

    stale = api.put(base, json={"text": "## User\n- stale\n", "expected_revision": 0})
    assert "revision" in error(stale, 409, "conflict")
    huge = "## Notes\n" + "".join(f"- note number {i} about something\n" for i in range(600))
    assert "budget" in error(api.put(base, json={"text": huge}), 422, "over_budget")
    assert api.get(base).json()["revision"] == 1

    error(api.put(base, json={"text": "x", "expected_revision": -1}), 422, "validation_error")
    error(api.put(base, json={}), 422, "validation_error")


# tools ----------------------------------------------------------------------------------------
def test_tools_are_listed_and_called_like_call_tool(
    api: httpx.Client, agent: dict[str, Any]
) -> None:
    listed = api.get("/api/tools").json()["tools"]
    assert [t["name"] for t in listed] == [
        "recall",
        "memorize",
        "edit_profile",
        "update_memory",
        "forget",
        "list_memories",
        "review_memories",
    ]
    base = f"/api/agents/{agent['id']}/tools"
    saved = api.post(
        f"{base}/memorize", json={"content": "The user is allergic to peanuts.", "category": "fact"}
    )
    assert saved.status_code == 200
    assert saved.json()["duplicate"] is False
    recalled = api.post(f"{base}/recall", json={"query": "allergies"}).json()
    assert recalled["memories"][0]["id"] == saved.json()["id"]
    edited = api.post(
        f"{base}/edit_profile",
        json={"section": "User", "operation": "append", "content": "Allergic to peanuts"},
    ).json()
    assert edited["success"] is True and "peanuts" in edited["profile"]
    assert api.post(f"{base}/list_memories").json()["memories"]  # no body: no arguments


def test_tool_errors_are_422_with_the_models_message(
    api: httpx.Client, agent: dict[str, Any]
) -> None:
    base = f"/api/agents/{agent['id']}/tools"
    message = error(api.post(f"{base}/recall", json={"qeury": "x"}), 422, "tool_error")
    assert "'query' is required" in message and "'qeury' is not a parameter" in message
    assert "No memory" in error(
        api.post(f"{base}/forget", json={"memory_id": 999999}), 422, "tool_error"
    )
    error(api.post(f"{base}/review_memories", json={}), 422, "tool_error")
    assert "recall" in error(api.post(f"{base}/teleport", json={}), 404, "not_found")
    error(api.post(f"{base}/recall", json=["not", "an", "object"]), 422, "validation_error")


# events ---------------------------------------------------------------------------------------
def next_event(events: Iterator[SSE]) -> SSE:
    """The next real event, past heartbeat comments."""
    return next(message for message in events if message.event is not None)


def test_events_stream_a_new_memory_and_replay_what_was_missed(
    server: Server, api: httpx.Client
) -> None:
    agent, other = new_agent(api), new_agent(api)
    only_agent = {"agent": agent["name"]}
    with api.stream("GET", "/api/events", params=only_agent, timeout=STREAM_TIMEOUT) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = read_sse(response)
        assert next(events).comment == "connected"  # subscribed: nothing from here on is lost
        first_id = memorize(api, agent, "The user's favourite colour is green.")
        created = next_event(events)
    assert created.event == "memory:created"
    assert created.data is not None and created.id == created.data["id"]
    assert created.data["type"] == "memory:created"
    assert created.data["agent_id"] == agent["id"]
    assert created.data["data"] == {"memory_id": first_id, "scope": "private"}

    memorize(api, other, "Another agent's memory, filtered out.")
    missed = [
        memorize(api, agent, text)
        for text in ("The dentist appointment moved to Tuesday.", "Jazz concerts bore the user.")
    ]
    api.put(f"/api/agents/{agent['id']}/profile", json={"text": "## User\n- likes green\n"})
    resume = {"Last-Event-ID": str(created.id)}
    with api.stream(
        "GET", "/api/events", params=only_agent, headers=resume, timeout=STREAM_TIMEOUT
    ) as response:
        events = read_sse(response)
        replayed = [next_event(events) for _ in range(3)]
    assert [e.event for e in replayed] == ["memory:created", "memory:created", "profile:updated"]
    assert [e.data["data"]["memory_id"] for e in replayed[:2] if e.data] == missed
    assert replayed[2].data is not None and replayed[2].data["data"]["source"] == "user"

    after = {**only_agent, "after": str(replayed[0].id)}
    with api.stream("GET", "/api/events", params=after, timeout=STREAM_TIMEOUT) as response:
        assert next_event(read_sse(response)).id == replayed[1].id


def test_events_parameters_are_validated(api: httpx.Client) -> None:
    error(api.get("/api/events", params={"agent": "nobody-here"}), 404, "not_found")
    error(api.get("/api/events", params={"after": "-1"}), 422, "validation_error")
    error(api.get("/api/events", headers={"Last-Event-ID": "abc"}), 422, "validation_error")


def test_event_stream_sends_heartbeats_filters_and_unsubscribes_when_closed() -> None:
    async def scenario() -> None:
        bus, streams = EventBus(), EventStreams()
        subscription = Subscription(asyncio.get_running_loop(), agent_id=1)
        stream = stream_events(bus, streams, subscription, None, heartbeat_s=0.01)
        assert "connected" in await anext(stream)
        assert await anext(stream) == ": ping\n\n"
        bus.publish("memory:created", 2, memory_id=9, scope="private")  # another agent's
        bus.publish("memory:created", 1, memory_id=7, scope="private")
        message = await anext(stream)
        while message == ": ping\n\n":
            message = await anext(stream)
        assert message.startswith("id: 2\nevent: memory:created\ndata: {")
        await stream.aclose()
        bus.publish("memory:created", 1, memory_id=8, scope="private")
        await asyncio.sleep(0)
        assert subscription.queue.empty()  # unsubscribed when the stream closed

    asyncio.run(scenario())


def test_stopping_the_server_ends_open_streams() -> None:
    async def scenario() -> None:
        bus, streams = EventBus(), EventStreams()
        subscription = Subscription(asyncio.get_running_loop(), agent_id=None)
        stream = stream_events(bus, streams, subscription, None, heartbeat_s=60)
        assert "connected" in await anext(stream)
        streams.close_all()
        assert [message async for message in stream] == []
        bus.publish("memory:created", 1, memory_id=8, scope="private")
        await asyncio.sleep(0)
        queued = [subscription.queue.get_nowait() for _ in range(subscription.queue.qsize())]
        assert [event for event in queued if event is not None] == []  # unsubscribed

    asyncio.run(asyncio.wait_for(scenario(), 10))


# auth -----------------------------------------------------------------------------------------
def test_with_a_token_every_api_route_needs_it(secured: Server) -> None:
    anonymous, wrong, right = (
        secured.client(authorized=False),
        secured.client(token="not-the-token"),
        secured.client(),
    )
    for client in (anonymous, wrong):
        for response in (
            client.get("/api/agents"),
            client.post("/api/agents", json={"name": "intruder"}),
            client.get("/api/tools"),
            client.get("/api/events"),
        ):
            assert "Bearer" in error(response, 401, "unauthorized")
            assert response.headers["www-authenticate"] == "Bearer"
    assert anonymous.get("/api/health").status_code == 200
    created = right.post("/api/agents", json={"name": "insider"})
    assert created.status_code == 201
    assert [a["name"] for a in right.get("/api/agents").json()["agents"]] == ["insider"]
    with right.stream("GET", "/api/events", timeout=STREAM_TIMEOUT) as response:
        assert response.status_code == 200
        assert next(read_sse(response)).comment == "connected"


def test_without_a_token_the_api_is_open(server: Server) -> None:
    assert server.client(token="anything").get("/api/agents").status_code == 200


def test_listening_beyond_loopback_needs_a_token(tmp_path: Any) -> None:
    db = tmp_path / "hive.db"
    refused = subprocess.run(
        serve_command("--host", "0.0.0.0", "--port", str(free_port()), "--db", str(db)),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert "Refusing to listen on 0.0.0.0" in refused.stderr
    assert "HIVEKEEP_API_TOKEN" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


# in-process -----------------------------------------------------------------------------------
def test_unexpected_errors_are_500_without_internals(hive: Hive) -> None:
    app = create_app(hive)

    def explode() -> None:
        raise RuntimeError("secret internals at /etc/hivekeep")

    app.add_api_route("/api/explode", explode)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        response = client.get("/api/explode")
    assert "log" in error(response, 500, "internal_error")
    assert "secret" not in response.text
