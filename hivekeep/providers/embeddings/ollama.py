"""Ollama's local embedding models (``ollama pull nomic-embed-text``); no account, no key.

The server is the ``base_url`` argument, else ``OLLAMA_HOST`` (Ollama's own variable, often just
``host:port``), else http://localhost:11434. An ``api_key`` is optional and sent as a Bearer
token, for an Ollama behind an authenticating proxy.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hivekeep.providers.embeddings.http import HTTPEmbedder, MalformedReply


class OllamaEmbedder(HTTPEmbedder):
    """``POST {base}/api/embed``; the reply is ``{"embeddings": [[...], ...]}`` in input order."""

    provider: ClassVar[str] = "ollama"
    display_name: ClassVar[str] = "Ollama"
    endpoint: ClassVar[str] = "/api/embed"
    default_base_url: ClassVar[str] = "http://localhost:11434"
    base_url_env: ClassVar[str | None] = "OLLAMA_HOST"
    default_batch_size: ClassVar[int] = 64
    known_dimensions: ClassVar[dict[str, int]] = {
        "nomic-embed-text": 768,
        "mxbai-embed-large": 1024,
        "all-minilm": 384,
    }

    def parse_vectors(self, payload: Any) -> list[Any]:
        vectors = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(vectors, list):
            raise MalformedReply("it has no 'embeddings' list")
        return vectors
