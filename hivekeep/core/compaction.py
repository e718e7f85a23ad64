"""Compaction planning: when to compact, what to fold, what to merge, how to mask tool results.

SPEC §7 as pure functions over plain values (no I/O, no LLM, no store). The compaction service reads
messages and summaries, asks these functions what to do, then calls the LLM and persists; keeping
the decisions here lets every rule be tested exactly, with token counts chosen by the test.

Token counts come from the caller (``hivekeep.core.tokens``); percentages are of the model's context
window. Shares are compared as ``tokens * 100`` against ``percent * window``, so a boundary such as
exactly 75 % is decided without division rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import StrEnum

from hivekeep.errors import ValidationError

ROLES = ("system", "user", "assistant", "tool")

_PERCENTS = frozenset({"threshold_percent", "keep_percent", "summary_budget_percent"})
_MINIMUMS = {
    "max_summaries": 1,
    "min_batch_tokens": 0,
    "intact_groups": 1,  # the newest result must stay readable: the model just asked for it
    "observation_groups": 0,
    "observation_chars": 1,
    "zone_step": 1,
    "max_catch_up_passes": 1,
}


@dataclass(frozen=True)
class CompactionSettings:
    """Every number of SPEC §7 with its default; one instance per agent.

    Override with ``dataclasses.replace(settings, keep_percent=30.0)``: the copy is validated again,
    so an agent can never hold numbers that contradict each other.
    """

    threshold_percent: float = 75.0  # §7.1
    keep_percent: float = 40.0  # §7.2
    max_summaries: int = 10  # §7.4
    summary_budget_percent: float = 20.0  # §7.4
    min_batch_tokens: int = 2000  # §7.5
    intact_groups: int = 2  # §7.6, newest tool-call groups kept whole
    observation_groups: int = 10  # §7.6, next groups truncated ...
    observation_chars: int = 200  # ... to this many characters
    zone_step: int = 5  # §7.6, zone boundaries move this many groups at a time
    max_catch_up_passes: int = 5  # bound on the catch-up loop

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name in _PERCENTS:
                if not _is_number(value) or not 0 < value < 100:
                    raise _bad(field.name, value, "a percentage strictly between 0 and 100")
            elif not _is_int(value) or value < _MINIMUMS[field.name]:
                raise _bad(field.name, value, f"a whole number >= {_MINIMUMS[field.name]}")
        if self.keep_percent >= self.threshold_percent:
            raise _bad(
                "keep_percent",
                self.keep_percent,
                f"below threshold_percent ({self.threshold_percent!r}), or a compaction would "
                "leave the context as full as the trigger",
            )


@dataclass(frozen=True)
class MessageInfo:
    """What planning needs to know about one raw (not yet summarised) message."""

    id: int
    role: str  # one of ROLES
    tokens: int
    tool_call_ids: tuple[str, ...] = ()  # on an assistant message that calls tools
    tool_call_id: str | None = None  # on a tool result: the call it answers

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"Message role {self.role!r} is not one of: {', '.join(ROLES)}.")
        if not _is_int(self.tokens) or self.tokens < 0:
            raise ValidationError(f"Message {self.id} has {self.tokens!r} tokens; need >= 0.")
        if self.tool_call_ids and self.role != "assistant":
            raise ValidationError(f"Only assistant messages call tools, not {self.role!r}.")
        object.__setattr__(self, "tool_call_ids", tuple(self.tool_call_ids))


@dataclass(frozen=True)
class FoldPlan:
    """Message ids to summarise now (oldest first), the ids that stay raw, and the folded tokens."""

    fold: tuple[int, ...]
    keep: tuple[int, ...]
    tokens: int


@dataclass(frozen=True)
class SummaryInfo:
    """A summary in context: its size, its level (0 direct, >0 ``[compressed]``), its start."""

    id: int
    tokens: int
    depth: int
    first_at: str  # ISO-8601 UTC timestamp of the first message covered; sorts as text
    first_message_id: int = 0  # breaks ties of first_at (messages stored in one call share it)

    def __post_init__(self) -> None:
        if not _is_int(self.tokens) or self.tokens < 0 or not _is_int(self.depth) or self.depth < 0:
            raise ValidationError(
                f"Summary {self.id} has tokens={self.tokens!r}, depth={self.depth!r}; "
                "both must be whole numbers >= 0."
            )


class Zone(StrEnum):
    """How a tool result is shown to the model (§7.6), by the age of its tool-call group."""

    INTACT = "intact"
    OBSERVATION = "observation"
    COLLAPSED = "collapsed"


# --- trigger and catch-up ------------------------------------------------------------------------


def needs_compaction(context_tokens: int, window: int, s: CompactionSettings) -> bool:
    """§7.1: compact when the context fills strictly more than threshold_percent of the window."""
    _check_window(window)
    _check_count("context_tokens", context_tokens)
    return _over(context_tokens, s.threshold_percent, window)


def should_catch_up(
    passes_done: int, context_tokens: int, window: int, s: CompactionSettings
) -> bool:
    """Whether to run another compaction pass (a fold plus any merge it calls for).

    One pass can leave the context over the trigger: ``max_fold_tokens`` capped a long backlog (an
    outage, a switch to a smaller model), or summaries still fill their budget. Passes repeat while
    that holds, but at most max_catch_up_passes in all, so a history that cannot shrink (one tool
    exchange bigger than the window) never loops forever.
    """
    _check_count("passes_done", passes_done)
    return passes_done < s.max_catch_up_passes and needs_compaction(context_tokens, window, s)


# --- folding (§7.2, §7.3, §7.5) -----------------------------------------------------------------


MIN_BATCH_PERCENT = 5.0  # of the window: the smallest fold worth a call on a small window
MIN_ROOM_PERCENT = 25.0  # of the window, left for the conversation below the trigger
SUMMARY_SHARE_OF_BUDGET = 0.5  # one summary may take half of summary_budget_percent


def min_batch(window: int, s: CompactionSettings) -> int:
    """§7.5 scaled to the window: ``min_batch_tokens``, or MIN_BATCH_PERCENT of the window when
    that is smaller. A fixed 2,000 is half of a 4,096-token window: a fold that big would come
    only after the context had overflowed."""
    _check_window(window)
    return min(s.min_batch_tokens, int(window * MIN_BATCH_PERCENT / 100))


def keep_budget(window: int, s: CompactionSettings, reserved_tokens: int) -> int:
    """Tokens of raw messages the keep-window holds: keep_percent of the window, less what the
    rest of the context (system prompt, profile, tool schemas, summaries) already takes."""
    return max(0, int(s.keep_percent * window / 100) - reserved_tokens)


def summary_max_tokens(window: int, s: CompactionSettings, ceiling: int) -> int:
    """The longest summary worth writing for this window: half the summary budget, at most
    ``ceiling`` (a summary bigger than what it folds would make the context grow)."""
    _check_window(window)
    return max(64, min(ceiling, int(s.summary_budget_percent * window / 100 * 0.5)))


def room_warning(fixed_tokens: int, window: int, s: CompactionSettings) -> str | None:
    """Why this window is too small for the part of the context compaction cannot fold (system
    prompt, profile, tool schemas), or None when at least MIN_ROOM_PERCENT of it is left for
    the conversation below the trigger."""
    _check_window(window)
    _check_count("fixed_tokens", fixed_tokens)
    room = int(s.threshold_percent * window / 100) - fixed_tokens
    if room * 100 >= MIN_ROOM_PERCENT * window:
        return None
    return (
        f"The fixed part of the context (system prompt, profile and tool schemas: "
        f"{fixed_tokens:,} tokens) leaves {max(0, room):,} of the model's {window:,}-token window "
        f"for the conversation before compaction starts at {s.threshold_percent:g} %: every "
        "compaction will fold the whole conversation, and a long message may not fit. Use a model "
        "with a larger window (or set the one it has: --context-window), or shorten the profile."
    )


def plan_fold(
    messages: Sequence[MessageInfo],
    window: int,
    s: CompactionSettings,
    *,
    force: bool = False,
    max_fold_tokens: int | None = None,
    reserved_tokens: int = 0,
) -> FoldPlan | None:
    """Split the raw history (oldest first) into what to summarise now and what stays raw.

    §7.2: walking back from the newest message, messages stay raw while their total is within
    keep_percent of the window; everything older folds. A tool exchange (an assistant message with
    tool calls and all its results) is never split: one straddling the boundary stays raw whole, so
    the summariser and the model each see calls together with their results (§7.3). §7.5: a fold
    under min_batch_tokens is not worth a call (None), unless ``force``, which folds at least half
    the messages (rounded up, widened to whole exchanges) even when everything fits the keep-window.

    ``max_fold_tokens`` (what one summariser call can read) trims the fold to its oldest exchanges,
    at least one; the rest stays raw for the next pass (see should_catch_up). The cap wins over
    ``force``. The threshold is not checked here: call needs_compaction first, or force.

    ``reserved_tokens``: the rest of the context (system prompt, profile, tool schemas,
    summaries), which shrinks the keep-window (``keep_budget``); the minimum batch scales with
    the window (``min_batch``) and is waived when the context could not grow by one more batch
    without overflowing the window. So a small window compacts before it fills.
    """
    _check_window(window)
    if max_fold_tokens is not None and (not _is_int(max_fold_tokens) or max_fold_tokens <= 0):
        raise ValidationError(f"max_fold_tokens {max_fold_tokens!r} must be a positive integer.")
    ids = [m.id for m in messages]
    if len(set(ids)) != len(ids):
        raise ValidationError("Message ids repeat; each raw message must appear once.")
    cuts = _cut_points(messages)
    folded = [0]  # folded[c]: tokens of messages[:c]
    for message in messages:
        folded.append(folded[-1] + message.tokens)
    total = folded[-1]

    _check_count("reserved_tokens", reserved_tokens)
    keep = keep_budget(window, s, reserved_tokens)
    start = len(messages)  # oldest message of the keep-window walk
    while start > 0 and total - folded[start - 1] <= keep:
        start -= 1
    cut = max(c for c in cuts if c <= start)
    if force:
        cut = max(cut, min(c for c in cuts if c >= (len(messages) + 1) // 2))
    smallest = min_batch(window, s)
    if reserved_tokens + total + smallest > window:  # waiting for a bigger batch would overflow
        smallest = 0
    if cut == 0 or (not force and folded[cut] < smallest):
        return None
    if max_fold_tokens is not None and folded[cut] > max_fold_tokens:
        fitting = [c for c in cuts if 0 < c <= cut and folded[c] <= max_fold_tokens]
        cut = max(fitting) if fitting else min(c for c in cuts if c > 0)
    return FoldPlan(fold=tuple(ids[:cut]), keep=tuple(ids[cut:]), tokens=folded[cut])


def _cut_points(messages: Sequence[MessageInfo]) -> list[int]:
    """Positions c (0..n, ascending) where ``messages[:c]`` holds no half of a tool exchange.

    A result joins the latest earlier assistant message that declared its call id (some providers
    reuse ids such as ``call_0`` every turn); a result with no such message stands alone.
    """
    last_member = list(range(len(messages)))  # for an assistant: index of its last result
    owner: dict[str, int] = {}
    for index, message in enumerate(messages):
        for call_id in message.tool_call_ids:
            owner[call_id] = index
        if message.role == "tool" and message.tool_call_id in owner:
            last_member[owner[message.tool_call_id]] = index
    cuts, reach = [0], -1
    for index, last in enumerate(last_member):
        reach = max(reach, last)
        if reach == index:
            cuts.append(index + 1)
    return cuts


# --- telescopic merge (§7.4) --------------------------------------------------------------------


def plan_merge(
    summaries: Sequence[SummaryInfo], window: int, s: CompactionSettings
) -> tuple[int, ...] | None:
    """Ids of the summaries to merge into one ``[compressed]`` summary, or None (§7.4).

    When there are more than max_summaries, or together they fill more than summary_budget_percent
    of the window, the oldest half (rounded up, at least two) merges: older context is worth fewer
    tokens, and newer summaries stay detailed. Order is by ``first_at``, then first message id,
    then id, whatever the input order. A single summary cannot merge (None); the caller sets depth
    to max(depth) + 1.
    """
    _check_window(window)
    ordered = sorted(summaries, key=lambda s: (s.first_at, s.first_message_id, s.id))
    total = sum(summary.tokens for summary in ordered)
    over = len(ordered) > s.max_summaries or _over(total, s.summary_budget_percent, window)
    if not over or len(ordered) < 2:
        return None
    take = max(2, (len(ordered) + 1) // 2)
    return tuple(summary.id for summary in ordered[:take])


# --- progressive context pipeline (§7.6) --------------------------------------------------------


def tool_result_zones(group_count: int, s: CompactionSettings) -> list[Zone]:
    """Zone of each tool-call group, oldest first.

    The number of groups outside the intact zone is rounded down to a multiple of zone_step, so as
    one group is appended per turn, no existing group changes zone until ``group_count -
    intact_groups`` reaches the next multiple of zone_step: until then the rendered prompt prefix is
    byte-identical and stays in the provider's cache. The intact zone therefore holds between
    intact_groups and intact_groups + zone_step - 1 groups (fewer only when fewer exist).
    """
    _check_count("group_count", group_count)
    older = max(0, group_count - s.intact_groups) // s.zone_step * s.zone_step
    collapsed = max(0, older - s.observation_groups)
    return (
        [Zone.COLLAPSED] * collapsed
        + [Zone.OBSERVATION] * (older - collapsed)
        + [Zone.INTACT] * (group_count - older)
    )


def tool_result_zone_map(messages: Sequence[MessageInfo], s: CompactionSettings) -> dict[int, Zone]:
    """Zone of every tool result in a raw history, keyed by message id.

    Each assistant message with tool calls is one group (with or without results yet), and a
    result joins the latest group that declared its call id; an orphan result is a group alone.
    """
    owner: dict[str, int] = {}
    group_of: dict[int, int] = {}
    count = 0
    for message in messages:
        if message.tool_call_ids:
            owner.update(dict.fromkeys(message.tool_call_ids, count))
            count += 1
        elif message.role == "tool":
            if message.tool_call_id in owner:
                group_of[message.id] = owner[message.tool_call_id]
            else:
                group_of[message.id] = count
                count += 1
    zones = tool_result_zones(count, s)
    return {message_id: zones[group] for message_id, group in group_of.items()}


def render_tool_result(content: str, tool_name: str, zone: Zone, s: CompactionSettings) -> str:
    """A tool result as the model sees it in ``zone``; deterministic, so prefixes stay cacheable.

    OBSERVATION keeps the first observation_chars characters and says how many were cut (a result
    the marker would not shorten stays whole); COLLAPSED is one line with the tool name and size.
    """
    if zone == Zone.INTACT:
        return content
    if zone == Zone.COLLAPSED:
        name = " ".join(tool_name.split()) or "tool"
        return f"[{name} result: {len(content):,} chars, collapsed]"
    if zone == Zone.OBSERVATION:
        head = content[: s.observation_chars]
        shortened = f"{head}\n[truncated: {len(content) - len(head):,} more chars]"
        return shortened if len(shortened) < len(content) else content
    raise ValidationError(f"Zone {zone!r} is not one of: {', '.join(Zone)}.")


# --- helpers -------------------------------------------------------------------------------------


def _over(tokens: int, percent: float, window: int) -> bool:
    """Whether ``tokens`` is strictly more than ``percent`` % of ``window``."""
    return tokens * 100 > percent * window


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_window(window: int) -> None:
    if not _is_int(window) or window <= 0:
        raise ValidationError(f"Context window {window!r} must be a positive number of tokens.")


def _check_count(name: str, value: int) -> None:
    if not _is_int(value) or value < 0:
        raise ValidationError(f"{name} {value!r} must be a whole number >= 0.")


def _bad(name: str, value: object, rule: str) -> ValidationError:
    return ValidationError(f"Compaction setting {name} has value {value!r}. It must be {rule}.")
