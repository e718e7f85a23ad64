"""The conversation half of ``PostgresStore``: messages, summaries, agent settings and meta.

A mixin so that ``store.py`` stays about memories; it relies on the host class for
``_transaction()`` (one pooled connection inside one transaction). Leases are in ``leases.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from hivekeep.core.text import now_timestamp
from hivekeep.errors import ConflictError, NotFound
from hivekeep.store.conversations import (
    AgentSettings,
    ConversationRecord,
    MaintenanceStatus,
    MessageRecord,
    NewMessage,
    NewSummary,
    Restored,
    RestoredConversation,
    SummaryRecord,
    ToolCallRecord,
)

Connection = psycopg.Connection[TupleRow]

_MESSAGE_COLUMNS = (
    "id, conversation_id, role, content, tokens, tool_calls, tool_call_id, tool_name, speaker, "
    "summary_id, is_compaction_record, record, created_at"
)
_SUMMARY_COLUMNS = (
    "id, conversation_id, agent_id, text, tokens, first_at, last_at, message_count, "
    "first_message_id, last_message_id, depth, source_ids, in_context, maintenance_status, "
    "maintenance_attempts, maintenance_error, created_at"
)
_CONVERSATION_COLUMNS = "id, agent_id, title, created_at, updated_at"


def _message(row: Sequence[Any]) -> MessageRecord:
    calls = tuple(ToolCallRecord(**call) for call in row[5]) if row[5] else ()
    return MessageRecord(
        id=row[0],
        conversation_id=row[1],
        role=row[2],
        content=row[3],
        tokens=row[4],
        tool_calls=calls,
        tool_call_id=row[6],
        tool_name=row[7],
        speaker=row[8],
        summary_id=row[9],
        is_compaction_record=bool(row[10]),
        record=dict(row[11]) if row[11] is not None else None,
        created_at=row[12],
    )


def _summary(row: Sequence[Any]) -> SummaryRecord:
    return SummaryRecord(
        id=row[0],
        conversation_id=row[1],
        agent_id=row[2],
        text=row[3],
        tokens=row[4],
        first_at=row[5],
        last_at=row[6],
        message_count=row[7],
        first_message_id=row[8],
        last_message_id=row[9],
        depth=row[10],
        source_ids=tuple(row[11]),
        in_context=bool(row[12]),
        maintenance_status=row[13],
        maintenance_attempts=row[14],
        maintenance_error=row[15],
        created_at=row[16],
    )


class ConversationRows:
    """``ConversationStore`` on PostgreSQL (leases aside); mixed into ``PostgresStore``."""

    def _transaction(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError  # provided by PostgresStore

    def _connection(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError  # provided by PostgresStore

    def _read(
        self, query: Any, params: Any = None, *, prepare: bool | None = None
    ) -> list[TupleRow]:
        raise NotImplementedError  # provided by PostgresStore

    # per-agent settings -----------------------------------------------------------------------
    def get_agent_settings(self, agent_id: int) -> AgentSettings:
        with self._transaction() as conn:
            _agent_exists(conn, agent_id)
            row = conn.execute(
                "SELECT settings FROM agent_settings WHERE agent_id = %s", (agent_id,)
            ).fetchone()
        return AgentSettings.from_json(dict(row[0]) if row else {})

    def save_agent_settings(self, agent_id: int, settings: AgentSettings) -> None:
        payload = settings.to_json()
        with self._transaction() as conn:
            _agent_exists(conn, agent_id)
            conn.execute(
                "INSERT INTO agent_settings(agent_id, settings) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE SET settings = excluded.settings",
                (agent_id, Jsonb(payload)),
            )

    # conversations ----------------------------------------------------------------------------
    def create_conversation(self, agent_id: int, title: str) -> ConversationRecord:
        now = now_timestamp()
        with self._transaction() as conn:
            _agent_exists(conn, agent_id)
            row = conn.execute(
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (agent_id, title, now, now),
            ).fetchone()
        assert row is not None
        return ConversationRecord(int(row[0]), agent_id, title, now, now)

    def get_conversation(self, conversation_id: int) -> ConversationRecord:
        with self._connection() as conn:
            return _conversation(conn, conversation_id)

    def list_conversations(self, agent_id: int) -> list[ConversationRecord]:
        rows = self._read(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE agent_id = %s "
            "ORDER BY updated_at DESC, id DESC",
            (agent_id,),
        )
        return [ConversationRecord(*row) for row in rows]

    def restore_conversation(self, agent_id: int, conversation: RestoredConversation) -> Restored:
        conversation.check_positions()
        c = conversation
        with self._transaction() as conn:
            _agent_exists(conn, agent_id)
            row = conn.execute(
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (agent_id, c.title, c.created_at, c.updated_at),
            ).fetchone()
            assert row is not None
            record = ConversationRecord(int(row[0]), agent_id, c.title, c.created_at, c.updated_at)
            message_ids: list[int] = []
            for restored in c.messages:
                m = restored.message
                row = conn.execute(
                    "INSERT INTO messages(conversation_id, role, content, tool_calls, "
                    "tool_call_id, tool_name, speaker, tokens, is_compaction_record, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (
                        record.id,
                        m.role,
                        m.content,
                        _tool_calls(m),
                        m.tool_call_id,
                        m.tool_name,
                        m.speaker,
                        m.tokens,
                        m.is_compaction_record,
                        m.created_at or c.created_at,
                    ),
                ).fetchone()
                assert row is not None
                message_ids.append(int(row[0]))
            summary_ids: list[int] = []

            def message_id(position: int | None) -> int | None:
                return None if position is None else message_ids[position]

            for s in c.summaries:
                row = conn.execute(
                    "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, "
                    "last_at, message_count, first_message_id, last_message_id, depth, "
                    "source_ids, in_context, maintenance_status, maintenance_attempts, "
                    "maintenance_error, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (
                        record.id,
                        agent_id,
                        s.text,
                        s.tokens,
                        s.first_at,
                        s.last_at,
                        s.message_count,
                        message_id(s.first_message),
                        message_id(s.last_message),
                        s.depth,
                        [summary_ids[i] for i in s.sources],
                        s.in_context,
                        s.maintenance_status,
                        s.maintenance_attempts,
                        s.maintenance_error,
                        s.created_at,
                    ),
                ).fetchone()
                assert row is not None
                summary_ids.append(int(row[0]))
            # folds and records point at summaries, which point at messages: set them last
            for new_id, restored in zip(message_ids, c.messages, strict=True):
                details = restored.message.record
                if details is not None:
                    details = dict(details)
                    for key, positions in restored.record_summaries.items():
                        details[key] = [summary_ids[i] for i in positions]
                summary = None if restored.summary is None else summary_ids[restored.summary]
                if summary is not None or details is not None:
                    conn.execute(
                        "UPDATE messages SET summary_id = %s, record = %s WHERE id = %s",
                        (summary, None if details is None else Jsonb(details), new_id),
                    )
        return Restored(record, tuple(message_ids), tuple(summary_ids))

    # messages ---------------------------------------------------------------------------------
    def add_messages(
        self, conversation_id: int, messages: Sequence[NewMessage]
    ) -> list[MessageRecord]:
        now = now_timestamp()
        found: list[MessageRecord] = []
        with self._transaction() as conn:
            _conversation(conn, conversation_id, lock=True)
            for m in messages:
                row = conn.execute(
                    "INSERT INTO messages(conversation_id, role, content, tool_calls, "
                    "tool_call_id, tool_name, speaker, tokens, is_compaction_record, record, "
                    f"created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    f"RETURNING {_MESSAGE_COLUMNS}",
                    (
                        conversation_id,
                        m.role,
                        m.content,
                        _tool_calls(m),
                        m.tool_call_id,
                        m.tool_name,
                        m.speaker,
                        m.tokens,
                        m.is_compaction_record,
                        Jsonb(dict(m.record)) if m.record is not None else None,
                        m.created_at or now,
                    ),
                ).fetchone()
                assert row is not None
                found.append(_message(row))
            conn.execute(
                "UPDATE conversations SET updated_at = %s WHERE id = %s", (now, conversation_id)
            )
        return found

    def raw_messages(self, conversation_id: int) -> list[MessageRecord]:
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = %s "
            "AND summary_id IS NULL AND NOT is_compaction_record ORDER BY id",
            (conversation_id,),
        )
        return [_message(row) for row in rows]

    def list_messages(
        self, conversation_id: int, *, after_id: int = 0, limit: int = 200
    ) -> list[MessageRecord]:
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = %s AND id > %s "
                "ORDER BY id LIMIT %s",
                (conversation_id, after_id, limit),
            ).fetchall()
            if not rows:
                _conversation(conn, conversation_id)  # NotFound, or simply nothing newer
        return [_message(row) for row in rows]

    def summary_messages(self, summary_ids: Sequence[int]) -> list[MessageRecord]:
        if not summary_ids:
            return []
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE summary_id = ANY(%s) ORDER BY id",
            (list(summary_ids),),
        )
        return [_message(row) for row in rows]

    # summaries --------------------------------------------------------------------------------
    def fold(
        self, conversation_id: int, summary: NewSummary, message_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(message_ids))
        with self._transaction() as conn:
            conversation = _conversation(conn, conversation_id, lock=True)
            # FOR UPDATE: a concurrent fold of the same messages waits, then sees them folded.
            raw = conn.execute(
                "SELECT id FROM messages WHERE id = ANY(%s) AND conversation_id = %s "
                "AND summary_id IS NULL AND NOT is_compaction_record FOR UPDATE",
                (ids, conversation_id),
            ).fetchall()
            if not ids or len(raw) != len(ids):
                raise ConflictError(
                    "Some of the messages to fold are no longer raw in this conversation; "
                    "another compaction folded them first."
                )
            row = _insert_summary(conn, conversation, summary, "pending")
            conn.execute("UPDATE messages SET summary_id = %s WHERE id = ANY(%s)", (row.id, ids))
        return row

    def merge(
        self, conversation_id: int, summary: NewSummary, source_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(source_ids))
        with self._transaction() as conn:
            conversation = _conversation(conn, conversation_id, lock=True)
            live = conn.execute(
                "SELECT id FROM summaries WHERE id = ANY(%s) AND conversation_id = %s "
                "AND in_context FOR UPDATE",
                (ids, conversation_id),
            ).fetchall()
            if len(ids) < 2 or len(live) != len(ids):
                raise ConflictError(
                    "Some of the summaries to merge are no longer in context; another compaction "
                    "merged them first."
                )
            row = _insert_summary(conn, conversation, summary, "done")
            conn.execute("UPDATE summaries SET in_context = false WHERE id = ANY(%s)", (ids,))
        return row

    def context_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = %s "
            "AND in_context ORDER BY first_at, first_message_id NULLS FIRST, id",
            (conversation_id,),
        )
        return [_summary(row) for row in rows]

    def list_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = %s ORDER BY id",
            (conversation_id,),
        )
        return [_summary(row) for row in rows]

    def unmaintained_summaries(self, agent_id: int, max_attempts: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE agent_id = %s AND depth = 0 "
            "AND maintenance_status != 'done' AND maintenance_attempts < %s ORDER BY id",
            (agent_id, max_attempts),
        )
        return [_summary(row) for row in rows]

    def record_maintenance(
        self, summary_ids: Sequence[int], status: MaintenanceStatus, error: str | None
    ) -> None:
        if not summary_ids:
            return
        with self._transaction() as conn:
            conn.execute(
                "UPDATE summaries SET maintenance_status = %s, maintenance_error = %s, "
                "maintenance_attempts = maintenance_attempts + 1 WHERE id = ANY(%s)",
                (status, error, list(summary_ids)),
            )

    # meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )


def _tool_calls(m: NewMessage) -> Jsonb | None:
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    return Jsonb(calls) if calls else None


def _agent_exists(conn: Connection, agent_id: int) -> None:
    if conn.execute("SELECT 1 FROM agents WHERE id = %s", (agent_id,)).fetchone() is None:
        raise NotFound(f"No agent with id {agent_id}.")


def _conversation(
    conn: Connection, conversation_id: int, *, lock: bool = False
) -> ConversationRecord:
    """The conversation (NotFound otherwise); ``lock`` holds its row until the transaction ends,
    so writes to one conversation (appends, folds, merges) take turns."""
    row = conn.execute(
        f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = %s"
        + (" FOR UPDATE" if lock else ""),
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"No conversation with id {conversation_id}.")
    return ConversationRecord(*row)


def _insert_summary(
    conn: Connection, conversation: ConversationRecord, s: NewSummary, status: MaintenanceStatus
) -> SummaryRecord:
    row = conn.execute(
        "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, last_at, "
        "message_count, first_message_id, last_message_id, depth, source_ids, "
        "maintenance_status, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
        f"%s, %s) RETURNING {_SUMMARY_COLUMNS}",
        (
            conversation.id,
            conversation.agent_id,
            s.text,
            s.tokens,
            s.first_at,
            s.last_at,
            s.message_count,
            s.first_message_id,
            s.last_message_id,
            s.depth,
            list(s.source_ids),
            status,
            now_timestamp(),
        ),
    ).fetchone()
    assert row is not None
    return _summary(row)
