"""Many processes and threads on one hive file: no "database is locked" reaches a caller, no
write is lost, and the counts match at the end (the short version of ``bench/soak.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import sqlite_vec

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder

ROOT = Path(__file__).parents[2]
PROCESSES = 8
THREADS = 2
ROUNDS = 4

WORKER = (
    textwrap.dedent(
        """
    import json, sys, threading
    from hivekeep import Hive, Settings

    db, worker = sys.argv[1], int(sys.argv[2])
    # Dedup only exact copies: the workers' sentences are near-duplicates on purpose.
    hive = Hive(db, embedder="local", settings=Settings(dedup_threshold=1.0))
    agent = hive.get_agent("shared-agent")
    errors, done = [], []

    def work(thread):
        for round in range(ROUNDS):
            tag = f"w{worker}t{thread}r{round}"
            try:
                agent.memorize(f"Worker {tag} noted fact number {round}", category="fact")
                agent.edit_profile("Log", "append", f"- {tag}")
                memory = agent.list_memories(limit=1).memories[0]
                agent.update_memory(memory.id, importance=1 + round % 10)
                agent.recall(f"fact number {round}")
                done.append(tag)
            except Exception as exc:
                errors.append(f"{tag}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(json.dumps({"done": done, "errors": errors}))
    """
    )
    .replace("ROUNDS", str(ROUNDS))
    .replace("THREADS", str(THREADS))
)


def test_processes_and_threads_share_one_hive_without_errors_or_lost_writes(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("shared-agent")
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db_path), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(PROCESSES)
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    errors = [e for r in reports for e in r["errors"]]
    assert errors == []
    tags = {t for r in reports for t in r["done"]}
    assert len(tags) == PROCESSES * THREADS * ROUNDS

    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.get_agent("shared-agent")
        assert agent.list_memories().total == len(tags)  # none lost, none doubled
        profile = agent.profile_text()
        assert all(f"- {tag}" in profile for tag in tags)  # no lost profile edit
        assert agent.profile().revision == len(tags)
    conn = apsw.Connection(str(db_path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        memories = {row[0] for row in conn.execute("SELECT id FROM memories")}
        assert memories == {row[0] for row in conn.execute("SELECT rowid FROM memory_fts")}
        assert memories == {row[0] for row in conn.execute("SELECT memory_id FROM memory_vec")}
    finally:
        conn.close()
