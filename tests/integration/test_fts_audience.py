"""The SQLite full-text arm's audience column (m007) and its common-term rule (issue 17)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hivekeep import Hive, Settings
from hivekeep.store.base import MemoryFilter
from hivekeep.store.sqlite import fulltext, migrations
from hivekeep.types import Scope
from tests.support import VectorTable

NO_FILTER = MemoryFilter()


@pytest.fixture(autouse=True, params=["audience", "join"])
def visibility(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test both ways: visibility in the MATCH, and by the join to ``memories``."""
    monkeypatch.setattr(fulltext, "NARROW_BELOW", 1.01 if request.param == "audience" else 0.0)


def audiences(db_path: Path) -> dict[int, str]:
    conn = apsw.Connection(str(db_path))
    try:
        return {
            int(r[0]): str(r[1]) for r in conn.execute("SELECT rowid, audience FROM memory_fts")
        }
    finally:
        conn.close()


def test_version_6_file_gains_the_audience_column(
    db_path: Path, table: VectorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m007 rebuilds memory_fts from memories: every row, its words and who may see it."""

    def m006_with_later_tables(conn: object) -> None:  # today's code needs 8, 9 and 12
        migrations.m006_history_and_trash(conn)
        migrations.m008_merges_and_links(conn)
        migrations.m009_pending_scrubs(conn)
        migrations.m012_conversation_trash(conn)  # idempotent: replayed later, no harm

    monkeypatch.setattr(
        migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:5], (6, "m6", m006_with_later_tables)]
    )
    monkeypatch.setattr(migrations, "LATEST", 6)
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        alice, bob = hive.create_agent("alice"), hive.create_agent("bob")
        own = alice.memorize("Alice keeps her kayak in the boathouse", category="fact")
        shared = alice.memorize("The kayak club meets on Sundays", category="fact", scope="shared")
        theirs = bob.memorize("Bob sold his kayak last spring", category="fact")
        carol = hive.create_agent("carol")
        left = carol.memorize("Carol's kayak trip notes", category="fact", scope="shared")
        hive.delete_agent("carol")  # an ownerless shared memory
    monkeypatch.undo()
    with Hive(db_path, embedder=table, settings=Settings()) as hive:
        assert migrations.current_version(hive.store._conn) == migrations.LATEST  # type: ignore[attr-defined]
        ids = {own.memory.id, shared.memory.id, theirs.memory.id, left.memory.id}
        alice_id, bob_id = hive.get_agent("alice").id, hive.get_agent("bob").id
        assert audiences(db_path) == {
            own.memory.id: f"a{alice_id}",
            shared.memory.id: "shared",
            theirs.memory.id: f"a{bob_id}",
            left.memory.id: "shared",
        }
        search = hive.store.text_search
        assert set(search(alice_id, ["kayak"], 10, NO_FILTER)) == ids - {theirs.memory.id}
        assert set(search(bob_id, ["kayak"], 10, NO_FILTER)) == ids - {own.memory.id}
        only_shared = MemoryFilter(scope=Scope.SHARED)
        assert set(search(bob_id, ["kayak"], 10, only_shared)) == {
            shared.memory.id,
            left.memory.id,
        }
        assert search(alice_id, ["kayak"], 10, MemoryFilter(own=True)) == [
            m
            for m in search(alice_id, ["kayak"], 10, NO_FILTER)
            if m in {own.memory.id, shared.memory.id}
        ]


def test_a_scope_change_moves_the_memory_to_its_new_audience(
    table_hive: Hive, db_path: Path
) -> None:
    alice, bob = table_hive.create_agent("alice"), table_hive.create_agent("bob")
    note = alice.memorize("The boathouse code is 4411", category="fact").memory
    assert table_hive.store.text_search(bob.id, ["boathouse"], 10, NO_FILTER) == []
    alice.update_memory(note.id, scope="shared")
    assert audiences(db_path)[note.id] == "shared"
    assert table_hive.store.text_search(bob.id, ["boathouse"], 10, NO_FILTER) == [note.id]
    alice.update_memory(note.id, scope="private")
    assert table_hive.store.text_search(bob.id, ["boathouse"], 10, NO_FILTER) == []


def test_query_words_never_match_the_audience_column(table_hive: Hive) -> None:
    alice = table_hive.create_agent("alice")
    alice.memorize("Tea at four", category="fact", scope="shared")
    for words in (["shared"], [f"a{alice.id}"], ["audience"]):
        assert table_hive.store.text_search(alice.id, words, 10, NO_FILTER) == []
        assert table_hive.store.text_search(alice.id, words, 10, NO_FILTER, any_term=True) == []


def test_common_terms_only_score_in_the_fill(
    table_hive: Hive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A term in more than COMMON_ROWS rows counts only together with the query's others."""
    alice = table_hive.create_agent("alice")
    ids = {
        text: alice.memorize(text, category="fact").memory.id
        for text in (
            "red car parked outside",
            "red bike in the shed",
            "red door painted again",
            "old car sold in spring",
            "car wash on Sunday",
            "ferry timetable for Lisbon",
        )
    }
    search = table_hive.store.text_search
    everything = set(search(alice.id, ["red", "ferry"], 10, NO_FILTER, any_term=True))
    assert everything == {
        ids["red car parked outside"],
        ids["red bike in the shed"],
        ids["red door painted again"],
        ids["ferry timetable for Lisbon"],
    }
    monkeypatch.setattr(fulltext, "COMMON_ROWS", 2)  # "red" and "car" (3 rows) are common
    assert search(alice.id, ["red", "ferry"], 10, NO_FILTER, any_term=True) == [
        ids["ferry timetable for Lisbon"]
    ]
    # every term common: they are all required (the AND)
    assert search(alice.id, ["red", "car"], 10, NO_FILTER, any_term=True) == [
        ids["red car parked outside"]
    ]


def test_a_word_probed_once_is_probed_again_after_a_write(
    table_hive: Hive, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Common-term verdicts are kept between searches only while the file is unchanged: a write
    by this connection or a commit by another one makes the next search probe again."""
    monkeypatch.setattr(fulltext, "COMMON_ROWS", 2)
    alice = table_hive.create_agent("alice")
    ferry = alice.memorize("ferry timetable for Lisbon", category="fact").memory.id
    for text in ("red car parked outside", "red bike in the shed"):
        alice.memorize(text, category="fact")
    search = table_hive.store.text_search
    assert len(search(alice.id, ["red", "ferry"], 10, NO_FILTER, any_term=True)) == 3
    alice.memorize("red door painted again", category="fact")  # "red": 3 rows, common
    assert search(alice.id, ["red", "ferry"], 10, NO_FILTER, any_term=True) == [ferry]
    other = apsw.Connection(str(db_path))  # another process's delete (the trigger cleans FTS)
    try:
        other.execute("DELETE FROM memories WHERE content = 'red door painted again'")
    finally:
        other.close()
    assert len(search(alice.id, ["red", "ferry"], 10, NO_FILTER, any_term=True)) == 3
