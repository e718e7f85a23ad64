"""Which memory subjects a query names: the signal behind subject-aware recall.

A memory's ``subject`` is the person or thing it is about ("Ann", "Ann Lee", "the garden"). A
query names a subject when its words contain the subject's words, compared after normalisation:
case and accents folded, possessives stripped ("Ann's", "James'", also with a typographic
apostrophe). A multi-word subject is also named by its first word alone ("Ann" names "Ann Lee")
unless that word is a stopword ("the garden" is not named by "the"). Pure functions over plain
strings; no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

from hivekeep.core.fts_query import STOPWORDS

Key = TypeVar("Key", bound=Hashable)

_APOSTROPHE = "\u2019"
_WORD = re.compile(r"[\w'\u2019]+", re.UNICODE)


def words(text: str) -> tuple[str, ...]:
    """Normalised words: NFKD without accents, case-folded, possessive endings removed."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    out = []
    for token in _WORD.findall(folded):
        token = token.replace(_APOSTROPHE, "'")
        if token.endswith("'s"):
            token = token[:-2]
        token = token.strip("'")
        if token:
            out.append(token)
    return tuple(out)


@lru_cache(maxsize=4096)  # subjects repeat across recalls; the work is pure
def subject_keys(subject: str) -> tuple[tuple[str, ...], ...]:
    """The word sequences that name ``subject``: all its words, and its first word when it has
    several and the first is not a stopword."""
    full = words(subject)
    if not full:
        return ()
    keys = [full]
    if len(full) > 1 and full[0] not in STOPWORDS and len(full[0]) > 1:
        keys.append(full[:1])
    return tuple(keys)


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def named_subjects(query: str, subjects: Iterable[str | None]) -> set[str]:
    """The subjects (as given) that ``query`` names. Stopword-only subjects are never named."""
    query_words = words(query)
    found: set[str] = set()
    for subject in subjects:
        if not subject or subject in found:
            continue
        keys = subject_keys(subject)
        if not keys or all(w in STOPWORDS for w in keys[0]):
            continue
        if any(_contains(query_words, key) for key in keys):
            found.add(subject)
    return found


def about_named(query: str, ranked: Sequence[Key], subjects: Mapping[Key, str | None]) -> list[Key]:
    """The keys of ``ranked`` (in order) whose subject ``query`` names: the subject list that
    subject-aware recall fuses as a third ranked list."""
    named = named_subjects(query, set(subjects.values()))
    return [key for key in ranked if subjects.get(key) in named] if named else []


def subject_key(subject: str | None) -> str:
    """A subject as the subject filter and dedup compare it: trimmed and case-folded (no subject
    and a blank one are the same)."""
    return (subject or "").strip().casefold()
