"""``hivekeep profile show|edit|regenerate``: read and replace an agent's profile document."""

from __future__ import annotations

from typing import TextIO

import click

from hivekeep import ConflictError
from hivekeep.cli import (
    agent_option,
    db_option,
    echo,
    echo_json,
    json_option,
    open_agent,
    open_hive,
)


@click.group()
def profile() -> None:
    """An agent's profile: the document always in its system prompt.

    Example:

    \b
        hivekeep profile show --agent assistant
        hivekeep profile edit --agent assistant
        hivekeep profile regenerate --agent assistant
    """


@profile.command()
@agent_option
@db_option
@json_option
def show(agent_key: str, db: str, as_json: bool) -> None:
    """Print the agent's profile (markdown).

    Example:

    \b
        hivekeep profile show --agent assistant > profile.md
        hivekeep profile show --agent assistant --json
    """
    with open_agent(db, agent_key) as agent:
        current = agent.profile()
        budget = agent.profile_budget
    if as_json:
        echo_json(
            {
                "profile": current.text,
                "tokens": current.tokens,
                "budget": budget,
                "revision": current.revision,
            }
        )
    elif current.text:
        echo(current.text, nl=not current.text.endswith("\n"))
    else:
        click.echo(f"The profile of {agent.name} is empty.", err=True)


@profile.command()
@agent_option
@click.option(
    "--file",
    "source",
    metavar="PATH",
    type=click.File("r", encoding="utf-8"),
    help="Replace the document with this file's text ('-' reads stdin) instead of opening $EDITOR.",
)
@db_option
def edit(agent_key: str, source: TextIO | None, db: str) -> None:
    """Edit the agent's whole profile in $EDITOR, or replace it from a file.

    The token budget (MEMORY_PROFILE_MAX_TOKENS) applies; if the profile changed while you were
    editing, nothing is overwritten and the command fails. Example:

    \b
        hivekeep profile edit --agent assistant
        hivekeep profile edit --agent assistant --file profile.md
        hivekeep profile show --agent assistant | sed 's/tea/coffee/' \\
            | hivekeep profile edit --agent assistant --file -
    """
    with open_agent(db, agent_key) as agent:
        current = agent.profile()
        text = source.read() if source else click.edit(current.text, extension=".md")
        if text is None or text.rstrip() == current.text.rstrip():
            click.echo("No changes.")
            return
        try:
            saved = agent.set_profile(text, expected_revision=current.revision)
        except ConflictError as exc:
            if source is not None:
                raise
            raise click.ClickException(f"{exc} Your edit, not saved:\n\n{text}") from exc
        budget = agent.profile_budget
    click.echo(
        f"Saved the profile of {agent.name} (revision {saved.revision}, "
        f"{saved.tokens}/{budget} tokens)."
    )


@profile.command()
@agent_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
def regenerate(agent_key: str, yes: bool, db: str) -> None:
    """Rewrite the agent's profile from its archive of memories, with the configured LLM.

    The "Pinned" section is kept as it is; the archive is not changed. On failure (no usable answer
    from the model, or a compaction of this agent running) the profile stays as it was and the
    command exits with status 1. Example:

    \b
        HIVEKEEP_LLM=openai:gpt-4o-mini hivekeep profile regenerate --agent assistant
        hivekeep profile regenerate --agent assistant --yes
    """
    with open_hive(db) as hive:
        agent = hive.get_agent(agent_key)
        # the model regenerate will use: without one, say what to set before asking anything
        agent.upkeep_model("maintenance", what="regenerating a profile")
        if not yes:
            click.confirm(
                f"Regenerate {agent.name}'s profile from its archive? Pinned is kept.", abort=True
            )
        outcome = agent.regenerate_profile()
        current = agent.profile()
    if not outcome.success:
        raise click.ClickException(
            f"Could not regenerate the profile of {agent.name}: {outcome.error}"
        )
    notes = "".join(f"\n  note: {note}" for note in outcome.notes)
    if not outcome.updated:
        click.echo(f"Regenerated the profile of {agent.name}: unchanged.{notes}")
        return
    click.echo(
        f"Regenerated the profile of {agent.name} from {outcome.memories_read} memories "
        f"(revision {current.revision}, {current.tokens} tokens).{notes}\n"
    )
    echo(current.text, nl=not current.text.endswith("\n"))
