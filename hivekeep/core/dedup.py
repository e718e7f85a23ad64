"""When two memories are one fact: the dedup rule of the one write path (SPEC 4.1).

A close vector is not enough: a changed fact ("standup moved to 11am" after "standup at 10am",
"is the CFO" after "is the interim CFO") is almost always a near copy of the fact it replaces. So
two memories are duplicates only when **neither adds anything to the other**: their canonical
tokens (``hivekeep.core.wording``: case, punctuation, formats, spelling and articles erased,
nothing else) are the same, in the same order or in one of the few orders that change no
relation:

- a phrase that says where or when moves as a whole ("On Monday the user meets Anna" / "The user
  meets Anna on Monday"; "works as a nurse at the hospital" / "works at the hospital as a nurse");
- the two sides of an identity swap around a lone "is" when one side is a name, number or date
  ("The user's manager is Priya" / "Priya is the user's manager");
- two single words swap around the text's only "and" or "or" ("French and German").

Every other difference keeps both memories: a dropped or added word (a hedge, a qualifier, a
quantifier), a symbol, a word form, a swap around a possessive or "then". The comparison is
symmetric and needs no embedder, so a vector's cosine only finds the candidates. Losing a fact is
far worse than storing a restatement twice; the maintenance call consolidates restatements later.

The rule will still be wrong somewhere, so a "same fact" verdict never hides a write (issue 33):
``DedupRule.judge`` merges into the writer's own memory by rewording it (the write's text becomes
current, the old one a version), into another agent's memory only by its exact text, and says
which (``Merge``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from hivekeep.core.text import wording
from hivekeep.core.wording import (
    CLAUSE_MARKERS,
    CONJUNCTIONS,
    COPULAS,
    MONTHS,
    PREPOSITIONS,
    QUANTIFIERS,
    TEMPORAL,
    WEEKDAYS,
    Kind,
    Token,
    canonical,
)

DEDUP_THRESHOLD = 0.80  # bundled model: "2,000 euros" / "2000 EUR" is 0.84, "3 June" forms 0.88
SIMILAR_THRESHOLD = 0.60  # MiniLM: "lives in Lisbon" / "lives in Berlin" is 0.61
MAX_SIMILAR = 3
NEIGHBOURS = 8  # candidates the store hands to the rule per write (the closest visible ones)
MAX_REORDERED = 120  # longer texts must match in order (the order checks are quadratic)

_CONTENT = (Kind.WORD, Kind.NAME, Kind.NUMBER, Kind.DATE)
_ENTITY = (Kind.NAME, Kind.NUMBER, Kind.DATE)
_TIME_WORDS = TEMPORAL - QUANTIFIERS - {"this", "last", "next"}
_CONNECTIVES = CONJUNCTIONS | QUANTIFIERS
_IDENTITY = frozenset({"is", "was", "are", "were"})
_NOT_ADVERBIAL = frozenset({"of", "like", "unlike", "than"})


def differences(first: str, second: str) -> list[str]:
    """Why two texts are different facts, as short reasons; empty: they say the same thing.

    >>> differences("Standup is at 11am.", "standup is at 11 AM")
    []
    >>> differences("Tom is the interim CFO.", "Tom is the CFO.")
    ['only in the first: interim']
    """
    a, b = canonical(first), canonical(second)
    return _differences(a, b)


def same_fact(first: str, second: str) -> bool:
    """True when neither text adds anything to the other (see the module)."""
    return not differences(first, second)


def _differences(a: Sequence[Token], b: Sequence[Token]) -> list[str]:
    keys_a, keys_b = Counter(t.key for t in a), Counter(t.key for t in b)
    if keys_a != keys_b:
        only_a = sorted((keys_a - keys_b).elements())
        only_b = sorted((keys_b - keys_a).elements())
        reasons = [f"only in the first: {' '.join(only_a)}"] if only_a else []
        return reasons + ([f"only in the second: {' '.join(only_b)}"] if only_b else [])
    if [t.key for t in a] == [t.key for t in b]:
        pairing = list(range(len(a)))
    else:
        found = _reordering(a, b) if len(a) <= MAX_REORDERED else None
        if found is None or _reordering(b, a) is None:
            return ["order"]
        pairing = found
    clashes = [
        f"article: {t.article}/{b[j].article}"
        for t, j in zip(a, pairing, strict=True)
        if t.article and b[j].article and t.article != b[j].article
    ]
    return sorted(set(clashes))


def _reordering(a: Sequence[Token], b: Sequence[Token]) -> list[int] | None:
    """Where each token of ``a`` sits in ``b``, when ``b`` is ``a`` in an order that changes no
    relation (see the module); None otherwise."""
    if _clauses(a) or _clauses(b):
        return None
    kinds = _kinds(a, b)
    return _moved_phrase(a, b, kinds) or _identity_swap(a, b, kinds) or _coordinates(a, b, kinds)


def _clauses(tokens: Sequence[Token]) -> bool:
    """More than one clause, as far as words show it: a phrase that moves may then leave one
    verb for another ("the user said yesterday that Tom left" / "... that Tom left yesterday";
    "promised on Monday to call" / "promised to call on Monday"), so no order may change."""
    return (
        any(
            t.key in CLAUSE_MARKERS or (t.key == "to" and _bare(tokens, i + 1))
            for i, t in enumerate(tokens)
        )
        or sum(t.key in CONJUNCTIONS for t in tokens) > 1
    )


def _bare(tokens: Sequence[Token], at: int) -> bool:
    """A lower-case word without an article: after "to" it may be a verb ("to call")."""
    return at < len(tokens) and tokens[at].kind is Kind.WORD and tokens[at].article is None


def _kinds(a: Sequence[Token], b: Sequence[Token]) -> dict[str, set[Kind]]:
    """Every kind each key has in either text ("Friday" is a word at the start of a sentence)."""
    kinds: dict[str, set[Kind]] = {}
    for token in (*a, *b):
        kinds.setdefault(token.key, set()).add(token.kind)
    return kinds


def _moved_phrase(
    a: Sequence[Token], b: Sequence[Token], kinds: dict[str, set[Kind]]
) -> list[int] | None:
    """``b`` is ``a`` with two neighbouring blocks swapped, one of them a phrase of place or
    time, and no word that binds across a block's edge ("'s", "then", "not", "only", ...)."""
    keys_a, keys_b = [t.key for t in a], [t.key for t in b]
    size = len(a)
    first = next(i for i in range(size) if keys_a[i] != keys_b[i])
    last = next(i for i in reversed(range(size)) if keys_a[i] != keys_b[i])
    for start in range(first, max(-1, first - 4), -1):
        for end in range(last, min(size, last + 4)):
            width = end + 1 - start
            for cut in range(1, width):
                left, right = keys_a[start : start + cut], keys_a[start + cut : end + 1]
                if keys_b[start : end + 1] != right + left:
                    continue
                before = a[start - 1] if start else None
                after = a[end + 1] if end + 1 < size else None
                outside = [*a[:start], *a[end + 1 :]]
                if any(t.key in CONJUNCTIONS for t in outside):
                    continue  # "called Anna and left on Monday": which verb has the time?
                if _movable(a[start : start + cut], a[start + cut : end + 1], before, after, kinds):
                    moved = [
                        *range(start + width - cut, end + 1),
                        *range(start, start + width - cut),
                    ]
                    return [*range(start), *moved, *range(end + 1, size)]
    return None


def _movable(
    left: Sequence[Token],
    right: Sequence[Token],
    before: Token | None,
    after: Token | None,
    kinds: dict[str, set[Kind]],
) -> bool:
    """Two phrases of time or place trade places ("at 10am on Monday", "as a nurse at the
    hospital"), a phrase of time moves to the other end of the whole sentence ("On Monday the
    user meets Anna"), or a word of time ("now", "every morning") moves inside it. A phrase of
    place moved to the other end or inside a sentence may change what it describes ("the sister
    in Lisbon is a doctor" / "the sister is a doctor in Lisbon"; "the man with the dog"), so
    that is not allowed."""
    whole = before is None and after is None
    for block in (left, right):
        if any(t.key in CONJUNCTIONS for t in block) and not _adverbial(block):
            return False  # a conjunction may only travel inside a phrase of time or place
    if not (
        (_adverbial(left) and _adverbial(right))
        or (whole and (_when(left) or _when(right)))
        or _timely(left)
        or _timely(right)
    ):
        return False
    ends_are_content = all(_is(block[-1], _CONTENT, kinds) for block in (left, right))
    starts_bind_back = any(
        block[0].kind in (Kind.POSSESSIVE, Kind.SYMBOL) or block[0].key in CONJUNCTIONS
        for block in (left, right)
    )
    return (
        ends_are_content
        and not starts_bind_back
        and (before is None or _is(before, _CONTENT, kinds) or before.key in COPULAS)
        and (after is None or _is(after, _CONTENT, kinds) or after.key in PREPOSITIONS)
    )


def _adverbial(block: Sequence[Token]) -> bool:
    """A phrase of place or time: a preposition and what it governs, or words of time ("of",
    "like", "than" phrases belong to a noun or a comparison, not to the sentence)."""
    return (
        block[0].key in PREPOSITIONS - _NOT_ADVERBIAL and len(block) > 1 and not _bare(block, 1)
    ) or _timely(block)


def _when(block: Sequence[Token]) -> bool:
    """A phrase of time: words of time, or a preposition governing them ("in May 2024", "on
    Monday", "at 10am", "in 2020")."""
    if _timely(block):
        return True
    rest = block[1:]
    return (
        _adverbial(block)
        and bool(rest)
        and all(_timely([t]) or t.key in TEMPORAL or _year(t) for t in rest)
    )


def _year(token: Token) -> bool:
    return token.kind is Kind.NUMBER and token.key.isdigit() and 1000 <= int(token.key) <= 2999


def _timely(block: Sequence[Token]) -> bool:
    """Every word tells when, and one of them is a time ("every morning", "now", "Monday")."""
    return all(
        t.key in TEMPORAL or t.kind is Kind.DATE or _clock(t) or _calendar(t.key) for t in block
    ) and any(
        t.key in _TIME_WORDS or t.kind is Kind.DATE or _clock(t) or _calendar(t.key) for t in block
    )


def _clock(token: Token) -> bool:
    return token.kind is Kind.NUMBER and token.key.endswith(("am", "pm"))


def _calendar(key: str) -> bool:
    return key in WEEKDAYS or key in MONTHS or key.removesuffix("s") in WEEKDAYS


def _identity_swap(
    a: Sequence[Token], b: Sequence[Token], kinds: dict[str, set[Kind]]
) -> list[int] | None:
    """``X is Y`` / ``Y is X`` with one side a name, number or date, and nothing on either side
    that makes the sentence more than an identity ("All cats are animals" is not one)."""
    copulas = [i for i, t in enumerate(a) if t.key in COPULAS]
    if len(copulas) != 1 or a[copulas[0]].key not in _IDENTITY:
        return None
    at = copulas[0]
    subject, complement = a[:at], a[at + 1 :]
    if not subject or not complement:
        return None
    keys = [t.key for t in b]
    if keys != [t.key for t in (*complement, a[at], *subject)]:
        return None
    for side in (subject, complement):
        if not _is(side[-1], _CONTENT, kinds) or any(
            t.key in _CONNECTIVES or t.key in COPULAS or t.kind is Kind.SYMBOL for t in side
        ):
            return None
    if not any(
        len(side) <= 4 and all(_is(t, _ENTITY, kinds) for t in side)
        for side in (subject, complement)
    ):
        return None
    return [*range(len(complement) + 1, len(a)), len(complement), *range(len(complement))]


def _coordinates(
    a: Sequence[Token], b: Sequence[Token], kinds: dict[str, set[Kind]]
) -> list[int] | None:
    """Two names or numbers swapped around the text's only "and" or "or": "French and German".
    Not other words: "married and divorced" tells an order that "divorced and married" does not.
    """
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.key != y.key]
    if len(changed) != 2 or changed[1] - changed[0] != 2:
        return None
    left, right = changed
    if a[left + 1].key not in ("and", "or") or sum(t.key in CONJUNCTIONS for t in a) != 1:
        return None
    if not (_is(a[left], _ENTITY, kinds) and _is(a[right], _ENTITY, kinds)):
        return None
    around = [a[left - 1] if left else None, a[right + 1] if right + 1 < len(a) else None]
    if any(t is not None and t.kind in (Kind.POSSESSIVE, Kind.SYMBOL) for t in around):
        return None
    pairing = list(range(len(a)))
    pairing[left], pairing[right] = right, left
    return pairing


def _is(token: Token, wanted: tuple[Kind, ...], kinds: dict[str, set[Kind]]) -> bool:
    """The token is of a wanted kind in either text, and never a function word or symbol."""
    seen = kinds.get(token.key, {token.kind})
    return bool(seen & set(wanted)) and not seen & {Kind.FUNCTION, Kind.POSSESSIVE, Kind.SYMBOL}


class Merge(StrEnum):
    """What a write judged one with an existing memory does to it (SPEC 4.1: a write is never
    hidden, so only an exact repeat leaves the memory's text as it was)."""

    SAME = "same"  # an exact repeat of its current text: nothing changes
    REWORD = "reword"  # the write's text becomes current; the previous text stays a version
    OLDER = "older"  # a dated write older than the current text: kept as a version only


@dataclass(frozen=True)
class Candidate:
    """A visible memory close to the one being written, as the store found it."""

    id: int
    content: str
    similarity: float  # cosine
    own: bool = True  # written by the writer: the only memories a write may reword
    shared: bool = False
    stated_at: str | None = None  # when its current text was stated (its ``updated_at``)


@dataclass(frozen=True)
class Writing:
    """The write being judged, as the rule needs it."""

    content: str
    shared: bool = False
    stated_at: str | None = None  # a dated write (import, bootstrap, ``created_at``): its date


@dataclass(frozen=True)
class Verdict:
    duplicate_of: int | None  # the existing memory the write merges into (no new memory)
    similar: tuple[int, ...]  # close neighbours worth showing (at most MAX_SIMILAR, closest first)
    merge: Merge | None = None  # with ``duplicate_of``: what the write does to that memory


@dataclass(frozen=True)
class DedupRule:
    """The rule over a store's candidates (SPEC 4.1). An exact repeat (``wording``) of a memory
    that covers the write's scope adds nothing. Else two checks must agree before a write merges:
    the texts say the same fact (``same_fact``) and their vectors are close (cosine ≥
    ``threshold``); and only into a memory the writer owns, of the write's scope, which then
    takes the new wording (an older dated write is kept as its version instead). A wrong "same
    fact" thus never hides what was written. ``similar_threshold`` is the cosine from which a
    stored memory's neighbours are listed as ``similar``."""

    threshold: float = DEDUP_THRESHOLD
    similar_threshold: float = SIMILAR_THRESHOLD

    @property
    def floor(self) -> float:
        """The lowest similarity at which a candidate matters at all."""
        return min(self.threshold, self.similar_threshold)

    def judge(self, write: Writing | str, candidates: Sequence[Candidate]) -> Verdict:
        """The memory the write merges into and how, else the neighbours to show."""
        if isinstance(write, str):
            write = Writing(write)
        ranked = sorted(candidates, key=lambda c: (-c.similarity, c.id))
        text = wording(write.content)
        for candidate in ranked:  # a shared memory covers a private write, not the reverse
            if wording(candidate.content) == text and (candidate.shared or not write.shared):
                return Verdict(candidate.id, (), Merge.SAME)
        tokens = canonical(write.content)
        for candidate in ranked:
            if (
                candidate.own
                and candidate.shared == write.shared
                and candidate.similarity >= self.threshold
                and not _differences(tokens, canonical(candidate.content))
            ):
                older = (
                    write.stated_at is not None
                    and candidate.stated_at is not None
                    and write.stated_at < candidate.stated_at
                )
                return Verdict(candidate.id, (), Merge.OLDER if older else Merge.REWORD)
        close = list(dict.fromkeys(c.id for c in ranked if c.similarity >= self.similar_threshold))
        return Verdict(None, tuple(close[:MAX_SIMILAR]))
