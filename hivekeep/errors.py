"""Every error hivekeep raises, under one root so one ``except`` catches them all.

    HivekeepError
    ├── ValidationError     bad input: a tool argument, an API body, a CLI option
    │   └── BudgetError     a profile edit would leave the document over its token budget
    ├── NotFound            no such agent / memory (or not visible to the caller)
    │   └── AgentNotFound   no agent of that name or id
    ├── ConflictError       a name is taken, or a compare-and-swap revision moved on
    ├── EmbedderMismatch    the hive was built with another embedding model
    ├── ProviderError       an embedding or LLM provider failed (network, HTTP, bad reply)
    └── StoreError          the storage layer failed or refused (e.g. a newer schema)
        └── HiveBusy        another process held the write lock past the busy timeout

Messages are sentences that name the value and say what to do instead.
"""

from __future__ import annotations


class HivekeepError(Exception):
    """Root of every hivekeep error."""


class ValidationError(HivekeepError):
    """Input that cannot be accepted as given; ``field`` names the argument at fault, if one is.

    The REST API lists it in the error's ``details``.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BudgetError(ValidationError):
    """A profile edit that would exceed the token budget without shrinking the document.

    The message speaks to the model (it names the edit_profile operations that fix it);
    ``for_people`` says the same to a person editing the profile (the web UI, REST, the CLI).
    """

    def __init__(self, message: str, *, for_people: str | None = None) -> None:
        super().__init__(message, field="text")
        self.for_people = for_people or message


class NotFound(HivekeepError):
    """An agent or memory that does not exist, or that the caller may not see."""


class AgentNotFound(NotFound):
    """No agent has that name or id. The message names the key; each interface adds how to
    list agents there (``hivekeep agents``, ``GET /api/agents``)."""


class ConflictError(HivekeepError):
    """A unique name already taken, or a revision that changed since it was read."""


class EmbedderMismatch(HivekeepError):
    """The hive's vectors were made by another model; mixing them would corrupt search."""


class ProviderError(HivekeepError):
    """An embedding or LLM provider failed to answer usefully."""


class StoreError(HivekeepError):
    """The storage backend failed or refused the operation."""


def install_extra(extra: str) -> str:
    """How to install an extra, for the messages that need one: from PyPI, or from a clone."""
    return f"pip install 'hivekeep[{extra}]' (from a clone of hivekeep: pip install '.[{extra}]')"


class HiveBusy(StoreError):
    """Another process held the SQLite hive's write lock for longer than the busy timeout:
    nothing was written, and the same call can be retried (REST: 503 with Retry-After)."""
