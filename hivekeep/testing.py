"""Test doubles for code that uses hivekeep: ``ScriptedLLM``, an LLM that answers from a script.

Like httpx's ``MockTransport``, it is public so that users test their own agents the way hivekeep
tests itself: real storage, real embeddings, and only the remote model replaced.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hivekeep.core.messages import Message
from hivekeep.errors import ValidationError
from hivekeep.providers.llm.base import (
    CallSite,
    Completion,
    StreamEvent,
    TextDelta,
    UsageLog,
    estimate_usage,
)
from hivekeep.providers.llm.calls import ChatLLM, LLMCall

ScriptedReply = (
    str
    | Completion
    | BaseException
    | Callable[[list[Message], list[dict[str, Any]] | None], str | Completion]
)

_STREAM_CHUNKS = 3


class ScriptExhausted(AssertionError):
    """The code under test made more LLM calls than the test scripted.

    An ``AssertionError``, not a ``HivekeepError``, on purpose: hivekeep degrades gracefully on
    provider failures (``except ProviderError``), which would hide an unexpected extra call; this
    error is a bug in the test or the code, so nothing in hivekeep catches it and the test fails.
    """


@dataclass(frozen=True)
class ScriptedCall(LLMCall):
    """What one call to a ``ScriptedLLM`` received."""

    @property
    def text(self) -> str:
        """Every message's content, joined: handy for ``assert "..." in call.text``."""
        return "\n".join(message.content for message in self.messages)


class ScriptedLLM(ChatLLM):
    """An LLM that replies from a queue and records every call, for tests.

    Each reply is used once, in order, and is one of: a string (the answer's text), a
    ``Completion`` (e.g. with tool calls), an exception instance (raised, e.g.
    ``ProviderError("down")`` to simulate an outage), or a callable that receives the messages
    and tools and returns a string or a ``Completion`` (or raises). A call past the end of the
    script raises ``ScriptExhausted`` (an ``AssertionError``). Usage is estimated with hivekeep's
    tokenizer, unless a scripted ``Completion`` carries non-zero usage of its own; it is recorded
    in ``usage_log`` under the call's site. ``stream`` yields the text in a few pieces::

        llm = ScriptedLLM(["Hi! I'll remember that.", "You like tea."])
        hive = Hive(path, llm=llm)
        ...
        assert len(llm.calls) == 2
        assert "tea" in llm.calls[1].text
        llm.enqueue(Completion(tool_calls=[ToolCall("call_1", "recall", {"query": "tea"})]))
    """

    def __init__(
        self,
        responses: Iterable[ScriptedReply] = (),
        *,
        context_window: int = 8192,
        model_id: str = "scripted",
    ) -> None:
        self._model_id = model_id
        # any positive size: a test may want one smaller than a real model's (batch sizing)
        if isinstance(context_window, bool) or not isinstance(context_window, int):
            raise ValidationError(f"context_window={context_window!r} is not a number of tokens.")
        if context_window < 1:
            raise ValidationError(f"context_window={context_window!r} is not positive.")
        self._context_window = context_window
        self._queue: deque[ScriptedReply] = deque(responses)
        self._scripted = len(self._queue)
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []
        self.usage_log = UsageLog()

    def __repr__(self) -> str:
        return f"ScriptedLLM({len(self.calls)} calls made, {self.remaining} replies left)"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def context_window(self) -> int:
        return self._context_window

    @property
    def remaining(self) -> int:
        """Replies not used yet."""
        return len(self._queue)

    def enqueue(self, *responses: ScriptedReply) -> None:
        """Add replies to the end of the script."""
        with self._lock:
            self._queue.extend(responses)
            self._scripted += len(responses)

    def _complete(self, call: LLMCall) -> Completion:
        with self._lock:
            self.calls.append(
                ScriptedCall(
                    call.messages,
                    call.tools,
                    call.max_tokens,
                    call.call_site,
                    call.timeout,
                    call.streamed,
                )
            )
            if not self._queue:
                raise ScriptExhausted(
                    f"ScriptedLLM got call {len(self.calls)} ({call.call_site!r}) but only "
                    f"{self._scripted} replies were scripted; enqueue() more."
                )
            reply = self._queue.popleft()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(call.messages, call.tools)
        completion = reply if isinstance(reply, Completion) else Completion(content=reply)
        return self._finish(completion, call.messages, call.call_site)

    def _stream(self, call: LLMCall) -> Iterator[StreamEvent]:
        completion = self._complete(call)
        for piece in _pieces(completion.content, _STREAM_CHUNKS):
            yield TextDelta(piece)
        yield completion

    def _finish(
        self, completion: Completion, messages: list[Message], site: CallSite
    ) -> Completion:
        usage = completion.usage
        if usage.input_tokens or usage.output_tokens:
            usage = dataclasses.replace(usage, call_site=site)
        else:
            usage = estimate_usage(messages, completion.content, completion.tool_calls, site)
        return dataclasses.replace(
            completion, usage=usage, model=completion.model or self._model_id
        )


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut at word boundaries into at most ``count`` pieces that join back to it."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = text.find(" ", start + size)
        end = len(text) if end == -1 else end + 1
        pieces.append(text[start:end])
        start = end
    return pieces


__all__ = ["ScriptExhausted", "ScriptedCall", "ScriptedLLM", "ScriptedReply"]
