"""Reciprocal rank fusion: merge ranked lists by relevance alone.

``score(d) = sum over lists of weight / (k + rank + 1)``, rank counted from 0. Ties are broken by
recency (newer first), then by id for a total order; nothing else (importance, retrieval counts)
may influence the order.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Ranked(Generic[Key]):
    """One ranked list and how much a position in it is worth."""

    keys: Sequence[Key]
    weight: float = 1.0


def rrf_scores(lists: Sequence[Ranked[Key]], k: float) -> dict[Key, float]:
    """Fused score of every key that appears in any list (a key counts once per list)."""
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}.")
    scores: dict[Key, float] = {}
    for ranked in lists:
        seen: set[Key] = set()
        for rank, key in enumerate(ranked.keys):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + ranked.weight / (k + rank + 1)
    return scores


def fuse(
    lists: Sequence[Ranked[Key]],
    k: float,
    recency: Mapping[Key, str],
    limit: int | None = None,
) -> list[tuple[Key, float]]:
    """Keys ordered by fused score, ties broken by ``recency`` (a sortable timestamp, newer first).

    Keys missing from ``recency`` sort after dated ones among equals.
    """
    scores = rrf_scores(lists, k)
    # Stable sorts, least significant key first: id, then recency (newest first), then score.
    ordered = sorted(scores.items(), key=lambda item: str(item[0]))
    ordered.sort(key=lambda item: recency.get(item[0], ""), reverse=True)
    ordered.sort(key=lambda item: item[1], reverse=True)
    return ordered if limit is None else ordered[:limit]
