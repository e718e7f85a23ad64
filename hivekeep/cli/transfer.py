"""``hivekeep export`` and ``hivekeep import``: JSONL backups, and moves between hives/backends."""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from hivekeep import ExportReport, ImportReport
from hivekeep.cli import ProgressBar, db_option, open_hive


@click.command()
@click.option("--agent", "agent_key", metavar="NAME", help="Export only this agent (name or id).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file to write (default: standard output).",
)
@click.option(
    "--history",
    is_flag=True,
    help="Also the kept versions of memories and profiles, and the trash (import restores them).",
)
@db_option
def export(agent_key: str | None, output: Path | None, history: bool, db: str) -> None:
    """Write the hive as JSONL: agents, profiles, memories (with vectors), conversations.

    --agent exports one agent: its profile, its conversations and the memories it wrote (its
    shared ones included, other agents' not). Without -o the lines go to standard output and the
    summary to standard error. A file is written whole or not at all. --history adds every
    kept version (who, when, operation) and the trash. Example:

    \b
        hivekeep export -o backup.jsonl
        hivekeep export --history -o full-backup.jsonl
        hivekeep export --agent assistant > assistant.jsonl
    """
    with open_hive(db) as hive:
        if output is None:
            report = hive.export(sys.stdout, agent=agent_key, history=history)
            sys.stdout.flush()
            click.echo(f"Exported {_exported(report)}.", err=True)
            return
        partial = output.with_name(output.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8", newline="\n") as file:
                report = hive.export(file, agent=agent_key, history=history)
            os.replace(partial, output)
        finally:
            partial.unlink(missing_ok=True)
    click.echo(f"Exported {_exported(report)} to {output}.")


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--replace-profiles",
    is_flag=True,
    help="Overwrite existing non-empty profiles with the file's (default: keep them).",
)
@click.option(
    "--allow-over-budget",
    is_flag=True,
    help="Import a profile over this hive's token budget whole (default: refuse the file).",
)
@db_option
def import_(file: Path, replace_profiles: bool, allow_over_budget: bool, db: str) -> None:
    """Merge an export file (from `hivekeep export`) into the hive.

    The whole file is checked first; if any line is invalid, nothing is written and each problem
    is reported with its line number. Agents are created, or merged into the agent of the same
    name; memories already known (same text or a near-identical vector) are skipped, as are
    conversations already there, so importing twice is harmless, and an import that stopped
    part-way (it writes in batches) is finished by running it again. The file's vectors are used
    when it was made with this hive's embedding model; otherwise memories are re-embedded.
    Example:

    \b
        hivekeep import backup.jsonl
        hivekeep --db new.db import backup.jsonl --replace-profiles
    """
    with open_hive(db, create=True) as hive, ExitStack() as stack:
        report = hive.import_(
            file,
            replace_profiles=replace_profiles,
            allow_over_budget=allow_over_budget,
            progress=ProgressBar(stack, "Importing"),
        )
    for line in _imported(report):
        click.echo(line)


def _count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _exported(report: ExportReport) -> str:
    return (
        f"{_count(report.agents, 'agent')}, {_count(report.memories, 'memory', 'memories')}, "
        f"{_count(report.conversations, 'conversation')} "
        f"({_count(report.messages, 'message')}, "
        f"{_count(report.summaries, 'summary', 'summaries')})"
        + (
            f", {_count(report.trashed, 'memory', 'memories')} in the trash"
            if report.trashed
            else ""
        )
    )


def _imported(report: ImportReport) -> list[str]:
    r = report
    vectors = (
        "vectors from the file reused"
        if r.vectors == "reused"
        else "re-embedded (the file was made with another embedding model)"
    )
    lines = [
        f"Agents: {r.agents_created} created, {r.agents_merged} merged.",
        f"Profiles: {r.profiles_imported} imported, {r.profiles_kept} kept"
        + (" (use --replace-profiles to overwrite them)." if r.profiles_kept else "."),
        f"Memories: {r.memories_imported} imported, {r.memories_duplicate} duplicates skipped; "
        f"{vectors}.",
        f"Conversations: {r.conversations_imported} imported, {r.conversations_skipped} already "
        f"there; {r.messages} messages, {r.summaries} summaries.",
    ]
    if r.trashed_imported or r.trashed_skipped:
        lines.append(f"Trash: {r.trashed_imported} imported, {r.trashed_skipped} already there.")
    if r.memories_embedded and r.vectors == "reused":
        lines.append(f"{r.memories_embedded} memories without a vector in the file were embedded.")
    if r.memories_pending:
        lines.append(
            f"{r.memories_pending} memories are pending (the embedder failed): found by full "
            "text until `hivekeep reembed` embeds them."
        )
    return lines
