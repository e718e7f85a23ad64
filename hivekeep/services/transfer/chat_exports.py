"""Import chat exports (ChatGPT's and Claude's ``conversations.json``, or ChatGPT's zip) as
conversations of one agent, and optionally run the maintenance call over them (``bootstrap``).

The file is read twice, streamed with ijson (one conversation in memory at a time, so exports of
hundreds of megabytes fit): the first pass checks every conversation and stores nothing when one
is wrong (not JSON, not a list of conversations, a conversation of the wrong shape, a truncated
file); the second stores each conversation in one transaction, keyed by its id in the export
(``ThreadService``), so a rerun imports nothing twice and finishes an import cut short. With
``bootstrap``, each conversation's messages are folded into batches waiting for maintenance, then
every waiting batch of the agent gets its call, oldest first; a rerun goes on where it stopped.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import ijson

from hivekeep.core.chats import SOURCES, Chat, chat_from
from hivekeep.errors import ValidationError
from hivekeep.services.remember import CaughtUp, RememberService
from hivekeep.store.base import AgentRecord

Progress = Callable[[int, int], None]  # (conversations done, total)
EXPORT_MEMBER = "conversations.json"  # the file inside an export's zip
LABELS = {"chatgpt": "ChatGPT", "claude": "Claude"}
BOOTSTRAP = "a bootstrap of imported chats"  # what LLMNotConfigured says needs the model


@dataclass(frozen=True)
class ChatImport:
    """What ``import_chats`` did."""

    conversations: int  # in the file
    created: int  # conversations new to the agent
    updated: int  # conversations imported before that had new messages
    messages: int  # messages stored
    empty: int  # conversations without a text message (not stored)
    bootstrap: CaughtUp | None = None

    def to_json(self) -> dict[str, Any]:
        caught = self.bootstrap
        return {
            "conversations": self.conversations,
            "created": self.created,
            "updated": self.updated,
            "messages": self.messages,
            "empty": self.empty,
            "bootstrap": None
            if caught is None
            else {
                "batches": len(caught.outcomes),
                "failed": sum(o.status != "done" for o in caught.outcomes),
                "left": caught.left,
                "memories_added": caught.memories_added,
            },
        }


class ChatExportError(ValidationError):
    """A chat export that cannot be imported; the message names the file and where."""


def read_chats(source: str, path: Path) -> Iterator[Chat]:
    """Each conversation of the export at ``path``, in file order; ``ChatExportError`` (naming
    the file and the conversation) at the first problem."""
    if source not in SOURCES:
        raise ValidationError(f"Unknown chat export {source!r}; known: {', '.join(SOURCES)}.")
    index = 0
    with _opened(path) as (stream, name):
        try:
            _check_array(stream, name)
            for index, value in enumerate(ijson.items(stream, "item", use_float=True), 1):
                try:
                    yield chat_from(source, value)
                except ValidationError as exc:
                    raise ChatExportError(f"{name}: conversation {index}: {exc}.") from None
        except ijson.JSONError as exc:  # yajl's message draws the spot over several lines
            problem = str(exc).strip().splitlines()[0] if str(exc).strip() else "cut short"
            raise ChatExportError(
                f"{name}: not valid JSON in conversation {index + 1} ({problem})."
            ) from None


@contextmanager
def _opened(path: Path) -> Iterator[tuple[IO[bytes], str]]:
    if path.is_dir():  # the export, unzipped
        path = path / EXPORT_MEMBER
    if not path.is_file():
        raise ChatExportError(f"{path}: no such file.")
    if not zipfile.is_zipfile(path):
        with path.open("rb") as stream:
            yield stream, str(path)
        return
    with zipfile.ZipFile(path) as archive:
        members = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == EXPORT_MEMBER]
        if not members:
            raise ChatExportError(f"{path}: the zip holds no {EXPORT_MEMBER}.")
        with archive.open(min(members, key=len)) as stream:
            yield stream, f"{path}:{min(members, key=len)}"


def _check_array(stream: IO[bytes], name: str) -> None:
    """An export is a JSON list of conversations: say so when it is something else."""
    head = stream.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    stream.seek(0)
    if not head.startswith(b"["):
        raise ChatExportError(f"{name}: expected a JSON list of conversations at the start.")


class ChatImporter:
    def __init__(self, remember: RememberService) -> None:
        self.remember = remember

    def check(self, source: str, path: Path) -> int:
        """Read the whole export, storing nothing; returns how many conversations it holds, or
        raises ``ChatExportError`` naming the file and where."""
        return sum(1 for _ in read_chats(source, path))

    def run(
        self,
        agent: AgentRecord,
        source: str,
        path: Path,
        *,
        bootstrap: bool = False,
        progress: Progress | None = None,
        checked: int | None = None,
    ) -> ChatImport:
        """``checked``: the file was checked already (``check``), holding that many."""
        if bootstrap:
            self.remember.check_model(agent.id, BOOTSTRAP)
        total = self.check(source, path) if checked is None else checked
        label = f"A conversation imported from {LABELS[source]}."
        created = updated = messages = empty = 0
        for done, chat in enumerate(read_chats(source, path), 1):
            if not chat.messages:
                empty += 1
            else:
                synced = self.remember.keep_chat(
                    agent.id, source, chat, fold=bootstrap, label=label
                )
                created += synced.created
                updated += bool(synced.added) and not synced.created
                messages += synced.added
            if progress is not None:
                progress(done, total)
        caught = self.remember.catch_up(agent) if bootstrap else None
        return ChatImport(total, created, updated, messages, empty, caught)
