"""hivekeep: persistent memory for LLM agents — an always-present profile, a searchable archive."""

from hivekeep.agent import Agent, MemoryPage
from hivekeep.config import Settings
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
from hivekeep.hive import Hive
from hivekeep.providers.base import Embedder, RecallDefaults
from hivekeep.store.base import KEEP
from hivekeep.tools import tool_schemas
from hivekeep.types import Category, Scope

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
