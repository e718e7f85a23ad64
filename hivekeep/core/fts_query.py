"""Building FTS5 match expressions from free text, safely.

User text never reaches FTS5 syntax: the query is split into word tokens and each one is emitted
as a quoted string with a prefix star (``"term"*``), so ``AND``, ``NEAR(``, ``*``, ``^`` and
quotes are just words or nothing. Stopwords are dropped unless nothing else is left; two-letter
terms such as "AI" or "Go" are kept. A query yields an AND expression (every term) and an OR
expression (any term), so the search can ask for the strict match first and fill from the loose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "near",
    ]
)


@dataclass(frozen=True)
class FtsQuery:
    """The two expressions for one query; both empty when the text has no searchable word."""

    terms: tuple[str, ...]
    all_terms: str  # every term must match
    any_term: str  # at least one term must match

    def __bool__(self) -> bool:
        return bool(self.terms)


def terms(text: str) -> tuple[str, ...]:
    """Distinct lowercased search terms, stopwords removed unless they are all there is."""
    words: list[str] = []
    for word in _WORD.findall(text.casefold()):
        word = word.strip("_")
        if word and word not in words:
            words.append(word)
    content = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return tuple((content or words)[:MAX_TERMS])


def fts5_match(words: Sequence[str], *, any_term: bool = False) -> str:
    """An FTS5 expression matching every word (or any, with ``any_term``) as a quoted prefix.

    Each word is quoted (an inner ``"`` doubled), so no word is ever FTS5 syntax; a word without
    a letter or digit is left out (it could match nothing).

    >>> fts5_match(["lisbon", "flat"])
    '"lisbon"* AND "flat"*'
    """
    if isinstance(words, str):
        raise TypeError("fts5_match takes a sequence of words, not one string")
    quoted = ['"' + w.replace('"', '""') + '"*' for w in words if any(c.isalnum() for c in w)]
    return (" OR " if any_term else " AND ").join(quoted)


def build(text: str) -> FtsQuery:
    """FTS5 expressions for ``text``: quoted prefix terms joined by AND, and by OR."""
    found = terms(text)
    return FtsQuery(found, fts5_match(found), fts5_match(found, any_term=True))
