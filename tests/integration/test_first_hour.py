"""A newcomer's first hour (issue 19): what a new user runs first, through the CLI, REST and Python.

Real hive files in tmp_path, the real bundled embedder; the CLI runs in-process (CliRunner) or, for
``serve`` and the import-time checks, as a subprocess exactly as a user starts it.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

from hivekeep import Hive, Settings
from hivekeep.cli import cli, hive_location
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server import create_app
from tests.postgres import postgres_url

ROOT = Path(__file__).parents[2]
HIVEKEEP = (sys.executable, "-m", "hivekeep")
HEAVY = ("psycopg", "openai", "anthropic", "fastapi", "starlette", "uvicorn", "mcp")


def run(args: list[str], *, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == code, result.output
    if code:
        assert "Traceback" not in result.output
    return result


def hive_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("hive"))


# 2. a missing agent or hive file ------------------------------------------------------------------
def test_mcp_for_a_missing_agent_says_how_to_create_it_and_leaves_no_file(tmp_path: Path) -> None:
    db = tmp_path / "hive.db"
    failed = run(["mcp", "--agent", "ghost", "--db", str(db)], code=1)
    assert "no hive at" in failed.output and "hivekeep agents create NAME" in failed.output
    assert hive_files(tmp_path) == []

    run(["agents", "create", "assistant", "--db", str(db)])
    failed = run(["mcp", "--agent", "ghost", "--db", str(db)], code=1)
    assert "hivekeep agents create ghost" in failed.output and "--create" in failed.output


def test_mcp_create_makes_the_agent_with_its_role(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    proc = subprocess.run(
        [*HIVEKEEP, "mcp", "--agent", "helper", "--create", "--role", "Helps", "--db", str(db)],
        input="",  # the host hangs up at once: the stdio server ends
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("HIVEKEEP_")},
    )
    assert proc.returncode == 0, proc.stderr
    with Hive(db, settings=Settings()) as hive:
        assert [(a.name, a.role) for a in hive.agents()] == [("helper", "Helps")]


@pytest.mark.parametrize(
    "command",
    [
        ["agents"],
        ["agents", "list"],
        ["recall", "--agent", "a", "tea"],
        ["profile", "show", "--agent", "a"],
        ["memorize", "--agent", "a", "tea", "--category", "fact"],
        ["export"],
        ["trash", "--agent", "a"],
        ["compact", "--agent", "a"],
        ["chat", "--agent", "a"],
    ],
)
def test_commands_refuse_a_missing_hive_file_and_create_none(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "hvie.db"
    failed = run([*command, "--db", str(typo)], code=1)
    assert f"no hive at {typo}" in failed.output
    assert list(tmp_path.iterdir()) == []


def test_a_failing_command_that_may_create_leaves_no_new_file(tmp_path: Path) -> None:
    db = tmp_path / "hive.db"
    run(["agents", "create", "9lives", "--db", str(db)], code=1)  # a name must start with a letter
    assert hive_files(tmp_path) == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    run(["import", str(bad), "--db", str(db)], code=1)
    assert hive_files(tmp_path) == []
    run(["agents", "create", "ann", "--db", str(db)])  # a successful one does create the hive
    assert "hive.db" in hive_files(tmp_path)


def test_not_found_hints_match_the_interface(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    db = tmp_path / "hive.db"
    run(["agents", "create", "ann", "--db", str(db)])
    cli_hint = run(["recall", "--agent", "bob", "tea", "--db", str(db)], code=1).output
    assert "No agent 'bob'" in cli_hint and "`hivekeep agents`" in cli_hint
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        client = TestClient(create_app(hive), base_url="http://127.0.0.1")
        error = client.get("/api/agents/bob").json()["error"]
        assert error["code"] == "not_found"
        assert "GET /api/agents" in error["message"] and "hivekeep" not in error["message"]


# 4. get-or-create --------------------------------------------------------------------------------
def readme_python_snippet() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Python quick start") :]
    match = re.search(r"```python\n(.+?)\n```", section, re.DOTALL)
    assert match
    return match.group(1)


def quick_start_state(db: Path) -> tuple[list[str], str, int, int, int]:
    """What a rerun must leave as it was: agents, the profile (text, revision, versions kept)
    and the number of memories."""
    with Hive(db, settings=Settings()) as hive:
        agent = hive.agent("assistant")
        profile = agent.profile()
        return (
            [a.name for a in hive.agents()],
            profile.text,
            profile.revision,
            len(agent.profile_history()),
            agent.list_memories().total,
        )


def test_the_readme_python_quick_start_runs_twice(tmp_path: Path) -> None:
    """The quick start says reruns work: the second run leaves the hive exactly as the first
    did (the memory is a duplicate, the appended profile line is already there)."""
    snippet = readme_python_snippet()
    assert "hive.agent(" in snippet and '"append"' in snippet
    states = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", snippet],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith(("HIVEKEEP_", "MEMORY_"))},
        )
        assert proc.returncode == 0, proc.stderr
        assert "Lisbon" in proc.stdout
        states.append(quick_start_state(tmp_path / "memory.db"))
    assert states[0][0] == ["assistant"] and states[0][4] == 1
    assert states[0][1] == "## User\n- Lives in Lisbon; prefers short answers\n"
    assert states[1] == states[0]


def test_hive_agent_gets_or_creates_and_keeps_an_existing_role(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(tmp_path / "h.db", embedder=local_embedder, settings=Settings()) as hive:
        first = hive.agent("assistant", role="General helper")
        again = hive.agent(" Assistant ", role="Something else")
        assert again.id == first.id and again.role == "General helper"
        assert len(hive.agents()) == 1


# 6. import weight and the postgres extra ----------------------------------------------------------
def test_import_hivekeep_loads_no_driver_sdk_web_or_mcp_framework() -> None:
    code = f"import sys, hivekeep\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""


def test_cli_help_loads_no_driver_sdk_web_or_mcp_framework() -> None:
    code = (
        "import sys\nfrom hivekeep.cli import cli\n"
        "try:\n    cli(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('LOADED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().endswith("LOADED:")


def test_import_and_cli_help_load_neither_numpy_nor_pydantic_nor_the_store() -> None:
    """The library loads on first use (hivekeep/__init__.py), the commands when one runs."""
    heavy = ("numpy", "pydantic", "apsw", "hivekeep.hive", "hivekeep.tools")
    code = (
        "import sys, hivekeep\nfrom hivekeep.cli import cli\n"
        "try:\n    cli(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('LOADED:' + ','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().endswith("LOADED:"), proc.stdout
    assert re.search(r"memorize +Save CONTENT", proc.stdout)  # the command list is still all there


def test_a_postgres_url_without_the_driver_names_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('psycopg', 'psycopg_pool'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    code = (
        "from hivekeep import Hive, StoreError\n"
        "try:\n    Hive('postgresql://localhost/none')\n"
        "except StoreError as exc:\n    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert "pip install 'hivekeep[postgres]'" in proc.stdout, proc.stdout + proc.stderr


# 8. polish --------------------------------------------------------------------------------------
@pytest.fixture
def occupied() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_serve_on_a_port_in_use_says_so_before_serving(tmp_path: Path, occupied: int) -> None:
    db = tmp_path / "hive.db"
    proc = subprocess.run(
        [*HIVEKEEP, "serve", "--port", str(occupied), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("HIVEKEEP_")},
    )
    assert proc.returncode == 1
    assert f"Port {occupied} on 127.0.0.1 is already in use" in proc.stderr
    assert "serving" not in proc.stdout
    assert not db.exists()


@pytest.fixture
def api(tmp_path: Path, local_embedder: LocalEmbedder) -> Iterator[TestClient]:
    with Hive(tmp_path / "api.db", embedder=local_embedder, settings=Settings()) as hive:
        yield TestClient(create_app(hive), base_url="http://127.0.0.1")


def test_favicon_and_offline_docs_assets_are_served(api: TestClient) -> None:
    icon = api.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    html = api.get("/docs").text
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    assert urls and all(url.startswith("/") for url in urls), urls
    for url in urls:
        assert api.get(url).status_code == 200, url
    # no ReDoc (its bundle fetches a logo from a CDN): /redoc leads to the offline /docs
    redoc = api.get("/redoc", follow_redirects=False)
    assert (redoc.status_code, redoc.headers["location"]) == (307, "/docs")


def test_library_422s_carry_per_field_details(api: TestClient) -> None:
    bad_name = api.post("/api/agents", json={"name": "9lives"}).json()["error"]
    assert bad_name["details"] == [{"field": "body.name", "message": bad_name["message"]}]
    assert "starting with a letter" in bad_name["message"]
    api.post("/api/agents", json={"name": "ann"})
    empty_patch = api.patch("/api/agents/ann", json={}).json()["error"]
    assert empty_patch["code"] == "validation_error" and empty_patch["details"][0]["field"]


def test_over_budget_speaks_to_people_over_rest_and_to_models_in_the_tool(
    api: TestClient,
) -> None:
    api.post("/api/agents", json={"name": "ann"})
    long = "## User\n" + "- Ann likes many things, such as tea and long walks.\n" * 400
    error = api.put("/api/agents/ann/profile", json={"text": long}).json()["error"]
    assert error["code"] == "over_budget"
    assert "edit_profile" not in error["message"] and "Shorten or delete" in error["message"]
    line = "- Ann likes many things, such as tea and long walks.\n"
    assert api.put("/api/agents/ann/profile", json={"text": "## User\n" + line * 90}).is_success
    tool = api.post(
        "/api/agents/ann/tools/edit_profile",
        json={"section": "User", "operation": "append", "content": line.replace("Ann", "Bo") * 90},
    ).json()["error"]  # lines the section does not hold yet (a repeat would be a no-op)
    assert tool["code"] == "tool_error"
    assert "remove_line" in tool["message"]


def test_tokens_route_counts_as_the_budget_does(api: TestClient) -> None:
    api.post("/api/agents", json={"name": "ann"})
    text = "## User\n- Ann lives in Lisbon and drinks green tea every morning.\n"
    counted = api.post("/api/tokens", json={"text": text}).json()["tokens"]
    saved = api.put("/api/agents/ann/profile", json={"text": text}).json()
    assert counted == saved["tokens"]


def test_agent_create_rename_delete_publish_events(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(tmp_path / "ev.db", embedder=local_embedder, settings=Settings()) as hive:
        seen: list[tuple[str, str]] = []
        hive.events.subscribe(lambda event: seen.append((event.type, event.data["name"])))
        agent = hive.create_agent("ann")
        hive.update_agent(agent.id, name="anna")
        hive.delete_agent(agent.id)
        assert seen == [
            ("agent:created", "ann"),
            ("agent:updated", "anna"),
            ("agent:deleted", "anna"),
        ]


# 9. per-agent upkeep models ---------------------------------------------------------------------
def test_per_agent_upkeep_models_everywhere(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    from hivekeep.server.runner import _upkeep_wanted

    db = tmp_path / "models.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.agent("ann")
        assert not _upkeep_wanted(hive)  # no model anywhere: serve skips upkeep
        agent.configure(compacting_model="ollama:small", extraction_model="ollama:big")
        assert hive._services.llms.for_purpose(agent.id, "compaction").model_id.endswith("small")
        assert hive._services.llms.for_purpose(agent.id, "maintenance").model_id.endswith("big")
        assert _upkeep_wanted(hive)  # an agent's own model is enough for serve's upkeep
        client = TestClient(create_app(hive), base_url="http://127.0.0.1")
        put = client.put("/api/agents/ann/settings", json={"compacting_model": None})
        assert put.json()["compacting_model"] is None
        assert put.json()["extraction_model"] == "ollama:big"
        bad = client.put("/api/agents/ann/settings", json={"extraction_model": "nope:x"})
        assert bad.status_code == 422
        assert bad.json()["error"]["details"][0]["field"] == "body.extraction_model"
    run(["agents", "configure", "ann", "--compacting-model", "ollama:tiny", "--db", str(db)])
    shown = run(["agents", "configure", "ann", "--extraction-model", "default", "--db", str(db)])
    assert "compacting_model: ollama:tiny" in shown.output
    assert "extraction_model: hive default" in shown.output


# 3. where each chat model lives, as the README says ---------------------------------------------
@pytest.mark.parametrize(
    ("spec", "variable", "url"),
    [
        ("openai:gpt-4o-mini", "OPENAI_BASE_URL", "http://127.0.0.1:9001/v1"),
        ("ollama:llama3.1", "OLLAMA_HOST", "http://127.0.0.1:9002"),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", "VLLM_BASE_URL", "http://127.0.0.1:9003/v1"),
        ("lmstudio:qwen2.5-7b-instruct", "LMSTUDIO_BASE_URL", "http://127.0.0.1:9004/v1"),
    ],
)
def test_each_chat_model_url_can_be_moved_as_documented(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str, url: str
) -> None:
    from hivekeep.providers.llm.registry import create_llm

    readme = (ROOT / "README.md").read_text()
    assert f"`{variable}`" in readme and f"HIVEKEEP_LLM={spec.split(':')[0]}:" in readme
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv(variable, url)
    llm = create_llm(spec, context_window=8192)
    assert getattr(llm, "base_url", "").startswith(url)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("Install and test:") :]
    command = re.search(r"```sh\n(.+?)\n```", section, re.DOTALL)
    assert command and command.group(1).strip() == "pip install -e '.[test]' && scripts/test"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "pip install -e '.[test]'" in ci and "scripts/test" in ci
    script = (ROOT / "scripts" / "test").read_text()
    assert "apt-get install -y -qq chromium" in script and 'exec pytest "$@"' in script
    assert os.access(ROOT / "scripts" / "test", os.X_OK)


# 7. hivekeep bench ------------------------------------------------------------------------------
def test_bench_measures_a_small_hive_without_writing_to_it(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    import json
    import time

    db = tmp_path / "bench.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.agent("ann")
        agent.memorize_many(
            {"content": f"Ann note {i} about tea and Lisbon", "category": "fact"} for i in range(20)
        )
        before = agent.list_memories().total
    start = time.monotonic()
    small = ["bench", "--agent", "ann", "--queries", "5", "--writes", "5", "--db", str(db)]
    out = run(small)
    figures = json.loads(run([*small, "--json"]).stdout)
    assert time.monotonic() - start < 60
    assert "recall (incl. embedding)" in out.stdout and "memories/s" in out.stdout
    recall = figures["recall"]
    assert recall["n"] == 5 and recall["p95_ms"] >= recall["p50_ms"]
    assert figures["writes"]["per_second"] > 0 and figures["query_embedding"]["n"] == 5
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        assert hive.get_agent("ann").list_memories().total == before


def serve_start_line(cwd: Path, *args: str) -> str:
    """The first line ``hivekeep serve`` prints, started in ``cwd`` on a free port, then stopped."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEKEEP_")}
    server = subprocess.Popen(
        [*HIVEKEEP, "serve", "--port", str(port), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert server.stdout is not None
    with server.stdout:
        try:
            return server.stdout.readline().strip()
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.mark.slow
def test_serve_shows_a_postgres_url_without_its_password(tmp_path: Path) -> None:
    with postgres_url() as url:
        secret = url.replace("://postgres:@", "://postgres:s3cret-pw@", 1)
        assert secret != url
        line = serve_start_line(tmp_path, "--db", secret)
    assert line.startswith("hivekeep: serving postgresql://postgres:***@/postgres?host="), line
    assert "s3cret" not in line


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ann:pw@db.example/hive", "postgresql://ann:***@db.example/hive"),
        ("postgres://ann:p%40ss:x@db:5432/hive", "postgres://ann:***@db:5432/hive"),
        (
            "postgresql://ann@db/hive?password=pw&sslmode=require",
            "postgresql://ann@db/hive?password=***&sslmode=require",
        ),
        ("postgresql://ann@db/hive", "postgresql://ann@db/hive"),
    ],
)
def test_messages_name_a_postgres_hive_without_its_password(url: str, shown: str) -> None:
    assert hive_location(url) == shown


@pytest.mark.slow
def test_serve_names_a_new_empty_hive_and_its_absolute_path(tmp_path: Path) -> None:
    first = serve_start_line(tmp_path)
    assert first.startswith(f"hivekeep: serving a new, empty hive at {tmp_path / 'hivekeep.db'} ")
    again = serve_start_line(tmp_path, "--db", "hivekeep.db")
    assert again.startswith(f"hivekeep: serving {tmp_path / 'hivekeep.db'} at http://127.0.0.1:")
