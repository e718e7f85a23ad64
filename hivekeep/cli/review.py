"""``hivekeep review``: the writes agents made that wait for a person (the review inbox).

An agent configured with ``review`` (``hivekeep agents configure NAME --review shared|all``) has
its own writes held here; nothing held is recalled, listed or exported until approved.
"""

from __future__ import annotations

import dataclasses

import click

from hivekeep import MemoryRecord
from hivekeep.cli import db_option, echo, echo_json, json_option, open_hive


@click.group(invoke_without_command=True)
@click.option("--agent", metavar="NAME", help="Only this agent's held writes.")
@db_option
@json_option
@click.pass_context
def review(ctx: click.Context, agent: str | None, db: str, as_json: bool) -> None:
    """List the held writes (oldest first); approve or reject them one by one. Example:

    \b
        hivekeep review
        hivekeep review approve 12
        hivekeep review approve 13 --content "Ann prefers green tea"
        hivekeep review reject 14
    """
    if ctx.invoked_subcommand is not None:
        return
    with open_hive(db) as hive:
        held = hive.pending(agent)
        names = {a.id: a.name for a in hive.agents()}
    if as_json:
        echo_json([{**dataclasses.asdict(p), "agent": names.get(p.agent_id)} for p in held])
        return
    if not held:
        echo("Nothing waits for review.")
        return
    for p in held:
        what = p.fields.get("content") or ", ".join(f"{k}={v}" for k, v in p.fields.items())
        target = f" memory {p.memory_id}" if p.memory_id is not None else ""
        echo(f"[{p.id}] {names.get(p.agent_id)} ({p.source}) {p.operation}{target}: {what}")


@review.command()
@click.argument("pending_id", type=int)
@click.option("--content", help="The text to write instead of the agent's (an edit).")
@db_option
def approve(pending_id: int, content: str | None, db: str) -> None:
    """Write held write PENDING_ID through the write path (dedup, history, credentials).

    Example:

    \b
        hivekeep review approve 13 --content "Ann prefers green tea"
    """
    with open_hive(db) as hive:
        outcome = hive.approve(pending_id, content)
    memory = outcome if isinstance(outcome, MemoryRecord) else outcome.memory
    echo(f"Approved: memory {memory.id}: {memory.content}")


@review.command()
@click.argument("pending_id", type=int)
@db_option
def reject(pending_id: int, db: str) -> None:
    """Drop held write PENDING_ID; nothing of it is kept. Example:

    \b
        hivekeep review reject 14
    """
    with open_hive(db) as hive:
        hive.reject(pending_id)
    echo(f"Rejected: {pending_id}.")
