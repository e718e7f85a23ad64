"""``hivekeep remember`` (issue 36): a text or OpenAI-style messages from a file or standard
input, through a real ``hivekeep`` process talking to a local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.wire_servers import WireServer, openai_reply

pytestmark = pytest.mark.slow

SCRUBBED_PREFIXES = ("HIVEKEEP_", "MEMORY_", "COMPACTING_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")
LISBON = "The user moved to Lisbon in May 2024."
REPLY = (
    f'<archive>[{{"op": "add", "content": "{LISBON}", "category": "fact", "subject": "user"}}]'
    "</archive>\n<profile>\n## User\n- Lives in Lisbon\n</profile>"
)


@pytest.fixture
def db(db_path: Path, local_embedder: LocalEmbedder) -> Path:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("sam")
    return db_path


def run(
    db: Path, *args: str, stdin: str = "", url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    if url:
        env |= {"HIVEKEEP_LLM": "openai:m", "OPENAI_API_KEY": "t", "OPENAI_BASE_URL": f"{url}/v1"}
    return subprocess.run(
        [sys.executable, "-m", "hivekeep", "--db", str(db), "remember", "--agent", "sam", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_messages_from_a_file_are_remembered_and_the_answer_says_what(
    db: Path, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "user", "content": "I moved to Lisbon in May 2024."},
                {"role": "assistant", "content": "Welcome to Lisbon!"},
            ]
        )
    )
    with WireServer() as model:
        model.script(openai_reply(REPLY), openai_reply(REPLY))
        done = run(db, str(chat), url=model.url)
        assert done.returncode == 0, done.stderr
        assert "added: #" in done.stdout and LISBON in done.stdout
        assert "1 added, 0 reworded, 0 left alone (already known); profile updated." in done.stdout
        sent = json.dumps(model.last)
        assert "I moved to Lisbon in May 2024." in sent and "Welcome to Lisbon!" in sent
        again = run(db, "--json", stdin="Lisbon since May 2024.", url=model.url)  # stdin, a text
        assert again.returncode == 0, again.stderr
        answer = json.loads(again.stdout)
        assert answer["added"] == [] and answer["left_alone"][0]["content"] == LISBON


def test_without_a_model_it_names_hivekeep_llm_and_stores_nothing(db: Path) -> None:
    done = run(db, stdin="I moved to Lisbon.")
    assert done.returncode == 1
    assert "HIVEKEEP_LLM" in done.stderr
    with Hive(db, settings=Settings()) as hive:
        agent = hive.get_agent("sam")
        assert agent.conversations() == [] and agent.list_memories().total == 0
