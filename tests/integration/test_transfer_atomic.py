"""Import writes through the archive's write path in bounded transactions (about
``IMPORT_BATCH`` lines each), each whole or not at all and announced once committed; other
writers wait for one batch, never for the whole file; a run cut short is finished by running the
same file again, which adds nothing twice.

A source hive of 2,500 memories is exported once (vectors of the test's table embedder, so the
imports reuse them and embed nothing). Each test imports that file into a fresh hive, on SQLite
and on PostgreSQL: killed with SIGKILL half-way, failing half-way, or to the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Hive, Settings
from hivekeep.events import Event
from hivekeep.services.archive import Memorized
from hivekeep.services.transfer import importer
from hivekeep.store.base import MemoryFilter, MemoryRecord, NewMemory, Vector
from hivekeep.types import Category, Scope
from tests.postgres import hive_target
from tests.support import VectorTable

MEMORIES = 2500
ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["sqlite", "postgres"]

# The importing process: stops for good at the first progress report past half the file (made
# between two batches), after saying how many memories it has written; the test then writes
# to the hive itself, and kills it.
IMPORTER = """
import sys, time
from hivekeep import Hive, Settings
from hivekeep.store.base import MemoryFilter
from tests.support import VectorTable

target, source = sys.argv[1], sys.argv[2]
with Hive(target, embedder=VectorTable(), settings=Settings()) as hive:
    def progress(done, total):
        if done > total // 2:
            agents = hive.store.list_agents()
            pages = [hive.store.list_memories(a.id, MemoryFilter(), 10**6, 0)[0] for a in agents]
            held = len({m.id for page in pages for m in page})
            print(f"halfway {held}", flush=True)
            time.sleep(600)
    hive.import_(source, progress=progress)
print("finished", flush=True)
"""


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("atomic")
    with Hive(folder / "source.db", embedder=VectorTable(), settings=Settings()) as source:
        alice = source.create_agent("alice", "keeps the books")
        bob = source.create_agent("bob")
        source._services.archive.memorize_many(
            [
                NewMemory(
                    agent_id=(alice if i % 2 else bob).id,
                    content=f"Invoice {i} from supplier {i % 37} was paid on day {i % 28 + 1}",
                    category=Category.FACT,
                    scope=Scope.SHARED if i % 5 == 0 else Scope.PRIVATE,
                )
                for i in range(MEMORIES)
            ]
        )
        path = folder / "export.jsonl"
        with path.open("w", encoding="utf-8") as out:
            source.export(out)
    return path


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    with hive_target(request.param) as where:
        yield where


def _contents(hive: Hive) -> dict[str, int]:
    """What the hive holds: agents, and memories visible to anyone."""
    agents = hive.store.list_agents()
    memories = {
        m.id for a in agents for m in hive.store.list_memories(a.id, MemoryFilter(), 10**6, 0)[0]
    }
    return {"agents": len(agents), "memories": len(memories)}


def test_a_killed_import_leaves_whole_batches_and_running_it_again_finishes(
    export_file: Path, target: str
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, target, str(export_file)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        said = child.stdout.readline().split()
        if not said or said[0] != "halfway":
            child.kill()
            pytest.fail(f"the importing process did not get half-way:\n{child.communicate()[1]}")
        held = int(said[1])
        assert 1000 <= held < MEMORIES  # batches were written and committed
        with Hive(target, embedder=VectorTable(), settings=Settings()) as other:
            started = time.monotonic()  # another process writes between two batches at once
            other.agent("carol").memorize("Carol keeps the keys.", category="fact")
            assert time.monotonic() - started < 5
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        child.kill()
        child.communicate()
    with Hive(target, embedder=VectorTable(), settings=Settings()) as hive:
        assert _contents(hive) == {"agents": 3, "memories": held + 1}  # whole batches only
        report = hive.import_(export_file)  # the same file again finishes the import
        assert (report.memories_imported, report.memories_duplicate) == (MEMORIES - held, held)
        assert _contents(hive) == {"agents": 3, "memories": MEMORIES + 1}


def test_a_failure_half_way_keeps_committed_batches_and_announces_only_those(
    export_file: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Hive(target, embedder=VectorTable(), settings=Settings()) as hive:
        events: list[Event] = []
        hive.events.subscribe(events.append)
        real = hive._services.archive.memorize_many
        calls = 0
        written: list[int] = []

        def failing(memories: Sequence[NewMemory], **kwargs: Any) -> list[Memorized]:
            nonlocal calls
            calls += 1
            if calls == 3:  # two batches (1,000 memories) are in already
                raise OSError("disk full")
            written.append(len(memories))
            return real(memories, **kwargs)

        monkeypatch.setattr(hive._services.archive, "memorize_many", failing)
        with pytest.raises(OSError, match="disk full"):
            hive.import_(export_file)
        assert calls == 3
        kept = _contents(hive)["memories"]
        assert kept == sum(written) == 1000  # two batches committed; the third rolled back whole
        created = [e.data["memory_id"] for e in events if e.type == "memory:created"]
        assert len(created) == kept  # the rolled-back batch announced nothing
        hive.events.unsubscribe(events.append)
        monkeypatch.undo()
        report = hive.import_(export_file)
        assert (report.memories_imported, report.memories_duplicate) == (MEMORIES - kept, kept)
        assert _contents(hive) == {"agents": 2, "memories": MEMORIES}


def test_an_import_publishes_its_memories_once_committed(export_file: Path, target: str) -> None:
    """The events reach this process's bus, and on PostgreSQL another process's (the relay)."""
    with (
        Hive(target, embedder=VectorTable(), settings=Settings()) as hive,
        Hive(target, embedder=VectorTable(), settings=Settings()) as other,
    ):
        behind: list[tuple[int, int]] = []  # (events heard, memories the other could read)
        local: list[Event] = []
        remote: list[Event] = []
        arrived = threading.Event()

        def on_local(event: Event) -> None:
            local.append(event)
            if len(local) % 250 == 1:  # what another connection can read when it is announced
                readable = _contents(other)["memories"]
                if readable < len(local):
                    behind.append((len(local), readable))

        def on_remote(event: Event) -> None:
            remote.append(event)
            if len(remote) == MEMORIES:
                arrived.set()

        hive.events.subscribe(on_local)
        other.events.subscribe(on_remote)
        report = hive.import_(export_file)
        assert report.memories_imported == MEMORIES
        assert behind == []  # each memory announced once its batch had committed, not before
        assert [e.type for e in local] == ["memory:created"] * MEMORIES
        ids = {m.id for a in hive.store.list_agents() for m in _memories(hive, a.id)}
        assert {e.data["memory_id"] for e in local} == ids
        if hive._relay is not None:  # PostgreSQL: the other process hears of every one
            assert arrived.wait(60), f"{len(remote)} of {MEMORIES} events relayed"
            assert {e.data["memory_id"] for e in remote} == ids
        assert hive.import_(export_file).memories_duplicate == MEMORIES  # the same dedup rule
        assert len(local) == MEMORIES  # duplicates announce nothing


def _memories(hive: Hive, agent_id: int) -> list[MemoryRecord]:
    return hive.store.list_memories(agent_id, MemoryFilter(scope=Scope.PRIVATE), 10**6, 0)[0] + [
        m
        for m in hive.store.list_memories(agent_id, MemoryFilter(scope=Scope.SHARED), 10**6, 0)[0]
        if m.agent_id == agent_id
    ]


def test_embedding_happens_before_the_transaction(
    export_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors of another model: the whole file is embedded first, then written in batches."""
    table = VectorTable(model_id="test:another-table")
    with Hive(tmp_path / "hive.db", embedder=table, settings=Settings()) as hive:
        order: list[str] = []
        real_embed, real_transaction = hive._services.archive.embed, hive.store.transaction

        def embed(memories: Sequence[NewMemory], **kwargs: Any) -> list[Vector | None]:
            order.append("embed")
            return real_embed(memories, **kwargs)

        def transaction() -> AbstractContextManager[None]:
            order.append("transaction")
            return real_transaction()

        monkeypatch.setattr(hive._services.archive, "embed", embed)
        monkeypatch.setattr(hive.store, "transaction", transaction)
        monkeypatch.setattr(importer, "IMPORT_BATCH", 1000)
        started = time.monotonic()
        report = hive.import_(export_file)
        assert time.monotonic() - started < 120
        assert order[:3] == ["embed", "embed", "embed"]  # all of it, before any transaction
        assert set(order[3:]) == {"transaction"} and len(order) > 4
        assert (report.vectors, report.memories_embedded) == ("re-embedded", MEMORIES)
        assert sum(len(call) for call in table.calls) == MEMORIES
