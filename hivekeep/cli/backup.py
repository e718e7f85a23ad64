"""``hivekeep backup``: a consistent copy of the hive file, safe while a server is using it."""

from __future__ import annotations

from pathlib import Path

import click

from hivekeep import Hive
from hivekeep.cli import db_option


@click.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@db_option
def backup(target: Path, db: str) -> None:
    """Copy the hive to TARGET (a new file) with SQLite's online backup API.

    Safe while `hivekeep serve` or other processes write: the copy is one committed state. To
    restore, stop every process using the hive and put the copy in its place (see
    docs/storage.md). For PostgreSQL hives, use pg_dump. Example:

    \b
        hivekeep backup backups/hive-$(date +%F).db
    """
    copied = Hive.backup(db, target)
    size = copied.stat().st_size
    click.echo(f"Backed up {db} to {copied} ({size / 1e6:.1f} MB).")
