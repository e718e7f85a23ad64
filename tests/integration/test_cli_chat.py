"""``hivekeep chat``, ``compact`` and ``profile regenerate``, run as real subprocesses.

Each command runs as ``python -m hivekeep`` against a real hive file in tmp_path, with the real
bundled embedder and ``HIVEKEEP_LLM=openai:test-model`` aimed (``OPENAI_BASE_URL``) at a local
server speaking the OpenAI chat-completions wire format. The real OpenAI SDK sends the requests, so
the tests check the prompts that really left the process, and what came back stored in the hive.

The scripted ``Model`` answers each request by what it is: the summariser, maintenance and
profile-compile calls are told apart by their system prompts (the library's own constants); any
other request is a chat step, answered (streamed) from the test's queue of turns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Agent, Hive, Settings
from hivekeep.core.maintenance import SYSTEM_PROMPT as MAINTENANCE_SYSTEM
from hivekeep.core.transcript import FOLD_SYSTEM, MERGE_SYSTEM
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.openai_compat import OpenAICompatLLM
from hivekeep.services.compile import COMPILE_SYSTEM
from hivekeep.store.leases import AgentLease
from hivekeep.types import Source
from tests.wire_servers import Received, Reply, WireServer, openai_reply, openai_stream

pytestmark = pytest.mark.slow

SUMMARY = "On 2024-05-01 Grace introduced herself and said she moved to Lisbon."
NEW_PROFILE = "## People\n- Grace lives in Lisbon."
MAINTENANCE = (
    '<archive>[{"op": "add", "content": "Grace moved to Lisbon in May 2024.", '
    '"category": "fact", "subject": "Grace", "importance": 7}]</archive>\n'
    f"<profile>\n{NEW_PROFILE}\n</profile>"
)
PINNED = "## Pinned\n- Always answer in English."
COMPILED = f"{PINNED}\n\n## People\n- Grace lives in Lisbon and drinks green tea."
LISBON = "Grace moved to Lisbon in May 2024."
TEA = "Grace drinks green tea every morning."

# Settings of a developer's shell that would change what the subprocess does.
SCRUBBED_PREFIXES = ("HIVEKEEP_", "MEMORY_", "COMPACTING_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class Model:
    """The scripted LLM: upkeep calls by their system prompt, chat steps from ``turns``."""

    def __init__(self) -> None:
        self.turns: deque[Reply] = deque()
        self.summary = SUMMARY
        self.maintenance = MAINTENANCE
        self.compiled = f"<profile>\n{COMPILED}\n</profile>"

    def __call__(self, request: Received) -> Reply:
        kind = kind_of(request)
        if kind == "chat":
            assert request.body.get("stream") is True, "chat steps stream"
            if not self.turns:  # a 400 is not retried: the test fails fast, and says why
                return Reply(400, {"error": {"message": "the test scripted no more chat turns"}})
            return self.turns.popleft()
        text = {"summary": self.summary, "maintenance": self.maintenance}.get(kind, self.compiled)
        return openai_reply(text)


def kind_of(request: Received) -> str:
    """Which call a request is: summary, maintenance, compile, or chat."""
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system in (FOLD_SYSTEM, MERGE_SYSTEM):
        return "summary"
    if system == MAINTENANCE_SYSTEM:
        return "maintenance"
    if system == COMPILE_SYSTEM:
        return "compile"
    return "chat"


def kinds(server: WireServer) -> list[str]:
    return [kind_of(request) for request in server.requests]


def user_text(request: Received) -> str:
    """Every non-system message of a request, as one text to search."""
    return "\n".join(str(m.get("content")) for m in request.body["messages"][1:])


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model: Model) -> Iterator[WireServer]:
    with WireServer(answer=model) as fake:
        yield fake


class CLI:
    """``cli("chat", "--agent", "ada", input=...)`` runs ``python -m hivekeep --db HIVE chat ...``
    in a subprocess, with the LLM aimed at the test server (``llm=False``: no LLM configured)."""

    def __init__(self, db: Path, server: WireServer) -> None:
        self.db = db
        self.server = server

    def env(self, llm: bool) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(SCRUBBED_PREFIXES) and name.upper() not in PROXIES
        }
        env["PYTHONIOENCODING"] = "utf-8"
        env["NO_PROXY"] = "127.0.0.1,localhost"
        if llm:
            env["HIVEKEEP_LLM"] = "openai:test-model"
            env["OPENAI_API_KEY"] = "test"
            env["OPENAI_BASE_URL"] = f"{self.server.url}/v1"
        return env

    def __call__(
        self, *args: str, input: str = "", code: int = 0, llm: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "hivekeep", "--db", str(self.db), *args],
            input=input,
            env=self.env(llm),
            cwd=self.db.parent,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=60,
        )
        assert done.returncode == code, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done


@pytest.fixture
def cli(db_path: Path, server: WireServer) -> CLI:
    return CLI(db_path, server)


@pytest.fixture
def open_hive(db_path: Path, local_embedder: LocalEmbedder) -> Iterator[Any]:
    """Opens the hive in the test process (no LLM: only to set up and to check what is stored)."""
    opened: list[Hive] = []

    def agent(name: str = "ada") -> Agent:
        hive = Hive(db_path, embedder=local_embedder, settings=Settings())
        opened.append(hive)
        return hive.get_agent(name)

    yield agent
    for hive in opened:
        hive.close()


@pytest.fixture
def ada(db_path: Path, local_embedder: LocalEmbedder) -> None:
    """A hive with the agent 'ada', whose profile is not empty (so start-up has no bootstrap)."""
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("ada", role="Personal assistant")
        agent.set_profile(f"{PINNED}\n\n## Preferences\n- Likes short answers.")


def chat_requests(server: WireServer) -> list[Received]:
    return [request for request in server.requests if kind_of(request) == "chat"]


# -- chat ----------------------------------------------------------------------------------------


def test_chat_streams_each_reply_and_stores_the_conversation(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    model.turns.extend(
        [openai_stream(["Hello ", "Grace", "!"]), openai_stream(["You like ", "short answers."])]
    )

    done = cli(
        "chat", "--agent", "ada", "--speaker", "Grace", input="Hi, I am Grace.\nWhat do I like?\n"
    )

    assert done.stdout == "Hello Grace!\nYou like short answers.\n"
    assert "Chatting with ada (openai:test-model) in a new conversation" in done.stderr
    first, second = server.requests
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer test"
    assert first.body["model"] == "test-model"
    system = first.body["messages"][0]
    assert system["role"] == "system" and "Likes short answers." in system["content"]
    assert first.body["messages"][-1]["role"] == "user"
    assert "Hi, I am Grace." in first.body["messages"][-1]["content"]
    offered = {tool["function"]["name"] for tool in first.body["tools"]}
    assert {"memorize", "recall", "edit_profile"} <= offered
    history = [(m["role"], m["content"]) for m in second.body["messages"][1:]]
    assert ("assistant", "Hello Grace!") in history
    assert "What do I like?" in history[-1][1]

    agent = open_hive()
    [conversation] = agent.conversations()
    assert conversation.title == "Hi, I am Grace."
    hint = (
        f"conversation {conversation.id} (continue it later with --conversation {conversation.id})"
    )
    assert hint in done.stderr
    stored = [(m.role, m.content, m.speaker) for m in agent.messages(conversation.id)]
    assert stored == [
        ("user", "Hi, I am Grace.", "Grace"),
        ("assistant", "Hello Grace!", None),
        ("user", "What do I like?", "Grace"),
        ("assistant", "You like short answers.", None),
    ]


def test_a_tool_call_round_trip_saves_the_memory(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    arguments = ['{"content": "Grace moved to Lisbon in May 2024.", ', '"category": "fact"}']
    model.turns.extend(
        [
            openai_stream(["Noted."], [("call_1", "memorize", arguments)]),
            openai_stream(["I will remember that."]),
        ]
    )

    done = cli("chat", "--agent", "ada", input="I moved to Lisbon in May 2024.\n")

    agent = open_hive()
    [memory] = agent.list_memories().memories
    assert memory.content == LISBON
    assert memory.source is Source.EXPLICIT
    assert done.stdout == (
        "Noted.\n"
        f'· memorize(content="{LISBON}", category="fact") → #{memory.id}\n'
        "I will remember that.\n"
    )
    assert kinds(server) == ["chat", "chat"]
    call, result = server.requests[1].body["messages"][-2:]
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["id"] == "call_1"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"])["content"] == LISBON
    assert result["role"] == "tool" and result["tool_call_id"] == "call_1"
    assert json.loads(result["content"])["id"] == memory.id
    [conversation] = agent.conversations()
    roles = [m.role for m in agent.messages(conversation.id)]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_slash_commands_profile_recall_help_and_quit(
    cli: CLI, server: WireServer, ada: None, open_hive: Any
) -> None:
    agent = open_hive()
    lisbon = agent.memorize(LISBON, category="fact", subject="Grace").memory
    agent.memorize(TEA, category="preference", subject="Grace")

    done = cli(
        "chat",
        "--agent",
        "ada",
        input="/profile\n/recall Lisbon\n/help\n/nonsense\n/quit\nnever sent\n",
    )

    assert done.stdout.startswith(f"{PINNED}\n\n## Preferences\n- Likes short answers.\n1. ")
    assert f"1. #{lisbon.id} (fact, Grace) {LISBON}\n" in done.stdout
    assert "/recall QUERY" in done.stdout and "/compact" in done.stdout
    assert "Unknown command /nonsense" in done.stderr
    assert server.requests == []  # none of that asks the model, and nothing is read after /quit
    assert agent.conversations() == []


def test_compact_in_chat_folds_the_oldest_turn_and_updates_memory(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    model.turns.extend([openai_stream(["Welcome, Grace."]), openai_stream(["Lisbon is lovely."])])

    done = cli(
        "chat",
        "--agent",
        "ada",
        input="Hi, I am Grace.\nI moved to Lisbon in May 2024.\n/compact\n/profile\n",
    )

    assert kinds(server) == ["chat", "chat", "summary", "maintenance"]
    summary_call, maintenance_call = server.requests[2:]
    assert "Hi, I am Grace." in user_text(summary_call)  # forced: the older half is folded
    assert "Lisbon" not in user_text(summary_call)
    assert SUMMARY in user_text(maintenance_call)
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "Welcome, Grace.",
        "Lisbon is lovely.",
        "Compacted 2 messages, 1 memory extracted, profile updated.",
    ]
    assert NEW_PROFILE in "\n".join(lines[3:])  # /profile shows the rewritten profile
    assert PINNED in "\n".join(lines[3:])  # ... with Pinned kept

    agent = open_hive()
    [memory] = agent.list_memories().memories
    assert (memory.content, memory.source) == (LISBON, Source.AUTOMATIC)
    [conversation] = agent.conversations()
    messages = agent.messages(conversation.id)
    assert [m.summary_id is not None for m in messages[:4]] == [True, True, False, False]
    [record] = [m for m in messages if m.is_compaction_record]
    assert record.record is not None and record.record["messages_folded"] == 2


def test_a_turn_that_compacts_ends_with_a_compaction_line(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    open_hive().configure(
        compaction={"threshold_percent": 1.0, "keep_percent": 0.5, "min_batch_tokens": 0}
    )
    long_message = "I moved to Lisbon in May 2024, " + "and the city is full of light. " * 8
    model.turns.extend([openai_stream(["Noted."]), openai_stream(["Yes."])])

    done = cli("chat", "--agent", "ada", input=f"{long_message}\nRight?\n")

    # the system prompt and tool schemas alone fill the 0.5 % keep-window: each turn folds whole
    assert done.stdout == (
        "Noted.\n· Compacted 2 messages, 1 memory extracted, profile updated.\nYes.\n"
        "· Compacted 2 messages, 0 memories extracted, profile unchanged.\n"
    )
    assert kinds(server)[:4] == ["chat", "summary", "maintenance", "chat"]
    later = server.requests[3]
    assert any(SUMMARY in str(m["content"]) for m in later.body["messages"])
    assert long_message.strip() not in user_text(later)  # folded away, the summary stands in
    assert len(open_hive().conversations()) == 1  # the second turn stayed in the same one


def test_a_failing_turn_is_reported_and_the_session_goes_on(
    cli: CLI, model: Model, server: WireServer, ada: None
) -> None:
    model.turns.extend(
        [
            Reply(400, {"error": {"message": "model overloaded", "type": "invalid_request_error"}}),
            openai_stream(["Back again."]),
        ]
    )

    done = cli("chat", "--agent", "ada", input="Hello?\nStill there?\n")

    assert done.stdout == "Back again.\n"
    assert "Error: " in done.stderr and "model overloaded" in done.stderr
    assert len(server.requests) == 2


def test_piped_chat_fails_when_no_message_was_answered(
    cli: CLI, model: Model, server: WireServer, ada: None
) -> None:
    down = Reply(400, {"error": {"message": "model overloaded", "type": "invalid_request_error"}})
    model.turns.extend([down, down])

    done = cli("chat", "--agent", "ada", input="Hello?\nStill there?\n", code=1)

    assert "2 message(s) sent, none answered" in done.stderr


def test_conversations_list_rename_delete_and_restore(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    model.turns.extend([openai_stream(["Hi!"])])
    cli("chat", "--agent", "ada", input="Plans for Porto\n")
    [conversation] = open_hive().conversations.list()
    number = str(conversation.id)

    listed = cli("conversations", "list", "--agent", "ada")
    assert f"#{number}  Plans for Porto" in listed.stdout
    cli("conversations", "rename", number, "Porto trip", "--agent", "ada")
    as_json = json.loads(cli("conversations", "list", "--agent", "ada", "--json").stdout)
    assert [(c["id"], c["title"]) for c in as_json] == [(conversation.id, "Porto trip")]
    deleted = cli("conversations", "delete", number, "--agent", "ada")
    assert f"conversations restore {number} --agent ada" in deleted.stdout
    assert "no conversations yet" in cli("conversations", "list", "--agent", "ada").stdout
    assert (
        f"#{number}  Porto trip  (deleted "
        in cli("conversations", "list", "--trash", "--agent", "ada").stdout
    )
    refused = cli("chat", "--agent", "ada", "--conversation", number, code=1)
    assert "is in the trash" in refused.stderr
    cli("conversations", "restore", number, "--agent", "ada")
    [back] = open_hive().conversations.list()
    assert [m.content for m in open_hive().messages(back.id)] == ["Plans for Porto", "Hi!"]
    missing = cli("conversations", "rename", "999", "x", "--agent", "ada", code=1)
    assert "No conversation with id 999" in missing.stderr


# -- hivekeep compact ----------------------------------------------------------------------------


def test_compact_command_compacts_the_latest_conversation(
    cli: CLI,
    model: Model,
    server: WireServer,
    ada: None,
    open_hive: Any,
    db_path: Path,
    local_embedder: LocalEmbedder,
) -> None:
    model.turns.extend([openai_stream(["Welcome."]), openai_stream(["Lovely."])])
    llm = OpenAICompatLLM("test-model", api_key="test", base_url=f"{server.url}/v1")
    with llm, Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as hive:
        older = hive.get_agent("ada").start_conversation("older").id
        reply = hive.get_agent("ada").chat("Hi, I am Grace.")  # the same SDK, in-process: faster
        hive.get_agent("ada").chat("I moved to Lisbon in May 2024.", reply.conversation_id)

    done = cli("compact", "--agent", "ada", "--json")

    outcome = json.loads(done.stdout)
    assert outcome["status"] == "done"
    assert (outcome["messages_folded"], outcome["memories_extracted"]) == (2, 1)
    assert outcome["profile_updated"] is True
    assert outcome["summary"] == SUMMARY
    assert kinds(server) == ["chat", "chat", "summary", "maintenance"]
    assert outcome["conversation_id"] == reply.conversation_id != older  # the latest one
    agent = open_hive()
    assert NEW_PROFILE in agent.profile_text() and PINNED in agent.profile_text()

    model.summary = ""  # the summariser fails: nothing is folded, and the command says so
    done = cli("compact", "--agent", "ada", "--conversation", str(reply.conversation_id), code=1)
    assert done.stderr.startswith(
        f"Conversation {reply.conversation_id} of ada: Compaction failed: "
        "the summariser returned an empty summary"
    )
    assert done.stdout == ""


def test_compact_command_refusals(
    cli: CLI, ada: None, db_path: Path, local_embedder: LocalEmbedder
) -> None:
    done = cli("compact", "--agent", "ada", code=1)
    assert "ada has no conversations to compact" in done.stderr

    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.get_agent("ada")
        conversation = agent.start_conversation("empty")
        with AgentLease(hive.store, agent.id):  # another process is compacting this agent
            done = cli("compact", "--agent", "ada", "--conversation", str(conversation.id), code=1)
        assert "already running" in done.stderr


# -- hivekeep profile regenerate -----------------------------------------------------------------


def test_profile_regenerate_rewrites_the_profile_from_the_archive(
    cli: CLI, server: WireServer, ada: None, open_hive: Any
) -> None:
    agent = open_hive()
    agent.memorize(LISBON, category="fact", subject="Grace")
    agent.memorize(TEA, category="preference", subject="Grace")

    done = cli("profile", "regenerate", "--agent", "ada", "--yes")

    assert done.stdout.startswith("Regenerated the profile of ada from 2 memories (revision ")
    assert done.stdout.endswith(f"\n\n{COMPILED}\n")
    assert kinds(server) == ["compile"]
    [request] = server.requests
    assert LISBON in user_text(request) and TEA in user_text(request)
    assert "Likes short answers." in user_text(request)  # the current profile is in the prompt
    assert open_hive().profile_text().strip() == COMPILED


def test_profile_regenerate_failure_keeps_the_profile(
    cli: CLI, model: Model, server: WireServer, ada: None, open_hive: Any
) -> None:
    agent = open_hive()
    agent.memorize(LISBON, category="fact", subject="Grace")
    before = agent.profile()
    model.compiled = "Sorry, I cannot help with that."

    done = cli("profile", "regenerate", "--agent", "ada", "--yes", code=1)

    assert "Could not regenerate the profile of ada" in done.stderr
    assert "no usable <profile> block; the profile was kept" in done.stderr
    assert open_hive().profile() == before

    done = cli("profile", "regenerate", "--agent", "ada", input="n\n", code=1)
    assert "Regenerate ada's profile from its archive? Pinned is kept." in done.stdout
    assert len(server.requests) == 1  # declined: the model was not asked again


# -- no LLM configured ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["chat", "--agent", "ada"], "chatting"),
        (["compact", "--agent", "ada"], "compaction"),
        (["profile", "regenerate", "--agent", "ada", "--yes"], "regenerating a profile"),
    ],
    ids=["chat", "compact", "regenerate"],
)
def test_without_an_llm_each_command_says_what_to_set(
    command: list[str], what: str, cli: CLI, server: WireServer, ada: None, open_hive: Any
) -> None:
    done = cli(*command, input="Hello?\n", llm=False, code=1)

    assert f"No LLM is configured, and {what} needs one." in done.stderr
    assert "HIVEKEEP_LLM=openai:gpt-4o-mini with OPENAI_API_KEY" in done.stderr
    assert "HIVEKEEP_LLM=ollama:llama3.1" in done.stderr
    assert done.stdout == ""
    assert server.requests == []
    assert open_hive().conversations() == []  # chat stopped before reading a line


# -- start-up upkeep: only the chat's own agent ---------------------------------------------------


def chat_without_hive_model(cli: CLI, agent: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``hivekeep chat --agent AGENT`` with no HIVEKEEP_LLM: only the agent's own model (stored
    with it) points at the test server."""
    environment = {**cli.env(llm=True), **env}
    del environment["HIVEKEEP_LLM"]
    done = subprocess.run(
        [sys.executable, "-m", "hivekeep", "--db", str(cli.db), "chat", "--agent", agent],
        input="/quit\n",
        env=environment,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def two_agents(db_path: Path, local_embedder: LocalEmbedder) -> None:
    """'ada' has its own model and a memory; 'helper2' has a memory and no model; both have
    empty profiles, so both are due a bootstrap."""
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        ada = hive.create_agent("ada")
        ada.configure(model="openai:test-model")
        ada.memorize(TEA, category="preference", subject="Grace")
        hive.create_agent("helper2").memorize(LISBON, category="fact", subject="Grace")


def test_chat_reports_no_upkeep_of_other_agents(
    cli: CLI, server: WireServer, two_agents: None, open_hive: Any
) -> None:
    done = chat_without_hive_model(cli, "ada")

    assert "helper2" not in done.stderr and "No LLM is configured" not in done.stderr
    assert "· upkeep: compiled its first profile from the archive" in done.stderr
    assert kinds(server) == ["compile"]
    assert open_hive("ada").profile_text() == COMPILED + "\n"
    assert open_hive("helper2").profile_text() == ""  # waits for a model, and for its own start


def test_a_failed_bootstrap_says_once_what_it_is_and_how_to_turn_it_off(
    cli: CLI, model: Model, server: WireServer, two_agents: None, open_hive: Any
) -> None:
    model.compiled = "I cannot do that."
    failed = chat_without_hive_model(cli, "ada")

    assert failed.stderr.count("Bootstrap of agent ada failed") == 1
    assert "first profile from its archive" in failed.stderr
    assert "HIVEKEEP_BOOTSTRAP=off turns it off" in failed.stderr
    assert "helper2" not in failed.stderr and "· upkeep" not in failed.stderr
    off = chat_without_hive_model(cli, "ada", HIVEKEEP_BOOTSTRAP="off")
    assert "Bootstrap" not in off.stderr and kinds(server) == ["compile"]
    assert open_hive("ada").profile_text() == ""


def test_chat_warns_at_start_when_the_window_leaves_too_little_room(
    cli: CLI, model: Model, ada: None
) -> None:
    """Issue 34: a small window filled up before any compaction, without a word."""
    model.turns.extend([openai_stream(["Hi."])])
    env = {**cli.env(True), "HIVEKEEP_CONTEXT_WINDOW": "2048"}
    done = subprocess.run(
        [sys.executable, "-m", "hivekeep", "--db", str(cli.db), "chat", "--agent", "ada"],
        input="Hello\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning: The fixed part of the context" in done.stderr
    assert "2,048-token window" in done.stderr
