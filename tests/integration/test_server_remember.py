"""``POST /api/agents/{agent}/remember`` (issue 36) on a real server over the scripted model."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import Server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("remember"))
    yield started
    started.stop()


def test_remember_answers_what_was_added_and_refuses_a_bad_body(server: Server) -> None:
    api: httpx.Client = server.client()
    agent = api.post("/api/agents", json={"name": f"a{secrets.token_hex(6)}"}).json()
    url = f"/api/agents/{agent['id']}/remember"
    messages = [
        {"role": "user", "content": "I drink green tea every morning."},
        {"role": "assistant", "content": "Noted."},
    ]
    response = api.post(url, json={"messages": messages}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "done"
    (added,) = body["added"]
    assert added["content"] == DEFAULT_SCRIPT["archive"][0]["content"]
    assert body["profile_updated"] is True
    again = api.post(url, json={"text": "Green tea, every morning."}, timeout=60).json()
    assert again["added"] == [] and [m["id"] for m in again["left_alone"]] == [added["id"]]
    for bad in ({"text": "x", "messages": messages}, {}, {"messages": [{"content": "no role"}]}):
        refused = api.post(url, json=bad)
        assert refused.status_code == 422, (bad, refused.text)
