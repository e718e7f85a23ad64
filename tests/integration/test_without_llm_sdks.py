"""The base install has no LLM SDK (issue 26, item 12): ``openai`` and ``anthropic`` are extras.

Each test runs a real process in which both packages cannot be imported (a ``sitecustomize``
blocks them, as if they were not installed): the library, the CLI and ``hivekeep serve`` work,
and a spec that needs an SDK says which extra installs it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).parents[2]
BLOCKER = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('openai', 'anthropic'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HIVEKEEP_", "OPENAI_"))}
    return {**clean, "PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"}


def python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_library_works_and_a_spec_names_the_extra_it_needs(
    env: dict[str, str], tmp_path: Path
) -> None:
    code = (
        "import sys\n"
        "try:\n    import openai\nexcept ImportError:\n    pass\n"
        "else:\n    raise SystemExit('the block does not hold')\n"
        "from hivekeep import Hive, ValidationError\n"
        "from hivekeep.providers.llm import create_llm\n"
        "with Hive('h.db') as hive:\n"
        "    agent = hive.agent('a')\n"
        "    agent.memorize('The user moved to Lisbon.', category='fact')\n"
        "    print(agent.recall('where does the user live').hits[0].memory.content)\n"
        "for spec in ('openai:gpt-4o-mini', 'ollama:llama3.1', 'anthropic:claude-haiku-4-5'):\n"
        "    try:\n"
        "        create_llm(spec, api_key='k')\n"
        "    except ValidationError as exc:\n"
        "        print(exc)\n"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
    )
    lines = python(code, env, tmp_path).stdout.splitlines()
    assert lines[0] == "The user moved to Lisbon."
    assert lines[1] == (
        "openai: models need the openai package, which is not installed. Install it with: pip "
        "install 'hivekeep[openai]' (from a clone of hivekeep: pip install '.[openai]')."
    )
    assert lines[2].startswith("ollama: models need the openai package") and "[openai]" in lines[2]
    assert lines[3].startswith("anthropic: models need the anthropic package")
    assert "pip install '.[anthropic]'" in lines[3]
    assert lines[4] == "[]"


def test_chat_names_the_extra(env: dict[str, str], tmp_path: Path) -> None:
    hivekeep = [sys.executable, "-m", "hivekeep", "--db", str(tmp_path / "h.db")]
    subprocess.run([*hivekeep, "agents", "create", "a"], env=env, check=True, timeout=120)
    done = subprocess.run(
        [*hivekeep, "chat", "--agent", "a"],
        input="hi\n",
        capture_output=True,
        text=True,
        env={**env, "HIVEKEEP_LLM": "openai:gpt-4o-mini", "OPENAI_API_KEY": "k"},
        timeout=120,
    )
    assert done.returncode == 1
    assert "pip install 'hivekeep[openai]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_serve_works(env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "hivekeep", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        assert health.json()["status"] == "ok"
        created = httpx.post(f"http://127.0.0.1:{port}/api/agents", json={"name": "a"}, timeout=10)
        assert created.status_code == 201
    finally:
        server.terminate()
        server.wait(timeout=30)
