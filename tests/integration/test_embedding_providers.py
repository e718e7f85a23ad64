"""The hosted embedders against a real HTTP server on 127.0.0.1 that speaks each wire format.

The server records every request (path, headers, JSON body) and can be scripted, reply by reply,
to fail (429, 5xx, 4xx with the provider's own error body), to stall past the client's timeout,
or to answer with shuffled, missing or misshapen vectors.
"""

from __future__ import annotations

import logging
import socket
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hivekeep.errors import ProviderError, ValidationError
from hivekeep.providers.embeddings import registry
from hivekeep.providers.embeddings.http import PROBE_TEXT, HTTPEmbedder
from hivekeep.providers.embeddings.jina import JinaEmbedder
from hivekeep.providers.embeddings.ollama import OllamaEmbedder
from hivekeep.providers.embeddings.openai import OpenAIEmbedder
from hivekeep.providers.embeddings.registry import create_embedder, register_embedder
from hivekeep.providers.embeddings.voyage import VoyageEmbedder
from tests.wire_servers import Received, Reply, WireServer

KEY = "sk-hivekeep-test-4f9c2e7a1b-NEVER-PRINT-ME"
DIM = 3  # the server's vector length unless a request asks for "dimensions"

# -- the server ---------------------------------------------------------------------------------


def vector_for(text: str, dim: int = DIM) -> list[float]:
    """The server's deterministic vector for a text, so tests can check order."""
    seed = zlib.crc32(text.encode())
    return [float((seed + 7919 * i) % 1000) for i in range(dim)]


def embeddings_reply(request: Received) -> Any:
    """The provider's success reply: Ollama's shape on /api/embed, OpenAI's elsewhere."""
    body = request.body
    vectors = [vector_for(text, body.get("dimensions", DIM)) for text in body["input"]]
    if request.path.endswith("/api/embed"):
        return {"model": body["model"], "embeddings": vectors}
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": 1}}


class FakeProviderServer(WireServer):
    """A wire server whose unscripted reply (and any reply without a body of its own) is the right
    embeddings for the request, at once; ``Reply(transform=...)`` edits those embeddings."""

    def __init__(self) -> None:
        super().__init__(answer=lambda request: Reply(), default_body=embeddings_reply)

    @property
    def inputs(self) -> list[list[str]]:
        return [request.body["input"] for request in self.requests]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


# -- the providers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    name: str
    cls: type[HTTPEmbedder]
    key_env: str | None
    prefix: str  # where the base URL points on the test server
    path: str  # the path a request must reach
    extra_body: dict[str, Any]
    known_model: str
    known_dim: int
    error_body: Callable[[str], Any]  # how this provider words an error reply


OPENAI = Provider(
    "openai",
    OpenAIEmbedder,
    "OPENAI_API_KEY",
    "/v1",
    "/v1/embeddings",
    {},
    "text-embedding-3-small",
    1536,
    lambda message: {"error": {"message": message, "type": "invalid_request_error"}},
)
VOYAGE = Provider(
    "voyage",
    VoyageEmbedder,
    "VOYAGE_API_KEY",
    "/v1",
    "/v1/embeddings",
    {"input_type": "document"},
    "voyage-3-lite",
    512,
    lambda message: {"detail": message},
)
JINA = Provider(
    "jina",
    JinaEmbedder,
    "JINA_API_KEY",
    "/v1",
    "/v1/embeddings",
    {},
    "jina-embeddings-v2-base-en",
    768,
    lambda message: {"detail": message},
)
OLLAMA = Provider(
    "ollama",
    OllamaEmbedder,
    None,
    "",
    "/api/embed",
    {},
    "all-minilm",
    384,
    lambda message: {"error": message},
)
PROVIDERS = [OPENAI, VOYAGE, JINA, OLLAMA]
KEYED = [p for p in PROVIDERS if p.key_env]
INDEXED = [OPENAI, VOYAGE, JINA]

each_provider = pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)

MakeEmbedder = Callable[..., HTTPEmbedder]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real keys, base URLs or proxies from the machine running the tests."""
    for name in ("OPENAI_API_KEY", "VOYAGE_API_KEY", "JINA_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def make(server: FakeProviderServer) -> Iterator[MakeEmbedder]:
    """Builds an embedder aimed at the test server, with no backoff, and closes it afterwards."""
    created: list[HTTPEmbedder] = []

    def build(provider: Provider, model: str = "tiny-embed", **kwargs: Any) -> HTTPEmbedder:
        kwargs.setdefault("api_key", KEY if provider.key_env else None)
        kwargs.setdefault("base_url", server.url + provider.prefix)
        embedder = provider.cls(model, **kwargs)
        embedder.retry_backoff = 0.0
        created.append(embedder)
        return embedder

    yield build
    for embedder in created:
        embedder.close()


def error_texts(error: BaseException) -> str:
    """Everything an error could show: str and repr of it and of each error in its chain."""
    texts = []
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


# -- wire format --------------------------------------------------------------------------------


@each_provider
def test_request_shape_and_vectors_in_input_order(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    texts = ["first memory", "second", "the third one"]
    embedder = make(provider)

    assert embedder.embed(texts) == [vector_for(text) for text in texts]

    [request] = server.requests
    assert request.path == provider.path
    assert request.headers["content-type"] == "application/json"
    if provider.key_env:
        assert request.headers["authorization"] == f"Bearer {KEY}"
    else:
        assert "authorization" not in request.headers
    assert request.body == {"model": "tiny-embed", "input": texts, **provider.extra_body}
    assert embedder.dimension == DIM  # learnt from the reply, no probe
    assert len(server.requests) == 1


@each_provider
def test_model_id_and_known_dimension_need_no_request(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    embedder = make(provider, provider.known_model)

    assert embedder.model_id == f"{provider.name}:{provider.known_model}"
    assert embedder.dimension == provider.known_dim
    assert embedder.embed([]) == []
    assert server.requests == []


@each_provider
def test_unknown_dimension_is_probed_once(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    embedder = make(provider)

    assert embedder.dimension == DIM
    assert embedder.dimension == DIM
    assert server.inputs == [[PROBE_TEXT]]


def test_openai_sends_dimensions_only_to_shorten_a_known_model(
    server: FakeProviderServer, make: MakeEmbedder
) -> None:
    shortened = make(OPENAI, "text-embedding-3-small", dimension=8)
    assert shortened.embed(["a"]) == [vector_for("a", 8)]
    assert server.requests[-1].body["dimensions"] == 8

    compatible = make(OPENAI, "some-local-model", dimension=DIM)
    assert compatible.embed(["a"]) == [vector_for("a")]
    assert "dimensions" not in server.requests[-1].body


@each_provider
def test_texts_are_sent_in_batches(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    texts = ["a", "b", "c", "d", "e"]

    vectors = make(provider, batch_size=2).embed(texts)

    assert vectors == [vector_for(text) for text in texts]
    assert server.inputs == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize(
    ("cls", "size"),
    [(OpenAIEmbedder, 256), (VoyageEmbedder, 128), (JinaEmbedder, 128), (OllamaEmbedder, 64)],
)
def test_default_batch_sizes(cls: type[HTTPEmbedder], size: int) -> None:
    with cls("m", api_key=KEY) as embedder:
        assert embedder.batch_size == size


@pytest.mark.parametrize("provider", INDEXED, ids=lambda p: p.name)
def test_shuffled_indices_are_put_back_in_order(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    texts = ["one", "two", "three", "four"]
    server.script(Reply(transform=lambda reply: {**reply, "data": reply["data"][::-1]}))

    assert make(provider).embed(texts) == [vector_for(text) for text in texts]


@each_provider
def test_wrong_vector_count_is_a_provider_error(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    key = "embeddings" if provider is OLLAMA else "data"
    server.script(Reply(transform=lambda reply: {**reply, key: reply[key][:-1]}))

    with pytest.raises(ProviderError, match="2 vectors for 3 texts"):
        make(provider).embed(["a", "b", "c"])


def test_indices_with_a_gap_are_a_provider_error(
    server: FakeProviderServer, make: MakeEmbedder
) -> None:
    def renumber(reply: Any) -> Any:
        reply["data"][1]["index"] = 5
        return reply

    server.script(Reply(transform=renumber))

    with pytest.raises(ProviderError, match="index"):
        make(OPENAI).embed(["a", "b"])


@each_provider
def test_vectors_of_the_wrong_length_are_a_provider_error(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    with pytest.raises(ProviderError, match="3 dimensions, expected 4"):
        make(provider, dimension=4).embed(["a"])


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply(raw=b"<html>502 Bad Gateway</html>"), "not JSON"),
        (Reply(body={"object": "list"}), "no 'data' list"),
        (Reply(transform=lambda r: {**r, "data": [{"index": 0, "embedding": "x"}]}), "numbers"),
    ],
    ids=["not-json", "no-data", "not-numbers"],
)
def test_misshapen_replies_are_provider_errors(
    reply: Reply, match: str, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    server.script(reply)

    with pytest.raises(ProviderError, match=match):
        make(OPENAI).embed(["a"])


# -- retries and failures -----------------------------------------------------------------------


@each_provider
def test_429_is_retried_after_retry_after_capped(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    server.script(
        Reply(429, body=provider.error_body("rate limited"), headers={"Retry-After": "1"})
    )
    embedder = make(provider)
    embedder.retry_after_cap = 0.25

    started = time.monotonic()
    assert embedder.embed(["a"]) == [vector_for("a")]
    waited = time.monotonic() - started

    assert len(server.requests) == 2
    assert 0.25 <= waited < 0.9  # honoured Retry-After (no backoff here), up to the cap


@each_provider
def test_5xx_is_retried_then_succeeds(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    server.script(Reply(500, body=provider.error_body("boom")), Reply(503))

    assert make(provider).embed(["a"]) == [vector_for("a")]
    assert len(server.requests) == 3


def test_gives_up_after_max_retries(server: FakeProviderServer, make: MakeEmbedder) -> None:
    server.script(*[Reply(500, body=OPENAI.error_body("overloaded"))] * 3)

    with pytest.raises(ProviderError) as caught:
        make(OPENAI, max_retries=2).embed(["a"])

    assert len(server.requests) == 3
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "overloaded" in message
    assert "gave up after 3 attempts" in message


@each_provider
def test_other_4xx_fail_at_once_with_the_servers_message(
    provider: Provider, server: FakeProviderServer, make: MakeEmbedder
) -> None:
    server.script(Reply(400, body=provider.error_body("model 'tiny-embed' not found")))

    with pytest.raises(ProviderError) as caught:
        make(provider).embed(["a"])

    assert len(server.requests) == 1
    message = str(caught.value)
    assert provider.cls.display_name in message
    assert "HTTP 400" in message
    assert "model 'tiny-embed' not found" in message
    assert KEY not in error_texts(caught.value)


def test_timeout_is_retried_then_a_provider_error(
    server: FakeProviderServer, make: MakeEmbedder
) -> None:
    server.script(Reply(delay=2.0), Reply(delay=2.0))
    embedder = make(OLLAMA, timeout=0.2, max_retries=1)

    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timed out after 0\.2 s; gave up after 2 attempts"):
        embedder.embed(["a"])

    assert len(server.requests) == 2
    assert time.monotonic() - started < 1.5


def test_unreachable_server_is_a_provider_error(make: MakeEmbedder) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(ProviderError, match="network"):
        make(OLLAMA, base_url=f"http://127.0.0.1:{port}", max_retries=1).embed(["a"])


FAILURES = {
    "401-echoing-the-key": Reply(401, body=OPENAI.error_body(f"Incorrect API key: {KEY}")),
    "400": Reply(400, body=OPENAI.error_body("bad input")),
    "500-every-time": Reply(500, raw=f"upstream failed for {KEY}".encode()),
    "timeout": Reply(delay=2.0),
    "not-json": Reply(raw=f"oops {KEY}".encode()),
    "wrong-count": Reply(transform=lambda reply: {**reply, "data": []}),
}


@pytest.mark.parametrize("name", FAILURES)
def test_the_api_key_never_appears_in_errors_or_logs(
    name: str,
    server: FakeProviderServer,
    make: MakeEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script(*[FAILURES[name]] * 2)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ProviderError) as caught:
        make(OPENAI, timeout=0.2, max_retries=1).embed(["a"])

    assert KEY not in error_texts(caught.value)
    assert KEY not in caplog.text


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", KEYED, ids=lambda p: p.name)
def test_missing_key_is_a_validation_error_naming_the_variable(provider: Provider) -> None:
    assert provider.key_env is not None
    with pytest.raises(ValidationError, match=provider.key_env):
        provider.cls("some-model")


@pytest.mark.parametrize("provider", KEYED, ids=lambda p: p.name)
def test_key_is_read_from_the_environment(
    provider: Provider,
    server: FakeProviderServer,
    make: MakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert provider.key_env is not None
    monkeypatch.setenv(provider.key_env, KEY)

    make(provider, api_key=None).embed(["a"])

    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_ollama_host_sets_the_base_url(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))  # Ollama's "host:port"

    with OllamaEmbedder("tiny-embed") as embedder:
        assert embedder.embed(["a"]) == [vector_for("a")]

    assert server.requests[0].path == "/api/embed"


def test_openai_base_url_from_the_environment(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")

    with OpenAIEmbedder("tiny-embed", api_key=KEY) as embedder:
        embedder.embed(["a"])

    assert server.requests[0].path == "/v1/embeddings"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dimension": 0},
        {"batch_size": 0},
        {"timeout": 0},
        {"max_retries": -1},
        {"base_url": "ftp://example.com"},
    ],
    ids=lambda kwargs: next(iter(kwargs)),
)
def test_bad_settings_are_validation_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OllamaEmbedder("tiny-embed", **kwargs)
    with pytest.raises(ValidationError):
        OllamaEmbedder(" ")


def test_one_string_instead_of_a_list_is_a_validation_error(make: MakeEmbedder) -> None:
    with pytest.raises(ValidationError, match="list of texts"):
        make(OLLAMA).embed("a whole sentence")


# -- registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "cls", "dimension"),
    [
        ("openai:text-embedding-3-small", OpenAIEmbedder, 1536),
        ("voyage:voyage-3", VoyageEmbedder, 1024),
        ("jina:jina-embeddings-v3", JinaEmbedder, 1024),
        ("ollama:nomic-embed-text", OllamaEmbedder, 768),
        ("ollama:nomic-embed-text:latest", OllamaEmbedder, 768),
    ],
)
def test_create_embedder_parses_provider_and_model(
    spec: str, cls: type[HTTPEmbedder], dimension: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "VOYAGE_API_KEY", "JINA_API_KEY"):
        monkeypatch.setenv(name, KEY)

    embedder = create_embedder(spec)

    assert isinstance(embedder, cls)
    with embedder:
        assert embedder.model_id == spec
        assert embedder.dimension == dimension  # from the table: no request is made


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        create_embedder("cohere:embed-v3")

    message = str(caught.value)
    assert "'cohere'" in message
    for name in ("jina", "local", "ollama", "openai", "voyage"):
        assert name in message


@pytest.mark.parametrize("spec", ["openai", "openai:", "ollama: "])
def test_hosted_spec_without_a_model_is_a_validation_error(spec: str) -> None:
    with pytest.raises(ValidationError, match="names no model"):
        create_embedder(spec)


def test_local_spec_builds_the_bundled_embedder() -> None:
    embedder = create_embedder("local")

    assert type(embedder).__name__ == "LocalEmbedder"
    assert type(embedder).__module__ == "hivekeep.providers.embeddings.local"
    with pytest.raises(ValidationError, match="no model name"):
        create_embedder("local:minilm")


def test_outside_providers_register_the_same_way(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # undone after the test
    register_embedder("mine", lambda model: OllamaEmbedder(model, base_url=server.url))

    embedder = create_embedder("mine:tiny-embed")

    assert "mine" in registry.available_embedders()
    assert isinstance(embedder, OllamaEmbedder)
    with embedder:
        assert embedder.embed(["a"]) == [vector_for("a")]
    with pytest.raises(ValidationError):
        register_embedder("bad:name", lambda model: embedder)
