"""hivekeep: persistent memory for LLM agents — an always-present profile, a searchable archive.

The public names load on first use (PEP 562 ``__getattr__``), so ``import hivekeep`` and
``hivekeep --help`` stay fast: the store, numpy, pydantic and the tool models load when
``hivekeep.Hive`` (or another name) is first reached. The errors are light and load at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hivekeep.errors import (
    BudgetError,
    ConflictError,
    EmbedderMismatch,
    HivekeepError,
    NotFound,
    ProviderError,
    StoreError,
    ValidationError,
)

if TYPE_CHECKING:
    from hivekeep.agent import Agent, MemoryPage
    from hivekeep.config import Settings
    from hivekeep.hive import Hive
    from hivekeep.providers.base import Embedder, RecallDefaults
    from hivekeep.store.base import KEEP
    from hivekeep.tools import tool_schemas
    from hivekeep.types import Category, Scope

_LAZY = {
    "Agent": "hivekeep.agent",
    "MemoryPage": "hivekeep.agent",
    "Settings": "hivekeep.config",
    "Hive": "hivekeep.hive",
    "Embedder": "hivekeep.providers.base",
    "RecallDefaults": "hivekeep.providers.base",
    "KEEP": "hivekeep.store.base",
    "tool_schemas": "hivekeep.tools",
    "Category": "hivekeep.types",
    "Scope": "hivekeep.types",
}

__all__ = [
    "KEEP",
    "Agent",
    "BudgetError",
    "Category",
    "ConflictError",
    "Embedder",
    "EmbedderMismatch",
    "Hive",
    "HivekeepError",
    "MemoryPage",
    "NotFound",
    "ProviderError",
    "RecallDefaults",
    "Scope",
    "Settings",
    "StoreError",
    "ValidationError",
    "tool_schemas",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hivekeep' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
