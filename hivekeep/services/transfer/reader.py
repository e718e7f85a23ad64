"""Reading and checking an export file: every line parsed, validated and cross-referenced before
an import writes anything; a bad file is reported, up to ``MAX_ERRORS`` problems, with line
numbers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import pydantic

from hivekeep.core.names import agent_name, agent_role
from hivekeep.core.tokens import count_tokens
from hivekeep.errors import ValidationError
from hivekeep.services.conversation import ConversationService
from hivekeep.services.transfer.format import (
    FORMAT_VERSION,
    HISTORY_VERSION,
    LINE,
    MAX_ERRORS,
    MAX_LINE_BYTES,
    RECORD_SUMMARY_FIELDS,
    TYPES,
    AgentLine,
    AnyLine,
    ConversationLine,
    HeaderLine,
    MemoryLine,
    MessageLine,
    ProfileLine,
    SummaryLine,
    TrashedLine,
    decode_vector,
)
from hivekeep.store.conversations import (
    NewMessage,
    RestoredConversation,
    RestoredMessage,
    RestoredSummary,
    ToolCallRecord,
)
from hivekeep.types import Scope

Screen = Callable[[str, str, str], str]  # (agent name, text, field) -> the text kept
_L = TypeVar("_L")


class LineError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Block:
    """One conversation with its message and summary lines (each with its line number)."""

    line: int
    conversation: ConversationLine
    messages: list[tuple[int, MessageLine]] = field(default_factory=list)
    summaries: list[tuple[int, SummaryLine]] = field(default_factory=list)
    restored: RestoredConversation | None = None  # set once every reference is checked

    @property
    def last_line(self) -> int:
        return max([self.line, *(n for n, _ in self.messages), *(n for n, _ in self.summaries)])


Item = HeaderLine | AgentLine | ProfileLine | MemoryLine | Block


def restored_conversation(block: Block) -> RestoredConversation:
    """The block with keys turned into positions; raises LineError on a dangling reference."""
    messages: dict[str, int] = {}
    summaries: dict[str, int] = {}
    for keys, lines in ((messages, block.messages), (summaries, block.summaries)):
        for number, line in lines:
            if line.key in keys:
                raise LineError(
                    number, f"{line.type} key {line.key!r} is used twice in this conversation"
                )
            keys[line.key] = len(keys)

    def position(number: int, keys: dict[str, int], key: str, what: str) -> int:
        if key not in keys:
            raise LineError(
                number,
                f"{what} {key!r} is not in conversation {block.conversation.key!r} "
                f"(line {block.line})",
            )
        return keys[key]

    def optional(number: int, keys: dict[str, int], key: str | None, what: str) -> int | None:
        return None if key is None else position(number, keys, key, what)

    restored_summaries = []
    for index, (number, s) in enumerate(block.summaries):
        sources = tuple(position(number, summaries, k, "source summary") for k in s.sources)
        if any(source >= index for source in sources):
            raise LineError(number, "a merged summary must come after the summaries it merges")
        restored_summaries.append(
            RestoredSummary(
                text=s.text,
                tokens=s.tokens,
                first_at=s.first_at,
                last_at=s.last_at,
                message_count=s.message_count,
                created_at=s.created_at,
                first_message=optional(number, messages, s.first_message, "first message"),
                last_message=optional(number, messages, s.last_message, "last message"),
                depth=s.depth,
                sources=sources,
                in_context=s.in_context,
                maintenance_status=s.maintenance_status,
                maintenance_attempts=s.maintenance_attempts,
                maintenance_error=s.maintenance_error,
            )
        )
    restored_messages = []
    for number, m in block.messages:
        record_summaries: dict[str, tuple[int, ...]] = {}
        for name in RECORD_SUMMARY_FIELDS:
            listed = (m.record or {}).get(name)
            if isinstance(listed, list) and all(isinstance(k, str) for k in listed):
                # a record is a note of what happened: a summary missing from it is left out
                record_summaries[name] = tuple(summaries[k] for k in listed if k in summaries)
        calls = tuple(ToolCallRecord(call.id, call.name, call.arguments) for call in m.tool_calls)
        restored_messages.append(
            RestoredMessage(
                NewMessage(
                    role=m.role,
                    content=m.content,
                    tokens=m.tokens,
                    tool_calls=calls,
                    tool_call_id=m.tool_call_id,
                    tool_name=m.tool_name,
                    speaker=m.speaker,
                    is_compaction_record=m.compaction_record,
                    record=m.record,
                    created_at=m.created_at,
                ),
                summary=optional(number, summaries, m.summary, "summary"),
                record_summaries=record_summaries,
            )
        )
    c = block.conversation
    return RestoredConversation(
        title=c.title,
        created_at=c.created_at,
        updated_at=c.updated_at,
        messages=tuple(restored_messages),
        summaries=tuple(restored_summaries),
    )


def _describe(exc: pydantic.ValidationError) -> str:
    """Pydantic's errors as one short sentence per problem."""
    parts = []
    for error in exc.errors():
        kind = error["type"]
        if kind == "union_tag_invalid":
            tag = error.get("ctx", {}).get("tag")
            parts.append(f"unknown type {tag!r} (expected one of: {', '.join(TYPES)})")
        elif kind == "union_tag_not_found":
            parts.append("no 'type' field")
        else:
            where = ".".join(str(part) for part in error["loc"][1:])
            # a check of ours (a ValueError) speaks for itself, without pydantic's "Value error, "
            cause = error.get("ctx", {}).get("error") if kind == "value_error" else None
            message = str(cause) if cause is not None else str(error["msg"])
            parts.append(f"{where!r}: {message}" if where else message)
    return "; ".join(parts)


class Reader:
    """Parses a file into items, checking every line and reference; used by both passes."""

    def __init__(self, path: Path, conversations: ConversationService) -> None:
        self.path = path
        self.conversations = conversations
        self.header: HeaderLine | None = None
        self.lines = 0
        self.source_messages: set[str] = set()  # message keys that memories point at
        self.profile_budget: int | None = None  # None: a profile of any size is accepted
        # the credential policy: (agent name, text, field) -> the text kept (ValidationError:
        # refused); every text of a memory or profile line, kept versions included, passes it
        self.screen: Screen | None = None

    def items(self, errors: list[str] | None) -> Iterator[tuple[int, Item]]:
        """(line number, item) in file order. ``errors``: collect problems (up to MAX_ERRORS)
        and go on; None: raise at the first one."""
        agents: dict[str, str] = {}  # lower-case name -> name
        profiles: set[str] = set()
        conversation_keys: set[str] = set()
        block: Block | None = None
        number = 0

        def fail(exc: LineError) -> None:
            if errors is None:
                raise ValidationError(f"Line {exc.line} of {self.path}: {exc}.")
            errors.append(f"line {exc.line}: {exc}")

        with self.path.open("rb") as file:
            for number, raw in enumerate(_bounded_lines(file), start=1):
                if errors is not None and len(errors) >= MAX_ERRORS:
                    break
                try:
                    if raw is None:
                        raise LineError(
                            number,
                            f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB, more than any "
                            "line of an export (a message is at most 100,000 characters)",
                        )
                    if not raw.strip():
                        continue  # a blank line (e.g. an editor's last newline)
                    line = self._parse(number, _decode(number, raw))
                    if isinstance(line, MessageLine | SummaryLine):
                        if block is None or line.conversation != block.conversation.key:
                            raise LineError(
                                number,
                                f"a {line.type} must follow its conversation's line and the "
                                f"other lines of conversation {line.conversation!r}",
                            )
                        if isinstance(line, MessageLine):
                            block.messages.append((number, line))
                        else:
                            block.summaries.append((number, line))
                        continue
                    if block is not None:
                        finished, block = block, None
                        finished.restored = restored_conversation(finished)
                        yield finished.last_line, finished
                    self._check(number, line, agents, profiles, conversation_keys)
                    line = self._screened(number, line)
                    if isinstance(line, ConversationLine):
                        block = Block(number, line)
                        continue
                    yield number, line
                except LineError as exc:
                    fail(exc)
            self.lines = number
        if block is not None:
            try:
                block.restored = restored_conversation(block)
                yield block.last_line, block
            except LineError as exc:
                fail(exc)
        if self.header is None and (errors is None or not errors):
            fail(LineError(1, "the file is empty; an export starts with a header line"))

    def _screened(self, number: int, line: _L) -> _L:
        """``line`` with its memory or profile texts as the credential policy keeps them."""
        screen = self.screen
        if screen is None or not isinstance(line, ProfileLine | MemoryLine):
            return line
        agent = line.agent if isinstance(line, ProfileLine) else line.author
        try:
            if isinstance(line, ProfileLine):
                versions = [
                    v.model_copy(update={"text": screen(agent, v.text, "profile")})
                    for v in line.history or []
                ]
                return line.model_copy(
                    update={
                        "text": screen(agent, line.text, "profile"),
                        "history": versions if line.history is not None else None,
                    }
                )
            memory_versions = [
                v.model_copy(
                    update={
                        "content": screen(agent, v.content, "content"),
                        "subject": v.subject and screen(agent, v.subject, "subject"),
                    }
                )
                for v in line.history or []
            ]
            content = screen(agent, line.content, "content")
            vector = line.vector if content == line.content else None  # made from the secret
            return line.model_copy(
                update={
                    "content": content,
                    "vector": vector,
                    "subject": line.subject and screen(agent, line.subject, "subject"),
                    "source_context": line.source_context
                    and screen(agent, line.source_context, "source_context"),
                    "history": memory_versions if line.history is not None else None,
                }
            )
        except ValidationError as exc:
            raise LineError(number, str(exc).rstrip(".")) from None

    def _parse(self, number: int, text: str) -> AnyLine:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            # some of json's messages end in "at" ("Invalid control character at"): said once
            what = exc.msg.removesuffix(" at")
            raise LineError(number, f"not valid JSON ({what} at column {exc.colno})") from None
        except RecursionError:
            raise LineError(number, "JSON nested too deeply to read") from None
        except ValueError:  # an integer of over 4,300 digits (Python's limit on converting one)
            raise LineError(number, "a number too long to read (over 4,300 digits)") from None
        if not isinstance(data, dict):
            raise LineError(number, "not a JSON object")
        try:
            line = LINE.validate_python(data)
        except RecursionError:
            raise LineError(number, "JSON nested too deeply to read") from None
        except pydantic.ValidationError as exc:
            kind = data.get("type")
            label = f" ({kind})" if isinstance(kind, str) and kind in TYPES else ""
            raise LineError(number, f"invalid record{label}: {_describe(exc)}") from None
        if number == 1 and not isinstance(line, HeaderLine):
            raise LineError(number, "an export starts with a header line")
        if number > 1 and isinstance(line, HeaderLine):
            raise LineError(number, "a second header line")
        return line

    def _v2(self) -> bool:
        return self.header is not None and self.header.version >= HISTORY_VERSION

    def _check(
        self,
        number: int,
        line: HeaderLine | AgentLine | ProfileLine | MemoryLine | ConversationLine,
        agents: dict[str, str],
        profiles: set[str],
        conversation_keys: set[str],
    ) -> None:
        """References and values a model alone cannot check."""

        def known(name: str) -> None:
            if name.lower() not in agents:
                raise LineError(
                    number, f"agent {name!r} has no agent line before this one in the file"
                )

        if isinstance(line, HeaderLine):
            if line.version > FORMAT_VERSION:
                raise LineError(
                    number,
                    f"format version {line.version} is newer than this hivekeep reads "
                    f"({FORMAT_VERSION}); upgrade hivekeep to import it",
                )
            self.header = line
        elif isinstance(line, AgentLine):
            if line.name.lower() in agents:
                raise LineError(number, f"agent {line.name!r} appears twice")
            try:
                _check_agent(line, self.conversations)
            except ValidationError as exc:
                raise LineError(number, str(exc).rstrip(".")) from None
            agents[line.name.lower()] = line.name
        elif isinstance(line, ProfileLine):
            known(line.agent)
            if line.agent.lower() in profiles:
                raise LineError(number, f"agent {line.agent!r} has two profile lines")
            profiles.add(line.agent.lower())
            if line.history is not None and not self._v2():
                raise LineError(number, f"history needs format version {HISTORY_VERSION}")
            newest = max((v.version for v in line.history or []), default=0)
            if line.revision is not None and line.revision < newest:
                raise LineError(
                    number, f"'revision' {line.revision} is older than kept version {newest}"
                )
            if self.profile_budget is not None:  # the live rule, on every version kept too
                texts = [("", line.text)]
                texts += [(f" (kept version {v.version})", v.text) for v in line.history or []]
                for which, text in texts:
                    tokens = count_tokens(text)
                    if tokens > self.profile_budget:
                        raise LineError(
                            number,
                            f"the profile of {line.agent!r}{which} has {tokens} tokens, over this "
                            f"hive's budget of {self.profile_budget} (MEMORY_PROFILE_MAX_TOKENS); "
                            "shorten it, raise the budget, or import with allow_over_budget "
                            "(--allow-over-budget) to keep it whole",
                        )
        elif isinstance(line, ConversationLine):
            known(line.agent)
            if line.key in conversation_keys:
                raise LineError(number, f"conversation key {line.key!r} is used twice")
            conversation_keys.add(line.key)
        elif isinstance(line, MemoryLine):
            if (line.history is not None or isinstance(line, TrashedLine)) and not self._v2():
                raise LineError(
                    number, f"history and the trash need format version {HISTORY_VERSION}"
                )
            if not line.author_deleted:
                known(line.author)
            elif line.scope is not Scope.SHARED:
                raise LineError(number, "a memory whose author was deleted must be shared")
            if line.vector is not None:
                space = self.header.embedding if self.header else None
                if space is None:
                    raise LineError(number, "a memory has a vector but the header names no model")
                try:
                    decode_vector(line.vector, space.dimension)
                except ValueError as exc:
                    raise LineError(number, str(exc)) from None
            if line.source_message is not None:
                self.source_messages.add(line.source_message)


def _bounded_lines(file: BinaryIO) -> Iterator[bytes | None]:
    """The file's lines, each read to at most ``MAX_LINE_BYTES`` (None for a longer one, whose
    rest is skipped unread), so no line can fill the memory."""
    while True:
        raw = file.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        while raw and not raw.endswith(b"\n"):
            raw = file.readline(MAX_LINE_BYTES)
        yield None


def _decode(number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(
            number,
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "an export is UTF-8 text",
        ) from None


def _check_agent(line: AgentLine, conversations: ConversationService) -> None:
    if agent_name(line.name) != line.name:  # the rules `create_agent` applies
        raise ValidationError(f"Agent name {line.name!r} has spaces around it.")
    agent_role(line.role)
    model = line.settings.model
    if model is not None and ":" not in model:
        raise ValidationError(f"Agent model {model!r} must be a provider:model spec.")
    check_compaction(line.settings.compaction, conversations)


def check_compaction(compaction: Mapping[str, Any], conversations: ConversationService) -> None:
    known = {f.name for f in dataclasses.fields(conversations.defaults)}
    unknown = sorted(set(compaction) - known)
    if unknown:
        raise ValidationError(f"Unknown compaction settings {unknown}.")
    dataclasses.replace(conversations.defaults, **compaction)  # raises ValidationError if bad
