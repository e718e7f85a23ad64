from __future__ import annotations

import pytest

from hivekeep.core.fusion import Ranked, fuse, rrf_scores


def test_rrf_formula_with_weights() -> None:
    scores = rrf_scores([Ranked(["a", "b"], 1.0), Ranked(["b"], 0.5)], k=60)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 0.5 / 61)


def test_a_key_counts_once_per_list() -> None:
    assert rrf_scores([Ranked(["a", "a"])], k=60) == {"a": pytest.approx(1 / 61)}


def test_agreement_between_arms_wins() -> None:
    fused = fuse([Ranked(["x", "both"]), Ranked(["y", "both"], 1.0)], k=60, recency={})
    assert fused[0][0] == "both"


def test_ties_break_by_recency_newest_first() -> None:
    recency = {"old": "2023-01-01T00:00:00.000000Z", "new": "2025-01-01T00:00:00.000000Z"}
    fused = fuse([Ranked(["old"]), Ranked(["new"])], k=60, recency=recency)
    assert [key for key, _ in fused] == ["new", "old"]


def test_undated_keys_sort_after_dated_ones_among_equals() -> None:
    fused = fuse([Ranked(["undated"]), Ranked(["dated"])], k=60, recency={"dated": "2020"})
    assert [key for key, _ in fused] == ["dated", "undated"]


def test_recency_never_beats_relevance() -> None:
    recency = {"relevant": "2000-01-01", "recent": "2030-01-01"}
    fused = fuse([Ranked(["relevant", "recent"])], k=60, recency=recency)
    assert fused[0][0] == "relevant"


def test_limit_and_negative_k() -> None:
    assert len(fuse([Ranked(list("abcdef"))], k=60, recency={}, limit=2)) == 2
    with pytest.raises(ValueError):
        rrf_scores([Ranked(["a"])], k=-1)
