"""``hivekeep memorize`` and ``hivekeep recall``: the memory tools, called as an LLM would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from hivekeep import Actor, Agent, Category, Scope
from hivekeep.cli import agent_option, db_option, echo, echo_json, json_option, open_agent
from hivekeep.tools import Problem, argument_problems, memorize_result

CATEGORIES = ", ".join(category.value for category in Category)
SCOPES = " or ".join(scope.value for scope in Scope)


def checked(
    tool: str, arguments: dict[str, Any], arguments_named: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The options that were given, checked by ``tool``'s own rules (the CLI validates nothing
    itself); a problem is a CLI error naming the option (``--importance``), or the argument
    ``arguments_named`` maps the parameter to (``{"content": "CONTENT"}``)."""
    given = {k: v for k, v in arguments.items() if v is not None}
    problems = argument_problems(tool, given)
    if problems:
        raise click.ClickException(" ".join(_worded(p, arguments_named or {}) for p in problems))
    return given


def _worded(problem: Problem, arguments_named: Mapping[str, str]) -> str:
    """A problem in click's own words for its options and arguments."""
    argument = arguments_named.get(problem.parameter)
    name = argument or "--" + problem.parameter.replace("_", "-")
    if problem.kind == "missing":
        return f"Missing {'argument' if argument else 'option'} '{name}'."
    return f"Invalid value for '{name}': {problem.message}."


def call_tool(
    agent: Agent,
    tool: str,
    arguments: dict[str, Any],
    arguments_named: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``tool`` with the options that were given (``checked``); an ``error`` result is a CLI
    error with the tool's message."""
    result = agent.call_tool(tool, checked(tool, arguments, arguments_named))
    if "error" in result:
        raise click.ClickException(str(result["error"]))
    return result


@click.command()
@click.argument("content")
@agent_option
@click.option("--category", metavar="CATEGORY", help=f"Required: {CATEGORIES}.")
@click.option("--subject", help="Who or what the memory is about.")
@click.option("--importance", type=int, help="1 (trivial) to 10.")
@click.option("--scope", metavar="SCOPE", help=f"{SCOPES} (default: private).")
@click.option("--source-context", help="Where or how this was learned.")
@db_option
@json_option
def memorize(
    content: str,
    agent_key: str,
    category: str | None,
    subject: str | None,
    importance: int | None,
    scope: str | None,
    source_context: str | None,
    db: str,
    as_json: bool,
) -> None:
    """Save CONTENT to the agent's archive (the `memorize` tool).

    A memory the agent can already see is not saved twice; history records the write as a
    person's. Example:

    \b
        hivekeep memorize --agent assistant "The user moved to Lisbon in May 2024." \\
            --category fact --subject user
    """
    arguments = {
        "content": content,
        "category": category,
        "subject": subject,
        "importance": importance,
        "scope": scope,
        "source_context": source_context,
    }
    given = checked("memorize", arguments, {"content": "CONTENT"})
    with open_agent(db, agent_key) as agent:  # a person's write: history says "person"
        result = memorize_result(agent.memorize(**given, by=Actor.PERSON))
    if as_json:
        echo_json(result)
    elif result.get("reworded"):
        click.echo(
            f"Reworded memory {result['id']}: the same fact, now in your words (reworded; the "
            f"previous text is kept in `hivekeep history --agent {agent_key} {result['id']}`)."
        )
    elif result["duplicate"]:
        click.echo(f"Already known as memory {result['id']} (duplicate).")
        if "merged_as_version" in result:
            echo(
                f"  Your text is kept as version {result['merged_as_version']} of its history "
                f"(`hivekeep restore --agent {agent_key} {result['id']} --version "
                f"{result['merged_as_version']}` makes it current)."
            )
    else:
        click.echo(f"Saved memory {result['id']}.")
        for similar in result.get("similar", []):
            echo(f"  similar: #{similar['id']} {similar['content']} ({similar['created_at']})")


@click.command()
@click.argument("query")
@agent_option
@click.option("--limit", type=int, help="How many results, 1-50 (default: MEMORY_MAX_RELEVANT).")
@click.option("--subject", help="Only memories about this subject.")
@click.option("--category", metavar="CATEGORY", help=f"Only this category: {CATEGORIES}.")
@click.option("--since", metavar="DATE", help="Only memories created on or after this ISO date.")
@db_option
@json_option
def recall(
    query: str,
    agent_key: str,
    limit: int | None,
    subject: str | None,
    category: str | None,
    since: str | None,
    db: str,
    as_json: bool,
) -> None:
    """Search the agent's own and shared memories for QUERY (the `recall` tool).

    Example:

    \b
        hivekeep recall --agent assistant "where does the user live?" --limit 5
    """
    arguments = {
        "query": query,
        "limit": limit,
        "subject": subject,
        "category": category,
        "since": since,
    }
    with open_agent(db, agent_key) as agent:
        result = call_tool(agent, "recall", arguments, {"query": "QUERY"})
    if as_json:
        echo_json(result)
        return
    if "warning" in result:
        click.echo(f"Warning: {result['warning']}", err=True)
    if not result["memories"]:
        click.echo("No memories found.")
    for rank, memory in enumerate(result["memories"], start=1):
        echo(heading(memory, rank))
        echo(f"   {memory['content']}")
        if newer := memory.get("newer"):
            echo(f"  ↳ newer: #{newer['id']} ({newer['created_at'][:10]}) {newer['content']}")


def heading(memory: dict[str, Any], rank: int | None = None) -> str:
    """A memory's line above its text: id, category, subject, age, how it matched (a search
    hit: strong or weak, and which search found it), who shares it."""
    parts = [f"#{memory['id']}" if rank is None else f"{rank}. #{memory['id']}"]
    parts.append(memory["category"])
    if memory.get("subject"):
        parts.append(f"subject: {memory['subject']}")
    parts.append(memory["age"])
    if "why" in memory:  # the fused score only ranks: the match is said in words
        parts.append(memory["why"])
    if memory.get("shared_by"):
        deleted = " (deleted)" if memory.get("author_deleted") else ""
        parts.append(f"shared by {memory['shared_by']}{deleted}")
    elif memory["scope"] == "shared":
        parts.append("shared")
    return " · ".join(parts)
