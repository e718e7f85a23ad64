"""The bundled model's vectors stay what they were: a change of session options, tokenizer settings
or batching must not move them (a hive's stored vectors would silently stop matching its queries).

``tests/data/minilm_reference.json`` holds vectors made by the wrapper as it was before issue 17
(onnxruntime's default options, batches of 32), rounded to six decimals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hivekeep.providers.embeddings.local import LocalEmbedder

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)
TEXTS = [entry["text"] for entry in REFERENCE["vectors"]]
EXPECTED = np.array([entry["vector"] for entry in REFERENCE["vectors"]], dtype=np.float64)


def cosines(got: list[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    vectors = np.asarray(got, dtype=np.float64)
    dots = (vectors * EXPECTED).sum(axis=1)
    result: np.ndarray[Any, np.dtype[np.float64]] = dots / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(EXPECTED, axis=1)
    )
    return result


def test_the_reference_is_of_this_model() -> None:
    assert REFERENCE["model_id"] == LocalEmbedder.model_id
    assert EXPECTED.shape == (len(TEXTS), LocalEmbedder.dimension)


@pytest.mark.parametrize(
    "embedder",
    [LocalEmbedder(), LocalEmbedder(batch_size=2), LocalEmbedder(threads=1, spinning=True)],
    ids=["shipped", "small batches", "one spinning thread"],
)
def test_vectors_match_the_reference_together_and_one_by_one(embedder: LocalEmbedder) -> None:
    together = embedder.embed(TEXTS)
    one_by_one = [embedder.embed([text])[0] for text in TEXTS]
    assert cosines(together).min() >= 0.999
    assert cosines(one_by_one).min() >= 0.999


def test_each_vector_comes_back_in_the_order_asked() -> None:
    shuffled = TEXTS[::-1]
    got = LocalEmbedder(batch_size=2).embed(shuffled)[::-1]
    assert cosines(got).min() >= 0.999
