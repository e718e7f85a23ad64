"""``hivekeep mcp``: serve one agent's memory to an MCP host, over stdio or streamable HTTP."""

from __future__ import annotations

import functools
import os

import click

from hivekeep import Access, Agent, AgentNotFound, Hive, NotFound
from hivekeep.cli import agent_option, db_option, open_hive
from hivekeep.config import API_TOKEN
from hivekeep.core.access_tokens import admin_token_problem


@click.command()
@agent_option
@db_option
@click.option(
    "--http",
    "port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio.",
)
@click.option(
    "--create",
    is_flag=True,
    help="Create the agent (and the hive file) if it does not exist yet.",
)
@click.option("--role", default="", help="The role of an agent that --create makes.")
def mcp(agent_key: str, db: str, port: int | None, create: bool, role: str) -> None:
    """Serve the agent's memory tools and profile over MCP (stdio by default).

    The seven memory tools act as the agent; its profile is the resource
    hivekeep://agents/NAME/profile and is in the server's instructions. Over --http, requests
    need a bearer token when HIVEKEEP_API_TOKEN is set (it, or a scoped token of this agent from
    `hivekeep tokens create`); a scoped token is always checked, and a read-only one may only
    call the tools that change nothing. A missing agent is an
    error unless --create is given (a typo in a host's config must not start a new, empty
    memory). Example:

    \b
        hivekeep mcp --agent assistant --db ~/hivekeep.db
        hivekeep mcp --agent assistant --create --role "General helper"
        hivekeep mcp --agent assistant --http 8766
    """
    # The SDK is imported here, not at the top, so `hivekeep --help` does not load it.
    from hivekeep.cli.serve import port_problem
    from hivekeep.mcp_server import HTTP_HOST, HTTP_PATH, serve_http, serve_stdio

    problem = None if port is None else port_problem(HTTP_HOST, port, "--http PORT")
    if problem is not None:  # before the "Serving" line, not a raw bind error after it
        raise click.ClickException(problem)

    with open_hive(db, create=create) as hive:
        agent = _agent(hive, agent_key, create=create, role=role)
        if port is None:
            serve_stdio(agent)
            return
        click.echo(
            f"Serving the memory of {agent.name} over MCP at "
            f"http://{HTTP_HOST}:{port}{HTTP_PATH} (Ctrl-C to stop).",
            err=True,
        )
        admin_token = os.environ.get(API_TOKEN.env, "").strip() or None
        if admin_token is not None and (problem := admin_token_problem(admin_token)) is not None:
            raise click.ClickException(problem)  # the rule of `hivekeep serve`, one for both
        authenticate = functools.partial(_authenticate, hive, agent.id, admin_token)
        serve_http(agent, port, authenticate, hive.settings.log_format)


def _authenticate(
    hive: Hive, agent_id: int, admin_token: str | None, bearer: str | None, **options: bool
) -> Access | None:
    """Who ``bearer`` acts as; None (refused) also once the served agent is deleted."""
    access = hive.tokens.authenticate(bearer, admin_token, **options)
    try:
        hive.get_agent(agent_id)
    except AgentNotFound:
        return None
    return access


def _agent(hive: Hive, key: str, *, create: bool, role: str) -> Agent:
    if create:
        return hive.agent(key, role=role)
    try:
        return hive.get_agent(key)
    except NotFound:
        raise click.ClickException(
            f"No agent {key.strip()!r} in {hive.path}. Create it with `hivekeep agents create "
            f"{key.strip()}` (add --db {hive.path} if it is not the default), or pass --create "
            "to make it when the MCP server starts."
        ) from None
