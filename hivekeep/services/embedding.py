"""Calls the configured embedder and checks what it returns, once, for every caller."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from hivekeep.errors import HivekeepError, ProviderError
from hivekeep.providers.base import Embedder
from hivekeep.store.base import EmbeddingSpace

log = logging.getLogger(__name__)

FloatArray = np.ndarray[Any, np.dtype[np.float32]]


class EmbeddingService:
    """Wraps an ``Embedder``: validates shapes and values, L2-normalises, names failures."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @property
    def space(self) -> EmbeddingSpace:
        return EmbeddingSpace(self.embedder.model_id, int(self.embedder.dimension))

    def embed(self, texts: Sequence[str]) -> list[FloatArray]:
        """Unit vectors for ``texts``; raises ProviderError when the model fails or misbehaves."""
        if not texts:
            return []
        model = self.embedder.model_id
        try:
            raw = self.embedder.embed(list(texts))
        except HivekeepError:
            raise
        except Exception as exc:  # a user's embedder may raise anything: name it, keep the cause
            raise ProviderError(f"Embedder {model!r} failed: {exc!r}.") from exc
        if len(raw) != len(texts):
            raise ProviderError(
                f"Embedder {model!r} returned {len(raw)} vectors for {len(texts)} texts."
            )
        matrix = np.asarray(raw, dtype=np.float32)
        dimension = int(self.embedder.dimension)
        if matrix.ndim != 2 or matrix.shape[1] != dimension:
            raise ProviderError(
                f"Embedder {model!r} returned vectors of shape {matrix.shape[1:]}, "
                f"expected ({dimension},)."
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
            raise ProviderError(f"Embedder {model!r} returned a zero or non-finite vector.")
        return list(matrix / norms)

    def embed_one(self, text: str) -> FloatArray:
        return self.embed([text])[0]

    def try_embed_one(self, text: str) -> FloatArray | None:
        """A vector, or None when the embedder failed (the caller stores the row as pending)."""
        try:
            return self.embed_one(text)
        except ProviderError as exc:
            log.warning("Embedding failed; the memory is kept and will be backfilled: %s", exc)
            return None
