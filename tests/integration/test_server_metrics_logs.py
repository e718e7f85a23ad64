"""``/metrics`` and JSON logs of a real ``hivekeep serve`` (issue 29): the scrape parsed with
the Prometheus client's own parser, and every log line read back as JSON."""

from __future__ import annotations

import json
import random
import secrets
import string
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.integration.server_support import Server, read_sse, start_server

ADMIN = f"admin-{secrets.token_hex(16)}"
SECRET_TEXT = "The vault code is 7-4-1-9 behind the painting"  # must never reach the log


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("observed")
    started = start_server(
        root / "hive.db", root / "serve.log", token=ADMIN, HIVEKEEP_LOG_FORMAT="json"
    )
    try:
        yield started
    finally:
        started.stop()


def scrape(server: Server) -> dict[str, list[Sample]]:
    response = server.client().get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {f.name: f.samples for f in text_string_to_metric_families(response.text)}


def value(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def test_metrics_are_behind_the_api_auth_and_count_what_the_server_did(server: Server) -> None:
    assert server.client(authorized=False).get("/metrics").status_code == 401
    api = server.client()
    assert api.post("/api/agents", json={"name": "metered"}).status_code == 201
    memory = {"content": SECRET_TEXT, "category": "fact"}
    assert api.post("/api/agents/metered/memories", json=memory).status_code == 201
    assert api.post("/api/agents/metered/memories", json=memory).status_code == 200  # duplicate
    recalled = api.post("/api/agents/metered/tools/recall", json={"query": "vault code"})
    assert recalled.status_code == 200
    assert api.get("/api/agents/nobody").status_code == 404
    assert api.get("/").status_code == 200  # the web UI's page
    assert api.get(f"/api/no-such-route/{secrets.token_hex(4)}").status_code == 404

    with api.stream("GET", "/api/events", timeout=httpx.Timeout(10.0)) as stream:
        events = read_sse(stream)  # held: a dropped reader would close the stream
        assert next(events).comment == "connected"
        families = scrape(server)
    assert all(name.startswith("hivekeep_") for name in families)
    assert (
        value(families["hivekeep_event_stream_subscribers"], "hivekeep_event_stream_subscribers")
        == 1
    )

    requests = families["hivekeep_http_requests"]
    route = "/api/agents/{agent}/memories"
    assert value(requests, "hivekeep_http_requests_total", route=route, method="POST") == 2
    assert (
        value(requests, "hivekeep_http_requests_total", route="/api/agents/{agent}", status="404")
        == 1
    )
    assert value(requests, "hivekeep_http_requests_total", route="/", method="GET") == 1
    unmatched = [s for s in requests if s.labels.get("route") == "unmatched"]
    assert unmatched and all("no-such-route" not in str(s.labels) for s in requests)
    latency = families["hivekeep_http_request_duration_seconds"]
    assert value(latency, "hivekeep_http_request_duration_seconds_count", route=route) == 2
    memorized = families["hivekeep_memorize"]
    assert value(memorized, "hivekeep_memorize_total", outcome="stored") == 1
    assert value(memorized, "hivekeep_memorize_total", outcome="duplicate") == 1
    arms = families["hivekeep_recall_arm_duration_seconds"]
    for arm in ("vector", "full_text", "fusion", "subject"):
        # the subject arm runs when the embedder's calibration weighs it (the bundled model's)
        count = value(arms, "hivekeep_recall_arm_duration_seconds_count", arm=arm)
        assert count >= (0 if arm == "subject" else 1), arm
    assert value(families["hivekeep_vector_cache_vectors"], "hivekeep_vector_cache_vectors") >= 1
    for family in ("hivekeep_compaction_runs", "hivekeep_maintenance_runs"):
        assert family in families  # declared from the start, counted when they run
    # the stream closed: the gauge goes back down
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        gauge = scrape(server)["hivekeep_event_stream_subscribers"]
        if value(gauge, "hivekeep_event_stream_subscribers") == 0:
            break
        time.sleep(0.1)
    else:
        pytest.fail("hivekeep_event_stream_subscribers stayed up after the stream closed")


def test_json_logs_are_one_object_a_line_with_request_id_and_agent_and_no_memory_text(
    server: Server,
) -> None:
    api = server.client()
    api.post("/api/agents", json={"name": "logged"})
    memory = {"content": SECRET_TEXT + " (logged)", "category": "fact"}
    made = api.post("/api/agents/logged/memories", json=memory, headers={"X-Request-ID": "req-42"})
    assert made.headers["X-Request-ID"] == "req-42"
    assert len(api.get("/api/agents").headers["X-Request-ID"]) == 16  # made up when not sent
    api.get("/api/agents/logged/memories", params={"query": "vault code painting"})
    lines = [line for line in server.output().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    assert records
    assert all(
        set(r) >= {"time", "level", "logger", "message", "agent", "request_id"} for r in records
    )
    tagged = [r for r in records if r["request_id"] == "req-42"]
    assert tagged and all(r["agent"] == "logged" for r in tagged)
    assert any("/api/agents/logged/memories" in r["message"] for r in tagged)
    text = Path(server.log).read_text()
    assert "vault" not in text and "painting" not in text  # neither the memory nor the query
    non_json = [
        line
        for line in text.splitlines()
        if line.strip() and not line.startswith("{") and not line.startswith("hivekeep: serving")
    ]
    assert non_json == []


def series(server: Server) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every series of the HTTP request counter in a scrape."""
    return {
        (s.name, tuple(sorted(s.labels.items()))) for s in scrape(server)["hivekeep_http_requests"]
    }


def test_made_up_methods_and_paths_add_a_bounded_number_of_series(server: Server) -> None:
    """Issue 32, item 4: each made-up method used to add series, without any token."""
    rng = random.Random(32)
    anonymous = server.client(authorized=False)
    api = server.client()
    for client in (anonymous, api):  # the labels these requests may add, made once
        client.request("PURGE", "/api/agents")
        client.request("PURGE", "/nowhere")
        client.get("/nowhere")
    before = series(server)
    for _ in range(300):
        method = "".join(rng.choices(string.ascii_uppercase, k=rng.randint(3, 12)))
        path = "/" + "/".join(
            "".join(rng.choices(string.ascii_lowercase + string.digits, k=rng.randint(1, 10)))
            for _ in range(rng.randint(1, 4))
        )
        for client in (anonymous, api):
            client.request(method, path)
            client.request(method, "/api/agents")
            client.get(path)
    grown = series(server) - before
    assert grown == set(), sorted(grown)[:10]
    labels = {dict(labels)["method"] for _, labels in series(server)}
    assert labels <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}


def test_the_text_access_log_escapes_control_characters(tmp_path: Path) -> None:
    """Issue 32, item 9: ``%0A`` in a path, decoded, used to start a forged log line."""
    server = start_server(tmp_path / "hive.db", tmp_path / "serve.log", token=ADMIN)
    try:
        forged = "2026-01-01 00:00:00,000 INFO hivekeep.server.access: GET /api/admin 200"
        answer = server.client(authorized=False).get("/x%0A" + quote(forged) + "%0D%1B[31m")
        assert answer.status_code == 404
    finally:
        server.stop()
    lines = server.output().splitlines()
    assert not any(line.startswith("2026-01-01") for line in lines)
    [logged] = [line for line in lines if "/x" in line and "hivekeep.server.access" in line]
    assert "/x\\n2026-01-01" in logged and "\\r\\x1b[31m" in logged
