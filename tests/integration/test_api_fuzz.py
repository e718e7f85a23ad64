"""Hostile input against a real ``hivekeep serve`` process: whatever a client sends, never a 5xx.

Two halves:

* **Generated** (schemathesis): every operation of the served OpenAPI document is fuzzed with
  requests built from its own schema, valid ones and deliberately invalid ones (wrong types, out of
  range numbers, overlong strings, missing and unknown fields). Each operation gets two passes: with
  generated path parameters (unknown agents, odd ids), and with its path pinned to a real agent,
  memory and conversation, so bodies and queries reach the code behind the validation. The
  streaming operations (``GET /api/events``, ``POST .../chat``) are left to the hand-written half.
* **Hand-written**: malformed JSON, wrong content types, bodies over the 1 MiB limit (by
  Content-Length and chunked), unicode and control characters in every string field, ids beyond
  2^63, zero and negative ids, unknown agents.

The examples are derandomized (the same requests on every run) and few, so the module stays fast;
``HIVEKEEP_FUZZ_EXAMPLES=200`` fuzzes deeper. Every 5xx fails with a curl command to replay it, and
the server's log must hold no traceback at the end.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.schemas import APIOperation, BaseSchema

from hivekeep.core.text import clean_text
from hivekeep.server.limits import MAX_BODY_BYTES
from tests.integration.server_support import Server, read_sse, start_server

Operation = APIOperation[Any, Any, Any, Any]
EXAMPLES = int(os.environ.get("HIVEKEEP_FUZZ_EXAMPLES", "12"))
STREAMING = {"GET /api/events", "POST /api/conversations/{conversation_id}/chat"}
# Every operation of the document but the streaming ones; a new route must be added here.
FUZZED = (
    "GET /api/health",
    "GET /api/review",
    "POST /api/review/{pending_id}/approve",
    "POST /api/review/{pending_id}/reject",
    "GET /api/agents",
    "POST /api/agents",
    "GET /api/agents/{agent}",
    "PATCH /api/agents/{agent}",
    "DELETE /api/agents/{agent}",
    "GET /api/agents/{agent}/memories",
    "POST /api/agents/{agent}/memories",
    "GET /api/agents/{agent}/memories/{memory_id}",
    "PATCH /api/agents/{agent}/memories/{memory_id}",
    "DELETE /api/agents/{agent}/memories/{memory_id}",
    "DELETE /api/memories/{memory_id}",
    "GET /api/agents/{agent}/profile",
    "PUT /api/agents/{agent}/profile",
    "GET /api/tools",
    "POST /api/agents/{agent}/tools/{tool}",
    "GET /api/agents/{agent}/conversations",
    "POST /api/agents/{agent}/conversations",
    "GET /api/conversations/{conversation_id}/messages",
    "GET /api/conversations/{conversation_id}/context",
    "POST /api/conversations/{conversation_id}/compact",
    "PATCH /api/conversations/{conversation_id}",
    "DELETE /api/conversations/{conversation_id}",
    "POST /api/conversations/{conversation_id}/restore",
    "POST /api/agents/{agent}/profile/regenerate",
    "POST /api/agents/{agent}/remember",
    "GET /api/settings",
    "PUT /api/settings/llm-credentials",
    "GET /api/agents/{agent}/settings",
    "PUT /api/agents/{agent}/settings",
    "POST /api/tokens",
    "GET /api/agents/{agent}/memories/{memory_id}/history",
    "POST /api/agents/{agent}/memories/{memory_id}/restore",
    "GET /api/agents/{agent}/profile/history",
    "POST /api/agents/{agent}/profile/restore",
    "GET /api/agents/{agent}/trash",
    "GET /api/access-tokens",
    "POST /api/access-tokens",
    "DELETE /api/access-tokens/{label}",
    "GET /metrics",
)
BIG = 2**63  # one past SQLite's largest integer
# Values that reach past validation into the store: out-of-range integers, dates at the edges of
# the calendar (year < 1000, overflow when moved to UTC), NUL and direction overrides.
HOSTILE_NUMBERS = (BIG, 2**64, BIG - 1, -BIG - 1, 0, -1)
HOSTILE_VALUES = (
    "\x00",
    "0001-01-01",
    "0999-12-31T23:00:00-05:00",
    "9999-12-31T23:59:59-01:00",
    "\u202e😀",
    "' OR 1=1 --",
)
HOSTILE_TEXT = (
    "\x00",
    "nul\x00inside",
    "\x01\x02\x07\x08\x1b[31mred\x1b[0m\x7f",
    "line\r\nbreak\ttab\x0b\x0c",
    "\u202eevil\u202c \u200b\u200d\ufeff",
    "😀 👩‍👩‍👧 🏳️‍🌈",
    "A\u0301 \uffff \U0010ffff",
    "' OR 1=1; DROP TABLE memories; --",
    '" NEAR( * OR AND NOT ^ ) {} [] :',
    "%00 %s %n {0} ${x} {{7*7}}",
    "../../etc/passwd",
    "<script>alert(1)</script>",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("fuzz")
    started = start_server(root / "hive.db", root / "serve.log")
    yield started
    started.stop()
    log = started.output()
    assert "Traceback" not in log, log[log.find("Traceback") - 500 :][:5000]


def body_fields(document: dict[str, Any]) -> set[str]:
    """The name of every field of every JSON request body in the OpenAPI document."""
    models = document["components"]["schemas"]
    fields: set[str] = set()
    for operations in document["paths"].values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
            fields |= set(models.get(ref.rsplit("/", 1)[-1], {}).get("properties", {}))
    return fields


@pytest.fixture(scope="module")
def document(server: Server) -> dict[str, Any]:
    served: dict[str, Any] = server.client().get("/openapi.json").json()
    return served


@pytest.fixture(scope="module")
def schema(document: dict[str, Any]) -> BaseSchema:
    """The served document, with hostile values mixed into what schemathesis generates: into
    every string and integer of paths, queries and headers, and into every body field."""
    mixed = {"dictionary": "hostile", "probability": 0.4}
    config = schemathesis.Config.from_dict(
        {
            "dictionaries": {
                "hostile": {"values": [*HOSTILE_VALUES, *HOSTILE_NUMBERS]},
                "hostile-text": {"values": list(HOSTILE_VALUES)},
                "hostile-numbers": {"values": list(HOSTILE_NUMBERS)},
            },
            "parameters": {f"body.{field}": mixed for field in sorted(body_fields(document))},
            "generation": {
                "max-examples": EXAMPLES,
                "dictionaries": {
                    "string": {"dictionary": "hostile-text", "probability": 0.4},
                    "integer": {"dictionary": "hostile-numbers", "probability": 0.4},
                },
            },
        }
    )
    return schemathesis.openapi.from_dict(document, config=config)


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as opened:
        opened.trust_env = False  # no proxy from the environment: straight to 127.0.0.1
        yield opened


@pytest.fixture
def api(server: Server) -> httpx.Client:
    return server.client()


def new_agent(api: httpx.Client) -> dict[str, Any]:
    response = api.post("/api/agents", json={"name": f"fz{secrets.token_hex(5)}"})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


WORDS = (
    "anchor",
    "basalt",
    "cello",
    "dahlia",
    "ember",
    "fjord",
    "glacier",
    "harbor",
    "iris",
    "juniper",
    "kelp",
    "lantern",
    "meadow",
    "nebula",
    "orchid",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "violin",
    "walnut",
    "xylophone",
    "yarrow",
    "zephyr",
    "bicycle",
    "copper",
    "dune",
    "eclipse",
    "falcon",
    "granite",
    "hammock",
    "igloo",
    "jasmine",
    "kettle",
    "lagoon",
    "marble",
    "nutmeg",
    "oyster",
)


def new_memory(api: httpx.Client, agent_id: int) -> int:
    """A private memory of the agent's own, unlike any other (the archive deduplicates by
    meaning, and the fuzzing may have shared any memory with every agent)."""
    for _ in range(10):
        words = " ".join(secrets.SystemRandom().sample(WORDS, 6))
        response = api.post(
            f"/api/agents/{agent_id}/memories",
            json={"content": f"Note {secrets.token_hex(4)}: {words}.", "category": "fact"},
        )
        assert response.status_code in {200, 201}, response.text
        if response.status_code == 201:
            memory_id: int = response.json()["memory"]["id"]
            return memory_id
    raise AssertionError("no fresh memory could be written")


def seeded(api: httpx.Client) -> dict[str, str]:
    """A fresh agent with a memory and a conversation, as path parameters (ids as text)."""
    agent = new_agent(api)
    conversation = api.post(f"/api/agents/{agent['id']}/conversations", json={"title": "t"})
    assert conversation.status_code == 201, conversation.text
    return {
        "agent": str(agent["id"]),
        "memory_id": str(new_memory(api, agent["id"])),
        "conversation_id": str(conversation.json()["id"]),
        "tool": "list_memories",
    }


def operation_of(schema: BaseSchema, name: str) -> Operation:
    method, path = name.split(" ", 1)
    operation: Operation = schema[path][method]
    return operation


def fuzz(strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    """Run ``check`` on ``EXAMPLES`` cases drawn from ``strategy``, the same ones every run."""

    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the curl command says enough
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(case: Any) -> None:
        check(case)

    run()


def never_5xx(server: Server, session: requests.Session) -> Callable[[Any], None]:
    def check(case: Any) -> None:
        response = case.call(base_url=server.url, session=session, timeout=30)
        assert response.status_code < 500, (
            f"{response.status_code} for {case.as_curl_command()}\n{response.content[:2000]!r}"
        )

    return check


# generated --------------------------------------------------------------------------------------
def test_every_operation_is_fuzzed_or_hand_tested(document: dict[str, Any]) -> None:
    served = {
        f"{method.upper()} {path}" for path, ops in document["paths"].items() for method in ops
    }
    assert served == set(FUZZED) | STREAMING


@pytest.mark.parametrize("name", FUZZED)
def test_generated_requests_never_get_a_5xx(
    name: str, schema: BaseSchema, server: Server, session: requests.Session, api: httpx.Client
) -> None:
    operation = operation_of(schema, name)
    pinned = {k: v for k, v in seeded(api).items() if "{" + k + "}" in operation.path}
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    free = st.one_of(*(operation.as_strategy(generation_mode=mode) for mode in modes))
    strategies = [free]
    if pinned:
        strategies.append(
            st.one_of(
                *(
                    operation.as_strategy(generation_mode=mode, path_parameters=pinned)
                    for mode in modes
                )
            )
        )
    for strategy in strategies:
        fuzz(strategy, never_5xx(server, session))


def limit_gaps(document: dict[str, Any]) -> list[str]:
    """Every parameter and body field of the document without an explicit bound: a string
    without maxLength, a number without minimum and maximum, an object or array without a size."""
    models = document["components"]["schemas"]

    def gaps(schema: dict[str, Any], where: str) -> list[str]:
        while "$ref" in schema:
            schema = models[schema["$ref"].rsplit("/", 1)[-1]]
        if "anyOf" in schema:
            return [gap for option in schema["anyOf"] for gap in gaps(option, where)]
        kind = schema.get("type")
        if "enum" in schema or "const" in schema or kind in {"boolean", "null"}:
            return []
        if kind == "string" or "maxLength" in schema:  # propertyNames omit the type
            return [] if "maxLength" in schema else [f"{where}: no maxLength"]
        if kind in {"integer", "number"}:
            bounded = {"minimum", "maximum"} <= set(schema)
            return [] if bounded else [f"{where}: no minimum and maximum"]
        if kind == "array":
            found = [] if "maxItems" in schema else [f"{where}: no maxItems"]
            return found + gaps(schema.get("items", {}), f"{where}[]")
        if kind == "object":
            found = [
                g for k, v in schema.get("properties", {}).items() for g in gaps(v, f"{where}.{k}")
            ]
            extra = schema.get("additionalProperties")
            if extra not in (None, False) and "maxProperties" not in schema:
                found.append(f"{where}: no maxProperties")
            if isinstance(extra, dict) and extra:
                found += gaps(schema.get("propertyNames", {"type": "string"}), f"{where}.<key>")
                found += gaps(extra, f"{where}.*")
            return found
        return [f"{where}: free-form {schema}"]

    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            name = f"{method.upper()} {path}"
            for parameter in operation.get("parameters", []):
                where = f"{name} {parameter['in']}.{parameter['name']}"
                found += gaps(parameter["schema"], where)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                found += gaps(body["schema"], f"{name} body")
    return found


def test_every_parameter_and_body_field_has_a_limit(document: dict[str, Any]) -> None:
    """The 1 MiB body limit bounds everything; each field has its own, tighter, bound besides.
    The one free-form body is a tool's arguments, which the tool's own model validates (unknown
    names refused, every value bounded, see ``hivekeep.tools``)."""
    tool_body = "POST /api/agents/{agent}/tools/{tool} body"
    assert [g for g in limit_gaps(document) if not g.startswith(f"{tool_body}.<key>")] == []


# hand-written: bodies ---------------------------------------------------------------------------
@pytest.fixture
def targets(api: httpx.Client) -> list[tuple[str, str]]:
    """Every operation that takes a JSON body, on a real agent, memory and conversation."""
    ids = seeded(api)
    agent, memory, conversation = ids["agent"], ids["memory_id"], ids["conversation_id"]
    return [
        ("POST", "/api/agents"),
        ("PATCH", f"/api/agents/{agent}"),
        ("POST", f"/api/agents/{agent}/memories"),
        ("PATCH", f"/api/agents/{agent}/memories/{memory}"),
        ("PUT", f"/api/agents/{agent}/profile"),
        ("POST", f"/api/agents/{agent}/tools/recall"),
        ("POST", f"/api/agents/{agent}/conversations"),
        ("POST", f"/api/conversations/{conversation}/chat"),
        ("PUT", f"/api/agents/{agent}/settings"),
    ]


def error_code(response: httpx.Response) -> str:
    """The one error shape; returns its code."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["message"] and "Traceback" not in body["error"]["message"]
    code: str = body["error"]["code"]
    return code


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"",
        b"{",
        b'{"name": "x",}',
        b"\xff\xfe\x00garbage",
        b'{"content": "\\ud800", "name": "\\udfff", "text": "\\ud83d"}',
        b"[" * 50_000 + b"]" * 50_000,
        b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
        b"NaN",
        b"null",
        b"[]",
        b'"just a string"',
        b"12345678901234567890123456789012345678901234567890",
    ],
    ids=lambda raw: repr(raw[:16]),
)
def test_malformed_json_is_a_4xx(
    api: httpx.Client, targets: list[tuple[str, str]], raw: bytes
) -> None:
    for method, url in targets:
        response = api.request(
            method, url, content=raw, headers={"Content-Type": "application/json"}
        )
        assert 400 <= response.status_code < 500, (method, url, response.text)
        assert error_code(response) in {"validation_error", "bad_request", "tool_error"}


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        None,
    ],
)
def test_wrong_content_types_are_a_4xx(
    api: httpx.Client, targets: list[tuple[str, str]], content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    for method, url in targets:
        response = api.request(method, url, content=b'{"name": "x"}', headers=headers)
        assert 400 <= response.status_code < 500, (method, url, content_type, response.text)
        error_code(response)


def test_bodies_over_the_limit_are_413_before_any_route_reads_them(
    api: httpx.Client, targets: list[tuple[str, str]]
) -> None:
    over = b'{"text": "' + b"x" * MAX_BODY_BYTES + b'"}'

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(over), 64 * 1024):
            yield over[start : start + 64 * 1024]

    for method, url in targets:
        for content in (over, chunked()):
            response = api.request(
                method, url, content=content, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 413, (method, url, response.text)
            assert error_code(response) == "body_too_large"
    # just under the limit reaches the route, which judges the fields (here: too long a text)
    under = b'{"text": "' + b"x" * (MAX_BODY_BYTES - 100) + b'"}'
    profile = next(url for method, url in targets if url.endswith("/profile"))
    response = api.put(profile, content=under, headers={"Content-Type": "application/json"})
    assert (response.status_code, error_code(response)) == (422, "validation_error")
    # a route that reads no body is refused by its Content-Length (chunked, it is never read)
    listed = api.request("GET", "/api/agents", content=over)
    assert (listed.status_code, error_code(listed)) == (413, "body_too_large")
    assert api.get("/api/agents").status_code == 200  # the server is fine


# hand-written: strings --------------------------------------------------------------------------
def _round_trip(api: httpx.Client, value: str) -> None:
    """``value`` in every string field of every body and query; 2xx must store it as sent."""
    agent = seeded(api)
    base = f"/api/agents/{agent['agent']}"
    name = f"n{secrets.token_hex(3)}{value}"[:64]
    short = value[:2000]  # in a URL (a client refuses longer ones)
    segment = quote(short, safe="")
    checks: list[tuple[httpx.Response, Callable[[Any], Any] | None]] = [
        (api.post("/api/agents", json={"name": name, "role": value}), lambda b: b["role"]),
        (api.patch(base, json={"role": value}), lambda b: b["role"]),
        (
            api.post(
                f"{base}/memories",
                json={
                    "content": value,
                    "category": "fact",
                    "subject": value,
                    "source_context": value,
                },
            ),
            lambda b: b["memory"]["content"],
        ),
        (
            api.patch(f"{base}/memories/{agent['memory_id']}", json={"subject": value}),
            lambda b: b["subject"],
        ),
        (
            api.post(
                f"{base}/memories", json={"content": "x", "category": "fact", "created_at": value}
            ),
            None,
        ),
        (api.put(f"{base}/profile", json={"text": value}), None),
        (api.post(f"{base}/conversations", json={"title": value}), None),
        (api.put(f"{base}/settings", json={"model": value}), None),
        (api.put(f"{base}/settings", json={"compaction": {value: 1}}), None),
        (api.post(f"{base}/tools/recall", json={"query": value, "since": value}), None),
        (api.post(f"{base}/tools/memorize", json={"content": value, "category": "fact"}), None),
        (
            api.post(
                f"{base}/tools/edit_profile",
                json={"section": value, "operation": "append", "content": value},
            ),
            None,
        ),
        (api.post(f"{base}/tools/{segment}", json={}), None),
        (api.get(f"{base}/memories", params={"query": short}), None),
        (api.get(f"{base}/memories", params={"subject": short}), None),
        (api.get(f"{base}/memories", params={"query": short, "subject": short}), None),
        (api.get(f"/api/agents/{segment}"), None),
        (api.get(f"/api/agents/{segment}/memories"), None),
    ]
    for response, stored in checks:
        assert response.status_code < 500, (response.request.url, response.text)
        if response.status_code >= 400:
            error_code(response)
        elif stored is not None and value.strip() == value:  # bodies strip outer whitespace
            # memory text loses its control characters at the write path (clean_text)
            memory = "/memories" in response.request.url.path
            expected = clean_text(value).strip() if memory else value
            assert stored(response.json()) == expected, response.text
    # whatever was stored reads back, lists and searches without failing
    for url in (f"{base}/memories", f"{base}/profile", f"{base}/conversations", "/api/agents"):
        assert api.get(url).status_code == 200, url
    assert api.get(f"{base}/memories", params={"query": "green tea"}).status_code == 200
    conversation = agent["conversation_id"]
    with api.stream(
        "POST", f"/api/conversations/{conversation}/chat", json={"message": value, "speaker": value}
    ) as response:
        response.read()
        assert response.status_code < 500, response.text


@pytest.mark.parametrize("value", HOSTILE_TEXT, ids=range(len(HOSTILE_TEXT)))
def test_unicode_and_control_characters_in_every_string_field(
    api: httpx.Client, value: str
) -> None:
    _round_trip(api, value)


@pytest.mark.parametrize("size", [65, 201, 2_001, 4_001, 100_001])
def test_overlong_strings_are_a_422(api: httpx.Client, size: int) -> None:
    _round_trip(api, "é" * size)


def test_lone_surrogates_in_raw_json_are_a_422(api: httpx.Client) -> None:
    agent = seeded(api)["agent"]
    raw = b'{"content": "a\\ud800b", "category": "fact"}'
    response = api.post(
        f"/api/agents/{agent}/memories", content=raw, headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, error_code(response)) == (422, "validation_error")
    raw_query = "/api/agents/" + agent + "/memories?query=%ED%A0%80"  # a surrogate as UTF-8 bytes
    assert api.get(raw_query).status_code < 500


@pytest.mark.parametrize(
    ("when", "stored", "since_ok"),
    [
        ("0001-01-01", "0001-01-01T00:00:00.000000Z", True),
        ("0999-12-31T23:59:59Z", "0999-12-31T23:59:59.000000Z", True),
        ("9999-12-31", None, True),  # a real date, but more than a day ahead: not a created_at
        ("0001-01-01T00:00:00+05:00", None, False),  # before year 1 once in UTC
        ("9999-12-31T23:00:00-05:00", None, False),  # after year 9999 once in UTC
        ("2024-02-30", None, False),
        ("2024-01-01T25:00:00", None, False),
    ],
)
def test_dates_at_the_edges_of_the_calendar(
    api: httpx.Client, when: str, stored: str | None, since_ok: bool
) -> None:
    """A memory dated year 1 is kept with a fixed-width timestamp; dates that leave the calendar
    once moved to UTC, or lie more than a day ahead, are a 422, never a stored value that breaks
    every later listing."""
    agent = seeded(api)["agent"]
    base = f"/api/agents/{agent}"
    created = api.post(
        f"{base}/memories",
        json={
            "content": f"Dated {when}: the {secrets.token_hex(3)} archive.",
            "category": "fact",
            "created_at": when,
        },
    )
    if stored is None:
        assert (created.status_code, error_code(created)) == (422, "validation_error")
    else:
        assert created.status_code == 201, created.text
        assert created.json()["memory"]["created_at"] == stored
    recalled = api.post(f"{base}/tools/recall", json={"query": "archive", "since": when})
    assert recalled.status_code == (200 if since_ok else 422), recalled.text
    for response in (
        api.get(f"{base}/memories"),
        api.get(f"{base}/memories", params={"query": "archive"}),
        api.post(f"{base}/tools/list_memories", json={}),
    ):
        assert response.status_code == 200, response.text


# hand-written: ids ------------------------------------------------------------------------------
OUT_OF_RANGE = (str(BIG), str(2**64), str(10**40), "-1", "-9223372036854775809")


@pytest.mark.parametrize("bad", [*OUT_OF_RANGE, "0"])
def test_ids_beyond_the_store_or_not_positive_are_a_4xx(api: httpx.Client, bad: str) -> None:
    agent = seeded(api)["agent"]
    for method, url in (
        ("GET", f"/api/agents/{bad}"),
        ("GET", f"/api/agents/{bad}/memories"),
        ("GET", f"/api/agents/{agent}/memories/{bad}"),
        ("PATCH", f"/api/agents/{agent}/memories/{bad}"),
        ("DELETE", f"/api/agents/{agent}/memories/{bad}"),
        ("GET", f"/api/conversations/{bad}/messages"),
        ("GET", f"/api/conversations/{bad}/context"),
        ("POST", f"/api/conversations/{bad}/compact"),
        ("POST", f"/api/conversations/{bad}/chat"),
    ):
        body = {"content": "x"} if method == "PATCH" else {"message": "hi"}
        response = api.request(method, url, json=body if method in {"PATCH", "POST"} else None)
        assert 400 <= response.status_code < 500, (method, url, response.text)
        assert error_code(response) in {"not_found", "validation_error"}
    for tool, args in (
        ("update_memory", {"memory_id": int(bad), "content": "x"}),
        ("forget", {"memory_id": int(bad)}),
        ("list_memories", {"limit": int(bad)}),
        ("recall", {"query": "x", "limit": int(bad)}),
    ):
        response = api.post(f"/api/agents/{agent}/tools/{tool}", json=args)
        assert (response.status_code, error_code(response)) == (422, "tool_error"), response.text


@pytest.mark.parametrize("bad", OUT_OF_RANGE)
def test_counts_and_offsets_beyond_the_store_are_a_422(api: httpx.Client, bad: str) -> None:
    ids = seeded(api)
    agent, conversation = ids["agent"], ids["conversation_id"]
    for url in (
        f"/api/conversations/{conversation}/messages?after_id={bad}",
        f"/api/agents/{agent}/memories?offset={bad}",
        f"/api/agents/{agent}/memories?query=tea&offset={bad}",
        f"/api/events?after={bad}",
    ):
        response = api.get(url, timeout=5)
        assert (response.status_code, error_code(response)) == (422, "validation_error"), url
    response = api.get("/api/events", headers={"Last-Event-ID": bad}, timeout=5)
    assert (response.status_code, error_code(response)) == (422, "validation_error")
    profile = api.put(
        f"/api/agents/{agent}/profile", json={"text": "x", "expected_revision": int(bad)}
    )
    assert (profile.status_code, error_code(profile)) == (422, "validation_error")
    response = api.post(f"/api/agents/{agent}/tools/list_memories", json={"offset": int(bad)})
    assert (response.status_code, error_code(response)) == (422, "tool_error"), response.text


def test_unknown_agents_are_404_everywhere(api: httpx.Client) -> None:
    ghost = f"ghost{secrets.token_hex(4)}"
    for method, url, body in (
        ("GET", f"/api/agents/{ghost}", None),
        ("PATCH", f"/api/agents/{ghost}", {"role": "x"}),
        ("DELETE", f"/api/agents/{ghost}", None),
        ("GET", f"/api/agents/{ghost}/memories", None),
        ("GET", f"/api/agents/{ghost}/memories?query=tea", None),
        ("POST", f"/api/agents/{ghost}/memories", {"content": "x", "category": "fact"}),
        ("GET", f"/api/agents/{ghost}/memories/1", None),
        ("PATCH", f"/api/agents/{ghost}/memories/1", {"content": "x"}),
        ("DELETE", f"/api/agents/{ghost}/memories/1", None),
        ("GET", f"/api/agents/{ghost}/profile", None),
        ("PUT", f"/api/agents/{ghost}/profile", {"text": "x"}),
        ("POST", f"/api/agents/{ghost}/tools/recall", {"query": "x"}),
        ("GET", f"/api/agents/{ghost}/conversations", None),
        ("POST", f"/api/agents/{ghost}/conversations", {"title": "x"}),
        ("POST", f"/api/agents/{ghost}/profile/regenerate", None),
        ("GET", f"/api/agents/{ghost}/settings", None),
        ("PUT", f"/api/agents/{ghost}/settings", {"compaction": {}}),
        ("GET", f"/api/events?agent={ghost}", None),
        ("GET", "/api/agents/999999999/memories", None),
    ):
        response = api.request(method, url, json=body)
        assert (response.status_code, error_code(response)) == (404, "not_found"), (method, url)


# hand-written: the streaming operations ---------------------------------------------------------
def test_the_event_stream_refuses_bad_parameters_and_serves_good_ones(api: httpx.Client) -> None:
    agent = seeded(api)["agent"]
    for params, headers in (
        ({"after": "-1"}, {}),
        ({"after": "ten"}, {}),
        ({"after": str(BIG)}, {}),
        ({"agent": ""}, {}),
        ({"agent": "x" * 65}, {}),
        ({}, {"Last-Event-ID": "not-a-number"}),
        ({}, {"Last-Event-ID": "-5"}),
    ):
        response = api.get("/api/events", params=params, headers=headers, timeout=5)
        assert (response.status_code, error_code(response)) == (422, "validation_error"), params
    for params in ({"agent": agent, "after": "0"}, {"agent": "\x00"}, {"agent": "😀"}):
        with api.stream("GET", "/api/events", params=params, timeout=5) as response:
            if response.status_code == 200:
                assert next(read_sse(response)).comment == "connected"
            else:
                response.read()
                assert response.status_code == 404, response.text


def test_chat_refuses_bad_bodies_before_streaming(api: httpx.Client) -> None:
    conversation = seeded(api)["conversation_id"]
    url = f"/api/conversations/{conversation}/chat"
    for body in (
        {},
        {"message": ""},
        {"message": "   "},
        {"message": 5},
        {"message": ["a"]},
        {"message": "x" * 100_001},
        {"message": "hi", "speaker": ""},
        {"message": "hi", "speaker": "s" * 101},
        {"message": "hi", "extra": True},
    ):
        response = api.post(url, json=body)
        assert (response.status_code, error_code(response)) == (422, "validation_error"), body
    # a good body on a server with no model: a clear 422 before anything streams
    response = api.post(url, json={"message": "hello"})
    assert (response.status_code, error_code(response)) == (422, "llm_not_configured")
    assert json.loads(response.text)["error"]["message"]
