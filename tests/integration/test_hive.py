"""Opening hives: embedder bookkeeping, migrations, pending backfill, agents."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hivekeep import EmbedderMismatch, Hive, NotFound, Settings, StoreError, ValidationError
from hivekeep.store.sqlite import migrations
from hivekeep.types import EmbeddingState
from tests.support import VectorTable


def test_default_path_comes_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: VectorTable
) -> None:
    monkeypatch.chdir(tmp_path)
    with Hive(embedder=table, settings=Settings()) as hive:
        hive.create_agent("alice")
    assert (tmp_path / "hivekeep.db").exists()
    monkeypatch.setenv("HIVEKEEP_DB", str(tmp_path / "elsewhere.db"))
    with Hive(embedder=table) as hive:
        assert hive.path == str(tmp_path / "elsewhere.db")


def test_file_uses_wal_and_records_the_embedding_model(db_path: Path, table: VectorTable) -> None:
    Hive(db_path, embedder=table, settings=Settings()).close()
    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA journal_mode").get == "wal"
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta == {"embedding_model": "test:vector-table", "embedding_dim": "16"}


def test_other_embedder_is_refused_with_reembed_hint(db_path: Path, table: VectorTable) -> None:
    Hive(db_path, embedder=table, settings=Settings()).close()
    other = VectorTable(dimension=8, model_id="test:other")
    with pytest.raises(EmbedderMismatch, match="hivekeep reembed") as caught:
        Hive(db_path, embedder=other, settings=Settings())
    assert "test:vector-table" in str(caught.value) and "test:other" in str(caught.value)


def test_switching_embedder_and_reembedding_restores_vector_search(
    db_path: Path, table: VectorTable
) -> None:
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        for i in range(5):
            agent.memorize(f"note number {i}", category="fact")
    other = VectorTable(dimension=8, model_id="test:other")
    seen: list[tuple[int, int]] = []
    with Hive(db_path, embedder=other, settings=Settings(), switch_embedder=True) as hive:
        result = hive.reembed(progress=lambda done, total: seen.append((done, total)))
        assert result.embedded == 5 and result.remaining == 0 and seen[-1] == (5, 5)
        agent = hive.get_agent("alice")
        assert all(
            m.embedding_state is EmbeddingState.READY for m in agent.list_memories().memories
        )
        space = hive.store.embedding_space()
        assert space is not None and space.model == "test:other"
    Hive(db_path, embedder=other, settings=Settings()).close()  # no longer refused


def test_failed_embedding_is_stored_found_by_text_and_backfilled_on_open(
    db_path: Path, table: VectorTable
) -> None:
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        table.fail = True
        result = agent.call_tool("memorize", {"content": "Dentist on Tuesday", "category": "fact"})
        assert result["duplicate"] is False
        assert agent.list_memories().memories[0].embedding_state is EmbeddingState.PENDING
        assert [h.memory.id for h in agent.recall("dentist").hits] == [result["id"]]
    table.fail = False
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        memory = hive.get_agent("alice").list_memories().memories[0]
        assert memory.embedding_state is EmbeddingState.READY
        assert hive.store.count_pending() == 0


def test_new_file_is_at_latest_schema_and_newer_is_refused(
    db_path: Path, table: VectorTable
) -> None:
    Hive(db_path, embedder=table, settings=Settings()).close()
    conn = apsw.Connection(str(db_path))
    assert migrations.current_version(conn) == migrations.LATEST
    conn.execute(
        "INSERT INTO schema_migrations VALUES (?, 'from the future', 'x')", (migrations.LATEST + 1,)
    )
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Hive(db_path, embedder=table, settings=Settings())


def test_older_file_is_migrated_on_open(
    db_path: Path, table: VectorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
    monkeypatch.setattr(migrations, "LATEST", 1)
    conn = apsw.Connection(str(db_path))  # a version-1 file, written as version 1 wrote it
    migrations.migrate(conn, "2023-05-08T00:00:00.000000Z")
    conn.execute(
        "INSERT INTO agents(name, created_at, updated_at) VALUES ('alice', 'x', 'x');"
        "INSERT INTO profiles(agent_id, created_at, updated_at) VALUES (1, 'x', 'x');"
        "INSERT INTO memories(agent_id, author_name, content, text_key, category, created_at, "
        "updated_at) VALUES (1, 'alice', 'Sold the old car', 'sold the old car', 'fact', "
        "'2023-05-08T00:00:00.000000Z', 'x')"
    )
    conn.close()
    monkeypatch.undo()
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        agent = hive.get_agent("alice")
        assert [h.memory.content for h in agent.recall("what happened in May 2023").hits] == [
            "Sold the old car"
        ]  # found through the date indexed by m002
    conn = apsw.Connection(str(db_path))
    assert migrations.current_version(conn) == migrations.LATEST == 12
    assert migrations.pending(conn) == []


def test_version_4_file_gets_ownerless_shared_memories(
    db_path: Path, table: VectorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m005 rebuilds the memories table: rows, full text, vectors and the id counter survive."""

    def m004_with_history(conn: object) -> None:  # today's code needs the history tables
        migrations.m004_conversations(conn)
        migrations.m006_history_and_trash(conn)
        migrations.m008_merges_and_links(conn)
        migrations.m009_pending_scrubs(conn)
        migrations.m012_conversation_trash(conn)

    monkeypatch.setattr(
        migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:3], (4, "m4", m004_with_history)]
    )
    monkeypatch.setattr(migrations, "LATEST", 4)
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        alice = hive.create_agent("alice")
        hive.create_agent("bob")
        shared = alice.memorize(
            "The team wiki moved to wiki.example.org", category="fact", scope="shared"
        )
        alice.memorize("Alice's own note about the wiki", category="fact")
        gone = alice.memorize("A memory forgotten before the upgrade", category="fact")
        alice.forget(gone.memory.id)
    monkeypatch.undo()
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        assert migrations.current_version(hive.store._conn) == migrations.LATEST  # type: ignore[attr-defined]
        kept = hive.delete_agent("alice")
        assert (kept.private_memories, kept.shared_memories) == (1, 1)
        bob = hive.get_agent("bob")
        hits = bob.recall("team wiki").hits
        assert [h.memory.id for h in hits] == [shared.memory.id]
        assert hits[0].memory.author_deleted and hits[0].memory.author_name == "alice"
        fresh = bob.memorize("Bob's note after the upgrade", category="fact")
        assert fresh.memory.id == gone.memory.id + 1  # a forgotten id is never handed out again


@pytest.mark.parametrize("name", ["", " ", "9lives", "a" * 65, "bad/name", "ok\nno"])
def test_agent_names_are_validated(table_hive: Hive, name: str) -> None:
    with pytest.raises(ValidationError, match="Agent name"):
        table_hive.create_agent(name)


def test_agents_by_id_name_and_digit_string(table_hive: Hive) -> None:
    alice = table_hive.create_agent("alice", role="helper")
    assert table_hive.get_agent(alice.id).name == "alice"
    assert table_hive.get_agent(str(alice.id)).name == "alice"
    assert table_hive.get_agent("ALICE").role == "helper"
    assert [a.name for a in table_hive.agents()] == ["alice"]
    with pytest.raises(NotFound, match="nobody"):
        table_hive.get_agent("nobody")


def test_bad_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_RRF_K", "zero")
    with pytest.raises(ValidationError, match="MEMORY_RRF_K"):
        Settings.from_env()


def test_a_person_changes_or_forgets_shared_memories_through_the_hive(table_hive: Hive) -> None:
    """The admin path: shared memories only, a deleted author's included; never a private one."""
    alice, bob = table_hive.create_agent("alice"), table_hive.create_agent("bob")
    shared = alice.memorize("The office closes at 6pm", category="fact", scope="shared").memory
    private = bob.memorize("Bob's own reminder", category="fact").memory
    assert table_hive.delete_agent("alice").shared_memories == 1
    with pytest.raises(NotFound, match="belongs to this agent"):
        bob.update_memory(shared.id, content="The office closes at 5pm")
    changed = table_hive.update_memory(shared.id, content="The office closes at 7pm", importance=4)
    assert (changed.content, changed.importance, changed.author_name) == (
        "The office closes at 7pm",
        4,
        "alice",
    )
    assert changed.author_deleted and changed.embedding_state is EmbeddingState.READY
    assert [h.memory.id for h in bob.recall("office closes 7pm").hits][:1] == [shared.id]
    for act in (
        lambda: table_hive.update_memory(private.id, content="taken"),
        lambda: table_hive.forget_memory(private.id),
    ):
        with pytest.raises(NotFound, match="No shared memory"):
            act()
    with pytest.raises(ValidationError):
        table_hive.update_memory(shared.id)  # nothing to change
    table_hive.forget_memory(shared.id)
    assert [m.id for m in bob.list_memories().memories] == [private.id]
    with pytest.raises(NotFound):
        table_hive.forget_memory(shared.id)


@pytest.mark.parametrize(("mode", "level"), [("NORMAL", 1), ("FULL", 2)])
def test_sqlite_durability_is_normal_by_default_and_full_when_chosen(
    db_path: Path, mode: str, level: int
) -> None:
    settings = Settings.from_env({"HIVEKEEP_SQLITE_SYNCHRONOUS": mode.lower()})
    with Hive(db_path, embedder=VectorTable(), settings=settings) as hive:
        [(value,)] = hive.store._conn.execute("PRAGMA synchronous").fetchall()  # type: ignore[attr-defined]
        assert value == level
    assert Settings().sqlite_synchronous == "NORMAL"
    with pytest.raises(ValidationError, match="NORMAL or FULL"):
        Settings(sqlite_synchronous="OFF")
