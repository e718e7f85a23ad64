"""``hivekeep secrets scan``: credentials an older hive already holds, found and fixed.

New writes are checked as they come (HIVEKEEP_SECRETS); this finds what was written before the
check, or under ``allow``, and redacts it through the write path.
"""

from __future__ import annotations

import dataclasses

import click

from hivekeep.cli import db_option, echo, echo_json, json_option, open_hive


@click.group()
def secrets() -> None:
    """Credentials the hive already holds (API keys, tokens, private keys, card numbers).
    Example:

    \b
        hivekeep secrets scan
        hivekeep secrets scan --agent assistant --redact --purge-versions
    """


@secrets.command()
@click.option(
    "--agent", "agents", multiple=True, metavar="NAME", help="Only this agent (repeatable)."
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace each credential in current memories and profiles by a marker (a new version: "
    "the old text stays in history until purged).",
)
@click.option(
    "--purge-versions",
    is_flag=True,
    help="Also delete the older versions and trashed memories that hold a credential.",
)
@db_option
@json_option
def scan(
    agents: tuple[str, ...], redact: bool, purge_versions: bool, db: str, as_json: bool
) -> None:
    """List every memory, profile and kept version that holds a credential; with --redact and
    --purge-versions, fix them. Example:

    \b
        hivekeep secrets scan --redact --purge-versions
    """
    with open_hive(db) as hive:
        found = hive.secrets.scan(agents or None, redact=redact, purge=purge_versions)
    if as_json:
        echo_json([dataclasses.asdict(f) for f in found])
        return
    if not found:
        echo("No credential found.")
        return
    for f in found:
        where = f"{f.what} {f.id}" + (f" version {f.version}" if f.version is not None else "")
        state = " (fixed)" if f.fixed else ""
        echo(f"{f.agent}: {where}: {', '.join(f.kinds)}{state}")
    left = [f for f in found if not f.fixed]
    if left:
        hint = "--redact" if any(f.what in ("memory", "profile") for f in left) else ""
        hint += (
            " --purge-versions"
            if any("version" in f.what or f.what == "trash" for f in left)
            else ""
        )
        echo(f"{len(left)} left as they are; fix them with: hivekeep secrets scan{hint}")
