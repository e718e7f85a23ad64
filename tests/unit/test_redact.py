"""URLs shown and logged without their credentials (issue 32, items 7 and 8)."""

from __future__ import annotations

import pytest

from hivekeep.errors import ValidationError
from hivekeep.providers.embeddings.ollama import OllamaEmbedder
from hivekeep.redact import redact_urls, shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pw@host:8443/v1", "https://…@host:8443/v1"),
        ("https://host/v1?api-key=K&x=1", "https://host/v1?…"),
        ("http://token@host/v1#frag", "http://…@host/v1?…"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("https://a:b@c@host/v1", "https://…@host/v1"),
    ],
)
def test_a_shown_url_has_no_user_password_or_query(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_every_url_in_a_log_line_is_redacted() -> None:
    line = 'POST http://u:SECRET@127.0.0.1:9/v1/chat?key=K2 "HTTP/1.1 200 OK"'
    assert redact_urls(line) == 'POST http://…@127.0.0.1:9/v1/chat?… "HTTP/1.1 200 OK"'
    assert redact_urls("GET /api/agents 200 1.0ms") == "GET /api/agents 200 1.0ms"


def test_a_provider_names_its_base_url_without_credentials() -> None:
    with pytest.raises(ValidationError) as refused:
        OllamaEmbedder("nomic-embed-text", base_url="ftp://user:SECRET@host/x?key=K2")
    assert "SECRET" not in str(refused.value) and "K2" not in str(refused.value)
