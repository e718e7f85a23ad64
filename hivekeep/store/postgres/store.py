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

from hivekeep.core.bounds import MAX_COUNT
from hivekeep.core.dedup import DedupRule
from hivekeep.core.text import now_timestamp
from hivekeep.errors import StoreError
from hivekeep.store.base import (
    HISTORY_LIMIT,
    EmbeddingSpace,
    Inserted,
    MemoryFilter,
    MemoryRecord,
    MemoryWrite,
    Vector,
    _Keep,
)
from hivekeep.store.postgres import history, migrations
from hivekeep.store.postgres.dialect import POSTGRES
from hivekeep.store.postgres.history import HistoryRows
from hivekeep.store.postgres.inserts import insert_batch
from hivekeep.store.postgres.leases import AdvisoryLeases
from hivekeep.store.postgres.vectors import (
    HNSW_INDEX,
    QueryVector,
    checked_vector,
    send_vectors_binary,
    unpacked,
)
from hivekeep.store.rows import MEMORY_COLUMNS, author_of, memory_from_row
from hivekeep.store.sql import agents
from hivekeep.store.sql.agents import AgentRows
from hivekeep.store.sql.conversations import ConversationRows
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.history import VersionRows
from hivekeep.store.sql.memories import MemoryRows, filter_sql
from hivekeep.store.sql.pending import PendingRows
from hivekeep.store.sql.tokens import TokenRows
from hivekeep.store.target import redact_url

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


class PostgresStore(
    VersionRows, AgentRows, MemoryRows, HistoryRows, ConversationRows, TokenRows, PendingRows
):
    """``Store`` on a PostgreSQL database with pgvector; see the module docstring.

    >>> store = PostgresStore("postgresql://hive@db.internal/hivekeep")   # doctest: +SKIP
    """

    _dialect = POSTGRES

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
                f"Cannot open the PostgreSQL hive at {redact_url(url)}: {exc}".rstrip()
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
                f"Cannot connect to PostgreSQL at {redact_url(url)} "
                f"within {CONNECT_TIMEOUT_S:.0f} s."
            ) from exc
        self._leases = AdvisoryLeases(url, CONNECT_TIMEOUT_S)
        self._local = threading.local()  # .connection: this thread's, inside transaction()
        self._closed = False

    @staticmethod
    def _configure(conn: Connection) -> None:
        conn.execute("SET hnsw.iterative_scan = strict_order")
        conn.execute(f"SET hnsw.max_scan_tuples = {HNSW_MAX_SCAN_TUPLES}")
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")
        send_vectors_binary(conn)

    def data_version(self) -> int | None:
        """None: on PostgreSQL other processes' events arrive through ``EventRelay`` instead."""
        return None

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

    @contextmanager
    def _atomic(self) -> Iterator[Session]:
        """``_transaction()`` as the shared SQL (``hivekeep/store/sql``) takes it."""
        with self._transaction() as conn:
            yield _session(conn)

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """``_connection()`` (autocommit: each statement its own transaction) as a session."""
        with self._connection() as conn:
            yield _session(conn)

    def _read(
        self, query: Any, params: Any = None, *, prepare: bool | None = None
    ) -> list[TupleRow]:
        """The rows of one statement (one statement is one transaction: no BEGIN needed)."""
        with self._connection() as conn:
            return _execute(conn, query, params, prepare=prepare).fetchall()

    # agents -----------------------------------------------------------------------------------
    # embedding space --------------------------------------------------------------------------
    # memories ---------------------------------------------------------------------------------
    def insert_memories(self, writes: Sequence[MemoryWrite], *, dedup: DedupRule) -> list[Inserted]:
        """The batch judged and written in a few round trips (``inserts.py``)."""
        if not writes:
            return []
        with self._transaction() as conn:
            # One inserter at a time, as SQLite's single writer: the duplicate check sees every
            # memory committed before, and the batch's own earlier rows.
            conn.execute(
                "SELECT pg_advisory_xact_lock("
                "hashtextextended(current_schema() || ':hivekeep:insert', 0))"
            )
            s = _session(conn)
            authors: dict[int, str] = {}
            names = [author_of(w.memory, authors, lambda key: agents.agent(s, key)) for w in writes]
            return insert_batch(s, writes, names, agents.space(s), dedup, self)

    def _forget_agent(self, s: Session, agent_id: int) -> None:
        history.forget_agent_history(s.conn, agent_id)

    def _reset_vectors(self, s: Session, space: EmbeddingSpace) -> None:
        if space.dimension > 16000:
            raise StoreError(f"Embedding dimension {space.dimension} is over pgvector's 16000.")
        s.conn.execute("DROP INDEX IF EXISTS memories_embedding")
        # Every vector goes (USING NULL): the table is rewritten once, for the new dimension.
        s.conn.execute(
            sql.SQL(
                "ALTER TABLE memories ALTER COLUMN embedding TYPE vector({0}) "
                "USING NULL::vector({0})"
            ).format(sql.Literal(int(space.dimension)))
        )
        if space.dimension <= HNSW_MAX_DIMENSION:
            s.conn.execute(HNSW_INDEX)

    def _vector_columns(
        self, s: Session, fields: dict[str, Any], vector: Vector | _Keep | None
    ) -> list[str]:
        if isinstance(vector, _Keep):
            return []
        space = agents.space(s)
        literal = None
        if vector is not None and space is not None:
            literal = checked_vector(vector, space)
        fields |= {
            "embedding": literal,
            "embedding_state": "pending" if literal is None else "ready",
            "embedding_model": None if literal is None or space is None else space.model,
        }
        return [
            "embedding = :embedding::vector",
            "embedding_state = :embedding_state",
            "embedding_model = :embedding_model",
        ]

    def vector_search(
        self,
        viewer_id: int,
        vector: Vector,
        k: int,
        filters: MemoryFilter,
        *,
        toward: Sequence[int] = (),
        weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        if k < 1:
            return []
        query = QueryVector.of(vector)
        where, params = filter_sql(POSTGRES, viewer_id, filters)
        params |= {"query": query, "k": k}
        searched = "%(query)b"
        if weight and toward:  # the moved vector: the query itself when none of them is visible
            params |= {"toward": list(toward), "weight": QueryVector.filled(weight, query)}
            searched = (
                "(SELECT coalesce(l2_normalize(%(query)b + avg(f.embedding) * %(weight)b), "
                "%(query)b) FROM memories f WHERE f.id = ANY(%(toward)s) "
                "AND (f.agent_id = %(viewer)s OR f.scope = 'shared') AND f.embedding IS NOT NULL)"
            )
        # ``embedding <=> q`` alone in ORDER BY, so the HNSW index can serve it (a subquery is
        # a value computed once, which the index takes as well); equal distances are then
        # ordered by id here, as the SQLite backend orders them. One statement: a vector of
        # another dimension than the column's is refused by pgvector (StoreError).
        rows = self._read(
            f"WITH s AS MATERIALIZED (SELECT {searched} AS v) "
            "SELECT m.id, m.embedding <=> (SELECT v FROM s) AS distance, "
            "m.embedding <=> %(query)b AS asked FROM memories m "
            f"WHERE m.embedding IS NOT NULL AND {where} "
            "ORDER BY m.embedding <=> (SELECT v FROM s) LIMIT %(k)s",
            params,
        )
        hits = sorted((float(distance), int(i), float(asked)) for i, distance, asked in rows)
        return [(memory_id, 1.0 - asked) for _, memory_id, asked in hits]

    def vectors(self, viewer_id: int, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        if not ids:
            return {}
        rows = self._read(
            "SELECT id, vector_send(embedding) FROM memories WHERE id = ANY(%s) "
            "AND (agent_id = %s OR scope = 'shared') AND embedding IS NOT NULL",
            (list(ids), viewer_id),
        )
        return {int(i): unpacked(sent) for i, sent in rows}

    def mark_retrieved(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._connection() as conn:  # one statement: its own transaction, one round trip
            conn.execute(
                # saturates: retrieval_count is a 32-bit integer column (core/bounds.py)
                "UPDATE memories m SET retrieval_count = "
                f"least(m.retrieval_count + n.times, {MAX_COUNT}), "
                "last_retrieved_at = %s FROM (SELECT id, count(*) AS times "
                "FROM unnest(%s::bigint[]) AS u(id) GROUP BY id) n WHERE m.id = n.id",
                (now_timestamp(), list(ids)),
            )

    def store_embedding(self, memory_id: int, content: str, vector: Vector) -> bool:
        with self._transaction() as conn:
            space = agents.space(_session(conn))
            literal = None if space is None else checked_vector(vector, space)
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
def _session(conn: Connection) -> Session:
    return Session(conn, POSTGRES)


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
