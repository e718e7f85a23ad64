"""How many tokens each known model can read, so compaction knows when the context is full.

A model name matches the longest table entry it starts with, after dropping a vendor path and
case (``openai/gpt-4o-mini-2024-07-18`` → ``gpt-4o-mini``; ``llama3.1:8b`` → ``llama3.1``).
An unknown model gets ``DEFAULT_CONTEXT_WINDOW`` (8,192), small on purpose: guessing too small
only compacts early, while guessing too big lets a prompt overflow the model, which then fails
or silently drops the oldest text. Pass ``context_window=`` for any model the table gets wrong.

The numbers are what the model was trained for; a server may serve less (Ollama does unless
configured, which the Ollama preset accounts for).
"""

from __future__ import annotations

from hivekeep.errors import ValidationError

DEFAULT_CONTEXT_WINDOW = 8192
# The smallest window accepted: the memory tools' schemas and the system prompt alone take
# about 1,800 tokens, so a smaller model could never read one turn.
MIN_CONTEXT_WINDOW = 2048

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # Anthropic (every Claude 3, 3.5, 3.7 and 4 model; OpenRouter spells them claude-3.5-…)
    "claude": 200_000,
    "claude-2": 100_000,
    "claude-instant": 100_000,
    # Open-weight models, as Ollama / vLLM / OpenRouter name them
    "llama2": 4_096,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3": 8_192,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "qwen2": 32_768,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-nemo": 128_000,
    "mistral-large": 128_000,
    "mistral-small": 32_768,
    "mixtral": 32_768,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "phi3": 4_096,
    "phi4": 16_384,
    "deepseek-r1": 131_072,
    "deepseek-chat": 65_536,
}


def context_window_for(model: str, override: int | None = None) -> int:
    """``override`` if given, else the table's entry for ``model``, else the default."""
    if override is not None:
        return check_context_window(override)
    return known_context_window(model) or DEFAULT_CONTEXT_WINDOW


def known_context_window(model: str) -> int | None:
    """The table's entry for ``model`` (longest matching prefix), or ``None``."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in KNOWN_CONTEXT_WINDOWS if name.startswith(prefix)]
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)] if matches else None


def check_context_window(value: int) -> int:
    """``value`` if it is a whole number of tokens >= ``MIN_CONTEXT_WINDOW``; a clear error
    otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(
            f"context_window={value!r} is not a positive number of tokens; "
            "pass the model's window, e.g. context_window=128000."
        )
    if value < MIN_CONTEXT_WINDOW:
        raise ValidationError(
            f"context_window={value:,} is too small: the memory tools and the system prompt "
            f"alone take about 1,800 tokens, so a window needs at least {MIN_CONTEXT_WINDOW:,}."
        )
    return value
