"""Writes held for review, written once for both SQL stores (a mixin, as ``tokens.py``)."""

from __future__ import annotations

import json
from typing import Any

from hivekeep.core.text import now_timestamp
from hivekeep.errors import NotFound
from hivekeep.store.pending import PendingWrite
from hivekeep.store.sql.dialect import SqlRows

_COLUMNS = "id, agent_id, operation, memory_id, fields, source, created_at"


def _record(row: Any) -> PendingWrite:
    return PendingWrite(
        int(row[0]),
        int(row[1]),
        str(row[2]),
        None if row[3] is None else int(row[3]),
        json.loads(row[4]),
        str(row[5]),
        str(row[6]),
    )


class PendingRows(SqlRows):
    """``PendingStore``; mixed into both SQL stores."""

    def hold_write(
        self,
        agent_id: int,
        operation: str,
        memory_id: int | None,
        fields: dict[str, Any],
        source: str,
    ) -> PendingWrite:
        now = now_timestamp()
        data = json.dumps(fields, ensure_ascii=False)
        with self._atomic() as s:
            row = s.one(
                "INSERT INTO pending_writes(agent_id, operation, memory_id, fields, source, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (agent_id, operation, memory_id, data, source, now),
            )
        assert row is not None
        return PendingWrite(int(row[0]), agent_id, operation, memory_id, fields, source, now)

    def pending_writes(self, agent_id: int | None = None) -> list[PendingWrite]:
        where = "" if agent_id is None else " WHERE agent_id = ?"
        with self._reading() as s:
            rows = s.rows(
                f"SELECT {_COLUMNS} FROM pending_writes{where} ORDER BY id",
                () if agent_id is None else (agent_id,),
            )
        return [_record(row) for row in rows]

    def get_pending(self, pending_id: int) -> PendingWrite:
        with self._reading() as s:
            row = s.one(f"SELECT {_COLUMNS} FROM pending_writes WHERE id = ?", (pending_id,))
        if row is None:
            raise NotFound(
                f"No write with id {pending_id} is waiting for review; list them with "
                "`hivekeep review`."
            )
        return _record(row)

    def drop_pending(self, pending_id: int) -> bool:
        with self._atomic() as s:
            row = s.one("DELETE FROM pending_writes WHERE id = ? RETURNING id", (pending_id,))
        return row is not None
