"""``PostgresStore.insert_memories``: a batch judged and written in a few statements, whatever
its size.

Inside the insert lock (no other inserter runs meanwhile), the batch asks the database once for
what was there before it: one statement for the writes' exact-text matches, one for every
write's closest visible vectors (an exact join for small groups, one HNSW walk a write for large
ones; see ``_neighbours_before``). Each write is then judged in order against those rows and the
batch's own earlier rows (their vectors compared in numpy), which is the same set of candidates a
write-by-write insert would see: the ``NEIGHBOURS`` closest of (rows before the batch, earlier
rows of the batch) are among (the ``NEIGHBOURS`` closest rows before the batch, every earlier row
of the batch). The rows that stay are written with ids drawn from the identity beforehand, so a
write can name an earlier one of its batch as similar or as its duplicate: by one ``INSERT ...
SELECT FROM unnest(...)``, or for a large batch by ``COPY`` into a staging table, the HNSW index
built after the load when the batch is a large share of the table (``_write_rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.rows import TupleRow

from hivekeep.core.dedup import NEIGHBOURS, Candidate, DedupRule, Merge, Verdict
from hivekeep.core.subjects import subject_key
from hivekeep.core.text import now_timestamp
from hivekeep.store.base import PERSON, EmbeddingSpace, Inserted, MemoryWrite
from hivekeep.store.postgres.vectors import HNSW_INDEX, checked_vector
from hivekeep.store.rows import MEMORY_COLUMNS, memory_from_row
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.memories import MemoryRows, fetch, found_duplicate, link_similar, writing

Connection = psycopg.Connection[TupleRow]
Similarities = npt.NDArray[np.float64]

# Candidates the HNSW scan keeps for a write's neighbour lookup. Dedup needs the few rows at or
# above the rule's floor, which an HNSW walk reaches first; the search arm's larger setting
# (``store.HNSW_EF_SEARCH``) would cost each write about four times as much.
DEDUP_EF_SEARCH = 100
# A batch that adds this share of the rows the planner believes the table holds refreshes its
# statistics in the same transaction. Without it, a hive filled faster than autovacuum looks
# (every bulk import) is planned as the near-empty table it was: the viewer's rows estimated at
# a dozen, so a neighbour lookup or a search sorts every visible row exactly instead of walking
# HNSW (11 ms at 2,000 rows and growing with the table, against 1-3 ms). Past ten times a batch,
# autovacuum's own threshold (10 % of the table) keeps it current.
ANALYZE_SHARE = 0.1
# A batch of this many rows or more is written by COPY into a staging table and one INSERT from
# it (a fifth cheaper a row than one INSERT ... unnest of arrays at 1,000 rows; below this, the
# unnest statement saves COPY's three extra statements).
COPY_ROWS = 200
# A batch of COPY_ROWS or more that is this share of the table after it or more drops the HNSW
# index and builds it again after the load: building costs a quarter to an eighth of keeping it up
# row by row (0.31-0.44 ms a row against 1.7-2.5 ms, docs/benchmarks.md), so past this share
# the build is the cheaper of the two.
REBUILD_SHARE = 0.2
# How long the drop before that build waits for readers and writers of the table to finish.
DROP_WAIT = "500ms"
# Memory for that build (pgvector builds the graph in memory up to this, on disk past it); raised
# to this for the build's transaction only, never lowered.
BUILD_MEMORY_KB = 256 * 1024
EXACT_LIMIT = 2_000  # visible rows up to which a dedup lookup may sort them all exactly
_COLUMNS = (
    ("id", "bigint"),
    ("agent_id", "bigint"),
    ("author_name", "text"),
    ("content", "text"),
    ("text_key", "text"),
    ("category", "text"),
    ("subject", "text"),
    ("subject_key", "text"),
    ("importance", "integer"),
    ("scope", "text"),
    ("source_context", "text"),
    ("source", "text"),
    ("source_message_id", "bigint"),
    ("embedding", "vector"),
    ("embedding_state", "text"),
    ("embedding_model", "text"),
    ("retrieval_count", "integer"),
    ("last_retrieved_at", "text"),
    ("created_at", "text"),
    ("updated_at", "text"),
)
_INSERT = (
    f"INSERT INTO memories ({', '.join(name for name, _ in _COLUMNS)}) OVERRIDING SYSTEM VALUE "
    f"SELECT * FROM unnest({', '.join(f'%s::{kind}[]' for _, kind in _COLUMNS)}) "
    f"RETURNING {MEMORY_COLUMNS}"
)
_IDS = (  # the batch's ids, the planner's row count, and whether the HNSW index exists
    "SELECT nextval(pg_get_serial_sequence('memories', 'id')), "
    # a table never analyzed (-1: a restored dump, say) is counted, as far as the rules ask
    "(SELECT CASE WHEN reltuples >= 0 THEN reltuples ELSE (SELECT count(*) FROM "
    "(SELECT 1 FROM memories LIMIT %(cap)s) c) END FROM pg_class "
    "WHERE oid = 'memories'::regclass), "
    "to_regclass('memories_embedding') IS NOT NULL FROM generate_series(1, %(n)s)"
)
_STAGING = (
    f"CREATE TEMP TABLE memories_staging ({', '.join(f'{n} {t}' for n, t in _COLUMNS)}) "
    "ON COMMIT DROP"
)
_COPY = f"COPY memories_staging ({', '.join(name for name, _ in _COLUMNS)}) FROM STDIN"
_INSERT_STAGED = (
    f"INSERT INTO memories ({', '.join(name for name, _ in _COLUMNS)}) OVERRIDING SYSTEM VALUE "
    f"SELECT * FROM memories_staging ORDER BY id RETURNING {MEMORY_COLUMNS}"
)
_BUILD_MEMORY = (
    "SELECT set_config('maintenance_work_mem', greatest(setting::bigint, "
    f"{BUILD_MEMORY_KB})::text || 'kB', true) FROM pg_settings WHERE name = 'maintenance_work_mem'"
)
# The batch's lookups, one row per write: index, author, subject key, vector.
_WRITES = (
    "WITH q AS (SELECT * FROM unnest(%(i)s::int[], %(a)s::bigint[], %(s)s::text[], "
    "%(v)s::vector[]) AS q(i, a, s, v))"
)
_FOUND = "SELECT f.i, m.id, m.content, f.d, m.agent_id, m.scope = 'shared', m.updated_at FROM "
# Groups of few rows: every visible row of the batch's groups read once (its vector copied out of
# TOAST once: compared in place, a vector is fetched from TOAST again for every write it meets,
# three times the time at 20k) and compared with each write of its group by one join; the
# closest ``k`` a write at or under the floor's distance kept (ties: the smaller id), as the
# exact sort of one write keeps them.
_EXACT = (
    _WRITES + ", c AS MATERIALIZED (SELECT id, agent_id, scope = 'shared' AS shared, subject_key, "
    "subvector(embedding, 1, vector_dims(embedding)) AS e FROM memories "
    "WHERE embedding IS NOT NULL AND subject_key = ANY(%(s)s::text[]) "
    "AND (agent_id = ANY(%(a)s::bigint[]) OR scope = 'shared')) "
    + _FOUND
    + "(SELECT i, id, d, row_number() OVER (PARTITION BY i ORDER BY d, id) AS r "
    "FROM (SELECT q.i, c.id, c.e <=> q.v AS d FROM q JOIN c "
    "ON c.subject_key = q.s AND (c.agent_id = q.a OR c.shared)) x WHERE d <= %(most)s) f "
    "JOIN memories m ON m.id = f.id WHERE f.r <= %(k)s"
)
# Groups of many rows: each write walks HNSW (the subject filtered inside the scan, so other
# subjects' rows take no place), its closest ``k`` returned.
_WALK = (
    _WRITES + " " + _FOUND + "(SELECT q.i, n.id, n.d FROM q CROSS JOIN LATERAL (SELECT id, "
    "embedding <=> q.v AS d FROM memories WHERE embedding IS NOT NULL "
    "AND (agent_id = q.a OR scope = 'shared') AND subject_key = q.s "
    "ORDER BY embedding <=> q.v LIMIT %(k)s) n) f JOIN memories m ON m.id = f.id"
)
_WALK_SETTINGS = (
    "SELECT set_config('hk.saved', concat_ws(',', current_setting('hnsw.ef_search'), "
    "current_setting('enable_bitmapscan'), current_setting('enable_seqscan')), true), "
    "set_config('hnsw.ef_search', %s, true), set_config('enable_bitmapscan', 'off', true), "
    "set_config('enable_seqscan', 'off', true)"
)
_RESTORE = (  # back to the session's own settings, for the rest of the transaction
    "SELECT set_config('hnsw.ef_search', split_part(current_setting('hk.saved'), ',', 1), true), "
    "set_config('enable_bitmapscan', split_part(current_setting('hk.saved'), ',', 2), true), "
    "set_config('enable_seqscan', split_part(current_setting('hk.saved'), ',', 3), true)"
)
# How many rows of each (author, subject) group the author sees, counted up to ``cap`` (two
# bounded b-tree counts a group, one statement for the batch).
_VISIBLE = (
    "SELECT g.a, g.s, (SELECT count(*) FROM (SELECT 1 FROM memories WHERE agent_id = g.a "
    "AND subject_key = g.s LIMIT %(cap)s) own) + (SELECT count(*) FROM (SELECT 1 FROM memories "
    "WHERE scope = 'shared' AND subject_key = g.s AND agent_id IS DISTINCT FROM g.a "
    "LIMIT %(cap)s) shared) FROM unnest(%(a)s::bigint[], %(s)s::text[]) AS g(a, s)"
)


@dataclass
class _Kept:
    """A write of the batch that becomes a row: its id and the columns' values."""

    index: int
    id: int
    owner: int | None  # the stored agent_id (None: a deleted author's shared memory)
    shared: bool
    subject: str  # its subject key: only writes of the same subject are judged against it
    has_vector: bool
    values: tuple[Any, ...]
    verdict: Verdict

    def candidate(self, content: str, similarity: float, author: int) -> Candidate:
        return Candidate(
            self.id, content, similarity, self.owner == author, self.shared, self.values[-1]
        )


def insert_batch(
    s: Session,
    writes: Sequence[MemoryWrite],
    authors: Sequence[str],
    space: EmbeddingSpace | None,
    dedup: DedupRule,
    store: MemoryRows,
) -> list[Inserted]:
    """Judge and write ``writes`` (``authors``: each one's author name) inside the caller's
    transaction, which holds the insert lock. A merged write is applied by ``found_duplicate``
    (``store``: whose ``reword`` it calls) once the batch's rows exist, in order; a
    stored write is linked to the similar memories it lists."""
    conn: Connection = s.conn
    literals = [
        None if w.vector is None or space is None else checked_vector(w.vector, space)
        for w in writes
    ]
    earlier = _same_text_before(conn, writes)
    close = _neighbours_before(conn, writes, literals, dedup)
    cap = int(len(writes) / min(REBUILD_SHARE, ANALYZE_SHARE)) + 1
    rows = conn.execute(_IDS, {"n": len(writes), "cap": cap}).fetchall()
    ids, estimated, hnsw = [int(row[0]) for row in rows], float(rows[0][1]), bool(rows[0][2])
    units = _units(writes, literals)
    kept: list[_Kept] = []
    duplicates: dict[int, Verdict] = {}
    reworded: dict[int, tuple[str, str]] = {}  # id -> its text and date after the batch
    for index, write in enumerate(writes):
        memory, literal = write.memory, literals[index]
        before = earlier.get(index, []), close.get(index, [])
        verdict = _judge(index, writes, literal is not None, *before, units, kept, dedup, reworded)
        if verdict.duplicate_of is not None:
            duplicates[index] = verdict
            if verdict.merge is Merge.REWORD:
                stated = writing(memory).stated_at or now_timestamp()
                reworded[verdict.duplicate_of] = (memory.content, stated)
            continue
        now = now_timestamp()
        owner = None if memory.agent_id == PERSON else memory.agent_id
        values = (
            ids[len(kept)],
            owner,
            authors[index],
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
            memory.updated_at or memory.created_at or now,
        )
        shared = memory.scope.value == "shared"
        vector, subject = literal is not None, subject_key(memory.subject)
        kept.append(_Kept(index, ids[len(kept)], owner, shared, subject, vector, values, verdict))
    records = {
        int(row[0]): memory_from_row(row) for row in _write_rows(conn, kept, estimated, hnsw)
    }
    similar: dict[int, dict[int, Any]] = {}  # author -> id -> record
    for k in kept:
        if k.verdict.similar:
            author = writes[k.index].memory.agent_id
            similar.setdefault(author, {})[k.index] = k.verdict.similar
    found = {
        author: fetch(s, author, sorted({i for ids in wanted.values() for i in ids}))
        for author, wanted in similar.items()
    }
    results: list[Inserted | None] = [None] * len(writes)
    for index, verdict in duplicates.items():  # in order: a later write sees an earlier reword
        results[index] = found_duplicate(s, writes[index], verdict, store)
    links = []
    for k in kept:
        seen = found.get(writes[k.index].memory.agent_id, {})
        shown = tuple(seen[i] for i in k.verdict.similar if i in seen)
        links += [(k.id, m.id) for m in shown]
        results[k.index] = Inserted(records[k.id], False, shown)
    link_similar(s, links)
    return [result for result in results if result is not None]


def _write_rows(
    conn: Connection, kept: Sequence[_Kept], estimated: float, indexed: bool
) -> list[TupleRow]:
    """Insert the kept rows and return them (``MEMORY_COLUMNS``). A batch of ``COPY_ROWS`` or
    more goes through ``COPY`` into a staging table; one that is ``REBUILD_SHARE`` of the table
    after it or more drops the HNSW index (when ``indexed``: there is one) first and
    builds it again after the load, in this transaction."""
    if not kept:
        return []
    large = len(kept) >= COPY_ROWS and len(kept) >= REBUILD_SHARE * (estimated + len(kept))
    rebuild = indexed and large and _dropped_index(conn)
    if len(kept) >= COPY_ROWS:
        conn.execute(_STAGING)
        with conn.cursor().copy(_COPY) as copy:
            for k in kept:
                copy.write_row(k.values)
        rows = conn.execute(_INSERT_STAGED).fetchall()
        conn.execute("DROP TABLE memories_staging")
    else:
        columns = [list(column) for column in zip(*(k.values for k in kept), strict=True)]
        rows = conn.execute(_INSERT, columns).fetchall()
    if rebuild:
        conn.execute(_BUILD_MEMORY)
        conn.execute(HNSW_INDEX)
    if len(kept) >= ANALYZE_SHARE * max(estimated, 1.0):
        conn.execute("ANALYZE memories")
    return rows


def _dropped_index(conn: Connection) -> bool:
    """Drop the HNSW index for this transaction, if its lock comes within ``DROP_WAIT``.

    ``DROP INDEX`` holds ACCESS EXCLUSIVE on ``memories`` until the transaction ends: a concurrent
    reader waits for the commit and then finds every row and the index again; none reads the
    table without it. While the drop waits for a transaction still reading the table, new
    readers queue behind it, so it waits a short while only, and under PostgreSQL's deadlock
    check (1 s): a transaction that wrote ``memories`` and now waits for the insert lock would
    otherwise deadlock with it. On time out the batch keeps the index up row by row instead."""
    row = conn.execute(
        "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
        (DROP_WAIT,),
    ).fetchone()
    assert row is not None
    try:
        with conn.transaction():  # a savepoint: a drop that timed out is undone alone
            conn.execute("DROP INDEX memories_embedding")
        dropped = True
    except psycopg.errors.LockNotAvailable:
        dropped = False
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (row[0],))
    return dropped


def _units(writes: Sequence[MemoryWrite], literals: Sequence[str | None]) -> Similarities:
    """The cosine of every pair of the batch's vectors (rows without a vector: zeros)."""
    with_vector = [i for i, literal in enumerate(literals) if literal is not None]
    if not with_vector:
        return np.zeros((len(writes), len(writes)))
    first = np.asarray(writes[with_vector[0]].vector, dtype=np.float64)
    rows = np.zeros((len(writes), first.shape[0]))
    for i in with_vector:
        rows[i] = np.asarray(writes[i].vector, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    cosines: Similarities = rows @ rows.T
    return cosines


def _same_text_before(
    conn: Connection, writes: Sequence[MemoryWrite]
) -> dict[int, list[Candidate]]:
    """Write index -> the memories from before the batch, visible to its author, with the same
    text key and subject (one statement for the batch; oldest first, at most ``NEIGHBOURS``), as
    candidates of similarity 1."""
    keys = sorted({w.text_key for w in writes})
    rows = conn.execute(
        "SELECT text_key, agent_id, scope = 'shared', id, subject_key, content, updated_at "
        "FROM memories WHERE text_key = ANY(%s) ORDER BY id",
        (keys,),
    ).fetchall()
    found: dict[int, list[Candidate]] = {}
    for index, write in enumerate(writes):
        author, subject = write.memory.agent_id, subject_key(write.memory.subject)
        same = found.setdefault(index, [])
        for key, owner, shared, memory_id, row_subject, content, stated in rows:
            if key == write.text_key and (shared or owner == author) and row_subject == subject:
                mine = owner == author
                same.append(Candidate(int(memory_id), content, 1.0, mine, shared, stated))
        del same[NEIGHBOURS:]
    return found


def _neighbours_before(
    conn: Connection,
    writes: Sequence[MemoryWrite],
    literals: Sequence[str | None],
    dedup: DedupRule,
) -> dict[int, list[Candidate]]:
    """Write index -> the ``NEIGHBOURS`` closest visible vectors of the write's subject from before
    the batch at or above the rule's floor, for the whole batch in at most two statements (one
    round trip for the counts, one for the lookups): the exact join for the (author, subject)
    groups of at most ``EXACT_LIMIT`` visible rows, and one HNSW walk a write for the larger."""
    if dedup.floor > 1.0 + 1e-6:
        return {}  # a floor no cosine reaches
    asked = [i for i, literal in enumerate(literals) if literal is not None]
    if not asked:
        return {}
    groups = sorted({_group(writes[i]) for i in asked})
    # The planner prices a cosine distance like an addition, so up to some ten thousand visible
    # rows it sorts them all exactly rather than walk HNSW (6 ms at 3,000 rows, growing, against
    # 1.5 ms). An author who sees more than EXACT_LIMIT rows of the subject gets the walk; one
    # who sees fewer gets the exact sort, always: a walk filtered to a subject of a few rows goes
    # on to ``max_scan_tuples`` before it gives up, and could spend them on other rows and miss
    # a duplicate.
    rows = conn.execute(_VISIBLE, _columns(groups, ("a", "s")) | {"cap": EXACT_LIMIT + 1})
    walked = {(int(a), str(g)) for a, g, n in rows.fetchall() if n > EXACT_LIMIT}
    exact = [i for i in asked if _group(writes[i]) not in walked]
    walks = [i for i in asked if _group(writes[i]) in walked]
    cursors = []
    with conn.pipeline():
        if exact:
            cursors.append(
                conn.execute(
                    _EXACT,
                    _batch(writes, literals, exact)
                    | {"k": NEIGHBOURS, "most": 1.0 - dedup.floor + 1e-6},
                )
            )
        if walks:  # the walk's settings for this statement only, then the session's own again
            conn.execute(_WALK_SETTINGS, (str(DEDUP_EF_SEARCH),))
            cursors.append(conn.execute(_WALK, _batch(writes, literals, walks) | {"k": NEIGHBOURS}))
            conn.execute(_RESTORE)
    found: dict[int, list[Candidate]] = {i: [] for i in asked}
    for cursor in cursors:
        for index, memory_id, content, d, owner, shared, stated in cursor.fetchall():
            mine, similarity = owner == writes[index].memory.agent_id, 1.0 - float(d)
            if similarity >= dedup.floor:
                found[index].append(
                    Candidate(int(memory_id), content, similarity, mine, shared, stated)
                )
    return found


def _group(write: MemoryWrite) -> tuple[int, str]:
    """The rows a write's neighbour lookup may return: its author's, of its subject."""
    return write.memory.agent_id, subject_key(write.memory.subject)


def _columns(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [row[n] for row in rows] for n, name in enumerate(names)}


def _batch(
    writes: Sequence[MemoryWrite], literals: Sequence[str | None], chosen: Sequence[int]
) -> dict[str, list[Any]]:
    """The writes' lookup parameters, as arrays for ``unnest``."""
    return _columns([(i, *_group(writes[i]), literals[i]) for i in chosen], ("i", "a", "s", "v"))


def _judge(
    index: int,
    writes: Sequence[MemoryWrite],
    has_vector: bool,
    same_before: list[Candidate],
    close_before: list[Candidate],
    cosines: Similarities,
    kept: Sequence[_Kept],
    dedup: DedupRule,
    reworded: dict[int, tuple[str, str]],
) -> Verdict:
    """As a write-by-write insert judges: the rule over the visible memories with the same text
    key (similarity 1) and the ``NEIGHBOURS`` closest visible vectors at or above the floor
    (ties: the smaller id), rows from before the batch and the batch's earlier rows alike, of
    the write's subject only, each with the text an earlier write of the batch gave it."""
    write = writes[index]
    author, subject = write.memory.agent_id, subject_key(write.memory.subject)
    mine = [k for k in kept if (k.shared or k.owner == author) and k.subject == subject]
    same = list(same_before)
    same += [
        k.candidate(writes[k.index].memory.content, 1.0, author)
        for k in mine
        if writes[k.index].text_key == write.text_key
    ]
    candidates = []
    if has_vector and dedup.floor <= 1.0 + 1e-6:
        candidates = list(close_before)
        candidates += [
            k.candidate(writes[k.index].memory.content, float(cosines[index, k.index]), author)
            for k in mine
            if k.has_vector and cosines[index, k.index] >= dedup.floor
        ]
        candidates.sort(key=lambda c: (-c.similarity, c.id))
        candidates = candidates[:NEIGHBOURS]
    seen = {c.id for c in same}
    judged = [
        replace(c, content=reworded[c.id][0], stated_at=reworded[c.id][1])
        if c.id in reworded
        else c
        for c in [*same, *(c for c in candidates if c.id not in seen)]
    ]
    return dedup.judge(writing(write.memory), judged)
