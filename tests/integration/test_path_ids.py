"""Authorize what you execute (issue 32, item 1): an id in a path has one spelling.

Every route of the OpenAPI document is called with non-canonical spellings of each of its ids
(sign, spaces, tabs, decimals, underscores, leading zeros, percent-encodings, other Unicode
digits), by every kind of token: the admin, a read-write and a read-only token of alice, and a
revoked one. Nothing answers 500, no other spelling reaches anything (each is refused, so a
route never runs on a value its scope check did not judge), and the archive is untouched. The
sweep runs in process (TestClient) over every route, and over a real server for the reads.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server.app import create_app
from hivekeep.server.deps import AgentDep, ConversationDep, canonical_id
from tests.integration.server_support import Server, start_server

ADMIN = f"admin-{secrets.token_hex(16)}"
REFUSED = {401, 403, 404, 405, 422}
SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹"


def spellings(n: int) -> list[str]:
    """Other spellings of ``n`` as they go in a URL (percent-encoded where a URL needs it)."""
    text = str(n)

    def digits(zero: int) -> str:
        return quote("".join(chr(zero + int(d)) for d in text))

    return [
        f"+{text}",
        f"%2B{text}",
        f"%20{text}",
        f"{text}%20",
        f"%09{text}",
        f"{text}%09",
        f"{text}%0A",
        f"{text}.0",
        f"{text}.",
        f"0{text}",
        f"00{text}",
        f"{text[0]}_{text[1:]}",
        f"{text}%00",
        f"-{text}",
        f"{text}e0",
        digits(0x0660),  # Arabic-Indic
        digits(0x0966),  # Devanagari
        digits(0xFF10),  # fullwidth
        quote("".join(SUPERSCRIPT[int(d)] for d in text)),
        quote("²"),
        quote("٢"),
    ]


def test_the_spellings_are_other_spellings_and_canonical_ids_are_plain_digits() -> None:
    for spelled in spellings(12):
        assert canonical_id(unquote(spelled)) is None, spelled
    assert canonical_id("12") == 12
    assert [canonical_id(t) for t in ("0", "012", "²", "٢", " 1", "1 ", "+1", "1_2")] == [None] * 8
    assert canonical_id("9" * 30) is None


@pytest.fixture(scope="module")
def hive_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alice and bob, each with ids past 9 (so ``1_2`` spells one): fillers take the low ones."""
    db = tmp_path_factory.mktemp("path-ids") / "hive.db"
    with Hive(db, embedder=LocalEmbedder(), settings=Settings()) as hive:
        filler = hive.create_agent("filler")
        for i in range(10):
            hive.create_agent(f"filler{i}")
            filler.start_conversation(f"filler {i}")
            filler.memorize(f"Filler fact number {i} about lanterns.", category="fact")
        for name in ("alice", "bob"):
            agent = hive.create_agent(name)
            agent.memorize(f"{name.title()} keeps the spare keys in the blue jar.", category="fact")
            agent.memorize(f"{name.title()} shares the wifi code.", category="fact", scope="shared")
            agent.start_conversation(f"{name}'s chat")
    return db


def _ids(hive: Hive, name: str) -> dict[str, int]:
    agent = hive.get_agent(name)
    [conversation] = agent.conversations()
    memory = agent.list_memories(limit=10).memories[-1]
    return {"agent": agent.id, "memory_id": memory.id, "conversation_id": conversation.id}


def _state(hive: Hive) -> tuple[int, ...]:
    """What a reached write would change: archives, conversations, agents, tokens."""
    return (
        *(a.list_memories(limit=1).total for a in hive.agents()),
        *(len(a.conversations()) for a in hive.agents()),
        len(hive.agents()),
        len(hive.tokens.list()),
    )


def _operations(app_hive: Hive) -> list[tuple[str, str]]:
    document = create_app(app_hive).openapi()
    return [
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if "{" in path
    ]


def _requests(ids: dict[str, int], operations: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """(method, path) with one id of the template spelt otherwise, every way."""
    for method, template in operations:
        names = re.findall(r"\{(\w+)\}", template)
        for name in names:
            if name not in ("agent", "memory_id", "conversation_id"):
                continue
            for spelled in spellings(ids[name]):
                values = {**ids, "tool": "recall", "label": "nobody", name: spelled}
                yield method, template.format_map(values)


def _tokens(hive: Hive) -> dict[str, str]:
    revoked = hive.tokens.create(f"gone-{secrets.token_hex(3)}", ["alice"]).token
    hive.tokens.revoke(hive.tokens.list()[-1].label)
    return {
        "admin": ADMIN,
        "read-write": hive.tokens.create(f"rw-{secrets.token_hex(3)}", ["alice"]).token,
        "read-only": hive.tokens.create(
            f"ro-{secrets.token_hex(3)}", ["alice"], read_only=True
        ).token,
        "revoked": revoked,
    }


def test_no_other_spelling_of_an_id_reaches_any_route_for_any_token(hive_file: Path) -> None:
    with Hive(hive_file, embedder=LocalEmbedder(), settings=Settings()) as hive:
        tokens = _tokens(hive)
        operations = _operations(hive)
        before = _state(hive)
        app = create_app(hive, token=ADMIN, watch_s=None)
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            sent = 0
            for kind, token in tokens.items():
                headers = {"Authorization": f"Bearer {token}"}
                for owner in ("alice", "bob"):
                    for method, path in _requests(_ids(hive, owner), operations):
                        answer = client.request(method, path, headers=headers, json={})
                        assert answer.status_code in REFUSED, (kind, method, path, answer.text)
                        sent += 1
        assert sent > 2000
        assert _state(hive) == before


def test_a_canonical_id_still_reaches_the_route(hive_file: Path) -> None:
    """The control: the same routes answer the plain spelling (so the refusals above are the
    spelling's, not a broken fixture's); bob's stay hidden from alice's token."""
    with Hive(hive_file, embedder=LocalEmbedder(), settings=Settings()) as hive:
        tokens = _tokens(hive)
        alice, bob = _ids(hive, "alice"), _ids(hive, "bob")
        app = create_app(hive, token=ADMIN, watch_s=None)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            reader = {"Authorization": f"Bearer {tokens['read-only']}"}
            for path in (
                f"/api/agents/{alice['agent']}/memories/{alice['memory_id']}",
                f"/api/conversations/{alice['conversation_id']}/messages",
                f"/api/agents/{alice['agent']}/memories/{alice['memory_id']}/history",
            ):
                assert client.get(path, headers=reader).status_code == 200, path
            for path in (
                f"/api/agents/{bob['agent']}",
                f"/api/conversations/{bob['conversation_id']}/messages",
            ):
                assert client.get(path, headers=reader).status_code == 404, path


@pytest.fixture(scope="module")
def server(hive_file: Path) -> Iterator[Server]:
    started = start_server(hive_file, hive_file.with_name("serve.log"), token=ADMIN)
    try:
        yield started
    finally:
        started.stop()


def test_over_a_real_server_no_spelling_reads_another_agents_conversation(
    server: Server, hive_file: Path
) -> None:
    with Hive(hive_file, embedder=LocalEmbedder(), settings=Settings()) as hive:
        tokens = _tokens(hive)
        bob = _ids(hive, "bob")
    reads = [
        ("GET", "/api/conversations/{conversation_id}/messages"),
        ("GET", "/api/conversations/{conversation_id}/context"),
        ("POST", "/api/conversations/{conversation_id}/compact"),
        ("GET", "/api/agents/{agent}/memories/{memory_id}"),
    ]
    for kind, token in tokens.items():
        client = server.client(token=token)
        for method, path in _requests(bob, reads):
            try:
                answer = client.request(method, path, json={} if method == "POST" else None)
            except httpx.RemoteProtocolError:  # refused by the HTTP parser itself: not reached
                continue
            assert answer.status_code in REFUSED, (kind, method, path, answer.text)
            assert "blue jar" not in answer.text
    assert "Traceback" not in server.output()


def test_a_route_that_skipped_the_scope_check_gets_no_agent_or_conversation() -> None:
    """Fail closed: ``AgentDep`` hands on only what ``check_route`` found and judged."""
    app = FastAPI()

    @app.get("/agent/{agent}")
    def agent_route(agent: AgentDep) -> str:
        return agent.name

    @app.get("/conversation/{conversation_id}")
    def conversation_route(conversation: ConversationDep) -> int:
        return conversation.id

    with TestClient(app) as client:
        assert client.get("/agent/1").status_code == 403
        assert client.get("/conversation/1").status_code == 403
