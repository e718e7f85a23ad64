"""Memory reads and the filters, written once for both SQL stores.

The writes (insert with dedup, update, store an embedding) touch the vector arm, which differs by
engine (sqlite-vec and the vector cache against a pgvector column), so each store keeps them and
calls the lookups here inside its transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hivekeep.core.dedup import NEIGHBOURS, Candidate, Merge, Verdict, Writing
from hivekeep.core.subjects import subject_key
from hivekeep.core.text import now_timestamp
from hivekeep.errors import NotFound
from hivekeep.store.base import (
    BY_AGENT,
    KEEP,
    PERSON,
    Change,
    Inserted,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    MemoryWrite,
    NewMemory,
    PendingEmbedding,
    Vector,
    _Keep,
)
from hivekeep.store.rows import MEMORY_COLUMNS, memory_from_row, writer
from hivekeep.store.sql.dialect import Dialect, Session, SqlRows, TextQuery
from hivekeep.store.sql.versions import latest_version, record_merge, record_version
from hivekeep.types import Operation, Scope


def filter_clauses(
    d: Dialect, filters: MemoryFilter, *, subject_column: str, prefix: str
) -> tuple[list[str], dict[str, Any]]:
    """SQL conditions for the category / subject / since filters (named parameters)."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.category is not None:
        clauses.append(f"{prefix}category = {d.mark('category')}")
        params["category"] = filters.category.value
    if filters.subject is not None:
        clauses.append(f"{subject_column} = {d.mark('subject')}")
        params["subject"] = subject_key(filters.subject)
    if filters.since is not None:
        clauses.append(f"{prefix}created_at >= {d.mark('since')}")
        params["since"] = filters.since
    return clauses, params


def filter_sql(d: Dialect, viewer_id: int, filters: MemoryFilter) -> tuple[str, dict[str, Any]]:
    """WHERE clauses over ``m`` (memories) for visibility and the filters, in the dialect's own
    named placeholders (so that they also go into a statement the dialect builds itself)."""
    viewer = d.mark("viewer")
    if filters.scope is Scope.SHARED:
        visibility = "m.scope = 'shared'"
    elif filters.scope is Scope.PRIVATE:
        visibility = f"m.agent_id = {viewer} AND m.scope = 'private'"
    else:
        visibility = f"(m.agent_id = {viewer} OR m.scope = 'shared')"
    if filters.own:
        visibility += f" AND m.agent_id = {viewer}"
    clauses, params = filter_clauses(d, filters, subject_column=d.SUBJECT_COLUMN, prefix="m.")
    return " AND ".join([visibility, *clauses]), {**params, "viewer": viewer_id}


def visible(s: Session, memory_id: int, viewer_id: int) -> MemoryRecord:
    row = s.one(
        f"SELECT {MEMORY_COLUMNS} FROM memories "
        "WHERE id = ? AND (agent_id = ? OR scope = 'shared')",
        (memory_id, viewer_id),
    )
    if row is None:
        raise NotFound(f"No memory with id {memory_id} is visible to this agent.")
    return memory_from_row(row)


def owned(s: Session, memory_id: int, owner_id: int) -> MemoryRecord:
    record = visible(s, memory_id, owner_id)
    if record.agent_id != owner_id and owner_id != PERSON:  # PERSON sees only shared ones
        raise NotFound(
            f"No memory with id {memory_id} belongs to this agent "
            "(shared memories can only be changed by their author)."
        )
    return record


def fetch(s: Session, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    if not ids:
        return {}
    statement, params = _fetch_statement(s, viewer_id, ids)
    return _records(s.rows(statement, params))


def _fetch_statement(s: Session, viewer_id: int, ids: Sequence[int]) -> tuple[str, list[Any]]:
    among, params = s.dialect.any_of("id", ids)
    return (
        f"SELECT {MEMORY_COLUMNS} FROM memories "
        f"WHERE {among} AND ({s.dialect.VIEWER_COLUMN} = ? OR scope = 'shared')",
        [*params, viewer_id],
    )


def _records(rows: Sequence[Any]) -> dict[int, MemoryRecord]:
    return {row[0]: memory_from_row(row) for row in rows}


def fetch_with_newer(s: Session, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    """``fetch`` with each record's ``newer`` set (``services/newer.py``): both statements sent
    together where the driver can (``Dialect.together``)."""
    if not ids:
        return {}
    fetching, fetch_params = _fetch_statement(s, viewer_id, ids)
    linking, link_params = _newer_statement(s, viewer_id, ids)
    with s.dialect.together(s.conn):
        fetched = s.execute(fetching, fetch_params)
        linked = s.execute(linking, link_params)
    later = _newest(linked.fetchall())
    return {
        i: dataclasses.replace(m, newer=later[i]) if i in later else m
        for i, m in _records(fetched.fetchall()).items()
    }


def same_text(
    s: Session, text_key: str, author_id: int, subject: str | None, excluding: int = 0
) -> list[int]:
    """The memories visible to the author with this text key and subject, oldest first (the
    exact-text candidates; subjects compare by ``subject_key``), ``excluding`` one (a restore's
    own memory; 0, no id, excludes none). A key match is only a candidate: the rule decides."""
    rows = s.rows(
        "SELECT id, subject FROM memories "
        "WHERE text_key = ? AND id <> ? AND (agent_id = ? OR scope = 'shared') ORDER BY id",
        (text_key, excluding, author_id),
    )
    wanted = subject_key(subject)
    return [int(row[0]) for row in rows if subject_key(row[1]) == wanted][:NEIGHBOURS]


def writing(memory: NewMemory) -> Writing:
    """A new memory as the rule judges it: its text, scope and, for a dated write (``created_at``
    given: an import, bootstrap, a past event), the date its text was stated."""
    stated = (memory.updated_at or memory.created_at) if memory.created_at else None
    return Writing(memory.content, memory.scope is Scope.SHARED, stated)


def candidate(record: MemoryRecord, writer_id: int, similarity: float) -> Candidate:
    """A visible memory as the rule sees it, for a write by ``writer_id``."""
    return Candidate(
        record.id,
        record.content,
        similarity,
        own=record.agent_id == writer_id,
        shared=record.scope is Scope.SHARED,
        stated_at=record.updated_at,
    )


def found_duplicate(
    s: Session, write: MemoryWrite, verdict: Verdict, rows: MemoryRows
) -> Inserted | None:
    """What became of a write the rule merged into an existing memory, as ``insert_memories``
    gives it back (None: no merge): an exact repeat leaves it as it is; a reword makes the
    write's text its content (the previous text kept as a version); an older dated write is
    kept as a ``merge`` version."""
    target, memory = verdict.duplicate_of, write.memory
    if target is None:
        return None
    if verdict.merge is Merge.REWORD:
        return Inserted(rows.reword(s, target, write), True, (), None, reworded=True)
    merged = None
    if verdict.merge is Merge.OLDER:
        merged = record_merge(s, target, memory, rows.history_limit)
    return Inserted(visible(s, target, memory.agent_id), True, (), merged)


def link_similar(s: Session, links: Sequence[tuple[int, int]]) -> None:
    """Record (newer id, older id) pairs: a stored write and each memory it listed as similar."""
    now = now_timestamp()
    for start in range(0, len(links), _LINKS_PER_STATEMENT):
        chunk = links[start : start + _LINKS_PER_STATEMENT]
        s.execute(
            "INSERT INTO memory_links(newer_id, older_id, created_at) VALUES "
            + ", ".join("(?, ?, ?)" for _ in chunk),
            [value for newer, older in chunk for value in (newer, older, now)],
        )


def stored(s: Session, viewer_id: int, record: MemoryRecord, verdict: Verdict) -> Inserted:
    """A new memory as ``insert_memories`` gives it back, with the similar ones (visible to
    its author) it joined, each linked to it as to a newer near-twin."""
    similar = fetch(s, viewer_id, verdict.similar)
    shown = tuple(similar[i] for i in verdict.similar if i in similar)
    link_similar(s, [(record.id, m.id) for m in shown])
    return Inserted(record, False, shown)


def newer(s: Session, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    """``Store.newer_memories``: one query over the links of every id."""
    if not ids:
        return {}
    statement, params = _newer_statement(s, viewer_id, ids)
    return _newest(s.rows(statement, params))


def _newer_statement(s: Session, viewer_id: int, ids: Sequence[int]) -> tuple[str, list[Any]]:
    among, params = s.dialect.any_of("l.older_id", ids)
    return (
        f"SELECT l.older_id, {_LINKED_COLUMNS} FROM memory_links l "
        "JOIN memories m ON m.id = l.newer_id "
        f"WHERE {among} AND (m.agent_id = ? OR m.scope = 'shared') "
        "ORDER BY m.created_at DESC, m.id DESC",
        [*params, viewer_id],
    )


def _newest(rows: Sequence[Any]) -> dict[int, MemoryRecord]:
    found: dict[int, MemoryRecord] = {}
    for row in rows:
        found.setdefault(int(row[0]), memory_from_row(row[1:]))
    return found


_LINKS_PER_STATEMENT = 1000  # 3,000 bound values: well under SQLite's 32,766
_LINKED_COLUMNS = ", ".join(f"m.{column.strip()}" for column in MEMORY_COLUMNS.split(","))


class MemoryRows(SqlRows):
    """The memory reads of ``MemoryStore`` and ``update_memory``; mixed into both SQL stores.

    ``update_memory`` asks the store's vector arm twice: for the vector's columns of the row
    (``_vector_columns``; none on SQLite, whose vectors live in sqlite-vec's table) and, once the
    row is written, to follow it (``_vector_changed``; the index and the cache on SQLite)."""

    history_limit: int

    def _vector_columns(
        self, s: Session, fields: dict[str, Any], vector: Vector | _Keep | None
    ) -> list[str]:
        """Assignments (``column = :name``) for the row's own vector columns, their values put
        into ``fields``: none unless the engine keeps the vector in the row."""
        return []

    def _vector_changed(
        self, s: Session, memory_id: int, owner_id: int, vector: Vector | _Keep | None
    ) -> None:
        """After the row is written: the vector arm follows it (nothing when it is the row)."""

    def update_memory(
        self,
        memory_id: int,
        owner_id: int,
        changes: MemoryChanges,
        *,
        text_key: str | None,
        vector: Vector | _Keep | None,
        written: Change = BY_AGENT,
    ) -> MemoryRecord:
        with self._atomic() as s:
            return self._rewrite(s, memory_id, owner_id, changes, text_key, vector, written)

    def reword(self, s: Session, memory_id: int, write: MemoryWrite) -> MemoryRecord:
        """The write's text (and vector) as owned memory ``memory_id``'s content, the previous
        state kept as a version: a write judged the same fact (SPEC 4.1). A dated write dates
        the change (``updated_at``), so a later dated write of the fact is judged against it."""
        memory = write.memory
        stated = writing(memory).stated_at
        return self._rewrite(
            s,
            memory_id,
            memory.agent_id,
            MemoryChanges(content=memory.content),
            write.text_key,
            write.vector,
            Change(write.by or writer(memory.source), Operation.REWORD),
            updated_at=stated,
            owner_checked=True,  # the rule chose it among the writer's own memories
        )

    def _rewrite(
        self,
        s: Session,
        memory_id: int,
        owner_id: int,
        changes: MemoryChanges,
        text_key: str | None,
        vector: Vector | _Keep | None,
        written: Change,
        *,
        updated_at: str | None = None,
        owner_checked: bool = False,
    ) -> MemoryRecord:
        """``update_memory`` inside the caller's transaction (``updated_at`` None: now;
        ``owner_checked``: the caller read the row as ``owner_id``'s in this transaction)."""
        if s.dialect.FOR_UPDATE:  # the row locked before it is read (SQLite: one writer)
            s.execute(f"SELECT 1 FROM memories WHERE id = ?{s.dialect.FOR_UPDATE}", (memory_id,))
        if not owner_checked:
            owned(s, memory_id, owner_id)
        latest = latest_version(s, memory_id)
        fields: dict[str, Any] = {
            name: getattr(value, "value", value)
            for name in (
                "content",
                "category",
                "subject",
                "importance",
                "scope",
                "source_context",
            )
            if (value := getattr(changes, name)) is not KEEP
        }
        if "subject" in fields and s.dialect.SUBJECT_KEY_STORED:
            fields["subject_key"] = subject_key(fields["subject"])
        if text_key is not None:
            fields["text_key"] = text_key
        fields["updated_at"] = updated_at or now_timestamp()
        assignments = [f"{name} = :{name}" for name in fields]
        assignments += self._vector_columns(s, fields, vector)
        with s.dialect.refused_values():
            s.execute(
                f"UPDATE memories SET {', '.join(assignments)} WHERE id = :id",
                {**fields, "id": memory_id},
            )
        record_version(s, memory_id, latest, written, self.history_limit)
        self._vector_changed(s, memory_id, owner_id, vector)
        return visible(s, memory_id, owner_id)

    def get_memory(self, memory_id: int, viewer_id: int) -> MemoryRecord:
        with self._reading() as s:
            return visible(s, memory_id, viewer_id)

    def fetch_memories(
        self, viewer_id: int, ids: Sequence[int], *, newer: bool = False
    ) -> dict[int, MemoryRecord]:
        with self._reading() as s:
            return fetch_with_newer(s, viewer_id, ids) if newer else fetch(s, viewer_id, ids)

    def find_same_text(
        self, viewer_id: int, text_key: str, subject: str | None, *, excluding: int = 0
    ) -> list[int]:
        with self._reading() as s:
            return same_text(s, text_key, viewer_id, subject, excluding)

    def newer_memories(self, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        with self._reading() as s:
            return newer(s, viewer_id, ids)

    def list_memories(
        self, viewer_id: int, filters: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        where, params = filter_sql(self._dialect, viewer_id, filters)
        with self._reading() as s:
            total = s.one(f"SELECT count(*) FROM memories m WHERE {where}", params)
            rows = s.rows(
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
                f"ORDER BY m.created_at DESC, m.id DESC LIMIT {s.dialect.mark('limit')} "
                f"OFFSET {s.dialect.mark('offset')}",
                {**params, "limit": limit, "offset": offset},
            )
        return [memory_from_row(row) for row in rows], int(total[0]) if total else 0

    def count_memories(self, viewer_id: int, filters: MemoryFilter, at_most: int) -> int:
        where, params = filter_sql(self._dialect, viewer_id, filters)
        with self._reading() as s:
            row = s.one(
                f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} "
                f"LIMIT {s.dialect.mark('at_most')}) AS counted",
                {**params, "at_most": max(at_most, 0)},
            )
        return int(row[0]) if row else 0

    def text_search(
        self,
        viewer_id: int,
        terms: Sequence[str],
        k: int,
        filters: MemoryFilter,
        *,
        any_term: bool = False,
    ) -> list[int]:
        """Visible matches passing the filters: best first, then newer, then larger id. The
        engine's full-text arm ranks them (``sqlite/fulltext.py``, ``postgres/fulltext.py``)."""
        with self._reading() as s:
            return s.dialect.text_search(s, TextQuery(viewer_id, terms, k, filters, any_term))

    def text_search_filled(
        self, viewer_id: int, terms: Sequence[str], k: int, filters: MemoryFilter
    ) -> tuple[list[int], list[int]]:
        with self._reading() as s:
            return s.dialect.text_search_filled(s, TextQuery(viewer_id, terms, k, filters, False))

    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]:
        with self._reading() as s:
            rows = s.rows(
                "SELECT id, content, subject FROM memories WHERE embedding_state = 'pending' "
                "ORDER BY id LIMIT ?",
                (limit,),
            )
        return [PendingEmbedding(*row) for row in rows]

    def count_pending(self) -> int:
        with self._reading() as s:
            row = s.one("SELECT count(*) FROM memories WHERE embedding_state = 'pending'")
        return int(row[0]) if row else 0
