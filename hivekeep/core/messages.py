"""Chat messages in OpenAI's shape, and the tool calls they carry: the one vocabulary of turns.

The core builds a turn's context from these, the services store and replay them, and every LLM
provider (``providers/llm``) speaks them, so none of them sees an SDK object. They live in the
core, below the providers, so that the pure context pipeline depends on no provider.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from hivekeep.errors import ValidationError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = get_args(Role)

# Where a tool call whose arguments were not a JSON object keeps the model's raw text, so the agent
# loop can send the model a precise error instead of calling the tool with nothing.
RAW_ARGUMENTS_KEY = "__raw_arguments__"


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the decoded JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def invalid_arguments(self) -> str | None:
        """The model's raw argument text when it was not a JSON object, else ``None``."""
        raw = self.arguments.get(RAW_ARGUMENTS_KEY)
        return raw if isinstance(raw, str) else None

    def arguments_json(self) -> str:
        """The arguments as the model sent them: raw text if undecodable, else JSON."""
        raw = self.invalid_arguments
        return raw if raw is not None else json.dumps(self.arguments, ensure_ascii=False)


def parse_tool_arguments(raw: str | None) -> dict[str, Any]:
    """Decode a model's argument string; anything but a JSON object is kept raw (see above)."""
    if raw is None or not raw.strip():
        return {}  # some servers send "" for a tool without parameters
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return decoded if isinstance(decoded, dict) else {RAW_ARGUMENTS_KEY: raw}


@dataclass(frozen=True)
class Message:
    """One chat message in OpenAI's shape.

    ``tool_calls`` appear on assistant messages; ``tool_call_id`` (and optionally ``name``, the
    tool's name) on ``tool`` messages, which carry a tool's result; ``name`` on a user message
    names the speaker.
    """

    role: Role
    content: str = ""
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"Message role {self.role!r} is not one of: {', '.join(ROLES)}.")
        if self.role == "tool" and not self.tool_call_id:
            raise ValidationError("A 'tool' message needs the tool_call_id it answers.")
        if self.tool_calls and self.role != "assistant":
            raise ValidationError(f"Only assistant messages carry tool_calls, not {self.role!r}.")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))  # accept any sequence

    @classmethod
    def from_openai(cls, data: Mapping[str, Any]) -> Message:
        """A message from an OpenAI-format dict (what users of that SDK already have)."""
        calls = tuple(
            ToolCall(str(call["id"]), str(call["function"]["name"]), _arguments(call["function"]))
            for call in data.get("tool_calls") or ()
        )
        content = data.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(part.get("text", "")) for part in content)
        return cls(
            role=data["role"],
            content=content or "",
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


def _arguments(function: Mapping[str, Any]) -> dict[str, Any]:
    raw = function.get("arguments")
    return dict(raw) if isinstance(raw, Mapping) else parse_tool_arguments(raw)
