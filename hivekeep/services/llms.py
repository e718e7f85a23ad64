"""Which model does what: the chat model of each agent, and the models of memory upkeep.

Resolution, most specific first: an LLM object given for the agent in this process
(``hive.set_agent_llm``), the agent's stored ``provider:model`` spec, then the hive's LLM
(``Hive(llm=...)`` or ``HIVEKEEP_LLM``). Compaction may use another model, and the maintenance,
bootstrap and regenerate calls too (SPEC §8, §11): the agent's own ``compacting_model`` /
``extraction_model`` first, then the hive's ``COMPACTING_MODEL`` / ``MEMORY_EXTRACTION_MODEL``.
Specs are turned into provider objects once and cached. A person may give a provider's API key and
base URL to the running process (``set_credentials``, the web UI's Settings): kept in memory only,
never stored, exported, logged or shown back.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from hivekeep.config import Settings
from hivekeep.errors import ValidationError
from hivekeep.providers.llm.base import LLM
from hivekeep.providers.llm.registry import available_llms, create_llm
from hivekeep.redact import shown_url
from hivekeep.store.base import Store

Purpose = Literal["chat", "compaction", "maintenance", "review"]

NO_LLM = (
    "No LLM is configured, and {what} needs one. Set HIVEKEEP_LLM, e.g. "
    "HIVEKEEP_LLM=openai:gpt-4o-mini with OPENAI_API_KEY, HIVEKEEP_LLM=anthropic:claude-haiku-4-5 "
    "with ANTHROPIC_API_KEY, or HIVEKEEP_LLM=ollama:llama3.1 for a local Ollama; in Python pass "
    "Hive(path, llm=...)."
)


class LLMNotConfigured(ValidationError):
    """An operation needs a model and none is configured; the message says what to set."""


class LLMResolver:
    def __init__(self, store: Store, settings: Settings, default: LLM | str | None) -> None:
        self.store = store
        self.settings = settings
        self._default = default if default is not None else settings.llm
        self._per_agent: dict[int, LLM] = {}
        self._built: dict[tuple[str, int | None], LLM] = {}
        self._credentials: dict[str, dict[str, str]] = {}  # provider -> api_key / base_url
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return self._default is not None or bool(self._per_agent)

    def has_upkeep_model(self, agent_id: int) -> bool:
        """Whether this agent's maintenance and bootstrap have a model (its own or the hive's)."""
        if self._default is not None or self.settings.extraction_model:
            return True
        if agent_id in self._per_agent:
            return True
        mine = self.store.get_agent_settings(agent_id)
        return bool(mine.extraction_model or mine.model)

    def set_agent_llm(self, agent_id: int, llm: LLM | None) -> None:
        """Use ``llm`` for this agent in this process (None: back to the stored/hive model)."""
        with self._lock:
            if llm is None:
                self._per_agent.pop(agent_id, None)
            else:
                self._per_agent[agent_id] = llm

    def chat_model(self, agent_id: int, what: str = "chatting") -> LLM:
        """The agent's own model; its context window drives compaction."""
        override = self._per_agent.get(agent_id)
        if override is not None:
            return override
        mine = self.store.get_agent_settings(agent_id)
        window = mine.context_window or self.settings.context_window
        if mine.model:
            return self._build(mine.model, window)
        if self._default is None:
            raise LLMNotConfigured(NO_LLM.format(what=what))
        if isinstance(self._default, str):
            return self._build(self._default, window)
        return self._default  # an object made in Python: its own window

    def for_purpose(self, agent_id: int, purpose: Purpose, *, what: str | None = None) -> LLM:
        """The model for ``purpose``; without one, LLMNotConfigured says ``what`` needs it."""
        special = None
        if purpose in ("compaction", "maintenance"):
            mine = self.store.get_agent_settings(agent_id)
            special = {
                "compaction": mine.compacting_model or self.settings.compacting_model,
                "maintenance": mine.extraction_model or self.settings.extraction_model,
            }[purpose]
        if special:
            return self._build(special, self.settings.context_window)
        return self.chat_model(agent_id, what=what or purpose)

    def default_status(self) -> tuple[str | None, str | None]:
        """The hive's model (its spec or model id; None without one) and why it cannot be used
        (None when it can): a missing API key is found here, before any chat needs it."""
        if self._default is None:
            return None, None
        if not isinstance(self._default, str):
            return self._default.model_id, None
        try:
            self._build(self._default, self.settings.context_window)
        except ValidationError as exc:
            return self._default, str(exc)
        return self._default, None

    def build(self, spec: str) -> LLM:
        """The model a spec names, with the credentials set for its provider; ValidationError
        when it cannot work (unknown provider, no key)."""
        return self._build(spec, self.settings.context_window)

    def set_credentials(
        self, provider: str, *, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        """Use this API key and/or base URL for every ``provider:`` model in this process; both
        None forgets them. Models already built for the provider are rebuilt on next use."""
        if provider not in available_llms():
            raise ValidationError(
                f"Unknown LLM provider {provider!r}; use one of: {', '.join(available_llms())}.",
                field="provider",
            )
        options = {"api_key": api_key, "base_url": base_url}
        with self._lock:
            self._credentials[provider] = {k: v for k, v in options.items() if v}
            if not self._credentials[provider]:
                del self._credentials[provider]
            self._built = {k: m for k, m in self._built.items() if _provider(k[0]) != provider}

    def credentials(self) -> dict[str, dict[str, str | bool | None]]:
        """What was set per provider: whether a key is (never the key) and the base URL (never
        a user, password or query string in it: ``hivekeep.redact``)."""
        with self._lock:
            return {
                provider: {
                    "api_key_set": "api_key" in set_,
                    "base_url": shown_url(set_["base_url"]) if set_.get("base_url") else None,
                }
                for provider, set_ in sorted(self._credentials.items())
            }

    def _build(self, spec: str, window: int | None) -> LLM:
        """The model ``spec`` names, with ``window`` (None: the model's known window) and the
        credentials set for its provider, made once per spec and window."""
        key = (spec, window)
        with self._lock:
            if key not in self._built:
                options: dict[str, Any] = self._credentials.get(_provider(spec), {})
                self._built[key] = create_llm(spec, context_window=window, **options)
            return self._built[key]


def _provider(spec: str) -> str:
    return spec.strip().partition(":")[0]
