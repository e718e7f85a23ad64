"""Consistent copies of a live hive file with SQLite's online backup API.

The copy is taken through its own read connection, page by page; in WAL mode writers carry on
meanwhile, and if one commits mid-copy SQLite restarts the copy from a fresh snapshot, so the result
is always one committed state — never a torn file, which a plain ``cp`` of a busy file can give.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import apsw

from hivekeep.errors import StoreError, ValidationError

PAGES_PER_STEP = 1024

Progress = Callable[[int, int], None]  # (pages copied, total pages)


def backup(source: str | Path, target: str | Path, progress: Progress | None = None) -> Path:
    """Copy the hive at ``source`` to ``target`` (a new file) while others may be using it."""
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise ValidationError(f"No hive file at {str(source)!r} to back up.")
    if target.exists():
        raise ValidationError(
            f"{str(target)!r} already exists; choose a new file name (a backup never overwrites)."
        )
    if not target.parent.is_dir():  # else SQLite's "unable to open" reads as the hive's fault
        raise ValidationError(
            f"The folder {target.parent} does not exist: create it first "
            f"(mkdir -p {target.parent}), or choose a file in an existing folder."
        )
    if target.resolve().parent == source.resolve().parent and target.name == source.name:
        raise ValidationError("The backup cannot be the hive file itself.")
    partial = target.with_name(target.name + ".partial")
    try:
        _copy(source, partial, progress)
    except apsw.Error as exc:
        partial.unlink(missing_ok=True)
        raise StoreError(f"Backup of {str(source)!r} failed: {exc}.") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target


def _copy(source: Path, partial: Path, progress: Progress | None) -> None:
    # Connections are closed explicitly: apsw's ``with connection`` means a transaction.
    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
    dest = apsw.Connection(str(partial))
    try:
        src.set_busy_timeout(10_000)
        with dest.backup("main", src, "main") as job:
            while not job.done:
                job.step(PAGES_PER_STEP)
                if progress:
                    progress(job.pagecount - job.remaining, job.pagecount)
        dest.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal
        if dest.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            raise StoreError("The backup copy failed its integrity check; nothing was kept.")
    finally:
        dest.close()
        src.close()
