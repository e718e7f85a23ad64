"""``hivekeep memories``, ``update`` and ``forget``: a person browsing and correcting an agent's
archive, with the tools' rules (``list_memories``, ``update_memory``, ``forget``).

Arguments are checked by the tool's own rules (``checked``), worded as options; the writes go
through the ``Agent`` methods as a person (``Actor.PERSON`` in the history), so only the agent's
own memories can change, and any other id gets the tool's "not found" message.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from hivekeep.cli import agent_option, db_option, echo, echo_json, json_option, open_agent
from hivekeep.cli.memories import CATEGORIES, SCOPES, call_tool, checked, heading
from hivekeep.types import Actor
from hivekeep.views import hit_view, memory_view

MEMORY_ID = {"memory_id": "ID"}


@click.command()
@agent_option
@click.option(
    "--query",
    metavar="TEXT",
    help="Rank by relevance to TEXT (hybrid recall, as the UI's search box) instead of by date.",
)
@click.option("--category", metavar="CATEGORY", help=f"Only this category: {CATEGORIES}.")
@click.option("--subject", help="Only memories about this subject.")
@click.option(
    "--scope", metavar="SCOPE", help=f"{SCOPES}: 'shared' lists every agent's shared memories."
)
@click.option("--limit", type=int, default=50, show_default=True, help="How many, 1-200.")
@click.option("--offset", type=int, default=0, show_default=True, help="How many to skip.")
@db_option
@json_option
def memories(
    agent_key: str,
    query: str | None,
    category: str | None,
    subject: str | None,
    scope: str | None,
    limit: int,
    offset: int,
    db: str,
    as_json: bool,
) -> None:
    """List the memories the agent can see, newest first (the `list_memories` tool).

    Its own memories and the ones other agents share; --scope private shows only its own
    private ones, --scope shared every agent's shared ones. The last line says how many there
    are and the --offset of the next page. --query ranks them by relevance instead, over the
    best 50 matches, without counting as the agent's recall (as the UI's search). Example:

    \b
        hivekeep memories --agent assistant --category fact --limit 20
        hivekeep memories --agent assistant --limit 20 --offset 20
        hivekeep memories --agent assistant --query "where does the user live?"
    """
    arguments = {
        "category": category,
        "subject": subject,
        "scope": scope,
        "limit": limit,
        "offset": offset,
    }
    if query is not None:
        _search(agent_key, query, checked("list_memories", arguments), db, as_json)
        return
    with open_agent(db, agent_key) as agent:
        page = call_tool(agent, "list_memories", arguments)
    if as_json:
        echo_json(page)
        return
    for memory in page["memories"]:
        echo(heading(memory))
        echo(f"   {memory['content']}")
    click.echo(_page_line(len(page["memories"]), page["total"], offset, page["has_more"]))


def _search(agent_key: str, query: str, given: dict[str, Any], db: str, as_json: bool) -> None:
    """``--query``: ``Agent.search_memories`` (the REST search's own), ranked, a page at a time."""
    offset = given.get("offset", 0)
    with open_agent(db, agent_key) as agent:
        found = agent.search_memories(query, **given)
        views = [hit_view(hit, agent.id) for hit in found.hits]
    if as_json:
        page = {"memories": views, "total": found.total, "has_more": found.has_more}
        echo_json(page | ({"warning": found.warning} if found.warning else {}))
        return
    if found.warning:
        click.echo(f"Warning: {found.warning}", err=True)
    for rank, view in enumerate(views, start=offset + 1):
        echo(heading(view, rank))
        echo(f"   {view['content']}")
    click.echo(_page_line(len(views), found.total, offset, found.has_more))


def _page_line(shown: int, total: int, offset: int, has_more: bool) -> str:
    """``3 of 120 memories (41-43), next: --offset 43.``: where this page sits, and the next."""
    if offset and not shown:
        return f"No memories at --offset {offset} (there are {total})."
    if not shown:
        return "No memories found."
    noun = "memory" if total == 1 else "memories"
    where = f" ({offset + 1}-{offset + shown})" if offset or has_more else ""
    after = f", next: --offset {offset + shown}" if has_more else ""
    return f"{shown} of {total} {noun}{where}{after}."


@click.command()
@click.argument("memory_id", metavar="ID", type=int)
@agent_option
@click.option("--content", metavar="TEXT", help="The new text.")
@click.option("--category", metavar="CATEGORY", help=f"{CATEGORIES}.")
@click.option("--subject", help="Who or what the memory is about.")
@click.option("--importance", type=int, help="1 (trivial) to 10.")
@click.option("--scope", metavar="SCOPE", help=f"{SCOPES}.")
@db_option
@json_option
def update(
    memory_id: int,
    agent_key: str,
    content: str | None,
    category: str | None,
    subject: str | None,
    importance: int | None,
    scope: str | None,
    db: str,
    as_json: bool,
) -> None:
    """Change memory ID, one the agent wrote (the `update_memory` tool, as a person).

    Only the options given change; the old version stays in `hivekeep history`, and
    `hivekeep restore --version N` brings it back. Example:

    \b
        hivekeep update --agent assistant 42 --content "The user moved to Porto in 2025."
        hivekeep update --agent assistant 42 --importance 8 --scope shared
    """
    changes = {
        "content": content,
        "category": category,
        "subject": subject,
        "importance": importance,
        "scope": scope,
    }
    given = checked("update_memory", {"memory_id": memory_id, **changes}, MEMORY_ID)
    del given["memory_id"]
    if not given:
        raise click.UsageError(
            "Nothing to change: give at least one of --content, --category, --subject, "
            "--importance, --scope."
        )
    with open_agent(db, agent_key) as agent:
        memory = agent.update_memory(memory_id, by=Actor.PERSON, **given)
        view = memory_view(memory, agent.id)
    if as_json:
        echo_json(view)
    else:
        echo(f"Updated memory {memory.id}: {memory.content}")
        echo(f"   {heading(view)}")


@click.command()
@click.argument("memory_id", metavar="ID", type=int)
@agent_option
@click.option("--yes", is_flag=True, help="Do not ask (it is only asked on a terminal).")
@db_option
@json_option
def forget(memory_id: int, agent_key: str, yes: bool, db: str, as_json: bool) -> None:
    """Move memory ID, one the agent wrote, to the trash (the `forget` tool, as a person).

    It leaves recall and listings at once; `hivekeep restore` brings it back until
    MEMORY_TRASH_DAYS pass. On a terminal it shows the memory and asks first. Example:

    \b
        hivekeep forget --agent assistant 42
        hivekeep forget --agent assistant 42 --yes
    """
    checked("forget", {"memory_id": memory_id}, MEMORY_ID)
    with open_agent(db, agent_key) as agent:
        if not yes and sys.stdin.isatty():
            memory = agent.memory(memory_id)
            if memory.agent_id == agent.id:  # another's: forget says it cannot
                echo(f"#{memory_id}  {memory.content}", err=True)  # stdout: the result only
                click.confirm("Forget this memory? (it stays restorable)", abort=True, err=True)
        agent.forget(memory_id, by=Actor.PERSON)
        name = agent.name
    if as_json:
        echo_json({"success": True})
    else:
        echo(
            f"Memory {memory_id} is in the trash; `hivekeep restore --agent {name} {memory_id}` "
            "brings it back."
        )
