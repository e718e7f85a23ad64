"""``hivekeep mcp``: serve one agent's memory to an MCP host, over stdio or streamable HTTP."""

from __future__ import annotations

import click

from hivekeep.cli import agent_option, db_option, open_agent


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
def mcp(agent_key: str, db: str, port: int | None) -> None:
    """Serve the agent's memory tools and profile over MCP (stdio by default).

    The seven memory tools act as the agent; its profile is the resource
    hivekeep://agents/NAME/profile and is in the server's instructions. Example:

    \b
        hivekeep mcp --agent assistant --db ~/hivekeep.db
        hivekeep mcp --agent assistant --http 8765
    """
    # The SDK is imported here, not at the top, so `hivekeep --help` does not load it.
    from hivekeep.mcp_server import HTTP_HOST, HTTP_PATH, serve_http, serve_stdio

    with open_agent(db, agent_key) as agent:
        if port is None:
            serve_stdio(agent)
            return
        click.echo(
            f"Serving the memory of {agent.name} over MCP at "
            f"http://{HTTP_HOST}:{port}{HTTP_PATH} (Ctrl-C to stop).",
            err=True,
        )
        serve_http(agent, port)
