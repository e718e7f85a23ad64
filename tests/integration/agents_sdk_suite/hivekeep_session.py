"""The one change made to the SDK's tests: ``SQLiteSession(session_id, db_path, ...)`` (and the
in-memory ``SimpleListSession(session_id, history)`` of its scenario tests) builds a
HivekeepSession. A database path is one hive (sessions on one path share it, as SQLiteSession's
share the file); ``":memory:"`` (the default) is a hive of its own, as SQLiteSession's in-memory
database is. The session is named ``session_id`` on the hive's agent ``assistant``, and runs the
compaction check after each write (a scripted model with a large window: no fold is due)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.memory import SessionSettings

from hivekeep import Hive, Settings
from hivekeep.integrations.openai_agents import HivekeepSession, conversation_messages
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM

_open: dict[str, Hive] = {}
_where: list[tuple[Path, LocalEmbedder]] = []


@contextmanager
def opened(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[None]:
    """Where the test's in-memory hives go, and the closing of every hive it opened."""
    _where.append((tmp_path, embedder))
    try:
        yield
    finally:
        _where.pop()
        for hive in _open.values():
            hive.close()
        _open.clear()


def _hive(db_path: str | Path) -> Hive:
    tmp_path, embedder = _where[-1]
    key = str(db_path) if str(db_path) == ":memory:" else str(Path(db_path).resolve())
    if key == ":memory:":
        key, db_path = f":memory:{len(_open)}", tmp_path / f"memory-{len(_open)}.db"
    if key not in _open:
        llm = ScriptedLLM(context_window=1_000_000)
        _open[key] = Hive(Path(db_path), embedder=embedder, settings=Settings(), llm=llm)
    return _open[key]


def SQLiteSession(  # the SDK's name, so its tests run unchanged
    session_id: str,
    db_path: str | Path = ":memory:",
    session_settings: SessionSettings | dict[str, Any] | None = None,
) -> HivekeepSession:
    agent = _hive(db_path).agent("assistant")
    return HivekeepSession(agent, session_id, session_settings=session_settings)


def SimpleListSession(  # the SDK's in-memory test session's name
    session_id: str = "test", history: list[Any] | None = None
) -> HivekeepSession:
    """A session on a hive of its own (SimpleListSession keeps its items in memory), holding
    ``history`` as if added (the SDK's tests rehydrate a session with it)."""
    session = SQLiteSession(session_id)
    messages, records = conversation_messages(history or [])
    if messages:
        session.agent.add_messages(
            session.conversation_id, messages, compact=False, records=records
        )
    return session
