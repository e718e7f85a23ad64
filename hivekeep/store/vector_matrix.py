"""One audience's vectors as a growable float32 matrix, searched exactly by one matrix product.

Rows sit in slots ``0..len-1`` beside the columns a search filters on (category and subject as
small integer codes, created_at as fixed-width text so ``>=`` compares as SQLite compares text).
Appends double the capacity when it runs out; a removal moves the last row into the freed slot.
Similarities are cosines computed from the stored vectors and their norms, exactly what
sqlite-vec's cosine distance gives (1 - distance).

A search's matrix-vector product runs in numpy's own loop (``einsum``, one thread), not BLAS:
OpenBLAS splits it over both cores and must wake its idle threads for every search, which on a
busy 2-core machine cost 6 ms per 10k-row search against 1.3 ms on one thread (and it leaves the
other core to the full-text arm). Past ``PARALLEL_ROWS`` rows a search is split in one part per
core instead, on threads of its own: there one part is tens of milliseconds of memory traffic,
so waking a thread costs nothing that shows. A batch of inserts compared with every row (dedup)
is compute-bound, so that product does go to BLAS.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from hivekeep.store.base import MemoryFilter
from hivekeep.types import Category

CATEGORY_CODES = {category.value: code for code, category in enumerate(Category)}
# What one entry of the slot map (memory id -> slot, a Python dict) costs, as tracemalloc counts
# it at 100k entries: the dict's share (about 80 bytes) and the two int objects (28 each).
SLOT_BYTES = 136
SCORE_BLOCK = 4_000_000  # scores held at once when a batch is compared with every row (16 MB)
GROW_BY_EIGHTHS = 1 << 17  # rows from which a full matrix grows by an eighth, not double
PARALLEL_ROWS = 200_000  # rows from which a search runs in parts, one per core
_CORES = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))

Floats = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]


def _best(ids: Ids, scores: Floats, k: int) -> tuple[Ids, Floats]:
    """The rows of the k best scores, and every row tied with the k-th, unsorted."""
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        scores, ids = scores[keep], ids[keep]
    return ids, scores


@cache
def _searchers() -> ThreadPoolExecutor:
    """The threads searching a large matrix in parts (one per core, started on first need)."""
    return ThreadPoolExecutor(_CORES, thread_name_prefix="hivekeep-search")


if hasattr(os, "register_at_fork"):  # a forked child has none of its parent's threads: new ones
    os.register_at_fork(after_in_child=_searchers.cache_clear)


def _inverse_norms(vectors: npt.NDArray[Any]) -> Floats:
    norms = np.sqrt(np.einsum("...i,...i->...", vectors, vectors))
    with np.errstate(divide="ignore"):
        return np.where(norms > 0, 1.0 / norms, 0.0).astype(np.float32)


class Matrix:
    """The vectors of one audience, with their memory ids and filter columns."""

    def __init__(self, dimension: int, capacity: int = 64) -> None:
        self._size = 0
        self._slots: dict[int, int] = {}
        self._vectors: Floats = np.empty((capacity, dimension), dtype=np.float32)
        self._inverse_norms: Floats = np.empty(capacity, dtype=np.float32)
        self._ids: Ids = np.empty(capacity, dtype=np.int64)
        self._categories = np.empty(capacity, dtype=np.int8)
        self._subjects = np.empty(capacity, dtype=np.int32)
        self._created: npt.NDArray[np.str_] = np.empty(capacity, dtype="U27")

    @classmethod
    def from_arrays(
        cls,
        vectors: npt.NDArray[Any],
        ids: Ids,
        categories: npt.NDArray[np.int8],
        subjects: npt.NDArray[np.int32],
        created: npt.NDArray[np.str_],
    ) -> Matrix:
        """A matrix holding these rows (a bulk load: no per-row work beyond the slot map)."""
        matrix = cls(vectors.shape[1], capacity=0)
        matrix._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        matrix._inverse_norms = _inverse_norms(matrix._vectors)
        matrix._ids = ids.astype(np.int64)
        matrix._categories = categories
        matrix._subjects = subjects
        matrix._created = created
        matrix._size = len(ids)
        matrix._slots = {memory_id: slot for slot, memory_id in enumerate(ids.tolist())}
        return matrix

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """What the matrix holds, in bytes: its arrays (at their capacity) and its slot map."""
        arrays = (self._vectors, self._inverse_norms, self._ids, self._categories, self._subjects)
        return sum(a.nbytes for a in arrays) + self._created.nbytes + SLOT_BYTES * self._size

    def memory_ids(self) -> list[int]:
        ids: list[int] = self._ids[: self._size].tolist()
        return ids

    def _grow(self) -> None:
        """Room for more rows: double while small, then an eighth more. At a million rows a
        doubling was 3 s of copying and 1.5 GB held for rows that may never come (the first
        insert after a load grows a matrix loaded at its exact size)."""
        held = len(self._ids)
        capacity = max(64, 2 * held if held < GROW_BY_EIGHTHS else held + held // 8)
        for name in ("_vectors", "_inverse_norms", "_ids", "_categories", "_subjects", "_created"):
            old = getattr(self, name)
            new = np.empty((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self._size] = old[: self._size]
            setattr(self, name, new)

    def put(
        self, memory_id: int, vector: Floats, category: int, subject: int, created_at: str
    ) -> None:
        """Insert the row, or overwrite it when ``memory_id`` is already here."""
        slot = self._slots.get(memory_id)
        if slot is None:
            if self._size == len(self._ids):
                self._grow()
            slot = self._size
            self._size += 1
            self._slots[memory_id] = slot
        if len(created_at) > self._created.dtype.itemsize // 4:
            self._created = self._created.astype(f"U{len(created_at)}")
        self._vectors[slot] = vector
        squared = float(self._vectors[slot] @ self._vectors[slot])
        self._inverse_norms[slot] = 1.0 / np.sqrt(squared) if squared > 0 else 0.0
        self._ids[slot] = memory_id
        self._categories[slot] = category
        self._subjects[slot] = subject
        self._created[slot] = created_at

    def remove(self, memory_id: int) -> None:
        slot = self._slots.pop(memory_id)
        last = self._size - 1
        if slot != last:
            for array in (
                self._vectors,
                self._inverse_norms,
                self._ids,
                self._categories,
                self._subjects,
                self._created,
            ):
                array[slot] = array[last]
            self._slots[int(self._ids[slot])] = slot
        self._size = last

    def vector(self, memory_id: int) -> Floats:
        return np.array(self._vectors[self._slots[memory_id]], dtype=np.float32)

    def _mask(
        self, filters: MemoryFilter, subject: int | None, low: int, high: int
    ) -> npt.NDArray[np.bool_] | None:
        """Rows ``low..high-1`` passing the filters (None: all of them)."""
        masks: list[npt.NDArray[np.bool_]] = []
        if filters.category is not None:
            masks.append(self._categories[low:high] == CATEGORY_CODES[filters.category.value])
        if subject is not None:
            masks.append(self._subjects[low:high] == subject)
        if filters.since is not None:
            masks.append(self._created[low:high] >= filters.since)
        if not masks:
            return None
        mask = masks[0]
        for other in masks[1:]:
            mask = mask & other
        return mask

    def nearest(
        self, query: Floats, k: int, filters: MemoryFilter, subject: int | None
    ) -> tuple[Ids, Floats]:
        """The k most similar rows passing the filters (more when the k-th score ties), unsorted.

        A matrix of ``PARALLEL_ROWS`` rows or more is searched in one part per core, each part's
        best kept, then the best of those: at a million rows one core's product is 50-70 ms of
        memory traffic, and the parts overlap (numpy's loops release the GIL)."""
        parts = 1 if self._size < PARALLEL_ROWS else _CORES
        if parts == 1:
            return self._nearest(query, k, filters, subject, 0, self._size)
        step = -(-self._size // parts)
        found = list(
            _searchers().map(
                lambda low: self._nearest(query, k, filters, subject, low, low + step),
                range(0, self._size, step),
            )
        )
        return _best(
            np.concatenate([ids for ids, _ in found]),
            np.concatenate([scores for _, scores in found]),
            k,
        )

    def _nearest(
        self, query: Floats, k: int, filters: MemoryFilter, subject: int | None, low: int, high: int
    ) -> tuple[Ids, Floats]:
        high = min(high, self._size)
        scores = np.einsum("ij,j->i", self._vectors[low:high], query)
        scores *= self._inverse_norms[low:high] * _inverse_norms(query)
        ids = self._ids[low:high]
        mask = self._mask(filters, subject, low, high)
        if mask is not None:
            scores, ids = scores[mask], ids[mask]
        return _best(ids, scores, k)

    def close_rows(
        self, queries: Floats, floor: float, k: int, subjects: Sequence[int] | None = None
    ) -> list[list[tuple[int, float]]]:
        """Per query: up to ``k`` rows of cosine >= ``floor`` as (id, cosine), best first, ties
        by smaller id; with ``subjects`` (a subject code per query, -1 for one no row has), rows
        of the query's subject only.

        The queries of one subject are compared with that subject's rows alone, in blocks, one
        matrix product each (dedup of a batch of inserts): other subjects' rows never take a
        place, and a batch costs what its subjects hold, not the whole matrix (at a million rows
        in a few dozen subjects, the whole matrix was 8 s a batch).
        """
        size = self._size
        found: list[list[tuple[int, float]]] = [[] for _ in queries]
        for asked, rows in self._subject_rows(subjects, len(queries)):
            if rows is not None and not len(rows):
                continue  # a subject no row has
            vectors = self._vectors[:size] if rows is None else self._vectors[rows]
            norms = self._inverse_norms[:size] if rows is None else self._inverse_norms[rows]
            ids = self._ids[:size] if rows is None else self._ids[rows]
            step = max(1, min(len(asked), SCORE_BLOCK // max(len(ids), 1)))
            for start in range(0, len(asked), step):
                block = queries[asked[start : start + step]]
                scores = block @ vectors.T
                scores *= norms
                scores *= _inverse_norms(block)[:, None]
                for query, row in zip(asked[start : start + step], scores, strict=True):
                    close = np.flatnonzero(row >= floor)
                    order = np.lexsort((ids[close], -row[close]))[:k]
                    found[query] = [(int(ids[close[i]]), float(row[close[i]])) for i in order]
        return found

    def _subject_rows(
        self, subjects: Sequence[int] | None, count: int
    ) -> list[tuple[list[int], Ids | None]]:
        """The queries grouped by subject, each group with the slots of its subject's rows
        (None: every row, when no subject is asked for)."""
        if subjects is None:
            return [(list(range(count)), None)]
        groups: dict[int, list[int]] = {}
        for query, code in enumerate(subjects):
            groups.setdefault(code, []).append(query)
        codes = self._subjects[: self._size]
        slots: Ids = np.argsort(codes, kind="stable").astype(np.int64)  # by subject, then slot
        ordered = codes[slots]
        found: list[tuple[list[int], Ids | None]] = []
        for code, asked in groups.items():
            low, high = np.searchsorted(ordered, [code, code + 1])
            found.append((asked, slots[low:high]))
        return found
