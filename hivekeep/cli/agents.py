"""``hivekeep agents``: list (the default), create and delete agents."""

from __future__ import annotations

from dataclasses import asdict

import click

from hivekeep import Agent
from hivekeep.cli import db_option, echo, echo_json, json_option, open_hive
from hivekeep.views import deletion_preview, deletion_summary

ROLE_WIDTH = 60  # the table shortens longer roles; --json gives them whole


@click.group(invoke_without_command=True)
@db_option
@json_option
@click.pass_context
def agents(ctx: click.Context, db: str, as_json: bool) -> None:
    """The hive's agents; with no subcommand, list them.

    Example:

    \b
        hivekeep agents
        hivekeep agents create assistant --role "General helper"
        hivekeep agents delete assistant
    """
    if ctx.invoked_subcommand is None:
        _list(db, as_json)
    elif as_json:
        raise click.UsageError(
            f"Put --json after the subcommand: agents {ctx.invoked_subcommand} --json"
        )


@agents.command(name="list")
@db_option
@json_option
def list_agents(db: str, as_json: bool) -> None:
    """List agents: id, name and role.

    Example:

    \b
        hivekeep agents list --json
    """
    _list(db, as_json)


@agents.command()
@click.argument("name")
@click.option("--role", default="", help="What the agent is for, in a sentence or two.")
@db_option
@json_option
def create(name: str, role: str, db: str, as_json: bool) -> None:
    """Create an agent named NAME with an empty profile.

    Example:

    \b
        hivekeep agents create assistant --role "General helper"
    """
    with open_hive(db, create=True) as hive:
        agent = hive.create_agent(name, role=role)
    if as_json:
        echo_json(asdict(agent.record))
    else:
        click.echo(f"Created agent {agent.id} {agent.name!r}.")


@agents.command()
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking first.")
@db_option
@json_option
def delete(name: str, yes: bool, db: str, as_json: bool) -> None:
    """Delete the agent NAME (or id): its profile, private memories and conversations.

    Its shared memories stay, recallable by every agent as shared by NAME (deleted). The prompt
    says how many of each go and stay.

    Example:

    \b
        hivekeep agents delete assistant --yes
    """
    with open_hive(db) as hive:
        agent = hive.get_agent(name)
        if not yes:
            click.confirm(deletion_preview(agent.name, hive.agent_footprint(agent.id)), abort=True)
        gone = hive.delete_agent(agent.id)
    if as_json:
        echo_json({"name": agent.name, **asdict(gone)})
    else:
        click.echo(deletion_summary(agent.name, gone))


def _list(db: str, as_json: bool) -> None:
    with open_hive(db) as hive:
        found = hive.agents()
    if as_json:
        echo_json([asdict(agent.record) for agent in found])
    elif not found:
        click.echo("No agents yet. Create one with: hivekeep agents create NAME")
    else:
        _table(found)


def _table(found: list[Agent]) -> None:
    rows = [("ID", "NAME", "ROLE")] + [(str(a.id), a.name, _short(a.role)) for a in found]
    id_width = max(len(row[0]) for row in rows)
    name_width = max(len(row[1]) for row in rows)
    for agent_id, name, role in rows:
        echo(f"{agent_id:>{id_width}}  {name:<{name_width}}  {role}".rstrip())


def _short(role: str) -> str:
    line = " ".join(role.split())
    return line if len(line) <= ROLE_WIDTH else line[: ROLE_WIDTH - 1] + "…"
