"""Jina AI embeddings (https://jina.ai/embeddings): OpenAI's wire format at another address."""

from __future__ import annotations

from typing import ClassVar

from hivekeep.providers.embeddings.http import HTTPEmbedder


class JinaEmbedder(HTTPEmbedder):
    """``POST {base}/embeddings`` with a Bearer key from ``JINA_API_KEY``."""

    provider: ClassVar[str] = "jina"
    display_name: ClassVar[str] = "Jina"
    endpoint: ClassVar[str] = "/embeddings"
    default_base_url: ClassVar[str] = "https://api.jina.ai/v1"
    api_key_env: ClassVar[str | None] = "JINA_API_KEY"
    default_batch_size: ClassVar[int] = 128
    known_dimensions: ClassVar[dict[str, int]] = {
        "jina-embeddings-v3": 1024,
        "jina-embeddings-v2-base-en": 768,
    }
