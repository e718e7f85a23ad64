"""``hivekeep export`` and ``hivekeep import``: JSONL backups, and moves between hives/backends."""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

import click

from hivekeep import ExportReport, ImportReport
from hivekeep.cli import ProgressBar, db_option, open_hive


@click.command()
@click.option("--agent", "agent_key", metavar="NAME", help="Export only this agent (name or id).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Where to write: a file (replaced whole, atomically), a device, a FIFO, or - for "
    "standard output (the default).",
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
    shared ones included, other agents' not). Without -o (or with -o -) the lines go to standard
    output and the summary to standard error. A regular file is written whole or not at all:
    the export goes to a private temporary file, renamed over FILE at the end (a new file is
    readable by its owner only, 0600). A symlink stays a symlink: it is opened as given, the
    kernel following it, and its target gets the export once it is whole. Anything else that
    -o names (/dev/null, /dev/stdout, a FIFO, a terminal) is written through, never replaced.
    --history adds every kept version (who, when, operation) and the trash. Example:

    \b
        hivekeep export -o backup.jsonl
        hivekeep export --history -o full-backup.jsonl
        hivekeep export --agent assistant > assistant.jsonl
    """
    with open_hive(db) as hive:

        def write(file: TextIO) -> ExportReport:
            return hive.export(file, agent=agent_key, history=history)

        if output is None or str(output) == "-":
            report = write(sys.stdout)
            sys.stdout.flush()
            click.echo(f"Exported {_exported(report)}.", err=True)
            return
        replaced = output.is_file() and not _names_descriptor(output)
        try:
            report = write_to(output, write)
        except OSError as exc:
            raise click.ClickException(f"Cannot write {output}: {exc.strerror or exc}.") from exc
    note = " (it replaced the file that was there)" if replaced else ""
    click.echo(f"Exported {_exported(report)} to {output}{note}.", err=_names_descriptor(output))


_DESCRIPTOR = re.compile(r"/dev/std(in|out|err)|/dev/fd/\d+|/proc/[^/]+/fd/\d+")
_MAX_LINKS = 40  # the kernel's own limit on a chain of symlinks


def _names_descriptor(path: Path) -> bool:
    """Whether ``path`` (or a symlink on its way) is a name for an open file descriptor, such as
    /dev/stdout: writing there means writing to that descriptor, whatever file it is open on."""
    hop = Path(os.path.abspath(path))
    for _ in range(_MAX_LINKS):
        if _DESCRIPTOR.fullmatch(str(hop)):
            return True
        if not hop.is_symlink():
            return False
        hop = Path(os.path.abspath(hop.parent / os.readlink(hop)))
    return False


def write_to(output: Path, write: Callable[[TextIO], ExportReport]) -> ExportReport:
    """Write an export to ``output`` without changing what ``output`` is.

    A regular file, or a new path, is replaced atomically: ``write`` fills a new private file
    (0600, a random name next to it, created exclusively: nothing planted there is followed) and
    a rename puts it in place, keeping an old file's permissions. A symlink is opened as the
    path given, so the kernel follows it with its own protections (``protected_symlinks`` in a
    shared sticky folder); hivekeep never resolves one itself. Its target gets the export once
    it is whole (it is made first in an unnamed temporary file). A device, a FIFO or a
    descriptor's name is opened and written through (appending, as a shell's ``>>`` would, so
    ``-o /dev/stdout`` keeps what the caller's redirection holds).
    """
    try:
        mode = os.stat(output).st_mode
    except FileNotFoundError:
        mode = None  # a new file (or a dangling symlink: the file it names is created)
    if mode is not None and stat.S_ISDIR(mode):
        raise click.BadParameter(f"{output} is a directory.", param_hint="'-o'")
    if _names_descriptor(output) or (mode is not None and not stat.S_ISREG(mode)):
        with open(output, "a", encoding="utf-8", newline="\n") as file:
            return write(file)
    if output.is_symlink():
        with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as staged:
            report = write(staged)
            staged.seek(0)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            with open(os.open(output, flags, 0o600), "w", encoding="utf-8", newline="\n") as file:
                shutil.copyfileobj(staged, file)
        return report
    descriptor, partial = tempfile.mkstemp(
        prefix=f".{output.name}.", suffix=".partial", dir=output.parent
    )
    try:
        with open(descriptor, "w", encoding="utf-8", newline="\n") as file:
            report = write(file)
        if mode is not None:
            shutil.copymode(output, partial)
        os.replace(partial, output)
    finally:
        Path(partial).unlink(missing_ok=True)
    return report


@click.command(name="import")
@click.argument(
    "file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path)
)
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
    """Merge an export file (from `hivekeep export`; - reads standard input) into the hive.

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
        hivekeep --db a.db export | hivekeep --db b.db import -
    """
    with open_hive(db, create=True) as hive, ExitStack() as stack:
        if str(file) == "-":  # standard input, kept in a file: the import reads it twice
            file = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "stdin.jsonl"
            with file.open("wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy)
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
        f"Memories: {r.memories_imported} imported, {r.memories_duplicate} duplicates skipped"
        + (f" ({r.memories_reworded} reworded a memory)" if r.memories_reworded else "")
        + f"; {vectors}.",
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
