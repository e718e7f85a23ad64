"""When a new memory adds nothing: the dedup rule of the one write path (SPEC 4.1).

A close vector match is not enough: a changed fact ("standup moved to 11am" after "standup at
10am") is almost always a near copy of the fact it replaces. So a new memory is a duplicate of
an existing one only when the two are close vectors **and** every salient token of the new text
is already in the existing one:

- numbers (digits, number words, ordinals), times, amounts, dates (weekdays, months), names
  (capitalised words, acronyms), single letters ("room B"), pronouns and prepositions must match
  exactly, after normalising their form ("4th" = "fourth" = "4", "10:00am" = "10 am", "2,000" =
  "2000", "$" = "dollars");
- negations and tense or modal markers ("not", "never", "was", "will", "can") must match in both
  directions: dropping a "not" changes a fact as much as adding one;
- the order around relation words must match ("tea over coffee" is not "coffee over tea");
- other content words match after normalising case, punctuation, inflection and British/American
  spelling; a differing ordinary word is forgiven only when ``words`` (an embedder's word
  similarity) scores it as a synonym of a word it replaced, at ``SYNONYM_THRESHOLD`` or more.

Losing a fact is far worse than storing a restatement twice, so every doubt keeps the memory. The
figures behind the thresholds are in docs/benchmarks.md ("Dedup").
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

WordSimilarity = Callable[[str, str], float]
"""Similarity of two single words in [-1, 1] (cosine of their embeddings)."""

DEDUP_THRESHOLD = 0.90
SIMILAR_THRESHOLD = 0.60  # MiniLM: "lives in Lisbon" / "lives in Berlin" is 0.61
SYNONYM_THRESHOLD = 0.90
MAX_SIMILAR = 3
NEIGHBOURS = 8  # candidates the store hands to the rule per write (the closest visible ones)


class Kind(Enum):
    ENTITY = "entity"  # numbers, dates, names: must match exactly, in the same order
    FUNCTION = "function"  # pronouns, prepositions, relation words: must match exactly
    WORD = "word"  # an ordinary content word: may be forgiven as a synonym
    NEGATION = "negation"
    MARKER = "marker"  # tense / modality
    STOP = "stop"  # a stop word: ignored, but it separates the names and numbers around it


@dataclass(frozen=True)
class Token:
    key: str  # the normalised form compared across texts
    surface: str  # as written, case-folded (what a word similarity is asked about)
    kind: Kind


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _ordered(text: str) -> list[str]:
    return text.split()


_STOPWORDS = _words(
    "a an the is are am be been being do does doing has have having of and that this these those "
    "it its which who whom whose as also very really just so quite currently now there here "
    "then some any each every"
)
_AUXILIARIES = _words("is are was were be been being am has have had get gets got getting")
_NEGATIONS = _words("not no never none nobody nothing nowhere neither nor without")
_MARKERS = _words(
    "was were will would had did could should might must can may shall former formerly "
    "previously anymore already yet still longer ex"
)
# pronouns (who a fact is about), prepositions and relation words (where, when, which way round)
_FUNCTION_WORDS = _words(
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs "
    "in on at near by for about against between among inside outside within through across "
    "behind beside around toward towards via per over under above below before after until "
    "till since from to into onto than versus vs instead rather more less most least or "
    "today tomorrow yesterday tonight weekend weekday"
)
# relation words whose two sides may not swap ("tea over coffee", "from Lisbon to Berlin")
_RELATIONS = _words(
    "over under above below before after until till since from to into than versus vs instead "
    "rather more less"
)
_WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri "
    "sat sun"
)
_MONTHS = _words(
    "january february march april may june july august september october november december jan "
    "feb mar apr jun jul aug sep sept oct nov dec"
)
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        _ordered(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
            "fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "billion": "1000000000",
    "dozen": "12",
    "once": "1",
    "twice": "2",
}
_ORDINAL_WORDS = {
    word: str(value)
    for value, word in enumerate(
        _ordered(
            "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
            "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
            "twentieth"
        )
    )
} | {"thirtieth": "30"}
_CURRENCIES = {
    "$": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "usd": "usd",
    "€": "eur",
    "euro": "eur",
    "euros": "eur",
    "eur": "eur",
    "£": "gbp",
    "gbp": "gbp",
    "¥": "jpy",
    "yen": "jpy",
    "%": "percent",
    "percent": "percent",
}
# naming verbs are one closed class that a word embedding cannot tell from antonyms at a safe
# threshold (measured with MiniLM: "named"/"called" 0.55, "husband"/"wife" 0.87)
_EQUIVALENT_KEYS = {"call": "nam"}
_NAMING = _words("called named")
_NEGATING_PREFIXES = ("dis", "un", "non", "in", "im")

_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "can not"),
        (r"\bshan't\b", "shall not"),
        (r"\bcannot\b", "can not"),
        (r"n't\b", " not"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"'(?:s|re|ve|m)\b", ""),
        (r"(?<=s)'(?=\s|$)", ""),
    )
)
_TOKEN = re.compile(r"[$€£¥%]|[^\W_]+(?:[.,:'-][^\W_]+)*")
_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?(am|pm|a\.m|p\.m)?$")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def tokens(text: str) -> list[Token]:
    """The text's tokens in order, stop words left out, each with its normalised key and kind."""
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    raw = [m.group().casefold() for m in _TOKEN.finditer(text)]
    capitals = {m.group().casefold() for m in _TOKEN.finditer(text) if _is_capitalised(m.group())}
    found: list[Token] = []
    index = 0
    while index < len(raw):
        word = raw[index]
        following = raw[index + 1] if index + 1 < len(raw) else ""
        if _TIME.match(word) and following in ("am", "pm", "a.m", "p.m"):
            word += following  # "10 am" is "10am"
            index += 1
        found.extend(_classify(word, word in capitals, following))
        if (
            found
            and found[-1].kind in (Kind.WORD, Kind.ENTITY)
            and _is_past(word, raw[max(0, index - 2) : index])
        ):
            found.append(Token("past", word, Kind.MARKER))
        index += 1
    return found


_CONTENT = (Kind.ENTITY, Kind.FUNCTION, Kind.WORD)


def _is_past(word: str, before: list[str]) -> bool:
    """A verb in the past tense ("worked" after "works"), not a participle ("is called")."""
    return (
        len(word) >= 5
        and word.endswith("ed")
        and word not in _NAMING  # "a dog called Rex": a participle
        and not _AUXILIARIES.intersection(before)
    )


def _is_capitalised(word: str) -> bool:
    return any(ch.isupper() for ch in word)


def _classify(word: str, capitalised: bool, following: str) -> list[Token]:
    if word in _STOPWORDS:
        return [Token(word, word, Kind.STOP)]
    if word in _NEGATIONS:
        return [Token("not", word, Kind.NEGATION)]
    if (word == "used" and following == "to") or (word in _MARKERS and word != "may"):
        return [Token(word, word, Kind.MARKER)]
    if word == "may" and not following[:1].isdigit():  # "May 2024" is a month
        return [Token(word, word, Kind.MARKER)]
    number = _number(word)
    if number is not None:
        return [Token(number, word, Kind.ENTITY)]
    if word in _CURRENCIES:
        return [Token(_CURRENCIES[word], word, Kind.ENTITY)]
    if "-" in word and all(part in _NUMBER_WORDS for part in word.split("-")):
        total = sum(int(_NUMBER_WORDS[part]) for part in word.split("-"))
        return [Token(str(total), word, Kind.ENTITY)]
    joined = word.replace("-", "").replace("'", "")
    if word in _WEEKDAYS or word in _MONTHS:
        return [Token(word, word, Kind.ENTITY)]
    if word in _FUNCTION_WORDS:
        return [Token(word, word, Kind.FUNCTION)]
    key = _stem(_american(joined))
    kind = Kind.ENTITY if len(joined) == 1 or capitalised else Kind.WORD
    return [Token(_EQUIVALENT_KEYS.get(key, key), word, kind)]


def _number(word: str) -> str | None:
    """The canonical form of a number, ordinal, time or amount; None for anything else."""
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if word in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[word]
    if not any(ch.isdigit() for ch in word):
        return None
    if _THOUSANDS.match(word):
        word = word.replace(",", "")
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return str(int(ordinal.group(1)))
    time = _TIME.match(word)
    if time:
        hour, minutes, half = time.groups()
        minutes = "" if minutes in (None, "00") else f":{minutes}"
        return f"{int(hour)}{minutes}{(half or '').replace('.', '')}"
    if word.isdigit():
        return str(int(word))
    return word  # codes, versions, dates in digits: compared as written


def _american(word: str) -> str:
    """One spelling for British/American variants: colour/color, organise/organize, centre."""
    if len(word) >= 6 and "our" in word[1:] and not word.startswith(("your", "hour", "four")):
        word = word[0] + word[1:].replace("our", "or")
    word = re.sub(r"(?<=[a-z]{2})is(e|ed|es|ing|ation)$", r"iz\1", word)
    word = re.sub(r"(?<=[a-z]{2})ys(e|ed|es|ing)$", r"yz\1", word)
    word = re.sub(r"(?<=[a-z]{3})tre(s?)$", r"ter\1", word)
    word = re.sub(r"(?<=[a-z]{2}e)ll(ed|ing|er)$", r"l\1", word)  # travelled, cancelling
    return re.sub(r"(?<=[a-z]{3})ogue(s?)$", r"og\1", word)


def _stem(word: str) -> str:
    """A light inflection stripper: the same key for like/likes/liked/liking, plan/planned."""
    if not word.isalpha() or len(word) <= 3:
        return word
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("sses", "ss")):
        if word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    for suffix in ("ing", "ed", "es", "s"):
        if (
            word.endswith(suffix)
            and len(word) - len(suffix) >= 3
            and not (suffix == "s" and word.endswith(("ss", "us", "is")))
        ):
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # planned -> plan, travelled -> travel
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


@dataclass(frozen=True)
class _Text:
    tokens: list[Token]
    keys: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "keys", frozenset(t.key for t in self.tokens if t.kind is not Kind.STOP)
        )


def _expand_negating_prefixes(tokens_: list[Token], other_keys: frozenset[str]) -> list[Token]:
    """ "dislikes" next to "does not like" reads as "not" + "like" (only when the other text has
    the bare word: "unhappy" then differs from "happy" by a negation, as it should)."""
    expanded: list[Token] = []
    for token in tokens_:
        if token.kind is Kind.WORD and token.key not in other_keys:
            for prefix in _NEGATING_PREFIXES:
                rest = token.key.removeprefix(prefix)
                if rest != token.key and len(rest) >= 3 and rest in other_keys:
                    expanded += [Token("not", prefix, Kind.NEGATION), Token(rest, rest, Kind.WORD)]
                    break
            else:
                expanded.append(token)
        else:
            expanded.append(token)
    return expanded


def _relations(tokens_: list[Token]) -> set[tuple[str, str, str]]:
    """(left, relation, right) around each relation word, by the nearest content tokens."""
    found: set[tuple[str, str, str]] = set()
    content = [t for t in tokens_ if t.kind in _CONTENT]
    for index, token in enumerate(content):
        if token.key in _RELATIONS:
            left = next((t.key for t in reversed(content[:index]) if t.key not in _RELATIONS), "")
            right = next((t.key for t in content[index + 1 :] if t.key not in _RELATIONS), "")
            found.add((left, token.key, right))
    return found


def _reordered(new: list[Token], old: _Text) -> bool:
    """Numbers, and names, out of their old order: "Anna and Tom are 30 and 28" is not "... 28
    and 30", "Anna, Tom's sister" is not "Tom, Anna's sister" (dates may move: "3 June" is "June
    3", "On Monday X" is "X on Monday")."""
    for group in (_is_number, _is_name):
        keys = [t.key for t in new if t.kind is Kind.ENTITY and group(t.key) and t.key in old.keys]
        remaining = iter(t.key for t in old.tokens if t.key in keys)
        if not all(key in remaining for key in keys):
            return True
    return False


def _is_number(key: str) -> bool:
    return any(ch.isdigit() for ch in key)


def _is_name(key: str) -> bool:
    return not _is_number(key) and key not in _WEEKDAYS and key not in _MONTHS


def _swapped_around(new: list[Token], old: list[Token]) -> bool:
    """Two words that changed sides of a third: "the landlord owes the user" against "the user
    owes the landlord" (a rotation, "On Monday X" against "X on Monday", is not a swap).

    True when the shared words, read in the new order, hold a decreasing run of three old
    positions (a longest-decreasing-subsequence test, O(n log n)).
    """
    new_keys = [t.key for t in new if t.kind in _CONTENT]
    old_keys = [t.key for t in old if t.kind in _CONTENT]
    once = {k for k in new_keys if new_keys.count(k) == 1 and old_keys.count(k) == 1}
    where = {k: i for i, k in enumerate(old_keys) if k in once}
    tails: list[int] = []  # patience sorting of the negated positions (increasing runs)
    for position in (-where[k] for k in new_keys if k in once):
        slot = bisect.bisect_left(tails, position)
        if slot == len(tails):
            tails.append(position)
        else:
            tails[slot] = position
        if len(tails) >= 3:
            return True
    return False


def _morphological_contrast(a: str, b: str) -> bool:
    """inbound/outbound, upstairs/downstairs, login/logout: a shared stem with swapped affixes,
    which word embeddings score as near synonyms although they are opposites."""
    prefix = len(_common_prefix(a, b))
    suffix = len(_common_prefix(a[::-1], b[::-1]))
    return prefix >= 3 or suffix >= 3


def _common_prefix(a: str, b: str) -> str:
    size = 0
    while size < min(len(a), len(b)) and a[size] == b[size]:
        size += 1
    return a[:size]


def additions(new: str, existing: str, words: WordSimilarity | None = None) -> list[str]:
    """What ``new`` says that ``existing`` does not, as short reasons; empty: it adds nothing.

    >>> additions("Standup is at 11am.", "Standup is at 10am.")
    ['11am']
    >>> additions("the user is a vegetarian!", "The user is vegetarian.")
    []
    """
    old = _Text(tokens(existing))
    fresh = _Text(tokens(new))
    old = _Text(_expand_negating_prefixes(old.tokens, fresh.keys))
    fresh = _Text(_expand_negating_prefixes(fresh.tokens, old.keys))
    reasons: list[str] = []
    for kind, label in ((Kind.NEGATION, "negation"), (Kind.MARKER, "tense or modality")):
        if Counter(t.key for t in fresh.tokens if t.kind is kind) != Counter(
            t.key for t in old.tokens if t.kind is kind
        ):
            reasons.append(label)
    missing = [t for t in fresh.tokens if t.kind in _CONTENT and t.key not in old.keys]
    reasons += [t.surface for t in missing if t.kind is not Kind.WORD]
    if _reordered(fresh.tokens, old) or _swapped_around(fresh.tokens, old.tokens):
        reasons.append("order")
    if reasons:
        return sorted(set(reasons))
    replaced = [t for t in old.tokens if t.kind is Kind.WORD and t.key not in fresh.keys]
    renamed: dict[str, str] = {}
    for token in (t for t in missing if t.kind is Kind.WORD):
        match = next(
            (r for r in replaced if words and _synonyms(token.surface, r.surface, words)), None
        )
        if match is None:
            reasons.append(token.surface)
        else:
            renamed[token.key] = match.key
    if reasons:
        return sorted(set(reasons))
    mapped = [dataclasses.replace(t, key=renamed.get(t.key, t.key)) for t in fresh.tokens]
    return [] if _relations(mapped) <= _relations(old.tokens) else ["relation"]


def _synonyms(a: str, b: str, words: WordSimilarity) -> bool:
    return not _morphological_contrast(a, b) and words(a, b) >= SYNONYM_THRESHOLD


def adds_nothing(new: str, existing: str, words: WordSimilarity | None = None) -> bool:
    """True when every salient token of ``new`` is already in ``existing`` (see the module)."""
    return not additions(new, existing, words)


@dataclass(frozen=True)
class Candidate:
    """A visible memory close to the one being written, as the store found it."""

    id: int
    content: str
    similarity: float  # cosine


@dataclass(frozen=True)
class Verdict:
    duplicate_of: int | None  # the existing memory that makes the new one redundant
    similar: tuple[int, ...]  # close neighbours worth showing (at most MAX_SIMILAR, closest first)


@dataclass(frozen=True)
class DedupRule:
    """The rule with its thresholds; ``words`` (optional) forgives synonyms of ordinary words."""

    threshold: float = DEDUP_THRESHOLD
    similar_threshold: float = SIMILAR_THRESHOLD
    words: WordSimilarity | None = field(default=None, compare=False)

    @property
    def floor(self) -> float:
        """The lowest similarity at which a candidate matters at all."""
        return min(self.threshold, self.similar_threshold)

    def judge(self, content: str, candidates: Sequence[Candidate]) -> Verdict:
        """The closest candidate that makes ``content`` redundant, else the neighbours to show."""
        ranked = sorted(candidates, key=lambda c: (-c.similarity, c.id))
        for candidate in ranked:
            if candidate.similarity >= self.threshold and adds_nothing(
                content, candidate.content, self.words
            ):
                return Verdict(candidate.id, ())
        close = [c.id for c in ranked if c.similarity >= self.similar_threshold]
        return Verdict(None, tuple(close[:MAX_SIMILAR]))
