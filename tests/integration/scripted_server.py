"""A real server like ``hivekeep serve``, but over a ``ScriptedLLM``: for API and browser tests.

Run as ``python -m tests.integration.scripted_server DB PORT SCRIPT.json``. The model answers by the
prompt it gets (chat, fold, merge, maintenance, regenerate), from the JSON script, so a test needs
no fixed call order. A chat message ``remember: X`` makes the model call ``memorize`` with X; any
prompt containing the script's ``fail_marker`` fails (chat: a provider error; regenerate: a reply
with no profile block).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from hivekeep import Hive, Settings
from hivekeep.errors import ProviderError
from hivekeep.providers.llm.base import Completion, Message, ToolCall
from hivekeep.server.runner import run_server
from hivekeep.services.compile import COMPILE_SYSTEM
from hivekeep.testing import ScriptedLLM
from tests.integration.conversation_support import call_site_of, maintenance_reply
from tests.integration.server_support import START_TIMEOUT_S, Server, free_port, server_env

DEFAULT_SCRIPT: dict[str, Any] = {
    "chat": "Hello from the scripted model, nice to meet you.",
    "fold": "Ann and the agent talked about tea and Lisbon.",
    "merge": "They talked.",
    "archive": [{"op": "add", "content": "Ann drinks green tea", "category": "preference"}],
    "profile": "## User\n- Name: Ann\n",
    "fail_marker": "PLEASE-FAIL",
    "context_window": 8192,
}
REPLIES = 100_000  # the same responder for every call the server will ever make
MODEL_ENV = ("HIVEKEEP_LLM", "MEMORY_EXTRACTION_MODEL", "COMPACTING_")  # would change the model


def responder(script: dict[str, Any]) -> Any:
    """One reply function for every call, choosing the answer by the prompt it receives."""
    marker = script["fail_marker"]

    def reply(messages: list[Message], tools: Any) -> str | Completion:
        text = "\n".join(m.content for m in messages)
        if messages and messages[0].content == COMPILE_SYSTEM:
            if script.get("trace"):  # one line per profile compile (multi-process tests count)
                with Path(script["trace"]).open("a") as trace:
                    trace.write(f"compile {os.getpid()}\n")
            if marker in text:
                return "I could not write a profile this time."
            return f"<profile>\n{script['profile']}\n</profile>"
        kind = call_site_of(messages)
        if kind == "fold":
            time.sleep(float(script.get("fold_delay_s", 0)))  # a slow fold, to overlap runs
            return str(script["fold"])
        if kind == "merge":
            return str(script["merge"])
        if kind == "maintenance":
            return maintenance_reply(script["archive"], script["profile"])
        last = messages[-1]
        if last.role == "user" and last.content.startswith("slow: "):
            time.sleep(float(script.get("slow_s", 2)))  # a turn still running when a tab reloads
        if last.role == "user" and marker in last.content:
            raise ProviderError("the scripted model is down (asked to fail)")
        if last.role == "user" and last.content.startswith("remember: "):
            fact = last.content.removeprefix("remember: ")
            return Completion(
                tool_calls=[ToolCall("call_1", "memorize", {"content": fact, "category": "fact"})]
            )
        if last.role == "tool":
            return "Noted, I will remember that."
        return str(script["chat"])

    return reply


def main(db: str, port: int, script_path: str) -> None:
    script = {**DEFAULT_SCRIPT, **json.loads(Path(script_path).read_text())}
    llm = ScriptedLLM([responder(script)] * REPLIES, context_window=int(script["context_window"]))
    with Hive(db, settings=Settings.from_env(), llm=llm) as hive:
        run_server(hive, host="127.0.0.1", port=port)


def start_scripted_server(
    root: Path, script: dict[str, Any] | None = None, *, db: str | None = None, name: str = ""
) -> Server:
    """Start the scripted server on a free port in ``root`` and wait until it answers.

    ``db``: the hive (a file or a ``postgresql://`` URL; default ``root/hive.db``); ``name``
    tells apart the files of several servers in one ``root``."""
    script_path = root / f"script{name}.json"
    script_path.write_text(json.dumps(script or {}))
    port = free_port()
    log = root / f"serve{name}.log"
    command = [sys.executable, "-m", "tests.integration.scripted_server"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, db or str(root / "hive.db"), str(port), str(script_path)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in server_env().items() if not k.startswith(MODEL_ENV)},
            cwd=Path(__file__).parents[2],
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the scripted server exited:\n{server.output()}")
        try:
            if httpx.get(f"{server.url}/api/health", timeout=1, trust_env=False).is_success:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"the scripted server did not answer:\n{server.output()}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
