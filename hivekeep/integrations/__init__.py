"""Adapters that put a hive behind the interfaces agent frameworks already use.

Each module needs its framework, installed with its extra, and none is imported by
``import hivekeep``:

- ``hivekeep.integrations.langgraph``: ``HivekeepStore``, a LangGraph ``BaseStore``
  (``pip install 'hivekeep[langgraph]'``);
- ``hivekeep.integrations.openai_agents``: ``HivekeepSession`` and ``memory_tools`` for the OpenAI
  Agents SDK (``pip install 'hivekeep[openai-agents]'``);
- ``hivekeep.integrations.anthropic_memory``: ``HivekeepMemoryTool``, a backend for Claude's
  memory tool (``pip install 'hivekeep[anthropic-memory]'``).

They are thin layers over ``Hive`` and ``Agent``; docs/integrations.md describes the mappings.
"""

from hivekeep.errors import install_extra


def needs_extra(extra: str, exc: ImportError) -> ImportError:
    """The error for an adapter whose framework is missing or too old: which extra installs it."""
    return ImportError(
        f"This hivekeep integration could not import {exc.name or 'its framework'} ({exc}). "
        f"Install it with: {install_extra(extra)}",
        name=exc.name,
    )
