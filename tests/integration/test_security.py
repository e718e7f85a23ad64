"""Security of ``hivekeep serve``: the token on every route, loopback without one, no CORS, and
secrets kept out of every answer, page, log and export (SQL parameterisation is checked on the
store's source, in ``tests/unit/test_sql_parameterised.py``).

Real server processes on 127.0.0.1; the "model provider" of the secrets test is a dead local
port, so every model call fails the way an unreachable provider fails.
"""

from __future__ import annotations

import ast
import hmac
import inspect
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hivekeep.server.auth as auth
import hivekeep.services.tokens as token_service
from hivekeep import Hive
from hivekeep.core import access_tokens
from hivekeep.server import create_app
from tests.integration.server_support import (
    Server,
    free_port,
    read_sse,
    serve_command,
    server_env,
    start_server,
)
from tests.integration.test_isolation_interfaces import ui_files

TOKEN = f"tok-{secrets.token_hex(24)}"
SECRET = "sk-test-SECRET123"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("secured")
    started = start_server(root / "hive.db", root / "serve.log", token=TOKEN)
    yield started
    started.stop()


def api_routes(hive: Hive) -> list[tuple[str, str]]:
    """(method, path) of every route of the app under /api, from the app's own OpenAPI document
    (every /api route is in it: none is hidden from the schema)."""
    document = create_app(hive, token=TOKEN).openapi()
    return sorted(
        (method.upper(), path)
        for path, operations in document["paths"].items()
        if path.startswith("/api/")
        for method in operations
    )


def concrete(path: str) -> str:
    """A path with its parameters filled in (whether they exist does not matter to auth)."""
    return re.sub(r"\{[^}]+\}", lambda m: "list_memories" if m[0] == "{tool}" else "1", path)


# auth -------------------------------------------------------------------------------------------
def test_every_api_route_refuses_a_missing_or_wrong_token(secured: Server, hive: Hive) -> None:
    routes = api_routes(hive)
    paths = {path for _, path in routes}
    assert {"/api/events", "/api/conversations/{conversation_id}/chat", "/api/settings"} <= paths
    wrong_headers: list[dict[str, str]] = [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN.upper()}"},
        {"Authorization": f"Bearer {TOKEN} {TOKEN}"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"X-API-Key": TOKEN},
        {"Cookie": f"token={TOKEN}"},
    ]
    with httpx.Client(base_url=secured.url, timeout=10, trust_env=False) as client:
        for method, path in routes:
            url = concrete(path)
            body: dict[str, Any] | None = {} if method in {"POST", "PUT", "PATCH"} else None
            for headers in wrong_headers:
                response = client.request(method, url, headers=headers, json=body)
                if path == "/api/health":
                    assert response.status_code == 200
                    continue
                assert response.status_code == 401, (method, url, headers, response.text)
                assert response.json()["error"]["code"] == "unauthorized"
                assert response.headers["www-authenticate"] == "Bearer"
                assert TOKEN not in response.text
            query = client.request(method, f"{url}?token={TOKEN}&access_token={TOKEN}", json=body)
            assert query.status_code == (200 if path == "/api/health" else 401), (method, url)


def test_the_right_token_is_accepted_on_every_api_route(secured: Server, hive: Hive) -> None:
    right = secured.client()
    agent = right.post("/api/agents", json={"name": f"a{secrets.token_hex(4)}"}).json()
    conversation = right.post(f"/api/agents/{agent['id']}/conversations", json={}).json()
    for method, path in api_routes(hive):
        url = re.sub(r"\{agent\}", str(agent["id"]), path)
        url = url.replace("{conversation_id}", str(conversation["id"]))
        url = concrete(url)
        if path == "/api/events":
            with right.stream("GET", url, timeout=10) as stream:
                assert stream.status_code == 200
                assert next(read_sse(stream)).comment == "connected"
            continue
        if method == "DELETE":  # deleting is accepted too, but would end the walk early
            response = right.request(method, url.replace(str(agent["id"]), "ghost"))
        else:
            payload: dict[str, Any] | None = {} if method in {"POST", "PUT", "PATCH"} else None
            response = right.request(method, url, json=payload)
        assert response.status_code not in {401, 403}, (method, url, response.text)
        assert response.status_code < 500, (method, url, response.text)


def test_the_token_is_compared_in_constant_time(
    monkeypatch: pytest.MonkeyPatch, table_hive: Hive
) -> None:
    """Code-level: the admin token (``services/tokens.py``) and a scoped token's hash
    (``core/access_tokens.py``) are compared with ``hmac.compare_digest``, never with ``==``."""
    for module in (token_service, access_tokens):
        tree = ast.parse(inspect.getsource(module))
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compare_digest"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "hmac"
        ]
        assert len(calls) == 1, module.__name__
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                isinstance(op, ast.Eq | ast.NotEq) for op in node.ops
            ):  # ``is None`` tells no secret; ``==`` would stop at the first wrong byte
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                secret = {"bearer", "admin_token", "secret", "stored_hash", "token"}
                assert not names & secret, ast.unparse(node)

    # and at run time every check goes through it, for right and wrong tokens alike
    compared: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return bool(real(a, b))

    monkeypatch.setattr(hmac, "compare_digest", spy)  # the module both files call it on
    assert table_hive.tokens.authenticate(TOKEN, TOKEN) is not None
    assert table_hive.tokens.authenticate("nope", TOKEN) is None
    assert table_hive.tokens.authenticate(None, TOKEN) is None  # nothing sent: nothing to time
    assert compared == [(TOKEN.encode(), TOKEN.encode()), (b"nope", TOKEN.encode())]
    scoped = table_hive.tokens.create("timed").token
    compared.clear()
    assert table_hive.tokens.authenticate(scoped, TOKEN) is not None
    wrong = scoped[:-1] + ("B" if scoped.endswith("A") else "A")  # one character off
    assert table_hive.tokens.authenticate(wrong, TOKEN) is None
    assert len(compared) == 4  # the admin token, then the stored hash, each time
    with pytest.raises(ValueError, match="must not be empty"):
        auth.bearer_auth("   ")


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--host", "0.0.0.0"], {}),
        (["--host", "::"], {}),
        ([], {"HIVEKEEP_HOST": "0.0.0.0"}),
        (["--host", "0.0.0.0"], {"HIVEKEEP_API_TOKEN": "   "}),  # a blank token is no token
    ],
)
def test_without_a_token_the_server_binds_only_to_loopback(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    db = tmp_path / "hive.db"
    refused = subprocess.run(
        serve_command(*args, "--port", str(free_port()), "--db", str(db)),
        env={**server_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "Refusing to listen on" in refused.stderr
    assert not db.exists()


def test_by_default_the_server_listens_on_loopback(secured: Server) -> None:
    assert secured.url.startswith("http://127.0.0.1:")
    assert f"at {secured.url} " in secured.output()


# CORS -------------------------------------------------------------------------------------------
def test_no_cors_headers_for_a_cross_origin_request_or_preflight(secured: Server) -> None:
    evil = {"Origin": "https://evil.example"}
    client = secured.client()
    answers = [
        client.get("/api/agents", headers=evil),
        client.get("/api/health", headers=evil),
        client.get("/", headers=evil),
        secured.client(authorized=False).get("/api/agents", headers=evil),
    ]
    for path in ("/api/agents", "/api/agents/1/memories", "/api/events", "/api/health"):
        answers.append(
            client.options(
                path,
                headers={
                    **evil,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization, content-type",
                },
            )
        )
    for response in answers:
        leaked = [h for h in response.headers if h.lower().startswith("access-control-")]
        assert leaked == [], (response.request.url, response.headers)
        assert response.status_code != 204 or response.request.method != "OPTIONS"


# secrets ----------------------------------------------------------------------------------------
@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A configured model whose provider is a dead local port, with a recognisable key."""
    dead = free_port()  # nothing listens there: every call is refused at once
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HIVEKEEP_LLM", "openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{dead}/v1")
    yield


@pytest.mark.slow
def test_secrets_never_appear_in_answers_pages_logs_or_exports(
    tmp_path: Path, leaky_env: None
) -> None:
    db = tmp_path / "hive.db"
    server = start_server(db, tmp_path / "serve.log")
    seen: list[str] = []
    try:
        api = server.client()

        def keep(response: httpx.Response) -> httpx.Response:
            seen.append(response.text)
            seen.append(str(response.headers))
            assert response.status_code < 500 or response.status_code == 502, response.text
            return response

        agent = keep(api.post("/api/agents", json={"name": "keeper"})).json()
        base = f"/api/agents/{agent['id']}"
        keep(api.post(f"{base}/memories", json={"content": "Ann likes tea.", "category": "fact"}))
        settings = keep(api.get("/api/settings")).json()
        assert settings["llm"]["configured"] is True
        keep(api.get(f"{base}/settings"))
        keep(api.put(f"{base}/settings", json={"model": "openai:gpt-4o"}))
        keep(api.put(f"{base}/settings", json={"model": "anthropic:claude-sonnet-4-5"}))
        keep(api.put(f"{base}/settings", json={"model": "nosuch:model"}))
        keep(api.get(f"{base}/settings"))
        conversation = keep(api.post(f"{base}/conversations", json={"title": "t"})).json()["id"]
        with api.stream(
            "POST", f"/api/conversations/{conversation}/chat", json={"message": "hello"}
        ) as chat:
            text = chat.read().decode()
            seen.append(text)
        assert chat.status_code in {200, 502}
        assert "error" in text  # the provider is down: the failure is reported, without the key
        keep(api.get(f"/api/conversations/{conversation}/messages"))
        keep(api.get(f"/api/conversations/{conversation}/context"))
        keep(api.post(f"{base}/profile/regenerate"))
        for url in ("/openapi.json", "/docs", *ui_files()):
            keep(api.get(url))
        with api.stream("GET", "/api/events", params={"after": 0}, timeout=1.5) as events:
            try:
                for line in events.iter_lines():
                    seen.append(line)
            except httpx.ReadTimeout:
                pass  # the replay is over: the stream only waits now
    finally:
        server.stop()
    log = server.output()
    assert "POST /api/conversations" in log  # the log is there, and was read
    exports = [  # the whole hive, and one agent, side by side
        subprocess.Popen(
            [sys.executable, "-m", "hivekeep", "export", *extra, "--db", str(db)],
            env=server_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for extra in ([], ["--agent", "keeper"])
    ]
    for export in exports:
        out, err = export.communicate(timeout=60)
        assert export.returncode == 0, err
        assert '"keeper"' in out
        seen += [out, err]
    for text in [*seen, log]:
        assert SECRET not in text and "SECRET123" not in text, text[:2000]
