"""Claude's memory tool (``memory_20250818``) on a hive agent: ``HivekeepMemoryTool(agent)``.

A drop-in for the SDK's own ``BetaLocalFilesystemMemoryTool``: Claude's files live in
``base_path/memories`` (a temporary directory without one) exactly as that backend keeps them
(any path, directories included, each file's text byte for byte, the backend's own answers and
errors), and each file's text is also one memory of the agent, so recall, the UI, maintenance and
other agents (for shared memories) see what Claude wrote. What the directory adds
(docs/integrations.md, "Claude's memory tool"):

- ``/memories/profile.md``: the agent's profile, kept in the hive. An edit of the file becomes
  ``edit_profile`` operations on the sections it changed, so the tool's rules hold: the budget is
  checked for the whole edit before anything is written, and ``## Pinned`` is kept.
- ``/memories/hive/``: the memories the agent sees that no file holds (its own, written through
  another interface, as ``memory-ID.md``; other agents' shared ones as ``shared-ID.md``), and
  ``/memories/hive/search/WORDS``, the memories ``recall`` ranks best for WORDS.

A file's memory: ``create`` memorizes the text (a text the agent already holds word for word
adds the file's path to that memory), an edit updates it (its history is kept; a memory other
files share is not changed under them: the file moves to a memory of its own), ``rename`` changes
the path the memory is reached by, ``delete`` drops it and forgets the memory (to the trash) with
its last file. A file whose text cannot be one memory (empty, over 2,000 characters, a path over
200 characters) is kept as a file only, and the answer says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path

from hivekeep.integrations import needs_extra

try:
    from anthropic.lib.tools import BetaFunctionToolResultType, ToolError
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818Command,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # the extra is not installed, or too old
    raise needs_extra("anthropic-memory", exc) from exc

from hivekeep import Agent, HivekeepError, MemoryRecord, Scope, ValidationError
from hivekeep.core import profile as profile_doc
from hivekeep.core.limits import MAX_CONTENT_CHARS
from hivekeep.core.text import forges_lines
from hivekeep.core.tokens import count_tokens
from hivekeep.integrations._named import FILE_MARK, MAX_NAME_CHARS, Naming, own_memories

__all__ = ["HivekeepMemoryTool"]

ROOT = "/memories"
PROFILE = f"{ROOT}/profile.md"
HIVE = f"{ROOT}/hive"
SEARCH = f"{HIVE}/search"
DEFAULT_CATEGORY = "fact"
LISTED = 100  # hive entries a directory view lists (newest first); search reaches the rest
FOUND = 10  # memories a search view lists
NUMBER_WIDTH = 6

ProfileEdit = tuple[str, str, str, bool]  # edit_profile's section, operation, content, pin


class HivekeepMemoryTool(BetaLocalFilesystemMemoryTool):
    """The SDK's local file backend, whose files are also a hive agent's memories.

    ``base_path``: where the files live (``base_path/memories``), as for the SDK's backend; the
    hive holds the profile and one memory per file. None: a temporary directory, removed with
    the tool. Files the agent's memories name but the disk lacks are written from the memories
    when the tool starts (their paths and texts, trimmed; a file kept as a file only is not
    among them).

    >>> tool = HivekeepMemoryTool(hive.agent("assistant"), "./memory")    # doctest: +SKIP
    >>> client.beta.messages.tool_runner(model=..., max_tokens=1024,      # doctest: +SKIP
    ...     tools=[tool], messages=[{"role": "user", "content": "..."}]).until_done()
    """

    def __init__(
        self,
        agent: Agent,
        base_path: str | Path | None = None,
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        scratch = tempfile.mkdtemp(prefix="hivekeep-memory-") if base_path is None else None
        super().__init__(base_path=str(base_path) if scratch is None else scratch)
        if scratch is not None:  # removed with the tool
            weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)
        self._cache_control = cache_control
        self.agent = agent
        self._restore_files()

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        """Run one command; a refusal of hivekeep's (budget, validation) becomes a tool error."""
        try:
            return super().execute(command)
        except HivekeepError as exc:
            raise ToolError(str(exc)) from exc

    # commands -----------------------------------------------------------------------------------
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        where = self._kind(command.path)
        if where == "profile":
            return _numbered(command.path, self.agent.profile_text(), command.view_range)
        if where == "hive":
            return self._view_hive(command.path.rstrip("/"), command.view_range)
        shown = super().view(command)
        if self._validate_path(command.path) == self.memory_root.resolve():
            profile = _size(self.agent.profile_text())
            shown += f"\n{profile}\t{PROFILE}\n-\t{HIVE}/ (memories no file holds; search)"
        return shown

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        where = self._kind(command.path)
        if where == "profile":
            raise ToolError(
                f"File {command.path} already exists (edit it with str_replace or insert)"
            )
        if where == "hive":
            raise ToolError(_reserved(command.path))
        _plain(command.path)
        created = super().create(command)
        try:
            return created + self._remember(self._name(command.path), command.file_text)
        except BaseException:
            Path(self._validate_path(command.path)).unlink(missing_ok=True)  # nothing half-done
            raise

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        where = self._kind(command.path)
        if where == "file":
            edited = super().str_replace(command)
            return edited + self._relink(command.path)
        old = self._hive_text(command.path) if where == "hive" else self.agent.profile_text()
        count = old.count(command.old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{command.old_str}` did not appear "
                f"verbatim in {command.path}."
            )
        if count > 1:
            lines = _occurrences(old, command.old_str)
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str "
                f"`{command.old_str}` in lines: {lines}. Please ensure it is unique"
            )
        new = old.replace(command.old_str, command.new_str)
        if where == "profile":
            return self._edit_profile(new)
        self._edit_hive(command.path, new)
        changed = old[: old.find(command.old_str)].count("\n")
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line "
            "numbers):\n" + _snippet(new, changed)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        where = self._kind(command.path)
        if where == "file":
            edited = super().insert(command)
            return edited + self._relink(command.path)
        old = self._hive_text(command.path) if where == "hive" else self.agent.profile_text()
        lines = _lines_of(old)
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new = "\n".join(lines) + "\n"
        if where == "profile":
            return self._edit_profile(new)
        self._edit_hive(command.path, new)
        return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        where = self._kind(command.path)
        if where == "profile":
            raise ToolError(
                f"{PROFILE} cannot be deleted; remove lines from it with str_replace instead."
            )
        if where == "hive":
            memory = self._hive_memory(command.path, changing=True)
            self.agent.forget(memory.id)  # to the trash, from which a person can restore it
            return f"Successfully deleted {command.path}"
        names = self._names_under(command.path)
        deleted = super().delete(command)
        for name in names:
            self._drop(name)
        return deleted

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """The memories keep their ids, texts and histories; only the paths change."""
        source, target = self._kind(command.old_path), self._kind(command.new_path)
        if source == "profile":
            raise ToolError(f"{PROFILE} cannot be renamed; copy its lines into a new file instead.")
        if target != "file":
            if target == "profile" or self._exists_in_hive(command.new_path):
                raise ToolError(f"The destination {command.new_path} already exists")
            raise ToolError(_reserved(command.new_path))
        _plain(command.new_path)
        if source == "hive":
            return self._file_from_hive(command.old_path, command.new_path)
        names = self._names_under(command.old_path)
        renamed = super().rename(command)
        old, new = self._name(command.old_path), self._name(command.new_path)
        notes = [self._move(name, new + name[len(old) :]) for name in names]
        return renamed + "".join(notes)

    def clear_all_memory(self) -> str:
        """Every file goes, and with it the memories only files reached; the profile and the
        memories written elsewhere stay."""
        for name in self._names_under(ROOT):
            self._drop(name)
        return super().clear_all_memory()

    # files and their memories -------------------------------------------------------------------
    def _restore_files(self) -> None:
        """Write each file a memory of the agent names that is not on disk (a new temporary
        directory, another machine, a file removed by hand), with the memory's text."""
        root = self.memory_root.resolve()
        for memory in own_memories(self.agent):
            for name in FILES.split(memory.source_context)[0] or []:
                if (root / name).exists():
                    continue
                command = BetaMemoryTool20250818CreateCommand(
                    command="create", path=f"{ROOT}/{name}", file_text=memory.content
                )
                try:
                    super().create(command)
                except (ToolError, OSError):  # a path the disk cannot hold now: the hive keeps it
                    continue

    def _kind(self, path: str) -> str:
        """ "profile", "hive" (the hive's view) or "file" (a path on disk), after the reference
        backend's own checks of the path (its errors, in its words)."""
        if "\x00" in path:  # the reference backend fails on it without an answer
            raise ToolError(f"Path {path!r} holds a NUL byte; use a plain file name.")
        self._validate_path(path)
        bare = path.rstrip("/")
        if bare == PROFILE:
            return "profile"
        return "hive" if bare == HIVE or bare.startswith(f"{HIVE}/") else "file"

    def _name(self, path: str) -> str:
        """The path below /memories, as the memory keeps it."""
        full = self._validate_path(path)
        return full.relative_to(self.memory_root.resolve()).as_posix()

    def _names_under(self, path: str) -> list[str]:
        """The files at or below ``path`` on disk, as names."""
        full = self._validate_path(path)
        root = self.memory_root.resolve()
        if full.is_file():
            return [full.relative_to(root).as_posix()]
        found: list[str] = []
        for folder, _, files in os.walk(full):
            found.extend((Path(folder) / f).relative_to(root).as_posix() for f in files)
        return sorted(found)

    def _memory(self, name: str) -> MemoryRecord | None:
        """The agent's own memory the file ``name`` is."""
        return FILES.find(own_memories(self.agent), name)

    def _remember(self, name: str, text: str, like: MemoryRecord | None = None) -> str:
        """Memorize a file's text as its memory; a note for the answer when it cannot be one.
        A text the agent holds already (dedup) adds the file to that memory; one held as another
        agent's shared memory is that memory (the agent sees it; no copy is made)."""
        why = _not_a_memory(name, text)
        if why:
            return why
        try:
            written = self.agent.memorize(
                text.strip(),
                category=like.category if like else DEFAULT_CATEGORY,
                subject=like.subject if like else None,
                importance=like.importance if like else None,
                scope=like.scope if like else Scope.PRIVATE,
                source_context=FILES.source_context([name], None),
            )
        except ValidationError as exc:  # a text hivekeep refuses as a memory stays a file
            return _note(name, str(exc))
        found = written.memory
        if found.agent_id == self.agent.id and name not in FILES.names(found):
            self._add_name(found, name)
        return ""

    def _add_name(self, memory: MemoryRecord, name: str) -> None:
        """Reach ``memory`` by the file ``name`` too; the made-up name of a memory no file
        held (its path in the hive's view) goes, since no file is there."""
        named = FILES.split(memory.source_context)[0] is not None
        FILES.rename(self.agent, memory, None if named else FILES.unnamed(memory), name)

    def _relink(self, path: str) -> str:
        """After an edit: the file's memory takes its new text (copy on write when other files
        share the memory); a note when the text can no longer be a memory."""
        name = self._name(path)
        text = self._validate_path(path).read_text(encoding="utf-8")
        memory = self._memory(name)
        if memory is not None and FILES.alone(memory, name) and not _not_a_memory(name, text):
            if memory.content == text.strip():
                return ""
            try:
                self.agent.update_memory(memory.id, content=text.strip())
                return ""
            except ValidationError as exc:
                self._drop(name, memory)
                return _note(name, str(exc))
        if memory is not None:
            self._drop(name, memory)
        return self._remember(name, text, like=memory)

    def _drop(self, name: str, memory: MemoryRecord | None = None) -> None:
        """The file ``name`` is gone: its memory goes (to the trash) when no other name has it."""
        memory = memory or self._memory(name)
        if memory is None:
            return
        if FILES.alone(memory, name):
            self.agent.forget(memory.id)
        else:
            FILES.rename(self.agent, memory, name, None)

    def _move(self, old: str, new: str) -> str:
        memory = self._memory(old)
        if memory is None:
            return ""
        if len(new) > MAX_NAME_CHARS:
            self._drop(old, memory)
            return _note(new, _LONG_PATH)
        FILES.rename(self.agent, memory, old, new)
        return ""

    # the hive's view ----------------------------------------------------------------------------
    def _entries(self) -> Iterator[tuple[str, MemoryRecord]]:
        """The memories the agent sees that no file holds, newest first, with their paths."""
        offset = 0
        while True:
            page = self.agent.list_memories(limit=200, offset=offset)
            for memory in page.memories:
                if memory.agent_id != self.agent.id:
                    yield f"{HIVE}/shared-{memory.id}.md", memory
                elif not FILES.split(memory.source_context)[0]:
                    yield f"{HIVE}/memory-{memory.id}.md", memory
            if not page.has_more:
                return
            offset += len(page.memories)

    def _view_hive(self, path: str, view_range: list[int] | None) -> str:
        if path == HIVE:
            listed = [e for _, e in zip(range(LISTED + 1), self._entries(), strict=False)]
            lines = [f"{_size(m.content)}\t{p}" for p, m in listed[:LISTED]]
            if len(listed) > LISTED:
                lines.append(f"(older memories not listed: view {SEARCH}/<words> to find them)")
            header = f"Here're the files and directories up to 2 levels deep in {HIVE}:"
            return "\n".join([header, f"-\t{HIVE}", f"-\t{SEARCH}/", *lines])
        if path == SEARCH:
            return f"View {SEARCH}/<what you are looking for> to search the memories by meaning."
        if path.startswith(f"{SEARCH}/"):
            return self._search(path[len(SEARCH) + 1 :])
        return _numbered(path, self._hive_memory(path).content, view_range)

    def _search(self, query: str) -> str:
        hits = self.agent.recall(query, limit=FOUND).hits
        if not hits:
            return f"No memory matches {query!r}."
        lines = [f"{self._path_of(h.memory)}\t{h.memory.content}" for h in hits]
        return f"The memories that best match {query!r}, best first:\n" + "\n".join(lines)

    def _path_of(self, memory: MemoryRecord) -> str:
        names = FILES.split(memory.source_context)[0] if memory.agent_id == self.agent.id else None
        if names:
            return f"{ROOT}/{names[0]}"
        kind = "memory" if memory.agent_id == self.agent.id else "shared"
        return f"{HIVE}/{kind}-{memory.id}.md"

    def _hive_memory(self, path: str, *, changing: bool = False) -> MemoryRecord:
        """The memory at a hive path (the reference's error when there is none); ``changing``:
        refused for another agent's shared memory, saying what to do instead."""
        bare = path.rstrip("/")
        memory = None
        stem, _, number = bare[len(HIVE) + 1 :].removesuffix(".md").rpartition("-")
        if stem in ("memory", "shared") and number.isdecimal() and bare.endswith(".md"):
            try:
                memory = self.agent.memory(int(number))
            except HivekeepError:
                memory = None
        if memory is None or self._path_of(memory) != bare:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if changing and memory.agent_id != self.agent.id:
            raise ToolError(
                f"{path} is {memory.author_name}'s shared memory, which only they change. Keep "
                f"your own version in a file: create {ROOT}/<name>.md with its text, edited."
            )
        return memory

    def _exists_in_hive(self, path: str) -> bool:
        try:
            self._view_hive(path.rstrip("/"), None)
        except ToolError:
            return False
        return True

    def _hive_text(self, path: str) -> str:
        return self._hive_memory(path, changing=True).content

    def _edit_hive(self, path: str, text: str) -> None:
        memory = self._hive_memory(path, changing=True)
        if len(text.strip()) > MAX_CONTENT_CHARS or not text.strip():
            raise ValidationError(
                f"A memory is 1-{MAX_CONTENT_CHARS:,} characters; keep a longer text in a file "
                f"of its own (create {ROOT}/<name>.md)."
            )
        self.agent.update_memory(memory.id, content=text.strip())

    def _file_from_hive(self, old_path: str, new_path: str) -> str:
        """A memory of the hive's view renamed to a file: the file is written with its text and
        becomes the memory's path (another agent's shared memory: a file of the agent's own)."""
        try:
            memory = self._hive_memory(old_path)
        except ToolError:
            raise ToolError(f"The path {old_path} does not exist") from None  # rename's words
        if self._validate_path(new_path).exists():
            raise ToolError(f"The destination {new_path} already exists")
        super().create(
            BetaMemoryTool20250818CreateCommand(
                command="create", path=new_path, file_text=memory.content
            )
        )
        name = self._name(new_path)
        if memory.agent_id == self.agent.id and len(name) <= MAX_NAME_CHARS:
            self._add_name(memory, name)
        else:
            self._remember(name, memory.content)
        return f"Successfully renamed {old_path} to {new_path}"

    # the profile --------------------------------------------------------------------------------
    def _edit_profile(self, text: str) -> str:
        """Write ``text`` as ``edit_profile`` operations on the sections it changes, after the
        budget check of the whole edit (so a refused edit writes nothing)."""
        current = self.agent.profile_text()
        edits, notes = _profile_edits(current, text)
        final = current
        for section, operation, content, pin in edits:
            final = profile_doc.apply_edit(final, section, operation, content, pin=pin)
        profile_doc.check_edit_budget(current, final, self.agent.profile_budget, count_tokens)
        for section, operation, content, pin in edits:
            self.agent.edit_profile(section, operation, content, pin=pin)
        saved = _numbered(PROFILE, self.agent.profile_text(), None)
        return "\n".join(["The memory file has been edited.", *notes, saved])


_LONG_PATH = f"a memory keeps a path of at most {MAX_NAME_CHARS} characters."


def _not_a_memory(name: str, text: str) -> str:
    """Why a file's text cannot be one memory (its note for the answer), or ""."""
    size = len(text.strip())
    if len(name) > MAX_NAME_CHARS:
        why = _LONG_PATH
    elif not size:
        why = "it is empty."
    elif size > MAX_CONTENT_CHARS:
        why = (
            f"at {size:,} characters it is too large for one memory (at most "
            f"{MAX_CONTENT_CHARS:,}), so recall will not find it. Split it into smaller files to "
            "remember it."
        )
    else:
        return ""
    return _note(name, why)


def _note(name: str, why: str) -> str:
    """What an answer adds when a file cannot be a memory."""
    return f"\n(Note: {ROOT}/{name} is kept as a file only: {why})"


def _reserved(path: str) -> str:
    return (
        f"{path} is in {HIVE}/, the hive's view of the memories no file holds; write files "
        f"anywhere else under {ROOT} (e.g. {ROOT}/notes.md)."
    )


def _plain(path: str) -> None:
    """Refuse a path whose listing line could fake or reorder others."""
    if forges_lines(path):
        raise ToolError(
            f"Path {path!r} holds a line break, control or bidi character; use a plain file name."
        )


def _size(text: str) -> str:
    """A size as the reference backend's listing shows one (1.5K)."""
    size = len(text.encode("utf-8"))
    for unit in ("B", "K", "M"):
        if size < 1024 or unit == "M":
            return f"{size}{unit}" if size == int(size) else f"{size:.1f}{unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


FILES = Naming(FILE_MARK, lambda memory: f"hive/memory-{memory.id}.md")  # never a file's path


def _lines_of(text: str) -> list[str]:
    """A file's lines as the SDK's backend counts them: no empty last line after a final newline."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _occurrences(text: str, part: str) -> str:
    """The lines (from 1) where ``part`` starts, every occurrence, as ``1, 3``."""
    starts, at = [], text.find(part)
    while at != -1:
        starts.append(str(text[:at].count("\n") + 1))
        at = text.find(part, at + 1)
    return ", ".join(starts)


def _snippet(text: str, line: int) -> str:
    """Two lines either side of ``line`` (from 0), numbered: what a str_replace answers."""
    lines = text.split("\n")
    shown = range(max(0, line - 2), min(len(lines), line + 3))
    return "\n".join(f"{n + 1:>{NUMBER_WIDTH}}\t{lines[n]}" for n in shown)


def _numbered(path: str, text: str, view_range: list[int] | None) -> str:
    lines = text.split("\n")
    start, end = 1, len(lines)
    if view_range and len(view_range) == 2:
        start = max(1, view_range[0])
        end = len(lines) if view_range[1] == -1 else min(view_range[1], len(lines))
    shown = [f"{n:>{NUMBER_WIDTH}}\t{lines[n - 1]}" for n in range(start, end + 1)]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(shown)


def _profile_edits(old_text: str, new_text: str) -> tuple[list[ProfileEdit], list[str]]:
    """The edit_profile operations that turn the old profile into the new text, shrinking ones
    first, and notes on what edit_profile's rules kept."""
    old, new = profile_doc.parse(old_text), profile_doc.parse(new_text)
    if old.preamble.strip() != new.preamble.strip():
        raise ToolError(
            "The text before the first '## ' heading of the profile cannot change; put it in a "
            "section instead."
        )
    edits: list[ProfileEdit] = []
    notes: list[str] = []
    for section in new.sections:
        before = old.find(section.title)
        was, now = (before.body.strip() if before else ""), section.body.strip()
        if was != now and now:
            edits.append((section.title, "replace_section", now, _pinned(section.title)))
        elif was != now:
            edits.append((section.title, "remove_line", _lines(was), _pinned(section.title)))
    for section in old.sections:
        if new.find(section.title) is not None or not section.body.strip():
            continue
        if _pinned(section.title):
            notes.append("## Pinned is kept: edits never remove it (empty its lines instead).")
        else:
            edits.append((section.title, "remove_line", _lines(section.body), False))
            notes.append(f"The heading ## {section.title} stays, emptied (sections stay).")
    edits.sort(key=lambda edit: edit[1] != "remove_line")  # shrink first: the budget allows it
    return edits, notes


def _pinned(title: str) -> bool:
    return title.strip().casefold() == profile_doc.PINNED.casefold()


def _lines(body: str) -> str:
    return "\n".join(line for line in body.splitlines() if line.strip())
