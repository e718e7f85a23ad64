"""Two real server processes on one PostgreSQL hive behave as one service.

Both servers run ``run_server`` over ``Hive(url, llm=ScriptedLLM(...))`` (``scripted_server.py``),
on one clean schema of the test PostgreSQL server, with the real bundled embedder. Checked: the
start-up bootstrap compiles each agent once between them; a memory written through one is recalled
through the other; a compaction running through one refuses a second one of the same agent
through the other (409, the advisory-lock lease); an SSE client of one server receives the events
caused through the other (LISTEN/NOTIFY, ``hivekeep/store/postgres/relay.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.scripted_server import start_scripted_server
from tests.integration.server_support import SSE, Server, read_sse
from tests.postgres import postgres_url

pytestmark = pytest.mark.slow

FOLD_DELAY_S = 2.0  # the first compaction is still folding when the second one is asked for
AGENTS = ("Ada", "Bea", "Cy")
WAIT_S = 30.0


@dataclass
class Cluster:
    url: str
    one: Server
    two: Server
    trace: Path
    agents: dict[str, int] = field(default_factory=dict)
    tails: list[EventTail] = field(default_factory=list)

    def watch(self, server: Server, agent_id: int) -> EventTail:
        """An SSE client of ``server`` for one agent's events, open until the servers stop."""
        tail = EventTail(server, agent_id)
        self.tails.append(tail)
        return tail


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("pg-servers")
    trace = root / "compiles.log"
    with postgres_url() as url:
        agents = {}
        with Hive(url, embedder=LocalEmbedder(), settings=Settings()) as hive:
            for name in AGENTS:  # memories and an empty profile: what bootstrap compiles
                agent = hive.create_agent(name)
                agent.memorize(f"{name} works on the billing service", category="fact")
                agents[name] = agent.id
        script = {"fold_delay_s": FOLD_DELAY_S, "trace": str(trace)}
        with ThreadPoolExecutor(2) as pool:  # started together: both bootstrap at once
            starts = [
                pool.submit(start_scripted_server, root, script, db=url, name=name)
                for name in ("one", "two")
            ]
            servers = [start.result() for start in starts]
        cluster = Cluster(url, servers[0], servers[1], trace, agents)
        try:
            yield cluster
        finally:
            for server in servers:
                server.stop()  # ends the event streams too
            for tail in cluster.tails:
                tail.close()


class EventTail:
    """An SSE client of one server, collecting events in a thread of its own."""

    def __init__(self, server: Server, agent_id: int) -> None:
        self.events: list[SSE] = []
        self._client = httpx.Client(base_url=server.url, timeout=httpx.Timeout(60.0))
        self._connected = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(agent_id,), daemon=True)
        self._thread.start()
        assert self._connected.wait(WAIT_S), "the event stream did not open"

    def _read(self, agent_id: int) -> None:
        try:
            with self._client.stream("GET", "/api/events", params={"agent": agent_id}) as stream:
                for message in read_sse(stream):
                    if message.comment == "connected":
                        self._connected.set()
                    elif message.event:
                        self.events.append(message)
        except httpx.HTTPError:
            pass  # the server stopped

    def types(self) -> list[str]:
        return [e.event for e in self.events if e.event]

    def wait_for(self, kind: str, *, timeout: float = WAIT_S) -> SSE:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in list(self.events):
                if event.event == kind:
                    return event
            time.sleep(0.05)
        raise AssertionError(f"no {kind} event in {timeout}s; got {self.types()}")

    def close(self) -> None:
        """Once the server has stopped (the stream has ended)."""
        self._thread.join(10)
        self._client.close()


def test_bootstrap_compiles_each_agent_once_across_two_servers_starting_together(
    cluster: Cluster,
) -> None:
    api = cluster.two.client()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        profiles = [api.get(f"/api/agents/{i}/profile").json() for i in cluster.agents.values()]
        if all(p["text"].strip() for p in profiles):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"bootstrap did not compile every profile: {profiles}")
    time.sleep(1.0)  # let the slower server's bootstrap finish deciding
    compiles = cluster.trace.read_text().splitlines()
    assert len(compiles) == len(AGENTS), compiles  # one compile per agent, whichever server did it
    assert all("Name: Ann" in p["text"] for p in profiles)


def test_a_memory_written_through_one_server_is_recalled_through_the_other(
    cluster: Cluster,
) -> None:
    agent = cluster.agents["Ada"]
    watcher = cluster.watch(cluster.two, agent)
    written = cluster.one.client().post(
        f"/api/agents/{agent}/memories",
        json={"content": "The staging database moved to Frankfurt in March", "category": "fact"},
    )
    assert written.status_code == 201, written.text
    memory_id = written.json()["memory"]["id"]

    created = watcher.wait_for("memory:created")  # written through one, streamed by the other
    assert created.data is not None
    assert created.data["agent_id"] == agent
    assert created.data["data"]["memory_id"] == memory_id

    recalled = cluster.two.client().post(
        f"/api/agents/{agent}/tools/recall", json={"query": "where is the staging database"}
    )
    assert recalled.status_code == 200, recalled.text
    assert recalled.json()["memories"][0]["id"] == memory_id


def _conversation_with_history(api: httpx.Client, agent: int) -> int:
    conversation = api.post(f"/api/agents/{agent}/conversations", json={"title": "Ops"})
    assert conversation.status_code == 201, conversation.text
    conversation_id: int = conversation.json()["id"]
    for turn in range(4):
        with api.stream(
            "POST",
            f"/api/conversations/{conversation_id}/chat",
            json={"message": f"Turn {turn}: the deploy pipeline needs a review."},
        ) as response:
            assert response.status_code == 200, response.read()
            assert [e.event for e in read_sse(response) if e.event][-1] == "reply"
    return conversation_id


def test_a_compaction_through_one_server_blocks_the_other_and_streams_to_both(
    cluster: Cluster,
) -> None:
    agent = cluster.agents["Bea"]
    one, two = cluster.one.client(), cluster.two.client()
    conversation_id = _conversation_with_history(one, agent)
    watcher = cluster.watch(cluster.two, agent)

    result: dict[str, Any] = {}

    def first() -> None:
        result["response"] = one.post(f"/api/conversations/{conversation_id}/compact")

    running = threading.Thread(target=first)
    started = time.monotonic()
    running.start()
    watcher.wait_for("compacting:start")  # seen on the other server: the first run holds the lease
    second = two.post(f"/api/conversations/{conversation_id}/compact")
    running.join(WAIT_S)
    assert second.status_code == 409, second.text
    assert second.json()["error"]["code"] == "conflict", second.text
    assert time.monotonic() - started < FOLD_DELAY_S + 20

    response: httpx.Response = result["response"]
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "done", response.json()
    done = watcher.wait_for("compacting:done")
    assert done.data is not None
    assert done.data["data"]["conversation_id"] == conversation_id
    assert done.data["data"]["summary"] == response.json()["summary"]
    kinds = watcher.types()
    assert kinds.index("compacting:start") < kinds.index("compacting:done")
    assert "compacting:progress" in kinds

    # the lease was freed: now the other server may compact the same agent
    again = two.post(f"/api/conversations/{conversation_id}/compact")
    assert again.status_code == 200, again.text
