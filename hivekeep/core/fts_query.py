"""Building FTS5 match expressions from free text, safely.

User text never reaches FTS5 syntax: the query is split into word tokens and each one is emitted
as a quoted string with a prefix star (``"term"*``), so ``AND``, ``NEAR(``, ``*``, ``^`` and
quotes are just words or nothing. Stopwords are dropped unless nothing else is left; two-letter
terms such as "AI" or "Go" are kept. A query yields an AND expression (every term) and an OR
expression (any term), so the search can ask for the strict match first and fill from the loose.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")

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
    """Distinct lowercased search terms, stopwords removed unless they are all there is.

    An ordinal number becomes its digits ("8th" -> "8"): as a prefix, "8" matches both "8" (the
    indexed creation date says "8 December 2023") and "8th" in a memory's text; "8th" matches
    only the latter.
    """
    words: list[str] = []
    for word in _WORD.findall(text.casefold()):
        word = word.strip("_")
        ordinal = _ORDINAL.fullmatch(word)
        if ordinal:
            word = ordinal.group(1)
        if word and word not in words:
            words.append(word)
    content = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return tuple((content or words)[:MAX_TERMS])


def fts5_match(words: Sequence[str], *, any_term: bool = False, prefix: bool = True) -> str:
    """An FTS5 expression matching every word (or any, with ``any_term``) as a quoted prefix
    (as a whole word without ``prefix``).

    Each word is quoted (an inner ``"`` doubled), so no word is ever FTS5 syntax; a word without
    a letter or digit is left out (it could match nothing).

    >>> fts5_match(["lisbon", "flat"])
    '"lisbon"* AND "flat"*'
    """
    if isinstance(words, str):
        raise TypeError("fts5_match takes a sequence of words, not one string")
    star = "*" if prefix else ""
    quoted = ['"' + w.replace('"', '""') + '"' + star for w in words if any(c.isalnum() for c in w)]
    return (" OR " if any_term else " AND ").join(quoted)


def build(text: str) -> FtsQuery:
    """FTS5 expressions for ``text``: quoted prefix terms joined by AND, and by OR."""
    found = terms(text)
    return FtsQuery(found, fts5_match(found), fts5_match(found, any_term=True))


@dataclass(frozen=True)
class TermSplit:
    """A query's terms split by document frequency (Lucene's CommonTermsQuery, in miniature).

    ``required``: rare terms; a candidate must contain one. ``optional``: common terms, which only
    add to a candidate's score. No required term means every term is common: the caller requires
    them all.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...]


def split_common(words: Sequence[str], common: Collection[str]) -> TermSplit:
    """``words`` in ``common`` become optional, the others required; the order is kept in both.

    >>> split_common(["lisbon", "flat"], {"flat"})
    TermSplit(required=('lisbon',), optional=('flat',))
    """
    if isinstance(words, str):
        raise TypeError("split_common takes a sequence of words, not one string")
    return TermSplit(
        tuple(w for w in words if w not in common), tuple(w for w in words if w in common)
    )


def common_terms_match(split: TermSplit) -> str:
    """An FTS5 expression matching rows with any required term, scored by every term.

    FTS5 has no optional operator, so the common terms join an OR that the required ones repeat:
    ``(r1 OR r2) AND (r1 OR r2 OR c1)`` matches what ``r1 OR r2`` matches, and bm25 adds the
    common terms' part (the required terms count twice, which keeps them ahead). With no rare
    term every term is required (the AND), as in Elasticsearch's common terms query.

    Common terms match as whole words, without the prefix star: a frequent word's prefix expands
    to many indexed terms, each merged at every occurrence (an AND of four frequent words took 8
    ms with stars and 2 ms without at 100k memories), for little: the word is frequent already.

    >>> common_terms_match(TermSplit(("lisbon",), ("flat",)))
    '("lisbon"*) AND ("lisbon"* OR "flat")'
    >>> common_terms_match(TermSplit((), ("red", "car")))
    '"red" AND "car"'
    """
    if not split.required:
        return all_terms_match(split)
    rare = fts5_match(split.required, any_term=True)
    if not split.optional:
        return rare
    return f"({rare}) AND ({rare} OR {fts5_match(split.optional, any_term=True, prefix=False)})"


def all_terms_match(split: TermSplit) -> str:
    """Every term, the common ones as whole words (see ``common_terms_match``).

    >>> all_terms_match(TermSplit(("lisbon",), ("flat",)))
    '"lisbon"* AND "flat"'
    """
    parts = [fts5_match(split.required), fts5_match(split.optional, prefix=False)]
    return " AND ".join(part for part in parts if part)
