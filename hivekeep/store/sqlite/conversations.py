"""The conversation half of ``SQLiteStore``: messages, summaries, agent settings, meta, leases.

A mixin so that ``store.py`` stays about memories; it relies on the host class for ``atomic()``
(one write transaction) and ``_read()`` (a locked read).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import apsw

from hivekeep.core.text import now_timestamp
from hivekeep.errors import ConflictError, NotFound, StoreError
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
from hivekeep.store.leases import holder_is_dead

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
    calls = tuple(ToolCallRecord(**call) for call in json.loads(row[5])) if row[5] else ()
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
        record=json.loads(row[11]) if row[11] else None,
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
        source_ids=tuple(json.loads(row[11])),
        in_context=bool(row[12]),
        maintenance_status=row[13],
        maintenance_attempts=row[14],
        maintenance_error=row[15],
        created_at=row[16],
    )


def _marks(count: int) -> str:
    return ", ".join("?" * count)


class ConversationRows:
    """``ConversationStore`` on SQLite; mixed into ``SQLiteStore``."""

    def atomic(self) -> AbstractContextManager[Any]:
        raise NotImplementedError  # provided by SQLiteStore

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        raise NotImplementedError  # provided by SQLiteStore

    # per-agent settings -----------------------------------------------------------------------
    def get_agent_settings(self, agent_id: int) -> AgentSettings:
        self._agent_exists(agent_id)
        rows = self._read("SELECT settings FROM agent_settings WHERE agent_id = ?", (agent_id,))
        return AgentSettings.from_json(json.loads(rows[0][0]) if rows else {})

    def save_agent_settings(self, agent_id: int, settings: AgentSettings) -> None:
        payload = json.dumps(settings.to_json())
        with self.atomic() as conn:
            self._agent_exists(agent_id)
            conn.execute(
                "INSERT INTO agent_settings(agent_id, settings) VALUES (?, ?) "
                "ON CONFLICT(agent_id) DO UPDATE SET settings = excluded.settings",
                (agent_id, payload),
            )

    def _agent_exists(self, agent_id: int) -> None:
        if not self._read("SELECT 1 FROM agents WHERE id = ?", (agent_id,)):
            raise NotFound(f"No agent with id {agent_id}.")

    # conversations ----------------------------------------------------------------------------
    def create_conversation(self, agent_id: int, title: str) -> ConversationRecord:
        now = now_timestamp()
        with self.atomic() as conn:
            self._agent_exists(agent_id)
            conn.execute(
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (agent_id, title, now, now),
            )
            return ConversationRecord(conn.last_insert_rowid(), agent_id, title, now, now)

    def get_conversation(self, conversation_id: int) -> ConversationRecord:
        rows = self._read(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,)
        )
        if not rows:
            raise NotFound(f"No conversation with id {conversation_id}.")
        return ConversationRecord(*rows[0])

    def list_conversations(self, agent_id: int) -> list[ConversationRecord]:
        rows = self._read(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE agent_id = ? "
            "ORDER BY updated_at DESC, id DESC",
            (agent_id,),
        )
        return [ConversationRecord(*row) for row in rows]

    def restore_conversation(self, agent_id: int, conversation: RestoredConversation) -> Restored:
        conversation.check_positions()
        c = conversation
        with self.atomic() as conn:
            self._agent_exists(agent_id)
            conn.execute(
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (agent_id, c.title, c.created_at, c.updated_at),
            )
            record = ConversationRecord(
                conn.last_insert_rowid(), agent_id, c.title, c.created_at, c.updated_at
            )
            message_ids: list[int] = []
            for restored in c.messages:
                m = restored.message
                calls = [
                    {"id": t.id, "name": t.name, "arguments": t.arguments} for t in m.tool_calls
                ]
                conn.execute(
                    "INSERT INTO messages(conversation_id, role, content, tool_calls, "
                    "tool_call_id, tool_name, speaker, tokens, is_compaction_record, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id,
                        m.role,
                        m.content,
                        json.dumps(calls) if calls else None,
                        m.tool_call_id,
                        m.tool_name,
                        m.speaker,
                        m.tokens,
                        int(m.is_compaction_record),
                        m.created_at or c.created_at,
                    ),
                )
                message_ids.append(conn.last_insert_rowid())
            summary_ids: list[int] = []

            def message_id(position: int | None) -> int | None:
                return None if position is None else message_ids[position]

            for s in c.summaries:
                conn.execute(
                    "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, "
                    "last_at, message_count, first_message_id, last_message_id, depth, "
                    "source_ids, in_context, maintenance_status, maintenance_attempts, "
                    "maintenance_error, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        json.dumps([summary_ids[i] for i in s.sources]),
                        int(s.in_context),
                        s.maintenance_status,
                        s.maintenance_attempts,
                        s.maintenance_error,
                        s.created_at,
                    ),
                )
                summary_ids.append(conn.last_insert_rowid())
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
                        "UPDATE messages SET summary_id = ?, record = ? WHERE id = ?",
                        (summary, None if details is None else json.dumps(details), new_id),
                    )
        return Restored(record, tuple(message_ids), tuple(summary_ids))

    # messages ---------------------------------------------------------------------------------
    def add_messages(
        self, conversation_id: int, messages: Sequence[NewMessage]
    ) -> list[MessageRecord]:
        now = now_timestamp()
        with self.atomic() as conn:
            self.get_conversation(conversation_id)
            ids = []
            for m in messages:
                calls = (
                    json.dumps(
                        [
                            {"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in m.tool_calls
                        ]
                    )
                    if m.tool_calls
                    else None
                )
                conn.execute(
                    "INSERT INTO messages(conversation_id, role, content, tool_calls, "
                    "tool_call_id, tool_name, speaker, tokens, is_compaction_record, record, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        m.role,
                        m.content,
                        calls,
                        m.tool_call_id,
                        m.tool_name,
                        m.speaker,
                        m.tokens,
                        int(m.is_compaction_record),
                        json.dumps(dict(m.record)) if m.record is not None else None,
                        m.created_at or now,
                    ),
                )
                ids.append(conn.last_insert_rowid())
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
            return self._messages_by_id(ids)

    def _messages_by_id(self, ids: Sequence[int]) -> list[MessageRecord]:
        if not ids:
            return []
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id IN ({_marks(len(ids))}) ORDER BY id",
            list(ids),
        )
        return [_message(row) for row in rows]

    def raw_messages(self, conversation_id: int) -> list[MessageRecord]:
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? "
            "AND summary_id IS NULL AND is_compaction_record = 0 ORDER BY id",
            (conversation_id,),
        )
        return [_message(row) for row in rows]

    def list_messages(
        self, conversation_id: int, *, after_id: int = 0, limit: int = 200
    ) -> list[MessageRecord]:
        self.get_conversation(conversation_id)
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            (conversation_id, after_id, limit),
        )
        return [_message(row) for row in rows]

    def summary_messages(self, summary_ids: Sequence[int]) -> list[MessageRecord]:
        if not summary_ids:
            return []
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages "
            f"WHERE summary_id IN ({_marks(len(summary_ids))}) ORDER BY id",
            list(summary_ids),
        )
        return [_message(row) for row in rows]

    # summaries --------------------------------------------------------------------------------
    def fold(
        self, conversation_id: int, summary: NewSummary, message_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(message_ids))
        with self.atomic() as conn:
            conversation = self.get_conversation(conversation_id)
            raw = conn.execute(
                f"SELECT count(*) FROM messages WHERE id IN ({_marks(len(ids))}) "
                "AND conversation_id = ? AND summary_id IS NULL AND is_compaction_record = 0",
                [*ids, conversation_id],
            ).fetchone()[0]
            if not ids or raw != len(ids):
                raise ConflictError(
                    "Some of the messages to fold are no longer raw in this conversation; "
                    "another compaction folded them first."
                )
            summary_id = self._insert_summary(conn, conversation, summary, "pending")
            conn.execute(
                f"UPDATE messages SET summary_id = ? WHERE id IN ({_marks(len(ids))})",
                [summary_id, *ids],
            )
        return self._summary_by_id(summary_id)

    def merge(
        self, conversation_id: int, summary: NewSummary, source_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(source_ids))
        with self.atomic() as conn:
            conversation = self.get_conversation(conversation_id)
            live = conn.execute(
                f"SELECT count(*) FROM summaries WHERE id IN ({_marks(len(ids))}) "
                "AND conversation_id = ? AND in_context = 1",
                [*ids, conversation_id],
            ).fetchone()[0]
            if len(ids) < 2 or live != len(ids):
                raise ConflictError(
                    "Some of the summaries to merge are no longer in context; another compaction "
                    "merged them first."
                )
            summary_id = self._insert_summary(conn, conversation, summary, "done")
            conn.execute(
                f"UPDATE summaries SET in_context = 0 WHERE id IN ({_marks(len(ids))})", ids
            )
        return self._summary_by_id(summary_id)

    @staticmethod
    def _insert_summary(
        conn: Any, conversation: ConversationRecord, s: NewSummary, status: MaintenanceStatus
    ) -> int:
        conn.execute(
            "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, last_at, "
            "message_count, first_message_id, last_message_id, depth, source_ids, "
            "maintenance_status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                json.dumps(list(s.source_ids)),
                status,
                now_timestamp(),
            ),
        )
        return int(conn.last_insert_rowid())

    def _summary_by_id(self, summary_id: int) -> SummaryRecord:
        rows = self._read(f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE id = ?", (summary_id,))
        return _summary(rows[0])

    def context_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = ? "
            "AND in_context = 1 ORDER BY first_at, first_message_id, id",
            (conversation_id,),
        )
        return [_summary(row) for row in rows]

    def list_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = ? ORDER BY id",
            (conversation_id,),
        )
        return [_summary(row) for row in rows]

    def unmaintained_summaries(self, agent_id: int, max_attempts: int) -> list[SummaryRecord]:
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE agent_id = ? AND depth = 0 "
            "AND maintenance_status != 'done' AND maintenance_attempts < ? ORDER BY id",
            (agent_id, max_attempts),
        )
        return [_summary(row) for row in rows]

    def record_maintenance(
        self, summary_ids: Sequence[int], status: MaintenanceStatus, error: str | None
    ) -> None:
        if not summary_ids:
            return
        with self.atomic() as conn:
            conn.execute(
                "UPDATE summaries SET maintenance_status = ?, maintenance_error = ?, "
                f"maintenance_attempts = maintenance_attempts + 1 "
                f"WHERE id IN ({_marks(len(summary_ids))})",
                [status, error, *summary_ids],
            )

    # meta and leases --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.atomic() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        now = time.time()
        try:
            with self.atomic() as conn:
                row = conn.execute(
                    "SELECT holder, expires_at FROM leases WHERE name = ?", (name,)
                ).fetchone()
                if (
                    row is not None
                    and row[0] != holder
                    and row[1] > now
                    and not holder_is_dead(row[0])
                ):
                    return str(row[0])
                conn.execute(
                    "INSERT OR REPLACE INTO leases(name, holder, expires_at) VALUES (?, ?, ?)",
                    (name, holder, now + ttl_seconds),
                )
        except apsw.BusyError as exc:  # another process held the write lock past the timeout
            raise StoreError(f"Lease {name!r}: the hive stayed busy ({exc}).") from exc
        return None

    def release_lease(self, name: str, holder: str) -> None:
        with self.atomic() as conn:
            conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
