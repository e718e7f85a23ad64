"""Nothing is overwritten: the Python API of versions, undo, the trash, retention and purge."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivekeep import Hive, NotFound, Settings, ValidationError
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.sqlite import SQLiteStore

SECRET = "quokkaswordfish42"


def _raw(db_path: Path) -> bytes:
    """Every byte of the hive file and its WAL (the -shm file holds only page numbers)."""
    data = db_path.read_bytes()
    wal = Path(f"{db_path}-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


# versions and restore -------------------------------------------------------------------------
def test_memory_history_and_restore_through_the_agent(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize("The user is allergic to peanuts", category="fact").memory
    agent.update_memory(memory.id, content="The user likes peanuts")
    history = agent.memory_history(memory.id)
    assert [(v["version"], v["operation"], v["changed_by"]) for v in history] == [
        (2, "update", "agent"),
        (1, "create", "agent"),
    ]
    assert set(history[0]) >= {"version", "content", "changed_at", "changed_by", "operation"}
    restored = agent.restore_memory(memory.id, version=1)
    assert restored.content == "The user is allergic to peanuts"
    assert agent.recall("peanut allergy").hits[0].memory.id == memory.id  # re-embedded
    newest = agent.memory_history(memory.id)[0]
    assert (newest["version"], newest["operation"], newest["changed_by"]) == (
        3,
        "restore",
        "person",
    )
    with pytest.raises(NotFound):
        agent.restore_memory(memory.id)  # not in the trash
    with pytest.raises(NotFound):
        agent.restore_memory(memory.id, version=9)


def test_a_source_context_change_is_an_update_that_a_restore_leaves_alone(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize("Ann rides a red bike", category="fact", source_context="chat").memory

    changed = agent.update_memory(memory.id, source_context="the intake form\x07")

    assert (changed.content, changed.source_context) == ("Ann rides a red bike", "the intake form")
    assert [v["operation"] for v in agent.memory_history(memory.id)] == ["update", "create"]
    agent.restore_memory(memory.id, version=1)
    assert agent.memory(memory.id).source_context == "the intake form"  # versions hold fields
    assert agent.update_memory(memory.id, source_context=None).source_context is None
    with pytest.raises(ValidationError, match="at most 2000"):
        agent.update_memory(memory.id, source_context="x" * 2001)
    with pytest.raises(ValidationError, match="must be a string"):
        agent.update_memory(memory.id, source_context=7)  # type: ignore[arg-type]
    assert agent.memory(memory.id).source_context is None


def test_forget_goes_to_the_trash_and_restore_undoes_it(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize("The wifi password is hive42", category="fact").memory
    agent.forget(memory.id)
    assert agent.recall("wifi password").hits == []
    assert agent.list_memories().total == 0
    assert [t.memory.id for t in agent.trash().memories] == [memory.id]
    again = agent.memorize("The wifi password is hive42", category="fact")
    assert not again.duplicate  # a trashed memory is out of dedup
    agent.forget(again.memory.id)
    assert agent.restore_memory(memory.id).id == memory.id
    assert [h.memory.id for h in agent.recall("wifi password").hits] == [memory.id]
    assert [t.memory.id for t in agent.trash().memories] == [again.memory.id]


def test_the_person_path_forgets_into_the_trash_as_a_person(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize("Team lunch is on fridays", category="fact", scope="shared").memory
    hive.forget_memory(memory.id)
    [trashed] = hive.trash()
    assert trashed.memory.id == memory.id and trashed.deleted_by.value == "person"
    assert agent.memory_history(memory.id)[0]["changed_by"] == "person"
    assert hive.restore_memory(memory.id).id == memory.id


def test_profile_history_and_restore(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    agent.set_profile("## Health\n- allergic to peanuts\n")
    agent.set_profile("## Health\n- no known allergies\n")
    history = agent.profile_history()
    assert [(v["version"], v["operation"], v["changed_by"]) for v in history] == [
        (2, "set", "person"),
        (1, "set", "person"),
        (0, "create", "person"),
    ]
    assert set(history[0]) >= {"version", "text", "changed_at", "changed_by", "operation"}
    agent.restore_profile(1)
    assert "allergic to peanuts" in agent.profile_text()
    assert agent.profile_history()[0]["operation"] == "restore"
    assert len(agent.profile_history()) == 4  # history is never rewritten
    with pytest.raises(NotFound):
        agent.restore_profile(42)


def test_edit_profile_is_recorded_as_the_agent(hive: Hive) -> None:
    agent = hive.create_agent("alice")
    agent.call_tool("edit_profile", {"section": "Facts", "operation": "append", "content": "x"})
    assert agent.profile_history()[0]["changed_by"] == "agent"
    assert agent.profile_history()[0]["operation"] == "edit"


# retention ------------------------------------------------------------------------------------
def test_the_trash_is_purged_after_the_retention_period(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings(trash_days=7)) as hive:
        agent = hive.create_agent("alice")
        old = agent.memorize("forgotten long ago", category="fact").memory
        recent = agent.memorize("forgotten yesterday", category="fact").memory
        agent.forget(old.id)
        agent.forget(recent.id)
    store = SQLiteStore(db_path)
    with store.atomic() as conn:  # as if forgotten 8 days ago
        conn.execute(
            "UPDATE memory_trash SET deleted_at = '2000-01-01T00:00:00.000000Z' WHERE id = ?",
            (old.id,),
        )
    store.close()
    with Hive(db_path, embedder=local_embedder, settings=Settings(trash_days=7)) as hive:
        agent = hive.get_agent("alice")
        assert [t.memory.id for t in agent.trash().memories] == [recent.id]
        with pytest.raises(NotFound):
            agent.restore_memory(old.id)


# purge ----------------------------------------------------------------------------------------
def test_purge_leaves_no_trace_of_the_text_in_the_database_files(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        agent = hive.create_agent("alice")
        for n in range(30):  # neighbours on the same pages
            agent.memorize(f"Ordinary memory number {n} about gardening", category="fact")
        memory = agent.memorize(
            f"The vault code is {SECRET} (old)", category="fact", subject=f"vault {SECRET}"
        ).memory
        agent.update_memory(memory.id, content=f"The vault code is {SECRET}")
        agent.forget(memory.id)
        assert SECRET.encode() in _raw(db_path)  # forget alone erases nothing: it is undoable
        hive.purge(memory.id)
        assert SECRET.encode() not in _raw(db_path)
        assert SECRET.upper().encode() not in _raw(db_path).upper()
        with pytest.raises(NotFound):
            hive.purge(memory.id)
        assert agent.list_memories().total == 30
        assert agent.recall("gardening").hits
    assert SECRET.encode() not in _raw(db_path)


def test_purge_of_a_live_memory(hive: Hive, db_path: Path) -> None:
    agent = hive.create_agent("alice")
    memory = agent.memorize(f"My token is {SECRET}", category="fact").memory
    hive.purge(memory.id)
    assert agent.recall(SECRET).hits == []
    with pytest.raises(NotFound):
        agent.memory_history(memory.id)
    assert SECRET.encode() not in _raw(db_path)


# undo, step by step ---------------------------------------------------------------------------
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.integers(0, 99)),
        st.tuples(st.just("forget"), st.just(0)),
        st.tuples(st.just("restore"), st.integers(1, 30)),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=_steps)
def test_any_sequence_of_changes_can_be_undone_back_to_the_first_version(
    table_hive: Hive, steps: list[tuple[str, int]]
) -> None:
    """Random updates, forgets and restores; then every older state is restored in turn, newest
    to oldest, and each restore gives back exactly that state, ending at the first version."""
    agent = table_hive.create_agent(f"a{len(table_hive.agents())}")
    memory = agent.memorize("version one", category="fact").memory
    states: dict[int, tuple[str, str, int | None]] = {}  # version -> content, category, importance

    def record() -> None:
        for v in agent.memory_history(memory.id):
            state = (v["content"], v["category"], v["importance"])
            assert states.setdefault(v["version"], state) == state  # never rewritten

    record()
    for action, number in steps:
        current = agent.memory_history(memory.id)[0]
        trashed = current["operation"] == "forget"
        if action == "update":
            if trashed:
                with pytest.raises(NotFound):  # a trashed memory is restored, not changed
                    agent.update_memory(memory.id, content="never")
                continue
            content = f"text {number} after {current['version']}"
            agent.update_memory(memory.id, content=content, importance=number % 10 + 1)
        elif action == "forget":
            if trashed:
                continue
            agent.forget(memory.id)
        else:
            agent.restore_memory(memory.id, version=number % current["version"] + 1)
        record()
    for version in sorted(states, reverse=True)[1:]:
        restored = agent.restore_memory(memory.id, version=version)
        assert (restored.content, restored.category.value, restored.importance) == states[version]
        record()
    assert agent.list_memories().memories[0].content == "version one"
