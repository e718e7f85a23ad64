"""The storage interface for scoped API tokens: rows holding a salted hash, never a token.

Split from ``base.py`` as ``conversations.py`` is: a separate concern (who may call the server)
that every backend implements; ``Store`` extends ``TokenStore``. The store keeps what it is given;
generating, hashing and checking a token is ``hivekeep/services/tokens.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TokenRecord:
    """A token as ``hivekeep tokens list`` shows it: its label and scope, never its secret.

    ``agent_ids`` None: every agent. ``last_used_at`` is kept to the minute (docs/server.md)."""

    id: int
    label: str
    agent_ids: tuple[int, ...] | None
    read_only: bool
    created_at: str
    last_used_at: str | None


@dataclass(frozen=True)
class StoredToken:
    """A token's row: its record, and what checks a presented secret against it."""

    record: TokenRecord
    key_id: str
    salt: str
    secret_hash: str


@dataclass(frozen=True)
class NewToken:
    label: str
    key_id: str
    salt: str
    secret_hash: str
    agent_ids: tuple[int, ...] | None
    read_only: bool


class TokenStore(Protocol):
    def create_token(self, token: NewToken) -> TokenRecord:
        """Raises ConflictError when the label (or, by a one-in-2^64 chance, the key) is taken."""
        ...

    def token_by_key(self, key_id: str) -> StoredToken | None:
        """The token with this public key id (one indexed read: done on every request)."""
        ...

    def list_tokens(self) -> list[TokenRecord]:
        """Oldest first."""
        ...

    def delete_token(self, label: str) -> bool:
        """False when there is no token labelled ``label``."""
        ...

    def touch_token(self, token_id: int, used_at: str, stale_before: str) -> None:
        """Set ``last_used_at`` to ``used_at`` unless it is already at or after ``stale_before``
        (so a busy token costs a write a minute, not one a request). Best effort: skipped, not
        waited for, while another writer holds the store (a read must never wait on it)."""
        ...
