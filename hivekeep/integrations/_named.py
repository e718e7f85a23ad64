"""What the adapters share: an agent's own memories, page by page, and the name (a LangGraph key,
a memory-tool file name) that an adapter keeps on the first line of a memory's source_context.

A framework addresses an item by a name it chose; a hivekeep memory has an id. The name is kept
with the memory itself, behind a mark, so it survives restarts and needs no table of its own; a
memory written through another interface has no name, and the adapter shows it under one made
from its id (``unnamed``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator

from hivekeep import Agent, MemoryRecord, ValidationError

PAGE = 200  # list_memories' largest page
MAX_NAME_CHARS = 200

Unnamed = Callable[[MemoryRecord], str]


def own_memories(
    agent: Agent, *, subject: str | None = None, category: str | None = None
) -> Iterator[MemoryRecord]:
    """The agent's own memories, newest first (``subject``/``category``: list_memories' filters).
    Other agents' shared memories, which the agent also sees, are theirs to name."""
    offset = 0
    while True:
        page = agent.list_memories(subject=subject, category=category, limit=PAGE, offset=offset)
        yield from (m for m in page.memories if m.agent_id == agent.id)
        if not page.has_more:
            return
        offset += len(page.memories)


def with_name(mark: str, name: str, source_context: str | None) -> str:
    """The source_context to store: the name's line, then the caller's own text (if any)."""
    if not 1 <= len(name) <= MAX_NAME_CHARS:
        raise ValidationError(f"A name is 1-{MAX_NAME_CHARS} characters, got {len(name)}.")
    line = mark + json.dumps(name)  # one line, whatever the name holds
    return line if source_context is None else f"{line}\n{source_context}"


def split_name(mark: str, stored: str | None) -> tuple[str | None, str | None]:
    """(name, the rest of source_context); no name on a memory this adapter did not write."""
    if stored is None or not stored.startswith(mark):
        return None, stored
    line, _, rest = stored.partition("\n")
    return json.loads(line[len(mark) :]), rest or None


def name_of(memory: MemoryRecord, mark: str, unnamed: Unnamed) -> str:
    return split_name(mark, memory.source_context)[0] or unnamed(memory)


def find_named(
    memories: Iterable[MemoryRecord], mark: str, name: str, unnamed: Unnamed
) -> MemoryRecord | None:
    """The memory stored under ``name``; else the unnamed one whose made-up name it is."""
    fallback = None
    for memory in memories:
        stored = split_name(mark, memory.source_context)[0]
        if stored == name:
            return memory
        if stored is None and fallback is None and unnamed(memory) == name:
            fallback = memory
    return fallback
