"""The canonical wording of a fact: the tokens that dedup compares (SPEC 4.1).

Two texts say the same thing only if their canonical tokens are the same, so this module may
erase a difference only where the difference cannot carry meaning:

- case, Unicode form, punctuation that marks no relation (``. , ; : ! ? " ( ) …``), contractions
  (``doesn't`` = ``does not``), British/American spelling (colour/color, organise/organize,
  centre/center, travelled/traveled, catalogue/catalog; a few hyphenated spellings such as
  e-mail/email, while a hyphen otherwise stays: re-sign is not resign);
- number, time, amount and date formats: ``two`` = ``2``, ``2,000`` = ``2000``, ``fourth`` =
  ``4th``, ``10 am`` = ``10:00am`` = ``10am``, ``$40`` = ``40 dollars`` = ``USD 40``, ``5%`` =
  ``5 percent``, ``3 June`` = ``June 3rd`` = ``the 3rd of June``;
- an article added or dropped (``is a vegetarian`` / ``is vegetarian``); each token remembers the
  article written before it, so ``the CFO`` and ``a CFO`` still differ;
- a closed table of true synonyms (``bicycle`` = ``bike``, ``named`` = ``called`` after a noun or
  a copula) and ``dislike`` = ``do not like``.

Everything else is kept as written: every word in its own form (no stemming: ``bored`` is not
``boring``, ``son`` is not ``sons``, ``leaving`` is not ``left``), every stop word (``each``,
``some``, ``then``, ``either``), every symbol (``+ - # < > = % ° /``, currency signs), leading
zeros (``007``), and the order of the tokens (which word orders are the same fact is decided by
``hivekeep.core.dedup``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """What a token is, for the word-order rules of ``hivekeep.core.dedup``."""

    WORD = "word"  # an ordinary lower-case word
    NAME = "name"  # a word written with a capital letter (not at the start), or an acronym
    NUMBER = "number"  # digits, number words, ordinals, times, amounts' numbers
    DATE = "date"  # a day and a month, as one token
    FUNCTION = "function"  # prepositions, conjunctions, determiners, quantifiers, negations, ...
    POSSESSIVE = "possessive"  # 's, which binds the word before it to the word after it
    SYMBOL = "symbol"  # + - # < > = % ° / € $ and every other symbol


@dataclass(frozen=True)
class Token:
    key: str  # the canonical form compared across texts
    kind: Kind
    article: str | None = None  # "a" or "the" written just before it (an, a: "a")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


PREPOSITIONS = _words(
    "as in on at by for with without from to into onto during since until till before after "
    "through via near per across around throughout within about against among amongst between "
    "behind beside besides beyond over under above below toward towards upon inside outside "
    "despite except like unlike off out up down along past"
)
CONJUNCTIONS = _words("and or nor but then than yet so plus minus versus vs times if unless")
QUANTIFIERS = _words(
    "every each all some any no none both either neither most many few several much more less "
    "least fewer other another such only also even just half whole"
)
NEGATIONS = _words("not never no nobody nothing nowhere without")
COPULAS = _words("is are was were am be been being")
# words that open a second clause, or verbs that take one ("said", "promised", "wants")
CLAUSE_MARKERS = _words(
    "that because when while whereas although though who which where whose whom whether "
    "if unless so say says said tell tells told think thinks thought believe believes "
    "believed know knows knew hear hears heard ask asks asked want wants wanted hope hopes "
    "hoped plan plans planned promise promises promised expect expects expected decide "
    "decides decided agree agrees agreed forget forgets forgot remember remembers "
    "remembered claim claims claimed mention mentions mentioned report reports reported "
    "announce announces announced try tries tried need needs needed"
)
# words that tell when, and may lead a phrase that moves as a whole ("Every morning, X")
TEMPORAL = _words(
    "yesterday today tomorrow tonight now currently recently nowadays lately usually normally "
    "generally every each last next this morning mornings afternoon afternoons evening evenings "
    "night nights week weeks weekend weekends month months year years day days daily weekly "
    "monthly yearly annually hour hours minute minutes noon midnight"
)
_FUNCTION = PREPOSITIONS | CONJUNCTIONS | QUANTIFIERS | NEGATIONS
_ARTICLES = {"a": "a", "an": "a", "the": "the"}
_QUANTITIES = _words("few little lot lots bit couple handful number dozen")

WEEKDAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
MONTHS = {
    name: index
    for index, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}
_FULL_MONTHS = {name for name in MONTHS if len(name) > 4 or name in ("may", "june", "july")}

_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70"}
_NUMBER_WORDS |= {"eighty": "80", "ninety": "90"}
_ORDINAL_WORDS = {
    word: f"{value}th"
    for value, word in enumerate(
        [
            "zeroth",
            "first",
            "second",
            "third",
            "fourth",
            "fifth",
            "sixth",
            "seventh",
            "eighth",
            "ninth",
            "tenth",
            "eleventh",
            "twelfth",
            "thirteenth",
            "fourteenth",
            "fifteenth",
            "sixteenth",
            "seventeenth",
            "eighteenth",
            "nineteenth",
            "twentieth",
        ]
    )
} | {"thirtieth": "30th"}
_CURRENCIES = {
    "$": "usd",
    "usd": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "€": "eur",
    "eur": "eur",
    "euro": "eur",
    "euros": "eur",
    "£": "gbp",
    "gbp": "gbp",
    "¥": "jpy",
    "jpy": "jpy",
    "yen": "jpy",
    "%": "percent",
    "percent": "percent",
}
# true synonyms only: no pair here may ever name two different things
_SYNONYMS = {
    "bicycle": "bike",
    "bicycles": "bikes",
    "automobile": "car",
    "automobiles": "cars",
    "movie": "film",
    "movies": "films",
    "purchased": "bought",
    "purchase": "buy",
    "purchases": "buys",
    "resides": "lives",
    "reside": "live",
    "resided": "lived",
    "&": "and",
    # hyphenated spellings (a hyphen is otherwise kept: re-sign is not resign, co-op not coop)
    "e-mail": "email",
    "e-mails": "emails",
    "on-line": "online",
    "web-site": "website",
    "web-sites": "websites",
    "co-operate": "cooperate",
    "co-ordinate": "coordinate",
    "to-do": "todo",
}

# punctuation that marks no relation between the words around it (P* categories, less these;
# "?" asks rather than states: "The user is moving?" hedges what "... is moving." says)
_MEANINGFUL_PUNCTUATION = frozenset("?#%&*/@\\\u2030\u2031\u2032\u2033\u00a7\u00b6-")
_NEUTRAL_SYMBOLS = frozenset("`")  # markdown code quotes
_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "can not"),
        (r"\bshan't\b", "shall not"),
        (r"\bcannot\b", "can not"),
        (r"\bain't\b", "is not"),
        (r"n't\b", " not"),
        (r"'ll\b", " will"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"\b(i)'m\b", r"\1 am"),
        (r"'d\b", " 'd"),  # would or had: kept as written
        (r"'s\b", " 's"),  # possessive, is or has: kept as written
        (r"(?<=s)'(?=\W|$)", " 's"),  # plural possessive
        (r"\bdislikes\b", "does not like"),
        (r"\bdisliked\b", "did not like"),
        (r"\bdislike\b", "do not like"),
    )
)
_RAW = re.compile(
    r"""
    (?P<clitic>'[sd])(?![^\W_])
    | (?P<time>\d{1,2}(?::\d{2})?\s*(?:a\.m\.?|p\.m\.?|am|pm)(?![^\W\d_]))
    | (?P<iso>\d{4}-\d{2}-\d{2})(?!\d)
    | (?P<word>[^\W_]+(?:(?:[.,:']|-(?=[^\W\d_]))[^\W_]+)*)
    | (?P<other>\S)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?$")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_DASHES = str.maketrans({"\u2212": "-", "\u2010": "-", "\u2011": "-"})


@functools.lru_cache(maxsize=8192)
def canonical(text: str) -> tuple[Token, ...]:
    """The text's tokens in order, each in its canonical form (see the module). Cached: the
    same neighbours are read again and again by the writes of one conversation."""
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).translate(_DASHES)
    text = re.sub(r"[\u2018\u2019\u02bc]", "'", text)
    text = re.sub(r"(?<=\d)\s*[\u2013\u2014]\s*(?=\d)", " - ", text)  # "10-12" with an en dash
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    raw = _raw_tokens(text)
    return tuple(_with_articles(_dates(_amounts(raw))))


def _raw_tokens(text: str) -> list[Token]:
    found: list[Token] = []
    for match in _RAW.finditer(text):
        if match.group("clitic"):
            clitic = match.group("clitic").casefold()
            found.append(Token(clitic, Kind.POSSESSIVE if clitic == "'s" else Kind.FUNCTION))
        elif match.group("time"):
            found.append(Token(_time(match.group("time").casefold()), Kind.NUMBER))
        elif match.group("iso"):
            year, month, day = (int(part) for part in match.group("iso").split("-"))
            found += [Token(f"{month}-{day}", Kind.DATE), Token(str(year), Kind.NUMBER)]
        elif match.group("word"):
            found.append(_word(match.group("word"), first=not found, text=text, at=match.start()))
        else:
            found += _symbol(match.group("other"), previous=found)
    return [t for t in found if t.key]


def _word(word: str, *, first: bool, text: str, at: int) -> Token:
    folded = word.casefold()
    number = _number(folded)
    if number is not None:
        return Token(number, Kind.NUMBER)
    if folded in _CURRENCIES:
        return Token(_CURRENCIES[folded], Kind.SYMBOL)
    if "-" in folded and all(part in _NUMBER_WORDS for part in folded.split("-")):
        return Token(str(sum(int(_NUMBER_WORDS[part]) for part in folded.split("-"))), Kind.NUMBER)
    if folded in _ARTICLES and not (word == "A" and not first):  # "grade A" is a letter
        return Token(folded, Kind.FUNCTION)  # an article: attached to the next token later
    if folded in _FUNCTION:
        return Token(folded, Kind.FUNCTION)
    key = _spelling(folded)
    if key == "called" and _names_something(_previous_words(text, at)):
        key = "named"  # "is called Leo", "a dog called Rex" (not "the manager called Priya")
    capital = any(ch.isupper() for ch in word) and not (first and word[1:].islower())
    return Token(key, Kind.NAME if capital else Kind.WORD)


def _names_something(before: list[str]) -> bool:
    """ "called" names after a copula ("is called Leo") or after "a" and a common noun ("a dog
    called Rex"); after anything else it may be a phone call ("the manager called Priya",
    "Anna called Tom")."""
    if not before:
        return False
    if before[-1].casefold() in COPULAS:
        return True
    return (
        len(before) >= 2
        and before[-2].casefold() in ("a", "an")
        and before[-1].isalpha()
        and before[-1].islower()
    )


def _previous_words(text: str, at: int) -> list[str]:
    """The (at most two) words before position ``at``, as written."""
    return re.findall(r"[^\W_]+", text[:at])[-2:]


def _symbol(char: str, previous: list[Token]) -> list[Token]:
    if char == "'":
        return []
    if char in _NEUTRAL_SYMBOLS or (
        unicodedata.category(char).startswith("P") and char not in _MEANINGFUL_PUNCTUATION
    ):
        return []  # . , ; : ! ? " ( ) … and dashes between words
    if char in _CURRENCIES:
        return [Token(_CURRENCIES[char], Kind.SYMBOL)]
    return [Token(_SYNONYMS.get(char, char), Kind.SYMBOL)]


def _number(word: str) -> str | None:
    """The canonical form of a number, ordinal or time; None for anything else."""
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if word in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[word]
    if not word[:1].isdigit():
        return None
    if _THOUSANDS.match(word):
        word = word.replace(",", "")
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return f"{int(ordinal.group(1))}th"
    if word.isdigit():
        return word if word.startswith("0") and len(word) > 1 else str(int(word))
    return word if any(ch.isdigit() for ch in word) else None


def _time(written: str) -> str:
    match = _TIME.match(written)
    assert match is not None  # the tokenizer's time pattern is narrower than _TIME
    hour, minutes, half = match.groups()
    minutes = "" if minutes in (None, "00") else f":{minutes}"
    return f"{int(hour)}{minutes}{half}m"


def _amounts(tokens: list[Token]) -> list[Token]:
    """A currency written before its number goes after it: "$40" = "40 dollars" = "USD 40"."""
    out = list(tokens)
    for index in range(len(out) - 1):
        current, following = out[index], out[index + 1]
        if (
            current.kind is Kind.SYMBOL
            and current.key in ("usd", "eur", "gbp", "jpy")
            and following.kind is Kind.NUMBER
        ):
            out[index], out[index + 1] = following, current
    return out


def _dates(tokens: list[Token]) -> list[Token]:
    """A day and a month as one token: "3 June", "June 3rd", "the 3rd of June" are "6-3"."""
    out: list[Token] = []
    index = 0
    while index < len(tokens):
        date, used = _date_at(tokens, index)
        if date is not None:
            out.append(date)
            index += used
        else:
            out.append(tokens[index])
            index += 1
    return out


def _date_at(tokens: list[Token], index: int) -> tuple[Token | None, int]:
    def day(at: int) -> int | None:
        if at >= len(tokens) or tokens[at].kind is not Kind.NUMBER:
            return None
        digits = tokens[at].key.removesuffix("th")
        return int(digits) if digits.isdigit() and 1 <= int(digits) <= 31 else None

    def month(at: int) -> int | None:
        return MONTHS.get(tokens[at].key) if at < len(tokens) else None

    first_day = day(index)
    if first_day is not None:
        at = index + 1
        if at < len(tokens) and tokens[at].key == "of":
            at += 1
        if month(at) is not None:
            return Token(f"{month(at)}-{first_day}", Kind.DATE), at - index + 1
    first_month = month(index)
    if first_month is not None and (
        tokens[index].key in _FULL_MONTHS or tokens[index].kind is Kind.NAME
    ):
        following = day(index + 1)
        if following is not None:
            return Token(f"{first_month}-{following}", Kind.DATE), 2
    return None, 1


def _with_articles(tokens: list[Token]) -> list[Token]:
    """Articles leave the sequence and ride on the token after them."""
    out: list[Token] = []
    article: str | None = None
    for token in tokens:
        if article is not None and (
            token.kind in (Kind.FUNCTION, Kind.SYMBOL, Kind.POSSESSIVE) or token.key in _QUANTITIES
        ):
            # "a few" is not "few", nor "a little" "little"; "a+" is a grade
            out.append(Token(article, Kind.FUNCTION))
            article = None
        if token.kind is Kind.FUNCTION and token.key in _ARTICLES:
            if article is not None:  # "a the": keep the first as a plain token
                out.append(Token(article, Kind.FUNCTION))
            article = _ARTICLES[token.key]
            continue
        out.append(Token(token.key, token.kind, article) if article else token)
        article = None
    if article is not None:
        out.append(Token(article, Kind.FUNCTION))  # a trailing "a" is a letter, not an article
    return out


# one spelling for British/American variants: colour/color, organise/organize, centre/center,
# analyse, travelled, catalogue. Each pattern needs a stem long enough that no two different
# English words meet (scour is not score, prise is not prize, four is not for).
_SPELLINGS = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (
            r"^([a-z]{3,})our(s|ed|ing|ite|ites|able|ably|ful|less|er|ers|ist|ists|hood|hoods|ly)?$",
            r"\1or\2",
        ),
        (r"(?<=[a-z]{4})is(e|ed|es|ing|ation|ations)$", r"iz\1"),
        (r"(?<=[a-z]{3})ys(e|ed|es|ing)$", r"yz\1"),
        (r"(?<=[a-z]{3})tre(s?)$", r"ter\1"),
        (r"(?<=[a-z]{2}e)ll(ed|ing|er|ers)$", r"l\1"),
        (r"(?<=[a-z]{3})ogue(s?)$", r"og\1"),
    )
)


@functools.lru_cache(maxsize=65536)
def _spelling(word: str) -> str:
    """The one spelling of a folded word: American, then the synonym table."""
    for pattern, replacement in _SPELLINGS:
        word = pattern.sub(replacement, word)
    return _SYNONYMS.get(word, word)
