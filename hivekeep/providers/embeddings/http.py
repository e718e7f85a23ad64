"""The shared machinery of hosted embedding APIs: one client, batching, retries, clear errors.

OpenAI, Voyage, Jina and Ollama differ only in data (endpoint, request body, reply shape,
defaults), so each provider module is a few class attributes and at most two small hooks on
``HTTPEmbedder``. Everything that can go wrong on the wire is handled once, here:

- texts are sent in batches of ``batch_size``;
- network errors, timeouts, HTTP 429 and 5xx are retried ``max_retries`` times with exponential
  backoff and jitter (a 429's ``Retry-After`` is honoured, capped); other 4xx fail at once;
- every failure is a ``ProviderError`` naming the provider, the HTTP status and the server's own
  message, with the API key redacted should a server echo it back.
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import httpx

from hivekeep.errors import ProviderError, ValidationError
from hivekeep.providers.base import Remote, check_client_limits
from hivekeep.redact import redact_urls, shown_url

logger = logging.getLogger(__name__)

PROBE_TEXT = "dimension probe"
_MAX_MESSAGE_CHARS = 500
_MIN_REDACTED_KEY_CHARS = 8  # shorter "keys" would mangle ordinary words in messages


class MalformedReply(ValueError):
    """A reply that parsed as JSON but does not have the shape the provider documents."""


def parse_indexed_data(payload: Any) -> list[Any]:
    """Vectors from an OpenAI-style reply, ``{"data": [{"index": i, "embedding": [...]}]}``.

    Servers may return items in any order, so they are sorted by ``index``; the indices must then
    be exactly 0..n-1. An item without ``index`` keeps its position (some compatible servers).
    """
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise MalformedReply("it has no 'data' list")
    items = [(item.get("index", position), item["embedding"]) for position, item in enumerate(data)]
    items.sort(key=lambda pair: pair[0])
    if [index for index, _ in items] != list(range(len(items))):
        raise MalformedReply("its 'index' values are not 0..n-1 without gaps or repeats")
    return [vector for _, vector in items]


class HTTPEmbedder(Remote):
    """Base of the hosted embedders; subclasses set the class attributes and maybe two hooks.

    A subclass defines ``provider`` (the registry name), ``display_name``, ``endpoint`` (path under
    the base URL), ``default_base_url``, ``api_key_env`` (``None`` if no key is needed),
    ``default_batch_size`` and ``known_dimensions``; it overrides ``request_body`` and
    ``parse_vectors`` only when its wire format differs from OpenAI's.

    ``dimension`` comes from the argument, else from ``known_dimensions``, else from the first
    reply: the first ``embed`` call sets it, or reading ``dimension`` before any call embeds one
    short probe text (so, on Python 3.11, even ``isinstance(embedder, Embedder)`` may probe, as
    that check reads every protocol attribute). Use as a context manager, or call ``close()``, to
    release connections::

        with OpenAIEmbedder("text-embedding-3-small") as embedder:
            vectors = embedder.embed(["a memory", "another"])
    """

    provider: ClassVar[str]
    display_name: ClassVar[str]
    endpoint: ClassVar[str]
    default_base_url: ClassVar[str]
    api_key_env: ClassVar[str | None] = None
    base_url_env: ClassVar[str | None] = None
    default_batch_size: ClassVar[int] = 64
    known_dimensions: ClassVar[Mapping[str, int]] = {}

    # Retry pacing, in seconds. Plain attributes so a caller (or a test) can tune one instance.
    retry_backoff: float = 0.5
    retry_backoff_cap: float = 8.0
    retry_after_cap: float = 30.0

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        _check_settings(model, dimension, timeout, max_retries, batch_size)
        key = api_key or (os.environ.get(self.api_key_env) if self.api_key_env else None)
        if self.api_key_env and not key:
            raise ValidationError(
                f"The {self.display_name} embedder needs an API key: set {self.api_key_env} "
                "or pass api_key=."
            )
        self.model = model
        self.base_url = self._resolve_base_url(base_url)
        self.batch_size = batch_size or self.default_batch_size
        self.max_retries = max_retries
        self._timeout = timeout
        self._requested_dimension = dimension
        self._dimension = dimension or self._known_dimension()
        self._secret = key or ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            logger.info("Probing %s for the dimension of %s", self.display_name, self.model)
            self._embed_batch([PROBE_TEXT])
        assert self._dimension is not None  # set by _embed_batch
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; sent in batches of ``batch_size``."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a list of texts, not one string; wrap it in [].")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(list(texts[start : start + self.batch_size])))
        return vectors

    def close(self) -> None:
        self._client.close()

    # -- hooks a provider may override -----------------------------------------------------

    def request_body(self, texts: list[str]) -> dict[str, Any]:
        """The JSON body for one batch."""
        return {"model": self.model, "input": texts}

    def parse_vectors(self, payload: Any) -> list[Any]:
        """The raw vectors of one reply, in input order (validated afterwards by the base)."""
        return parse_indexed_data(payload)

    # -- machinery ---------------------------------------------------------------------------

    def _resolve_base_url(self, base_url: str | None) -> str:
        env = os.environ.get(self.base_url_env) if self.base_url_env else None
        url = (base_url or env or self.default_base_url).strip().rstrip("/")
        if "://" not in url:
            url = f"http://{url}"  # OLLAMA_HOST is commonly "host:port"
        if not url.startswith(("http://", "https://")):
            raise ValidationError(
                f"The {self.display_name} base URL {shown_url(url)!r} is not an http(s) URL; "
                "pass base_url='https://host/path'."
            )
        return url

    def _known_dimension(self) -> int | None:
        known = self.known_dimensions
        return known.get(self.model) or known.get(self.model.removesuffix(":latest"))

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        payload = self._post(self.request_body(texts))
        try:
            raw = self.parse_vectors(payload)
        except MalformedReply as exc:
            raise self._bad_reply(str(exc)) from exc
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            detail = f"its shape is unexpected ({type(exc).__name__}: {exc})"
            raise self._bad_reply(detail) from exc
        if len(raw) != len(texts):
            raise self._bad_reply(f"it holds {len(raw)} vectors for {len(texts)} texts")
        return [self._check_vector(vector) for vector in raw]

    def _check_vector(self, raw: Any) -> list[float]:
        if not isinstance(raw, list) or not raw:
            raise self._bad_reply("a vector is not a non-empty list of numbers")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
            raise self._bad_reply("a vector holds something other than numbers")
        vector = [float(x) for x in raw]
        if not all(math.isfinite(x) for x in vector):
            raise self._bad_reply("a vector holds NaN or infinity")
        if self._dimension is None:
            self._dimension = len(vector)
        elif len(vector) != self._dimension:
            raise self._bad_reply(
                f"a vector has {len(vector)} dimensions, expected {self._dimension}"
            )
        return vector

    def _bad_reply(self, detail: str) -> ProviderError:
        return ProviderError(
            f"{self.display_name} returned an unusable embeddings reply for model "
            f"{self.model!r}: {self._redact(detail)}."
        )

    def _post(self, body: dict[str, Any]) -> Any:
        """POST with retries; the decoded JSON reply of the first successful attempt."""
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            cause: Exception | None = None
            try:
                response = self._client.post(self.endpoint, json=body)
            except httpx.TimeoutException as exc:
                failure, cause = f"timed out after {self._timeout:g} s", exc
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                failure, cause = f"failed on the network ({type(exc).__name__}: {exc})", exc
            except httpx.HTTPError as exc:  # e.g. an unsupported protocol: retrying won't help
                raise self._error(f"failed ({type(exc).__name__}: {exc})") from exc
            else:
                if response.is_success:
                    return self._decode(response)
                failure = self._describe_status(response)
                if response.status_code != 429 and response.status_code < 500:
                    raise self._error(failure)
                retry_after = _retry_after(response)
            if attempt == attempts:
                tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
                raise self._error(f"{failure}; gave up after {tries}") from cause
            delay = self._delay(attempt, retry_after)
            logger.warning(
                "%s embeddings request %s; retry %d of %d in %.2f s",
                self.display_name,
                self._redact(failure),
                attempt,
                self.max_retries,
                delay,
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_cap)
        ceiling = min(self.retry_backoff_cap, self.retry_backoff * 2.0 ** (attempt - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise self._bad_reply(f"it is not JSON ({_snippet(response.text)!r})") from exc

    def _describe_status(self, response: httpx.Response) -> str:
        hint = ""
        if response.status_code in (401, 403) and self.api_key_env:
            hint = f" (check the key in {self.api_key_env})"
        return (
            f"failed with HTTP {response.status_code} {response.reason_phrase}{hint}: "
            f"{_server_message(response)}"
        )

    def _error(self, failure: str) -> ProviderError:
        message = f"{self.display_name} embeddings request for model {self.model!r} {failure}"
        return ProviderError(self._redact(message))

    def _redact(self, text: str) -> str:
        text = redact_urls(text)  # a base URL's user, password or query string
        if len(self._secret) < _MIN_REDACTED_KEY_CHARS:
            return text
        return text.replace(self._secret, "[redacted]")


def _check_settings(
    model: str, dimension: int | None, timeout: float, max_retries: int, batch_size: int | None
) -> None:
    if not model.strip():
        raise ValidationError(
            "The embedding model name is empty; pass one, e.g. 'nomic-embed-text'."
        )
    if dimension is not None and dimension < 1:
        raise ValidationError(f"dimension={dimension} is not positive; pass None to detect it.")
    check_client_limits(timeout, max_retries, batch_size=batch_size)


def _server_message(response: httpx.Response) -> str:
    """The error text a provider put in its reply, wherever that provider puts it."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    found: object = None
    if isinstance(payload, dict):
        error = payload.get("error")  # OpenAI: {"error": {"message"}}; Ollama: {"error": "..."}
        found = error.get("message") if isinstance(error, dict) else error
        found = found or payload.get("detail") or payload.get("message")  # Voyage, Jina
    text = found if isinstance(found, str) else (str(found) if found else response.text)
    return _snippet(text) or "(empty body)"


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "…"


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), if usable."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None
