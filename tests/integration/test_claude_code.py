"""Claude Code hooks (issue 36), through the real ``hivekeep`` processes Claude Code would run:
settings merged and unmerged, SessionStart's context, transcripts stored once, and the maintenance
call finished in the background while the hook returns at once, whatever goes wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Hive, Settings
from hivekeep.integrations import claude_code
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from tests.wire_servers import Received, Reply, WireServer, openai_reply

pytestmark = pytest.mark.slow

SCRUBBED_PREFIXES = ("HIVEKEEP_", "MEMORY_", "COMPACTING_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")
SLOW_MODEL_S = 15.0
SESSION = "0b6a7c1e-5f1d-4c53-9d0e-4a3b2c1d0e9f"
LISBON = "The user is moving to Lisbon in May 2024."
MAINTENANCE = (
    f'<archive>[{{"op": "add", "content": "{LISBON}", "category": "fact", "subject": "user"}}]'
    "</archive>\n<profile>\n## User\n- Moving to Lisbon\n</profile>"
)


def entry(kind: str, uuid: str, parent: str | None, content: Any, at: str, **extra: Any) -> str:
    """One transcript line as Claude Code writes it."""
    line = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ann/projects/atlas",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content}
        if kind == "user"
        else {
            "id": f"msg_{uuid}",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": content,
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3},
        },
        "uuid": uuid,
        "timestamp": at,
        **extra,
    }
    return json.dumps(line)


def transcript_lines() -> list[str]:
    return [
        json.dumps({"type": "summary", "summary": "Atlas set-up", "leafUuid": "x"}),
        entry("user", "u0", None, "<command-name>/clear</command-name>", "2024-05-01T09:59:00Z"),
        entry("user", "u1", None, "I am moving to Lisbon in May.", "2024-05-01T10:00:00.000Z"),
        entry(
            "assistant",
            "a1",
            "u1",
            [
                {"type": "thinking", "thinking": "Noting."},
                {"type": "text", "text": "Good luck with the move!"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
            "2024-05-01T10:00:05.000Z",
        ),
        entry(
            "user",
            "t1",
            "a1",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md"}],
            "2024-05-01T10:00:06.000Z",
        ),
        entry(
            "assistant",
            "s1",
            "t1",
            [{"type": "text", "text": "subagent says hi"}],
            "2024-05-01T10:00:07.000Z",
            isSidechain=True,
        ),
        entry(
            "user", "m1", "t1", "Caveat: local commands", "2024-05-01T10:00:08.000Z", isMeta=True
        ),
        '{"type": "user", "message": ',  # a line still being written
    ]


@pytest.fixture
def hive_db(db_path: Path, local_embedder: LocalEmbedder) -> Path:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("coder")
        agent.set_profile("## User\n- Prefers short answers\n")
        agent.memorize("The atlas project deploys with GitHub Actions", category="fact")
        agent.memorize("The user's cat is called Mia", category="fact")
    return db_path


def env(model_url: str | None = None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    clean["NO_PROXY"] = "127.0.0.1,localhost"
    if model_url:
        clean |= {
            "HIVEKEEP_LLM": "openai:test-model",
            "OPENAI_API_KEY": "test",
            "OPENAI_BASE_URL": f"{model_url}/v1",
        }
    return clean


def hook(
    db: Path, payload: Any, *, model_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    args = ["hook", "claude-code", "--agent", "coder", "--db", str(db)]
    return subprocess.run(
        [sys.executable, "-m", "hivekeep", *args],
        input=text,
        env=env(model_url),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def payload(event: str, transcript: Path, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": "/home/ann/projects/atlas",
        "permission_mode": "default",
        "hook_event_name": event,
        **extra,
    }


def session_messages(db: Path) -> list[tuple[str, str, str]]:
    with Hive(db, settings=Settings()) as hive:
        agent = hive.get_agent("coder")
        found = [c for c in agent.conversations() if c.title == "Claude Code: atlas"]
        if not found:
            return []
        (conversation,) = found
        return [
            (m.role, m.content, m.created_at)
            for m in agent.messages(conversation.id)
            if not m.is_compaction_record
        ]


def test_install_merges_keeps_everything_adds_nothing_twice_and_uninstall_undoes_it(
    hive_db: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "project" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original: dict[str, Any] = {
        "model": "sonnet",
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreCompact": [
                {"matcher": "manual", "hooks": [{"type": "command", "command": "backup.sh"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
        },
    }
    settings.write_text(json.dumps(original, indent=2))
    run = [sys.executable, "-m", "hivekeep", "--db", str(hive_db), "hooks"]
    install = [*run, "install", "claude-code", "--agent", "coder", "--settings", str(settings)]
    for _ in range(2):  # the second run adds nothing
        done = subprocess.run(install, env=env(), capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    merged = json.loads(settings.read_text())
    assert merged["model"] == "sonnet" and merged["permissions"] == original["permissions"]
    assert merged["hooks"]["Stop"] == original["hooks"]["Stop"]
    assert merged["hooks"]["PreCompact"][0] == original["hooks"]["PreCompact"][0]
    for event in ("SessionStart", "PreCompact", "SessionEnd"):
        ours = [
            h
            for g in merged["hooks"][event]
            for h in g["hooks"]
            if claude_code.MARK in h["command"]
        ]
        assert len(ours) == 1, event
        assert ours[0]["type"] == "command" and "--agent coder" in ours[0]["command"]
        assert str(hive_db.resolve()) in ours[0]["command"]
    assert "UserPromptSubmit" not in merged["hooks"]
    uninstall = [*run, "uninstall", "claude-code", "--settings", str(settings)]
    done = subprocess.run(uninstall, env=env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(settings.read_text()) == original


def test_install_refuses_a_settings_file_that_is_not_json(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    with pytest.raises(Exception, match="not valid JSON"):
        claude_code.install(settings, "coder", None)
    assert settings.read_text() == "{not json"


def test_session_start_prints_the_profile_and_the_projects_memories(
    hive_db: Path, tmp_path: Path
) -> None:
    done = hook(hive_db, payload("SessionStart", tmp_path / "none.jsonl", source="startup"))
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "Prefers short answers" in output["additionalContext"]
    assert "The atlas project deploys with GitHub Actions" in output["additionalContext"]


def test_pre_compact_stores_the_text_turns_once_and_session_end_only_the_new_ones(
    hive_db: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("\n".join(transcript_lines()) + "\n")
    for _ in range(2):  # a rerun stores nothing twice
        done = hook(
            hive_db, payload("PreCompact", transcript, trigger="auto", custom_instructions="")
        )
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert session_messages(hive_db) == [
        ("user", "I am moving to Lisbon in May.", "2024-05-01T10:00:00.000000Z"),
        ("assistant", "Good luck with the move!", "2024-05-01T10:00:05.000000Z"),
    ]
    lines = [
        *transcript_lines()[:-1],
        entry("user", "u2", "a1", "Also: I use tabs.", "2024-05-01T10:05:00.000Z"),
    ]
    transcript.write_text("\n".join(lines) + "\n")
    assert hook(hive_db, payload("SessionEnd", transcript, reason="exit")).returncode == 0
    assert [m[1] for m in session_messages(hive_db)][-1] == "Also: I use tabs."
    assert len(session_messages(hive_db)) == 3
    llm = ScriptedLLM([MAINTENANCE, MAINTENANCE], context_window=16_000)  # a model, later
    with Hive(hive_db, settings=Settings(), llm=llm) as hive:
        caught = hive.get_agent("coder").catch_up()  # the batches waited for it, oldest first
    assert (len(caught.outcomes), caught.memories_added, caught.left) == (2, 1, 0)
    assert "I am moving to Lisbon in May." in llm.calls[0].text
    assert "Also: I use tabs." in llm.calls[1].text


@pytest.mark.parametrize(
    "given",
    [
        "not json",
        json.dumps({"session_id": SESSION}),
        json.dumps(
            {
                "hook_event_name": "PreCompact",
                "session_id": SESSION,
                "transcript_path": "/no/such/file.jsonl",
                "cwd": "/tmp",
            }
        ),
        json.dumps({"hook_event_name": "SessionEnd", "transcript_path": "/no/such.jsonl"}),
    ],
)
def test_whatever_goes_wrong_the_hook_exits_zero(hive_db: Path, given: str) -> None:
    done = hook(hive_db, given)
    assert done.returncode == 0
    with Hive(hive_db, settings=Settings()) as hive:
        assert hive.get_agent("coder").conversations() == []  # no empty conversation either


def test_a_missing_hive_still_exits_zero(tmp_path: Path) -> None:
    done = hook(tmp_path / "none.db", payload("SessionStart", tmp_path / "x.jsonl"))
    assert done.returncode == 0 and "no hive" in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_the_maintenance_call_runs_in_the_background_while_the_hook_returns(
    hive_db: Path, tmp_path: Path
) -> None:
    def answer(request: Received) -> Reply:
        reply = openai_reply(MAINTENANCE)
        reply.delay = SLOW_MODEL_S  # the hook must not wait for it
        return reply

    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("\n".join(transcript_lines()) + "\n")
    with WireServer(answer=answer) as model:
        started = time.monotonic()
        done = hook(hive_db, payload("SessionEnd", transcript, reason="exit"), model_url=model.url)
        took = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        assert took < SLOW_MODEL_S  # it did not wait for the model (a busy machine: ~1-5 s)
        assert session_messages(hive_db)  # stored before the hook returned
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with Hive(hive_db, settings=Settings()) as hive:
                found = [m.content for m in hive.get_agent("coder").list_memories().memories]
            if LISBON in found:
                break
            time.sleep(0.5)
        assert LISBON in found
        assert len(model.requests) == 1
        assert "I am moving to Lisbon in May." in json.dumps(model.requests[0].body)


def test_a_busy_agent_waits_and_the_next_hook_finishes_the_work(
    hive_db: Path, tmp_path: Path
) -> None:
    from hivekeep.store.leases import LEASE_TTL_SECONDS, lease_name, new_holder

    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("\n".join(transcript_lines()) + "\n")
    with WireServer(answer=lambda request: openai_reply(MAINTENANCE)) as model:
        with Hive(hive_db, settings=Settings()) as hive:
            lease, holder = lease_name(hive.get_agent("coder").id), new_holder()
            assert hive.store.acquire_lease(lease, holder, LEASE_TTL_SECONDS) is None
            try:  # a compaction of the agent is running elsewhere
                done = hook(hive_db, payload("PreCompact", transcript), model_url=model.url)
                assert done.returncode == 0, done.stderr
                assert session_messages(hive_db)  # stored all the same
                time.sleep(8)  # the background run starts, finds the agent busy, and stops
                assert model.requests == []
            finally:
                hive.store.release_lease(lease, holder)
        start = payload("SessionStart", transcript, source="resume")
        assert hook(hive_db, start, model_url=model.url).returncode == 0
        deadline = time.monotonic() + 90
        found: list[str] = []
        while LISBON not in found and time.monotonic() < deadline:
            time.sleep(0.5)
            with Hive(hive_db, settings=Settings()) as hive:
                found = [m.content for m in hive.get_agent("coder").list_memories().memories]
        assert LISBON in found


def test_prompt_recall_is_optional_and_adds_the_prompts_memories(
    hive_db: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    assert claude_code.install(settings, "coder", str(hive_db), prompt_recall=True) == [
        "SessionStart",
        "PreCompact",
        "SessionEnd",
        "UserPromptSubmit",
    ]
    prompt = payload("UserPromptSubmit", tmp_path / "x.jsonl", prompt="What is my cat called?")
    done = hook(hive_db, prompt)
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "The user's cat is called Mia" in output["additionalContext"]
    assert claude_code.uninstall(settings, "someone-else") == 0
    assert claude_code.uninstall(settings, "coder") == 4
    assert json.loads(settings.read_text()) == {}


def test_a_hive_another_process_is_writing_does_not_hold_the_hook(
    hive_db: Path, tmp_path: Path
) -> None:
    """The store waits a second, then the background run stores the turns once the write lock
    is free; the hook itself returns well before SQLite's 10 s busy timeout."""
    import apsw

    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("\n".join(transcript_lines()) + "\n")
    writer = apsw.Connection(str(hive_db))
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO meta(key, value) VALUES ('another-writer', 'x')")
    try:
        started = time.monotonic()
        done = hook(hive_db, payload("SessionEnd", transcript, reason="exit"))
        took = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        assert took < 8.0, done.stderr  # not the 10 s a write would wait for the lock
        time.sleep(1)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    deadline = time.monotonic() + 60
    while not session_messages(hive_db) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [m[1] for m in session_messages(hive_db)] == [
        "I am moving to Lisbon in May.",
        "Good luck with the move!",
    ]
