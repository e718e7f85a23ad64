"""Claude Code: hooks that give a session the agent's memory, and keep what it said.

``install`` merges hook entries into Claude Code's settings JSON (``.claude/settings.json`` by
default) for SessionStart, PreCompact and SessionEnd, each running ``hivekeep hook claude-code``
for one agent and hive; every other key and hook is kept, nothing is added twice, and
``uninstall`` removes exactly the entries it added. ``run_hook`` handles one hook input, as
Claude Code sends it on standard input (its hooks reference: ``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``):

- SessionStart prints the hook output JSON, whose ``additionalContext`` holds the agent's profile
  and, within ``RECALL_TOKENS``, the memories most relevant to the project (a recall on the name
  of the working directory); with a model, it also starts the background run below, for batches
  an earlier session left waiting;
- PreCompact and SessionEnd store the session's new user and assistant text turns (from the
  JSONL transcript) in the agent's conversation for that session, before returning, then start
  a detached process that folds them into batches and runs the maintenance call, and return
  (without a model, they are folded at once and wait for one): Claude Code gives SessionEnd hooks
  about 1.5 s, and a compaction must never wait on a model. A hive another process is writing
  is waited for ``STORE_WAIT_S``; then the background run stores the turns when it can. That
  process takes the agent's lease (two never run at once); a batch it could not finish waits for
  the next hook or ``hive.resume``.

A hook never fails Claude Code: whatever happens (no hive, a malformed payload or transcript, no
model, a busy agent) it exits 0, saying what went wrong on standard error.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivekeep import Agent, Chat, Hive, HiveBusy, HivekeepError, ValidationError
from hivekeep.core.chats import claude_code_messages
from hivekeep.core.tokens import count_tokens

log = logging.getLogger(__name__)

SOURCE = "claude-code"
EVENTS = ("SessionStart", "PreCompact", "SessionEnd")
OPTIONAL_EVENTS = ("UserPromptSubmit",)
MARK = "hivekeep hook claude-code"  # what every command we add contains, and only ours
DEFAULT_SETTINGS = Path(".claude/settings.json")
TIMEOUTS = {"SessionStart": 15, "PreCompact": 10, "SessionEnd": 10, "UserPromptSubmit": 10}
RECALL_TOKENS = 600  # the project's memories added at SessionStart, at most
RECALL_LIMIT = 8
PROMPT_RECALL_LIMIT = 3
STORE_WAIT_S = 1.0  # how long PreCompact/SessionEnd wait to store (a busy hive: then, in the back)
BUSY_TRIES = 30  # the background run's tries to store on a busy hive (each its busy timeout)


def hook_command(agent: str, db: str | None) -> str:
    """The command line one hook entry runs: this Python, so the hook finds hivekeep whatever
    Claude Code's PATH is; ``db``: the hive file (None: HIVEKEEP_DB as Claude Code sees it)."""
    parts = [sys.executable, "-m", "hivekeep", "hook", "claude-code", "--agent", agent]
    if db is not None:
        parts += ["--db", db]
    command = shlex.join(parts)
    assert MARK in command
    return command


def read_settings(path: Path) -> dict[str, Any]:
    """Claude Code's settings at ``path`` ({} when the file does not exist yet)."""
    if not path.exists():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc}); it was left as it is.") from None
    if not isinstance(settings, dict):
        raise ValidationError(f"{path} holds JSON that is not an object; it was left as it is.")
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise ValidationError(f"{path}: 'hooks' is not an object of lists; it was left as it is.")
    return settings


def install(path: Path, agent: str, db: str | None, *, prompt_recall: bool = False) -> list[str]:
    """Add a hook entry for each event to the settings at ``path``; returns the events that got
    one (an event that already runs the same command is left as it is)."""
    settings = read_settings(path)
    hooks = settings.setdefault("hooks", {})
    command = hook_command(agent, db)
    added = []
    for event in EVENTS + (OPTIONAL_EVENTS if prompt_recall else ()):
        groups = hooks.setdefault(event, [])
        if any(entry.get("command") == command for entry in _entries(groups)):
            continue
        entry = {"type": "command", "command": command, "timeout": TIMEOUTS[event]}
        groups.append({"hooks": [entry]})
        added.append(event)
    if added:
        _write(path, settings)
    return added


def uninstall(path: Path, agent: str | None = None) -> int:
    """Remove the hook entries ``install`` added (only those of ``agent`` when given), and the
    groups and events left empty by it; returns how many entries were removed."""
    settings = read_settings(path)
    hooks = settings.get("hooks")
    if not hooks:
        return 0
    removed = 0
    for event in list(hooks):
        kept_groups = []
        for group in hooks[event]:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [e for e in group["hooks"] if not _ours(e, agent)]
            removed += len(group["hooks"]) - len(kept)
            if kept:
                kept_groups.append({**group, "hooks": kept})
            elif not group["hooks"]:
                kept_groups.append(group)  # empty before us: not ours to remove
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    if removed:
        _write(path, settings)
    return removed


def _entries(groups: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [
        entry
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for entry in group["hooks"]
        if isinstance(entry, dict)
    ]


def _ours(entry: Any, agent: str | None) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or MARK not in command:
        return False
    if agent is None:
        return True
    words = shlex.split(command)
    return "--agent" in words[:-1] and words[words.index("--agent") + 1] == agent


def _write(path: Path, settings: dict[str, Any]) -> None:
    """Whole or not at all: a temporary file beside it, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=path.name, suffix=".tmp", delete=False, encoding="utf-8"
    ) as file:
        json.dump(settings, file, indent=2, ensure_ascii=False)
        file.write("\n")
    os.replace(file.name, path)


# the hook ---------------------------------------------------------------------------------------
def parse_payload(text: str) -> dict[str, Any]:
    """The hook input; ``ValidationError`` when it is not a JSON object naming its event."""
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"the hook input is not JSON ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("hook_event_name"), str):
        raise ValidationError("the hook input is not an object with a 'hook_event_name'")
    return payload


def session_context(agent: Agent, cwd: str | None) -> str:
    """What SessionStart adds: the profile, then the memories most relevant to the project."""
    parts = [f"# Memory of {agent.name} (hivekeep)"]
    profile = agent.profile_text().strip()
    parts.append(profile or "(The profile is empty.)")
    project = Path(cwd).name if cwd else ""
    if project:
        lines, used = [], 0
        for hit in agent.recall(project, limit=RECALL_LIMIT).hits:
            line = f"- {hit.memory.content}"
            used += count_tokens(line)
            if used > RECALL_TOKENS:
                break
            lines.append(line)
        if lines:
            parts.append(f"## Memories about {project}\n" + "\n".join(lines))
    return "\n\n".join(parts)


def prompt_context(agent: Agent, prompt: str) -> str:
    hits = agent.recall(prompt, limit=PROMPT_RECALL_LIMIT).hits if prompt.strip() else []
    if not hits:
        return ""
    return "Relevant memories (hivekeep):\n" + "\n".join(f"- {h.memory.content}" for h in hits)


def hook_output(event: str, context: str) -> str:
    """Claude Code's hook output JSON adding ``context`` to the session."""
    specific = {"hookEventName": event, "additionalContext": context}
    return json.dumps({"hookSpecificOutput": specific}, ensure_ascii=False)


def session_chat(payload: Mapping[str, Any]) -> Chat:
    """The session's text turns, from the transcript at ``transcript_path`` (none when it is
    missing or unreadable: nothing is stored then)."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        raise ValidationError("the hook input has no 'session_id'")
    messages = []
    path = payload.get("transcript_path")
    if isinstance(path, str) and path:
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                messages = claude_code_messages(file)
        except OSError as exc:
            log.warning("Cannot read the transcript %s: %s", path, exc)
    cwd = payload.get("cwd")
    project = Path(cwd).name if isinstance(cwd, str) and cwd else ""
    title = f"Claude Code: {project}" if project else "Claude Code session"
    first = messages[0].created_at if messages else None
    last = messages[-1].created_at if messages else None
    return Chat(session, title, first, last, tuple(messages))


@dataclass(frozen=True)
class HookResult:
    """What to print, and whether the store was left running in a thread (a hive another
    process is writing): the caller then exits at once, without closing the hive under it."""

    output: str = ""
    left_running: bool = False


def run_hook(
    hive: Hive, agent_name: str, payload: Mapping[str, Any], *, spawn: list[str]
) -> HookResult:
    """Handle one hook input. ``spawn``: the command that runs the maintenance call in the
    background (started only when there is work and a model, or a store to finish)."""
    event = payload["hook_event_name"]
    agent = hive.get_agent(agent_name)
    if event == "SessionStart":
        if hive.has_upkeep_model():  # what an earlier session's run could not finish
            start_detached(spawn)
        cwd = payload.get("cwd")
        context = session_context(agent, cwd if isinstance(cwd, str) else None)
        return HookResult(hook_output(event, context))
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        context = prompt_context(agent, prompt if isinstance(prompt, str) else "")
        return HookResult(hook_output(event, context) if context else "")
    if event in ("PreCompact", "SessionEnd"):
        chat = session_chat(payload)
        model = hive.has_upkeep_model()
        # With a model, the background run folds the turns, sized for its window: making the
        # model here (an SDK import) would cost the hook a second. No transcript (yet):
        # nothing to keep, no empty conversation.
        stored = not chat.messages or _stored_within(agent, chat, not model, STORE_WAIT_S)
        if model or not stored:  # not stored: the hive is busy, the background run stores them
            start_detached([*spawn, "--payload", json.dumps(dict(payload))])
        return HookResult(left_running=not stored)
    log.info("Claude Code hook %s is not one hivekeep handles; ignored", event)
    return HookResult()


def _stored_within(agent: Agent, chat: Chat, fold: bool, seconds: float) -> bool:
    """Store the session's new turns, waiting at most ``seconds`` (the store waits for a hive
    another process is writing, up to its busy timeout); False: still waiting."""
    failed: list[HivekeepError] = []

    def store() -> None:
        try:
            synced = agent.keep_chat(SOURCE, chat, fold=fold)
            log.info("Stored %d new messages of the session", synced.added)
        except HivekeepError as exc:
            failed.append(exc)

    thread = threading.Thread(target=store, name="hivekeep-hook-store", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return False
    if failed:
        raise failed[0]
    return True


def start_detached(command: list[str]) -> None:
    """Start ``command`` in its own session, not waited for: it outlives the hook. It runs
    niced, so the hook that started it (and Claude Code) keep the processor first."""
    subprocess.Popen(
        ["nice", "-n", "10", *command] if shutil.which("nice") else command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def catch_up(hive: Hive, agent_name: str, payload: Mapping[str, Any] | None = None) -> None:
    """The background half: store and fold the session's new turns (``payload``: its
    PreCompact or SessionEnd input; a busy hive is waited for, up to ``BUSY_TRIES`` busy
    timeouts), then the maintenance call for every waiting batch of the agent."""
    try:
        agent = hive.get_agent(agent_name)
        if payload is not None:
            chat = session_chat(payload)
            for attempt in range(1, BUSY_TRIES + 1):
                try:
                    if chat.messages:
                        agent.keep_chat(SOURCE, chat)
                    break
                except HiveBusy:
                    if attempt == BUSY_TRIES:
                        raise
        caught = agent.catch_up()
    except HivekeepError as exc:  # AgentBusy: the one running does it; no model: later
        log.warning("Maintenance of %s not run now: %s", agent_name, exc)
        return
    log.info("Maintenance: %d calls, %d batches left", len(caught.outcomes), caught.left)
