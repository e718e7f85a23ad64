"""An in-process copy of the vector index: exact KNN by matrix products, kept coherent by a log.

sqlite-vec 0.1.x from PyPI scans without SIMD (about 80 ms for 100k 384-d vectors, where numpy's
matrix-vector product takes about 8 ms). ``memory_vec`` stays the durable index: every write goes
there, in the writer's transaction. This cache holds the same float32 vectors and filter columns in
one matrix per audience (an agent's private memories, or 0 for shared ones), so a search multiplies
only the rows its viewer may see. In a hive of ten agents that is a tenth of the file: measured at
100k rows, 0.75 ms for one agent's 10k-row matrix against 4.9 ms to gather the same rows from a
single matrix by a mask. Filters (category, subject, since) are boolean masks over those rows.

Coherence across processes: every change to ``memory_vec`` appends the memory's id to
``vector_log`` in the same transaction (``append_log``). Before a read the cache asks for
``max(seq)``, one indexed lookup; when it moved, the cache re-reads the rows named since its own
position (a missing row was deleted). It reloads everything instead when the embedding space was
reset (``RESET``), when the log was pruned past its position, or when more than a tenth of its
rows changed (re-reading a row costs about ten times what a full scan costs per row). A writer's
own changes are applied at once, inside its transaction; a rollback drops the cache, which then
reloads on the next read.

Bounded: an audience's matrix is loaded on the first read that needs it (a search, a batch's
dedup, the vectors of some hits), and matrices are evicted least recently used once the cache
holds more than its budget of bytes (``HIVEKEEP_VECTOR_CACHE_MB``, ``DEFAULT_BUDGET_MB``), so a
hive of many tenants holds those recently searched, not all. A read keeps the matrices it needs
(the viewer's and the shared one) even past the budget. A change to a memory whose audience is not
loaded is skipped: the audience's load reads the file as it is then. A load reads the audience's
rows from ``memories`` (indexed by owner and by scope), then their vectors: by id when they are a
small share of ``memory_vec``, by one scan of it otherwise.

Pruning rule: when ``seq`` reaches a multiple of ``PRUNE_EVERY``, entries older than the newest
``LOG_KEEP`` are deleted and the cut is recorded in ``meta`` (``vector_log_pruned``), so the log
never holds more than ``LOG_KEEP + PRUNE_EVERY`` entries. A cache further behind than that reloads.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hivekeep.core.subjects import subject_key
from hivekeep.errors import StoreError
from hivekeep.metrics import track_vector_cache
from hivekeep.store.base import MemoryFilter, Vector
from hivekeep.store.vector_budget import DEFAULT_BUDGET_MB
from hivekeep.store.vector_matrix import CATEGORY_CODES, Matrix
from hivekeep.types import Scope

RESET = 0  # a log entry naming no memory: the embedding space was reset
LOG_KEEP = 10_000
PRUNE_EVERY = 1_000
REPLAY_LIMIT = 1_000  # changed rows re-read one by one; past this and a tenth of the cache, reload
_PRUNED_KEY = "vector_log_pruned"
# Vectors from sqlite-vec, filter columns from their memories (written in the same transactions,
# so equal to memory_vec's metadata columns; reading those from vec0 doubles the time of a load).
# A deleted author's shared memory has no owner (NULL): 0, everyone, as for any shared memory.
_ROWS = (
    "SELECT v.memory_id, v.embedding, coalesce(m.agent_id, 0), m.scope, m.category, m.subject, "
    "m.created_at "
    "FROM memory_vec v JOIN memories m ON m.id = v.memory_id{where}"
)
# One audience's filter columns (``audience``): an agent's private memories, or the shared ones
# (those of no owner too); then its vectors, streamed in chunks straight into the preallocated
# matrix, so the raw vectors are held once (bench/experiments/vector_cache_memory.py).
_PRIVATE = (
    "SELECT id, category, subject, created_at FROM memories "
    "WHERE agent_id = ? AND scope <> 'shared'"
)
_SHARED = (
    "SELECT id, category, subject, created_at FROM memories "
    "WHERE scope = 'shared' OR agent_id IS NULL"
)
_VECTORS = "SELECT memory_id, embedding FROM memory_vec"
_VECTOR = "SELECT memory_id, embedding, audience FROM memory_vec WHERE memory_id = ?"
BY_ID_BELOW = 0.1  # an audience under this share of the ids reads its vectors by id
ID_MAP_BYTES = 80  # the cache's own entry per row (memory id -> audience), as SLOT_BYTES
LOAD_CHUNK = 4096


def vectors_by_id(conn: Any, ids: Iterable[int]) -> Iterator[tuple[int, bytes, int]]:
    """(memory id, vector blob, audience) of each of ``ids`` that ``memory_vec`` holds, one
    point lookup each. sqlite-vec answers ``memory_id IN (...)`` by reading the whole table: 0.49 s
    for 100 ids at a million rows, against 1.2 ms for the 100 lookups (and a tenant's first
    search asks for its 100 that way)."""
    for memory_id in ids:
        row = conn.execute(_VECTOR, (memory_id,)).fetchone()
        if row is not None:
            yield int(row[0]), row[1], int(row[2])


@dataclass(frozen=True)
class VectorRow:
    """One row of ``memory_vec``: a memory's vector and the columns a search filters on."""

    memory_id: int
    vector: npt.NDArray[np.float32]
    audience: int  # the owner's id for a private memory, 0 for a shared one
    category: str
    subject: str  # trimmed and case-folded, as filters compare it
    created_at: str


def audience(agent_id: int | None, scope: Scope) -> int:
    """Who may see a memory: its owner's id when private, 0 (everyone) when shared (a deleted
    author's memory, owner None, is always shared)."""
    return 0 if scope is Scope.SHARED or agent_id is None else agent_id


def append_log(conn: Any, memory_id: int) -> int:
    """Record a change of ``memory_vec`` (in the caller's transaction); prune by the rule above."""
    conn.execute("INSERT INTO vector_log(memory_id) VALUES (?)", (memory_id,))
    seq = int(conn.last_insert_rowid())
    if seq % PRUNE_EVERY == 0 and seq > LOG_KEEP:
        cut = seq - LOG_KEEP
        conn.execute("DELETE FROM vector_log WHERE seq <= ?", (cut,))
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_PRUNED_KEY, str(cut))
        )
    return seq


def _head(conn: Any) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()[0])


class VectorCache:
    """Every vector of ``memory_vec`` in memory, grouped by audience; see the module docstring.

    Not thread-safe by itself: its store calls it under the connection's lock.
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_MB << 20) -> None:
        self.budget = budget_bytes
        self._position: int | None = None  # last log entry applied; None: not loaded
        self._dimension: int | None = None
        self._matrices: OrderedDict[int, Matrix] = OrderedDict()  # loaded, least recent first
        self._bytes: dict[int, int] = {}  # audience -> its matrix's bytes when last counted
        self.nbytes = 0  # what the loaded matrices hold, their id maps included
        self._where: dict[int, int] = {}  # memory id -> audience, for the loaded audiences
        self._subjects: dict[str, int] = {}
        self._dirty = False  # holds changes of a transaction that has not committed yet
        self.loads = 0  # full resets so far (tests and benchmarks read it)
        self.audience_loads = 0  # audiences loaded so far
        track_vector_cache(self)  # hivekeep_vector_cache_vectors

    def __len__(self) -> int:
        return len(self._where)

    # coherence ----------------------------------------------------------------------------------
    def refresh(self, conn: Any) -> None:
        """Catch up with the log; one indexed query when nothing changed."""
        if self._position is not None and _head(conn) == self._position:
            return
        writing = conn.in_transaction
        try:
            with conn:  # one snapshot for the log and the rows it names
                self._catch_up(conn, _head(conn))
        except BaseException:
            self.invalidate()
            raise
        self._dirty = self._dirty or writing

    def _catch_up(self, conn: Any, head: int) -> None:
        position = self._position
        if position is None or head < position or position < self._pruned(conn):
            self._load(conn, head)
            return
        changed = {
            int(row[0])
            for row in conn.execute(
                "SELECT memory_id FROM vector_log WHERE seq > ? AND seq <= ?", (position, head)
            )
        }
        if RESET in changed or len(changed) > max(REPLAY_LIMIT, len(self) // 10):
            self._load(conn, head)
            return
        self._reread(conn, changed)
        self._position = head

    def changed(self, conn: Any, seq: int, memory_id: int, row: VectorRow | None) -> None:
        """A change this process just logged as ``seq``; ``row`` None: re-read it from the file."""
        self._dirty = True
        if self._position is None:
            return  # not loaded: the next read loads everything
        if memory_id == RESET:
            self.invalidate()
        elif seq != self._position + 1:
            self.refresh(conn)  # another process wrote since the last read: replay it all
        else:
            if row is None:
                self._reread(conn, [memory_id])
            else:
                self._put(row)
            self._position = seq

    def committed(self) -> None:
        self._dirty = False

    def rolled_back(self) -> None:
        """The transaction was undone: drop what it applied (everything, at worst)."""
        if self._dirty:
            self.invalidate()

    def invalidate(self) -> None:
        self._position = None
        self._dimension = None
        self._matrices = OrderedDict()
        self._bytes = {}
        self.nbytes = 0
        self._where = {}
        self._subjects = {}
        self._dirty = False

    def _pruned(self, conn: Any) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_PRUNED_KEY,)).fetchone()
        return int(row[0]) if row else 0

    def _load(self, conn: Any, head: int) -> None:
        """Start over at ``head``: the embedding space, and no audience loaded yet."""
        self.invalidate()
        self.loads += 1
        space = conn.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
        table = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").fetchone()
        if space is not None and table is not None:
            self._dimension = int(space[0])
        self._position = head

    def _load_audience(self, conn: Any, audience: int, dimension: int) -> Matrix:
        """One audience's rows as they are in the file (see the module docstring)."""
        self.audience_loads += 1
        query = _PRIVATE if audience else _SHARED
        columns = conn.execute(query, (audience,) if audience else ()).fetchall()
        if not columns:
            return Matrix(dimension, capacity=0)
        ids, categories, subjects, created = zip(*columns, strict=True)
        row_of = {memory_id: row for row, memory_id in enumerate(ids)}
        vectors = np.empty((len(ids), dimension), dtype=np.float32)
        found = np.zeros(len(ids), dtype=bool)
        for chunk in self._vector_chunks(conn, ids):
            known = [(row_of[r[0]], r[1]) for r in chunk if r[0] in row_of]
            if known:
                rows = np.fromiter((row for row, _ in known), dtype=np.int64, count=len(known))
                block = np.frombuffer(b"".join(blob for _, blob in known), dtype="<f4")
                vectors[rows] = block.reshape(-1, dimension)
                found[rows] = True
        keep = np.flatnonzero(found)  # a memory waiting for its vector has no row
        memory_ids = np.asarray(ids, dtype=np.int64)[keep]
        matrix = Matrix.from_arrays(
            vectors if len(keep) == len(ids) else vectors[keep],
            memory_ids,
            np.asarray([CATEGORY_CODES[categories[i]] for i in keep], dtype=np.int8),
            np.asarray(
                [self._subject_code(subject_key(subjects[i])) for i in keep], dtype=np.int32
            ),
            np.asarray([created[i] for i in keep], dtype=str),
        )
        self._where.update(dict.fromkeys(memory_ids.tolist(), audience))
        return matrix

    @staticmethod
    def _vector_chunks(conn: Any, ids: Sequence[int]) -> Iterator[list[Any]]:
        """(memory id, vector blob) rows holding those of ``ids``, in chunks: by id for a small
        share of the file (a lookup costs about ten rows of a scan), else the whole table."""
        newest = conn.execute("SELECT max(id) FROM memories").fetchone()[0] or 0
        if len(ids) < BY_ID_BELOW * newest:
            found = vectors_by_id(conn, ids)
            while chunk := [row[:2] for row in itertools.islice(found, LOAD_CHUNK)]:
                yield chunk
            return
        cursor = conn.execute(_VECTORS)
        while chunk := list(itertools.islice(cursor, LOAD_CHUNK)):
            yield chunk

    def _counted(self, audience: int) -> None:
        """Bring ``nbytes`` up to date with one audience's matrix."""
        matrix = self._matrices.get(audience)
        now = 0 if matrix is None else matrix.nbytes + ID_MAP_BYTES * len(matrix)
        self.nbytes += now - self._bytes.pop(audience, 0)
        if matrix is not None:
            self._bytes[audience] = now

    def _evict(self, audience: int) -> None:
        for memory_id in self._matrices.pop(audience).memory_ids():
            del self._where[memory_id]
        self._counted(audience)

    def _audiences(self, conn: Any, viewer_id: int) -> list[Matrix]:
        """The matrices a viewer may see (its own, the shared one), loaded if they were not;
        then the least recently used others go while the cache holds more than its budget."""
        if self._dimension is None:
            return []
        wanted = list(dict.fromkeys((viewer_id, 0)))
        for audience in wanted:
            if audience in self._matrices:
                self._matrices.move_to_end(audience)
            else:
                self._matrices[audience] = self._load_audience(conn, audience, self._dimension)
                self._counted(audience)
        while self.nbytes > self.budget and len(self._matrices) > len(wanted):
            oldest = next(iter(self._matrices))
            if oldest in wanted:  # read by this viewer: most recent, so never first
                break
            self._evict(oldest)
        return [matrix for a in wanted if len(matrix := self._matrices[a])]

    def _reread(self, conn: Any, memory_ids: Iterable[int]) -> None:
        wanted = list(memory_ids)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            found = {
                row[0]: row
                for row in conn.execute(
                    _ROWS.format(where=f" WHERE v.memory_id IN ({marks})"), chunk
                )
            }
            for memory_id in chunk:
                row = found.get(memory_id)
                if row is None:
                    self._remove(memory_id)
                else:
                    vector = np.frombuffer(row[1], dtype="<f4").astype(np.float32)
                    agent_id, scope, category, subject, created_at = row[2:]
                    self._put(
                        VectorRow(
                            memory_id,
                            vector,
                            audience(agent_id, Scope(scope)),
                            category,
                            subject_key(subject),
                            created_at,
                        )
                    )

    # rows ---------------------------------------------------------------------------------------
    def _subject_code(self, subject: str) -> int:
        return self._subjects.setdefault(subject, len(self._subjects))

    def _put(self, row: VectorRow) -> None:
        if self._dimension is None:
            self._dimension = len(row.vector)
        if self._where.get(row.memory_id) != row.audience:
            self._remove(row.memory_id)
        matrix = self._matrices.get(row.audience)
        if matrix is None:  # not loaded: its load will read the row from the file
            return
        matrix.put(
            row.memory_id,
            row.vector,
            CATEGORY_CODES[row.category],
            self._subject_code(row.subject),
            row.created_at,
        )
        self._where[row.memory_id] = row.audience
        self._counted(row.audience)

    def _remove(self, memory_id: int) -> None:
        audience = self._where.pop(memory_id, None)
        if audience is not None:
            self._matrices[audience].remove(memory_id)
            self._counted(audience)

    # reads --------------------------------------------------------------------------------------
    @property
    def dimension(self) -> int | None:
        return self._dimension

    def fits(self, vector: Vector) -> bool:
        return np.shape(vector) == (self._dimension,)

    def refusal(self, vector: Vector) -> StoreError:
        return StoreError(
            f"The vector index refused a vector of shape {np.shape(vector)}: this hive's "
            f"vectors have {self._dimension} dimensions."
        )

    def _query(self, vector: Vector) -> npt.NDArray[np.float32]:
        if not self.fits(vector):
            raise self.refusal(vector)
        return np.asarray(vector, dtype=np.float32)

    def search(
        self, conn: Any, viewer_id: int, vector: Vector, k: int, filters: MemoryFilter
    ) -> list[tuple[int, float]]:
        """(memory id, cosine similarity), best first and ties by id, as ``memory_vec`` answers."""
        if self._dimension is None or k < 1:
            return []
        query = self._query(vector)
        matrices = self._audiences(conn, viewer_id)  # first: loading them codes their subjects
        subject = (
            None if filters.subject is None else self._subjects.get(subject_key(filters.subject))
        )
        if filters.subject is not None and subject is None:
            return []  # no cached row has that subject
        scores: list[npt.NDArray[np.float32]] = []
        ids: list[npt.NDArray[np.int64]] = []
        for matrix in matrices:
            found_ids, found_scores = matrix.nearest(query, k, filters, subject)
            ids.append(found_ids)
            scores.append(found_scores)
        if not ids:
            return []
        all_ids, all_scores = np.concatenate(ids), np.concatenate(scores)
        order = np.lexsort((all_ids, -all_scores))[:k]
        return [(int(all_ids[i]), float(all_scores[i])) for i in order]

    def vectors(
        self, conn: Any, viewer_id: int, ids: Sequence[int]
    ) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors of the visible memories among ``ids``."""
        found: dict[int, npt.NDArray[np.float32]] = {}
        self._audiences(conn, viewer_id)
        for memory_id in ids:
            audience = self._where.get(memory_id)
            if audience is not None and audience in (viewer_id, 0):
                found[memory_id] = self._matrices[audience].vector(memory_id)
        return found

    def close_matches(
        self, conn: Any, queries: Sequence[tuple[int, str, Vector]], floor: float, k: int
    ) -> list[list[tuple[int, float]]]:
        """For each (viewer id, subject key, vector): up to ``k`` visible rows of that subject
        with cosine >= ``floor``, best first, ties by smaller id.

        One matrix product per viewer and audience, for a whole batch of inserts (dedup); each
        query's subject masks its own row of scores.
        """
        close: list[list[tuple[int, float]]] = [[] for _ in queries]
        if self._dimension is None:
            return close
        by_viewer: dict[int, list[int]] = {}
        for index, (viewer_id, _, _) in enumerate(queries):
            by_viewer.setdefault(viewer_id, []).append(index)
        for viewer_id, indexes in by_viewer.items():
            block = np.stack([self._query(queries[i][2]) for i in indexes])
            matrices = self._audiences(conn, viewer_id)  # first: loading them codes subjects
            subjects = [self._subjects.get(queries[i][1], -1) for i in indexes]
            for matrix in matrices:
                rows_of = matrix.close_rows(block, floor, k, subjects)
                for index, rows in zip(indexes, rows_of, strict=True):
                    close[index] += rows
        return [sorted(rows, key=lambda row: (-row[1], row[0]))[:k] for rows in close]
