"""``hivekeep agents``: list (the default), create and delete agents."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

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


@agents.command()
@click.argument("name")
@click.option("--model", metavar="SPEC", help="Chat model, provider:model ('default': the hive's).")
@click.option(
    "--compacting-model", metavar="SPEC", help="Model of the summaries ('default': the hive's)."
)
@click.option(
    "--extraction-model",
    metavar="SPEC",
    help="Model of maintenance, bootstrap and regenerate ('default': the hive's).",
)
@click.option(
    "--context-window",
    metavar="TOKENS",
    help="Its chat model's context window, for a model hivekeep does not know "
    "('default': HIVEKEEP_CONTEXT_WINDOW, else the known window).",
)
@click.option(
    "--set",
    "numbers",
    multiple=True,
    metavar="KEY=VALUE",
    help="A compaction number, e.g. threshold_percent=60, added to the agent's other overrides "
    "(repeatable; --reset-compaction clears them first).",
)
@click.option("--reset-compaction", is_flag=True, help="Back to the hive's compaction numbers.")
@click.option(
    "--secrets",
    type=click.Choice(["redact", "refuse", "allow", "default"]),
    help="What its writes do with a credential ('default': HIVEKEEP_SECRETS).",
)
@click.option(
    "--review",
    type=click.Choice(["off", "shared", "all"]),
    help="Which of its own writes wait for a person (`hivekeep review`).",
)
@db_option
@json_option
def configure(
    name: str,
    model: str | None,
    compacting_model: str | None,
    extraction_model: str | None,
    context_window: str | None,
    numbers: tuple[str, ...],
    reset_compaction: bool,
    secrets: str | None,
    review: str | None,
    db: str,
    as_json: bool,
) -> None:
    """Show or change the agent NAME's models, compaction numbers and credential policy (as
    agent.configure).

    With no option it shows them. A model is a provider:model spec; 'default' returns it to
    the hive's (HIVEKEEP_LLM, COMPACTING_MODEL, MEMORY_EXTRACTION_MODEL). Example:

    \b
        hivekeep agents configure assistant --compacting-model ollama:llama3.1
        hivekeep agents configure assistant --model openai:my-local-model --context-window 32768
        hivekeep agents configure assistant --set threshold_percent=60 --set keep_percent=30
        hivekeep agents configure assistant --secrets refuse
    """
    specs: dict[str, Any] = {
        key: (None if value.strip().lower() == "default" else value.strip())
        for key, value in (
            ("model", model),
            ("compacting_model", compacting_model),
            ("extraction_model", extraction_model),
        )
        if value is not None
    }
    if context_window is not None:
        specs["context_window"] = _window(context_window)
    if secrets is not None:
        specs["secrets"] = None if secrets == "default" else secrets
    if review is not None:
        specs["review"] = review
    with open_hive(db) as hive:
        agent = hive.get_agent(name)
        compaction: dict[str, Any] | None = {} if reset_compaction else None
        if numbers:  # one more override: the agent's others stay
            kept = {} if reset_compaction else agent.settings().compaction
            compaction = {**kept, **_numbers(numbers)}
        if specs or compaction is not None:
            agent.configure(compaction=compaction, **specs)
        stored = agent.settings()
        effective = asdict(agent.compaction_settings())
    if as_json:
        echo_json({**stored.to_json(), "effective": effective})
        return
    for key in (
        "model",
        "compacting_model",
        "extraction_model",
        "context_window",
        "secrets",
        "review",
    ):
        echo(f"{key}: {getattr(stored, key) or 'hive default'}")
    for key, value in effective.items():
        mark = "" if key not in stored.compaction else "  (this agent's)"
        click.echo(f"{key}: {value}{mark}")


def _window(value: str) -> int | None:
    """``--context-window``: a positive number of tokens, or 'default' (None)."""
    if value.strip().lower() == "default":
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise click.BadParameter(
            f"{value!r} is not a number of tokens (e.g. 32768) or 'default'.",
            param_hint="--context-window",
        )
    return int(value)


def _numbers(pairs: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or number != number:
            raise click.BadParameter(f"{pair!r} is not KEY=NUMBER.", param_hint="--set")
        out[key.strip()] = int(number) if number.is_integer() else number
    return out
