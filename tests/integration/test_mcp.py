"""``hivekeep mcp`` driven by the official MCP client, as a host would drive it.

Every test starts a real ``hivekeep mcp`` subprocess on a real hive file in tmp_path (with the real
bundled embedder) and talks to it with ``mcp.Client``: over stdio, in both the 2026 per-request
protocol and the initialize handshake that most hosts still speak, and once over streamable HTTP
on 127.0.0.1. Each scenario returns what the client saw; the assertions run outside the event loop.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent, TextResourceContents

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.tools import tool_schemas
from tests.wire_servers import WireServer, openai_reply

T = TypeVar("T")

AGENT = "assistant"
PROFILE_URI = "hivekeep://agents/assistant/profile"
LISBON = "The user moved to Lisbon in May 2024."
SESSION_TIMEOUT_S = 30


@pytest.fixture
def db(tmp_path: Path, local_embedder: LocalEmbedder) -> Path:
    """A hive file with one agent, 'assistant', whose profile already has a line."""
    path = tmp_path / "hive.db"
    with Hive(path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent(AGENT, role="General helper")
        agent.edit_profile("User", "append", "Prefers short answers")
    return path


def command(db: Path, *extra: str) -> list[str]:
    return ["-m", "hivekeep", "mcp", "--agent", AGENT, "--db", str(db), *extra]


def over_stdio(db: Path, scenario: Callable[[Client], Awaitable[T]], *, mode: str = "auto") -> T:
    """Run ``scenario`` against a fresh ``hivekeep mcp`` subprocess; returns what it returned."""
    # the test's environment (its PYTHONPATH: this tree's hivekeep, its settings), not the SDK's
    # short default list
    server = StdioServerParameters(command=sys.executable, args=command(db), env=dict(os.environ))
    return _run(Client(server, mode=mode), scenario)


def _run(client: Client, scenario: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with client:
                return await scenario(client)

    return anyio.run(main)


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def profile_of(db: Path, local_embedder: LocalEmbedder) -> tuple[str, str]:
    """The agent's profile text and system-prompt block, read from the file."""
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.get_agent(AGENT)
        return agent.profile_text(), agent.system_prompt_block()


# -- stdio -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_lists_the_seven_tools_with_their_one_definition(db: Path, mode: str) -> None:
    async def scenario(client: Client) -> list[dict[str, Any]]:
        listed = await client.list_tools()
        return [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools]

    tools = over_stdio(db, scenario, mode=mode)

    assert tools[:7] == tool_schemas("mcp")
    assert [tool["name"] for tool in tools[7:]] == ["remember"]  # the host's, not a model's


def test_remember_without_a_model_is_a_tool_error_naming_hivekeep_llm(db: Path) -> None:
    async def scenario(client: Client) -> tuple[CallToolResult, CallToolResult]:
        bad = await client.call_tool("remember", {"text": "x", "messages": []})
        return bad, await client.call_tool("remember", {"text": "I moved to Lisbon."})

    bad, unconfigured = over_stdio(db, scenario)
    assert bad.is_error and "either 'text'" in text_of(bad)
    assert unconfigured.is_error and "HIVEKEEP_LLM" in text_of(unconfigured)


def test_remember_runs_the_maintenance_call_of_the_hosts_model(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = (
        f'<archive>[{{"op": "add", "content": "{LISBON}", "category": "fact"}}]</archive>\n'
        "<profile>\n## User\n- Lives in Lisbon\n</profile>"
    )
    with WireServer() as model:
        model.script(openai_reply(reply))
        monkeypatch.setenv("HIVEKEEP_LLM", "openai:test-model")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{model.url}/v1")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        messages = [{"role": "user", "content": "I moved to Lisbon in May 2024."}]

        async def scenario(client: Client) -> CallToolResult:
            return await client.call_tool("remember", {"messages": messages})

        result = over_stdio(db, scenario)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert [m["content"] for m in result.structured_content["added"]] == [LISBON]
    assert "I moved to Lisbon in May 2024." in json.dumps(model.last)


def test_memorize_then_recall(db: Path, local_embedder: LocalEmbedder) -> None:
    async def scenario(client: Client) -> tuple[CallToolResult, CallToolResult]:
        saved = await client.call_tool(
            "memorize", {"content": LISBON, "category": "fact", "subject": "user"}
        )
        found = await client.call_tool("recall", {"query": "where does the user live?"})
        return saved, found

    saved, found = over_stdio(db, scenario)

    assert not saved.is_error, text_of(saved)
    assert saved.structured_content["content"] == LISBON
    assert saved.structured_content["duplicate"] is False
    assert not found.is_error, text_of(found)
    top = found.structured_content["memories"][0]
    assert (top["id"], top["content"]) == (saved.structured_content["id"], LISBON)
    assert top["match"] == "strong" and "vector" in top["found_by"]  # why it was found
    assert top["why"].startswith("strong match: ")
    assert LISBON in text_of(found)  # the JSON text, for hosts that ignore structured content
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        assert [m.content for m in hive.get_agent(AGENT).list_memories().memories] == [LISBON]


def test_profile_is_a_resource_read_fresh_and_the_instructions_as_of_start(
    db: Path, local_embedder: LocalEmbedder
) -> None:
    profile_at_start, block_at_start = profile_of(db, local_embedder)

    async def scenario(client: Client) -> dict[str, Any]:
        listed = await client.list_resources()
        before = await client.read_resource(PROFILE_URI)
        edited = await client.call_tool(
            "edit_profile",
            {"section": "User", "operation": "append", "content": "Lives in Lisbon"},
        )
        after = await client.read_resource(PROFILE_URI)
        return {
            "instructions": client.instructions,
            "listed": listed.resources,
            "before": before.contents,
            "edited": edited,
            "after": after.contents,
        }

    seen = over_stdio(db, scenario)

    (resource,) = seen["listed"]
    assert (resource.uri, resource.mime_type) == (PROFILE_URI, "text/markdown")
    (before,) = seen["before"]
    assert isinstance(before, TextResourceContents)
    assert before.text == profile_at_start
    assert "Prefers short answers" in before.text
    assert not seen["edited"].is_error, text_of(seen["edited"])
    (after,) = seen["after"]
    assert isinstance(after, TextResourceContents)
    assert "Lives in Lisbon" in after.text
    assert (after.text, after.mime_type) == (profile_of(db, local_embedder)[0], "text/markdown")
    assert seen["instructions"] == block_at_start
    assert "Prefers short answers" in block_at_start


def test_invalid_argument_is_a_tool_error_and_writes_nothing(db: Path) -> None:
    async def scenario(client: Client) -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        invalid = await client.call_tool(
            "memorize", {"content": LISBON, "category": "gossip", "colour": "blue"}
        )
        unknown = await client.call_tool("remember_all", {"content": LISBON})
        listed = await client.call_tool("list_memories", {})
        return invalid, unknown, listed

    invalid, unknown, listed = over_stdio(db, scenario)

    assert invalid.is_error
    message = text_of(invalid)
    assert message.startswith("Invalid arguments for memorize:")
    assert "'category'" in message
    assert "'colour' is not a parameter of memorize" in message
    assert unknown.is_error
    assert "Unknown tool 'remember_all'" in text_of(unknown)
    assert not listed.is_error
    assert listed.structured_content["total"] == 0


# -- streamable HTTP ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SESSION_TIMEOUT_S
    while time.monotonic() < deadline:
        assert server.poll() is None, f"hivekeep mcp --http exited:\n{log.read_text()}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"hivekeep mcp --http did not listen on {port}:\n{log.read_text()}")


@pytest.mark.slow
def test_streamable_http_lists_tools_and_calls_one(db: Path, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"

    async def scenario(client: Client) -> tuple[list[str], CallToolResult]:
        listed = await client.list_tools()
        saved = await client.call_tool("memorize", {"content": LISBON, "category": "fact"})
        return [tool.name for tool in listed.tools], saved

    with (
        log.open("wb") as stderr,
        subprocess.Popen(
            [sys.executable, *command(db, "--http", str(port))],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        ) as server,
    ):
        try:
            wait_for_port(port, server, log)
            names, saved = _run(Client(f"http://127.0.0.1:{port}/mcp"), scenario)
        finally:
            server.terminate()
            server.wait(timeout=10)

    assert names == [tool["name"] for tool in tool_schemas("mcp")] + ["remember"]
    assert not saved.is_error, text_of(saved)
    assert saved.structured_content["content"] == LISBON
    assert f"http://127.0.0.1:{port}/mcp" in log.read_text()
