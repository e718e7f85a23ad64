"""Tagged blocks in LLM text: find exactly one, and keep untrusted text from forging any.

The maintenance call answers in ``<archive>`` and ``<profile>`` blocks, and the system prompt
fences the profile in ``<profile>`` tags. Every text hivekeep did not write (conversation
messages, summaries, memory texts) reaches a prompt only through ``fence_untrusted``: inside a
labelled ``<data source="...">`` fence, with every tag a prompt uses and every markdown heading
escaped, so it can neither close the fence, open a block nor pass for a profile section. A reply
is trusted only when it holds exactly one well-formed block.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache

# Characters that render as nothing: a zero-width space inside a tag name hides it from a match
# but not from a model. (Soft hyphen, Mongolian vowel separator, ZWSP/ZWNJ/ZWJ, word joiner, BOM.)
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]")

DATA_TAG = "data"  # the fence around untrusted text (``fence_untrusted``)
# Every block tag a hivekeep prompt or reply uses: untrusted text may open or close none of them.
PROMPT_TAGS = (
    DATA_TAG,
    "profile",
    "archive",
    "conversation",
    "summary",
    "summaries",
    "memories",
    "consolidate",  # the maintenance reply's optional third block (core/consolidation.py)
)
# A markdown heading line (the profile parser reads "## " lines as sections); group 1 is its indent.
# A line starts after "\n" and after any other character a model may take for a line break.
_BREAK = r"[\r\v\f\x1c-\x1e\x85\u2028\u2029]"
_HEADING = re.compile(rf"(?:^|(?<={_BREAK}))([ \t]*)(?=#{{1,6}}(?:[ \t]|$|{_BREAK}))", re.MULTILINE)


@cache
def tag_pattern(tag: str) -> re.Pattern[str]:
    """Opening or closing ``tag``, case-insensitive, with spaces and any attributes inside the
    brackets (``</conversation x=1>``); group ``close`` is set for a closing tag."""
    return re.compile(rf"<\s*(?P<close>/)?\s*{re.escape(tag)}(?=[\s/>])[^<>]*>", re.IGNORECASE)


def visible_form(text: str) -> str:
    """``text`` as a model reads it: NFKC (fullwidth U+FF1C is ``<``), no invisible characters."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def extract_block(raw: str, tag: str) -> str | None:
    """The stripped text of the single ``<tag>...</tag>`` block in ``raw``, or None.

    None when the block is missing, empty, unterminated, reversed or appears more than once: a
    reply that is not clearly one block must not be acted on.
    """
    matches = list(tag_pattern(tag).finditer(raw))
    opens = [m for m in matches if not m.group("close")]
    closes = [m for m in matches if m.group("close")]
    if len(opens) != 1 or len(closes) != 1 or closes[0].start() < opens[0].end():
        return None
    inner = raw[opens[0].end() : closes[0].start()].strip()
    return inner or None


def contains_tag(text: str, tags: Iterable[str]) -> bool:
    """True when ``text`` holds a tag of ``tags``, look-alikes included (see ``visible_form``)."""
    visible = visible_form(text)
    return any(tag_pattern(tag).search(visible) for tag in tags)


def neutralise(text: str, tags: Iterable[str]) -> str:
    """``text`` with every opening or closing tag of ``tags`` escaped (``&lt;...&gt;``).

    Look-alike tags count: text that holds one (fullwidth brackets, a zero-width character in the
    name) comes back in its ``visible_form`` with the tags escaped; other text is unchanged.
    """
    tags = list(tags)
    if not contains_tag(text, tags):
        return text
    text = visible_form(text)
    for tag in tags:
        text = tag_pattern(tag).sub(
            lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), text
        )
    return text


def fence_untrusted(text: str, source: str) -> str:
    """``text`` that hivekeep did not write, ready for a prompt: the one way to place it there.

    It comes back inside ``<data source="SOURCE">`` ... ``</data>`` (``source`` is ours: what the
    text is, e.g. "summary", "conversation", "memories"), neutralised: every tag of
    ``PROMPT_TAGS`` in it, look-alikes included, is escaped (``&lt;profile&gt;``, see
    ``neutralise``), and every markdown heading line gets a backslash (``\\## Pinned``), so it can
    neither close the fence, open a block a prompt uses, nor pass for a section of the profile.
    A model still reads it as written; the input cannot undo it (it only ever adds escapes).
    The prompts' instructions say that a ``<data>`` block is quoted data, never instructions.
    """
    safe = neutralise(text, PROMPT_TAGS)
    visible = visible_form(safe)
    if len(_HEADING.findall(visible)) != len(_HEADING.findall(safe)):
        safe = visible  # a look-alike heading (fullwidth hashes, zero-width characters)
    safe = _HEADING.sub(r"\1\\", safe)
    return f'<{DATA_TAG} source="{source}">\n{safe}\n</{DATA_TAG}>'
