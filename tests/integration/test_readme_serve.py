"""The README's first command, from a fresh clone: it installs, serves the UI and the API.

The clone is installed into a new virtual environment exactly as the README says, except that
``--no-deps`` is added: the dependencies are the ones this test run already has (a ``.pth`` file
points the new environment at them), so the test checks hivekeep's own packaging (package data,
entry point) without downloading the world again. Then ``hivekeep serve`` runs as written, with
``HIVEKEEP_PORT`` choosing a free port, and must answer within 30 s.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sysconfig
import time
import venv
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).parents[2]
START_LIMIT_S = 30.0


def first_command() -> str:
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set-up") :]
    match = re.search(r"```sh\n(.+?)\n```", setup, re.DOTALL)
    assert match, "the README's set-up section has no sh block"
    return match.group(1).strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_readme_first_command_serves_the_ui_from_a_fresh_clone(tmp_path: Path) -> None:
    command = first_command()
    install, serve = (part.strip() for part in command.split("&&"))
    assert install == "pip install ." and serve == "hivekeep serve"

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    site = next((env_dir / "lib").glob("python*/site-packages"))
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [str(bin_dir / "pip"), "install", "--quiet", "--no-deps", "."],
        cwd=clone,
        env=env,
        check=True,
        timeout=300,
    )

    port = free_port()
    started = time.monotonic()
    server = subprocess.Popen(
        serve.split(),
        cwd=clone,
        env={**env, "HIVEKEEP_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        agents = None
        while time.monotonic() - started < START_LIMIT_S and server.poll() is None:
            try:
                agents = httpx.get(f"http://127.0.0.1:{port}/api/agents", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        if agents is None:
            server.kill()
            pytest.fail(f"no answer within {START_LIMIT_S} s:\n{server.communicate()[0]}")
        assert agents.status_code == 200 and agents.json() == {"agents": []}
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "hivekeep" in page.text.lower()
        assert (clone / "hivekeep.db").exists()  # the embedded default: a file next to you
        installed = subprocess.run(
            [str(bin_dir / "python"), "-c", "import hivekeep; print(hivekeep.__file__)"],
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        ).stdout
        assert str(env_dir) in installed  # the clone's install, not this checkout
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert "Traceback" not in output, output
