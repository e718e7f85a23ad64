"""LLMs by name: ``create_llm("openai:gpt-4o-mini")``, ``create_llm("ollama:llama3.1")``.

Built-in providers register here exactly as an outside package would, with
``register_llm(name, factory)``. A factory takes the model part of the spec and keyword options
(``context_window``, ``api_key``, ``base_url``, ``timeout``, ``max_retries``, ``max_tokens``,
``usage_log``, …) and returns an ``LLM``. Provider modules, and with them the ``openai`` and
``anthropic`` SDKs, are imported only when their factory runs.
"""

from __future__ import annotations

from typing import Any, Protocol

from hivekeep.errors import ValidationError, install_extra
from hivekeep.providers.llm.base import LLM


class LLMFactory(Protocol):
    """Builds an LLM for one model name; raises ``ValidationError`` for bad settings."""

    def __call__(self, model: str, /, **options: Any) -> LLM: ...


_REGISTRY: dict[str, LLMFactory] = {}

EXAMPLES = {
    "openai": "gpt-4o-mini",
    "ollama": "llama3.1",
    "openrouter": "anthropic/claude-3.5-sonnet",
    "groq": "llama-3.1-8b-instant",
    "vllm": "Qwen/Qwen2.5-7B-Instruct",
    "lmstudio": "qwen2.5-7b-instruct",
    "anthropic": "claude-haiku-4-5",
}


def register_llm(name: str, factory: LLMFactory) -> None:
    """Make ``name:model`` a valid spec; a later registration replaces an earlier one."""
    if not name or ":" in name or name != name.strip():
        raise ValidationError(
            f"LLM provider name {name!r} must be non-empty, without ':' or spaces."
        )
    _REGISTRY[name] = factory


def available_llms() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_REGISTRY)


def create_llm(spec: str, *, context_window: int | None = None, **options: Any) -> LLM:
    """The LLM a ``provider:model`` spec names; ``context_window`` overrides the known window.

    Everything a provider needs is checked here, not at the first call: an unknown provider, a
    missing model or a missing API key (named by its environment variable) raise
    ``ValidationError`` at once.
    """
    name, _, model = spec.strip().partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValidationError(
            f"Unknown LLM provider {name!r} in {spec!r}; use one of: "
            f"{', '.join(available_llms())} (e.g. 'openai:gpt-4o-mini' or 'ollama:llama3.1')."
        )
    model = model.strip()
    if not model:
        example = EXAMPLES.get(name, "<model>")
        raise ValidationError(
            f"The LLM spec {spec!r} names no model; use '{name}:<model>', e.g. '{name}:{example}'."
        )
    return factory(model, context_window=context_window, **options)


def _openai_compatible(preset: str) -> LLMFactory:
    def factory(model: str, /, **options: Any) -> LLM:
        try:
            from hivekeep.providers.llm.openai_compat import OpenAICompatLLM
        except ImportError as exc:
            raise _needs_sdk(preset, "openai", exc) from exc
        return OpenAICompatLLM(model, preset=preset, **options)

    return factory


def _anthropic(model: str, /, **options: Any) -> LLM:
    try:
        from hivekeep.providers.llm.anthropic import AnthropicLLM
    except ImportError as exc:
        raise _needs_sdk("anthropic", "anthropic", exc) from exc
    return AnthropicLLM(model, **options)


def _needs_sdk(provider: str, sdk: str, exc: ImportError) -> Exception:
    """The error for a spec whose SDK is not installed: the extra that installs it. (The SDKs
    are extras, so a hive with no hosted model does not carry them.)"""
    if exc.name is None or exc.name.split(".")[0] != sdk:
        return exc  # another import failed inside the provider: not a missing extra
    return ValidationError(
        f"{provider}: models need the {sdk} package, which is not installed. "
        f"Install it with: {install_extra(sdk)}."
    )


for _preset in ("openai", "ollama", "openrouter", "groq", "vllm", "lmstudio"):
    register_llm(_preset, _openai_compatible(_preset))
register_llm("anthropic", _anthropic)
