"""``hivekeep remember`` and ``hivekeep import-chats``: memories from what was said elsewhere."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from hivekeep import MemoryRecord, Remembered
from hivekeep.cli import (
    ProgressBar,
    agent_option,
    db_option,
    echo,
    echo_json,
    json_option,
    open_agent,
    open_hive,
)


def read_messages(text: str) -> str | list[Any]:
    """What a file given to ``remember`` holds: a JSON list of messages (OpenAI style), an
    object with a ``messages`` list, else the text itself (one user message)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return list(value["messages"])
    if isinstance(value, list):
        return value
    return text


@click.command()
@agent_option
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-", metavar="[FILE|-]")
@db_option
@json_option
def remember(agent_key: str, file: Any, db: str, as_json: bool) -> None:
    """Remember what FILE says now: one maintenance call extracts its facts into the archive
    and updates the profile, as compaction would later.

    FILE (or standard input, the default) is a text, or a JSON list of messages in OpenAI's form
    ([{"role": "user", "content": "..."}, ...]; an object with a "messages" list too). Needs a
    model (HIVEKEEP_LLM). Prints what was added, reworded or left alone. Example:

    \b
        echo "I moved to Lisbon in May 2024." | hivekeep remember --agent assistant
        hivekeep remember --agent assistant chat.json --json
    """
    given = read_messages(file.read())
    with open_agent(db, agent_key) as agent:
        result = agent.remember(given)
    if as_json:
        echo_json(result.to_json())
    else:
        _describe(result)
    if result.status != "done":
        raise click.ClickException(
            f"the maintenance call failed: {result.error} (the messages are kept in conversation "
            f"{result.conversation_id} and retried at the next compaction or `hivekeep serve`)"
        )


def _describe(result: Remembered) -> None:
    rows: list[tuple[str, tuple[MemoryRecord, ...]]] = [
        ("added", result.added),
        ("reworded", result.reworded),
        ("left alone (already known)", result.left_alone),
    ]
    for label, memories in rows:
        for memory in memories:
            echo(f"{label}: #{memory.id} {memory.content}")
    counts = ", ".join(f"{len(memories)} {label}" for label, memories in rows)
    profile = "profile updated" if result.profile_updated else "profile unchanged"
    click.echo(f"Remembered: {counts}; {profile}.")


@click.command("import-chats")
@click.argument("source", type=click.Choice(["chatgpt", "claude"]))
@click.argument("path", type=click.Path(path_type=Path))
@agent_option
@click.option(
    "--bootstrap",
    is_flag=True,
    help="Then run the maintenance call over the imported conversations, oldest first "
    "(needs a model; run it again to go on where it stopped).",
)
@db_option
@json_option
def import_chats(
    source: str, path: Path, agent_key: str, bootstrap: bool, db: str, as_json: bool
) -> None:
    """Import a ChatGPT or Claude export (conversations.json, its folder, or ChatGPT's zip) as
    conversations of the agent (created if needed), each with its title and times; a rerun
    imports nothing twice.

    A file that is not a valid export stops with a one-line error naming it and where, and
    nothing is stored. Example:

    \b
        hivekeep import-chats chatgpt ~/Downloads/chatgpt-export.zip --agent assistant
        hivekeep import-chats claude conversations.json --agent assistant --bootstrap
    """
    with open_hive(db, create=True) as hive, ExitStack() as stack:
        bar = ProgressBar(stack, "Importing conversations")
        report = hive.import_chats(source, path, agent=agent_key, bootstrap=bootstrap, progress=bar)
        name = hive.get_agent(agent_key).name
    if as_json:
        echo_json(report.to_json())
        return
    click.echo(
        f"Imported {report.created} new conversations and {report.messages} messages into "
        f"{name} ({report.updated} updated, {report.empty} without text skipped, "
        f"{report.conversations} in the file)."
    )
    caught = report.bootstrap
    if caught is not None:
        click.echo(
            f"Bootstrap: {len(caught.outcomes)} maintenance calls, "
            f"{caught.memories_added} memories added, {caught.left} batches left"
            + (" (run it again to go on)." if caught.left else ".")
        )
