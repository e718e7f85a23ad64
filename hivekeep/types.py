"""Shared enums and small value types used across the core, the store and the services."""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    """What kind of thing an archive memory records."""

    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    KNOWLEDGE = "knowledge"


class Scope(StrEnum):
    """Who can see a memory: its owner only, or every agent of the hive."""

    PRIVATE = "private"
    SHARED = "shared"


class Source(StrEnum):
    """How a memory was written: by a tool call or user (explicit) or by maintenance."""

    EXPLICIT = "explicit"
    AUTOMATIC = "automatic"


class EmbeddingState(StrEnum):
    """Whether a memory's vector is in the index ("pending" rows are found by FTS only)."""

    READY = "ready"
    PENDING = "pending"
