"""``hivekeep backup`` while another process writes: a consistent, restorable copy."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import apsw
import pytest

from hivekeep import Hive, Settings
from hivekeep.errors import ValidationError
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.sqlite.backup import backup

WRITER = textwrap.dedent(
    """
    import sys, itertools
    from hivekeep import Hive, Settings
    hive = Hive(sys.argv[1], embedder="local", settings=Settings(dedup_threshold=1.0))
    agent = hive.get_agent("sam")
    print("ready", flush=True)
    for n in itertools.count():
        agent.memorize_many([{"content": f"Entry {n}-{k} of the running log", "category": "fact"}
                             for k in range(5)])
    """
)


@pytest.mark.slow
def test_backup_while_another_process_writes_is_consistent_and_restorable(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    source = tmp_path / "hive.db"
    with Hive(source, embedder=local_embedder, settings=Settings()) as hive:
        hive.create_agent("sam").memorize("Ann lives in Lisbon", category="fact")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(source)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        target = tmp_path / "backups" / "copy.db"
        target.parent.mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "hivekeep", "backup", str(target), "--db", str(source)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "Backed up" in done.stdout
    finally:
        writer.kill()
        writer.communicate()

    conn = apsw.Connection(str(target))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one file
        memories = {r[0] for r in conn.execute("SELECT id FROM memories")}
        assert memories == {r[0] for r in conn.execute("SELECT rowid FROM memory_fts")}
        assert len(memories) > 1  # it caught the writer mid-stream
    finally:
        conn.close()

    restored = tmp_path / "restored.db"  # restore: put the copy where the hive lives
    shutil.copy(target, restored)
    with Hive(restored, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.get_agent("sam")
        assert agent.recall("where does Ann live").hits[0].memory.content == "Ann lives in Lisbon"
        assert agent.list_memories().total == len(memories)


def test_backup_refuses_to_overwrite_or_copy_nothing(tmp_path: Path) -> None:
    existing = tmp_path / "exists.db"
    existing.write_text("keep me")
    with pytest.raises(ValidationError, match="No hive file"):
        backup(tmp_path / "missing.db", tmp_path / "new.db")
    source = tmp_path / "hive.db"
    apsw.Connection(str(source)).execute("CREATE TABLE t(x)")
    with pytest.raises(ValidationError, match="already exists"):
        backup(source, existing)
    assert existing.read_text() == "keep me"
