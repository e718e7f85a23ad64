"""The context window of a model hivekeep does not know (issue 26, item 7): HIVEKEEP_CONTEXT_WINDOW
for the hive's models, ``agent.configure(context_window=...)`` / ``hivekeep agents configure
--context-window`` for one agent's chat model; its window sets when compaction starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hivekeep import Hive, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.core.tokens import count_tokens
from hivekeep.providers.llm import DEFAULT_CONTEXT_WINDOW
from hivekeep.providers.llm.base import estimate_usage
from hivekeep.testing import ScriptedLLM
from tests.integration.conversation_support import by_prompt, call_site_of, maintenance_reply
from tests.support import VectorTable

LOCAL = "openai:my-local-model"  # a name no table knows


@pytest.fixture(autouse=True)
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "anything")  # a local server takes any key
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called here


def test_the_environment_sets_the_window_of_the_hives_models(
    db_path: Path, table: VectorTable
) -> None:
    with Hive(db_path, embedder=table, llm=LOCAL, settings=Settings()) as hive:
        assert hive.agent("a").chat_model().context_window == DEFAULT_CONTEXT_WINDOW
    env = {"HIVEKEEP_LLM": LOCAL, "HIVEKEEP_CONTEXT_WINDOW": "32768"}
    with Hive(db_path, embedder=table, settings=Settings.from_env(env)) as hive:
        agent = hive.agent("a")
        assert agent.chat_model().context_window == 32768
        assert agent.upkeep_model("maintenance").context_window == 32768
    with pytest.raises(ValidationError, match="HIVEKEEP_CONTEXT_WINDOW"):
        Settings.from_env({"HIVEKEEP_CONTEXT_WINDOW": "0"})
    with pytest.raises(ValidationError, match="too small"):
        Settings.from_env({"HIVEKEEP_CONTEXT_WINDOW": "100"})


def test_an_agent_sets_its_own_chat_models_window(db_path: Path, table: VectorTable) -> None:
    settings = Settings(context_window=16384)
    with Hive(db_path, embedder=table, llm=LOCAL, settings=settings) as hive:
        ada, bob = hive.agent("ada"), hive.agent("bob")
        assert ada.configure(context_window=65536).context_window == 65536
        assert ada.chat_model().context_window == 65536
        assert bob.chat_model().context_window == 16384
        ada.configure(model="openai:other-local-model")
        assert ada.chat_model().context_window == 65536  # the agent's, whatever its model
        with pytest.raises(ValidationError, match="context_window"):
            ada.configure(context_window=0)
        with pytest.raises(ValidationError, match="needs at least 2,048"):  # issue 34
            ada.configure(context_window=100)
        ada.configure(context_window=None)
        assert ada.chat_model().context_window == 16384
        assert ada.settings().to_json()["context_window"] is None


def test_agents_configure_context_window(db_path: Path) -> None:
    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(cli, [*args, "--db", str(db_path)])
        assert result.exit_code == code, result.output
        return result.output

    run("agents", "create", "ada")
    shown = run("agents", "configure", "ada", "--model", LOCAL, "--context-window", "32768")
    assert "context_window: 32768" in shown
    with Hive(db_path, settings=Settings()) as hive:
        assert hive.get_agent("ada").chat_model().context_window == 32768
    assert "context_window: hive default" in run(
        "agents", "configure", "ada", "--context-window", "default"
    )
    bad = run("agents", "configure", "ada", "--context-window", "lots", code=2)
    assert "'lots' is not a number of tokens" in bad and "--context-window" in bad


@pytest.mark.parametrize("window", [4096, 6000])
def test_a_small_window_compacts_before_it_fills(
    db_path: Path, table: VectorTable, window: int
) -> None:
    """Issue 34: with a fixed 2,000-token minimum batch and a keep-window blind to the system
    prompt and tool schemas, a 4,096 window reached 104-125 % before the first fold."""
    replies = by_prompt(maintenance=maintenance_reply([]))
    sent: list[int] = []  # tokens of every chat prompt, tool schemas included

    def reply(messages: list[Any], tools: Any) -> str:
        if call_site_of(messages) == "chat":
            sent.append(estimate_usage(messages, "").input_tokens + count_tokens(json.dumps(tools)))
            return "Noted. " + "Here is a longer answer about the trip plans. " * 8
        return replies(messages, tools)

    llm = ScriptedLLM([reply] * 200, context_window=window)
    with Hive(db_path, embedder=table, llm=llm, settings=Settings()) as hive:
        agent = hive.create_agent("ada")
        conversation = agent.conversations.start().id
        compactions = 0
        for turn in range(30):
            done = agent.chat(
                f"Turn {turn}: " + "we talked about the trip to Porto. " * 15, conversation
            )
            compactions += done.compaction is not None
            assert agent.context(conversation).tokens <= window
        assert compactions >= 2
        assert max(sent) <= window, (max(sent), window)


def test_a_fixed_part_too_big_for_the_window_is_named(db_path: Path, table: VectorTable) -> None:
    llm = ScriptedLLM(context_window=2048)
    with Hive(db_path, embedder=table, llm=llm, settings=Settings()) as hive:
        agent = hive.create_agent("ada")
        warning = agent.room_warning()
        assert warning is not None and "2,048-token window" in warning
        conversation = agent.conversations.start().id
        assert agent.compaction_waiting(conversation) is not None
    with Hive(db_path, embedder=table, llm=ScriptedLLM(context_window=8192)) as hive:
        assert hive.get_agent("ada").room_warning() is None
