"""``ConversationStore`` written once: messages, summaries, agent settings and meta.

A mixin of both SQL stores. The host gives ``_atomic()`` (one transaction) and ``_reading()``
(a connection for reads), each yielding a ``Session``; leases differ by engine and live with it.
Folds and merges lock the conversation's row (``FOR_UPDATE``, a no-op on SQLite's single writer), so
writes to one conversation take turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
from hivekeep.store.sql.dialect import Session, SqlRows

MESSAGE_COLUMNS = (
    "id, conversation_id, role, content, tokens, tool_calls, tool_call_id, tool_name, speaker, "
    "summary_id, is_compaction_record, record, created_at"
)
SUMMARY_COLUMNS = (
    "id, conversation_id, agent_id, text, tokens, first_at, last_at, message_count, "
    "first_message_id, last_message_id, depth, source_ids, in_context, maintenance_status, "
    "maintenance_attempts, maintenance_error, created_at"
)
CONVERSATION_COLUMNS = "id, agent_id, title, created_at, updated_at, deleted_at"
_MESSAGE_INSERT = (
    "INSERT INTO messages(conversation_id, role, content, tool_calls, tool_call_id, tool_name, "
    "speaker, tokens, is_compaction_record, record, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SUMMARY_INSERT = (
    "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, last_at, "
    "message_count, first_message_id, last_message_id, depth, source_ids, in_context, "
    "maintenance_status, maintenance_attempts, maintenance_error, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _message(s: Session, row: Sequence[Any]) -> MessageRecord:
    calls = s.dialect.from_json(row[5])
    record = s.dialect.from_json(row[11])
    return MessageRecord(
        id=row[0],
        conversation_id=row[1],
        role=row[2],
        content=row[3],
        tokens=row[4],
        tool_calls=tuple(ToolCallRecord(**call) for call in calls) if calls else (),
        tool_call_id=row[6],
        tool_name=row[7],
        speaker=row[8],
        summary_id=row[9],
        is_compaction_record=bool(row[10]),
        record=dict(record) if record is not None else None,
        created_at=row[12],
    )


def _summary(s: Session, row: Sequence[Any]) -> SummaryRecord:
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
        source_ids=s.dialect.from_ids(row[11]),
        in_context=bool(row[12]),
        maintenance_status=row[13],
        maintenance_attempts=row[14],
        maintenance_error=row[15],
        created_at=row[16],
    )


def _message_values(
    s: Session, conversation_id: int, m: NewMessage, record: Any, created_at: str
) -> tuple[Any, ...]:
    """The values of ``_MESSAGE_INSERT`` for one message."""
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    return (
        conversation_id,
        m.role,
        m.content,
        s.dialect.to_json(calls) if calls else None,
        m.tool_call_id,
        m.tool_name,
        m.speaker,
        m.tokens,
        s.dialect.flag(m.is_compaction_record),
        record,
        created_at,
    )


def _inserted_id(s: Session, sql: str, params: Sequence[Any]) -> int:
    """The id of the row inserted by ``sql`` (which ends in ``RETURNING id``)."""
    row = s.one(sql, params)
    assert row is not None
    return int(row[0])


def agent_exists(s: Session, agent_id: int) -> None:
    if s.one("SELECT 1 FROM agents WHERE id = ?", (agent_id,)) is None:
        raise NotFound(f"No agent with id {agent_id}.")


def conversation(s: Session, conversation_id: int, *, lock: bool = False) -> ConversationRecord:
    """The conversation (NotFound otherwise); ``lock`` holds its row until the transaction ends."""
    sql = f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?"
    missing = NotFound(f"No conversation with id {conversation_id}.")
    return ConversationRecord(*s.found(sql, (conversation_id,), missing, lock=lock))


def _message_state(s: Session, conversation_id: int, message_id: int) -> Sequence[Any]:
    """(summary_id, is_compaction_record) of a message of this conversation (else NotFound)."""
    row: Sequence[Any] = s.found(
        "SELECT summary_id, is_compaction_record FROM messages WHERE id = ? "
        "AND conversation_id = ?",
        (message_id, conversation_id),
        NotFound(f"No message with id {message_id} in conversation {conversation_id}."),
    )
    return row


def _insert_summary(
    s: Session, conversation: ConversationRecord, new: NewSummary, status: MaintenanceStatus
) -> SummaryRecord:
    row = s.one(
        "INSERT INTO summaries(conversation_id, agent_id, text, tokens, first_at, last_at, "
        "message_count, first_message_id, last_message_id, depth, source_ids, "
        "maintenance_status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        f"RETURNING {SUMMARY_COLUMNS}",
        (
            conversation.id,
            conversation.agent_id,
            new.text,
            new.tokens,
            new.first_at,
            new.last_at,
            new.message_count,
            new.first_message_id,
            new.last_message_id,
            new.depth,
            s.dialect.to_ids(list(new.source_ids)),
            status,
            now_timestamp(),
        ),
    )
    assert row is not None
    return _summary(s, row)


class ConversationRows(SqlRows):
    """``ConversationStore`` (leases aside) on either engine; mixed into both SQL stores."""

    # per-agent settings -----------------------------------------------------------------------
    def get_agent_settings(self, agent_id: int) -> AgentSettings:
        # one statement: every agent write reads its settings (credential policy, review)
        with self._reading() as s:
            row = s.one(
                "SELECT a.id, t.settings FROM agents a "
                "LEFT JOIN agent_settings t ON t.agent_id = a.id WHERE a.id = ?",
                (agent_id,),
            )
        if row is None:
            raise NotFound(f"No agent with id {agent_id}.")
        return AgentSettings.from_json(dict(s.dialect.from_json(row[1])) if row[1] else {})

    def save_agent_settings(self, agent_id: int, settings: AgentSettings) -> None:
        with self._atomic() as s:
            agent_exists(s, agent_id)
            s.execute(
                "INSERT INTO agent_settings(agent_id, settings) VALUES (?, ?) "
                "ON CONFLICT (agent_id) DO UPDATE SET settings = excluded.settings",
                (agent_id, s.dialect.to_json(settings.to_json())),
            )

    # conversations ----------------------------------------------------------------------------
    def create_conversation(self, agent_id: int, title: str) -> ConversationRecord:
        now = now_timestamp()
        with self._atomic() as s:
            agent_exists(s, agent_id)
            new_id = _inserted_id(
                s,
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (agent_id, title, now, now),
            )
        return ConversationRecord(new_id, agent_id, title, now, now)

    def get_conversation(self, conversation_id: int) -> ConversationRecord:
        with self._reading() as s:
            return conversation(s, conversation_id)

    def list_conversations(
        self, agent_id: int, *, deleted: bool = False
    ) -> list[ConversationRecord]:
        where, order = (
            ("deleted_at IS NOT NULL", "deleted_at DESC")
            if deleted
            else ("deleted_at IS NULL", "updated_at DESC")
        )
        with self._reading() as s:
            rows = s.rows(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE agent_id = ? "
                f"AND {where} ORDER BY {order}, id DESC",
                (agent_id,),
            )
        return [ConversationRecord(*row) for row in rows]

    def rename_conversation(self, conversation_id: int, title: str) -> ConversationRecord:
        with self._atomic() as s:
            conversation(s, conversation_id, lock=True)
            s.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))
            return conversation(s, conversation_id)

    def set_conversation_deleted(
        self, conversation_id: int, deleted_at: str | None
    ) -> ConversationRecord:
        with self._atomic() as s:
            conversation(s, conversation_id, lock=True)
            s.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ?",
                (deleted_at, conversation_id),
            )
            return conversation(s, conversation_id)

    def purge_conversations(self, deleted_before: str) -> int:
        expired = "deleted_at IS NOT NULL AND deleted_at < ?"
        with self._reading() as s:  # the common case, at every open: nothing, and no write lock
            if (
                s.one(f"SELECT 1 FROM conversations WHERE {expired} LIMIT 1", (deleted_before,))
                is None
            ):
                return 0
        with self._atomic() as s:
            rows = s.rows(
                f"DELETE FROM conversations WHERE {expired} RETURNING id",
                (deleted_before,),
            )
        return len(rows)

    def restore_conversation(self, agent_id: int, conversation: RestoredConversation) -> Restored:
        conversation.check_positions()
        c = conversation
        with self._atomic() as s:
            agent_exists(s, agent_id)
            new_id = _inserted_id(
                s,
                "INSERT INTO conversations(agent_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (agent_id, c.title, c.created_at, c.updated_at),
            )
            record = ConversationRecord(new_id, agent_id, c.title, c.created_at, c.updated_at)
            message_ids: list[int] = []
            for restored in c.messages:
                m = restored.message
                values = _message_values(s, record.id, m, None, m.created_at or c.created_at)
                message_ids.append(_inserted_id(s, f"{_MESSAGE_INSERT} RETURNING id", values))
            summary_ids: list[int] = []

            def message_id(position: int | None) -> int | None:
                return None if position is None else message_ids[position]

            for x in c.summaries:
                values = (
                    record.id,
                    agent_id,
                    x.text,
                    x.tokens,
                    x.first_at,
                    x.last_at,
                    x.message_count,
                    message_id(x.first_message),
                    message_id(x.last_message),
                    x.depth,
                    s.dialect.to_ids([summary_ids[i] for i in x.sources]),
                    s.dialect.flag(x.in_context),
                    x.maintenance_status,
                    x.maintenance_attempts,
                    x.maintenance_error,
                    x.created_at,
                )
                summary_ids.append(_inserted_id(s, f"{_SUMMARY_INSERT} RETURNING id", values))
            # folds and records point at summaries, which point at messages: set them last
            for new_id, restored in zip(message_ids, c.messages, strict=True):
                details = restored.message.record
                if details is not None:
                    details = dict(details)
                    for key, positions in restored.record_summaries.items():
                        details[key] = [summary_ids[i] for i in positions]
                summary = None if restored.summary is None else summary_ids[restored.summary]
                if summary is not None or details is not None:
                    s.execute(
                        "UPDATE messages SET summary_id = ?, record = ? WHERE id = ?",
                        (summary, None if details is None else s.dialect.to_json(details), new_id),
                    )
        return Restored(record, tuple(message_ids), tuple(summary_ids))

    # messages ---------------------------------------------------------------------------------
    def add_messages(
        self, conversation_id: int, messages: Sequence[NewMessage]
    ) -> list[MessageRecord]:
        now = now_timestamp()
        found: list[MessageRecord] = []
        with self._atomic() as s:
            conversation(s, conversation_id, lock=True)
            for m in messages:
                record = None if m.record is None else s.dialect.to_json(dict(m.record))
                values = _message_values(s, conversation_id, m, record, m.created_at or now)
                row = s.one(f"{_MESSAGE_INSERT} RETURNING {MESSAGE_COLUMNS}", values)
                assert row is not None
                found.append(_message(s, row))
            s.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return found

    def raw_messages(self, conversation_id: int) -> list[MessageRecord]:
        with self._reading() as s:
            rows = s.rows(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? "
                f"AND summary_id IS NULL AND is_compaction_record = {s.dialect.FALSE} ORDER BY id",
                (conversation_id,),
            )
            return [_message(s, row) for row in rows]

    def list_messages(
        self, conversation_id: int, *, after_id: int = 0, limit: int = 200
    ) -> list[MessageRecord]:
        with self._reading() as s:
            rows = s.rows(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? AND id > ? "
                "ORDER BY id LIMIT ?",
                (conversation_id, after_id, limit),
            )
            if not rows:
                conversation(s, conversation_id)  # NotFound, or simply nothing newer
            return [_message(s, row) for row in rows]

    def summary_messages(self, summary_ids: Sequence[int]) -> list[MessageRecord]:
        if not summary_ids:
            return []
        with self._reading() as s:
            among, params = s.dialect.any_of("summary_id", summary_ids)
            rows = s.rows(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {among} ORDER BY id", params
            )
            return [_message(s, row) for row in rows]

    def delete_raw_message(self, conversation_id: int, message_id: int) -> None:
        with self._atomic() as s:
            conversation(s, conversation_id, lock=True)
            row = _message_state(s, conversation_id, message_id)
            if row[0] is not None or row[1]:
                raise ConflictError(
                    f"Message {message_id} is already folded into a summary (or is a compaction "
                    "record); what was drawn from it cannot be taken back."
                )
            s.execute("DELETE FROM messages WHERE id = ?", (message_id,))

    def set_message_record(
        self, conversation_id: int, message_id: int, record: Mapping[str, Any] | None
    ) -> None:
        with self._atomic() as s:
            conversation(s, conversation_id, lock=True)
            _message_state(s, conversation_id, message_id)
            stored = None if record is None else s.dialect.to_json(dict(record))
            s.execute("UPDATE messages SET record = ? WHERE id = ?", (stored, message_id))

    # summaries --------------------------------------------------------------------------------
    def fold(
        self, conversation_id: int, summary: NewSummary, message_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(message_ids))
        with self._atomic() as s:
            found = conversation(s, conversation_id, lock=True)
            among, params = s.dialect.any_of("id", ids)
            # FOR UPDATE: a concurrent fold of the same messages waits, then sees them folded.
            raw = s.rows(
                f"SELECT id FROM messages WHERE {among} AND conversation_id = ? "
                f"AND summary_id IS NULL AND is_compaction_record = {s.dialect.FALSE}"
                f"{s.dialect.FOR_UPDATE}",
                [*params, conversation_id],
            )
            if not ids or len(raw) != len(ids):
                raise ConflictError(
                    "Some of the messages to fold are no longer raw in this conversation; "
                    "another compaction folded them first."
                )
            row = _insert_summary(s, found, summary, "pending")
            s.execute(f"UPDATE messages SET summary_id = ? WHERE {among}", [row.id, *params])
        return row

    def merge(
        self, conversation_id: int, summary: NewSummary, source_ids: Sequence[int]
    ) -> SummaryRecord:
        ids = sorted(set(source_ids))
        with self._atomic() as s:
            found = conversation(s, conversation_id, lock=True)
            among, params = s.dialect.any_of("id", ids)
            live = s.rows(
                f"SELECT id FROM summaries WHERE {among} AND conversation_id = ? "
                f"AND in_context = {s.dialect.TRUE}{s.dialect.FOR_UPDATE}",
                [*params, conversation_id],
            )
            if len(ids) < 2 or len(live) != len(ids):
                raise ConflictError(
                    "Some of the summaries to merge are no longer in context; another compaction "
                    "merged them first."
                )
            row = _insert_summary(s, found, summary, "done")
            s.execute(f"UPDATE summaries SET in_context = {s.dialect.FALSE} WHERE {among}", params)
        return row

    def _summaries(self, sql: str, params: Sequence[Any]) -> list[SummaryRecord]:
        with self._reading() as s:
            return [_summary(s, row) for row in s.rows(sql, params)]

    def context_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        return self._summaries(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = ? "
            f"AND in_context = {self._dialect.TRUE} "
            "ORDER BY first_at, first_message_id NULLS FIRST, id",
            (conversation_id,),
        )

    def list_summaries(self, conversation_id: int) -> list[SummaryRecord]:
        return self._summaries(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation_id = ? ORDER BY id",
            (conversation_id,),
        )

    def unmaintained_summaries(self, agent_id: int, max_attempts: int) -> list[SummaryRecord]:
        return self._summaries(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE agent_id = ? AND depth = 0 "
            "AND maintenance_status != 'done' AND maintenance_attempts < ? ORDER BY id",
            (agent_id, max_attempts),
        )

    def record_maintenance(
        self, summary_ids: Sequence[int], status: MaintenanceStatus, error: str | None
    ) -> None:
        if not summary_ids:
            return
        with self._atomic() as s:
            among, params = s.dialect.any_of("id", summary_ids)
            s.execute(
                "UPDATE summaries SET maintenance_status = ?, maintenance_error = ?, "
                f"maintenance_attempts = maintenance_attempts + 1 WHERE {among}",
                [status, error, *params],
            )

    # meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._reading() as s:
            row = s.one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._atomic() as s:
            s.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
