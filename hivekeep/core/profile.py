"""The profile document: parsing, edits, the budget rule and the guards on automatic rewrites.

The profile is the part of an agent's memory that sits in every system prompt, so every change to it
goes through these pure functions (no I/O, no database): the tool, the UI/API and the maintenance
rewrites then obey one set of rules.

Format: markdown made of ``## Title`` sections. A heading is a line that starts with exactly two
hashes and a space; ``#`` and ``###`` lines are ordinary body text, and fenced code blocks are not
special (a ``## `` line inside one is still a heading). Text before the first heading is the
preamble. Only ``"\\n"`` separates lines (``"\\r\\n"`` is normalised to it on the way in).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from hivekeep.core.blocks import PROMPT_TAGS, contains_tag, extract_block, neutralise
from hivekeep.core.routing import KNOW_VS_HAPPENED, RECALL_FIRST, ROUTING_RULE
from hivekeep.errors import BudgetError, ValidationError

PINNED = "Pinned"
MAX_TITLE_CHARS = 80
OPERATIONS = ("append", "replace_section", "remove_line")

_HEADING = "## "
_BULLET = re.compile(r"([-*]) ")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s")


@dataclass(frozen=True)
class Section:
    """One ``## Title`` section.

    ``body`` is the raw text between the heading line and the next heading, including the blank
    line(s) that separate it from the next section: keeping it raw is what makes serialising
    lossless, and lets an edit leave every other byte of the document alone.
    """

    title: str
    body: str


@dataclass(frozen=True)
class ProfileDoc:
    """A parsed profile: the preamble (kept as is) and the sections in document order."""

    preamble: str
    sections: tuple[Section, ...]

    def find(self, title: str) -> Section | None:
        """The first section with this title, ignoring case and surrounding spaces."""
        index = _index(self, title)
        return None if index is None else self.sections[index]


@dataclass(frozen=True)
class RewriteOutcome:
    """What to store after an automatic rewrite, and why it differs from the candidate."""

    text: str
    applied: bool
    notes: tuple[str, ...]


# --- parsing -----------------------------------------------------------------------------------


def parse(text: str) -> ProfileDoc:
    """Split a profile into preamble and sections, keeping every byte so serialise can undo it."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in _lines(text.replace("\r\n", "\n")):
        if line.startswith(_HEADING):
            sections.append((line[len(_HEADING) :].strip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return ProfileDoc(
        preamble="".join(preamble),
        sections=tuple(Section(title, "".join(body)) for title, body in sections),
    )


def serialise(doc: ProfileDoc) -> str:
    """Write a document back as text; the inverse of parse for canonical documents.

    A preamble or body that does not end with a newline gets one when a heading follows, so that a
    hand-built document still parses back into the same sections.
    """
    parts = [doc.preamble]
    for section in doc.sections:
        if parts[-1] and not parts[-1].endswith("\n"):
            parts.append("\n")
        parts.append(f"{_HEADING}{section.title}\n")
        parts.append(section.body)
    return "".join(parts)


def validate_title(title: str) -> str:
    """Return the stripped title, or refuse one that would break the document's structure."""
    stripped = title.strip()
    if not stripped:
        raise ValidationError(
            f"Section title {title!r} is empty: give the section a name of 1 to "
            f"{MAX_TITLE_CHARS} characters."
        )
    if len(stripped.splitlines()) > 1:
        raise ValidationError(
            f"Section title {title!r} spans several lines: a title must be a single line."
        )
    if "#" in stripped:
        raise ValidationError(
            f"Section title {title!r} contains '#': leave the heading marks out, "
            "'## ' is added for you and a title may not contain '#'."
        )
    if len(stripped) > MAX_TITLE_CHARS:
        raise ValidationError(
            f"Section title {stripped!r} is {len(stripped)} characters long: a title may have at "
            f"most {MAX_TITLE_CHARS}."
        )
    return stripped


# --- edits -------------------------------------------------------------------------------------


def apply_edit(text: str, section: str, operation: str, content: str, pin: bool = False) -> str:
    """Apply one edit_profile operation and return the new document.

    Only the edited section changes (plus a blank separator line where a new section is added), so
    user formatting elsewhere survives the agent's edits. ``remove_line`` matches after trimming
    and dropping one leading ``- ``/``* `` bullet on both sides, case-sensitively, removes every
    line that matches, and accepts several lines (one per line of ``content``; all must match or
    nothing is removed). A section left empty by ``remove_line`` keeps its heading. An
    ``append`` whose every line the section already holds (``_holds``) returns ``text`` as it
    is, so a rerun script or a repeating model adds nothing twice.
    """
    if operation not in OPERATIONS:
        raise ValidationError(
            f"Unknown operation {operation!r}: use one of {', '.join(OPERATIONS)}."
        )
    content = content.replace("\r\n", "\n")
    if not content.strip():
        raise ValidationError(
            f"content is empty: {operation} needs the text "
            + ("of the line to remove." if operation == "remove_line" else "to write.")
        )
    if pin:
        title = PINNED
    else:
        title = section.strip()
        if not title:
            raise ValidationError(
                "section is empty: name the section to edit, or pass pin=true to edit ## Pinned."
            )
    doc = parse(text)
    index = _index(doc, title)

    if operation == "remove_line":
        if index is None:
            raise _missing_section(doc, title)
        body = _remove_lines(doc.sections[index], content)
        return serialise(_with_body(doc, index, body))

    new_lines = _content_lines(content)
    if index is None:
        if operation == "append":  # a new section is a bullet list, as appends to one are
            new_lines = _match_format([NEW_SECTION_BULLET], new_lines)
        if _is_pinned(title):
            return serialise(_insert(doc, Section(PINNED, _join_body(new_lines, "")), top=True))
        created = Section(validate_title(title), _join_body(new_lines, ""))
        return serialise(_insert(doc, created, top=False))

    lines, gap = _split_body(doc.sections[index].body)
    if operation == "append" and _holds(lines, new_lines):
        return text
    lines = lines + _match_format(lines, new_lines) if operation == "append" else new_lines
    return serialise(_with_body(doc, index, _join_body(lines, gap)))


def check_edit_budget(
    old_text: str, new_text: str, budget: int, count: Callable[[str], int]
) -> int:
    """Refuse an edit that leaves the profile over budget without making it smaller; returns the
    new text's token count (the caller stores it).

    Shrinking edits are always allowed, so a profile that is already over budget (after a tolerated
    rewrite, or a lowered budget) can be pruned step by step instead of being stuck.
    """
    new_tokens = count(new_text)
    if new_tokens <= budget:
        return new_tokens
    old_tokens = count(old_text)
    if new_tokens < old_tokens:
        return new_tokens
    raise BudgetError(
        f"The profile would be {new_tokens} tokens, over the budget of {budget}. It is "
        f"{old_tokens} tokens now, and an edit over the budget must make it smaller. Remove or "
        "shorten lines (edit_profile remove_line/replace_section), or move details to the "
        "archive with memorize.",
        for_people=(
            f"The profile would be {new_tokens} tokens, over its budget of {budget} (it is "
            f"{old_tokens} now). Shorten or delete some lines, or move details into memories, "
            "then save again."
        ),
    )


# --- automatic rewrites ------------------------------------------------------------------------


def extract_profile_block(raw: str) -> str | None:
    """The text of the single ``<profile>...</profile>`` block in an LLM reply, or None.

    None when the block is missing, empty, unterminated or appears more than once: a reply that is
    not clearly one profile must not replace the stored one. Tags match case-insensitively.
    """
    return extract_block(raw, "profile")


def guard_rewrite(
    old_text: str,
    candidate: str | None,
    budget: int,
    count: Callable[[str], int],
    overflow_factor: float = 1.2,
) -> RewriteOutcome:
    """Apply the rewrite guards: a bad block keeps the old profile, Pinned survives, size is capped.

    A stale profile beats one lost to a bad generation, pinned instructions must not be edited away
    by the model, and a rewrite far over budget is cut back to the budget by dropping whole trailing
    sections (never Pinned) rather than by truncating text mid-line.
    """
    if candidate is None:
        return _keep(old_text, "kept previous profile: block was missing or malformed")
    if not candidate.strip():
        return _keep(old_text, "kept previous profile: block was empty")
    if contains_tag(candidate, ["profile"]):
        return _keep(old_text, "kept previous profile: block still contained <profile> tags")

    notes: list[str] = []
    old_pinned = [s for s in parse(old_text).sections if _is_pinned(s.title)]
    new = parse(candidate.replace("\r\n", "\n").strip() + "\n")
    sections = list(new.sections)
    if old_pinned:
        candidate_pinned = [s for s in sections if _is_pinned(s.title)]
        untouched = len(candidate_pinned) == len(old_pinned) and all(
            _same_section(a, b) for a, b in zip(sections, old_pinned, strict=False)
        )
        sections = old_pinned + [s for s in sections if not _is_pinned(s.title)]
        if not untouched:
            notes.append(f"reinstated {_HEADING}{PINNED} from the previous profile")
    text = _assemble(new.preamble, sections)

    total = count(text)
    if total > overflow_factor * budget:
        dropped: list[str] = []
        while count(text) > budget:
            droppable = [i for i, s in enumerate(sections) if not _is_pinned(s.title)]
            if not droppable:
                break
            dropped.insert(0, sections.pop(droppable[-1]).title)
            text = _assemble(new.preamble, sections)
        if dropped:
            notes.append(
                f"dropped sections {', '.join(dropped)} to fit the budget of {budget} tokens "
                f"(the rewrite was {total} tokens)"
            )
        remaining = count(text)
        if remaining > budget:
            notes.append(
                f"still {remaining} tokens after dropping every section except {PINNED}, over "
                f"the budget of {budget}"
            )
    return RewriteOutcome(text=text, applied=True, notes=tuple(notes))


def system_prompt_block(profile_text: str) -> str:
    """The memory block for the cached system-prompt prefix; byte-identical for the same input.

    The profile is fenced between ``<profile>`` lines so its own ``#`` headings cannot be taken for
    the block's structure; profile tags inside it are escaped so the fence cannot be closed early.
    """
    profile = profile_text.replace("\r\n", "\n").strip()
    if profile:
        profile = neutralise(profile, PROMPT_TAGS)
        shown = (
            "Your profile: what you know that should shape most conversations. Keep it current "
            f"with edit_profile.\n<profile>\n{profile}\n</profile>"
        )
    else:
        shown = (
            "Your profile is empty so far. Add what should shape most future conversations with "
            "edit_profile."
        )
    return "\n\n".join(["# Memory", shown, ROUTING_RULE, KNOW_VS_HAPPENED, RECALL_FIRST]) + "\n"


# --- helpers -----------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """Lines with their "\\n" kept; unlike str.splitlines, no other character ends a line."""
    parts = text.split("\n")
    lines = [f"{part}\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _index(doc: ProfileDoc, title: str) -> int | None:
    key = title.strip().casefold()
    for i, section in enumerate(doc.sections):
        if section.title.casefold() == key:
            return i
    return None


def _is_pinned(title: str) -> bool:
    return title.strip().casefold() == PINNED.casefold()


def _split_body(body: str) -> tuple[list[str], str]:
    """Content lines (without "\\n") and the trailing blank lines, which are kept verbatim."""
    chunks = _lines(body)
    end = len(chunks)
    while end and not chunks[end - 1].strip():
        end -= 1
    return [chunk.removesuffix("\n") for chunk in chunks[:end]], "".join(chunks[end:])


def _join_body(lines: list[str], gap: str) -> str:
    return "".join(f"{line}\n" for line in lines) + gap


def _separated(body: str) -> str:
    """The body ending in at least one blank line, as a section followed by another should."""
    lines, gap = _split_body(body)
    if not gap.endswith("\n"):
        gap += "\n"
    return _join_body(lines, gap)


def _trimmed(body: str) -> str:
    """The body without trailing blank lines, as the last section of a canonical document."""
    return _join_body(_split_body(body)[0], "")


def _same_section(a: Section, b: Section) -> bool:
    return a.title == b.title and _split_body(a.body)[0] == _split_body(b.body)[0]


def _assemble(preamble: str, sections: list[Section]) -> str:
    """Serialise sections in a new order with canonical separators between them."""
    fixed = [Section(s.title, _separated(s.body)) for s in sections[:-1]]
    if sections:
        fixed.append(Section(sections[-1].title, _trimmed(sections[-1].body)))
    return serialise(ProfileDoc(preamble, tuple(fixed)))


def _with_body(doc: ProfileDoc, index: int, body: str) -> ProfileDoc:
    sections = list(doc.sections)
    sections[index] = Section(sections[index].title, body)
    return ProfileDoc(doc.preamble, tuple(sections))


def _insert(doc: ProfileDoc, new: Section, *, top: bool) -> ProfileDoc:
    """Add a section first or last, with a blank line between it and its neighbours."""
    preamble = doc.preamble
    sections = list(doc.sections)
    if top:
        if sections:
            new = Section(new.title, _separated(new.body))
        if preamble:
            preamble = _separated(preamble)
        sections.insert(0, new)
    else:
        if sections:
            sections[-1] = Section(sections[-1].title, _separated(sections[-1].body))
        elif preamble:
            preamble = _separated(preamble)
        sections.append(new)
    return ProfileDoc(preamble, tuple(sections))


def _content_lines(content: str) -> list[str]:
    """The lines to write, refusing content that would break the document's structure."""
    lines = [line.rstrip() for line in content.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    for line in lines:
        if line.startswith(_HEADING):
            raise ValidationError(
                f"content line {line!r} is a '## ' heading, which would start another section: "
                "edit one section at a time and pass its title as section (use '### ' for a "
                "sub-heading)."
            )
    if contains_tag(content, ["profile"]):
        raise ValidationError(
            "content contains a <profile> or </profile> tag: those delimit the profile in the "
            "system prompt, so leave them out."
        )
    return lines


NEW_SECTION_BULLET = "- item"  # the format an append gives a section that does not exist yet


def _match_format(existing: list[str], new: list[str]) -> list[str]:
    """Make plain new lines bullets when the section is a bullet list (its last line decides)."""
    last = next((line for line in reversed(existing) if line.strip()), "")
    bullet = _BULLET.match(last)
    if bullet is None:
        return new
    marker = bullet.group(1)
    out: list[str] = []
    for line in new:
        if not line.strip():
            continue  # a blank line would split the list in two
        if line[0].isspace() or line.startswith("#"):
            out.append(line)  # continuation of the previous item, or a heading: keep as written
        elif _BULLET.match(line):
            out.append(f"{marker} {line[2:]}")
        elif _LIST_ITEM.match(line):
            out.append(line)
        else:
            out.append(f"{marker} {line}")
    return out


def _norm(line: str) -> str:
    """A line as remove_line compares it: trimmed, without one leading '- ' or '* ' bullet."""
    stripped = line.strip()
    if stripped.startswith(("- ", "* ")):
        stripped = stripped[2:].strip()
    return stripped


def _holds(lines: list[str], new: list[str]) -> bool:
    """Whether every non-blank line of ``new`` is already among ``lines``: compared as
    ``remove_line`` compares, and also ignoring case and runs of spaces (a repeat in other
    capitals is the same fact, not a line to add)."""
    held = {_same(line) for line in lines}
    return all(_same(line) in held for line in new if line.strip())


def _same(line: str) -> str:
    return " ".join(_norm(line).split()).casefold()


def _remove_lines(section: Section, content: str) -> str:
    lines, gap = _split_body(section.body)
    normed = [_norm(line) for line in lines]
    targets = [line for line in content.split("\n") if line.strip()]
    for target in targets:
        if _norm(target) not in normed:
            raise _missing_line(section.title, target, lines)
    drop = {_norm(target) for target in targets}
    kept = [line for line, n in zip(lines, normed, strict=True) if n not in drop]
    return _join_body(kept, gap)


def _missing_line(title: str, target: str, lines: list[str]) -> ValidationError:
    shown: dict[str, str] = {}
    for line in lines:
        if line.strip():
            shown.setdefault(_norm(line), line.strip())
    where = f"No line matching {target.strip()!r} in section {title!r}"
    if not shown:
        return ValidationError(f"{where}: the section has no lines to remove.")
    closest = difflib.get_close_matches(_norm(target), list(shown), n=3, cutoff=0.0)
    return ValidationError(
        f"{where} (lines are compared trimmed, ignoring a leading '- ' or '* ', case-sensitively). "
        f"Closest lines: {', '.join(repr(shown[c]) for c in closest)}. Pass one of them as content."
    )


def _missing_section(doc: ProfileDoc, title: str) -> ValidationError:
    if not doc.sections:
        return ValidationError(
            f"Section {title!r} does not exist: the profile has no sections yet."
        )
    titles = ", ".join(repr(s.title) for s in doc.sections)
    return ValidationError(f"Section {title!r} does not exist. Existing sections: {titles}.")


def _keep(old_text: str, note: str) -> RewriteOutcome:
    return RewriteOutcome(text=old_text, applied=False, notes=(note,))
