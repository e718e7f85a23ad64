"""A purge killed with SIGKILL at any step leaves no text behind once the hive is opened again.

Each run purges a memory in a child process that kills itself at one of ``PURGE_STEPS``
(``HIVEKEEP_TEST_CRASH_AT``, docs/memory.md, "Purge"), or is killed by this process at a given
delay; then the next open (or ``hivekeep purge --resume``, or ``hivekeep purge ID`` again)
finishes the clean-up, and the raw bytes of the file, its WAL and its -shm are scanned.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from hivekeep import Hive, NotFound, Settings, StoreError
from hivekeep.providers.embeddings.local import LocalEmbedder

SECRET = "quokkaswordfish42"
CRASH_ENV = "HIVEKEEP_TEST_CRASH_AT"  # named here, not imported: these tests must run on any code
PURGE_STEPS = ("erasing", "erased", "merged", "vacuumed", "checkpointed")
ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import sys
from hivekeep import Hive
with Hive(sys.argv[1]) as hive:
    print("open", flush=True)
    hive.purge(int(sys.argv[2]))
print("done", flush=True)
"""


def raw(db_path: Path) -> bytes:
    """Every byte of the hive file, its WAL and its shared-memory index."""
    files = [db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def leaked(db_path: Path) -> bool:
    data = raw(db_path)
    return SECRET.encode() in data or SECRET.upper().encode() in data.upper()


def make_hive(db_path: Path, embedder: LocalEmbedder) -> int:
    """A hive whose secret sits in a memory, its history and free pages; returns its id."""
    with Hive(db_path, embedder=embedder, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        for n in range(30):
            agent.memorize(f"Filler note number {n} about the garden", category="fact")
        memory = agent.memorize(f"The vault code is {SECRET}", category="fact").memory
        agent.update_memory(memory.id, content=f"The vault code is still {SECRET}")
        agent.forget(memory.id)
    assert leaked(db_path)
    return memory.id


def child(db_path: Path, memory_id: int, crash_at: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(CRASH_ENV, None)
    if crash_at is not None:
        env[CRASH_ENV] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path), str(memory_id)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def hivekeep(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != CRASH_ENV}
    return subprocess.run(
        [sys.executable, "-m", "hivekeep", *args],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def reopen(db_path: Path, embedder: LocalEmbedder) -> list[int]:
    """Open the hive (which finishes pending purges); the ids of those it finished."""
    with Hive(db_path, embedder=embedder, settings=Settings()) as hive:
        assert hive.store.pending_scrubs() == []
        return hive.finish_purges()


@pytest.mark.parametrize("step", PURGE_STEPS)
def test_a_purge_killed_at_each_step_is_finished_by_the_next_open(
    step: str, db_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory_id = make_hive(db_path, local_embedder)
    run = child(db_path, memory_id, crash_at=step)
    _, err = run.communicate(timeout=120)
    assert run.returncode == -signal.SIGKILL, err
    if step != "checkpointed":  # before the WAL was truncated the text is still on disk
        assert leaked(db_path)
    if step == "erasing":  # killed inside the erase transaction: nothing happened
        assert reopen(db_path, local_embedder) == []
        assert leaked(db_path)
        with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
            hive.purge(memory_id)  # so it can simply run again
    else:
        assert reopen(db_path, local_embedder) == [memory_id]
    assert not leaked(db_path)
    with (
        Hive(db_path, embedder=local_embedder, settings=Settings()) as hive,
        pytest.raises(NotFound),
    ):
        hive.purge(memory_id)  # now it is gone for good


def test_purging_the_same_id_again_finishes_a_purge_cut_short(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory_id = make_hive(db_path, local_embedder)
    run = child(db_path, memory_id, crash_at="vacuumed")
    run.communicate(timeout=120)
    assert run.returncode == -signal.SIGKILL and leaked(db_path)
    again = hivekeep("purge", str(memory_id), "--yes", "--db", str(db_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"Memory {memory_id} was purged."
    assert not leaked(db_path)
    once_more = hivekeep("purge", str(memory_id), "--yes", "--db", str(db_path))
    assert once_more.returncode != 0 and "No memory with id" in once_more.stderr


def test_purge_resume_finishes_a_purge_cut_short(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory_id = make_hive(db_path, local_embedder)
    run = child(db_path, memory_id, crash_at="merged")
    run.communicate(timeout=120)
    assert run.returncode == -signal.SIGKILL and leaked(db_path)
    resumed = hivekeep("purge", "--resume", "--db", str(db_path))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == f"Finished purges of memories {memory_id}."
    assert not leaked(db_path)
    idle = hivekeep("purge", "--resume", "--db", str(db_path))
    assert idle.stdout.strip() == "No purge was pending."
    neither = hivekeep("purge", "--db", str(db_path))
    assert neither.returncode != 0 and "either a MEMORY_ID or --resume" in neither.stderr


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.015, 0.025, 0.035, 0.05, 0.07])
def test_a_purge_killed_at_any_moment_leaves_no_text_after_the_next_open(
    delay: float, db_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory_id = make_hive(db_path, local_embedder)
    run = child(db_path, memory_id)
    assert run.stdout is not None and run.stdout.readline() == "open\n"
    time.sleep(delay)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=120)
    reopen(db_path, local_embedder)
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        trashed = [t.memory.id for t in hive.get_agent("alice").trash().memories]
        if memory_id in trashed:  # killed before its erase committed: the text is rightly there
            assert leaked(db_path)
            hive.purge(memory_id)  # and the purge simply runs again
    assert not leaked(db_path)


@pytest.mark.parametrize("by", ["hive", "agent"])
def test_a_scrub_blocked_by_a_reader_is_an_error_and_stays_pending(
    by: str, db_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory_id = make_hive(db_path, local_embedder)
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        hive.store._conn.set_busy_timeout(100)  # type: ignore[attr-defined]  # not 10 s
        reader = apsw.Connection(str(db_path))
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memories").fetchall()  # holds its snapshot
        with pytest.raises(StoreError, match=rf"Memory {memory_id} erased, but the clean-up"):
            (hive if by == "hive" else hive.get_agent("alice")).purge(memory_id)
        assert hive.store.pending_scrubs() == [memory_id] and leaked(db_path)
        reader.execute("COMMIT")
        reader.close()
        assert hive.finish_purges() == [memory_id]
    assert not leaked(db_path)
