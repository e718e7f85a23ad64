"""Issue 26 item 8: a hive model without its API key is said at start (the start line names the
model) and by ``GET /api/settings``; a person gives the running server the key and base URL, which
are used at once and never shown back. A real ``hivekeep serve`` and a local OpenAI-wire server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.server_support import read_sse, start_server
from tests.wire_servers import WireServer, openai_stream

KEY = "sk-test-never-shown-back-1234"


def test_a_missing_key_is_said_at_start_and_a_key_given_in_settings_is_used(
    tmp_path: Path,
) -> None:
    env: dict[str, str | None] = {
        "HIVEKEEP_LLM": "openai:gpt-4o-mini",
        "OPENAI_API_KEY": None,
        "OPENAI_BASE_URL": None,
    }
    server = start_server(tmp_path / "hive.db", tmp_path / "serve.log", env=env)
    try:
        started = server.output()
        assert "model: openai:gpt-4o-mini, NOT USABLE" in started, started
        assert "OPENAI_API_KEY" in started, started
        api = server.client()
        llm = api.get("/api/settings").json()["llm"]
        assert (llm["model"], llm["credentials"]) == ("openai:gpt-4o-mini", {})
        assert "OPENAI_API_KEY" in llm["error"]
        agent = api.post("/api/agents", json={"name": "ann"}).json()
        mine = api.get(f"/api/agents/{agent['id']}/settings").json()
        assert mine["model_id"] is None and "OPENAI_API_KEY" in mine["llm_error"]

        with WireServer() as wire:
            wire.script(openai_stream(["Hello ", "Ann."]))
            given = api.put(
                "/api/settings/llm-credentials",
                json={"provider": "openai", "api_key": KEY, "base_url": f"{wire.url}/v1"},
            )
            assert given.status_code == 200, given.text
            assert KEY not in given.text
            llm = given.json()["llm"]
            assert llm["error"] is None
            assert llm["credentials"] == {
                "openai": {"api_key_set": True, "base_url": f"{wire.url}/v1"}
            }
            conversation = api.post(f"/api/agents/{agent['id']}/conversations", json={}).json()
            with api.stream(
                "POST", f"/api/conversations/{conversation['id']}/chat", json={"message": "Hi"}
            ) as response:
                events = [e for e in read_sse(response) if e.event]
            assert events[-1].event == "reply", events
            assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"

        assert KEY not in api.get("/api/settings").text
        assert KEY not in json.dumps(api.get(f"/api/agents/{agent['id']}/settings").json())
        bad = api.put("/api/settings/llm-credentials", json={"provider": "nope", "api_key": "k"})
        assert bad.status_code == 422 and "Unknown LLM provider" in bad.text
        assert KEY not in server.output()  # nor in the log
        forgotten = api.put("/api/settings/llm-credentials", json={"provider": "openai"})
        assert "OPENAI_API_KEY" in forgotten.json()["llm"]["error"]
    finally:
        server.stop()
