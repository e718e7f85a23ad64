"""The storage interface for writes held for review (``agent.configure(review=...)``).

A held write is not a memory: it lives in its own table, so no recall, listing or export can
return it by mistake, and it becomes a memory only when a person approves it, through the write
path. ``Store`` extends ``PendingStore``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class PendingWrite:
    """One held write: ``operation`` is ``memorize`` (``fields``: the memory's) or ``update``
    (``memory_id`` and the fields it changes); ``source`` says who made it (a tool, the
    maintenance call)."""

    id: int
    agent_id: int
    operation: str
    memory_id: int | None
    fields: dict[str, Any]
    source: str
    created_at: str


class PendingStore(Protocol):
    def hold_write(
        self,
        agent_id: int,
        operation: str,
        memory_id: int | None,
        fields: dict[str, Any],
        source: str,
    ) -> PendingWrite: ...

    def pending_writes(self, agent_id: int | None = None) -> list[PendingWrite]:
        """Oldest first; ``agent_id`` None: every agent's."""
        ...

    def get_pending(self, pending_id: int) -> PendingWrite:
        """Raises NotFound."""
        ...

    def drop_pending(self, pending_id: int) -> bool:
        """Remove a held write (approved or rejected); False when there was none."""
        ...
