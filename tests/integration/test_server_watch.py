"""Issue 26 item 11: a write by another process (the CLI, a script) to a hive a server has open is
pushed to the server's event stream as ``hive:changed``; the server's own writes are not repeated
as one. A real ``hivekeep serve`` process, and a second Hive on the same file in this process."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.server_support import read_sse, start_server


def test_another_process_write_is_pushed_as_hive_changed(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    db = tmp_path / "hive.db"
    server = start_server(db, tmp_path / "serve.log")
    try:
        api = server.client()
        assert api.post("/api/agents", json={"name": "ann"}).status_code == 201
        with api.stream("GET", "/api/events", timeout=httpx.Timeout(15.0)) as response:
            events = read_sse(response)
            next(events)  # the ": connected" comment: subscribed from here on
            own = {"content": "Written through the server", "category": "fact"}
            assert api.post("/api/agents/ann/memories", json=own).status_code == 201
            with Hive(db, embedder=local_embedder, settings=Settings()) as elsewhere:
                elsewhere.get_agent("ann").memorize("Written by the CLI", category="fact")
            written_at = time.monotonic()
            seen = []
            for event in events:
                if event.event:
                    seen.append(event.event)
                if event.event == "hive:changed":
                    break
            waited = time.monotonic() - written_at
        assert seen == ["memory:created", "hive:changed"], seen
        assert waited < 5, waited
    finally:
        server.stop()
