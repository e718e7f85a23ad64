"""``hivekeep tokens``: create, list and revoke the hive's scoped API tokens.

A token is printed once, when it is made; the hive keeps only a salted hash of it, so a lost
token cannot be shown again (revoke it and create another).
"""

from __future__ import annotations

from typing import Any

import click

from hivekeep import Hive, TokenRecord
from hivekeep.cli import db_option, echo, echo_json, json_option, open_hive
from hivekeep.views import token_view


@click.group()
def tokens() -> None:
    """Scoped API tokens for `hivekeep serve` and `hivekeep mcp --http`.

    A token acts only as the agents it names (every agent if none), and a read-only one may read
    and recall but change nothing. HIVEKEEP_API_TOKEN stays the admin token. Example:

    \b
        hivekeep tokens create notes-app --agent assistant --read-only
        hivekeep tokens list
        hivekeep tokens revoke notes-app
    """


@tokens.command()
@click.argument("label")
@click.option(
    "--agent",
    "agent_keys",
    multiple=True,
    metavar="NAME",
    help="An agent the token acts as (repeat for several; none: every agent).",
)
@click.option("--read-only", is_flag=True, help="May read and recall, never change anything.")
@db_option
@json_option
def create(
    label: str, agent_keys: tuple[str, ...], read_only: bool, db: str, as_json: bool
) -> None:
    """Create a token labelled LABEL and print it (once: only its hash is kept).

    Example:

    \b
        hivekeep tokens create notes-app --agent assistant --agent planner --json
    """
    with open_hive(db) as hive:
        created = hive.tokens.create(label, agent_keys or None, read_only=read_only)
        if as_json:
            echo_json({"label": created.label, "token": created.token})
            return
        echo(f"Token {created.label!r} ({_scope(hive, created.record)}):")
        click.echo(created.token)
        click.echo("Keep it now: it is not shown again (the hive stores only a hash).", err=True)


@tokens.command(name="list")
@db_option
@json_option
def list_tokens(db: str, as_json: bool) -> None:
    """List tokens: label, scope, created, last used (never the token itself).

    Example:

    \b
        hivekeep tokens list --json
    """
    with open_hive(db) as hive:
        records = hive.tokens.list()
        if as_json:
            echo_json(_views(hive, records))
            return
        if not records:
            click.echo("No tokens. Create one with `hivekeep tokens create LABEL`.")
        for record in records:
            used = record.last_used_at or "never"
            echo(
                f"{record.label}  {_scope(hive, record)}  created {record.created_at}  "
                f"last used {used}"
            )


@tokens.command()
@click.argument("label")
@db_option
def revoke(label: str, db: str) -> None:
    """Revoke the token labelled LABEL: refused at once, by running servers too.

    Example:

    \b
        hivekeep tokens revoke notes-app
    """
    with open_hive(db) as hive:
        hive.tokens.revoke(label)
        echo(f"Revoked token {label.strip()!r}.")


def _views(hive: Hive, records: list[TokenRecord]) -> list[dict[str, Any]]:
    names = {agent.id: agent.name for agent in hive.agents()}
    return [token_view(record, names) for record in records]


def _scope(hive: Hive, record: TokenRecord) -> str:
    agents = _views(hive, [record])[0]["agents"]
    named = "every agent" if agents is None else "agents: " + (", ".join(agents) or "none left")
    return f"{named}; {'read-only' if record.read_only else 'read-write'}"
