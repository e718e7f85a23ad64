"""What the adapters share: an agent's own memories, page by page, and the names (LangGraph keys,
memory-tool file names) that an adapter keeps on the first line of a memory's source_context.

A framework addresses an item by a name it chose; a hivekeep memory has an id. The names are kept
with the memory itself, behind a mark, so they survive restarts and need no table of their own.
One memory may carry several names: a write whose text the archive already holds (dedup) adds
its name to that memory instead of storing the text twice, so every name stays readable. A
memory written through another interface has no name; the adapter shows it under one made from
its id (``Naming.unnamed``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from hivekeep import Agent, MemoryRecord, ValidationError
from hivekeep.tools import MAX_SOURCE_CONTEXT

PAGE = 200  # list_memories' largest page
MAX_NAME_CHARS = 200
_RENAMING = threading.Lock()  # a memory's names are read, changed and written back as one step


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


@dataclass(frozen=True)
class Naming:
    """One adapter's names: the ``mark`` that starts their line in source_context, and the name
    a memory without one shows under."""

    mark: str
    unnamed: Callable[[MemoryRecord], str]

    def split(self, stored: str | None) -> tuple[list[str], str | None]:
        """(the names, the rest of source_context); no names on a memory no adapter named."""
        if stored is None or not stored.startswith(self.mark):
            return [], stored
        line, _, rest = stored.partition("\n")
        names = json.loads(line[len(self.mark) :])
        return ([names] if isinstance(names, str) else list(names)), rest or None

    def names(self, memory: MemoryRecord) -> list[str]:
        """Every name the memory is reached by, its first one first."""
        return self.split(memory.source_context)[0] or [self.unnamed(memory)]

    def context(self, memory: MemoryRecord) -> str | None:
        """The memory's source_context without the names' line: the caller's own text."""
        return self.split(memory.source_context)[1]

    def source_context(self, names: list[str], context: str | None) -> str:
        """The source_context to store: the names' line (one name: a JSON string, several: a
        JSON list, so any name fits on one line), then the caller's own text (if any)."""
        for name in names:
            if not 1 <= len(name) <= MAX_NAME_CHARS:
                raise ValidationError(f"A name is 1-{MAX_NAME_CHARS} characters, got {len(name)}.")
        line = self.mark + json.dumps(names[0] if len(names) == 1 else names)
        return line if context is None else f"{line}\n{context}"

    def find(self, memories: Iterable[MemoryRecord], name: str) -> MemoryRecord | None:
        """The memory reached by ``name``; else the unnamed one whose made-up name it is."""
        fallback = None
        for memory in memories:
            stored = self.split(memory.source_context)[0]
            if name in stored:
                return memory
            if not stored and fallback is None and self.unnamed(memory) == name:
                fallback = memory
        return fallback

    def rename(
        self, agent: Agent, memory: MemoryRecord, old: str | None, new: str | None
    ) -> MemoryRecord:
        """Replace the name ``old`` with ``new`` in place (``old`` None: add ``new``; ``new``
        None: drop ``old``), in one update of the memory: its id, text and history stay. The
        names are read again under a lock, so two threads changing one memory's names at once
        do not drop each other's."""
        with _RENAMING:
            memory = agent.memory(memory.id)
            names = [n for n in self.names(memory) if n != old]
            if new is not None and new not in names:
                at = self.names(memory).index(old) if old in self.names(memory) else len(names)
                names.insert(at, new)
            if not names:
                raise ValidationError("A memory's last name is dropped by forgetting the memory.")
            stored = self.source_context(names, self.context(memory))
            if len(stored) > MAX_SOURCE_CONTEXT:
                raise ValidationError(
                    f"{len(names)} names are too many for one memory: its source_context would "
                    f"pass {MAX_SOURCE_CONTEXT} characters. Use fewer or shorter names."
                )
            return agent.update_memory(memory.id, source_context=stored)
