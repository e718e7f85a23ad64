"""A LangGraph long-term store over a hive: ``HivekeepStore(hive)`` is a ``BaseStore``.

The mapping (docs/integrations.md, "LangGraph"):

- an item is kept with a memory: its namespace, key, value (any JSON, exactly as put) and times
  form a record on the first line of the memory's ``source_context``; the memory's text is the
  text the item is searched by: the value's fields that ``index`` names (per store and per put,
  LangGraph's field paths), the whole value by default;
- a namespace of any depth is an agent and a subject: its first label is the agent (created on
  the first put; ``langgraph`` when the label cannot be an agent name), the rest, joined with
  ``/``, the memory's subject. The record keeps the namespace exactly, so labels stay
  case-sensitive and any label works;
- a put writes through ``Agent.memorize`` (dedup, history and the "write is never hidden" rule
  apply): a text the agent already holds gets the item added to the memory that holds it, so one
  memory may carry several items; a put on a key that alone holds its memory updates it;
- ``search(..., query=...)`` is the agent's hybrid ``recall`` over the indexed items; without a
  query it lists, newest first. ``filter`` compares value fields with LangGraph's operators.

Every write is a call on ``Agent``, so the archive's rules hold: dedup, history, the trash.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hivekeep.integrations import needs_extra

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # the extra is not installed, or too old
    raise needs_extra("langgraph", exc) from exc

from hivekeep import Agent, CredentialRefused, Hive, MemoryRecord, NotFound, ValidationError
from hivekeep.core.credentials import describe, find_credentials, redact
from hivekeep.core.limits import MAX_CONTENT_CHARS, MAX_SUBJECT_CHARS
from hivekeep.core.names import agent_name
from hivekeep.core.text import clean_text
from hivekeep.integrations._named import KEY_MARK, _heads, _others_reach, own_memories
from hivekeep.tools import MAX_SOURCE_CONTEXT

__all__ = ["HivekeepStore"]

CATEGORY = "fact"
FALLBACK_AGENT = "langgraph"  # the agent of namespaces whose first label cannot be an agent name
RECALL_POOL = 50  # recall's largest limit: a query search ranks at most this many per agent
MAX_QUERY_CHARS = 1000  # recall's longest query; a longer one is searched by its start
_UNSTORED = re.compile("[\x7f-\x9f]")  # what clean_text would drop that JSON leaves as it is
_WRITING = threading.Lock()  # a memory's records are read, changed and written back as one step

Namespace = tuple[str, ...]


@dataclass(frozen=True)
class Record:
    """One item as a memory carries it: what ``get`` returns, and whether query search finds it.
    Stored as a short JSON array (times in epoch seconds), so that many fit in one memory."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    indexed: bool

    def as_json(self) -> list[Any]:
        return [
            list(self.namespace),
            self.key,
            self.value,
            self.created_at,
            self.updated_at,
            self.indexed,
        ]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Record:
        namespace, key, value, created_at, updated_at, indexed = data
        return cls(tuple(namespace), key, value, created_at, updated_at, indexed)

    def item(self, score: float | None = None) -> SearchItem:
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=self.value,
            created_at=datetime.fromtimestamp(self.created_at, UTC),
            updated_at=datetime.fromtimestamp(self.updated_at, UTC),
            score=score,
        )


class HivekeepStore(BaseStore):
    """LangGraph's ``BaseStore`` on a hive, for LangGraph and LangMem agents' long-term memory.

    >>> store = HivekeepStore(hive)                                   # doctest: +SKIP
    >>> graph = builder.compile(store=store)                          # doctest: +SKIP
    >>> store.put(("assistant", "user"), "k1", {"content": "Prefers tea"})  # doctest: +SKIP
    >>> store.search(("assistant",), query="what does the user drink?")   # doctest: +SKIP

    ``index`` takes LangGraph's ``IndexConfig``: its ``fields`` (SqliteStore's ``text_fields``)
    name the value fields that are searched (the whole value by default); the hive's own
    embedding model embeds them, so ``embed`` and ``dims`` are not used. Items do not expire
    (``supports_ttl`` is false): a ``ttl`` is refused. Every call runs on the hive at once
    (``abatch`` in a worker thread).
    """

    supports_ttl = False

    def __init__(
        self,
        hive: Hive,
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if ttl is not None:
            raise ValidationError(
                "HivekeepStore keeps items until they are deleted: it takes no ttl config."
            )
        self.hive = hive
        self.index_config = index  # as given, as LangGraph's stores keep it
        config: Mapping[str, Any] = index or {}
        # "text_fields": SqliteStore's name for them, so its config works unchanged
        fields = config.get("fields") or config.get("text_fields") or ["$"]
        self.fields: list[str] = list(fields)

    def setup(self) -> None:
        """Nothing to set up: a hive migrates itself when it opens. LangGraph's SQL stores need
        this call, so code written for them makes it; here it does nothing."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each is one or more calls on an ``Agent``."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        validate_op_namespace(op)
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
        found = self._find(tuple(op.namespace), op.key)
        return None if found is None else found[1].item()

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.ttl is not None:
            raise ValidationError("HivekeepStore keeps items until they are deleted: no ttl.")
        with _WRITING:
            if op.value is None:
                self._delete(namespace, op.key)
            else:
                self._write(namespace, op.key, op.value, op.index)

    def _write(self, namespace: Namespace, key: str, value: Mapping[str, Any], index: Any) -> None:
        if not isinstance(value, dict):
            raise ValidationError(f"A store value is a dict, got {type(value).__name__}.")
        _as_json(value)  # refused before anything is written when it is not JSON
        agent = self._writer(namespace)
        item: dict[str, Any] = _screened(value, agent.credential_policy())
        searched = _searched_text(item, self.fields if index is None else index)
        now = round(time.time(), 6)
        found = self._find(namespace, key, agent)
        record = Record(
            namespace,
            key,
            item,
            now if found is None else found[1].created_at,
            now,
            bool(searched),
        )
        text = _content(searched or _searched_text(item, ["$"]) or _as_json(item))
        if found is not None and _alone(found[0], record):
            memory = found[0]
            agent.update_memory(memory.id, content=text, source_context=_stored([record], memory))
            return
        written = agent.memorize(
            text,
            category=CATEGORY,
            subject=_subject(namespace),
            source_context=_stored([record], None),
        )
        landed = written.memory
        if written.duplicate:
            if landed.agent_id != agent.id:
                raise ValidationError(
                    f"Nothing was stored under {namespace!r}, key {key!r}: the hive already "
                    f"holds this text as memory {landed.id}, another agent's shared memory, "
                    "and an item is kept only with its own agent's memories."
                )
            landed = agent.memory(landed.id)
            agent.update_memory(
                landed.id, source_context=_stored([*_others(landed, record), record], landed)
            )
        if found is not None and found[0].id != landed.id:
            self._drop(agent, agent.memory(found[0].id), record)

    def _delete(self, namespace: Namespace, key: str) -> None:
        """The key's item goes; its memory goes to the trash (restorable with
        ``Agent.restore_memory``) unless other items still reach it."""
        agent = self._agent(namespace[0])
        found = None if agent is None else self._find(namespace, key, agent)
        if found is not None and agent is not None:
            self._drop(agent, found[0], found[1])

    def _drop(self, agent: Agent, memory: MemoryRecord, record: Record) -> None:
        """Take ``record`` off ``memory``: forgotten when nothing else reaches it."""
        rest = _others(memory, record)
        if rest or _files_reach(memory):
            agent.update_memory(memory.id, source_context=_stored(rest, memory))
        else:
            agent.forget(memory.id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        agents = self._agents(prefix[0] if prefix else None)
        wanted = op.filter or {}
        found = (
            _ranked(agents, op.query[:MAX_QUERY_CHARS])
            if op.query
            else sorted(
                (record.item() for agent in agents for _, record in _records(agent)),
                key=lambda item: item.updated_at,
                reverse=True,
            )
        )
        chosen = (
            item
            for item in found
            if item.namespace[: len(prefix)] == prefix and _matches(item.value, wanted)
        )
        return [item for _, item in zip(range(op.offset + op.limit), chosen, strict=False)][
            op.offset :
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        namespaces = {
            record.namespace for agent in self.hive.agents() for _, record in _records(agent)
        }
        chosen = {
            ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())
        }
        if op.max_depth is not None:
            chosen = {ns[: op.max_depth] for ns in chosen}
        return sorted(chosen)[op.offset : op.offset + op.limit]

    def _find(
        self, namespace: Namespace, key: str, agent: Agent | None = None
    ) -> tuple[MemoryRecord, Record] | None:
        """The memory that holds the item, and its record; reads never create an agent."""
        agent = agent or self._agent(namespace[0])
        if agent is None:
            return None
        return next(
            ((m, r) for m, r in _records(agent) if r.namespace == namespace and r.key == key),
            None,
        )

    # agents -------------------------------------------------------------------------------------
    def _agent(self, label: str) -> Agent | None:
        """The agent a namespace's first label maps to, or None: reads never create one."""
        try:
            return self.hive.get_agent(_agent_name(label))
        except NotFound:
            return None

    def _writer(self, namespace: Namespace) -> Agent:
        """The agent a put writes as, created on the first put."""
        return self.hive.agent(_agent_name(namespace[0]))

    def _agents(self, label: str | None) -> list[Agent]:
        if label is None:
            return self.hive.agents()
        agent = self._agent(label)
        return [] if agent is None else [agent]


def _agent_name(label: str) -> str:
    """The label itself when it is a valid agent name (a letter first, 1-64 characters, kept as
    given); else the one agent that holds such namespaces. The record keeps the label exactly,
    so two labels that map to one agent (``Foo`` and ``foo``) stay two namespaces."""
    try:
        return label if agent_name(label) == label else FALLBACK_AGENT
    except ValidationError:
        return FALLBACK_AGENT


def _subject(namespace: Namespace) -> str | None:
    """The memory's subject: the labels after the agent's, joined with ``/`` (a label that is
    not an agent name joins them too), as people see it in the hive and dedup tells users
    apart; the record keeps the namespace exactly, so a subject cut at its limit changes
    nothing."""
    labels = namespace[1:] if _agent_name(namespace[0]) == namespace[0] else namespace
    return "/".join(labels)[:MAX_SUBJECT_CHARS] or None


def _screened(value: Any, policy: str) -> Any:
    """The value as the agent's credential policy keeps it (docs/guarantees.md, "Credentials"),
    leaf by leaf: the write path would otherwise redact inside the stored JSON record, where a
    credential in a string could be cut across the JSON escapes around it. Under ``refuse`` a
    credential anywhere refuses the put, before anything is written."""
    if policy == "allow":
        return value
    if isinstance(value, dict):
        return {_screened(k, policy): _screened(v, policy) for k, v in value.items()}
    if isinstance(value, list):
        return [_screened(v, policy) for v in value]
    if isinstance(value, str):  # a number is an id, never a card (core/credentials.py)
        found = find_credentials(value)
        if not found:
            return value
        if policy == "refuse":
            raise CredentialRefused(
                f"The value holds a credential ({describe(found)}), and this agent refuses "
                "credentials (HIVEKEEP_SECRETS=refuse): nothing was written."
            )
        return redact(value, found)
    return value


def _as_json(value: Any) -> str:
    """Compact JSON; the C1 controls and DEL, which the hive drops from a stored text (JSON
    escapes the C0 ones), escaped, so the value reads back exactly."""
    try:
        dumped = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return _UNSTORED.sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumped)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"A HivekeepStore value is stored as JSON and read back exactly; this one is not "
            f"JSON ({exc})."
        ) from exc


def _searched_text(value: dict[str, Any], index: Any) -> str:
    """The text an item is searched by: the fields ``index`` names (LangGraph's field paths;
    ``"$"`` the whole value, as its text leaves), one per line; empty for ``index=False``."""
    if index is False:
        return ""
    paths = [index] if isinstance(index, str) else index
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str) for p in paths):
        raise ValidationError(
            f"index is False, or a list of field paths such as ['title', 'tags[*]']; got {index!r}."
        )
    parts: list[str] = []
    for path in paths:
        parts.extend(_leaves(value) if path == "$" else get_text_at_path(value, path))
    cleaned = (clean_text(part.replace("\x00", "")).strip() for part in parts)
    return "\n".join(part for part in cleaned if part)  # as the hive stores a text


def _leaves(value: Any) -> Iterator[str]:
    """The value's text, in its order: strings as they are, numbers and booleans as JSON."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for part in value.values():
            yield from _leaves(part)
    elif isinstance(value, list | tuple):
        for part in value:
            yield from _leaves(part)
    elif value is not None:
        yield json.dumps(value)


def _content(text: str) -> str:
    """The memory's text: a memory holds at most ``MAX_CONTENT_CHARS``; the value is kept whole
    in its record, so a longer text is searched by its start."""
    return text[:MAX_CONTENT_CHARS]


def _records_of(memory: MemoryRecord) -> list[Record]:
    line = next((h for h in _heads(memory.source_context)[0] if h.startswith(KEY_MARK)), None)
    if line is None:
        return []
    data = json.loads(line[len(KEY_MARK) :])
    return [Record.from_json(r) for r in data]


def _records(agent: Agent) -> Iterator[tuple[MemoryRecord, Record]]:
    """Every item the agent's memories carry, with its memory, newest memory first."""
    for memory in own_memories(agent):
        for record in _records_of(memory):
            yield memory, record


def _others(memory: MemoryRecord, record: Record) -> list[Record]:
    """The memory's records but the one at ``record``'s namespace and key."""
    return [
        r for r in _records_of(memory) if (r.namespace, r.key) != (record.namespace, record.key)
    ]


def _alone(memory: MemoryRecord, record: Record) -> bool:
    """Whether the item is all that reaches the memory, so a put may change it in place."""
    return not _others(memory, record) and not _files_reach(memory)


def _files_reach(memory: MemoryRecord) -> bool:
    """Whether another adapter's names (a memory-tool file) reach the memory too."""
    return _others_reach(memory.source_context, KEY_MARK)


def _stored(records: Sequence[Record], memory: MemoryRecord | None) -> str:
    """The source_context to store: the records' line, then the other adapters' lines and the
    rest of the memory's source_context, as they were."""
    line = KEY_MARK + _as_json([r.as_json() for r in records])
    heads, rest = _heads(None if memory is None else memory.source_context)
    others = [h for h in heads if not h.startswith(KEY_MARK)]
    stored = "\n".join([line, *others, *([] if rest is None else [rest])])
    if len(stored) > MAX_SOURCE_CONTEXT:
        raise ValidationError(
            f"This item is too large for HivekeepStore: a memory keeps its items' values in "
            f"{MAX_SOURCE_CONTEXT} characters of JSON (namespaces, keys and times included), "
            f"and this would take {len(stored)}. Store a smaller value, or the large part "
            "elsewhere with a reference to it."
        )
    return stored


def _ranked(agents: list[Agent], query: str) -> list[SearchItem]:
    """Recall's hits for each agent, one item per indexed record, best first."""
    found = [
        record.item(hit.score)
        for agent in agents
        for hit in agent.recall(query, limit=RECALL_POOL, count_retrieval=False).hits
        if hit.memory.agent_id == agent.id
        for record in _records_of(hit.memory)
        if record.indexed
    ]
    return sorted(found, key=lambda item: -(item.score or 0.0))


class FilterError(ValidationError, ValueError):
    """A filter LangGraph's stores would refuse too (a ``ValueError`` there)."""


_FILTER_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """LangGraph's filter: equality, or ``$eq $ne $gt $gte $lt $lte`` on a field; a key is a
    field path (``user.name``), of letters, digits, ``_``, ``-`` and dots as in SqliteStore."""
    for field, condition in wanted.items():
        if not _FILTER_KEY.fullmatch(field):
            raise FilterError(
                f"Invalid filter key: {field!r}. A filter key is a field path of letters, "
                "digits, '_', '-' and dots."
            )
        have = _at(value, field)
        if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
            if not all(_compare(have, op, operand) for op, operand in condition.items()):
                return False
        elif have != condition:
            return False
    return True


def _at(value: Mapping[str, Any], path: str) -> Any:
    """The field at ``path`` (a key itself, or dotted keys into nested objects); None if none."""
    if path in value:
        return value[path]
    found: Any = value
    for part in path.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _compare(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError(
            f"Filter operator {op!r} is not supported; use $eq, $ne, $gt, $gte, $lt or $lte."
        )
    try:
        return bool(
            {
                "$gt": lambda: have > operand,
                "$gte": lambda: have >= operand,
                "$lt": lambda: have < operand,
                "$lte": lambda: have <= operand,
            }[op]()
        )
    except TypeError:  # a missing field, or one of another type, is neither above nor below
        return False


def _does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    """A ``list_namespaces`` prefix or suffix condition; ``"*"`` matches any label."""
    path = tuple(condition.path)
    if not path:
        return True
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for n, p in zip(part, path, strict=True))
