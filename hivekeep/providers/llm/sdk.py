"""What the two SDK-backed providers share: settings, client options and error translation.

The OpenAI and Anthropic SDKs are generated from the same template, so their clients take the
same settings (``api_key``, ``base_url``, ``timeout``, ``max_retries``) and raise the same family
of exceptions (a base, a status error with ``status_code`` and ``body``, a connection error and a
timeout below it). ``SDKChatLLM`` owns everything around the wire call (``ChatLLM``, below it,
checks the call and records its usage); a provider implements ``_complete`` and ``_stream`` (one
SDK call each, converting to and from hivekeep's types) and ``_close``.

Retries with exponential backoff are the SDKs' own: ``max_retries`` (default 3) retries of
timeouts, connection errors, 408, 409, 429 and 5xx, honouring the server's ``retry-after-ms`` and
``retry-after`` headers; other 4xx fail at once. Every failure becomes a ``ProviderError`` naming
the provider, model, HTTP status and the server's own message, with the API key redacted.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, TypedDict

from hivekeep.core.messages import Message
from hivekeep.errors import ProviderError, ValidationError
from hivekeep.providers.base import Remote, check_client_limits
from hivekeep.providers.llm.base import UsageLog
from hivekeep.providers.llm.calls import ChatLLM, LLMCall
from hivekeep.providers.llm.context_windows import context_window_for
from hivekeep.redact import redact_urls, shown_url

DEFAULT_TIMEOUT = 120.0  # seconds per attempt; a long answer from a slow local model fits
DEFAULT_MAX_RETRIES = 3
_MAX_MESSAGE_CHARS = 500
_MIN_REDACTED_KEY_CHARS = 8  # shorter "keys" (placeholders) would mangle ordinary words
_RETRIED_STATUSES = {408, 409, 429}  # and every 5xx: what the SDKs retry


@dataclass(frozen=True)
class Endpoint:
    """Where a provider lives and how it authenticates: the data a preset differs by."""

    provider: str  # the registry name, the part of a spec before ':'
    display_name: str
    default_base_url: str
    api_key_env: str | None  # None: the server takes no key
    base_url_env: str | None = None
    key_required: bool = True
    env_url_path: str = ""  # appended to a base URL read from base_url_env (OLLAMA_HOST: "/v1")


class SDKErrors(NamedTuple):
    """One SDK's exception classes, by role (the SDKs share the shape, not the classes)."""

    base: type[Exception]
    status: type[Exception]
    connection: type[Exception]
    timeout: type[Exception]


class ClientOptions(TypedDict, total=False):
    """The keyword options every SDK provider takes, as ``SDKChatLLM.__init__`` documents them."""

    api_key: str | None
    base_url: str | None
    context_window: int | None
    timeout: float
    max_retries: int
    max_tokens: int | None
    usage_log: UsageLog | None


class SDKChatLLM(ChatLLM, Remote):
    """Base of the SDK-backed LLMs: construction checks, the client's settings, errors.

    A provider sets ``sdk_errors`` and implements ``_complete``, ``_stream`` and ``_close``. Use
    as a context manager, or call ``close()``, to release connections. The options: ``api_key``
    (else the endpoint's environment variable), ``base_url`` (else its variable, else its
    default), ``context_window`` (else the model's known window), ``timeout`` (seconds per
    attempt), ``max_retries``, ``max_tokens`` (the default of a call) and ``usage_log``.
    """

    sdk_errors: ClassVar[SDKErrors]
    default_max_tokens: ClassVar[int | None] = None  # None: let the server decide

    def __init__(
        self,
        model: str,
        endpoint: Endpoint,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_tokens: int | None = None,
        usage_log: UsageLog | None = None,
    ) -> None:
        model = model.strip()
        if not model:
            raise ValidationError(
                f"The {endpoint.display_name} LLM spec names no model; "
                f"use '{endpoint.provider}:<model>'."
            )
        check_client_limits(timeout, max_retries, max_tokens=max_tokens)
        self.model = model
        self.endpoint = endpoint
        self._api_key = self._resolve_key(api_key)
        self.base_url = self._resolve_base_url(base_url)
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_tokens = max_tokens if max_tokens is not None else self.default_max_tokens
        self.usage_log = usage_log if usage_log is not None else UsageLog()
        self._context_window = context_window_for(model, context_window)

    @property
    def model_id(self) -> str:
        return f"{self.endpoint.provider}:{self.model}"

    @property
    def context_window(self) -> int:
        return self._context_window

    def close(self) -> None:
        self._close()

    # -- what a provider implements ---------------------------------------------------------

    @abstractmethod
    def _close(self) -> None: ...

    # -- machinery ---------------------------------------------------------------------------

    def _resolve_key(self, api_key: str | None) -> str | None:
        env = self.endpoint.api_key_env
        key = api_key or (os.environ.get(env) if env else None)
        if not key and self.endpoint.key_required:
            raise ValidationError(
                f"The {self.endpoint.display_name} LLM needs an API key: set {env} "
                "or pass api_key=."
            )
        return key or None

    def _resolve_base_url(self, base_url: str | None) -> str:
        env = self.endpoint.base_url_env
        from_env = (os.environ.get(env) or "").strip().rstrip("/") if env else ""
        if from_env and "://" not in from_env:
            from_env = f"http://{from_env}"  # OLLAMA_HOST is commonly "host:port"
        if from_env:
            from_env += self.endpoint.env_url_path
        url = ((base_url or "").strip() or from_env or self.endpoint.default_base_url).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValidationError(
                f"The {self.endpoint.display_name} base URL {shown_url(url)!r} is not an http(s) "
                "URL; pass base_url='https://host/path'."
            )
        return url

    def _check(
        self, messages: list[Message], max_tokens: int | None, timeout: float | None
    ) -> None:
        if not messages:
            raise ValidationError("An LLM call needs at least one message; got none.")
        check_client_limits(timeout if timeout is not None else 1.0, 0, max_tokens=max_tokens)

    @contextmanager
    def _errors(self, call: LLMCall) -> Iterator[None]:
        """Turn the SDK's exceptions into ``ProviderError``s that say what happened."""
        try:
            yield
        except self.sdk_errors.base as exc:
            error = self._error(self._describe(exc, call.timeout))
            if self._redact(str(exc)) != str(exc):
                raise error from None  # the server echoed the key: keep it out of tracebacks
            raise error from exc

    def _describe(self, exc: Exception, timeout: float | None) -> str:
        errors = self.sdk_errors
        attempts = self.max_retries + 1
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        if isinstance(exc, errors.timeout):
            seconds = timeout if timeout is not None else self.timeout
            return f"timed out after {seconds:g} s ({tries})"
        if isinstance(exc, errors.connection):
            cause = exc.__cause__ or exc
            reason = redact_urls(f"{type(cause).__name__}: {cause}; {tries}")
            return f"could not reach {shown_url(self.base_url)} ({reason})"
        if isinstance(exc, errors.status):
            status = int(getattr(exc, "status_code", 0))
            hint = ""
            if status in (401, 403) and self.endpoint.api_key_env:
                hint = f" (check the key in {self.endpoint.api_key_env})"
            elif status == 404:
                hint = " (check the model name and the base URL)"
            retried = status in _RETRIED_STATUSES or status >= 500
            message, kind = server_message(getattr(exc, "body", None), str(exc))
            kind = f" {kind}" if kind else ""
            return f"failed with HTTP {status}{kind}{hint}: {message}" + (
                f"; gave up after {tries}" if retried and attempts > 1 else ""
            )
        return f"failed ({type(exc).__name__}: {_snippet(str(exc))})"

    def _error(self, failure: str) -> ProviderError:
        """A ``ProviderError`` for this model; providers also raise it for unusable replies."""
        name = self.endpoint.display_name
        message = f"{name} request for model {self.model!r} {failure.rstrip('.')}."
        return ProviderError(self._redact(message))

    def _redact(self, text: str) -> str:
        key = self._api_key or ""
        return text.replace(key, "[redacted]") if len(key) >= _MIN_REDACTED_KEY_CHARS else text


def server_message(body: object, fallback: str) -> tuple[str, str | None]:
    """The error text a server put in its reply body, and its error type when it gives one.

    OpenAI-style bodies are ``{"error": {"message", "type"}}`` (the SDKs often pass the inner
    object); Anthropic's ``{"type": "error", "error": {"type", "message"}}``; some compatible
    servers send ``{"error": "text"}`` or ``{"detail": "text"}``.
    """
    found: object = None
    kind: object = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            body = error
        elif isinstance(error, str) and error:
            found = error
        if isinstance(body, dict):
            found = found or body.get("message") or body.get("detail")
            kind = body.get("type")
    elif isinstance(body, str) and body.strip():
        found = body
    text = _snippet(str(found) if found else fallback) or "(empty body)"
    return text, kind if isinstance(kind, str) and kind and kind != "error" else None


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "…"
