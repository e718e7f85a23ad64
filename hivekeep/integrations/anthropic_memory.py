"""Claude's memory tool (``memory_20250818``) on a hive agent: ``HivekeepMemoryTool(agent)``.

The directory Claude sees (docs/integrations.md, "Anthropic memory tool"):

- ``/memories/profile.md``: the agent's profile. An edit of the file becomes ``edit_profile``
  operations on the sections it changed, so the tool's rules hold: the budget is checked for the
  whole edit before anything is written, and ``## Pinned`` is kept when an edit drops it.
- ``/memories/archive/NAME``: one archive memory per file; a file's text is the memory's content.
  Creating a file memorizes it (deduplicated), editing updates it (its history is kept),
  deleting forgets it (to the trash). A memory written elsewhere shows as ``memory-ID.md``.
- ``/memories/search/WORDS``: a read-only view that lists the files ``recall`` ranks best.

Paths outside ``/memories`` and ``..`` are refused. Hivekeep's errors come back to Claude as tool
errors (``ToolError``), with the message that says what to do.
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

from hivekeep import Actor, Agent, HivekeepError, MemoryRecord
from hivekeep.core import profile as profile_doc
from hivekeep.core.text import forges_lines
from hivekeep.core.tokens import count_tokens
from hivekeep.integrations._named import find_named, name_of, own_memories, with_name

__all__ = ["HivekeepMemoryTool"]

ROOT = "/memories"
PROFILE = f"{ROOT}/profile.md"
ARCHIVE = f"{ROOT}/archive"
SEARCH = f"{ROOT}/search"
FILE_MARK = "memory-file:"  # the first line of a memory's source_context that holds its file name
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
        return _numbered(path, self._read(path), command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = _path(command.path)
        if path == PROFILE:
            return self._edit_profile(command.file_text)
        name = _archive_name(path)
        memory = self._memory(name)
        if memory is not None:
            self.agent.update_memory(memory.id, content=command.file_text)
            return f"File overwritten successfully at: {path}"
        written = self.agent.memorize(
            command.file_text,
            category=DEFAULT_CATEGORY,
            source_context=with_name(FILE_MARK, name, None),
        )
        if written.duplicate:
            return (
                f"Nothing new was written: the archive already holds this as "
                f"{_file(written.memory)}."
            )
        return f"File created successfully at: {path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        path = _path(command.path)
        old = self._read(path)
        count = old.count(command.old_str)
        if count != 1:
            where = "did not appear verbatim in" if count == 0 else f"appears {count} times in"
            raise ToolError(
                f"No replacement was performed: old_str `{command.old_str}` {where} {path}. "
                "Quote it exactly and make it unique."
            )
        return self._write(path, old.replace(command.old_str, command.new_str))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        path = _path(command.path)
        lines = self._read(path).split("\n")
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(
                f"Invalid insert_line {command.insert_line}: {path} has {len(lines)} lines, so "
                f"insert_line must be between 0 and {len(lines)}."
            )
        lines[command.insert_line : command.insert_line] = command.insert_text.split("\n")
        return self._write(path, "\n".join(lines))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = _path(command.path)
        if path == PROFILE:
            raise ToolError(
                f"{PROFILE} cannot be deleted; remove lines from it with str_replace instead."
            )
        memory = self._existing(path)
        self.agent.forget(memory.id)
        return (
            f"Successfully deleted {path} (it is in the trash, from which a person can restore it)."
        )

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """A new name is a new memory: the old one goes to the trash, the text stays the same."""
        old_path, new_path = _path(command.old_path), _path(command.new_path)
        new_name = _archive_name(new_path)
        memory = self._existing(old_path)
        if self._memory(new_name) is not None:
            raise ToolError(f"The destination {new_path} already exists.")
        self.agent.forget(memory.id)
        try:
            self.agent.memorize(
                memory.content,
                category=memory.category,
                subject=memory.subject,
                importance=memory.importance,
                scope=memory.scope,
                source_context=with_name(FILE_MARK, new_name, None),
            )
        except HivekeepError:
            self.agent.restore_memory(memory.id, by=Actor.AGENT)  # nothing is lost
            raise
        return f"Successfully renamed {old_path} to {new_path}"

    # files --------------------------------------------------------------------------------------
    def _files(self) -> list[str]:
        memories = own_memories(self.agent)  # newest first
        shown = [_file(m) for _, m in zip(range(LISTED), memories, strict=False)]
        if next(memories, None) is not None:
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
        return find_named(own_memories(self.agent), FILE_MARK, name, _unnamed)

    def _existing(self, path: str) -> MemoryRecord:
        memory = self._memory(_archive_name(path))
        if memory is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return memory

    def _read(self, path: str) -> str:
        if path == PROFILE:
            return self.agent.profile_text()
        return self._existing(path).content

    def _write(self, path: str, text: str) -> str:
        if path == PROFILE:
            return self._edit_profile(text)
        self.agent.update_memory(self._existing(path).id, content=text)
        return f"The memory file has been edited:\n{_numbered(path, text, None)}"

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
    """``path`` without a trailing slash, if it lies under /memories; anything else is refused."""
    parts = path.split("/")
    if not path.startswith(ROOT) or (len(path) > len(ROOT) and path[len(ROOT)] != "/"):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    if ".." in parts or "\\" in path or "\x00" in path:
        raise ToolError(f"Path {path} would escape the {ROOT} directory.")
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


def _file(memory: MemoryRecord) -> str:
    return f"{ARCHIVE}/{name_of(memory, FILE_MARK, _unnamed)}"


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
