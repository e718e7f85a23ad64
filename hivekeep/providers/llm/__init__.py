"""LLM providers: the protocol, its value types, and the registry of ``provider:model`` specs.

Provider modules (and the ``openai`` / ``anthropic`` SDKs they import) load only when a spec
names them, so importing this package stays cheap.
"""

from hivekeep.providers.llm.base import (
    CALL_SITES,
    LLM,
    RAW_ARGUMENTS_KEY,
    CallSite,
    Completion,
    Message,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    UsageLog,
)
from hivekeep.providers.llm.context_windows import DEFAULT_CONTEXT_WINDOW, context_window_for
from hivekeep.providers.llm.registry import available_llms, create_llm, register_llm

__all__ = [
    "CALL_SITES",
    "DEFAULT_CONTEXT_WINDOW",
    "LLM",
    "RAW_ARGUMENTS_KEY",
    "CallSite",
    "Completion",
    "Message",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "Usage",
    "UsageLog",
    "available_llms",
    "context_window_for",
    "create_llm",
    "register_llm",
]
