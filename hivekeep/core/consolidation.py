"""Consolidation in the maintenance call (SPEC §4.1, §8), as pure functions.

The write path keeps restatements apart ("The user has a dog called Rex" / "The user's dog is
Rex"); the maintenance call consolidates them. The service finds the agent's recent memories'
near twins (cosine at or above ``TWIN_SIMILARITY``); ``twin_groups`` keeps those with the same
subject and bounds them; ``render_groups`` shows them to the model as data; ``validate`` checks
the ``<consolidate>`` ops of its reply as a whole: one invalid op and none is applied.

Privacy follows the text: only private memories are consolidated. A shared memory is read by
every agent, and the maintenance call is run on one agent's conversation: a merge that kept a
shared memory would publish the private twin's text, and a retire or a merge that forgot one
would remove a fact every agent could recall. So ``twin_groups`` groups private memories only,
and ``validate`` refuses any op on a group holding a memory that is not private (a group it did
not make included): it fails closed on what it cannot attribute to the agent's private scope.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hivekeep.core.tokens import count_tokens
from hivekeep.types import Scope

# MiniLM (the bundled model), measured: restatements 0.86-0.99 ("Team meetings are on Mondays at
# 10" / "The team meets every Monday at 10" 0.856), different facts about one thing up to 0.82
# ("works at Google" / "wife works at Google" 0.815; "sister" / "brother lives in Madrid" 0.886
# is the exception the model must leave apart). Changed facts (Lisbon / Berlin 0.75, interim CFO
# / CFO 0.92) fall on both sides: those above are shown so the model may retire the old one.
TWIN_SIMILARITY = 0.82
MAX_RECENT = 200  # recent memories whose twins are looked for
MAX_GROUPS = 8
MAX_GROUP_SIZE = 4
SECTION_TOKENS = 1500  # the memory texts of every group shown, together
MAX_SHOWN_CHARS = 1000  # a longer memory is never shown in a group (nor merged)
MAX_CONTENT = 2000  # a merge's text, as ``memorize`` allows

RULES = """3. Consolidation, only when near twins are given: each group there holds the agent's
   own private memories that look alike (shared ones are never grouped). Merge memories that
   say the same thing into one ("merge": their ids, the first is kept and the others forgotten,
   with one sentence that keeps every detail of each), retire a memory that a newer one of its
   group makes outdated ("retire": its id), and leave alone memories that state different facts.
   Use only ids of one group per op, each id at most once, and never retire a whole group.
   Answer in a third block, [] when nothing changes:
<consolidate>
[{"merge": [12, 15], "content": "..."}, {"retire": 9, "reason": "..."}]
</consolidate>"""


@dataclass(frozen=True)
class TwinCandidate:
    """One of the agent's own live memories, as shown in a group."""

    memory_id: int
    content: str
    subject: str | None
    created_at: str
    updated_at: str  # compared again before an op is applied: a changed memory is not touched
    scope: Scope  # only a private memory is grouped, and only one may be merged or retired


@dataclass(frozen=True)
class TwinLinks:
    """A recent memory and its close neighbours (similarity at or above the floor), closest
    first; the service finds them, ``twin_groups`` decides which are shown."""

    memory: TwinCandidate
    close: Sequence[tuple[TwinCandidate, float]]


@dataclass(frozen=True)
class TwinGroup:
    members: tuple[TwinCandidate, ...]  # the recent memory first, then its twins, closest first


@dataclass(frozen=True)
class Merge:
    keep: int  # the first id listed: updated to ``content``
    forget: tuple[int, ...]
    content: str

    @property
    def ids(self) -> tuple[int, ...]:
        return (self.keep, *self.forget)


@dataclass(frozen=True)
class Retire:
    memory_id: int
    reason: str | None

    @property
    def ids(self) -> tuple[int, ...]:
        return (self.memory_id,)

    @property
    def forget(self) -> tuple[int, ...]:
        return (self.memory_id,)


@dataclass(frozen=True)
class Consolidation:
    """The ops to apply (all valid), or none with the reasons why."""

    ops: tuple[Merge | Retire, ...] = ()
    errors: tuple[str, ...] = ()


def twin_groups(
    links: Sequence[TwinLinks],
    *,
    max_groups: int = MAX_GROUPS,
    max_size: int = MAX_GROUP_SIZE,
    budget_tokens: int = SECTION_TOKENS,
) -> list[TwinGroup]:
    """Groups of near twins with the same subject, newest recent memory first, each memory in
    one group at most, within the bounds (a group that would pass the budget is left out).
    Private memories only: a shared one is never grouped, so no group mixes scopes."""
    taken: set[int] = set()
    groups: list[TwinGroup] = []
    used = 0
    for link in links:
        seed = link.memory
        if len(groups) == max_groups:
            break
        if seed.memory_id in taken or not _showable(seed):
            continue
        twins = [
            twin
            for twin, similarity in link.close
            if similarity >= TWIN_SIMILARITY
            and twin.memory_id != seed.memory_id
            and twin.memory_id not in taken
            and _subject_key(twin) == _subject_key(seed)
            and _showable(twin)
        ]
        members = (seed, *dict.fromkeys(twins))[:max_size]
        if len(members) < 2:
            continue
        cost = sum(count_tokens(m.content) for m in members)
        if used + cost > budget_tokens:
            continue
        used += cost
        taken.update(m.memory_id for m in members)
        groups.append(TwinGroup(members))
    return groups


def _subject_key(memory: TwinCandidate) -> str | None:
    return memory.subject.casefold() if memory.subject else None


def _showable(memory: TwinCandidate) -> bool:
    return memory.scope is Scope.PRIVATE and len(memory.content) <= MAX_SHOWN_CHARS


def render_groups(groups: Sequence[TwinGroup]) -> str:
    """The groups as the model reads them, raw: a prompt shows them through ``fence_untrusted``.
    Each text (and subject) is a JSON string, one line with its quotes escaped, so a memory cannot
    fake an entry or a group inside the fence."""
    lines: list[str] = []
    for number, group in enumerate(groups, 1):
        subject = group.members[0].subject
        about = f" (subject {json.dumps(subject, ensure_ascii=False)})" if subject else ""
        lines.append(f"Group {number}{about}:")
        lines.extend(
            f"- id {m.memory_id} ({m.scope.value}; created {m.created_at[:10]}, "
            f"updated {m.updated_at[:10]}): "
            f"{json.dumps(m.content, ensure_ascii=False)}"
            for m in group.members
        )
    return "\n".join(lines)


def validate(items: list[Any] | None, groups: Sequence[TwinGroup]) -> Consolidation:
    """The ops of a ``<consolidate>`` array, all of them or none (with every reason found).

    Valid: each item is ``{"merge": [ids], "content": text}`` (two or more distinct ids of one
    group; text non-empty, at most ``MAX_CONTENT`` characters) or ``{"retire": id}`` with an
    optional text ``reason``; no id in two ops; no group loses all its members; no op names a
    memory of a group that holds anything but private memories (privacy follows the text).
    """
    if items is None:
        return Consolidation(errors=("the <consolidate> block is not a JSON array",))
    group_of = {m.memory_id: n for n, g in enumerate(groups) for m in g.members}
    not_private = {
        n for n, g in enumerate(groups) for m in g.members if m.scope is not Scope.PRIVATE
    }
    errors: list[str] = []
    ops: list[Merge | Retire] = []
    seen: set[int] = set()
    for position, item in enumerate(items):
        where = f"consolidate item {position}"
        op = _op(item, group_of, errors, where)
        if op is None:
            continue
        if not_private.intersection(group_of[i] for i in op.ids):
            errors.append(
                f"{where}: names memory {op.ids[0]} of a group that is not all private: a shared "
                "memory is never merged or retired by maintenance"
            )
        repeated = sorted(seen.intersection(op.ids))
        if repeated:
            errors.append(f"{where}: id {repeated[0]} is in an earlier op")
        seen.update(op.ids)
        ops.append(op)
    forgotten = {i for op in ops for i in op.forget}
    for number, group in enumerate(groups, 1):
        if all(m.memory_id in forgotten for m in group.members):
            errors.append(f"group {number} would lose every memory")
    if errors:
        return Consolidation(errors=tuple(errors))
    return Consolidation(tuple(ops))


def _op(
    item: Any, group_of: dict[int, int], errors: list[str], where: str
) -> Merge | Retire | None:
    if not isinstance(item, dict) or ("merge" in item) == ("retire" in item):
        errors.append(f"{where}: not an object with either 'merge' or 'retire'")
        return None
    if "retire" in item:
        memory_id, reason = item["retire"], item.get("reason")
        if not _shown(memory_id, group_of):
            errors.append(f"{where}: retire {memory_id!r} is not an id shown in a group")
            return None
        if reason is not None and not isinstance(reason, str):
            errors.append(f"{where}: reason {reason!r} is not a text")
            return None
        return Retire(memory_id, (reason or "").strip()[:200] or None)
    ids, content = item["merge"], item.get("content")
    if not isinstance(ids, list) or len(ids) < 2:
        errors.append(f"{where}: merge {ids!r} is not a list of two or more ids")
        return None
    unknown = [i for i in ids if not _shown(i, group_of)]
    if unknown:
        errors.append(f"{where}: merge names {unknown[0]!r}, not an id shown in a group")
        return None
    if len(set(ids)) != len(ids):
        errors.append(f"{where}: merge {ids} names an id twice")
        return None
    if len({group_of[i] for i in ids}) != 1:
        errors.append(f"{where}: merge {ids} spans more than one group")
        return None
    if not isinstance(content, str) or not content.strip():
        errors.append(f"{where}: merge without a text 'content'")
        return None
    if len(content.strip()) > MAX_CONTENT:
        errors.append(f"{where}: merged content is over {MAX_CONTENT} characters")
        return None
    return Merge(ids[0], tuple(ids[1:]), content.strip())


def _shown(value: Any, group_of: dict[int, int]) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in group_of
