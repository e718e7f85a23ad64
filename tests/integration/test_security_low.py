"""The LOW findings of security round four (issue 32, items 7-13 and the notes), each against
the real interface it was found on: a ``hivekeep serve`` process, the CLI, the library. (The
UI's sign-out is tests/browser/test_scoped_token_ui.py's.)"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, Settings, ValidationError
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.server_support import Server, free_port, server_env, start_server
from tests.wire_servers import WireServer, openai_stream

ADMIN = f"admin-{secrets.token_hex(16)}"
PASSWORD = f"pw{secrets.token_hex(8)}"  # in a base URL: must never be shown or logged
QUERY_KEY = f"key{secrets.token_hex(8)}"


@pytest.fixture(scope="module")
def model() -> Iterator[WireServer]:
    with WireServer(answer=lambda _: openai_stream(["Hello ", "there."])) as wire:
        yield wire


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: WireServer) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("low")
    with Hive(root / "hive.db", embedder=LocalEmbedder(), settings=Settings()) as hive:
        for name in ("alice", "bob"):
            hive.create_agent(name).memorize(f"{name} likes tea.", category="fact")
    started = start_server(
        root / "hive.db",
        root / "serve.log",
        token=ADMIN,
        env={"OPENAI_BASE_URL": None},
        HIVEKEEP_LLM="openai:test-model",
        OPENAI_API_KEY="test",
    )
    try:
        yield started
    finally:
        started.stop()


def token(server: Server, label: str, agents: list[str] | None, *, read_only: bool = False) -> str:
    body = {"label": label, "agents": agents, "read_only": read_only}
    made = server.client().post("/api/access-tokens", json=body)
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


def test_base_urls_are_shown_and_logged_without_credentials(
    server: Server, model: WireServer
) -> None:
    """Items 7 and 8: any token read the URL's user and password from GET /api/settings, and
    the server log printed httpx's line, URL included, for every model call."""
    admin = server.client()
    with_password = model.url.replace("http://", f"http://user:{PASSWORD}@") + "/v1"
    credentials = {"provider": "openai", "base_url": with_password}
    assert admin.put("/api/settings/llm-credentials", json=credentials).status_code == 200
    reader = server.client(token=token(server, "settings-reader", ["alice"], read_only=True))
    shown = reader.get("/api/settings")
    assert shown.status_code == 200
    assert PASSWORD not in shown.text
    port = model.url.rsplit(":", 1)[1]
    assert shown.json()["llm"]["credentials"]["openai"]["base_url"] == (
        f"http://…@127.0.0.1:{port}/v1"
    )
    conversation = admin.post("/api/agents/alice/conversations", json={}).json()["id"]
    chat = admin.post(f"/api/conversations/{conversation}/chat", json={"message": "hi"})
    assert "Hello there." in chat.text
    assert model.requests[-1].headers["authorization"].startswith("Basic ")  # it was used
    log = server.output()
    assert PASSWORD not in log
    assert "HTTP Request:" not in log
    # a key in the query string is hidden too
    credentials["base_url"] = f"{model.url}/v1?api-key={QUERY_KEY}"
    answered = admin.put("/api/settings/llm-credentials", json=credentials)
    assert QUERY_KEY not in answered.text and QUERY_KEY not in reader.get("/api/settings").text


def test_a_label_is_one_rest_can_address(server: Server) -> None:
    """Item 11: a label with '/' could be made but not revoked over REST."""
    admin = server.client()
    for label in ("team/app", "a?b", "50%", "..", "#x", "tab\there", "ü"):
        refused = admin.post("/api/access-tokens", json={"label": label, "agents": None})
        assert refused.status_code == 422, (label, refused.text)
    label = "team.app:v2 @ci-1"
    token(server, label, None)
    assert admin.delete(f"/api/access-tokens/{label}").status_code == 204
    assert label not in [t["label"] for t in admin.get("/api/access-tokens").json()]


def test_agents_must_be_given_null_is_every_agent_and_an_empty_list_is_refused(
    server: Server,
) -> None:
    """The first note: ``agents`` left out or empty made a token of every agent."""
    admin = server.client()
    for body in ({"label": "no-agents"}, {"label": "empty-agents", "agents": []}):
        refused = admin.post("/api/access-tokens", json=body)
        assert refused.status_code == 422, (body, refused.text)
    every = server.client(token=token(server, "every-agent", None))
    assert [a["name"] for a in every.get("/api/agents").json()["agents"]] == ["alice", "bob"]
    listed = {t["label"]: t for t in admin.get("/api/access-tokens").json()}
    assert listed["every-agent"]["agents"] is None
    assert "no-agents" not in listed and "empty-agents" not in listed


def test_the_library_refuses_an_empty_agent_list_too(tmp_path: Path) -> None:
    with Hive(tmp_path / "hive.db", embedder=LocalEmbedder(), settings=Settings()) as hive:
        hive.create_agent("alice")
        with pytest.raises(ValidationError, match="at least one agent"):
            hive.tokens.create("empty", [])
        assert hive.tokens.list() == []
        assert hive.tokens.create("all", None).record.agent_ids is None


def test_deleting_an_agent_needs_a_token_of_every_agent(server: Server) -> None:
    """Item 12: a read-write token of one agent could delete it and its private memories."""
    admin = server.client()
    assert admin.post("/api/agents", json={"name": "erin"}).status_code == 201
    own = server.client(token=token(server, "erin-rw", ["erin"]))
    refused = own.delete("/api/agents/erin")
    assert refused.status_code == 403, refused.text
    assert admin.get("/api/agents/erin").status_code == 200
    every = server.client(token=token(server, "every-rw", None))
    assert every.delete("/api/agents/erin").status_code == 200


def test_mcp_over_http_refuses_a_short_admin_token(tmp_path: Path) -> None:
    """Item 10: ``hivekeep mcp --http`` served with a one-character admin token."""
    command = [sys.executable, "-m", "hivekeep", "mcp", "--agent", "zed", "--create"]
    command += ["--db", str(tmp_path / "hive.db"), "--http", str(free_port())]
    try:
        done = subprocess.run(
            command, env=server_env("x"), capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("hivekeep mcp --http served with a one-character admin token")
    assert done.returncode != 0
    assert "at least 16" in done.stderr


def _export(db: Path, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hivekeep", "export", "--db", str(db), "-o", str(target)],
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def small_hive(tmp_path: Path) -> Path:
    db = tmp_path / "hive.db"
    with Hive(db, embedder=LocalEmbedder(), settings=Settings()) as hive:
        hive.create_agent("alice").memorize("Alice keeps bees.", category="fact")
    return db


def test_a_new_export_file_is_readable_by_its_owner_only(small_hive: Path, tmp_path: Path) -> None:
    """Item 13: new export files were readable by other users (the umask's 0644)."""
    target = tmp_path / "out" / "export.jsonl"
    target.parent.mkdir()
    old = os.umask(0o022)
    try:
        done = _export(small_hive, target)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "Alice keeps bees." in target.read_text()
    json.loads(target.read_text().splitlines()[0])


def test_export_opens_a_symlink_as_given_and_follows_nothing_planted(
    small_hive: Path, tmp_path: Path
) -> None:
    """Item 13: ``export -o LINK`` resolved the link itself (``realpath``) and renamed a new file
    over the target, sidestepping the kernel's protection for symlinks in shared sticky folders
    (``protected_symlinks``); and it wrote through whatever ``NAME.partial`` was, a symlink
    planted there included."""
    target = tmp_path / "target.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    inode = target.stat().st_ino
    assert _export(small_hive, link).returncode == 0
    assert link.is_symlink() and "Alice keeps bees." in target.read_text()
    assert target.stat().st_ino == inode  # opened through the link, not replaced beside it
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").symlink_to(victim)
    assert _export(small_hive, out).returncode == 0
    assert victim.read_text() == "keep me\n"
    assert "Alice keeps bees." in out.read_text() and not out.is_symlink()


def test_export_on_an_existing_file_keeps_its_permissions(small_hive: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared.jsonl"
    target.write_text("old\n")
    target.chmod(0o640)
    assert _export(small_hive, target).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "Alice keeps bees." in target.read_text()


def test_httpx_is_quiet_and_urls_are_redacted_in_every_log_line() -> None:
    """Items 7-8 at the unit level: what a server's log handler lets through."""
    code = (
        "import logging; from hivekeep.logs import configure; configure('text'); "
        "logging.getLogger('httpx').info('HTTP Request: GET http://u:SECRETPW@h/v1'); "
        "logging.getLogger('x').warning('could not reach %s', 'https://u:SECRETPW@h/v1?key=K9')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "SECRETPW" not in done.stderr and "K9" not in done.stderr
    assert "could not reach https://…@h/v1?…" in done.stderr
