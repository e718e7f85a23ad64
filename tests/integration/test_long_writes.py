"""Long writes do not starve other writers, and a writer that waits too long gets a sentence.

A large import leaves the SQLite write lock free between its batches (another connection takes
it at once at every progress report); and when another process really holds the lock past the
busy timeout, the CLI and the tools say the hive is busy (``HiveBusy``), never apsw's raw
"database is locked" or a traceback. Two real processes, real hive files.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hivekeep import Hive, HiveBusy, NotFound, Settings
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.server import create_app
from hivekeep.services.transfer import importer
from hivekeep.store.base import MemoryFilter, NewMemory
from hivekeep.store.sqlite import history as sqlite_history
from hivekeep.store.sqlite import store as sqlite_store
from hivekeep.types import Category
from tests.integration.server_support import start_server
from tests.support import VectorTable

ROOT = Path(__file__).resolve().parents[2]
MEMORIES = 1200

# Holds the hive's write lock (BEGIN IMMEDIATE) until killed, after saying so.
HOLDER = """
import sys, time, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(600)
"""


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    with Hive(tmp_path / "source.db", embedder=VectorTable(), settings=Settings()) as source:
        ann = source.create_agent("ann")
        source._services.archive.memorize_many(
            [
                NewMemory(
                    ann.id, f"Parcel {i} left depot {i % 13} on day {i % 28 + 1}", Category.FACT
                )
                for i in range(MEMORIES)
            ]
        )
        path = tmp_path / "export.jsonl"
        with path.open("w", encoding="utf-8") as out:
            source.export(out)
    return path


def test_an_import_leaves_the_write_lock_free_between_batches(
    export_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On e86e37d the whole file was one transaction: no other writer got in until the end."""
    monkeypatch.setattr(importer, "IMPORT_BATCH", 200)
    db = tmp_path / "target.db"
    free: list[bool] = []
    with Hive(db, embedder=VectorTable(), settings=Settings()) as hive:
        other = apsw.Connection(str(db))  # another connection: its own lock, as a process has
        other.set_busy_timeout(0)

        def progress(done: int, total: int) -> None:
            try:
                other.execute("BEGIN IMMEDIATE")
            except apsw.BusyError:
                free.append(False)
            else:
                other.execute("ROLLBACK")
                free.append(True)

        report = hive.import_(export_file, progress=progress)
        other.close()
    assert report.memories_imported == MEMORIES
    assert len(free) >= MEMORIES // 200 and all(free), free


# Writes memories as fast as it can until killed, each in its own transaction.
WRITER = """
import sys
from hivekeep import Hive, Settings
from tests.support import VectorTable
with Hive(sys.argv[1], embedder=VectorTable(), settings=Settings()) as hive:
    bob = hive.get_agent("bob")
    print("writing", flush=True)
    i = 0
    while True:
        bob.memorize(f"Bob's note {i} on the weather", category="fact")
        i += 1
"""


def test_another_process_writes_between_the_batches_of_an_import(
    export_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer in another process gets the lock after each batch, not once at the end: SQLite's
    busy handler polls every 100 ms, so the importer pauses longer than that between batches
    (without the pause a writer waiting through a 30,000-memory import still timed out)."""
    monkeypatch.setattr(importer, "IMPORT_BATCH", 100)
    db = tmp_path / "target.db"
    with Hive(db, embedder=VectorTable(), settings=Settings()) as hive:
        hive.create_agent("bob")
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
            hive.import_(export_file)
        finally:
            writer.kill()
            writer.communicate()
        ann, bob = hive.get_agent("ann").id, hive.get_agent("bob").id
        imported = [m.id for m in hive.store.list_memories(ann, MemoryFilter(), 10**6, 0)[0]]
        first, last = min(imported), max(imported)
        notes = hive.store.list_memories(bob, MemoryFilter(), 10**6, 0)[0]
        between = [m.id for m in notes if first < m.id < last]
    assert len(between) >= MEMORIES // 100 // 2, between  # most of the 12 gaps let bob in


@pytest.mark.slow
def test_a_writer_kept_out_past_the_busy_timeout_is_told_the_hive_is_busy(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    """Another process holds the write lock for good: each interface (Python, a tool, REST,
    the CLI) waits the busy timeout (10 s), then says so in a sentence; nothing is written."""
    db = tmp_path / "hive.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("ann")
    server = start_server(db, tmp_path / "serve.log")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
        with server.client() as client:
            answer = client.post(
                "/api/agents/ann/memories",
                json={"content": "Ann likes tea.", "category": "fact"},
                timeout=60,
            )
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "5"
        assert answer.json()["error"]["code"] == "hive_busy"
        assert "The hive is busy" in answer.json()["error"]["message"]
        with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
            ann = hive.get_agent("ann")
            result = ann.call_tool("memorize", {"content": "Ann likes tea.", "category": "fact"})
            assert "The hive is busy" in result["error"], result
        cli_run = CliRunner().invoke(
            cli,
            [
                "memorize",
                "--agent",
                "ann",
                "Ann likes coffee.",
                "--category",
                "fact",
                "--db",
                str(db),
            ],
            catch_exceptions=False,
        )
        assert cli_run.exit_code == 1, cli_run.output
        assert "The hive is busy" in cli_run.output, cli_run.output
        assert "database is locked" not in cli_run.output and "Traceback" not in cli_run.output
    finally:
        holder.kill()
        holder.communicate()
        server.stop()
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        assert hive.get_agent("ann").list_memories().total == 0


# Takes ("hold") and gives back ("release") the hive's write lock when told on stdin.
LOCKER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
for line in sys.stdin:
    conn.execute("BEGIN IMMEDIATE" if line.strip() == "hold" else "ROLLBACK")
    print(line.strip(), flush=True)
"""


class Locker:
    """Another process, holding the hive's write lock on demand."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.holding = False

    def __call__(self, command: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.holding == (command == "hold"):
            return
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == command
        self.holding = command == "hold"

    def stop(self) -> None:
        self.process.kill()
        self.process.communicate()


def test_a_purge_whose_clean_up_is_kept_out_says_the_hive_is_busy(
    tmp_path: Path,
    local_embedder: LocalEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another process takes the write lock between a purge's erase and its VACUUM: the purge
    (Python, REST) says the hive is busy and that the clean-up is pending, never apsw's raw
    "database is locked"; an open of the hive postpones that clean-up with a warning instead of
    failing; ``hivekeep purge --resume`` says the hive is busy; once the lock is free, the next
    open finishes it. On the old code the VACUUM raised apsw.BusyError everywhere."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)  # the wait, not the behaviour
    db = tmp_path / "hive.db"
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
        ann = hive.create_agent("ann")
        first, second = (
            ann.memorize(f"Secret {n}: the vault code is {n}{n}{n}.", category="fact").memory.id
            for n in (1, 2)
        )
    locker = Locker(db)

    def lock_before_the_vacuum(step: str) -> None:
        if step == "merged":  # the erase is committed, the VACUUM is next
            locker("hold")

    monkeypatch.setattr(sqlite_history, "crash_point", lock_before_the_vacuum)
    try:
        with Hive(db, embedder=local_embedder, settings=Settings()) as hive:
            with pytest.raises(HiveBusy, match="erased, but the clean-up of the file"):
                hive.purge(first)
            locker("release")
            assert hive.store.pending_scrubs() == [first]
            with TestClient(create_app(hive, watch_s=None), base_url="http://127.0.0.1") as client:
                answer = client.delete(f"/api/agents/ann/memories/{second}?purge=true")
            locker("release")
            assert answer.status_code == 503, answer.text
            assert answer.json()["error"]["code"] == "hive_busy"
            assert "hivekeep purge --resume" in answer.json()["error"]["message"]
        with (
            caplog.at_level(logging.WARNING),
            Hive(db, embedder=local_embedder, settings=Settings()) as hive,
        ):
            assert hive.store.pending_scrubs() == [first, second]
        assert "Clean-up of the hive postponed" in caplog.text and "erased" in caplog.text
        locker("release")
        locker("hold")
        resumed = CliRunner().invoke(
            cli, ["purge", "--resume", "--db", str(db)], catch_exceptions=False
        )
        assert resumed.exit_code == 1, resumed.output
        assert "The hive is busy" in resumed.output
        assert "database is locked" not in resumed.output and "Traceback" not in resumed.output
        locker("release")
    finally:
        monkeypatch.setattr(sqlite_history, "crash_point", lambda step: None)
        locker.stop()
    with Hive(db, embedder=local_embedder, settings=Settings()) as hive:  # the lock is free
        assert hive.store.pending_scrubs() == []
        for gone in (first, second):
            with pytest.raises(NotFound):
                hive.get_agent("ann").memory(gone)
    assert b"vault code" not in db.read_bytes()
