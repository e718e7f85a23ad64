"""What every hivekeep LLM does around the model call: check the call, then record its usage.

``ChatLLM`` implements the ``LLM`` protocol's ``complete`` and ``stream`` once. It gathers a
call's arguments into an ``LLMCall`` (the call site checked, the model's default ``max_tokens``
applied), runs the subclass's ``_complete`` or ``_stream`` inside ``_errors`` (where the SDK
providers translate their exceptions) and records each ``Completion``'s usage in ``usage_log``.
The SDK providers and ``hivekeep.testing.ScriptedLLM`` both subclass it, so the test double and
the real providers cannot drift apart in how a call is checked and accounted.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from hivekeep.core.messages import Message
from hivekeep.providers.llm.base import CallSite, Completion, StreamEvent, UsageLog, check_call_site

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMCall:
    """One call as a provider receives it: the arguments, checked, with defaults applied."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    max_tokens: int | None
    call_site: CallSite
    timeout: float | None
    streamed: bool


class ChatLLM(ABC):
    """Base of hivekeep's LLMs: ``complete`` and ``stream`` over one ``_complete``/``_stream``.

    A subclass sets ``usage_log`` and implements ``model_id``, ``context_window``, ``_complete``
    and ``_stream``; it may check the arguments further in ``_check`` and wrap the model call in
    ``_errors``.
    """

    usage_log: UsageLog
    max_tokens: int | None = None  # used when a call passes none; None lets the model decide

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    @property
    @abstractmethod
    def context_window(self) -> int: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        call_site: CallSite = "chat",
    ) -> Completion:
        """One answer to ``messages``; its usage is recorded under ``call_site``."""
        call = self._call(messages, tools, max_tokens, timeout, call_site, streamed=False)
        with self._errors(call):
            completion = self._complete(call)
        self._record(completion)
        return completion

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        call_site: CallSite = "chat",
    ) -> Iterator[StreamEvent]:
        """``TextDelta``s as the text arrives, then the whole ``Completion``."""
        call = self._call(messages, tools, max_tokens, timeout, call_site, streamed=True)
        with self._errors(call):
            for event in self._stream(call):
                if isinstance(event, Completion):
                    self._record(event)
                yield event

    @abstractmethod
    def _complete(self, call: LLMCall) -> Completion: ...

    @abstractmethod
    def _stream(self, call: LLMCall) -> Iterator[StreamEvent]: ...

    def _check(  # noqa: B027 - a hook, not abstract: the default takes every call
        self, messages: list[Message], max_tokens: int | None, timeout: float | None
    ) -> None:
        """Refuse arguments this model cannot take (``ValidationError``)."""

    def _errors(self, call: LLMCall) -> AbstractContextManager[None]:
        """Where the model call runs: a provider translates its client's exceptions here."""
        return nullcontext()

    def _call(
        self,
        messages: Sequence[Message],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        timeout: float | None,
        call_site: str,
        *,
        streamed: bool,
    ) -> LLMCall:
        received = list(messages)
        self._check(received, max_tokens, timeout)
        site = check_call_site(call_site)
        tokens = max_tokens if max_tokens is not None else self.max_tokens
        return LLMCall(received, tools, tokens, site, timeout, streamed)

    def _record(self, completion: Completion) -> None:
        usage = completion.usage
        logger.debug(
            "%s %s call: %d prompt tokens (%d cached), %d completion tokens%s",
            self.model_id,
            usage.call_site,
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            " (estimated)" if usage.estimated else "",
        )
        self.usage_log.record(usage)


__all__ = ["ChatLLM", "LLMCall"]
