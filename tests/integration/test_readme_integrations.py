"""The README's three integration examples run as written, each in a fresh process, with the
hosted APIs replaced by a local server that speaks their wire formats (OPENAI_BASE_URL,
ANTHROPIC_BASE_URL): the Responses API for the Agents SDK, the Messages API for Claude."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("agents")

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.test_llm_providers import anthropic_reply
from tests.wire_servers import Reply, WireServer, openai_reply

ROOT = Path(__file__).parents[2]


def examples() -> dict[str, str]:
    """The python blocks of the README's Integrations section, by their ### heading."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Integrations") :]
    section = section[: section.index("\n## ", 1)]
    found = re.findall(r"### ([^\n:]+).*?```python\n(.+?)\n```", section, re.DOTALL)
    return dict(found)


def responses_reply(*output: dict[str, Any]) -> Reply:
    """A Responses API body (what the Agents SDK's default model reads)."""
    return Reply(
        body={
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "served-model",
            "status": "completed",
            "output": list(output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 20,
                "output_tokens": 5,
                "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


def local_server_settings(server: WireServer) -> dict[str, str]:
    """The variables the README sets to run the Agents SDK example on a local server (its sh
    block), with the base URL moved to the test's server."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### OpenAI Agents SDK") : readme.index("### Anthropic")]
    block = re.search(r"```sh\n(.+?)\n```", section, re.DOTALL)
    assert block, "the Agents SDK section says what to set for a local server"
    settings: dict[str, str] = {}
    for line in block.group(1).splitlines():
        words = line.split("#", 1)[0].split()
        assert words[0] == "export", line
        for word in words[1:]:
            name, _, value = word.partition("=")
            settings[name] = value
    assert settings["OPENAI_BASE_URL"].startswith("http://localhost:")
    return {**settings, "OPENAI_BASE_URL": server.url}


def run_example(name: str, cwd: Path, server: WireServer, **settings: str) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HIVEKEEP_", "OPENAI_"))},
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "test-key",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "PYTHONPATH": str(ROOT),
        **settings,
    }
    done = subprocess.run(
        [sys.executable, "-c", examples()[name]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def memories(path: Path, embedder: LocalEmbedder) -> list[str]:
    with Hive(path, embedder=embedder, settings=Settings()) as hive:
        return [m.content for m in hive.get_agent("assistant").list_memories().memories]


def test_the_readme_has_the_three_examples() -> None:
    assert list(examples()) == ["LangGraph", "OpenAI Agents SDK", "Anthropic"]


def test_the_langgraph_example(tmp_path: Path, server: WireServer) -> None:
    assert run_example("LangGraph", tmp_path, server) == "Ann drinks oolong tea"


def test_the_openai_agents_example_on_a_local_server(
    tmp_path: Path, server: WireServer, local_embedder: LocalEmbedder
) -> None:
    """As written, with only the variables the README lists: chat completions, the model names
    the server gives, no traces sent anywhere."""
    arguments = {"content": "The user drinks oolong tea", "category": "preference"}
    server.script(
        openai_reply(None, [("call_1", "memorize", json.dumps(arguments))], finish="tool_calls"),
        openai_reply("Noted."),
    )

    settings = local_server_settings(server)
    assert run_example("OpenAI Agents SDK", tmp_path, server, **settings) == "Noted."
    assert [r.path for r in server.requests] == ["/chat/completions", "/chat/completions"]
    assert {r.body["model"] for r in server.requests} == {settings["OPENAI_DEFAULT_MODEL"]}
    system = server.requests[0].body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert "# Memory" in system["content"]  # the session's instructions bring the memory block
    assert memories(tmp_path / "memory.db", local_embedder) == ["The user drinks oolong tea"]
    with Hive(tmp_path / "memory.db", embedder=local_embedder, settings=Settings()) as hive:
        conversation = hive.get_agent("assistant").conversations()[0]
        assert hive.get_agent("assistant").messages(conversation.id)[0].content == (
            "I drink oolong tea; remember that."
        )


def test_the_anthropic_example(
    tmp_path: Path, server: WireServer, local_embedder: LocalEmbedder
) -> None:
    create = {
        "command": "create",
        "path": "/memories/drinks/tea.md",
        "file_text": "The user drinks oolong tea",
    }
    server.script(
        anthropic_reply(
            [{"type": "tool_use", "id": "t1", "name": "memory", "input": create}],
            stop="tool_use",
        ),
        anthropic_reply([{"type": "text", "text": "Noted."}]),
    )

    assert run_example("Anthropic", tmp_path, server) == "Noted."
    assert memories(tmp_path / "memory.db", local_embedder) == ["The user drinks oolong tea"]
    written = tmp_path / "memory" / "memories" / "drinks" / "tea.md"  # the file, as Claude wrote it
    assert written.read_text() == "The user drinks oolong tea"
