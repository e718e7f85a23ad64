"""``hivekeep conversations``: list, rename, delete (to the trash) and restore an agent's
conversations, the ids ``hivekeep chat --conversation ID`` and ``hivekeep compact`` take."""

from __future__ import annotations

import dataclasses

import click

from hivekeep import ConversationRecord
from hivekeep.cli import ID, agent_option, db_option, echo, echo_json, json_option, open_agent


@click.group()
def conversations() -> None:
    """An agent's conversations: list, rename, delete (to the trash), restore.

    A deleted conversation waits in the trash (`list --trash`) until the retention period ends
    (HIVEKEEP_TRASH_DAYS, as for memories); `restore` brings it back whole. Example:

    \b
        hivekeep conversations list --agent assistant
        hivekeep conversations rename 3 "Trip to Porto" --agent assistant
        hivekeep conversations delete 3 --agent assistant
        hivekeep conversations restore 3 --agent assistant
    """


def _line(record: ConversationRecord) -> str:
    title = record.title or "(untitled)"
    when = (
        f"deleted {record.deleted_at}" if record.deleted_at else f"last active {record.updated_at}"
    )
    return f"#{record.id}  {title}  ({when})"


@conversations.command(name="list")
@agent_option
@click.option("--trash", is_flag=True, help="List the deleted ones still in the trash instead.")
@db_option
@json_option
def list_conversations(agent_key: str, trash: bool, db: str, as_json: bool) -> None:
    """List the agent's conversations, most recently active first.

    Example:

    \b
        hivekeep conversations list --agent assistant --json
    """
    with open_agent(db, agent_key) as agent:
        found = agent.conversations.trash() if trash else agent.conversations.list()
        if as_json:
            echo_json([dataclasses.asdict(c) for c in found])
            return
        if not found:
            click.echo(
                "The trash holds no conversations."
                if trash
                else f"{agent.name} has no conversations yet: start one with "
                f"`hivekeep chat --agent {agent.name}`."
            )
        for record in found:
            echo(_line(record))


@conversations.command()
@click.argument("conversation_id", type=ID, metavar="ID")
@click.argument("title")
@agent_option
@db_option
def rename(conversation_id: int, title: str, agent_key: str, db: str) -> None:
    """Give conversation ID the title TITLE.

    Example:

    \b
        hivekeep conversations rename 3 "Trip to Porto" --agent assistant
    """
    with open_agent(db, agent_key) as agent:
        echo(f"Renamed: {_line(agent.conversations.rename(conversation_id, title))}")


@conversations.command()
@click.argument("conversation_id", type=ID, metavar="ID")
@agent_option
@db_option
def delete(conversation_id: int, agent_key: str, db: str) -> None:
    """Move conversation ID to the trash (undo with `restore`).

    Example:

    \b
        hivekeep conversations delete 3 --agent assistant
    """
    with open_agent(db, agent_key) as agent:
        agent.conversations.delete(conversation_id)
        click.echo(
            f"Conversation {conversation_id} moved to the trash. Undo with "
            f"`hivekeep conversations restore {conversation_id} --agent {agent.name}`."
        )


@conversations.command()
@click.argument("conversation_id", type=ID, metavar="ID")
@agent_option
@db_option
def restore(conversation_id: int, agent_key: str, db: str) -> None:
    """Bring conversation ID back from the trash, with all its messages.

    Example:

    \b
        hivekeep conversations restore 3 --agent assistant
    """
    with open_agent(db, agent_key) as agent:
        echo(f"Restored: {_line(agent.conversations.restore(conversation_id))}")
