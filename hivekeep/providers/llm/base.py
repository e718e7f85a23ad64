"""The LLM protocol and its value types: OpenAI-style messages in, a ``Completion`` out.

Every provider (and ``hivekeep.testing.ScriptedLLM``) speaks these types, so the agent loop,
compaction and maintenance never see an SDK object. Messages follow OpenAI's chat shape because it
is the lingua franca of compatible servers; the Anthropic provider converts them.

Usage is measured per *call site* (chat, compaction, …) so an operator can see what memory upkeep
costs next to the conversation itself; providers record it in a ``UsageLog``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from hivekeep.core.messages import RAW_ARGUMENTS_KEY as RAW_ARGUMENTS_KEY
from hivekeep.core.messages import ROLES as ROLES
from hivekeep.core.messages import Message as Message
from hivekeep.core.messages import Role as Role
from hivekeep.core.messages import ToolCall as ToolCall
from hivekeep.core.messages import parse_tool_arguments as parse_tool_arguments
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ValidationError

CallSite = Literal["chat", "compaction", "merge", "maintenance", "bootstrap", "review"]
CALL_SITES: tuple[CallSite, ...] = get_args(CallSite)


@dataclass(frozen=True)
class Usage:
    """Tokens one call consumed. ``input_tokens`` counts the whole prompt, cached part included.

    ``estimated`` is true when the server reported nothing and hivekeep counted with its own
    tokenizer instead.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    call_site: CallSite = "chat"
    cached_input_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Completion:
    """The model's answer: text, the tool calls it wants, what it cost, and why it stopped.

    ``stop_reason`` uses OpenAI's words whatever the provider: ``stop``, ``length`` (hit
    ``max_tokens``), ``tool_calls``, ``content_filter``; any other reason is passed through as-is.
    """

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = "stop"


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text, as it streams in."""

    text: str


# What ``LLM.stream`` yields: ``TextDelta``s, then exactly one ``Completion`` (the whole answer).
StreamEvent = TextDelta | Completion


class LLM(Protocol):
    """A chat model. Users pass their own objects with these members, or subclass this.

    ``model_id`` names the model (``provider:model``); ``context_window`` is its size in tokens,
    which drives compaction. ``complete`` answers one request; ``tools`` are OpenAI-format function
    schemas (``hivekeep.tools.tool_schemas("openai")``). Failures raise
    ``hivekeep.errors.ProviderError``. ``stream`` yields ``TextDelta``s and then the same
    ``Completion`` ``complete`` would return; a subclass that only answers whole gets a one-piece
    stream from the default below.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        call_site: CallSite = "chat",
    ) -> Completion: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        call_site: CallSite = "chat",
    ) -> Iterator[StreamEvent]:
        completion = self.complete(
            messages, tools=tools, max_tokens=max_tokens, timeout=timeout, call_site=call_site
        )
        if completion.content:
            yield TextDelta(completion.content)
        yield completion


def check_call_site(call_site: str) -> CallSite:
    """``call_site`` if it is a known one; a typo would silently split the usage totals."""
    if call_site not in CALL_SITES:
        raise ValidationError(f"call_site {call_site!r} is not one of: {', '.join(CALL_SITES)}.")
    return call_site  # narrowed to CallSite by the membership test


_PER_MESSAGE_OVERHEAD = 4  # role and separators, as OpenAI's chat format spends them


def estimate_usage(
    messages: Sequence[Message],
    completion: str,
    tool_calls: Sequence[ToolCall] = (),
    call_site: CallSite = "chat",
) -> Usage:
    """Usage counted with hivekeep's own tokenizer, for servers (and doubles) that report none."""
    prompt = sum(
        _PER_MESSAGE_OVERHEAD
        + count_tokens(m.content)
        + sum(count_tokens(c.name) + count_tokens(c.arguments_json()) for c in m.tool_calls)
        for m in messages
    )
    output = count_tokens(completion) + sum(
        count_tokens(c.name) + count_tokens(c.arguments_json()) for c in tool_calls
    )
    return Usage(prompt, output, call_site, estimated=True)


class UsageLog:
    """Every call's ``Usage``, in memory, summable by call site; thread-safe.

    ``on_record`` is called with each new entry (the hook persistence will use)::

        log = UsageLog()
        llm = create_llm("openai:gpt-4o-mini", usage_log=log)
        ...
        log.total("maintenance").total_tokens
    """

    def __init__(self, on_record: Callable[[Usage], None] | None = None) -> None:
        self._entries: list[Usage] = []
        self._lock = threading.Lock()
        self._on_record = on_record

    def record(self, usage: Usage) -> None:
        with self._lock:
            self._entries.append(usage)
        if self._on_record is not None:
            self._on_record(usage)

    @property
    def entries(self) -> list[Usage]:
        """A copy of every recorded entry, oldest first."""
        with self._lock:
            return list(self._entries)

    def total(self, call_site: CallSite | None = None) -> Usage:
        """The sum over one call site, or over all of them (then labelled ``chat``: read the
        token counts, not the label)."""
        picked = [u for u in self.entries if call_site is None or u.call_site == call_site]
        return Usage(
            input_tokens=sum(u.input_tokens for u in picked),
            output_tokens=sum(u.output_tokens for u in picked),
            call_site=call_site or "chat",
            cached_input_tokens=sum(u.cached_input_tokens for u in picked),
            estimated=any(u.estimated for u in picked),
        )

    def by_site(self) -> dict[CallSite, Usage]:
        """The sum for each call site that has entries."""
        sites = {u.call_site for u in self.entries}
        return {site: self.total(site) for site in CALL_SITES if site in sites}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
