"""Scoped API tokens against a real ``hivekeep serve`` (issue 29): every route family, the event
stream, revocation from another process, and the hashes as the database file holds them.

One server (with an admin token) serves a hive of two agents, alice and bob; the tokens act as
alice. The agent and conversation routes are not listed by hand: every route of the OpenAPI
document is exercised, so a route added later is covered (or fails here).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server.app import create_app
from hivekeep.server.scopes import READ_POSTS, route_kind
from hivekeep.tools import READ_ONLY_TOOLS, TOOLS_BY_NAME
from tests.integration.server_support import (
    SSE,
    Server,
    read_sse,
    serve_command,
    server_env,
    start_server,
)
from tests.integration.test_mcp import free_port, wait_for_port

ADMIN = f"admin-{secrets.token_hex(16)}"
MUTATING = ("post", "put", "patch", "delete")
STREAM_TIMEOUT = httpx.Timeout(10.0)
MCP = (sys.executable, "-m", "hivekeep", "mcp")


@pytest.fixture(scope="module")
def hive_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("scoped") / "hive.db"
    with Hive(db, embedder=LocalEmbedder(), settings=Settings()) as hive:
        for name in ("alice", "bob"):
            agent = hive.create_agent(name)
            agent.memorize(f"{name.title()} keeps the spare keys in the blue jar.", category="fact")
            agent.memorize(
                f"{name.title()} shares the wifi password.", category="fact", scope="shared"
            )
            agent.start_conversation(f"{name}'s chat")
    return db


@pytest.fixture(scope="module")
def server(hive_file: Path) -> Iterator[Server]:
    started = start_server(hive_file, hive_file.with_name("serve.log"), token=ADMIN)
    try:
        yield started
    finally:
        started.stop()


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hivekeep`` in its own process, as a person would run it beside the server."""
    return subprocess.run(
        [sys.executable, "-m", "hivekeep", *args, "--db", str(db)],
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def create_token(db: Path, label: str, *options: str) -> str:
    done = cli(db, "tokens", "create", label, *options, "--json")
    created = json.loads(done.stdout)
    assert created["label"] == label
    return str(created["token"])


def ids(db: Path, agent: str) -> dict[str, int]:
    """The agent's id, its first private and shared memory, and its conversation."""
    with sqlite3.connect(db) as conn:
        (agent_id,) = conn.execute("SELECT id FROM agents WHERE name = ?", (agent,)).fetchone()
        memory, shared = conn.execute(
            "SELECT min(id) FILTER (WHERE scope = 'private'), min(id) FILTER (WHERE scope = "
            "'shared') FROM memories WHERE agent_id = ?",
            (agent_id,),
        ).fetchone()
        (conversation,) = conn.execute(
            "SELECT id FROM conversations WHERE agent_id = ?", (agent_id,)
        ).fetchone()
    return {"agent": agent_id, "memory": memory, "shared": shared, "conversation": conversation}


def operations() -> list[tuple[str, str]]:
    """Every (method, path template) of the API, from the app's own OpenAPI document."""
    with Hive(":memory:", embedder=LocalEmbedder(), settings=Settings()) as hive:
        document = create_app(hive).openapi()
    return [
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", *MUTATING)
    ]


OPERATIONS = operations()


def fill(template: str, **values: Any) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), template)


def call(client: httpx.Client, method: str, path: str) -> httpx.Response:
    if method == "get":
        return client.get(path)
    return client.request(method.upper(), path, json={})


def test_every_route_of_the_app_has_a_scope_rule() -> None:
    unclassified = [(m, p) for m, p in OPERATIONS if route_kind(p) is None]
    assert unclassified == []
    assert {p for _, p in OPERATIONS} >= {"/api/agents/{agent}/memories", "/api/events"}


def test_a_token_of_one_agent_gets_404_on_every_route_of_another_as_for_a_missing_one(
    server: Server, hive_file: Path
) -> None:
    client = server.client(token=create_token(hive_file, "alice-app", "--agent", "alice"))
    bob = ids(hive_file, "bob")
    admin = server.client()
    before = admin.get("/api/agents/bob/memories").json()["total"]
    checked = 0
    for method, template in OPERATIONS:
        if "{agent}" in template:
            common = {"memory_id": bob["memory"], "tool": "recall"}
            hidden = call(client, method, fill(template, agent="bob", **common))
            missing = call(client, method, fill(template, agent="nobody", **common))
            by_id = call(client, method, fill(template, agent=bob["agent"], **common))
            missing_id = call(client, method, fill(template, agent=999_999, **common))
            assert (by_id.status_code, missing_id.status_code) == (404, 404), template
            assert by_id.json()["error"]["message"].replace(str(bob["agent"]), "N") == (
                missing_id.json()["error"]["message"].replace("999999", "N")
            )
        elif "{conversation_id}" in template:
            hidden = call(client, method, fill(template, conversation_id=bob["conversation"]))
            missing = call(client, method, fill(template, conversation_id=999_999))
            assert hidden.json()["error"]["message"].replace(
                str(bob["conversation"]), "N"
            ) == missing.json()["error"]["message"].replace("999999", "N")
            assert hidden.status_code == missing.status_code == 404, template
            checked += 1
            continue
        else:
            continue
        assert hidden.status_code == missing.status_code == 404, (method, template, hidden.text)
        assert hidden.json()["error"]["message"].replace("bob", "X") == (
            missing.json()["error"]["message"].replace("nobody", "X")
        )
        checked += 1
    assert checked >= 25  # every agent and conversation route, each method
    # bob is untouched: still there, his memories too
    assert admin.get("/api/agents/bob/memories").json()["total"] == before


def test_a_token_of_one_agent_acts_as_it_and_sees_only_it(server: Server, hive_file: Path) -> None:
    client = server.client(token=create_token(hive_file, "alice-rw", "--agent", "alice"))
    bob = ids(hive_file, "bob")
    assert [a["name"] for a in client.get("/api/agents").json()["agents"]] == ["alice"]
    saved = client.post(
        "/api/agents/alice/memories", json={"content": "Alice waters the fern.", "category": "fact"}
    )
    assert saved.status_code == 201, saved.text
    recalled = client.post("/api/agents/alice/tools/recall", json={"query": "fern"})
    assert "fern" in recalled.text
    conversation = ids(hive_file, "alice")["conversation"]
    assert client.get(f"/api/conversations/{conversation}/messages").status_code == 200
    # the hive-wide person routes and token management are not an agent's
    for method, path, body in (
        ("POST", "/api/agents", {"name": "mallory"}),
        ("DELETE", f"/api/memories/{bob['shared']}", None),
        ("GET", "/api/access-tokens", None),
        ("POST", "/api/access-tokens", {"label": "escalate"}),
        ("DELETE", "/api/access-tokens/alice-rw", None),
    ):
        refused = client.request(method, path, json=body)
        assert refused.status_code == 403, (method, path, refused.text)
    assert server.client().get(f"/api/agents/bob/memories/{bob['shared']}").status_code == 200
    assert client.get("/api/settings").status_code == 200
    assert client.post("/api/tokens", json={"text": "four words of text"}).status_code == 200


def test_a_read_only_token_reads_and_recalls_but_every_change_is_403(
    server: Server, hive_file: Path
) -> None:
    client = server.client(
        token=create_token(hive_file, "alice-ro", "--agent", "alice", "--read-only")
    )
    alice = ids(hive_file, "alice")
    before = server.client().get("/api/agents/alice/memories").json()["total"]
    refused = 0
    for method, template in OPERATIONS:
        if method not in MUTATING or template in READ_POSTS or route_kind(template) is None:
            continue
        tools = (
            [t for t in TOOLS_BY_NAME if t not in READ_ONLY_TOOLS] if "{tool}" in template else [""]
        )
        for tool in tools:
            path = fill(
                template,
                agent="alice",
                memory_id=alice["memory"],
                conversation_id=alice["conversation"],
                tool=tool,
                label="alice-ro",
                pending_id=1,
            )
            response = call(client, method, path)
            assert response.status_code == 403, (method, path, response.text)
            assert response.json()["error"]["code"] == "forbidden"
            refused += 1
    assert refused >= 20
    assert server.client().get("/api/agents/alice/memories").json()["total"] == before
    assert client.get("/api/agents/alice/memories").status_code == 200
    assert client.get(f"/api/agents/alice/memories/{alice['memory']}").status_code == 200
    assert client.get("/api/agents/alice/profile").status_code == 200
    for tool in sorted(READ_ONLY_TOOLS - {"review_memories"}):  # review needs an LLM
        answered = client.post(
            f"/api/agents/alice/tools/{tool}", json={"query": "keys"} if tool == "recall" else {}
        )
        assert answered.status_code == 200, (tool, answered.text)


def test_a_revoked_token_is_refused_at_once_by_the_running_server(
    server: Server, hive_file: Path
) -> None:
    token = create_token(hive_file, "short-lived", "--agent", "alice")
    client = server.client(token=token)
    assert client.get("/api/agents/alice").status_code == 200
    cli(hive_file, "tokens", "revoke", "short-lived")  # another process
    refused = client.get("/api/agents/alice")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    # the same through REST, with the admin token
    admin = server.client()
    made = admin.post("/api/access-tokens", json={"label": "rest-made", "agents": ["bob"]})
    assert made.status_code == 201, made.text
    rest_client = server.client(token=made.json()["token"])
    assert rest_client.get("/api/agents/bob").status_code == 200
    listed = admin.get("/api/access-tokens").json()
    assert {"label": "rest-made", "agents": ["bob"], "read_only": False}.items() <= next(
        t for t in listed if t["label"] == "rest-made"
    ).items()
    assert all("token" not in t for t in listed)
    assert admin.delete("/api/access-tokens/rest-made").status_code == 204
    assert rest_client.get("/api/agents/bob").status_code == 401
    assert server.client(authorized=False).get("/api/agents").status_code == 401


def test_the_hive_holds_salted_hashes_only(server: Server, hive_file: Path) -> None:
    one = create_token(hive_file, "hash-one", "--agent", "alice")
    two = create_token(hive_file, "hash-two")
    assert server.client(token=two).get("/api/agents").status_code == 200
    with sqlite3.connect(hive_file) as conn:
        rows = {
            label: (key_id, salt, digest)
            for label, key_id, salt, digest in conn.execute(
                "SELECT label, key_id, salt, secret_hash FROM access_tokens"
            )
        }
        stored = [str(v) for row in conn.execute("SELECT * FROM access_tokens") for v in row]
    for label, token in (("hash-one", one), ("hash-two", two)):
        key_id, salt, digest = rows[label]
        secret = token.split("_", 2)[2]
        assert token.startswith(f"hk_{key_id}_")
        assert hmac.compare_digest(
            digest, hmac.new(bytes.fromhex(salt), secret.encode(), hashlib.sha256).hexdigest()
        )
        assert not any(secret in value for value in stored)
        for suffix in ("", "-wal"):  # nowhere in the file, live or in the write-ahead log
            path = hive_file.with_name(hive_file.name + suffix)
            if path.exists():
                assert secret.encode() not in path.read_bytes()
    assert rows["hash-one"][1] != rows["hash-two"][1]  # a salt per token


def test_the_event_stream_of_a_scoped_token_carries_only_its_agents_events(
    server: Server, hive_file: Path
) -> None:
    client = server.client(token=create_token(hive_file, "alice-events", "--agent", "alice"))
    admin = server.client()
    hidden = client.get("/api/events", params={"agent": "bob"})
    missing = client.get("/api/events", params={"agent": "nobody"})
    assert hidden.status_code == missing.status_code == 404
    alice_id = ids(hive_file, "alice")["agent"]
    with client.stream("GET", "/api/events", timeout=STREAM_TIMEOUT) as response:
        assert response.status_code == 200
        events = read_sse(response)
        assert next(events).comment == "connected"
        for agent in ("bob", "bob", "alice"):
            made = admin.post(
                f"/api/agents/{agent}/memories",
                json={"content": f"{agent} stream note {secrets.token_hex(4)}", "category": "fact"},
            )
            assert made.status_code == 201
        seen = []
        for event in events:
            if event.data is not None:
                seen.append(event.data)
                if event.data["type"] == "memory:created":
                    break
    assert [e["agent_id"] for e in seen] == [alice_id]


@pytest.fixture(scope="module")
def mcp_url(hive_file: Path) -> Iterator[str]:
    """``hivekeep mcp --agent alice --http PORT`` on the same hive, with the admin token set."""
    port = free_port()
    log = hive_file.with_name("mcp.log")
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*MCP, "--agent", "alice", "--db", str(hive_file), "--http", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=server_env(ADMIN),
        )
    try:
        wait_for_port(port, process, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=15)


def rpc(url: str, token: str | None, method: str, params: dict[str, Any]) -> httpx.Response:
    """One JSON-RPC request over plain HTTP, as any MCP client first sends."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, headers=headers, timeout=30, trust_env=False)


def mcp_recall(url: str, token: str, query: str) -> CallToolResult:
    async def main() -> CallToolResult:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool("recall", {"query": query})

    return anyio.run(main)


def test_mcp_over_http_holds_tokens_to_their_agent_and_their_rights(
    mcp_url: str, hive_file: Path
) -> None:
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    assert rpc(mcp_url, None, "initialize", initialize).status_code == 401
    forged = "hk_0000000000000000_" + "x" * 43
    assert rpc(mcp_url, forged, "initialize", initialize).status_code == 401
    bob_token = create_token(hive_file, "bob-mcp", "--agent", "bob")
    assert rpc(mcp_url, bob_token, "initialize", initialize).status_code == 403
    reader = create_token(hive_file, "alice-mcp-ro", "--agent", "alice", "--read-only")
    for tool in sorted(set(TOOLS_BY_NAME) - READ_ONLY_TOOLS):
        call_ = {
            "name": tool,
            "arguments": {"content": "Alice now lives in Porto.", "category": "fact"},
        }
        refused = rpc(mcp_url, reader, "tools/call", call_)
        assert refused.status_code == 403, (tool, refused.text)
    recalled = mcp_recall(mcp_url, reader, "spare keys")
    assert not recalled.is_error
    assert "blue jar" in str(recalled.structured_content)
    assert "Porto" not in str(recalled.structured_content)
    cli(hive_file, "tokens", "revoke", "alice-mcp-ro")
    assert rpc(mcp_url, reader, "initialize", initialize).status_code == 401
    # the admin token, and a read-write token of alice, may write
    writer = create_token(hive_file, "alice-mcp-rw", "--agent", "alice")
    assert rpc(mcp_url, writer, "initialize", initialize).status_code == 200
    assert rpc(mcp_url, ADMIN, "initialize", initialize).status_code == 200


def test_on_postgresql_a_scoped_token_is_held_to_its_agent_and_revoked_at_once(
    tmp_path: Path,
) -> None:
    from tests.postgres import postgres_url

    with postgres_url() as url:
        with Hive(url, embedder=LocalEmbedder(), settings=Settings()) as hive:
            hive.create_agent("alice")
            hive.create_agent("bob")
            token = hive.tokens.create("pg-app", ["alice"], read_only=True).token
            _, key_id, secret = token.split("_", 2)
            stored = hive.store.token_by_key(key_id)  # the row as PostgreSQL holds it
            assert stored is not None and secret not in str(stored)
            expected = hmac.new(bytes.fromhex(stored.salt), secret.encode(), hashlib.sha256)
            assert stored.secret_hash == expected.hexdigest()
        server = start_server(url, tmp_path / "serve.log", token=ADMIN)
        try:
            client = server.client(token=token)
            assert [a["name"] for a in client.get("/api/agents").json()["agents"]] == ["alice"]
            assert client.get("/api/agents/bob").status_code == 404
            memory = {"content": "Alice plays the cello.", "category": "fact"}
            assert client.post("/api/agents/alice/memories", json=memory).status_code == 403
            assert server.client().delete("/api/access-tokens/pg-app").status_code == 204
            assert client.get("/api/agents/alice").status_code == 401
        finally:
            server.stop()


def test_scoped_tokens_do_not_let_a_server_without_the_admin_token_bind_beyond_loopback(
    hive_file: Path,
) -> None:
    create_token(hive_file, "public-hopes", "--agent", "alice")
    refused = subprocess.run(
        serve_command("--host", "0.0.0.0", "--port", "0", "--db", str(hive_file)),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert "Refusing to listen on 0.0.0.0" in refused.stderr


READS = (
    ("GET", "/api/agents", None),
    ("GET", "/api/agents/alice", None),
    ("GET", "/api/agents/alice/memories", None),
    ("GET", "/api/agents/alice/memories?query=spare+keys", None),
    ("GET", "/api/agents/alice/profile", None),
    ("POST", "/api/agents/alice/tools/recall", {"query": "spare keys"}),
)


HOLD_LOCK = """
import sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=1)
holder.execute("BEGIN IMMEDIATE")
holder.execute("UPDATE agents SET role = role")
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def write_locked(db: Path) -> Iterator[None]:
    """Another process holding the hive's write lock (as a long import would) in the block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate("")


def test_scoped_reads_keep_answering_while_another_process_holds_the_write_lock(
    server: Server, hive_file: Path
) -> None:
    """Recording a token's use never waits on the write lock (issue 32, item 5): before, every
    scoped request took it, and a read failed with 503 after the 10 s busy timeout."""
    tokens = [
        create_token(hive_file, f"alice-busy-{kind}", "--agent", "alice", *options)
        for kind, options in (("ro", ("--read-only",)), ("rw", ()))
    ]
    conversation = ids(hive_file, "alice")["conversation"]
    reads = [
        *READS,
        ("GET", f"/api/conversations/{conversation}/messages", None),
        ("GET", f"/api/conversations/{conversation}/context", None),
        ("GET", "/api/agents/alice/conversations", None),
        ("GET", "/api/settings", None),
    ]
    with write_locked(hive_file):
        for token in tokens:  # each never used: its first request would record the use
            client = server.client(token=token)
            for method, path, body in reads:
                answer = client.request(method, path, json=body, timeout=4)
                assert answer.status_code == 200, (method, path, answer.text)
            with client.stream("GET", "/api/events", timeout=4) as stream:
                assert next(read_sse(stream)).comment == "connected"
    # once the lock is free, the use is recorded
    client = server.client(token=tokens[0])
    assert client.get("/api/agents/alice").status_code == 200
    listed = server.client().get("/api/access-tokens").json()
    assert next(t for t in listed if t["label"] == "alice-busy-ro")["last_used_at"] is not None


def test_in_process_scoped_reads_do_not_wait_on_another_writer(hive_file: Path) -> None:
    """The same through the app in this process (TestClient)."""
    from fastapi.testclient import TestClient

    with Hive(hive_file, embedder=LocalEmbedder(), settings=Settings()) as hive:
        token = hive.tokens.create("alice-busy-local", ["alice"], read_only=True).token
        app = create_app(hive, token=ADMIN, watch_s=None)
        headers = {"Authorization": f"Bearer {token}"}
        with (
            TestClient(app, base_url="http://127.0.0.1", headers=headers) as client,
            write_locked(hive_file),
        ):
            for method, path, body in READS:
                started = time.monotonic()
                answer = client.request(method, path, json=body)
                assert answer.status_code == 200, (method, path, answer.text)
                assert time.monotonic() - started < 5, (method, path)  # busy timeout: 10 s


def events_until_closed(events: Iterator[SSE], within_s: float) -> list[dict[str, Any]]:
    """The events a stream carries until the server ends it; fails if it is still open after
    ``within_s`` seconds (a read timeout shorter than the 15 s heartbeat)."""
    seen = []
    deadline = time.monotonic() + within_s
    for event in events:
        assert time.monotonic() < deadline, "the stream is still open"
        if event.data is not None:
            seen.append(event.data)
    return seen


@pytest.mark.parametrize("revoker", ["rest", "cli"])
def test_revoking_a_token_ends_its_open_event_streams_at_once(
    server: Server, hive_file: Path, revoker: str
) -> None:
    label = f"alice-stream-{revoker}"
    token = create_token(hive_file, label, "--agent", "alice")
    admin = server.client()
    client = server.client(token=token)
    kept = server.client(token=create_token(hive_file, f"{label}-kept", "--agent", "alice"))
    timeout = httpx.Timeout(5.0)
    with (
        client.stream("GET", "/api/events", timeout=timeout) as revoked_stream,
        kept.stream("GET", "/api/events", timeout=timeout) as kept_stream,
    ):
        assert revoked_stream.status_code == kept_stream.status_code == 200
        kept_events, revoked_events = read_sse(kept_stream), read_sse(revoked_stream)
        assert next(revoked_events).comment == "connected"
        assert next(kept_events).comment == "connected"
        if revoker == "rest":
            assert admin.delete(f"/api/access-tokens/{label}").status_code == 204
        else:
            cli(hive_file, "tokens", "revoke", label)  # another process: seen within a second
        secret = f"after revocation {secrets.token_hex(4)}"
        memory = {"content": secret, "category": "fact"}
        made = admin.post("/api/agents/alice/memories", json=memory)
        assert made.status_code == 201
        new = {"memory_id": made.json()["memory"]["id"], "scope": "private"}
        assert new not in [e["data"] for e in events_until_closed(revoked_events, 3.0)]
        # another token's stream goes on, and carries the new memory
        created = next(e for e in (s.data for s in kept_events) if e is not None)
        assert created["data"] == new


def test_deleting_an_agent_ends_the_event_streams_of_its_tokens(
    server: Server, hive_file: Path
) -> None:
    admin = server.client()
    name = f"carol{secrets.token_hex(3)}"
    assert admin.post("/api/agents", json={"name": name}).status_code == 201
    client = server.client(token=create_token(hive_file, f"{name}-app", "--agent", name))
    with client.stream("GET", "/api/events", timeout=httpx.Timeout(5.0)) as stream:
        events = read_sse(stream)
        assert next(events).comment == "connected"
        assert admin.delete(f"/api/agents/{name}").status_code == 200
        assert [e["type"] for e in events_until_closed(events, 3.0)] == ["agent:deleted"]
    # from another process too: a stream watching an agent by name ends when it goes
    other = f"dave{secrets.token_hex(3)}"
    assert admin.post("/api/agents", json={"name": other}).status_code == 201
    with admin.stream(
        "GET", "/api/events", params={"agent": other}, timeout=httpx.Timeout(5.0)
    ) as stream:
        events = read_sse(stream)
        assert next(events).comment == "connected"
        cli(hive_file, "agents", "delete", other, "--yes")
        events_until_closed(events, 3.0)


def test_revoking_a_token_ends_its_open_mcp_session_stream(mcp_url: str, hive_file: Path) -> None:
    token = create_token(hive_file, "alice-mcp-session", "--agent", "alice")
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    opened = rpc(mcp_url, token, "initialize", initialize)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    headers = {
        "Authorization": f"Bearer {token}",
        "Mcp-Session-Id": session,
        "Mcp-Protocol-Version": "2025-06-18",
        "Accept": "application/json, text/event-stream",
    }
    notified = httpx.post(
        mcp_url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=headers,
        trust_env=False,
    )
    assert notified.status_code == 202, notified.text
    with (
        httpx.Client(trust_env=False, timeout=httpx.Timeout(8.0)) as http,
        http.stream("GET", mcp_url, headers=headers) as stream,
    ):
        assert stream.status_code == 200, stream.read()
        started = time.monotonic()
        cli(hive_file, "tokens", "revoke", "alice-mcp-session")
        for _ in stream.iter_lines():
            pass  # the server ends the stream; a read timeout (8 s) fails the test
        assert time.monotonic() - started < 6
    assert rpc(mcp_url, token, "initialize", initialize).status_code == 401
