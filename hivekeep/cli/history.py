"""``hivekeep history``, ``restore``, ``trash`` and ``purge``: nothing is overwritten, as a person.

Each opens the hive and calls the method of the same name (``Agent.memory_history`` /
``profile_history``, ``restore_memory`` / ``restore_profile``, ``Agent.trash``, ``Hive.purge``).
"""

from __future__ import annotations

from typing import Any

import click

from hivekeep.cli import (
    ID,
    VERSION,
    Bounded,
    agent_option,
    db_option,
    echo,
    echo_json,
    json_option,
    open_agent,
    open_hive,
)
from hivekeep.types import Actor
from hivekeep.views import memory_view, trashed_view


def _version_line(version: dict[str, Any]) -> str:
    text = version.get("content", version.get("text", ""))
    first = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return (
        f"v{version['version']}  {version['changed_at'][:19]}  {version['operation']:<10} "
        f"by {version['changed_by']:<11}  {first[:70]}"
    )


@click.command()
@click.argument("memory_id", type=ID, required=False)
@agent_option
@db_option
@json_option
def history(memory_id: int | None, agent_key: str, db: str, as_json: bool) -> None:
    """Show the versions of memory MEMORY_ID, or of the agent's profile without one.

    Newest first, with who changed it (agent, person, maintenance, import), when and how.
    Example:

    \b
        hivekeep history --agent assistant 42
        hivekeep history --agent assistant          # the profile's versions
    """
    with open_agent(db, agent_key) as agent:
        versions = agent.profile_history() if memory_id is None else agent.memory_history(memory_id)
    if as_json:
        echo_json(versions)
        return
    for version in versions:
        echo(_version_line(version))


@click.command()
@click.argument("memory_id", type=ID, required=False)
@agent_option
@click.option("--version", "version", type=VERSION, help="The version to make current again.")
@click.option("--profile", is_flag=True, help="Restore a version of the profile (with --version).")
@db_option
@json_option
def restore(
    memory_id: int | None,
    agent_key: str,
    version: int | None,
    profile: bool,
    db: str,
    as_json: bool,
) -> None:
    """Undo a forget of MEMORY_ID, or restore one of its versions (--version N).

    Restoring writes a new version; history is never rewritten. Example:

    \b
        hivekeep restore --agent assistant 42              # back from the trash
        hivekeep restore --agent assistant 42 --version 2
        hivekeep restore --agent assistant --profile --version 5
    """
    if profile == (memory_id is not None):
        raise click.UsageError("Pass a MEMORY_ID, or --profile with --version N.")
    with open_agent(db, agent_key) as agent:
        if memory_id is None:
            if version is None:
                raise click.UsageError("--profile needs --version N (see `hivekeep history`).")
            saved = agent.restore_profile(version, by=Actor.PERSON)
            if as_json:
                echo_json({"revision": saved.revision, "text": saved.text})
            else:
                click.echo(
                    f"Profile restored from version {version} (now revision {saved.revision})."
                )
            return
        memory = agent.restore_memory(memory_id, version, by=Actor.PERSON)
        if as_json:
            echo_json(memory_view(memory, agent.id))
        else:
            echo(f"Restored memory {memory.id}: {memory.content}")


@click.command()
@agent_option
@click.option(
    "--limit", type=Bounded(1, 200), default=50, show_default=True, help="How many, 1-200."
)
@db_option
@json_option
def trash(agent_key: str, limit: int, db: str, as_json: bool) -> None:
    """List the agent's forgotten memories still in the trash, newest first.

    They come back with `hivekeep restore`, until MEMORY_TRASH_DAYS pass. Example:

    \b
        hivekeep trash --agent assistant
    """
    with open_agent(db, agent_key) as agent:
        page = agent.trash(limit=limit)
    views = [trashed_view(t, agent.id) for t in page.memories]
    if as_json:
        echo_json({"memories": views, "total": page.total})
        return
    if not views:
        click.echo("The trash is empty.")
    for view in views:
        echo(f"#{view['id']}  forgotten {view['deleted_at'][:19]} by {view['deleted_by']}")
        echo(f"    {view['content']}")


@click.command()
@click.argument("memory_id", type=ID, required=False)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--resume", is_flag=True, help="Finish the clean-up of purges cut short (a crash, a kill)."
)
@db_option
def purge(memory_id: int | None, yes: bool, resume: bool, db: str) -> None:
    """Erase memory MEMORY_ID for good: no restore, no history, no trace in the file.

    Any agent's, live or in the trash. A purge killed during its clean-up is finished by the
    next open of the hive, by `--resume`, or by purging the same id again. Examples:

    \b
        hivekeep purge 42 --yes
        hivekeep purge --resume
    """
    if resume == (memory_id is not None):
        raise click.UsageError("give either a MEMORY_ID or --resume")
    if memory_id is None:
        with open_hive(db) as hive:
            finished = hive.finish_purges()
        ids = ", ".join(map(str, finished))
        click.echo(f"Finished purges of memories {ids}." if ids else "No purge was pending.")
        return
    if not yes:
        click.confirm(f"Erase memory {memory_id} and its whole history for good?", abort=True)
    with open_hive(db) as hive:
        hive.purge(memory_id)
    click.echo(f"Memory {memory_id} was purged.")
