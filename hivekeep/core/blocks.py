"""Tagged blocks in LLM text: find exactly one, and keep untrusted text from forging any.

The maintenance call answers in ``<archive>`` and ``<profile>`` blocks, and the system prompt
fences the profile in ``<profile>`` tags. Text that hivekeep did not write (conversation content,
a profile edited by a model) goes through ``neutralise`` before it is placed inside a prompt, so it
cannot open or close a block; a reply is trusted only when it holds exactly one well-formed block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache


@cache
def tag_pattern(tag: str) -> re.Pattern[str]:
    """Opening or closing ``tag``, case-insensitive, tolerating spaces inside the brackets."""
    return re.compile(rf"<\s*/?\s*{re.escape(tag)}\s*>", re.IGNORECASE)


def extract_block(raw: str, tag: str) -> str | None:
    """The stripped text of the single ``<tag>...</tag>`` block in ``raw``, or None.

    None when the block is missing, empty, unterminated, reversed or appears more than once: a
    reply that is not clearly one block must not be acted on.
    """
    matches = list(tag_pattern(tag).finditer(raw))
    opens = [m for m in matches if "/" not in m.group(0)]
    closes = [m for m in matches if "/" in m.group(0)]
    if len(opens) != 1 or len(closes) != 1 or closes[0].start() < opens[0].end():
        return None
    inner = raw[opens[0].end() : closes[0].start()].strip()
    return inner or None


def contains_tag(text: str, tags: Iterable[str]) -> bool:
    return any(tag_pattern(tag).search(text) for tag in tags)


def neutralise(text: str, tags: Iterable[str]) -> str:
    """``text`` with every opening or closing tag of ``tags`` escaped (``&lt;...&gt;``)."""
    for tag in tags:
        text = tag_pattern(tag).sub(
            lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), text
        )
    return text
