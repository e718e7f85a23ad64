"""Isolation end to end: through every interface, agent A never reads, finds, changes or deletes
agent B's private memories or profile; B's shared memories A may read, never change.

One test per interface, each over real processes: the REST API of ``hivekeep serve`` (memories,
search, the tools, the profile, conversations, the per-agent event stream), the web UI (the very
calls its pages make while showing agent A, and its static files, which carry no data), and MCP
(``hivekeep mcp --agent A`` driven by the official client over stdio). After each, B's memories
and profile are read back unchanged.

The REST API's trust boundary is its token: one client may act as any agent by naming it in the
path. What isolation means there is that no route under ``/api/agents/A`` reaches B's private data.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, TextResourceContents

from hivekeep import Hive, Settings
from hivekeep.mcp_server import profile_uri
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server.ui import UI_DIR
from tests.integration.server_support import Server, read_sse, start_server

# B's private facts: none of these strings may ever reach A.
B_PRIVATE = "Bravo keeps the vault code 4417 under the blue lamp in the cellar."
B_PRIVATE_2 = "Bravo's diary is hidden behind the loose brick near the fireplace."
B_PROFILE_SECRET = "Bravo's bank PIN is 9931"
B_SECRETS = ("4417", "blue lamp", "loose brick", "9931", "diary")
B_PRIVATE_LATER = "Bravo buried the spare key under the loose brick by the old oak."
B_SHARED = "The team offsite is in Porto in October."
A_PRIVATE = "Alpha prefers espresso without sugar."
SEARCHES = ("vault code blue lamp", "where is the diary hidden", "bank PIN", "cellar", "Bravo")
SESSION_TIMEOUT_S = 60


def assert_no_secret(text: str, where: str) -> None:
    for secret in B_SECRETS:
        assert secret not in text, f"B's private {secret!r} reached A through {where}: {text[:500]}"


# REST -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("isolation")
    started = start_server(root / "hive.db", root / "serve.log")
    yield started
    started.stop()


@pytest.fixture
def api(server: Server) -> httpx.Client:
    return server.client()


def create(api: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(url, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


@pytest.fixture(scope="module")
def hive_ab(server: Server) -> dict[str, Any]:
    """Agents A and B, each with private memories, a profile and a conversation; B also has a
    shared memory (once per module: the archive would take a second one for a duplicate)."""
    api = server.client()
    tag = secrets.token_hex(3)
    a = create(api, "/api/agents", {"name": f"alpha-{tag}"})
    b = create(api, "/api/agents", {"name": f"bravo-{tag}"})
    ids = {"a": a, "b": b}
    ids["a_private"] = create(
        api, f"/api/agents/{a['id']}/memories", {"content": A_PRIVATE, "category": "preference"}
    )["memory"]["id"]
    for key, content in (("b_private", B_PRIVATE), ("b_private_2", B_PRIVATE_2)):
        ids[key] = create(
            api,
            f"/api/agents/{b['id']}/memories",
            {"content": content, "category": "fact", "subject": "Bravo", "importance": 9},
        )["memory"]["id"]
    ids["b_shared"] = create(
        api,
        f"/api/agents/{b['id']}/memories",
        {"content": B_SHARED, "category": "fact", "scope": "shared"},
    )["memory"]["id"]
    for agent, text in (
        (a, "## User\n- Alpha's user likes jazz\n"),
        (b, f"## Notes\n- {B_PROFILE_SECRET}\n"),
    ):
        assert api.put(f"/api/agents/{agent['id']}/profile", json={"text": text}).status_code == 200
        create(api, f"/api/agents/{agent['id']}/conversations", {"title": f"{agent['name']} chat"})
    return ids


def b_state(api: httpx.Client, ids: dict[str, Any]) -> dict[str, Any]:
    """Everything of B's that A must not change, read through B's own routes."""
    b = ids["b"]["id"]
    listed = api.get(f"/api/agents/{b}/memories", params={"limit": 200}).json()["memories"]
    kept = ("id", "content", "category", "subject", "importance", "scope", "updated_at")
    return {  # not ``age`` nor ``retrieval_count``: time passes, and A may find B's shared one
        "memories": [{k: m.get(k) for k in kept} for m in listed],
        "profile": api.get(f"/api/agents/{b}/profile").json(),
        "settings": api.get(f"/api/agents/{b}/settings").json(),
    }


def test_rest_api(api: httpx.Client, server: Server, hive_ab: dict[str, Any]) -> None:
    ids = hive_ab
    a, b = ids["a"]["id"], ids["b"]["id"]
    base = f"/api/agents/{a}"
    before = b_state(api, ids)
    seen: list[str] = []

    def get(url: str, **params: Any) -> Any:
        response = api.get(url, params=params)
        assert response.status_code == 200, response.text
        seen.append(response.text)
        return response.json()

    # a read timeout below the 15 s heartbeat: a missing event fails the test instead of hanging
    with api.stream("GET", "/api/events", params={"agent": a}, timeout=10) as stream:
        events = read_sse(stream)
        assert next(events).comment == "connected"

        # read: listings in every scope and filter, searches, one by one
        for scope in (None, "private", "shared"):
            listed = get(f"{base}/memories", **({"scope": scope} if scope else {}))
            ids_listed = {m["id"] for m in listed["memories"]}
            assert ids["b_private"] not in ids_listed and ids["b_private_2"] not in ids_listed
            assert (ids["b_shared"] in ids_listed) == (scope != "private")
            assert (ids["a_private"] in ids_listed) == (scope != "shared")
        get(f"{base}/memories", subject="Bravo")
        get(f"{base}/memories", category="fact", limit=200)
        for query in SEARCHES:
            found = get(f"{base}/memories", query=query)
            assert {m["id"] for m in found["memories"]} <= {ids["b_shared"], ids["a_private"]}
        # controls: the searches do find these memories, for whoever may see them
        own = api.get(f"/api/agents/{b}/memories", params={"query": SEARCHES[0]}).json()
        assert ids["b_private"] in {m["id"] for m in own["memories"]}
        offsite = get(f"{base}/memories", query="team offsite Porto")
        assert ids["b_shared"] in {m["id"] for m in offsite["memories"]}
        shared = get(f"{base}/memories/{ids['b_shared']}")
        assert (shared["content"], shared["shared_by"]) == (B_SHARED, ids["b"]["name"])
        for memory in (ids["b_private"], ids["b_private_2"]):
            response = api.get(f"{base}/memories/{memory}")
            assert response.status_code == 404
            seen.append(response.text)

        # change and delete: private and shared alike are B's alone
        for memory in (ids["b_private"], ids["b_shared"]):
            for response in (
                api.patch(f"{base}/memories/{memory}", json={"content": "hijacked by A"}),
                api.patch(f"{base}/memories/{memory}", json={"scope": "shared"}),
                api.delete(f"{base}/memories/{memory}"),
            ):
                assert response.status_code == 404, response.text
                seen.append(response.text)

        # the tools, as A
        def tool(name: str, **args: Any) -> httpx.Response:
            response = api.post(f"{base}/tools/{name}", json=args)
            seen.append(response.text)
            return response

        for query in SEARCHES:
            recalled = tool("recall", query=query, limit=50)
            assert recalled.status_code == 200
            hits = {m["id"] for m in recalled.json()["memories"]}
            assert hits <= {ids["b_shared"], ids["a_private"]}
        for scope in (None, "private", "shared"):
            listed_ids = {
                m["id"]
                for m in tool("list_memories", **({"scope": scope} if scope else {})).json()[
                    "memories"
                ]
            }
            assert ids["b_private"] not in listed_ids
        for memory in (ids["b_private"], ids["b_shared"]):
            for name, args in (
                ("update_memory", {"memory_id": memory, "content": "hijacked by A"}),
                ("update_memory", {"memory_id": memory, "scope": "private"}),
                ("forget", {"memory_id": memory}),
            ):
                response = tool(name, **args)
                assert (response.status_code, response.json()["error"]["code"]) == (
                    422,
                    "tool_error",
                )
        edited = tool("edit_profile", section="User", operation="append", content="Alpha was here")
        assert edited.status_code == 200, edited.text

        # A's profile, conversations and settings are A's own
        profile = get(f"{base}/profile")
        assert profile["agent_id"] == a and "Alpha was here" in profile["text"]
        replaced = api.put(f"{base}/profile", json={"text": "## User\n- replaced by A\n"})
        assert replaced.status_code == 200
        conversations = get(f"{base}/conversations")["conversations"]
        assert {c["agent_id"] for c in conversations} == {a}
        get(f"{base}/settings")

        # A's event stream carries A's events only: B writes, then A writes a marker
        create(api, f"/api/agents/{b}/memories", {"content": B_PRIVATE_LATER, "category": "fact"})
        api.put(f"/api/agents/{b}/profile", json={"text": f"## Notes\n- {B_PROFILE_SECRET}\n- x\n"})
        marker = create(
            api, f"{base}/memories", {"content": "Alpha's marker: kiwi.", "category": "fact"}
        )
        for event in events:
            if event.event is None:
                continue
            assert event.data is not None and event.data["agent_id"] == a, event
            seen.append(str(event.data))
            if (
                event.event == "memory:created"
                and event.data["data"].get("memory_id") == marker["memory"]["id"]
            ):
                break

    for text in seen:
        assert_no_secret(text, "the REST API")
    after = b_state(api, ids)
    later = [m for m in after["memories"] if m["content"] != B_PRIVATE_LATER]
    assert later == before["memories"]
    assert B_PROFILE_SECRET in after["profile"]["text"]
    assert after["settings"] == before["settings"]


# web UI -----------------------------------------------------------------------------------------
def ui_files() -> list[str]:
    """The URL of every file the UI serves: the page and its static modules and styles."""
    static = UI_DIR / "static"
    return [
        "/",
        *(f"/static/{p.relative_to(static).as_posix()}" for p in static.rglob("*") if p.is_file()),
    ]


def test_web_ui(server: Server, hive_ab: dict[str, Any]) -> None:
    ids = hive_ab
    a = ids["a"]["id"]
    ui = server.client()
    before = b_state(ui, ids)

    # the static routes serve files, never data (and nothing outside the UI folder)
    files = ui_files()
    assert len(files) > 2
    for url in files:
        response = ui.get(url)
        assert response.status_code == 200, url
        for text in (A_PRIVATE, B_SHARED, ids["a"]["name"], ids["b"]["name"], *B_SECRETS):
            assert text not in response.text, (url, text)
    for url in (
        "/static/..%2f__init__.py",
        "/static/%2e%2e/__init__.py",
        "/static/..%2f..%2fserver%2fapp.py",
        "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/hive.db",
        "/static/hive.db",
    ):
        response = ui.get(url)
        assert response.status_code == 404, (url, response.text[:200])
        assert "import" not in response.text and "[project]" not in response.text

    # what the pages fetch while showing agent A (app.js, memory.js, chat.js, settings.js)
    calls = [
        "/api/agents",
        f"/api/agents/{a}",
        f"/api/agents/{a}/profile",
        f"/api/agents/{a}/conversations",
        f"/api/agents/{a}/settings",
        "/api/settings",
        f"/api/agents/{a}/memories?limit=20&offset=0",
    ]
    for query in SEARCHES:
        for scope in ("", "&scope=private", "&scope=shared"):
            calls.append(f"/api/agents/{a}/memories?limit=20&offset=0&query={query}{scope}")
    calls += [
        f"/api/agents/{a}/memories?limit=20&offset=0&subject=Bravo",
        f"/api/agents/{a}/memories?limit=20&offset=0&category=fact",
    ]
    for url in calls:
        response = ui.get(url)
        assert response.status_code == 200, (url, response.text)
        if url != "/api/agents":  # the agent picker lists names and roles only
            assert_no_secret(response.text, f"the UI's {url}")
    for conversation in ui.get(f"/api/agents/{a}/conversations").json()["conversations"]:
        messages = ui.get(f"/api/conversations/{conversation['id']}/messages?limit=1000")
        assert messages.status_code == 200
        assert_no_secret(messages.text, "the UI's messages")

    # the memory item's edit and delete buttons, aimed at B's memories from A's page
    for memory in (ids["b_private"], ids["b_shared"]):
        edit = ui.patch(f"/api/agents/{a}/memories/{memory}", json={"content": "from A's page"})
        delete = ui.delete(f"/api/agents/{a}/memories/{memory}")
        assert (edit.status_code, delete.status_code) == (404, 404)
        assert_no_secret(edit.text + delete.text, "the UI's edit and delete")
    assert b_state(ui, ids) == before


@pytest.mark.slow
def test_web_ui_with_a_token_serves_its_files_but_no_data_without_it(tmp_path: Path) -> None:
    token = f"tok-{secrets.token_hex(16)}"
    secured = start_server(tmp_path / "hive.db", tmp_path / "serve.log", token=token)
    try:
        anonymous, right = secured.client(authorized=False), secured.client()
        created = right.post("/api/agents", json={"name": "bravo"})
        assert created.status_code == 201
        stored = right.post(
            "/api/agents/bravo/memories", json={"content": B_PRIVATE, "category": "fact"}
        )
        assert stored.status_code == 201
        for url in ui_files():
            response = anonymous.get(url)
            assert response.status_code == 200, url
            assert_no_secret(response.text, url)
        for url in ("/api/agents", "/api/agents/bravo/memories", "/api/agents/bravo/profile"):
            response = anonymous.get(url)
            assert response.status_code == 401, url
            assert_no_secret(response.text, url)
    finally:
        secured.stop()


# MCP --------------------------------------------------------------------------------------------
@pytest.fixture
def mcp_db(tmp_path: Path, local_embedder: LocalEmbedder) -> tuple[Path, dict[str, int]]:
    path = tmp_path / "hive.db"
    with Hive(path, embedder=local_embedder, settings=Settings()) as hive:
        alpha, bravo = hive.create_agent("alpha"), hive.create_agent("bravo")
        ids = {
            "a_private": alpha.memorize(A_PRIVATE, category="preference").memory.id,
            "b_private": bravo.memorize(B_PRIVATE, category="fact", subject="Bravo").memory.id,
            "b_private_2": bravo.memorize(B_PRIVATE_2, category="fact").memory.id,
            "b_shared": bravo.memorize(B_SHARED, category="fact", scope="shared").memory.id,
        }
        alpha.edit_profile("User", "append", "Alpha's user likes jazz")
        bravo.edit_profile("Notes", "append", B_PROFILE_SECRET)
    return path, ids


def b_snapshot(path: Path, local_embedder: LocalEmbedder) -> tuple[Any, ...]:
    with Hive(path, embedder=local_embedder, settings=Settings()) as hive:
        bravo = hive.get_agent("bravo")
        memories = bravo.list_memories(limit=200).memories
        return (
            tuple((m.id, m.content, m.scope, m.updated_at) for m in memories),
            bravo.profile_text(),
            hive.get_agent("alpha").profile_text(),
        )


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def test_mcp(mcp_db: tuple[Path, dict[str, int]], local_embedder: LocalEmbedder) -> None:
    path, ids = mcp_db
    before = b_snapshot(path, local_embedder)
    with Hive(path, embedder=local_embedder, settings=Settings()) as hive:
        b_uri = profile_uri(hive.get_agent("bravo"))

    async def scenario(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {"instructions": client.instructions or ""}
        seen["recall"] = [
            await client.call_tool("recall", {"query": query, "limit": 50}) for query in SEARCHES
        ]
        seen["offsite"] = await client.call_tool("recall", {"query": "team offsite Porto"})
        seen["list"] = [
            await client.call_tool("list_memories", args)
            for args in ({}, {"scope": "private"}, {"scope": "shared"}, {"subject": "Bravo"})
        ]
        seen["writes"] = [
            await client.call_tool(name, args)
            for memory in (ids["b_private"], ids["b_shared"])
            for name, args in (
                ("update_memory", {"memory_id": memory, "content": "hijacked by A"}),
                ("update_memory", {"memory_id": memory, "scope": "private"}),
                ("forget", {"memory_id": memory}),
            )
        ]
        seen["edit"] = await client.call_tool(
            "edit_profile", {"section": "User", "operation": "append", "content": "Alpha was here"}
        )
        seen["resources"] = [r.uri for r in (await client.list_resources()).resources]
        own = await client.read_resource(seen["resources"][0])
        seen["own_profile"] = [c.text for c in own.contents if isinstance(c, TextResourceContents)]
        try:
            other = await client.read_resource(b_uri)
            seen["b_profile"] = [str(c) for c in other.contents]
        except MCPError as exc:
            seen["b_profile_error"] = str(exc)
        return seen

    async def main() -> dict[str, Any]:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "hivekeep", "mcp", "--agent", "alpha", "--db", str(path)],
        )
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with Client(server) as client:
                return await scenario(client)

    seen = anyio.run(main)

    assert_no_secret(seen["instructions"], "the MCP instructions")
    for result in seen["recall"] + seen["list"]:
        assert not result.is_error, text_of(result)
        assert_no_secret(text_of(result), "an MCP search")
        found = {m["id"] for m in result.structured_content["memories"]}
        assert found <= {ids["a_private"], ids["b_shared"]}
    assert ids["b_shared"] in {m["id"] for m in seen["list"][0].structured_content["memories"]}
    offsite = seen["offsite"].structured_content["memories"]
    assert ids["b_shared"] in {m["id"] for m in offsite}  # a control: recall does find memories
    for result in seen["writes"]:
        assert result.is_error, text_of(result)
        assert_no_secret(text_of(result), "an MCP write")
    assert not seen["edit"].is_error, text_of(seen["edit"])
    assert seen["resources"] == ["hivekeep://agents/alpha/profile"]
    assert "Alpha was here" in seen["own_profile"][0]
    assert_no_secret(seen["own_profile"][0], "A's profile resource")
    assert "b_profile" not in seen, seen.get("b_profile")
    assert "Unknown resource" in seen["b_profile_error"]
    b_memories, b_profile, a_profile = b_snapshot(path, local_embedder)
    assert (b_memories, b_profile) == before[:2]
    assert B_PROFILE_SECRET in b_profile and "Alpha was here" in a_profile
