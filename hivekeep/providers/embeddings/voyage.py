"""Voyage AI embeddings (https://docs.voyageai.com/reference/embeddings-api)."""

from __future__ import annotations

from typing import Any, ClassVar

from hivekeep.providers.embeddings.http import HTTPEmbedder


class VoyageEmbedder(HTTPEmbedder):
    """``POST {base}/embeddings`` with a Bearer key from ``VOYAGE_API_KEY``.

    Every text is sent with ``input_type="document"``: the ``Embedder`` protocol has one
    ``embed`` for stored memories and search queries alike. Voyage only prepends a different
    retrieval prompt per input type, so embedding queries as documents trades a little retrieval
    quality for one stateless ``embed`` whose vectors are always comparable with each other.
    """

    provider: ClassVar[str] = "voyage"
    display_name: ClassVar[str] = "Voyage"
    endpoint: ClassVar[str] = "/embeddings"
    default_base_url: ClassVar[str] = "https://api.voyageai.com/v1"
    api_key_env: ClassVar[str | None] = "VOYAGE_API_KEY"
    default_batch_size: ClassVar[int] = 128
    known_dimensions: ClassVar[dict[str, int]] = {
        "voyage-3": 1024,
        "voyage-3-lite": 512,
        "voyage-3-large": 1024,
    }

    def request_body(self, texts: list[str]) -> dict[str, Any]:
        return {**super().request_body(texts), "input_type": "document"}
