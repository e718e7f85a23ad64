"""OpenAI embeddings, and any OpenAI-compatible server (vLLM, LM Studio, LiteLLM…) via base URL.

The base URL is the ``base_url`` argument, else ``OPENAI_BASE_URL`` (the official SDK's variable,
so a ``provider:model`` spec can reach a compatible server), else https://api.openai.com/v1.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hivekeep.providers.embeddings.http import HTTPEmbedder


class OpenAIEmbedder(HTTPEmbedder):
    """``POST {base}/embeddings`` with a Bearer key from ``OPENAI_API_KEY``.

    An explicit ``dimension`` that differs from a known model's native size is sent as
    ``dimensions`` (the text-embedding-3 models shorten their vectors on request). For a model
    hivekeep does not know, ``dimension`` only states the size to expect and is not sent, since
    many compatible servers reject the field.
    """

    provider: ClassVar[str] = "openai"
    display_name: ClassVar[str] = "OpenAI"
    endpoint: ClassVar[str] = "/embeddings"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    base_url_env: ClassVar[str | None] = "OPENAI_BASE_URL"
    default_batch_size: ClassVar[int] = 256
    known_dimensions: ClassVar[dict[str, int]] = {
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }

    def request_body(self, texts: list[str]) -> dict[str, Any]:
        body = super().request_body(texts)
        native = self._known_dimension()
        if native is not None and self._requested_dimension not in (None, native):
            body["dimensions"] = self._requested_dimension
        return body
