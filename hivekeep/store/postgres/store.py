"""``PostgresStore``: the ``Store`` on PostgreSQL (psycopg 3, a small connection pool, pgvector).

One hive is one schema (the first of the connection's ``search_path``; ``public`` unless the URL
says otherwise, e.g. ``?options=-csearch_path%3Dteam_a,public``). Every method is one transaction
on one pooled connection. Visibility (``agent_id = viewer OR scope = 'shared'``) and the filters run
inside both search arms: the vector arm is an HNSW cosine scan with pgvector's iterative scan, so
rows the viewer may not see never use up its ``k`` places; the full-text arm matches a GIN-indexed
``tsvector`` column generated from content, subject and context. Inserts take a transaction-level
advisory lock, so the duplicate check and the insert are one step, as in SQLite's single writer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.rows import TupleRow

from hivekeep.core.dedup import NEIGHBOURS, Candidate, DedupRule, Verdict
from hivekeep.core.text import now_timestamp
from hivekeep.errors import AgentNotFound, ConflictError, NotFound, StoreError
from hivekeep.store.base import (
    BY_AGENT,
    HISTORY_LIMIT,
    KEEP,
    PERSON,
    AgentFootprint,
    AgentRecord,
    Change,
    EmbeddingSpace,
    Inserted,
    MemoryChanges,
    MemoryFilter,
    MemoryRecord,
    MemoryWrite,
    PendingEmbedding,
    ProfileChange,
    ProfileRecord,
    Vector,
    _Keep,
)
from hivekeep.store.postgres import history, migrations
from hivekeep.store.postgres.conversations import ConversationRows
from hivekeep.store.postgres.history import HistoryRows
from hivekeep.store.postgres.leases import AdvisoryLeases
from hivekeep.store.rows import MEMORY_COLUMNS, author_of, memory_from_row
from hivekeep.store.vector_cache import subject_key
from hivekeep.types import Scope

Connection = psycopg.Connection[TupleRow]

POOL_MIN = 1
POOL_MAX = 8
CONNECT_TIMEOUT_S = 10.0
HNSW_MAX_DIMENSION = 2000  # pgvector's limit for an HNSW index on ``vector``; above: exact scans
# Iterative HNSW scans (pgvector >= 0.8): keep walking the graph until ``k`` visible rows that pass
# the filters are found, in exact distance order, visiting at most this many index tuples.
HNSW_MAX_SCAN_TUPLES = 100_000
# Candidates the HNSW search keeps (pgvector's default, 40, found 71 % of the exact top 10 at
# 100k clustered vectors in bench/scale_postgres.py; the arm asks for a pool of several dozen).
HNSW_EF_SEARCH = 200
_PUNCTUATION = str.maketrans(dict.fromkeys(migrations.SPLIT_PUNCTUATION, " "))


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@/]*@", r"\1:***@", url, flags=re.IGNORECASE)


def vector_literal(vector: Vector) -> str:
    """pgvector's text form, ``[x,y,...]``, exact for float32 (each value printed round-trip)."""
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1:
        raise StoreError(f"A vector must be one-dimensional, got shape {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise StoreError("A vector holds a NaN or infinite value.")
    return "[" + ",".join(repr(float(x)) for x in values) + "]"


def search_terms(terms: Sequence[str]) -> list[str]:
    """The terms that can match anything: split punctuation turned into spaces, terms without a
    letter or digit dropped (as ``fts_query.fts5_match`` drops them), repeats dropped."""
    if isinstance(terms, str):
        raise TypeError("text_search takes a sequence of words, not one string")
    kept: list[str] = []
    for term in terms:
        cleaned = " ".join(term.translate(_PUNCTUATION).split())
        if any(c.isalnum() for c in cleaned) and cleaned not in kept:
            kept.append(cleaned)
    return kept


class PostgresStore(HistoryRows, ConversationRows):
    """``Store`` on a PostgreSQL database with pgvector; see the module docstring.

    >>> store = PostgresStore("postgresql://hive@db.internal/hivekeep")   # doctest: +SKIP
    """

    def __init__(
        self, url: str, *, pool_size: int = POOL_MAX, history_limit: int = HISTORY_LIMIT
    ) -> None:
        """``history_limit``: versions kept per memory and per profile (the oldest go first)."""
        self.url = url
        self.history_limit = max(1, history_limit)
        self._closed = True
        try:  # one plain connection first: a wrong URL fails at once, not after pool retries
            with psycopg.connect(
                url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)
            ) as conn:
                migrations.migrate(conn, now_timestamp())
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"Cannot open the PostgreSQL hive at {redact(url)}: {exc}".rstrip()
            ) from exc
        self._pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
            url,
            min_size=POOL_MIN,
            max_size=max(POOL_MIN, pool_size),
            kwargs={"connect_timeout": int(CONNECT_TIMEOUT_S), "autocommit": True},
            configure=self._configure,
            open=False,
            name="hivekeep",
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except psycopg_pool.PoolTimeout as exc:
            self._pool.close()
            raise StoreError(
                f"Cannot connect to PostgreSQL at {redact(url)} within {CONNECT_TIMEOUT_S:.0f} s."
            ) from exc
        self._leases = AdvisoryLeases(url, CONNECT_TIMEOUT_S)
        self._local = threading.local()  # .connection: this thread's, inside transaction()
        self._closed = False

    @staticmethod
    def _configure(conn: Connection) -> None:
        conn.execute("SET hnsw.iterative_scan = strict_order")
        conn.execute(f"SET hnsw.max_scan_tuples = {HNSW_MAX_SCAN_TUPLES}")
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._leases.close()
        self._pool.close()

    # plumbing ---------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``Store.transaction``: one pooled connection is held for this thread in one
        transaction, and every method the thread calls meanwhile runs on it (a method's own
        transaction becomes a savepoint). Nested: a savepoint."""
        held: Connection | None = getattr(self._local, "connection", None)
        if held is not None:
            with self._translated(), held.transaction():
                yield
            return
        with self._connection() as conn:
            self._local.connection = conn
            try:
                with self._translated(), conn.transaction():
                    yield
            finally:
                self._local.connection = None

    @staticmethod
    @contextmanager
    def _translated() -> Iterator[None]:
        try:
            yield
        except psycopg.OperationalError as exc:
            raise StoreError(f"PostgreSQL connection failed: {exc}") from exc

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection in autocommit mode: each statement is its own transaction.

        Inside ``transaction()`` it is the thread's held connection, in that transaction."""
        if self._closed:
            raise StoreError("This hive is closed.")
        held: Connection | None = getattr(self._local, "connection", None)
        if held is not None:
            yield held
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(f"No PostgreSQL connection became free: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise StoreError(f"PostgreSQL connection failed: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A pooled connection inside one transaction: committed on success, else rolled back."""
        with self._connection() as conn, conn.transaction():
            yield conn

    def _read(
        self, query: Any, params: Any = None, *, prepare: bool | None = None
    ) -> list[TupleRow]:
        """The rows of one statement (one statement is one transaction: no BEGIN needed)."""
        with self._connection() as conn:
            return _execute(conn, query, params, prepare=prepare).fetchall()

    # agents -----------------------------------------------------------------------------------
    def create_agent(self, name: str, role: str) -> AgentRecord:
        now = now_timestamp()
        try:
            with self._transaction() as conn:
                row = conn.execute(
                    "INSERT INTO agents(name, role, created_at, updated_at) "
                    "VALUES (%s, %s, %s, %s) RETURNING id",
                    (name, role, now, now),
                ).fetchone()
                assert row is not None
                conn.execute(
                    "INSERT INTO profiles(agent_id, created_at, updated_at) VALUES (%s, %s, %s)",
                    (row[0], now, now),
                )
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(
                f"An agent named {name!r} already exists; choose another name."
            ) from exc
        return AgentRecord(int(row[0]), name, role, now, now)

    def get_agent(self, key: int | str) -> AgentRecord:
        with self._connection() as conn:
            return _agent(conn, key)

    def list_agents(self) -> list[AgentRecord]:
        rows = self._read("SELECT id, name, role, created_at, updated_at FROM agents ORDER BY id")
        return [AgentRecord(*row) for row in rows]

    def update_agent(
        self, agent_id: int, *, name: str | None = None, role: str | None = None
    ) -> AgentRecord:
        now = now_timestamp()
        try:
            with self._transaction() as conn:
                current = _agent(conn, agent_id, lock=True)
                name = current.name if name is None else name
                role = current.role if role is None else role
                conn.execute(
                    "UPDATE agents SET name = %s, role = %s, updated_at = %s WHERE id = %s",
                    (name, role, now, agent_id),
                )
                if name != current.name:
                    conn.execute(
                        "UPDATE memories SET author_name = %s WHERE agent_id = %s", (name, agent_id)
                    )
        except psycopg.errors.UniqueViolation as exc:
            raise ConflictError(
                f"An agent named {name!r} already exists; choose another name."
            ) from exc
        return AgentRecord(agent_id, name, role, current.created_at, now)

    def agent_footprint(self, agent_id: int) -> AgentFootprint:
        with self._connection() as conn:
            return _footprint(conn, agent_id)

    def delete_agent(self, agent_id: int) -> AgentFootprint:
        with self._transaction() as conn:
            _agent(conn, agent_id, lock=True)
            footprint = _footprint(conn, agent_id)
            history.forget_agent_history(conn, agent_id)
            conn.execute(
                "DELETE FROM memories WHERE agent_id = %s AND scope = 'private'", (agent_id,)
            )
            # Shared memories stay, owned by no agent (agent_id NULL; author_name keeps the
            # name). The profile, settings and conversations go by ON DELETE CASCADE.
            conn.execute("UPDATE memories SET agent_id = NULL WHERE agent_id = %s", (agent_id,))
            conn.execute("DELETE FROM agents WHERE id = %s", (agent_id,))
        return footprint

    # embedding space --------------------------------------------------------------------------
    def embedding_space(self) -> EmbeddingSpace | None:
        with self._connection() as conn:
            return _space(conn)

    def reset_embedding_space(self, space: EmbeddingSpace) -> int:
        if space.dimension < 1:
            raise StoreError(f"Embedding dimension {space.dimension} is not positive.")
        if space.dimension > 16000:
            raise StoreError(f"Embedding dimension {space.dimension} is over pgvector's 16000.")
        with self._transaction() as conn:
            conn.execute("DROP INDEX IF EXISTS memories_embedding")
            # Every vector goes (USING NULL): the table is rewritten once, for the new dimension.
            conn.execute(
                sql.SQL(
                    "ALTER TABLE memories ALTER COLUMN embedding TYPE vector({0}) "
                    "USING NULL::vector({0})"
                ).format(sql.Literal(int(space.dimension)))
            )
            if space.dimension <= HNSW_MAX_DIMENSION:
                conn.execute(
                    "CREATE INDEX memories_embedding ON memories "
                    "USING hnsw (embedding vector_cosine_ops)"
                )
            for key, value in (
                ("embedding_model", space.model),
                ("embedding_dim", str(space.dimension)),
            ):
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
            cursor = conn.execute(
                "UPDATE memories SET embedding_state = 'pending', embedding_model = NULL"
            )
            conn.execute(
                "UPDATE memory_trash SET embedding = NULL, embedding_state = 'pending', "
                "embedding_model = NULL"
            )
            return int(cursor.rowcount)

    # memories ---------------------------------------------------------------------------------
    def insert_memories(self, writes: Sequence[MemoryWrite], *, dedup: DedupRule) -> list[Inserted]:
        results: list[Inserted] = []
        if not writes:
            return results
        with self._transaction() as conn:
            # One inserter at a time, as SQLite's single writer: the duplicate check sees every
            # memory committed before, and the batch's own earlier rows (same transaction).
            conn.execute(
                "SELECT pg_advisory_xact_lock("
                "hashtextextended(current_schema() || ':hivekeep:insert', 0))"
            )
            space = _space(conn)
            authors: dict[int, str] = {}
            for write in writes:
                memory = write.memory
                author = author_of(memory, authors, lambda key: _agent(conn, key))
                literal = None
                if write.vector is not None and space is not None:
                    literal = _checked_vector(write.vector, space)
                verdict = _judge(conn, write, literal, dedup)
                if verdict.duplicate_of is not None:
                    duplicate = _get_memory(conn, verdict.duplicate_of, memory.agent_id)
                    results.append(Inserted(duplicate, True))
                    continue
                now = now_timestamp()
                row = _execute(
                    conn,
                    "INSERT INTO memories(agent_id, author_name, content, text_key, category, "
                    "subject, subject_key, importance, scope, source_context, source, "
                    "source_message_id, embedding, embedding_state, embedding_model, "
                    "retrieval_count, last_retrieved_at, created_at, updated_at) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s, "
                    f"%s, %s) RETURNING {MEMORY_COLUMNS}",
                    (
                        None if memory.agent_id == PERSON else memory.agent_id,
                        author,
                        memory.content,
                        write.text_key,
                        memory.category.value,
                        memory.subject,
                        subject_key(memory.subject),
                        memory.importance,
                        memory.scope.value,
                        memory.source_context,
                        memory.source.value,
                        memory.source_message_id,
                        literal,
                        "pending" if literal is None else "ready",
                        None if literal is None or space is None else space.model,
                        memory.retrieval_count,
                        memory.last_retrieved_at,
                        memory.created_at or now,
                        memory.updated_at or now,
                    ),
                ).fetchone()
                assert row is not None
                similar = _fetch(conn, memory.agent_id, verdict.similar)
                results.append(
                    Inserted(
                        memory_from_row(row),
                        False,
                        tuple(similar[i] for i in verdict.similar if i in similar),
                    )
                )
        return results

    def get_memory(self, memory_id: int, viewer_id: int) -> MemoryRecord:
        with self._connection() as conn:
            return _get_memory(conn, memory_id, viewer_id)

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
        with self._transaction() as conn:
            conn.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (memory_id,))
            _owned(conn, memory_id, owner_id)
            latest = history.latest_version(conn, memory_id)
            fields: dict[str, Any] = {
                name: getattr(value, "value", value)
                for name in ("content", "category", "subject", "importance", "scope")
                if (value := getattr(changes, name)) is not KEEP
            }
            if "subject" in fields:
                fields["subject_key"] = subject_key(fields["subject"])
            if text_key is not None:
                fields["text_key"] = text_key
            fields["updated_at"] = now_timestamp()
            assignments = [
                sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name))
                for name in fields
            ]
            if not isinstance(vector, _Keep):
                space = _space(conn)
                literal = None
                if vector is not None and space is not None:
                    literal = _checked_vector(vector, space)
                fields |= {
                    "embedding": literal,
                    "embedding_state": "pending" if literal is None else "ready",
                    "embedding_model": None if literal is None or space is None else space.model,
                }
                assignments += [
                    sql.SQL("embedding = {}::vector").format(sql.Placeholder("embedding")),
                    sql.SQL("embedding_state = {}").format(sql.Placeholder("embedding_state")),
                    sql.SQL("embedding_model = {}").format(sql.Placeholder("embedding_model")),
                ]
            row = _execute(
                conn,
                sql.SQL("UPDATE memories SET {} WHERE id = {} RETURNING {}").format(
                    sql.SQL(", ").join(assignments),
                    sql.Placeholder("id"),
                    sql.SQL(MEMORY_COLUMNS),
                ),
                {**fields, "id": memory_id},
            ).fetchone()
            assert row is not None
            history.record_version(conn, memory_id, latest, written, self.history_limit)
            return memory_from_row(row)

    # lookups inside a transaction, for HistoryRows
    def _visible_memory(self, conn: Connection, memory_id: int, viewer_id: int) -> MemoryRecord:
        return _get_memory(conn, memory_id, viewer_id)

    def _owned_memory(self, conn: Connection, memory_id: int, owner_id: int) -> MemoryRecord:
        return _owned(conn, memory_id, owner_id)

    def _profile_of(self, conn: Connection, agent_id: int) -> ProfileRecord:
        return _profile(conn, agent_id)

    def vector_search(
        self, viewer_id: int, vector: Vector, k: int, filters: MemoryFilter
    ) -> list[tuple[int, float]]:
        if k < 1:
            return []
        literal = vector_literal(vector)
        where, params = _filter_sql(viewer_id, filters)
        # ``embedding <=> q`` alone in ORDER BY, so the HNSW index can serve it; equal distances
        # are then ordered by id here, as the SQLite backend orders them. One statement: a vector
        # of another dimension than the column's is refused by pgvector (StoreError).
        rows = self._read(
            f"SELECT m.id, m.embedding <=> %(query)s::vector AS distance FROM memories m "
            f"WHERE m.embedding IS NOT NULL AND {where} "
            "ORDER BY m.embedding <=> %(query)s::vector LIMIT %(k)s",
            {**params, "query": literal, "k": k},
        )
        hits = sorted((float(distance), int(memory_id)) for memory_id, distance in rows)
        return [(memory_id, 1.0 - distance) for distance, memory_id in hits]

    def text_search(
        self,
        viewer_id: int,
        terms: Sequence[str],
        k: int,
        filters: MemoryFilter,
        *,
        any_term: bool = False,
    ) -> list[int]:
        """Visible matches passing the filters: best score first, then newer, then larger id.

        The score of a memory is the sum, over the terms, of ``ts_rank(fts, term, 1)`` (term
        frequency, divided by 1 + log of the document length). With ``any_term`` each term's part
        is weighted by its BM25 inverse document frequency, so a memory matching a rare term ranks
        above one matching a common term, as FTS5's bm25 ranks them: the document frequencies are
        counted over every match of the hive (all agents, as FTS5's are) in the same scan that
        ranks the viewer's matches; the hive's size is the number of memory ids issued (the id
        sequence: no count of the table). An AND query needs no weights: every match holds every
        term.

        GIN cannot hand matches over in rank order, so every visible match is ranked (about 30 ms
        for 15,000 matches); see docs/storage.md, "PostgreSQL".
        """
        words = search_terms(terms)
        if k <= 0 or not words:
            return []
        where, params = _filter_sql(viewer_id, filters)
        params |= {f"t{i}": word for i, word in enumerate(words)}
        queries = [
            sql.SQL("hivekeep_prefix_query({})").format(sql.Placeholder(f"t{i}"))
            for i in range(len(words))
        ]
        if any_term and len(words) > 1:
            statement = _weighted_any_term(queries, sql.SQL(where), int(k))
        else:
            score = sql.SQL(" + ").join(
                sql.SQL("ts_rank(m.fts, {}, 1)").format(query) for query in queries
            )
            statement = sql.SQL(
                "SELECT m.id FROM memories m WHERE m.fts @@ ({match}) AND {where} "
                "ORDER BY {score} DESC, m.created_at DESC, m.id DESC LIMIT {k}"
            ).format(
                match=sql.SQL(" && ").join(queries),
                where=sql.SQL(where),
                score=score,
                k=sql.Literal(int(k)),
            )
        rows = self._read(statement, params, prepare=False)
        return [int(row[0]) for row in rows]

    def vectors(self, viewer_id: int, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        if not ids:
            return {}
        rows = self._read(
            "SELECT id, embedding::real[] FROM memories WHERE id = ANY(%s) "
            "AND (agent_id = %s OR scope = 'shared') AND embedding IS NOT NULL",
            (list(ids), viewer_id),
        )
        return {int(i): np.asarray(values, dtype=np.float32) for i, values in rows}

    def fetch_memories(self, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not ids:
            return {}
        rows = self._read(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s) "
            "AND (agent_id = %s OR scope = 'shared')",
            (list(ids), viewer_id),
        )
        return {row[0]: memory_from_row(row) for row in rows}

    def list_memories(
        self, viewer_id: int, filters: MemoryFilter, limit: int, offset: int
    ) -> tuple[list[MemoryRecord], int]:
        where, params = _filter_sql(viewer_id, filters)
        with self._transaction() as conn:
            total = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params)
            count_row = total.fetchone()
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
                "ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s OFFSET %(offset)s",
                {**params, "limit": limit, "offset": offset},
            ).fetchall()
        return [memory_from_row(row) for row in rows], int(count_row[0]) if count_row else 0

    def mark_retrieved(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._transaction() as conn:
            conn.execute(
                "UPDATE memories m SET retrieval_count = m.retrieval_count + n.times, "
                "last_retrieved_at = %s FROM (SELECT id, count(*) AS times "
                "FROM unnest(%s::bigint[]) AS u(id) GROUP BY id) n WHERE m.id = n.id",
                (now_timestamp(), list(ids)),
            )

    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]:
        rows = self._read(
            "SELECT id, content, subject FROM memories WHERE embedding_state = 'pending' "
            "ORDER BY id LIMIT %s",
            (limit,),
        )
        return [PendingEmbedding(*row) for row in rows]

    def store_embedding(self, memory_id: int, content: str, vector: Vector) -> bool:
        with self._transaction() as conn:
            space = _space(conn)
            literal = None if space is None else _checked_vector(vector, space)
            cursor = _execute(
                conn,
                "UPDATE memories SET embedding = %s::vector, embedding_state = %s, "
                "embedding_model = %s WHERE id = %s AND content = %s",
                (
                    literal,
                    "pending" if literal is None else "ready",
                    None if space is None or literal is None else space.model,
                    memory_id,
                    content,
                ),
            )
            return cursor.rowcount > 0

    def count_pending(self) -> int:
        rows = self._read("SELECT count(*) FROM memories WHERE embedding_state = 'pending'")
        return int(rows[0][0])

    def memories_with_vectors(
        self, agent_id: int | None, *, after_id: int = 0, limit: int = 500
    ) -> list[tuple[MemoryRecord, npt.NDArray[np.float32] | None]]:
        author = "" if agent_id is None else " AND agent_id = %(agent)s"
        rows = self._read(
            f"SELECT {MEMORY_COLUMNS}, embedding::real[] FROM memories "
            f"WHERE id > %(after)s{author} ORDER BY id LIMIT %(limit)s",
            {"after": after_id, "agent": agent_id, "limit": limit},
        )
        return [
            (
                memory_from_row(row),
                None if row[16] is None else np.asarray(row[16], dtype=np.float32),
            )
            for row in rows
        ]

    # profiles ---------------------------------------------------------------------------------
    def get_profile(self, agent_id: int) -> ProfileRecord:
        with self._connection() as conn:
            return _profile(conn, agent_id)

    def modify_profile(
        self, agent_id: int, change: ProfileChange, *, manual: bool, written: Change = BY_AGENT
    ) -> ProfileRecord:
        now = now_timestamp()
        stamp = sql.Identifier("manually_edited_at" if manual else "last_rewrite_at")
        with self._transaction() as conn:
            locked = conn.execute(
                "SELECT 1 FROM profiles WHERE agent_id = %s FOR UPDATE", (agent_id,)
            ).fetchone()
            if locked is None:
                raise NotFound(f"No agent with id {agent_id}.")
            text, tokens = change(_profile(conn, agent_id))
            conn.execute(history.PROFILE_BEFORE, (agent_id,))
            conn.execute(
                sql.SQL(
                    "UPDATE profiles SET text = %s, tokens = %s, revision = revision + 1, "
                    "{} = %s, updated_at = %s WHERE agent_id = %s"
                ).format(stamp),
                (text, tokens, now, now, agent_id),
            )
            history.record_profile(conn, agent_id, written, self.history_limit)
            return _profile(conn, agent_id)

    def save_profile(
        self,
        agent_id: int,
        text: str,
        tokens: int,
        *,
        expected_revision: int,
        manual: bool,
        written: Change = BY_AGENT,
    ) -> ProfileRecord:
        now = now_timestamp()
        stamp = sql.Identifier("manually_edited_at" if manual else "last_rewrite_at")
        with self._transaction() as conn:
            conn.execute(history.PROFILE_BEFORE, (agent_id,))
            cursor = conn.execute(
                sql.SQL(
                    "UPDATE profiles SET text = %s, tokens = %s, revision = revision + 1, "
                    "{} = %s, updated_at = %s WHERE agent_id = %s AND revision = %s"
                ).format(stamp),
                (text, tokens, now, now, agent_id, expected_revision),
            )
            if cursor.rowcount == 0:
                current = _profile(conn, agent_id)
                raise ConflictError(
                    f"The profile changed since it was read (revision {expected_revision}, now "
                    f"{current.revision}). Re-read it and apply the edit again."
                )
            history.record_profile(conn, agent_id, written, self.history_limit)
            return _profile(conn, agent_id)

    # leases -----------------------------------------------------------------------------------
    def acquire_lease(self, name: str, holder: str, ttl_seconds: float) -> str | None:
        """Advisory lock on a connection of the lease's own (see ``leases.py``)."""
        if self._closed:
            raise StoreError("This hive is closed.")
        try:
            return self._leases.acquire(name, holder, ttl_seconds)
        except psycopg.OperationalError as exc:
            raise StoreError(f"Lease {name!r}: PostgreSQL connection failed: {exc}") from exc

    def release_lease(self, name: str, holder: str) -> None:
        self._leases.release(name, holder)


# helpers (all inside the caller's transaction) -------------------------------------------------
def _execute(
    conn: Connection, query: Any, params: Any = None, *, prepare: bool | None = None
) -> psycopg.Cursor[TupleRow]:
    """Execute, turning pgvector's and PostgreSQL's refusals of a value into ``StoreError``.

    ``prepare=False``: planned with the parameters' values every time (the full-text queries,
    whose ``hivekeep_prefix_query(term)`` must fold to a constant for the GIN index).
    """
    try:
        return conn.execute(query, params, prepare=prepare)
    except psycopg.errors.DataException as exc:
        raise StoreError(f"PostgreSQL refused a value: {exc}".rstrip()) from exc


def _agent(conn: Connection, key: int | str, *, lock: bool = False) -> AgentRecord:
    where = "id = %s" if isinstance(key, int) else "lower(name) = lower(%s)"
    row = conn.execute(
        f"SELECT id, name, role, created_at, updated_at FROM agents WHERE {where}"
        + (" FOR UPDATE" if lock else ""),
        (key,),
    ).fetchone()
    if row is None:
        raise AgentNotFound(f"No agent {key!r}.")
    return AgentRecord(*row)


def _space(conn: Connection) -> EmbeddingSpace | None:
    rows: dict[str, str] = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dim')"
        ).fetchall()
    )
    if "embedding_model" not in rows:
        return None
    return EmbeddingSpace(str(rows["embedding_model"]), int(rows["embedding_dim"]))


def _checked_vector(vector: Vector, space: EmbeddingSpace) -> str:
    shape = np.shape(vector)
    if shape != (space.dimension,):
        raise StoreError(
            f"The vector index refused a vector of shape {shape}: this hive's vectors have "
            f"{space.dimension} dimensions."
        )
    return vector_literal(vector)


def _fetch(conn: Connection, viewer_id: int, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s) "
        "AND (agent_id = %s OR scope = 'shared')",
        (list(ids), viewer_id),
    ).fetchall()
    return {row[0]: memory_from_row(row) for row in rows}


def _judge(conn: Connection, write: MemoryWrite, literal: str | None, dedup: DedupRule) -> Verdict:
    """The same text among the author's visible memories, else the dedup rule over the closest
    visible vectors at or above its floor (ties: the smaller id)."""
    author = write.memory.agent_id
    row = conn.execute(
        "SELECT id FROM memories WHERE text_key = %s AND (agent_id = %s OR scope = 'shared') "
        "ORDER BY id LIMIT 1",
        (write.text_key, author),
    ).fetchone()
    if row is not None:
        return Verdict(int(row[0]), ())
    if literal is None or dedup.floor > 1.0 + 1e-6:
        return Verdict(None, ())  # no vector, or a floor no cosine reaches
    rows = conn.execute(
        "SELECT id, content, embedding <=> %(q)s::vector AS distance FROM memories "
        "WHERE embedding IS NOT NULL AND (agent_id = %(author)s OR scope = 'shared') "
        "ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s",
        {"q": literal, "author": author, "k": NEIGHBOURS},
    ).fetchall()
    candidates = [
        Candidate(int(memory_id), content, 1.0 - float(distance))
        for memory_id, content, distance in rows
        if 1.0 - float(distance) >= dedup.floor
    ]
    return dedup.judge(write.memory.content, candidates)


def _footprint(conn: Connection, agent_id: int) -> AgentFootprint:
    _agent(conn, agent_id)
    row = conn.execute(
        "SELECT (SELECT count(*) FROM memories WHERE agent_id = %(a)s AND scope = 'private'), "
        "(SELECT count(*) FROM memories WHERE agent_id = %(a)s AND scope = 'shared'), "
        "(SELECT count(*) FROM conversations WHERE agent_id = %(a)s)",
        {"a": agent_id},
    ).fetchone()
    assert row is not None
    return AgentFootprint(int(row[0]), int(row[1]), int(row[2]))


def _get_memory(conn: Connection, memory_id: int, viewer_id: int) -> MemoryRecord:
    row = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories "
        "WHERE id = %s AND (agent_id = %s OR scope = 'shared')",
        (memory_id, viewer_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"No memory with id {memory_id} is visible to this agent.")
    return memory_from_row(row)


def _owned(conn: Connection, memory_id: int, owner_id: int) -> MemoryRecord:
    record = _get_memory(conn, memory_id, owner_id)
    if record.agent_id != owner_id and owner_id != PERSON:  # PERSON sees only shared ones
        raise NotFound(
            f"No memory with id {memory_id} belongs to this agent "
            "(shared memories can only be changed by their author)."
        )
    return record


def _filter_sql(viewer_id: int, filters: MemoryFilter) -> tuple[str, dict[str, Any]]:
    """WHERE clauses over ``m`` (memories) for visibility and filters (named placeholders)."""
    if filters.scope is Scope.SHARED:
        clauses = ["m.scope = 'shared'"]
    elif filters.scope is Scope.PRIVATE:
        clauses = ["m.agent_id = %(viewer)s AND m.scope = 'private'"]
    else:
        clauses = ["(m.agent_id = %(viewer)s OR m.scope = 'shared')"]
    if filters.own:
        clauses.append("m.agent_id = %(viewer)s")
    params: dict[str, Any] = {"viewer": viewer_id}
    if filters.category is not None:
        clauses.append("m.category = %(category)s")
        params["category"] = filters.category.value
    if filters.subject is not None:
        clauses.append("m.subject_key = %(subject)s")
        params["subject"] = subject_key(filters.subject)
    if filters.since is not None:
        clauses.append("m.created_at >= %(since)s")
        params["since"] = filters.since
    return " AND ".join(clauses), params


def _weighted_any_term(queries: Sequence[sql.Composable], where: sql.SQL, k: int) -> sql.Composed:
    """OR of the terms, each term's rank weighted by its BM25 idf, in one scan of the matches."""
    n = len(queries)
    numbers = [sql.Literal(i) for i in range(n)]
    found = sql.SQL(", ").join(
        sql.SQL("m.fts @@ {} AS h{}").format(query, i)
        for i, query in zip(numbers, queries, strict=True)
    )
    ranks = sql.SQL(", ").join(
        sql.SQL("CASE WHEN {} THEN ts_rank(m.fts, {}, 1) END AS r{}").format(where, query, i)
        for i, query in zip(numbers, queries, strict=True)
    )
    counts = sql.SQL(", ").join(
        sql.SQL("count(*) FILTER (WHERE h{0})::float8 AS n{0}").format(i) for i in numbers
    )
    idf = sql.SQL(", ").join(
        sql.SQL("ln(1.0::float8 + (n - n{0} + 0.5::float8) / (n{0} + 0.5::float8)) AS i{0}").format(
            i
        )
        for i in numbers
    )
    score = sql.SQL(" + ").join(sql.SQL("w.i{0} * hits.r{0}").format(i) for i in numbers)
    return sql.SQL(
        "WITH hits AS MATERIALIZED (SELECT m.id, m.created_at, {where} AS visible, {found}, "
        "{ranks} FROM memories m WHERE m.fts @@ ({any})), "
        "w AS (SELECT {idf} FROM (SELECT greatest(count(*), max(s.issued))::float8 AS n, "
        "{counts} FROM hits, (SELECT coalesce(pg_sequence_last_value("
        "pg_get_serial_sequence('memories', 'id')::regclass), 0) AS issued) s) c) "
        "SELECT hits.id FROM hits, w WHERE hits.visible "
        "ORDER BY {score} DESC, hits.created_at DESC, hits.id DESC LIMIT {k}"
    ).format(
        where=where,
        any=sql.SQL(" || ").join(queries),
        found=found,
        ranks=ranks,
        idf=idf,
        counts=counts,
        score=score,
        k=sql.Literal(k),
    )


def _profile(conn: Connection, agent_id: int) -> ProfileRecord:
    row = conn.execute(
        "SELECT agent_id, text, tokens, revision, last_rewrite_at, manually_edited_at, "
        "updated_at FROM profiles WHERE agent_id = %s",
        (agent_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"No agent with id {agent_id}.")
    return ProfileRecord(*row)
