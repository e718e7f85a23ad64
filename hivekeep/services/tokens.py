"""Scoped API tokens: made, listed, revoked and checked (``hive.tokens``).

A token acts as some agents (or all of them), optionally read-only; ``hivekeep serve`` and
``hivekeep mcp --http`` check each request's bearer token here, against the store, so a revoked
token is refused by the very next request of every running server (no cache to invalidate).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hivekeep.core import access_tokens
from hivekeep.core.text import format_timestamp
from hivekeep.errors import NotFound
from hivekeep.store.base import Store
from hivekeep.store.tokens import NewToken, TokenRecord

TOUCH_EVERY = timedelta(minutes=1)  # ``last_used_at`` precision: one write a minute per token


@dataclass(frozen=True)
class CreatedToken:
    """A new token: ``token`` is shown once and is not kept anywhere (only its hash is)."""

    label: str
    token: str
    record: TokenRecord


class TokenService:
    def __init__(self, store: Store) -> None:
        self._store = store

    def create(
        self, label: str, agents: Sequence[int | str] = (), *, read_only: bool = False
    ) -> CreatedToken:
        """A token acting as ``agents`` (ids or names; none: every agent), read-only if asked.

        The agents must exist (AgentNotFound otherwise); the label must be unused."""
        label = access_tokens.token_label(label)
        ids = tuple(dict.fromkeys(self._agent_id(key) for key in agents)) or None
        key_id = secrets.token_hex(access_tokens.KEY_ID_HEX // 2)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        record = self._store.create_token(
            NewToken(
                label=label,
                key_id=key_id,
                salt=salt,
                secret_hash=access_tokens.secret_hash(salt, secret),
                agent_ids=ids,
                read_only=read_only,
            )
        )
        return CreatedToken(label, access_tokens.compose(key_id, secret), record)

    def list(self) -> list[TokenRecord]:
        """Every token (labels and scopes, never a secret), oldest first."""
        return self._store.list_tokens()

    def revoke(self, label: str) -> None:
        """Delete the token: the next request bearing it is refused (NotFound: no such label)."""
        if not self._store.delete_token(label.strip()):
            raise NotFound(
                f"No token labelled {label.strip()!r}; list them with `hivekeep tokens list`."
            )

    def verify(self, token: str) -> TokenRecord | None:
        """The token's record if ``token`` is a live token of this hive, else None."""
        parts = access_tokens.split(token)
        if parts is None:
            return None
        stored = self._store.token_by_key(parts[0])
        if stored is None or not access_tokens.matches(stored.salt, parts[1], stored.secret_hash):
            return None
        now = datetime.now(UTC)
        self._store.touch_token(
            stored.record.id, format_timestamp(now), format_timestamp(now - TOUCH_EVERY)
        )
        return stored.record

    def _agent_id(self, key: int | str) -> int:
        if isinstance(key, str) and key.strip().isdigit():
            key = int(key)
        return self._store.get_agent(key.strip() if isinstance(key, str) else key).id
