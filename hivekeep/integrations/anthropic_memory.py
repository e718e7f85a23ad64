"""Claude's memory tool (``memory_20250818``) on a hive agent: ``HivekeepMemoryTool(agent)``.

The directory Claude sees (docs/integrations.md, "Anthropic memory tool"):

- ``/memories/profile.md``: the agent's profile. An edit of the file becomes ``edit_profile``
  operations on the sections it changed, so the tool's rules hold: the budget is checked for the
  whole edit before anything is written, and ``## Pinned`` is kept when an edit drops it.
- ``/memories/archive/NAME``: one archive memory per file; a file's text is the memory's content.
  Creating a file memorizes it (deduplicated: a text the agent holds word for word adds the name
  to that memory), editing updates it (its history is kept), renaming changes the name in place,
  deleting drops the name and forgets the memory (to the trash) with its last name. A memory
  written elsewhere shows as ``memory-ID.md``. After every success the file is at its path with
  its text; ``create`` on an existing path is refused, as the SDK's own backend refuses it.
- ``/memories/search/WORDS``: a read-only view that lists the files ``recall`` ranks best.

Paths outside ``/memories`` and ``..`` are refused. Errors are the SDK's reference backend's, in
its words, where it has one; hivekeep's own come back to Claude as tool errors (``ToolError``),
with the message that says what to do.
"""

from __future__ import annotations

from hivekeep.integrations import needs_extra

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaFunctionToolResultType, ToolError
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

from hivekeep import Agent, HivekeepError, MemoryRecord, Scope
from hivekeep.core import profile as profile_doc
from hivekeep.core.text import forges_lines, wording
from hivekeep.core.tokens import count_tokens
from hivekeep.integrations._named import FILE_MARK, Naming, own_memories

__all__ = ["HivekeepMemoryTool"]

ROOT = "/memories"
PROFILE = f"{ROOT}/profile.md"
ARCHIVE = f"{ROOT}/archive"
SEARCH = f"{ROOT}/search"
DEFAULT_CATEGORY = "fact"
LISTED = 100  # archive files a directory view lists (newest first); search reaches the rest
FOUND = 10  # files a search view lists
NUMBER_WIDTH = 6

ProfileEdit = tuple[str, str, str, bool]  # edit_profile's section, operation, content, pin


class HivekeepMemoryTool(BetaAbstractMemoryTool):
    """A backend for Claude's memory tool that reads and writes a hive agent's memory.

    >>> tool = HivekeepMemoryTool(hive.agent("assistant"))               # doctest: +SKIP
    >>> client.beta.messages.tool_runner(model=..., max_tokens=1024,      # doctest: +SKIP
    ...     tools=[tool], messages=[{"role": "user", "content": "..."}]).until_done()
    """

    def __init__(
        self, agent: Agent, *, cache_control: BetaCacheControlEphemeralParam | None = None
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.agent = agent

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        """Run one command; a refusal of hivekeep's (budget, validation) becomes a tool error."""
        try:
            return super().execute(command)
        except HivekeepError as exc:
            raise ToolError(str(exc)) from exc

    # commands -----------------------------------------------------------------------------------
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = _path(command.path)
        if path == ROOT:
            return self._listing(path, [PROFILE, f"{ARCHIVE}/", f"{SEARCH}/", *self._files()])
        if path == ARCHIVE:
            return self._listing(path, self._files())
        if path == SEARCH:
            return f"View {SEARCH}/<what you are looking for> to search the archive by meaning."
        if path.startswith(f"{SEARCH}/"):
            return self._search(path[len(SEARCH) + 1 :])
        return _numbered(command.path, self._read(command.path), command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """A new file; an existing one is refused, as the SDK's own backend refuses it."""
        path = _path(command.path)
        if self._exists(path):
            hint = " (edit it with str_replace or insert)" if path == PROFILE else ""
            raise ToolError(f"File {command.path} already exists{hint}")
        self._store(_archive_name(path), command.file_text, path)
        return f"File created successfully at: {command.path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        old = self._read(command.path)
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
        if _path(command.path) == PROFILE:
            return self._edit_profile(new)
        self._write(command.path, new)
        changed = old[: old.find(command.old_str)].count("\n")
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line "
            "numbers):\n" + _snippet(new, changed)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        lines = _lines_of(self._read(command.path))
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new = "\n".join(lines) + "\n"
        if _path(command.path) == PROFILE:
            return self._edit_profile(new)
        self._write(command.path, new)
        return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = _path(command.path)
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        if path == PROFILE:
            raise ToolError(
                f"{PROFILE} cannot be deleted; remove lines from it with str_replace instead."
            )
        name = _archive_name(path)
        memory = self._memory(name)
        if memory is None:
            raise ToolError(f"The path {command.path} does not exist")
        if FILES.alone(memory, name):
            self.agent.forget(memory.id)  # to the trash, from which a person can restore it
        else:  # other files share the memory: only the name goes
            FILES.rename(self.agent, memory, name, None)
        return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """The memory keeps its id, text and history; only the name it is reached by changes."""
        old_path, new_path = _path(command.old_path), _path(command.new_path)
        if old_path == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        if self._exists(new_path):
            raise ToolError(f"The destination {command.new_path} already exists")
        new_name = _archive_name(new_path)
        if old_path == PROFILE:
            raise ToolError(f"{PROFILE} cannot be renamed; copy its lines into a new file instead.")
        old_name = _archive_name(old_path)
        memory = self._memory(old_name)
        if memory is None:
            raise ToolError(f"The path {command.old_path} does not exist")
        FILES.rename(self.agent, memory, old_name, new_name)
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    # files --------------------------------------------------------------------------------------
    def _files(self) -> list[str]:
        names = (f"{ARCHIVE}/{name}" for m in own_memories(self.agent) for name in FILES.names(m))
        shown = [path for _, path in zip(range(LISTED), names, strict=False)]  # newest first
        if next(names, None) is not None:
            shown.append(f"(older files not listed: view {SEARCH}/<words> to find them)")
        return shown

    def _listing(self, path: str, entries: list[str]) -> str:
        header = f"Here're the files and directories up to 2 levels deep in {path}:"
        return "\n".join([header, path, *entries])

    def _search(self, query: str) -> str:
        hits = self.agent.recall(query, limit=FOUND).hits
        if not hits:
            return f"No archive file matches {query!r}."
        lines = [f"{_file(h.memory)}\t{h.memory.content}" for h in hits]
        return f"The archive files that best match {query!r}, best first:\n" + "\n".join(lines)

    def _memory(self, name: str) -> MemoryRecord | None:
        return FILES.find(own_memories(self.agent), name)

    def _exists(self, path: str) -> bool:
        """Whether ``path`` (checked by ``_path``) is a file or directory Claude would see."""
        if path in (ROOT, PROFILE, ARCHIVE, SEARCH):
            return True
        name = path[len(ARCHIVE) + 1 :] if path.startswith(f"{ARCHIVE}/") else ""
        return bool(name) and self._memory(name) is not None

    def _existing(self, path: str) -> MemoryRecord:
        memory = self._memory(_archive_name(_path(path)))
        if memory is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return memory

    def _read(self, path: str) -> str:
        if _path(path) == PROFILE:
            return self.agent.profile_text()
        return self._existing(path).content

    def _write(self, path: str, text: str) -> None:
        """An archive file's new text. A memory that other files share is not changed under
        them: the file moves to a memory of its own (copy on write)."""
        memory = self._existing(path)
        name = _archive_name(_path(path))
        if FILES.alone(memory, name):
            self.agent.update_memory(memory.id, content=text)
            return
        landed = self._store(name, text, path, like=memory)
        if landed.id != memory.id:
            FILES.rename(self.agent, memory, name, None)

    def _store(
        self, name: str, text: str, path: str, like: MemoryRecord | None = None
    ) -> MemoryRecord:
        """Memorize ``text`` as the file ``name`` (with ``like``'s fields, if given). A text the
        archive holds after the write (word for word, or the agent's own memory reworded to it)
        adds the name to that memory; one it holds only as another agent's memory is refused:
        no success without a file at ``path`` that reads ``text``."""
        written = self.agent.memorize(
            text,
            category=like.category if like else DEFAULT_CATEGORY,
            subject=like.subject if like else None,
            importance=like.importance if like else None,
            scope=like.scope if like else Scope.PRIVATE,
            source_context=FILES.source_context([name], None),
        )
        found = written.memory
        if not written.duplicate or name in FILES.names(found):
            return found
        if found.agent_id == self.agent.id and wording(found.content) == wording(text):
            return FILES.rename(self.agent, found, None, name)
        where = (
            _file(found)
            if found.agent_id == self.agent.id
            else f"{found.author_name}'s shared memory {found.id}"
        )
        raise ToolError(
            f"Nothing was written to {path}: the archive already holds this as {where}, in "
            f"other words: {found.content!r}. Use that file, or write its exact text here to "
            "keep both names."
        )

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


def _path(path: str) -> str:
    """``path`` without a trailing slash, if it lies under /memories; anything else is refused
    (in the words of the SDK's own backend)."""
    parts = path.split("/")
    if not path.startswith(ROOT) or (len(path) > len(ROOT) and path[len(ROOT)] != "/"):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    if ".." in parts or "\\" in path or "\x00" in path:
        raise ToolError(f"Path {path} would escape {ROOT} directory")
    if forges_lines(path):  # a name in the directory listing must not fake or reorder lines
        raise ToolError(
            f"Path {path!r} holds a line break, control or bidi character; use a plain file name."
        )
    return path.rstrip("/") or ROOT


def _archive_name(path: str) -> str:
    name = path[len(ARCHIVE) + 1 :] if path.startswith(f"{ARCHIVE}/") else ""
    if not name or "/" in name or name.startswith(".") or name == ".":
        raise ToolError(
            f"{path} is not a file hivekeep can hold: write {PROFILE}, or one memory per file "
            f"directly in {ARCHIVE}/ (e.g. {ARCHIVE}/coffee.md)."
        )
    return name


def _unnamed(memory: MemoryRecord) -> str:
    return f"memory-{memory.id}.md"


FILES = Naming(FILE_MARK, _unnamed)


def _file(memory: MemoryRecord) -> str:
    return f"{ARCHIVE}/{FILES.names(memory)[0]}"


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
