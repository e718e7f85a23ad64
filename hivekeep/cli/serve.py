"""``hivekeep serve``: the REST API and live events over HTTP (uvicorn), on loopback by default.

Listening beyond this machine without a token would hand every agent's memory to the network, so a
non-loopback ``--host`` needs ``HIVEKEEP_API_TOKEN``; the command refuses to start otherwise.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

import click

from hivekeep.cli import (
    db_option,
    echo,
    hive_location,
    missing_hive_file,
    open_hive,
    room_warnings,
)
from hivekeep.config import API_TOKEN, SERVE_HOST, SERVE_PORT
from hivekeep.core.access_tokens import admin_token_problem

TOKEN_ENV = API_TOKEN.env


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1); any name else is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def port_problem(host: str, port: int, option: str = "--port (or HIVEKEEP_PORT)") -> str | None:
    """Why ``host:port`` cannot be listened on (in use, or no such address), or None;
    ``option`` is what picks another port."""
    if port == 0:
        return None
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((bare, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"Port {port} on {bare} is already in use (another hivekeep serve?). Stop "
                    f"that program, or pick another port with {option}."
                )
            return f"Cannot listen on {bare}:{port}: {exc.strerror or exc}."
    return None


def _url(host: str, port: int) -> str:
    bare = host.strip("[]")
    return f"http://[{bare}]:{port}" if ":" in bare else f"http://{bare}:{port}"


@click.command()
@click.option(
    "--host",
    default=SERVE_HOST.default,
    envvar=SERVE_HOST.env,
    show_default=True,
    show_envvar=True,
    help="Address to listen on.",
)
@click.option(
    "--port",
    default=SERVE_PORT.default,
    envvar=SERVE_PORT.env,
    show_default=True,
    show_envvar=True,
    type=click.IntRange(0, 65535),
    help="TCP port.",
)
@db_option
def serve(host: str, port: int, db: str) -> None:
    """Serve the REST API (docs at /docs) and live events (/api/events) over HTTP.

    Listens on 127.0.0.1 by default. Any other address needs HIVEKEEP_API_TOKEN, which clients
    then send as `Authorization: Bearer <token>` (on loopback the token is used if set). The
    server answers only the host names 127.0.0.1, localhost, [::1] and --host, plus those in
    HIVEKEEP_ALLOWED_HOSTS (the names clients use to reach a public bind). Example:

    \b
        hivekeep serve --port 8765
        HIVEKEEP_API_TOKEN=$(openssl rand -hex 32) HIVEKEEP_ALLOWED_HOSTS=memory.example.com \\
          hivekeep serve --host 0.0.0.0
    """
    token = os.environ.get(TOKEN_ENV, "").strip() or None
    if token is None and not is_loopback(host):
        raise click.ClickException(
            f"Refusing to listen on {host} without a token: anyone who can reach it could read and "
            f"change every agent's memory. Set {TOKEN_ENV} to a long random secret (clients send "
            f"'Authorization: Bearer <token>'), or listen on 127.0.0.1."
        )
    # here, not at the top: other commands skip the web stack
    from hivekeep.server.runner import model_note, run_server

    problem = admin_token_problem(token) if token is not None else None
    if problem is None:
        problem = port_problem(host, port)  # before the "serving" line, and before any file
    if problem is not None:
        raise click.ClickException(problem)

    new = missing_hive_file(db)  # serve may start a hive: say so, with the absolute path
    with open_hive(db, create=True) as hive:
        if hive.settings.allowed_hosts and token is None:
            raise click.ClickException(
                f"HIVEKEEP_ALLOWED_HOSTS ({', '.join(hive.settings.allowed_hosts)}) lets other "
                f"names reach this server, so it needs a token: set {TOKEN_ENV} too."
            )
        url = _url(host, port)
        auth = f"bearer token from {TOKEN_ENV}" if token else "none (loopback only)"
        model, problem = model_note(hive)
        where = f"a new, empty hive at {new.resolve()}" if new else hive_location(hive.path)
        click.echo(f"hivekeep: serving {where} at {url} (docs: {url}/docs; auth: {auth}; {model})")
        if problem is not None:
            click.echo(f"hivekeep: {problem}", err=True)
        for name, warning in room_warnings(hive):
            echo(f"hivekeep: agent {name}: {warning}", err=True)
        if not is_loopback(host) and not hive.settings.allowed_hosts:
            click.echo(
                "hivekeep: only loopback names and --host are answered; list the names clients "
                "use in HIVEKEEP_ALLOWED_HOSTS (others get 421).",
                err=True,
            )
        run_server(hive, host=host.strip("[]"), port=port, token=token)
