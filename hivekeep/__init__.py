"""hivekeep: persistent memory for LLM agents — an always-present profile, a searchable archive.

``Hive`` is the entry point and ``Agent`` does the work; every other name here is a type that one
of their methods takes or returns (records, results, outcomes, errors), so a caller never imports
from the modules below the façade (docs/architecture.md). The services stay internal.

The public names load on first use (PEP 562 ``__getattr__``), so ``import hivekeep`` and
``hivekeep --help`` stay fast: the store, numpy, pydantic and the tool models load when
``hivekeep.Hive`` (or another name) is first reached. The errors are light and load at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hivekeep.errors import (
    AgentNotFound,
    BudgetError,
    ConflictError,
    EmbedderMismatch,
    HiveBusy,
    HivekeepError,
    NotFound,
    ProviderError,
    StoreError,
    ValidationError,
)

if TYPE_CHECKING:
    from hivekeep.agent import Agent, Conversations
    from hivekeep.config import Settings
    from hivekeep.core.chats import Chat, ChatMessage
    from hivekeep.core.compaction import CompactionSettings
    from hivekeep.core.messages import Message, ToolCall
    from hivekeep.hive import Hive, Resumed
    from hivekeep.providers.base import Embedder, RecallDefaults
    from hivekeep.providers.llm.base import LLM, Completion, TextDelta, Usage
    from hivekeep.services.archive import Backfill, Memorized, MemoryPage
    from hivekeep.services.chat import MAX_MESSAGE_CHARS, ChatEvent, ChatReply, ToolUse
    from hivekeep.services.compaction import CompactionOutcome
    from hivekeep.services.compile import BootstrapOutcome, CompileOutcome
    from hivekeep.services.conversation import Context
    from hivekeep.services.credential_scan import CredentialScan, Finding
    from hivekeep.services.credentials import CredentialRefused
    from hivekeep.services.history import TrashPage
    from hivekeep.services.llms import LLMNotConfigured
    from hivekeep.services.maintenance import MaintenanceOutcome
    from hivekeep.services.recall import RankedPage, RecallHit, RecallResult
    from hivekeep.services.remember import CaughtUp, Remembered
    from hivekeep.services.review import Review, ReviewIssue
    from hivekeep.services.threads import Synced
    from hivekeep.services.tokens import Access, CreatedToken, TokenService
    from hivekeep.services.transfer import ExportReport, ImportReport
    from hivekeep.services.transfer.chat_exports import ChatImport
    from hivekeep.store.base import (
        KEEP,
        AgentFootprint,
        EmbeddingSpace,
        MemoryRecord,
        ProfileRecord,
        TrashedMemory,
    )
    from hivekeep.store.conversations import (
        AgentSettings,
        ConversationRecord,
        MessageRecord,
        SummaryRecord,
        ToolCallRecord,
    )
    from hivekeep.store.leases import AgentBusy
    from hivekeep.store.pending import PendingWrite
    from hivekeep.store.tokens import TokenRecord
    from hivekeep.tools import tool_schemas
    from hivekeep.types import Actor, Category, Operation, Scope, Source

_LAZY = {
    "Agent": "hivekeep.agent",
    "Conversations": "hivekeep.agent",
    "Settings": "hivekeep.config",
    "Chat": "hivekeep.core.chats",
    "ChatMessage": "hivekeep.core.chats",
    "CompactionSettings": "hivekeep.core.compaction",
    "Message": "hivekeep.core.messages",
    "ToolCall": "hivekeep.core.messages",
    "Hive": "hivekeep.hive",
    "Resumed": "hivekeep.hive",
    "Embedder": "hivekeep.providers.base",
    "RecallDefaults": "hivekeep.providers.base",
    "LLM": "hivekeep.providers.llm.base",
    "Completion": "hivekeep.providers.llm.base",
    "TextDelta": "hivekeep.providers.llm.base",
    "Usage": "hivekeep.providers.llm.base",
    "Backfill": "hivekeep.services.archive",
    "Memorized": "hivekeep.services.archive",
    "MemoryPage": "hivekeep.services.archive",
    "MAX_MESSAGE_CHARS": "hivekeep.services.chat",
    "ChatEvent": "hivekeep.services.chat",
    "ChatReply": "hivekeep.services.chat",
    "ToolUse": "hivekeep.services.chat",
    "CompactionOutcome": "hivekeep.services.compaction",
    "BootstrapOutcome": "hivekeep.services.compile",
    "CompileOutcome": "hivekeep.services.compile",
    "Context": "hivekeep.services.conversation",
    "CredentialRefused": "hivekeep.services.credentials",
    "CredentialScan": "hivekeep.services.credential_scan",
    "Finding": "hivekeep.services.credential_scan",
    "TrashPage": "hivekeep.services.history",
    "PendingWrite": "hivekeep.store.pending",
    "LLMNotConfigured": "hivekeep.services.llms",
    "MaintenanceOutcome": "hivekeep.services.maintenance",
    "RankedPage": "hivekeep.services.recall",
    "RecallHit": "hivekeep.services.recall",
    "RecallResult": "hivekeep.services.recall",
    "CaughtUp": "hivekeep.services.remember",
    "Remembered": "hivekeep.services.remember",
    "Review": "hivekeep.services.review",
    "ReviewIssue": "hivekeep.services.review",
    "Access": "hivekeep.services.tokens",
    "CreatedToken": "hivekeep.services.tokens",
    "TokenService": "hivekeep.services.tokens",
    "ExportReport": "hivekeep.services.transfer",
    "ImportReport": "hivekeep.services.transfer",
    "ChatImport": "hivekeep.services.transfer.chat_exports",
    "Synced": "hivekeep.services.threads",
    "KEEP": "hivekeep.store.base",
    "AgentFootprint": "hivekeep.store.base",
    "EmbeddingSpace": "hivekeep.store.base",
    "MemoryRecord": "hivekeep.store.base",
    "ProfileRecord": "hivekeep.store.base",
    "TrashedMemory": "hivekeep.store.base",
    "AgentSettings": "hivekeep.store.conversations",
    "ConversationRecord": "hivekeep.store.conversations",
    "MessageRecord": "hivekeep.store.conversations",
    "SummaryRecord": "hivekeep.store.conversations",
    "ToolCallRecord": "hivekeep.store.conversations",
    "AgentBusy": "hivekeep.store.leases",
    "TokenRecord": "hivekeep.store.tokens",
    "tool_schemas": "hivekeep.tools",
    "Actor": "hivekeep.types",
    "Category": "hivekeep.types",
    "Operation": "hivekeep.types",
    "Scope": "hivekeep.types",
    "Source": "hivekeep.types",
}

__all__ = [
    "KEEP",
    "LLM",
    "MAX_MESSAGE_CHARS",
    "Access",
    "Actor",
    "Agent",
    "AgentBusy",
    "AgentFootprint",
    "AgentNotFound",
    "AgentSettings",
    "Backfill",
    "BootstrapOutcome",
    "BudgetError",
    "Category",
    "CaughtUp",
    "Chat",
    "ChatEvent",
    "ChatImport",
    "ChatMessage",
    "ChatReply",
    "CompactionOutcome",
    "CompactionSettings",
    "CompileOutcome",
    "Completion",
    "ConflictError",
    "Context",
    "ConversationRecord",
    "Conversations",
    "CreatedToken",
    "CredentialRefused",
    "CredentialScan",
    "Embedder",
    "EmbedderMismatch",
    "EmbeddingSpace",
    "ExportReport",
    "Finding",
    "Hive",
    "HiveBusy",
    "HivekeepError",
    "ImportReport",
    "LLMNotConfigured",
    "MaintenanceOutcome",
    "Memorized",
    "MemoryPage",
    "MemoryRecord",
    "Message",
    "MessageRecord",
    "NotFound",
    "Operation",
    "PendingWrite",
    "ProfileRecord",
    "ProviderError",
    "RankedPage",
    "RecallDefaults",
    "RecallHit",
    "RecallResult",
    "Remembered",
    "Resumed",
    "Review",
    "ReviewIssue",
    "Scope",
    "Settings",
    "Source",
    "StoreError",
    "SummaryRecord",
    "Synced",
    "TextDelta",
    "TokenRecord",
    "TokenService",
    "ToolCall",
    "ToolCallRecord",
    "ToolUse",
    "TrashPage",
    "TrashedMemory",
    "Usage",
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
