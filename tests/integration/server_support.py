"""A real ``hivekeep serve`` process on 127.0.0.1 for API tests, and an SSE reader for httpx.

The server runs as ``python -m hivekeep serve`` in a subprocess, exactly as a user starts it; its
output goes to a log file (a pipe nobody reads would fill up and stall it), shown when it fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

START_TIMEOUT_S = 60.0
# Settings a developer's shell may hold that would change what the server does.
SCRUBBED_ENV = (
    "HIVEKEEP_API_TOKEN",
    "HIVEKEEP_ALLOWED_HOSTS",
    "HIVEKEEP_DB",
    "HIVEKEEP_AGENT",
    "HIVEKEEP_EMBEDDINGS",
    "HIVEKEEP_LOG_FORMAT",
    "MEMORY_SIMILARITY_THRESHOLD",
    "MEMORY_RRF_K",
    "MEMORY_FTS_BOOST",
    "MEMORY_PROFILE_MAX_TOKENS",
)


def server_env(token: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    if token is not None:
        env["HIVEKEEP_API_TOKEN"] = token
    return {**env, **extra}


def _with(base: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    merged = {**base, **{k: v for k, v in changes.items() if v is not None}}
    return {k: v for k, v in merged.items() if changes.get(k, "") is not None}


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "hivekeep", "serve", *args]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    token: str | None = None
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, *, token: str | None = None, authorized: bool = True) -> httpx.Client:
        """An httpx client for the API; it bears the server's token unless told otherwise."""
        bearer = token if token is not None else (self.token if authorized else None)
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30, trust_env=False)
        self.clients.append(client)
        return client

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(
    db: Path | str,
    log: Path,
    *,
    token: str | None = None,
    env: dict[str, str | None] | None = None,
    **extra: str,
) -> Server:
    """Start ``hivekeep serve`` on a free port and wait until /api/health answers; ``env`` and
    ``extra``: more variables for it (None in ``env``: unset one)."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            serve_command("--port", str(port), "--db", str(db)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_with(server_env(token, **extra), env or {}),
        )
    server = Server(f"http://127.0.0.1:{port}", process, log, token)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"hivekeep serve exited with {process.returncode}:\n{server.output()}"
            )
        try:
            if httpx.get(f"{server.url}/api/health", timeout=1, trust_env=False).is_success:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"hivekeep serve did not answer in {START_TIMEOUT_S}s:\n{server.output()}")


@dataclass(frozen=True)
class SSE:
    """One Server-Sent Event, or a comment (``event`` None, ``comment`` set)."""

    id: int | None = None
    event: str | None = None
    data: dict[str, Any] | None = None
    comment: str | None = None


def read_sse(response: httpx.Response) -> Iterator[SSE]:
    """Parse a text/event-stream response into messages as they arrive."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            yield SSE(comment=line[1:].strip())
        elif line == "":
            if "event" in fields or "data" in fields:
                yield SSE(
                    id=int(fields["id"]) if "id" in fields else None,
                    event=fields.get("event"),
                    data=json.loads(fields["data"]) if "data" in fields else None,
                )
            fields = {}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
