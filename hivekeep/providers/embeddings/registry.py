"""Embedders by name: ``create_embedder("openai:text-embedding-3-small")``, or ``"local"``.

Built-in providers register here exactly as an outside package would, with
``register_embedder(name, factory)``; a factory takes the model part of the spec (``""`` when the
spec has none) and returns an ``Embedder``. Provider modules are imported only when their factory
runs, so naming ``local`` never imports httpx and naming ``openai`` never imports onnxruntime.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from hivekeep.errors import ValidationError
from hivekeep.providers.base import Embedder

if TYPE_CHECKING:
    from hivekeep.providers.embeddings.http import HTTPEmbedder

EmbedderFactory = Callable[[str], Embedder]

_REGISTRY: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make ``name`` (or ``name:model``) a valid spec; a later registration replaces an earlier."""
    if not name or ":" in name or name != name.strip():
        raise ValidationError(f"Embedder name {name!r} must be non-empty, without ':' or spaces.")
    _REGISTRY[name] = factory


def available_embedders() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_REGISTRY)


def create_embedder(spec: str) -> Embedder:
    """The embedder a ``provider:model`` spec names (``local`` takes no model)."""
    name, _, model = spec.strip().partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValidationError(
            f"Unknown embedding provider {name!r} in {spec!r}; "
            f"use one of: {', '.join(available_embedders())}."
        )
    return factory(model.strip())


def _local(model: str) -> Embedder:
    if model:
        raise ValidationError(
            f"The local embedder takes no model name; use 'local', not {model!r}."
        )
    from hivekeep.providers.embeddings.local import LocalEmbedder

    # Its rows are numpy arrays: sequences of floats at run time, though not to mypy.
    return cast(Embedder, LocalEmbedder())


def _hosted(name: str, module: str, class_name: str, example: str) -> EmbedderFactory:
    """A factory that imports ``module`` only when called and needs a model name."""

    def factory(model: str) -> Embedder:
        if not model:
            raise ValidationError(
                f"The embedding spec {name!r} names no model; use '{name}:<model>', "
                f"e.g. '{name}:{example}'."
            )
        embedder_class: type[HTTPEmbedder] = getattr(
            importlib.import_module(f"hivekeep.providers.embeddings.{module}"), class_name
        )
        return embedder_class(model)

    return factory


register_embedder("local", _local)
register_embedder("openai", _hosted("openai", "openai", "OpenAIEmbedder", "text-embedding-3-small"))
register_embedder("voyage", _hosted("voyage", "voyage", "VoyageEmbedder", "voyage-3"))
register_embedder("jina", _hosted("jina", "jina", "JinaEmbedder", "jina-embeddings-v3"))
register_embedder("ollama", _hosted("ollama", "ollama", "OllamaEmbedder", "nomic-embed-text"))
