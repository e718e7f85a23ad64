"""Scoped tokens on both engines (SQLite migration 10, PostgreSQL migration 6): the store keeps
what it is given, and ``hive.tokens`` makes, checks and revokes through it."""

from __future__ import annotations

import pytest

from hivekeep import AgentNotFound, ConflictError, Hive, NotFound, ValidationError
from hivekeep.store.base import Store
from hivekeep.store.tokens import NewToken


def _new(label: str, key_id: str, agents: tuple[int, ...] | None = None) -> NewToken:
    return NewToken(label, key_id, "00" * 16, "ab" * 32, agents, read_only=agents is not None)


def test_the_store_keeps_token_rows_and_finds_them_by_key(store: Store) -> None:
    alice = store.create_agent("alice", "")
    made = store.create_token(_new("app", "0123456789abcdef", (alice.id,)))
    assert (made.label, made.agent_ids, made.read_only, made.last_used_at) == (
        "app",
        (alice.id,),
        True,
        None,
    )
    store.create_token(_new("all", "fedcba9876543210"))
    with pytest.raises(ConflictError, match="already exists"):
        store.create_token(_new("app", "1111111111111111"))
    found = store.token_by_key("0123456789abcdef")
    assert found is not None and found.record == made and found.secret_hash == "ab" * 32
    assert store.token_by_key("0000000000000000") is None
    assert [t.label for t in store.list_tokens()] == ["app", "all"]
    assert store.list_tokens()[1].agent_ids is None
    store.touch_token(made.id, "2026-01-01T00:01:00Z", "2026-01-01T00:00:00Z")
    store.touch_token(made.id, "2026-01-01T00:01:30Z", "2026-01-01T00:00:30Z")  # fresh: kept
    assert store.list_tokens()[0].last_used_at == "2026-01-01T00:01:00Z"
    assert store.delete_token("app") is True
    assert store.delete_token("app") is False
    assert store.token_by_key("0123456789abcdef") is None


def test_hive_tokens_make_check_and_revoke(backend_hive: Hive) -> None:
    alice = backend_hive.create_agent("alice")
    created = backend_hive.tokens.create("notes", ["alice"], read_only=True)
    access = backend_hive.tokens.authenticate(created.token, None)
    assert access is not None and access.agent_ids == frozenset({alice.id}) and access.read_only
    assert access.sees(alice.id) and not access.sees(alice.id + 1) and not access.sees(None)
    wrong = created.token[:-1] + ("B" if created.token.endswith("A") else "A")
    assert backend_hive.tokens.authenticate(wrong, None) is None
    assert backend_hive.tokens.authenticate("not-a-token", None).admin  # type: ignore[union-attr]
    assert backend_hive.tokens.authenticate(None, "x" * 20) is None
    with pytest.raises(AgentNotFound):
        backend_hive.tokens.create("ghost", ["nobody"])
    with pytest.raises(ValidationError):
        backend_hive.tokens.create("   ")
    backend_hive.tokens.revoke("notes")
    assert backend_hive.tokens.authenticate(created.token, None) is None
    with pytest.raises(NotFound):
        backend_hive.tokens.revoke("notes")
