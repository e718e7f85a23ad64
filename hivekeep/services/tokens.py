"""Scoped API tokens: made, listed, revoked and checked (``hive.tokens``).

A token acts as some agents (or all of them), optionally read-only; ``hivekeep serve`` and
``hivekeep mcp --http`` check each request's bearer token here, against the store, so a revoked
token is refused by the very next request of every running server (no cache to invalidate).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hivekeep.core import access_tokens
from hivekeep.core.text import format_timestamp
from hivekeep.errors import NotFound, ValidationError
from hivekeep.store.base import Store
from hivekeep.store.tokens import NewToken, TokenRecord

TOUCH_EVERY = timedelta(minutes=1)  # ``last_used_at`` precision: one write a minute per token


@dataclass(frozen=True)
class Access:
    """Who a server request acts as: ``label`` None is the admin (every agent, every route);
    else a scoped token, of ``agent_ids`` (None: every agent), maybe read-only."""

    label: str | None = None
    agent_ids: frozenset[int] | None = None
    read_only: bool = False

    @classmethod
    def of(cls, record: TokenRecord) -> Access:
        ids = None if record.agent_ids is None else frozenset(record.agent_ids)
        return cls(record.label, ids, record.read_only)

    @property
    def admin(self) -> bool:
        return self.label is None

    def sees(self, agent_id: int | None) -> bool:
        """Whether this may act as (and see the events of) the agent."""
        if self.agent_ids is None:
            return True
        return agent_id is not None and agent_id in self.agent_ids


ADMIN = Access()


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
        self, label: str, agents: Sequence[int | str] | None = None, *, read_only: bool = False
    ) -> CreatedToken:
        """A token acting as ``agents`` (ids or names; None: every agent), read-only if asked.

        The agents must exist (AgentNotFound otherwise); the label must be unused. An empty
        list is refused rather than read as every agent: a list that came out empty by mistake
        must not give the widest scope."""
        label = access_tokens.token_label(label)
        if agents is not None and not agents:
            raise ValidationError(
                "A token acts as at least one agent: name them, or pass None (null over REST) "
                "for a token of every agent.",
                field="agents",
            )
        ids = None if agents is None else tuple(dict.fromkeys(map(self._agent_id, agents)))
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

    def verify(self, token: str, *, record_use: bool = True) -> TokenRecord | None:
        """The token's record if ``token`` is a live token of this hive, else None; its use is
        recorded (``last_used_at``) unless ``record_use`` is False (a re-check of a stream)."""
        parts = access_tokens.split(token)
        if parts is None:
            return None
        stored = self._store.token_by_key(parts[0])
        if stored is None or not access_tokens.matches(stored.salt, parts[1], stored.secret_hash):
            return None
        now = datetime.now(UTC)
        stale_before = format_timestamp(now - TOUCH_EVERY)
        used = stored.record.last_used_at
        if record_use and (used is None or used < stale_before):  # else no write: reads stay reads
            self._store.touch_token(stored.record.id, format_timestamp(now), stale_before)
        return stored.record

    def authenticate(
        self, bearer: str | None, admin_token: str | None, *, record_use: bool = True
    ) -> Access | None:
        """Who a request bearing ``bearer`` (None: no token) acts as on a server whose admin
        token is ``admin_token``; None: refused (401). The rules of docs/server.md:

        - the admin token (compared in constant time): the admin;
        - no admin token, and no bearer or one not shaped as a scoped token: the admin (an open,
          loopback-only server, as before scoped tokens);
        - otherwise a live scoped token of this hive, or refused (revoked means refused).
        """
        if admin_token is not None and bearer is not None:
            if hmac.compare_digest(bearer.encode(), admin_token.encode()):
                return ADMIN
        elif admin_token is None and (bearer is None or not access_tokens.is_scoped_token(bearer)):
            return ADMIN
        found = None if bearer is None else self.verify(bearer, record_use=record_use)
        return None if found is None else Access.of(found)

    def _agent_id(self, key: int | str) -> int:
        if isinstance(key, str) and key.strip().isdigit():
            key = int(key)
        return self._store.get_agent(key.strip() if isinstance(key, str) else key).id
