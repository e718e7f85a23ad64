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


KEY_MARK = "langgraph-key:"  # the line of a memory's LangGraph keys
FILE_MARK = "memory-file:"  # the line of its memory-tool file names
_MARKS = (KEY_MARK, FILE_MARK)


def _heads(stored: str | None) -> tuple[list[str], str | None]:
    """(the name lines that start a source_context, every adapter's; the caller's own text)."""
    if stored is None:
        return [], None
    lines = stored.split("\n")
    head = 0
    while head < len(lines) and lines[head].startswith(_MARKS):
        head += 1
    return lines[:head], "\n".join(lines[head:]) or None


def _others_reach(stored: str | None, mark: str) -> bool:
    """Whether another adapter's names (a line not of ``mark``, not emptied) reach the memory."""
    return any(json.loads(h.partition(":")[2]) for h in _heads(stored)[0] if not h.startswith(mark))


@dataclass(frozen=True)
class Naming:
    """One adapter's names: the ``mark`` that starts their line in source_context, and the name
    a memory without one shows under. A memory may carry the lines of several adapters (a
    LangGraph key and a memory-tool file that reached the same text); each keeps the others'."""

    mark: str
    unnamed: Callable[[MemoryRecord], str]

    def split(self, stored: str | None) -> tuple[list[str] | None, str | None]:
        """(this adapter's names, the caller's own text); None: a memory it never named."""
        heads, rest = _heads(stored)
        mine = next((line for line in heads if line.startswith(self.mark)), None)
        if mine is None:
            return None, rest
        names = json.loads(mine[len(self.mark) :])
        return ([names] if isinstance(names, str) else list(names)), rest

    def names(self, memory: MemoryRecord) -> list[str]:
        """Every name the memory is reached by, its first one first: the made-up one for a
        memory this adapter never named; none once its names were dropped while another
        adapter's names kept the memory."""
        stored = self.split(memory.source_context)[0]
        return [self.unnamed(memory)] if stored is None else stored

    def alone(self, memory: MemoryRecord, name: str) -> bool:
        """Whether ``name`` is the only name of any adapter that reaches the memory, so a write
        to it may change the memory in place without changing another name's item."""
        return self.names(memory) == [name] and not _others_reach(memory.source_context, self.mark)

    def context(self, memory: MemoryRecord) -> str | None:
        """The memory's source_context without the name lines: the caller's own text."""
        return self.split(memory.source_context)[1]

    def source_context(
        self, names: list[str], context: str | None, *, beside: str | None = None
    ) -> str:
        """The source_context to store: the names' line (one name: a JSON string, several: a
        JSON list, so any name fits on one line), the other adapters' lines of ``beside`` (the
        stored source_context), then the caller's own text (if any)."""
        for name in names:
            if not 1 <= len(name) <= MAX_NAME_CHARS:
                raise ValidationError(f"A name is 1-{MAX_NAME_CHARS} characters, got {len(name)}.")
        line = self.mark + json.dumps(names[0] if len(names) == 1 else names)  # [] for none
        others = [h for h in _heads(beside)[0] if not h.startswith(self.mark)]
        return "\n".join([line, *others, *([] if context is None else [context])])

    def find(self, memories: Iterable[MemoryRecord], name: str) -> MemoryRecord | None:
        """The memory reached by ``name``; else the unnamed one whose made-up name it is."""
        fallback = None
        for memory in memories:
            stored = self.split(memory.source_context)[0]
            if stored is not None and name in stored:
                return memory
            if stored is None and fallback is None and self.unnamed(memory) == name:
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
            if not names and not _others_reach(memory.source_context, self.mark):
                raise ValidationError("A memory's last name is dropped by forgetting the memory.")
            stored = self.source_context(names, self.context(memory), beside=memory.source_context)
            if len(stored) > MAX_SOURCE_CONTEXT:
                raise ValidationError(
                    f"{len(names)} names are too many for one memory: its source_context would "
                    f"pass {MAX_SOURCE_CONTEXT} characters. Use fewer or shorter names."
                )
            return agent.update_memory(memory.id, source_context=stored)
