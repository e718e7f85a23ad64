"""``hivekeep hooks install|uninstall claude-code`` and ``hivekeep hook claude-code``: Claude Code
sessions that start with the agent's memory and leave what they said in it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from hivekeep.cli import agent_option, db_option, hive_file, open_hive
from hivekeep.integrations import claude_code

CLIENTS = click.Choice(["claude-code"])
SETTINGS_HELP = "Claude Code's settings file (default: .claude/settings.json of this directory)."


@click.group()
def hooks() -> None:
    """Install or remove hivekeep's hooks in a coding agent's settings (Claude Code). Example:

    \b
        hivekeep hooks install claude-code --agent coder
        hivekeep hooks uninstall claude-code
    """


@hooks.command()
@click.argument("client", type=CLIENTS)
@agent_option
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=claude_code.DEFAULT_SETTINGS,
    show_default=True,
    help=SETTINGS_HELP,
)
@click.option(
    "--prompt-recall",
    is_flag=True,
    help="Also recall memories for each prompt (a UserPromptSubmit hook).",
)
@db_option
def install(client: str, agent_key: str, settings_path: Path, prompt_recall: bool, db: str) -> None:
    """Merge hook entries for SessionStart, PreCompact and SessionEnd into Claude Code's
    settings, each running `hivekeep hook claude-code` for this agent and hive (the agent is
    created if it does not exist). Every other setting and hook is kept; a rerun adds nothing.
    Example:

    \b
        hivekeep hooks install claude-code --agent coder
        hivekeep hooks install claude-code --agent coder --settings ~/.claude/settings.json
    """
    with open_hive(db, create=True) as hive:
        agent = hive.agent(agent_key).name
    added = claude_code.install(settings_path, agent, hive_file(db), prompt_recall=prompt_recall)
    if added:
        click.echo(f"Added hivekeep hooks for {agent} to {settings_path}: {', '.join(added)}.")
    else:
        click.echo(f"{settings_path} already runs hivekeep's hooks for {agent}; nothing changed.")


@hooks.command()
@click.argument("client", type=CLIENTS)
@click.option(
    "--agent",
    "agent_key",
    metavar="NAME",
    help="Remove only this agent's hooks (default: every hivekeep hook).",
)
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=claude_code.DEFAULT_SETTINGS,
    show_default=True,
    help=SETTINGS_HELP,
)
def uninstall(client: str, agent_key: str | None, settings_path: Path) -> None:
    """Remove the hook entries `hivekeep hooks install` added, and nothing else. Example:

    \b
        hivekeep hooks uninstall claude-code
    """
    removed = claude_code.uninstall(settings_path, agent_key)
    click.echo(f"Removed {removed} hivekeep hook entries from {settings_path}.")


@click.group()
def hook() -> None:
    """Run one hook of a coding agent (it reads the hook's JSON input on standard input). Claude
    Code runs it, as `hivekeep hooks install` wrote it. Example:

    \b
        echo '{"hook_event_name": "SessionStart", "session_id": "s1"}' \\
            | hivekeep hook claude-code --agent coder
    """


@hook.command("claude-code")
@agent_option
@click.option(
    "--payload",
    hidden=True,
    help="With --catch-up: the PreCompact or SessionEnd input whose session to fold first.",
)
@click.option(
    "--catch-up",
    is_flag=True,
    hidden=True,
    help="The background half: run the maintenance call for the waiting batches.",
)
@db_option
def claude_code_hook(agent_key: str, payload: str | None, catch_up: bool, db: str) -> None:
    """One Claude Code hook: SessionStart prints the agent's profile and the project's memories
    as additional context; PreCompact and SessionEnd store the session's new turns and start
    the maintenance call in the background. Always exits 0 (a problem goes to standard error).
    Claude Code runs it; installed by `hivekeep hooks install claude-code`. Example, by hand:

    \b
        echo '{"hook_event_name": "SessionStart", "session_id": "s1", "cwd": "."}' \\
            | hivekeep hook claude-code --agent coder
    """
    spawn = [
        sys.executable,
        "-m",
        "hivekeep",
        "hook",
        "claude-code",
        "--agent",
        agent_key,
        "--catch-up",
        "--db",
        db,
    ]
    try:
        with open_hive(db) as hive:
            if catch_up:
                given = None if payload is None else claude_code.parse_payload(payload)
                claude_code.catch_up(hive, agent_key, given)
                return
            given = claude_code.parse_payload(sys.stdin.read())
            result = claude_code.run_hook(hive, agent_key, given, spawn=spawn)
            if result.left_running:  # a busy hive: the background run stores the turns;
                sys.stderr.flush()  # the hive is in use by the waiting thread, not closed
                os._exit(0)
    except Exception as exc:  # a hook must never fail Claude Code: said on standard error
        click.echo(f"hivekeep hook claude-code: {exc}", err=True)
        return
    if result.output:
        click.echo(result.output)
