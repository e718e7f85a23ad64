"""The vector side of the SQLite store: sqlite-vec's ``memory_vec``, its change log, and search.

Vectors are stored as little-endian float32 BLOBs in a ``vec0`` table whose metadata columns
(audience, category, subject, created_at) let a KNN apply visibility and filters itself, so a busy
hive never starves an agent's own results. ``audience`` is the owner's agent id for a private
memory and 0 for a shared one: an agent sees ``audience IN (its id, 0)``.

Every write goes to ``memory_vec`` and to ``vector_log`` in the caller's transaction. Reads go to
the in-process ``VectorCache`` (see hivekeep/store/vector_cache.py), or to sqlite-vec itself when
the cache is off; both answer with the same ids and similarities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import apsw
import numpy as np
import numpy.typing as npt

from hivekeep.core.subjects import subject_key
from hivekeep.errors import StoreError
from hivekeep.store.base import MemoryFilter, MemoryRecord, MemoryWrite, Vector
from hivekeep.store.sql.memories import filter_clauses
from hivekeep.store.sqlite.dialect import SQLITE
from hivekeep.store.vector_cache import (
    RESET,
    VectorCache,
    VectorRow,
    append_log,
    audience,
    vectors_by_id,
)


def encode_vector(vector: Vector) -> bytes:
    """Little-endian float32 bytes, the format sqlite-vec reads."""
    return np.asarray(vector, dtype="<f4").tobytes()


class Neighbours(Protocol):
    """Finds, write by write, the closest visible vectors of one batch of inserts (for dedup)."""

    def of(self, index: int) -> list[tuple[int, float]]:
        """Up to ``k`` (memory id, cosine) at or above the floor for write ``index``, best first,
        ties by smaller id, among the memories of its subject (``subject_key``); the batch's
        earlier inserts included."""
        ...

    def inserted(self, index: int, memory: MemoryRecord) -> None:
        """Write ``index`` was stored as ``memory``: later writes must see it."""
        ...


class VectorIndex:
    """``memory_vec`` and its change log on one connection; the caller holds the lock."""

    def __init__(self, conn: Any, *, cache_bytes: int | None) -> None:
        """``cache_bytes``: the ``VectorCache``'s budget (None: no cache, sqlite-vec answers)."""
        self._conn = conn
        self.cache = None if cache_bytes is None else VectorCache(cache_bytes)

    def exists(self) -> bool:
        return bool(
            self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").fetchone()
        )

    def _logged(self, memory_id: int, row: VectorRow | None) -> None:
        seq = append_log(self._conn, memory_id)
        if self.cache is not None:
            self.cache.changed(self._conn, seq, memory_id, row)

    def committed(self) -> None:
        if self.cache is not None:
            self.cache.committed()

    def rolled_back(self) -> None:
        if self.cache is not None:
            self.cache.rolled_back()

    # writes (inside the caller's transaction) ------------------------------------------------
    def reset(self, dimension: int) -> None:
        self._conn.execute("DROP TABLE IF EXISTS memory_vec")
        self._conn.execute(
            f"""CREATE VIRTUAL TABLE memory_vec USING vec0(
                memory_id INTEGER PRIMARY KEY,
                embedding float[{int(dimension)}] distance_metric=cosine,
                audience INTEGER, category TEXT, subject TEXT, created_at TEXT)"""
        )
        self._logged(RESET, None)

    def write(self, memory: MemoryRecord, vector: Vector | None, *, new: bool = False) -> None:
        """Replace the memory's vector (or remove it and mark the memory pending).

        ``new``: the memory was just inserted, so it has no vector row to replace.
        """
        if not new:
            self._conn.execute("DELETE FROM memory_vec WHERE memory_id = ?", (memory.id,))
        model = self._conn.execute(
            "SELECT value FROM meta WHERE key = 'embedding_model'"
        ).fetchone()
        if vector is None or model is None:
            self._conn.execute(
                "UPDATE memories SET embedding_state = 'pending', embedding_model = NULL "
                "WHERE id = ?",
                (memory.id,),
            )
            if not new:
                self._logged(memory.id, None)
            return
        row = VectorRow(
            memory.id,
            np.asarray(vector, dtype=np.float32),
            audience(memory.agent_id, memory.scope),
            memory.category.value,
            subject_key(memory.subject),
            memory.created_at,
        )
        try:
            self._conn.execute(
                "INSERT INTO memory_vec(memory_id, embedding, audience, category, subject, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    row.memory_id,
                    encode_vector(row.vector),
                    row.audience,
                    row.category,
                    row.subject,
                    row.created_at,
                ),
            )
        except apsw.SQLError as exc:
            raise StoreError(f"The vector index refused memory {memory.id}: {exc}.") from exc
        self._conn.execute(
            "UPDATE memories SET embedding_state = 'ready', embedding_model = ? WHERE id = ?",
            (model[0], memory.id),
        )
        self._logged(memory.id, row)

    def update_metadata(self, memory: MemoryRecord) -> None:
        """Carry a changed scope, category or subject into the vector row."""
        self._conn.execute(
            "UPDATE memory_vec SET audience = ?, category = ?, subject = ? WHERE memory_id = ?",
            (
                audience(memory.agent_id, memory.scope),
                memory.category.value,
                subject_key(memory.subject),
                memory.id,
            ),
        )
        self._logged(memory.id, None)

    def delete(self, memory_id: int) -> None:
        if self.exists():
            self._conn.execute("DELETE FROM memory_vec WHERE memory_id = ?", (memory_id,))
            self._logged(memory_id, None)

    # reads --------------------------------------------------------------------------------------
    def search(
        self, viewer_id: int, vector: Vector, k: int, filters: MemoryFilter
    ) -> list[tuple[int, float]]:
        if self.cache is not None:
            self.cache.refresh(self._conn)
            return self.cache.search(self._conn, viewer_id, vector, k, filters)
        if not self.exists():
            return []
        # The vec0 metadata columns hold the subject already trimmed and case-folded.
        clauses, params = filter_clauses(SQLITE, filters, subject_column="subject", prefix="")
        clauses = ["embedding MATCH :vector", "k = :k", "audience IN (:viewer, 0)", *clauses]
        params |= {"vector": encode_vector(vector), "k": k, "viewer": viewer_id}
        try:
            rows = self._conn.execute(
                f"SELECT memory_id, distance FROM memory_vec WHERE {' AND '.join(clauses)} "
                "ORDER BY distance",
                params,
            ).fetchall()
        except apsw.SQLError as exc:
            raise StoreError(f"The vector index refused the query vector: {exc}.") from exc
        # sqlite-vec's cosine distance is 1 - cosine similarity; equal distances go by id.
        rows.sort(key=lambda row: (row[1], row[0]))
        return [(int(memory_id), 1.0 - float(distance)) for memory_id, distance in rows]

    def vectors(self, viewer_id: int, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        if self.cache is not None:
            self.cache.refresh(self._conn)
            return self.cache.vectors(self._conn, viewer_id, ids)
        if not ids or not self.exists():
            return {}
        return {
            i: np.frombuffer(blob, dtype="<f4").astype(np.float32)
            for i, blob, audience in vectors_by_id(self._conn, ids)
            if audience in (viewer_id, 0)
        }

    def neighbours(self, writes: Sequence[MemoryWrite], floor: float, k: int) -> Neighbours:
        """Dedup candidates for one batch of inserts (call inside the insert's transaction)."""
        if self.cache is None:
            return _SearchNeighbours(self, writes, floor, k)
        self.cache.refresh(self._conn)
        return _BatchNeighbours(self._conn, self.cache, writes, floor, k)


class _SearchNeighbours:
    """One sqlite-vec KNN per write; it sees the batch's earlier inserts through the table."""

    def __init__(self, index: VectorIndex, writes: Sequence[MemoryWrite], floor: float, k: int):
        self._index = index
        self._writes = writes
        self._floor = floor
        self._k = k

    def of(self, index: int) -> list[tuple[int, float]]:
        write = self._writes[index]
        if write.vector is None:
            return []
        same = MemoryFilter(subject=subject_key(write.memory.subject))  # "": no subject
        hits = self._index.search(write.memory.agent_id, write.vector, self._k, same)
        return [hit for hit in hits if hit[1] >= self._floor]

    def inserted(self, index: int, memory: MemoryRecord) -> None:
        """Nothing to do: the next KNN reads the new row from the table."""


class _BatchNeighbours:
    """The whole batch against the cached rows in one matrix product per author and subject, then
    each write against the batch's earlier inserts of its subject (a small matrix, grown as rows
    are inserted).
    """

    def __init__(
        self, conn: Any, cache: VectorCache, writes: Sequence[MemoryWrite], floor: float, k: int
    ):
        self._cache = cache
        self._writes = writes
        self._floor = floor
        self._k = k
        queries = {
            i: (w.memory.agent_id, subject_key(w.memory.subject), w.vector)
            for i, w in enumerate(writes)
            if w.vector is not None and cache.fits(w.vector)
        }
        matches = cache.close_matches(conn, list(queries.values()), floor, k)
        self._before = dict(zip(queries, matches, strict=True))
        self._count = 0
        self._vectors = np.empty((len(queries), cache.dimension or 0), dtype=np.float32)
        self._inverse_norms = np.empty(len(queries), dtype=np.float32)
        self._ids = np.empty(len(queries), dtype=np.int64)
        self._audiences = np.empty(len(queries), dtype=np.int64)
        self._subjects = np.empty(len(queries), dtype=np.int64)  # each inserted row's subject
        self._subject_codes: dict[str, int] = {}  # subject key -> the code in ``_subjects``

    def of(self, index: int) -> list[tuple[int, float]]:
        write = self._writes[index]
        if write.vector is None or self._cache.dimension is None:
            return []  # no vector, or no embedding space yet: the row is stored as pending
        if index not in self._before:
            raise self._cache.refusal(write.vector)
        close = list(self._before[index])
        count = self._count
        if count:
            query = np.asarray(write.vector, dtype=np.float32)
            scores = self._vectors[:count] @ query
            scores *= self._inverse_norms[:count] / np.sqrt(query @ query)
            audiences = self._audiences[:count]
            visible = (audiences == write.memory.agent_id) | (audiences == 0)
            code = self._subject_codes.get(subject_key(write.memory.subject), -1)
            same = self._subjects[:count] == code
            for slot in np.flatnonzero(visible & same & (scores >= self._floor)):
                close.append((int(self._ids[slot]), float(scores[slot])))
        return sorted(close, key=lambda row: (-row[1], row[0]))[: self._k]

    def inserted(self, index: int, memory: MemoryRecord) -> None:
        if index not in self._before:
            return  # stored as pending
        vector = self._writes[index].vector
        self._vectors[self._count] = vector
        self._inverse_norms[self._count] = 1.0 / np.sqrt(self._vectors[self._count] @ vector)
        self._ids[self._count] = memory.id
        self._audiences[self._count] = audience(memory.agent_id, memory.scope)
        codes = self._subject_codes
        self._subjects[self._count] = codes.setdefault(subject_key(memory.subject), len(codes))
        self._count += 1
