"""Test embedders: user-supplied ``Embedder`` implementations with exactly known vectors.

``VectorTable`` returns the vector a test registered for a text (exact cosines for threshold
tests); unknown texts get a deterministic pseudo-random unit vector, so unrelated texts are nearly
orthogonal. Tests that need the real model use ``LocalEmbedder``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from hivekeep.core.dedup import DedupRule
from hivekeep.store.base import MemoryRecord, MemoryWrite, NewMemory, Store, Vector


def random_unit(seed_text: str, dimension: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def with_cosine(base: np.ndarray, cosine: float, seed_text: str) -> np.ndarray:
    """A unit vector whose cosine similarity to unit vector ``base`` is exactly ``cosine``."""
    noise = random_unit(seed_text, base.shape[0]).astype(np.float64)
    orthogonal = noise - (noise @ base) * base
    orthogonal /= np.linalg.norm(orthogonal)
    return np.asarray(cosine * base + np.sqrt(1 - cosine**2) * orthogonal, dtype=np.float32)


class VectorTable:
    """An embedder whose vectors are set by the test."""

    def __init__(self, dimension: int = 16, model_id: str = "test:vector-table") -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.vectors: dict[str, np.ndarray] = {}
        self.calls: list[list[str]] = []
        self.fail = False

    def set(self, text: str, vector: np.ndarray) -> None:
        self.vectors[text] = np.asarray(vector, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if self.fail:
            raise ConnectionError("embedding service unreachable")
        self.calls.append(list(texts))
        return [self.vectors.get(t, random_unit(t, self.dimension)) for t in texts]


def insert_one(
    store: Store,
    memory: NewMemory,
    vector: Vector | None,
    *,
    text_key: str,
    dedup_threshold: float,
) -> tuple[MemoryRecord, bool]:
    """One write through the store's batch insert (the only insert the contract has)."""
    [result] = insert_pairs(store, [MemoryWrite(memory, vector, text_key)], dedup_threshold)
    return result


def insert_pairs(
    store: Store, writes: Sequence[MemoryWrite], dedup_threshold: float
) -> list[tuple[MemoryRecord, bool]]:
    """The store's batch insert under the shipped dedup rule at ``dedup_threshold``, as
    (memory, was_duplicate) pairs."""
    return [
        (r.memory, r.duplicate)
        for r in store.insert_memories(writes, dedup=DedupRule(threshold=dedup_threshold))
    ]


def twins_section(prompt: str) -> str | None:
    """The near-twin groups of a maintenance prompt, inside their data fence; None if absent."""
    found = re.findall(r'<data source="twins">\n(.*?)\n</data>', prompt, re.DOTALL)
    assert len(found) <= 1, "more than one twins fence"
    return found[0] if found else None
