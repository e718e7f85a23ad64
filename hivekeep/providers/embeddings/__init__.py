"""Embedding providers: the bundled local model and hosted APIs, named by ``provider:model``.

Only the registry is re-exported; provider modules (and their heavy imports, onnxruntime or httpx)
load when a spec names them.
"""

from hivekeep.providers.embeddings.registry import (
    available_embedders,
    create_embedder,
    register_embedder,
)

__all__ = ["available_embedders", "create_embedder", "register_embedder"]
