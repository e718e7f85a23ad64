"""Work counts for SQLite reads: what a call made the engine do, the same on a busy machine.

Timings on a shared machine move with the load; these counts do not, so tests guard with them
(tests/integration/test_recall_work.py) and bench/scale.py reports them beside its timings.

- ``ranked``: rows FTS5 ranked. bm25 reads each match's column sizes, one lookup in the
  ``*_docsize`` table per row it scores, so the lookups are the rows ranked.
- ``steps``: SQLite's virtual-machine steps of the statements hivekeep itself ran (not those
  FTS5 runs inside): a scan or a count costs about eight steps a row it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import apsw


@dataclass
class Work:
    ranked: int = 0
    steps: int = 0
    statements: int = 0


@contextmanager
def counted(conn: apsw.Connection) -> Iterator[Work]:
    """Count the work of everything run on ``conn`` inside the block (one tracer at a time)."""
    work = Work()
    inner: dict[int, bool] = {}  # statement id -> run from inside another (FTS5's own)

    def event(found: dict[str, Any]) -> None:
        if found["code"] == apsw.SQLITE_TRACE_STMT:
            inner[found["id"]] = found["trigger"]
        elif found["sql"].endswith("_docsize' WHERE id=?"):
            work.ranked += 1
        elif not inner.get(found["id"], True):
            work.steps += found["stmt_status"]["SQLITE_STMTSTATUS_VM_STEP"]
            work.statements += 1

    conn.trace_v2(apsw.SQLITE_TRACE_STMT | apsw.SQLITE_TRACE_PROFILE, event)
    try:
        yield work
    finally:
        conn.trace_v2(0, None)


def per_call(conn: apsw.Connection, call: Callable[[int], object], count: int) -> Work:
    """The mean work of ``call(i)`` for i in range(count), rounded down."""
    with counted(conn) as work:
        for i in range(count):
            call(i)
    return Work(work.ranked // count, work.steps // count, work.statements // count)
