"""What a web page can do to a default ``hivekeep serve``: nothing (server/guard.py).

In process over the ASGI app (``TestClient``) for every rule, and once against a real
``hivekeep serve`` for DNS rebinding, with exactly the request of the finding.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hivekeep import Hive, Settings
from hivekeep.cli import cli
from hivekeep.server.app import create_app
from hivekeep.server.auth import bearer_auth
from hivekeep.server.guard import allowed_hosts, split_host
from hivekeep.testing import ScriptedLLM
from tests.support import VectorTable

from .server_support import start_server

PORT = 8765
LOCAL = f"http://127.0.0.1:{PORT}"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM()  # no reply scripted: any LLM call a page could trigger fails the test


@pytest.fixture
def guarded(tmp_path: Path, llm: ScriptedLLM) -> Iterator[tuple[Hive, TestClient]]:
    settings = Settings(allowed_hosts=("memory.example.com",))
    with Hive(tmp_path / "hive.db", embedder=VectorTable(), settings=settings, llm=llm) as hive:
        hive.create_agent("sam").memorize("Ann likes tea.", category="fact")
        app = create_app(hive, hosts=allowed_hosts(PORT, extra=hive.settings.allowed_hosts))
        with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
            yield hive, client


def code(response: Any) -> tuple[int, str]:  # an httpx Response, of TestClient or not
    return response.status_code, response.json()["error"]["code"]


# -- 1. DNS rebinding -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/agents", "/api/health", "/api/events", "/", "/docs"])
@pytest.mark.parametrize(
    "host",
    [f"evil.example:{PORT}", "evil.example", "127.0.0.1.evil.example", f"localhost:{PORT + 1}"],
)
def test_a_foreign_host_is_misdirected(
    guarded: tuple[Hive, TestClient], host: str, path: str
) -> None:
    _, client = guarded
    response = client.get(path, headers={"Host": host})
    assert code(response) == (421, "misdirected_request")
    assert "Ann" not in response.text


@pytest.mark.parametrize(
    "host",
    [
        f"127.0.0.1:{PORT}",
        f"localhost:{PORT}",
        f"[::1]:{PORT}",
        "memory.example.com",
        f"Memory.Example.com:{PORT}",
    ],
)
def test_loopback_and_listed_names_are_answered(
    guarded: tuple[Hive, TestClient], host: str
) -> None:
    _, client = guarded
    response = client.get("/api/agents", headers={"Host": host})
    assert response.status_code == 200, response.text


def test_the_default_app_answers_loopback_on_any_port_only(tmp_path: Path) -> None:
    hive = Hive(tmp_path / "h.db", embedder=VectorTable(), settings=Settings())
    with hive, TestClient(create_app(hive), base_url="http://localhost:1234") as client:
        assert client.get("/api/agents").status_code == 200
        assert client.get("/api/agents", headers={"Host": "evil.example:1234"}).status_code == 421


def test_split_host() -> None:
    assert split_host("Example.com:8765") == ("example.com", 8765)
    assert split_host("[::1]:80") == ("[::1]", 80)
    assert split_host("[::1]") == ("[::1]", None)
    assert split_host("::1") == ("::1", None)


@pytest.mark.slow
def test_a_real_server_refuses_a_rebound_host(tmp_path: Path) -> None:
    server = start_server(tmp_path / "hive.db", tmp_path / "serve.log")
    try:
        port = server.url.rsplit(":", 1)[1]
        api = server.client()
        assert api.get("/api/agents").status_code == 200
        rebound = api.get("/api/agents", headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 421, server.output()
        assert api.get("/api/agents", headers={"Host": f"localhost:{port}"}).status_code == 200
        forged = api.post(
            "/api/agents/x/tools/list_memories",
            headers={**FORM, "Origin": "http://evil.example"},
        )
        assert forged.status_code == 403
    finally:
        server.stop()


# -- 2. Cross-site requests -------------------------------------------------------------------


def mutating_routes(hive: Hive) -> list[tuple[str, str]]:
    sam = hive.get_agent("sam").id
    return [
        ("POST", f"/api/agents/{sam}/tools/list_memories"),
        ("POST", f"/api/agents/{sam}/tools/review_memories"),  # a paid LLM call
        ("POST", f"/api/agents/{sam}/profile/regenerate"),  # a paid LLM call and a rewrite
        ("POST", f"/api/agents/{sam}/memories"),
        ("PUT", f"/api/agents/{sam}/profile"),
        ("PATCH", f"/api/agents/{sam}"),
        ("POST", "/api/agents"),
    ]


def test_a_cross_site_form_post_is_refused_everywhere(
    guarded: tuple[Hive, TestClient], llm: ScriptedLLM
) -> None:
    hive, client = guarded
    conversation = client.post(
        f"/api/agents/{hive.get_agent('sam').id}/conversations", json={}
    ).json()
    routes = [*mutating_routes(hive), ("POST", f"/api/conversations/{conversation['id']}/compact")]
    for method, url in routes:
        # the finding: an empty form post, as any page's <form method=POST> sends it
        response = client.request(method, url, content=b"", headers=FORM)
        assert code(response) == (415, "unsupported_media_type"), (method, url)
        plain = client.request(method, url, content=b"{}", headers={"Content-Type": "text/plain"})
        assert code(plain) == (415, "unsupported_media_type"), (method, url)
        for foreign in (
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            refused = client.request(method, url, json={}, headers=foreign)
            assert code(refused) == (403, "cross_site_request"), (method, url, foreign)
    assert llm.calls == [], "a page made the server call the model"
    assert [a.name for a in hive.agents()] == ["sam"]


def test_deletes_from_another_site_are_refused(guarded: tuple[Hive, TestClient]) -> None:
    hive, client = guarded
    sam = hive.get_agent("sam")
    [memory] = sam.list_memories().memories
    url = f"/api/agents/{sam.id}/memories/{memory.id}"
    assert code(client.delete(url, headers={"Origin": "http://evil.example"})) == (
        403,
        "cross_site_request",
    )
    assert (
        code(client.delete(f"/api/agents/{sam.id}", headers={"Sec-Fetch-Site": "cross-site"}))[0]
        == 403
    )
    assert sam.list_memories().total == 1


def test_same_origin_and_non_browser_calls_still_work(guarded: tuple[Hive, TestClient]) -> None:
    hive, client = guarded
    sam = hive.get_agent("sam")
    tool = f"/api/agents/{sam.id}/tools/list_memories"
    same = {"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"}
    assert client.post(tool, json={}, headers=same).status_code == 200
    assert (
        client.post(tool, json={}, headers={"Origin": "http://memory.example.com"}).status_code
        == 200
    )
    assert client.post(tool).status_code == 200  # curl -X POST: no body, no content type
    charset = {"Content-Type": "application/json; charset=utf-8"}
    assert client.post(tool, content=b"{}", headers=charset).status_code == 200
    # reads are not checked for content type (nor for a cross-site mark: the browser hides them)
    assert client.get("/api/agents", headers=FORM).status_code == 200
    assert client.get("/api/agents", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


# -- 5. Status codes and tokens ---------------------------------------------------------------


def test_over_budget_has_its_own_status_and_code(guarded: tuple[Hive, TestClient]) -> None:
    hive, client = guarded
    sam = hive.get_agent("sam")
    huge = "## Notes\n" + "- a line of words about the user\n" * 1000
    response = client.put(f"/api/agents/{sam.id}/profile", json={"text": huge})
    assert code(response) == (422, "over_budget")
    assert "budget" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("token", "says"),
    [("short-token", "at least 16"), ("ünïcødé-token-that-is-long", "printable ASCII")],
)
def test_a_token_that_cannot_work_is_refused_at_start(
    token: str, says: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=says):
        bearer_auth(token)
    env = {"HIVEKEEP_API_TOKEN": token}
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "h.db")], env=env)
    assert result.exit_code != 0 and says in result.output, result.output
    assert not (tmp_path / "h.db").exists()  # refused before anything was opened


def test_allowed_hosts_need_a_token(tmp_path: Path) -> None:
    env = {"HIVEKEEP_ALLOWED_HOSTS": "memory.example.com", "HIVEKEEP_EMBEDDINGS": "local"}
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "h.db")], env=env)
    assert result.exit_code != 0 and "needs a token" in result.output, result.output
