"""A LangGraph long-term store over a hive: ``HivekeepStore(hive)`` is a ``BaseStore``.

The mapping (docs/integrations.md, "LangGraph"):

- a namespace is ``(agent,)`` or ``(agent, subject)``: the hive's agent of that name (created on
  the first put) and the memory's subject (none for ``(agent,)``);
- a key is kept with its memory, on a line of its ``source_context``; a put of a text the
  namespace already holds adds its key to that memory, and one memory may have several keys
  (a delete drops one key; the memory goes when its last does). A memory written through
  another interface has its id as its key;
- labels are case-sensitive, as LangGraph's: a put under a case twin of an agent's name or
  subject is refused, since the hive matches those whatever their case;
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
from hivekeep.integrations._named import KEY_MARK, Naming, own_memories

__all__ = ["HivekeepStore"]

VALUE_FIELDS = ("content", "category", "importance", "scope", "source_context")
DEFAULT_CATEGORY = "fact"
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
        return None if memory is None or agent is None else _item(agent, memory, op.key)

    def _put(self, op: PutOp) -> None:
        name, subject = _address(op.namespace)
        if op.ttl is not None:
            raise ValidationError("HivekeepStore keeps memories until they are forgotten: no ttl.")
        if op.value is None:
            self._delete(name, subject, op.key)
            return
        fields = _fields(op.value)
        if subject is not None:
            _stored_as_given(subject)
        agent = self._writer(name)
        memory = _find(agent, subject, op.key, writing=True)
        if memory is None:
            _add(agent, subject, op.key, fields)
        elif KEYS.alone(memory, op.key):  # the key's own memory
            agent.update_memory(
                memory.id,
                content=fields["content"],
                category=fields["category"],
                importance=fields["importance"],
                scope=fields["scope"],
                source_context=KEYS.source_context(
                    [op.key], fields["source_context"], beside=memory.source_context
                ),
            )
        else:  # other keys share the memory: the key moves, so their items stay as they are
            landed = _add(agent, subject, op.key, fields)
            if landed.id != memory.id:
                KEYS.rename(agent, memory, op.key, None)

    def _delete(self, name: str, subject: str | None, key: str) -> None:
        """The key's item goes; its memory goes to the trash (restorable with
        ``Agent.restore_memory``) unless other keys still reach it."""
        agent = self._agent(name)
        memory = None if agent is None else _find(agent, subject, key)
        if memory is None or agent is None:
            return  # deleting what is not there does nothing, as in InMemoryStore
        if KEYS.alone(memory, key):
            agent.forget(memory.id)
        else:
            KEYS.rename(agent, memory, key, None)

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
            if KEYS.names(memory)  # none: only another adapter's names reach it
        }
        chosen = [
            ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # agents -------------------------------------------------------------------------------------
    def _agent(self, name: str) -> Agent | None:
        """The agent a namespace names, exactly, or None: reads never create one, and a label is
        case-sensitive as in LangGraph (``("Foo",)`` is not the agent ``foo``)."""
        agent = self._named(name)
        return agent if agent is not None and agent.name == name else None

    def _writer(self, name: str) -> Agent:
        """The agent a put writes as, created on the first put. Hive names are unique whatever
        their case, so a label that differs from an agent's name only in case is refused."""
        agent = self._named(name)
        if agent is not None and agent.name != name:
            raise InvalidNamespaceError(
                f"Namespace label {name!r} is the hive's agent {agent.name!r} in another case; "
                f"agent names are unique whatever their case, so ({name!r},) cannot be a "
                f"namespace of its own. Use ({agent.name!r}, ...)."
            )
        return agent or self.hive.agent(_stored_as_given(name))

    def _named(self, name: str) -> Agent | None:
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


def _stored_as_given(label: str) -> str:
    """A label the hive would store changed (trimmed, control characters dropped) could never
    be read back under itself: refused."""
    if label != label.strip() or not label.isprintable():
        raise InvalidNamespaceError(
            f"Namespace label {label!r} has spaces around it or characters that cannot be "
            "printed; the hive would store it changed."
        )
    return label


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


def _add(agent: Agent, subject: str | None, key: str, fields: dict[str, Any]) -> MemoryRecord:
    """Memorize the value under ``key``: a new memory, or, when the namespace already holds the
    text (dedup), the key is added to that memory, whose item it then reads."""
    written = agent.memorize(
        fields["content"],
        category=fields["category"],
        subject=subject,
        importance=fields["importance"],
        scope=fields["scope"],
        source_context=KEYS.source_context([key], fields["source_context"]),
    )
    found = written.memory
    if not written.duplicate or key in KEYS.names(found):
        return found
    if found.agent_id != agent.id or found.subject != subject:
        where = (found.author_name, *(() if found.subject is None else (found.subject,)))
        raise ValidationError(
            f"Nothing was stored under {_namespace(agent, subject)!r}, key {key!r}: the hive "
            f"already holds this text as memory {found.id}, key {KEYS.names(found)[0]!r} of "
            f"{where!r}, and a key can only reach a memory of its own namespace. Read it there."
        )
    return KEYS.rename(agent, found, None, key)


def _item(agent: Agent, memory: MemoryRecord, key: str, score: float | None = None) -> SearchItem:
    value: dict[str, Any] = {
        "content": memory.content,
        "category": memory.category.value,
        "importance": memory.importance,
        "scope": memory.scope.value,
    }
    context = KEYS.context(memory)
    if context is not None:
        value["source_context"] = context
    return SearchItem(
        namespace=_namespace(agent, memory.subject),
        key=key,
        value=value,
        created_at=memory.created_at,  # type: ignore[arg-type]  # Item parses ISO strings
        updated_at=memory.updated_at,  # type: ignore[arg-type]
        score=score,
    )


def _items(agent: Agent, memory: MemoryRecord, score: float | None = None) -> list[SearchItem]:
    """One item per key that reaches the memory, as a key-value store lists them."""
    return [_item(agent, memory, key, score) for key in KEYS.names(memory)]


def _by_id(memory: MemoryRecord) -> str:
    """The key of a memory written through another interface: its id."""
    return str(memory.id)


KEYS = Naming(KEY_MARK, _by_id)


def _find(
    agent: Agent, subject: str | None, key: str, *, writing: bool = False
) -> MemoryRecord | None:
    """The memory under ``key`` in the namespace ``(agent, subject)`` exactly: subject labels are
    case-sensitive, as LangGraph's are."""
    return KEYS.find(_in_namespace(agent, subject, writing=writing), key)


def _in_namespace(agent: Agent, subject: str | None, *, writing: bool) -> Iterator[MemoryRecord]:
    """The agent's own memories of the namespace, newest first. Recall and dedup match subjects
    whatever their case, so a put (``writing``) under a label that differs from the agent's
    subjects only in case is refused rather than mixed with theirs."""
    for memory in own_memories(agent, subject=subject):
        if memory.subject == subject:
            yield memory
        elif writing and subject is not None and memory.subject is not None:
            raise InvalidNamespaceError(
                f"Namespace label {subject!r} is the subject {memory.subject!r} of "
                f"{agent.name!r}'s memories in another case; hivekeep matches subjects whatever "
                f"their case, so it cannot be a namespace of its own. Use "
                f"({agent.name!r}, {memory.subject!r})."
            )


def _ranked(
    agents: list[Agent], query: str, subject: str | None, category: str | None
) -> list[SearchItem]:
    found = [
        item
        for agent in agents
        for hit in agent.recall(
            query, limit=RECALL_POOL, subject=subject, category=category, count_retrieval=False
        ).hits
        if hit.memory.agent_id == agent.id and (subject is None or hit.memory.subject == subject)
        for item in _items(agent, hit.memory, hit.score)
    ]
    return sorted(found, key=lambda item: -(item.score or 0.0))


def _newest(agents: list[Agent], subject: str | None, category: str | None) -> Iterator[SearchItem]:
    for agent in agents:
        for memory in own_memories(agent, subject=subject, category=category):
            if subject is None or memory.subject == subject:
                yield from _items(agent, memory)


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
