"""Chat exports (issue 36): ChatGPT's and Claude's conversations.json (and ChatGPT's zip) become
conversations of an agent, through the CLI and the Python API; a bad file stores nothing."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hivekeep import Agent, Hive, ProviderError, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from tests.chat_exports import chatgpt_conversation, chatgpt_short, claude_conversation

from .conversation_support import maintenance_reply


@pytest.fixture
def hive(scripted_hive: Hive) -> Hive:
    return scripted_hive


@pytest.fixture
def agent(hive: Hive) -> Agent:
    return hive.create_agent("sam")


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def texts(agent: Agent, conversation_id: int) -> list[tuple[str, str, str]]:
    return [(m.role, m.content, m.created_at) for m in agent.messages(conversation_id)]


def test_chatgpt_keeps_the_current_branch_text_turns_and_times(
    agent: Agent, tmp_path: Path
) -> None:
    path = write(tmp_path / "conversations.json", [chatgpt_conversation()])
    report = agent.import_chats("chatgpt", path)
    assert (report.conversations, report.created, report.messages) == (1, 1, 4)
    (conversation,) = agent.conversations()
    assert conversation.title == "Moving to Lisbon"
    assert conversation.created_at == "2024-05-01T10:00:00.000000Z"
    assert texts(agent, conversation.id) == [
        ("user", "I am moving to Lisbon in May.", "2024-05-01T10:00:00.000000Z"),
        ("assistant", "Congratulations!", "2024-05-01T10:00:05.000000Z"),
        ("user", "My dog is called Rex.", "2024-05-01T10:01:10.000000Z"),
        ("assistant", "Rex will love Lisbon.", "2024-05-01T10:01:15.000000Z"),
    ]


def test_claude_export_and_a_rerun_imports_nothing_twice(agent: Agent, tmp_path: Path) -> None:
    path = write(tmp_path / "conversations.json", [claude_conversation()])
    assert agent.import_chats("claude", path).messages == 2
    again = agent.import_chats("claude", path)
    assert (again.created, again.messages) == (0, 0)
    (conversation,) = agent.conversations()
    assert conversation.title == "Garden plans"
    assert texts(agent, conversation.id) == [
        ("user", "I grow tomatoes on my balcony.", "2024-06-02T08:00:00.000000Z"),
        ("assistant", "Tomatoes like full sun.", "2024-06-02T08:00:05.000000Z"),
    ]


def test_a_grown_conversation_gets_only_its_new_messages(agent: Agent, tmp_path: Path) -> None:
    chat = claude_conversation()
    path = write(tmp_path / "c.json", [chat])
    agent.import_chats("claude", path)
    chat["chat_messages"].append(
        {
            "uuid": "m4",
            "text": "And basil.",
            "content": [],
            "sender": "human",
            "created_at": "2024-06-03T08:00:00Z",
        }
    )
    write(path, [chat])
    assert agent.import_chats("claude", path).updated == 1
    (conversation,) = agent.conversations()
    assert [m.content for m in agent.messages(conversation.id)][-1] == "And basil."
    assert len(agent.messages(conversation.id)) == 3


def test_the_chatgpt_zip_is_read_too(agent: Agent, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("conversations.json", json.dumps([chatgpt_conversation()]))
        z.writestr("chat.html", "<html></html>")
    assert agent.import_chats("chatgpt", archive).messages == 4


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("not json at all", "expected a JSON list"),
        ('{"conversations": []}', "expected a JSON list"),
        (json.dumps([chatgpt_conversation()])[:-40], "not valid JSON"),
        (json.dumps([chatgpt_conversation(), {"title": "x"}]), "conversation 2"),
        (json.dumps([chatgpt_conversation(), 7]), "conversation 2"),
    ],
)
def test_bad_input_names_the_file_and_where_and_stores_nothing(
    agent: Agent, tmp_path: Path, content: str, where: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValidationError, match=where) as caught:
        agent.import_chats("chatgpt", path)
    assert str(path) in str(caught.value)
    assert agent.conversations() == []


def test_the_cli_imports_and_a_bad_file_is_one_line_and_a_non_zero_exit(
    agent: Agent, db_path: Path, tmp_path: Path
) -> None:
    good = write(tmp_path / "conversations.json", [claude_conversation()])
    result = CliRunner().invoke(
        cli, ["--db", str(db_path), "import-chats", "claude", str(good), "--agent", "sam"]
    )
    assert result.exit_code == 0, result.output
    assert "1 new conversations and 2 messages" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--db", str(db_path), "import-chats", "claude", str(bad), "--agent", "sam"]
    )
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert str(bad) in line


def test_bootstrap_runs_maintenance_oldest_first_and_a_rerun_goes_on(
    agent: Agent, llm: ScriptedLLM, tmp_path: Path
) -> None:
    newer = chatgpt_short("new", "Newer", 1717200000.0, "I started learning Portuguese.")
    older = chatgpt_short("old", "Older", 1704067200.0, "I adopted a dog called Rex.")
    path = write(tmp_path / "conversations.json", [newer, older])  # newest first, as ChatGPT
    rex = {"op": "add", "content": "The user adopted a dog called Rex", "subject": "user"}
    llm.enqueue(maintenance_reply([rex], None), ProviderError("the provider is down"))
    report = agent.import_chats("chatgpt", path, bootstrap=True)
    assert report.bootstrap is not None and report.bootstrap.left == 1
    assert "I adopted a dog called Rex." in llm.calls[0].text  # the older one first
    memory = agent.recall("dog").hits[0].memory
    assert memory.created_at.startswith("2024-01-01")  # dated when it was said
    portuguese = {"op": "add", "content": "The user learns Portuguese", "subject": "user"}
    llm.enqueue(maintenance_reply([portuguese], None))
    again = agent.import_chats("chatgpt", path, bootstrap=True)
    assert again.messages == 0 and again.bootstrap is not None
    assert (len(again.bootstrap.outcomes), again.bootstrap.left) == (1, 0)
    assert "I started learning Portuguese." in llm.calls[-1].text


def test_bootstrap_without_a_model_stores_nothing(
    db_path: Path, local_embedder: LocalEmbedder, tmp_path: Path
) -> None:
    path = write(tmp_path / "conversations.json", [claude_conversation()])
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("sam")
        with pytest.raises(ValidationError, match="HIVEKEEP_LLM"):
            agent.import_chats("claude", path, bootstrap=True)
        assert agent.conversations() == []
        with pytest.raises(ValidationError, match="HIVEKEEP_LLM"):
            hive.import_chats("claude", path, agent="newbie", bootstrap=True)
        assert [a.name for a in hive.agents()] == ["sam"]


def test_the_unzipped_folder_is_read_too(agent: Agent, tmp_path: Path) -> None:
    write(tmp_path / "conversations.json", [claude_conversation()])
    assert agent.import_chats("claude", tmp_path).messages == 2


def test_a_large_export_is_read_one_conversation_at_a_time(tmp_path: Path) -> None:
    """Bounded memory: parsing a ~9 MB export never holds more than a few conversations."""
    import tracemalloc

    from hivekeep.services.transfer.chat_exports import read_chats

    filler = "x" * 2000
    path = tmp_path / "conversations.json"
    with path.open("w", encoding="utf-8") as file:
        file.write("[")
        for i in range(3000):
            chat = chatgpt_short(f"c{i}", f"Chat {i}", 1704067200.0 + i, f"{filler} {i}")
            file.write(("," if i else "") + json.dumps(chat))
        file.write("]")
    assert path.stat().st_size > 8_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in read_chats("chatgpt", path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 3000
    assert peak < 2_000_000


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_import_rerun_and_bootstrap_on_both_backends(
    backend: str, local_embedder: LocalEmbedder, tmp_path: Path
) -> None:
    from tests.postgres import hive_target

    path = write(tmp_path / "conversations.json", [claude_conversation(), claude_new_year()])
    llm = ScriptedLLM(context_window=16_000)
    tomato = {"op": "add", "content": "The user grows tomatoes on the balcony", "subject": "user"}
    llm.enqueue(maintenance_reply([], None), maintenance_reply([tomato], None))
    with hive_target(backend) as target, Hive(target, embedder=local_embedder, llm=llm) as hive:
        agent = hive.create_agent("sam")
        first = agent.import_chats("claude", path, bootstrap=True)
        assert (first.created, first.messages) == (2, 3)
        assert first.bootstrap is not None and first.bootstrap.left == 0
        assert "I grow tomatoes" in llm.calls[1].text  # 2024-06-02, after 2024-01-01
        again = agent.import_chats("claude", path, bootstrap=True)
        assert (
            again.created,
            again.messages,
            again.bootstrap.outcomes if again.bootstrap else 1,
        ) == (0, 0, ())
        assert agent.recall("tomatoes").hits[0].memory.content == tomato["content"]


def claude_new_year() -> dict[str, Any]:
    """An older Claude conversation with one human message."""
    return {
        "uuid": "old-one",
        "name": "New year",
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-01T00:00:00Z",
        "chat_messages": [
            {
                "uuid": "n1",
                "text": "Happy new year!",
                "content": [],
                "sender": "human",
                "created_at": "2024-01-01T00:00:00Z",
            }
        ],
    }


def test_the_cli_creates_the_agent_but_not_for_a_bad_file(db_path: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    args = ["--db", str(db_path), "import-chats", "claude"]
    refused = CliRunner().invoke(cli, [*args, str(bad), "--agent", "newbie"])
    assert refused.exit_code == 1 and "expected a JSON list" in refused.output
    assert not db_path.exists()  # not even a hive file
    good = write(tmp_path / "conversations.json", [claude_conversation()])
    done = CliRunner().invoke(cli, [*args, str(good), "--agent", "newbie"])
    assert done.exit_code == 0, done.output
    with Hive(db_path, settings=Settings()) as hive:
        assert len(hive.get_agent("newbie").conversations()) == 1
