"""A LangGraph long-term store over a hive: ``HivekeepStore(hive)`` is a ``BaseStore``.

The mapping (docs/integrations.md, "LangGraph"):

- a namespace is ``(agent,)`` or ``(agent, subject)``: the hive's agent of that name (created on
  the first put) and the memory's subject (none for ``(agent,)``);
- a key is kept with its memory, on the first line of its ``source_context``; a memory written
  through another interface has its id as its key;
- a value is ``{"content": text, "category", "importance", "scope", "source_context"}``; only
  ``content`` is required (``category`` defaults to ``"fact"``);
- ``search(..., query=...)`` is the agent's hybrid ``recall``; without a query it lists, newest
  first. ``filter`` compares value fields as ``InMemoryStore`` does.

Every operation is a call on ``Agent``, so the archive's rules hold: dedup, history, the trash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hivekeep.integrations import needs_extra

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the extra is not installed, or too old
    raise needs_extra("langgraph", exc) from exc

from hivekeep import Agent, Category, Hive, MemoryRecord, NotFound, ValidationError
from hivekeep.integrations._named import find_named, name_of, own_memories, split_name, with_name

__all__ = ["HivekeepStore"]

VALUE_FIELDS = ("content", "category", "importance", "scope", "source_context")
DEFAULT_CATEGORY = "fact"
KEY_MARK = "langgraph-key:"  # the first line of a memory's source_context that holds its key
RECALL_POOL = 50  # recall's largest limit: a query search ranks at most this many per agent

Address = tuple[str, str | None]  # (agent name, subject)


class HivekeepStore(BaseStore):
    """LangGraph's ``BaseStore`` on a hive, for LangGraph and LangMem agents' long-term memory.

    >>> store = HivekeepStore(hive)                                   # doctest: +SKIP
    >>> graph = builder.compile(store=store)                          # doctest: +SKIP
    >>> store.put(("assistant", "user"), "k1", {"content": "Prefers tea"})  # doctest: +SKIP
    >>> store.search(("assistant",), query="what does the user drink?")   # doctest: +SKIP

    Every call runs on the hive at once (``abatch`` in a worker thread); the hive must stay open.
    """

    def __init__(self, hive: Hive) -> None:
        self.hive = hive

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each is one or more calls on an ``Agent``."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValidationError(f"HivekeepStore cannot run a {type(op).__name__}.")

    # operations ---------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        name, subject = _address(op.namespace)
        agent = self._agent(name)
        memory = None if agent is None else _find(agent, subject, op.key)
        return None if memory is None or agent is None else _item(agent, memory)

    def _put(self, op: PutOp) -> None:
        name, subject = _address(op.namespace)
        if op.ttl is not None:
            raise ValidationError("HivekeepStore keeps memories until they are forgotten: no ttl.")
        if op.value is None:  # a delete: to the trash, restorable (Agent.restore_memory)
            agent = self._agent(name)
            found = None if agent is None else _find(agent, subject, op.key)
            if found is not None and agent is not None:
                agent.forget(found.id)
            return
        fields = _fields(op.value)
        agent = self.hive.agent(name)
        memory = _find(agent, subject, op.key)
        if memory is None:
            agent.memorize(
                fields["content"],
                category=fields["category"],
                subject=subject,
                importance=fields["importance"],
                scope=fields["scope"],
                source_context=with_name(KEY_MARK, op.key, fields["source_context"]),
            )
            return
        if split_name(KEY_MARK, memory.source_context)[1] != fields["source_context"]:
            raise ValidationError(
                f"The memory under key {op.key!r} has another source_context; a stored "
                "memory's source_context cannot change (delete the key and put it again)."
            )
        agent.update_memory(
            memory.id,
            content=fields["content"],
            category=fields["category"],
            importance=fields["importance"],
            scope=fields["scope"],
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        if len(prefix) > 2:
            raise InvalidNamespaceError(_NAMESPACE_RULE.format(prefix))
        agents = self._agents(prefix[0] if prefix else None)
        subject = prefix[1] if len(prefix) == 2 else None
        wanted = op.filter or {}
        category = wanted.get("category")
        # a plain category is pushed into recall/list; any other condition is checked below
        category = category if isinstance(category, str) and category in set(Category) else None
        found: Iterable[SearchItem] = (
            _ranked(agents, op.query, subject, category)
            if op.query
            else _newest(agents, subject, category)
        )
        items = (item for item in found if _matches(item.value, wanted))
        return [item for _, item in zip(range(op.offset + op.limit), items, strict=False)][
            op.offset :
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {
            _namespace(agent, memory.subject)
            for agent in self.hive.agents()
            for memory in own_memories(agent)
        }
        chosen = [
            ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # agents -------------------------------------------------------------------------------------
    def _agent(self, name: str) -> Agent | None:
        """The agent a namespace names, or None: reads never create one."""
        if name.strip().isdigit():  # get_agent would take it for an id; no name is all digits
            return None
        try:
            return self.hive.get_agent(name)
        except NotFound:
            return None

    def _agents(self, name: str | None) -> list[Agent]:
        if name is None:
            return self.hive.agents()
        agent = self._agent(name)
        return [] if agent is None else [agent]


_NAMESPACE_RULE = (
    "A hivekeep namespace is (agent,) or (agent, subject); {!r} has more parts. Join deeper "
    "levels into the subject, e.g. ('assistant', 'user-42/preferences')."
)


def _address(namespace: tuple[str, ...]) -> Address:
    if not 1 <= len(namespace) <= 2:
        raise InvalidNamespaceError(_NAMESPACE_RULE.format(namespace))
    return namespace[0], namespace[1] if len(namespace) == 2 else None


def _namespace(agent: Agent, subject: str | None) -> tuple[str, ...]:
    return (agent.name,) if subject is None else (agent.name, subject)


def _fields(value: Mapping[str, Any]) -> dict[str, Any]:
    """The memory fields of a put's value; anything else is refused, so nothing is dropped."""
    unknown = sorted(set(value) - set(VALUE_FIELDS))
    if unknown:
        raise ValidationError(
            f"A HivekeepStore value holds {', '.join(VALUE_FIELDS)}; {unknown} would not be "
            "stored. Put the memory's text in 'content'."
        )
    if not isinstance(value.get("content"), str):
        raise ValidationError("A HivekeepStore value needs 'content': the memory's text.")
    return {
        "content": value["content"],
        "category": value.get("category") or DEFAULT_CATEGORY,
        "importance": value.get("importance"),
        "scope": value.get("scope") or "private",
        "source_context": value.get("source_context"),
    }


def _item(agent: Agent, memory: MemoryRecord, score: float | None = None) -> SearchItem:
    value: dict[str, Any] = {
        "content": memory.content,
        "category": memory.category.value,
        "importance": memory.importance,
        "scope": memory.scope.value,
    }
    context = split_name(KEY_MARK, memory.source_context)[1]
    if context is not None:
        value["source_context"] = context
    return SearchItem(
        namespace=_namespace(agent, memory.subject),
        key=name_of(memory, KEY_MARK, _by_id),
        value=value,
        created_at=memory.created_at,  # type: ignore[arg-type]  # Item parses ISO strings
        updated_at=memory.updated_at,  # type: ignore[arg-type]
        score=score,
    )


def _by_id(memory: MemoryRecord) -> str:
    """The key of a memory written through another interface: its id."""
    return str(memory.id)


def _find(agent: Agent, subject: str | None, key: str) -> MemoryRecord | None:
    """The memory under ``key`` in the namespace ``(agent, subject)`` exactly."""
    here = (m for m in own_memories(agent, subject=subject) if _same(m.subject, subject))
    return find_named(here, KEY_MARK, key, _by_id)


def _same(a: str | None, b: str | None) -> bool:
    """Subjects match as recall matches them: trimmed and case-folded."""
    return (a is None and b is None) or (
        a is not None and b is not None and a.strip().casefold() == b.strip().casefold()
    )


def _ranked(
    agents: list[Agent], query: str, subject: str | None, category: str | None
) -> list[SearchItem]:
    found = [
        _item(agent, hit.memory, hit.score)
        for agent in agents
        for hit in agent.recall(
            query, limit=RECALL_POOL, subject=subject, category=category, count_retrieval=False
        ).hits
        if hit.memory.agent_id == agent.id
    ]
    return sorted(found, key=lambda item: -(item.score or 0.0))


def _newest(agents: list[Agent], subject: str | None, category: str | None) -> Iterator[SearchItem]:
    for agent in agents:
        for memory in own_memories(agent, subject=subject, category=category):
            yield _item(agent, memory)


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """``InMemoryStore``'s filter: equality, or ``$eq $ne $gt $gte $lt $lte`` on a field."""
    for field, condition in wanted.items():
        have = value.get(field)
        if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
            if not all(_compare(have, op, operand) for op, operand in condition.items()):
                return False
        elif have != condition:
            return False
    return True


def _compare(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError(
            f"Filter operator {op!r} is not supported; use $eq, $ne, $gt, $gte, $lt or $lte."
        )
    if have is None:
        return False  # a memory without importance is neither above nor below a bound
    a, b = float(have), float(operand)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A ``list_namespaces`` prefix or suffix condition; ``"*"`` matches any label."""
    path = tuple(condition.path)
    if not path:
        return True
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for n, p in zip(part, path, strict=True))
