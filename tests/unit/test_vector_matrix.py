"""One audience's vector matrix: slots, growth, removal, filters, exact cosine, ties by id."""

from __future__ import annotations

import numpy as np
import pytest

from hivekeep.store.base import MemoryFilter
from hivekeep.store.vector_matrix import CATEGORY_CODES, Matrix
from hivekeep.types import Category
from tests.support import random_unit, with_cosine

NO_FILTER = MemoryFilter()
FACT = CATEGORY_CODES["fact"]


def unit(seed: object) -> np.ndarray:
    return random_unit(str(seed), 4)


def test_rows_survive_growth_and_removal_from_the_middle() -> None:
    matrix = Matrix(4, capacity=2)
    rows = {i: unit(i) for i in range(1, 8)}
    for memory_id, vector in rows.items():
        matrix.put(memory_id, vector, FACT, 0, "2024-01-01")
    matrix.remove(2)  # the last row moves into its slot
    matrix.put(8, unit(8), FACT, 0, "2024-01-01")  # and the next append must not overwrite it
    rows = {**{i: v for i, v in rows.items() if i != 2}, 8: unit(8)}
    assert len(matrix) == len(rows)
    for memory_id, vector in rows.items():
        assert np.array_equal(matrix.vector(memory_id), vector)
    matrix.remove(7)
    matrix.remove(1)
    ids, _ = matrix.nearest(unit("query"), 10, NO_FILTER, None)
    assert sorted(ids.tolist()) == [3, 4, 5, 6, 8]


def test_put_overwrites_in_place() -> None:
    matrix = Matrix(4)
    matrix.put(1, unit("old"), FACT, 0, "2024-01-01")
    matrix.put(1, unit("new"), CATEGORY_CODES["decision"], 0, "2024-01-01")
    assert len(matrix) == 1 and np.array_equal(matrix.vector(1), unit("new"))
    ids, _ = matrix.nearest(unit("new"), 5, MemoryFilter(category=Category.DECISION), None)
    assert ids.tolist() == [1]


def test_scores_are_cosines_even_for_vectors_that_are_not_unit_length() -> None:
    matrix = Matrix(4)
    base = unit("base")
    matrix.put(1, np.float32(3.0) * with_cosine(base, 0.6, "a"), FACT, 0, "2024-01-01")
    ids, scores = matrix.nearest(np.float32(0.5) * base, 1, NO_FILTER, None)
    assert ids.tolist() == [1] and scores[0] == pytest.approx(0.6, abs=1e-6)


def test_since_compares_as_text_and_longer_timestamps_widen_the_column() -> None:
    matrix = Matrix(4)
    matrix.put(1, unit(1), FACT, 0, "2023-01-01T00:00:00.000000Z")
    matrix.put(2, unit(2), FACT, 0, "2025-01-01T00:00:00.000000Z and then some more text")
    since = MemoryFilter(since="2025-01-01T00:00:00.000000Z and then")  # past the 27th char
    ids, _ = matrix.nearest(unit("q"), 5, since, None)
    assert ids.tolist() == [2]


def test_ties_keep_every_candidate_at_the_cut_and_dedup_orders_them_by_id() -> None:
    matrix = Matrix(4)
    same = unit("same")
    for memory_id in (5, 3, 9):
        matrix.put(memory_id, same, FACT, 0, "2024-01-01")
    ids, _ = matrix.nearest(same, 1, NO_FILTER, None)
    assert sorted(ids.tolist()) == [3, 5, 9]  # the caller orders ties by id
    [close, far] = matrix.close_rows(np.stack([same, unit("far")]), 0.9, 2)
    assert [memory_id for memory_id, _ in close] == [3, 5]  # ties by smaller id, at most k
    assert close[0][1] == pytest.approx(1.0)
    assert far == []


def test_dedup_rows_keep_to_each_querys_subject() -> None:
    """A query's subject masks its own scores: closer rows of another subject take no place."""
    matrix = Matrix(4)
    base = unit("base")
    for memory_id in (1, 2, 3):
        matrix.put(memory_id, with_cosine(base, 0.99, f"o{memory_id}"), FACT, 7, "2024-01-01")
    matrix.put(4, with_cosine(base, 0.95, "s"), FACT, 8, "2024-01-01")
    ann, other, absent = matrix.close_rows(np.stack([base, base, base]), 0.9, 1, [8, 7, -1])
    assert [memory_id for memory_id, _ in ann] == [4]
    assert [memory_id for memory_id, _ in other] in ([1], [2], [3])  # its own subject, k = 1
    assert absent == []


def test_dedup_rows_by_subject_match_a_search_of_every_row() -> None:
    """Grouping the queries by subject (each group against its subject's rows alone) finds what
    comparing every query with every row and masking by subject finds."""
    rng = np.random.default_rng(3)
    matrix = Matrix(8)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    subjects = rng.integers(0, 5, 300)
    for slot, (vector, subject) in enumerate(zip(vectors, subjects, strict=True)):
        matrix.put(1000 - slot, vector, FACT, int(subject), "2024-01-01")
    matrix.remove(1000 - 17)  # a removal reorders the slots
    queries = vectors[rng.integers(0, 300, 40)] + 0.3 * rng.standard_normal((40, 8))
    asked = [int(c) for c in rng.integers(-1, 6, 40)]  # -1 and 5: subjects no row has
    found = matrix.close_rows(queries.astype(np.float32), 0.5, 3, asked)
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for query, code, rows in zip(queries, asked, found, strict=True):
        cosines = units @ (query / np.linalg.norm(query))
        expected = sorted(
            (1000 - slot, float(cosines[slot]))
            for slot in range(300)
            if subjects[slot] == code and cosines[slot] >= 0.5 and slot != 17
        )
        expected.sort(key=lambda row: (-row[1], row[0]))
        assert [i for i, _ in rows] == [i for i, _ in expected[:3]]
        assert [s for _, s in rows] == pytest.approx([s for _, s in expected[:3]], abs=1e-5)


def test_a_large_matrix_searched_in_parts_finds_what_one_search_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past PARALLEL_ROWS the search runs in one part per core: the same rows, ties included,
    with filters applied within each part."""
    import hivekeep.store.vector_matrix as vector_matrix

    rng = np.random.default_rng(5)
    matrix = Matrix(8)
    vectors = rng.standard_normal((1001, 8)).astype(np.float32)
    for slot, vector in enumerate(vectors):
        matrix.put(
            slot + 1, vector, FACT if slot % 3 else CATEGORY_CODES["decision"], slot % 4, "2024"
        )
    matrix.put(2000, vectors[10], FACT, 2, "2024")  # a tie with row 11 for the query below
    query = vectors[10] + np.float32(0.01)
    searches = [(NO_FILTER, None), (MemoryFilter(category=Category.DECISION), None), (NO_FILTER, 2)]
    whole = [matrix.nearest(query, 5, filters, subject) for filters, subject in searches]
    monkeypatch.setattr(vector_matrix, "PARALLEL_ROWS", 100)
    monkeypatch.setattr(vector_matrix, "_CORES", 3)
    for (filters, subject), (ids, scores) in zip(searches, whole, strict=True):
        found_ids, found_scores = matrix.nearest(query, 5, filters, subject)
        assert sorted(found_ids.tolist()) == sorted(ids.tolist())
        assert sorted(found_scores.tolist()) == pytest.approx(sorted(scores.tolist()))
    assert 2000 in matrix.nearest(query, 1, NO_FILTER, 2)[0].tolist()  # both rows of the tie


def test_a_large_matrix_grows_by_an_eighth_not_double(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded matrix sits at its exact size: the next insert must not double a large one."""
    import hivekeep.store.vector_matrix as vector_matrix

    monkeypatch.setattr(vector_matrix, "GROW_BY_EIGHTHS", 64)
    rows = 800
    matrix = Matrix.from_arrays(
        np.ones((rows, 4), dtype=np.float32),
        np.arange(1, rows + 1),
        np.zeros(rows, dtype=np.int8),
        np.zeros(rows, dtype=np.int32),
        np.full(rows, "2024"),
    )
    before = matrix.nbytes
    matrix.put(rows + 1, unit("new"), FACT, 0, "2024")
    assert matrix.nbytes < before * 1.2  # 900 rows of room, not 1,600
    assert np.array_equal(matrix.vector(rows + 1), unit("new")) and len(matrix) == rows + 1
    small = Matrix(4, capacity=2)
    for memory_id in range(1, 4):
        small.put(memory_id, unit(memory_id), FACT, 0, "2024")
    assert len(small._ids) == 64  # doubling (from the floor of 64) while small
