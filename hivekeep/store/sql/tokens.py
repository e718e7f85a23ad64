"""Scoped API tokens, written once for both SQL stores (a mixin, as ``agents.py``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hivekeep.core.text import now_timestamp
from hivekeep.errors import ConflictError, HiveBusy
from hivekeep.store.sql.dialect import SqlRows
from hivekeep.store.tokens import NewToken, StoredToken, TokenRecord

_COLUMNS = "id, label, agent_ids, read_only, created_at, last_used_at"


def _record(row: Any) -> TokenRecord:
    ids = None if row[2] is None else tuple(int(i) for i in json.loads(row[2]))
    return TokenRecord(int(row[0]), str(row[1]), ids, bool(row[3]), str(row[4]), row[5])


class TokenRows(SqlRows):
    """``TokenStore``; mixed into both SQL stores."""

    def create_token(self, token: NewToken) -> TokenRecord:
        now = now_timestamp()
        ids = None if token.agent_ids is None else json.dumps(list(token.agent_ids))
        try:
            with self._atomic() as s:
                row = s.one(
                    "INSERT INTO access_tokens(label, key_id, salt, secret_hash, agent_ids, "
                    "read_only, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        token.label,
                        token.key_id,
                        token.salt,
                        token.secret_hash,
                        ids,
                        self._dialect.flag(token.read_only),
                        now,
                    ),
                )
        except self._dialect.UNIQUE_VIOLATION as exc:
            raise ConflictError(
                f"A token labelled {token.label!r} already exists; revoke it first or choose "
                "another label."
            ) from exc
        assert row is not None
        return TokenRecord(int(row[0]), token.label, token.agent_ids, token.read_only, now, None)

    def token_by_key(self, key_id: str) -> StoredToken | None:
        with self._reading() as s:
            row = s.one(
                f"SELECT {_COLUMNS}, key_id, salt, secret_hash FROM access_tokens WHERE key_id = ?",
                (key_id,),
            )
        if row is None:
            return None
        return StoredToken(_record(row), str(row[6]), str(row[7]), str(row[8]))

    def list_tokens(self) -> list[TokenRecord]:
        with self._reading() as s:
            rows = s.rows(f"SELECT {_COLUMNS} FROM access_tokens ORDER BY id")
        return [_record(row) for row in rows]

    def delete_token(self, label: str) -> bool:
        with self._atomic() as s:
            row = s.one("DELETE FROM access_tokens WHERE label = ? RETURNING id", (label,))
        return row is not None

    def touch_token(self, token_id: int, used_at: str, stale_before: str) -> None:
        # bookkeeping on a request's path: skipped, never waited for, while another writes
        with contextlib.suppress(HiveBusy), self._atomic_if_free() as s:
            s.execute(
                "UPDATE access_tokens SET last_used_at = ? WHERE id = ? "
                "AND (last_used_at IS NULL OR last_used_at < ?)",
                (used_at, token_id, stale_before),
            )
