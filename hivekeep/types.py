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


class Actor(StrEnum):
    """Who made a change recorded in a memory's or a profile's history."""

    AGENT = "agent"  # the agent itself (its tools, or code acting as it)
    PERSON = "person"  # a person through the web UI, REST, the CLI or the admin path
    MAINTENANCE = "maintenance"  # the maintenance call, bootstrap or regenerate
    IMPORT = "import"  # ``hivekeep import``


class Operation(StrEnum):
    """What a recorded change did."""

    CREATE = "create"  # the first version
    UPDATE = "update"  # content, category, subject, importance or scope changed
    FORGET = "forget"  # moved to the trash
    RESTORE = "restore"  # back from the trash, or an older version made current again
    EDIT = "edit"  # a profile: one edit_profile operation
    SET = "set"  # a profile: the whole document replaced by a person
    REWRITE = "rewrite"  # a profile: the maintenance call's rewrite
    REGENERATE = "regenerate"  # a profile: rebuilt from the archive (bootstrap included)
    IMPORT = "import"  # replaced by an import
    MERGE = "merge"  # a dated write judged the same fact, older than the text: kept, not current
    REWORD = "reword"  # a write judged the same fact: its text became the memory's content
