"""Further lists tried after time-aware recall, each against the shipped defaults (issue 28).

    python bench/experiments/locomo_answer_types.py [--data PATH] [--setup plain|subject|said]

Offline, on the indexes and cached vectors of bench/experiments/locomo_levers.py; the baseline is
the shipped fusion (subject list 0.5, time list 1.0). Each variant adds one list to it:

- ``period``: a question naming a date or a month and year ("on 1 May, 2022", "in July 2022"):
  the candidates made in that period, or up to ``after`` days later ("yesterday", "last week"
  said afterwards), from the fused pool or from the full-text ranking restricted to the period;
- ``deep``: the time list drawn from each arm's top 40 or 100 rather than the pool of 2 x limit;
- ``where`` / ``how many``: the answer-type idea beyond time: a question asking where, with the
  candidates naming a place ("in/at/to/from Capitalised"); a question asking how many or how
  much, with the candidates stating a number;
- last, no list but another index: each turn's relative dates resolved against its own date
  ("yesterday" said on 8 May 2023 also indexes "7 May 2023") in the context column.

None was kept (docs/benchmarks.md, "Temporal questions"): the output says why, fold by fold.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.locomo_levers import (
    CANDIDATE,
    Corpus,
    Question,
    corpora_from,
    index,
    spoken_date,
    text_ranking,
)
from bench.locomo_data import CATEGORIES, Conversation
from bench.locomo_folds import wins
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.providers.embeddings.local import LocalEmbedder

K, POOL = 10, 20
SHIPPED = replace(CANDIDATE, time=LocalEmbedder.recall_defaults.time_weight or 0.0)
MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_M = "|".join(MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_M}),? (\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_M}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_M}),? (\d{{4}})\b", re.I)
_ASKS_WHERE = re.compile(
    r"^\W*where\b|\bwhere (?:did|does|do|was|is|were|are|has|have|had|will|would)\b"
    r"|\bwhich (?:city|country|place|state|town)\b",
    re.I,
)
_PLACE = re.compile(r"\b(?:in|at|to|from|near|visit(?:ed|ing)?|around)\s+(?:the\s+)?[A-Z][a-z]+")
_ASKS_COUNT = re.compile(r"\bhow (?:many|much)\b", re.I)
_NUMBER = re.compile(
    r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|dozen|couple|several|few|many)\b",
    re.I,
)

Period = tuple[date, date]


def periods(question: str) -> list[Period]:
    """The days or months a question names (a day with its year; a month with its year)."""
    days = [
        date(int(m[3]), MONTHS.index(m[2].lower()) + 1, int(m[1]))
        for m in _DAY_MONTH_YEAR.finditer(question)
    ] + [
        date(int(m[3]), MONTHS.index(m[1].lower()) + 1, int(m[2]))
        for m in _MONTH_DAY_YEAR.finditer(question)
    ]
    if days:
        return [(d, d) for d in days]
    out = []
    for m in _MONTH_YEAR.finditer(question):
        month, year = MONTHS.index(m[1].lower()) + 1, int(m[2])
        last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        out.append((date(year, month, 1), last))
    return out


_WEEKDAYS = {
    name: n
    for n, names in enumerate(
        [("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"),
         ("thursday", "thu", "thur", "thurs"), ("friday", "fri"), ("saturday", "sat"),
         ("sunday", "sun")]
    )
    for name in names
}  # fmt: skip
_LAST_WEEKDAY = re.compile(rf"\blast ({'|'.join(_WEEKDAYS)})\b")
_AGO = re.compile(r"\b(\d+|a|two|three|four|five|six) (day|week|month|year)s? ago\b")
_SMALL = {"a": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def resolved_dates(text: str, when: datetime) -> list[str]:
    """The dates a turn's relative expressions point at, in words, counted from when it was said:
    "yesterday" / "last night" (the day before), "today", "tomorrow", "last Friday", "last week"
    and "last weekend" (days), "last month" (month and year), "last year", "N days/weeks/months/
    years ago". The stored-text side of date normalisation, measured here before any migration."""
    low, out = text.lower(), []

    def day(days_back: int) -> None:
        out.append(spoken_date(when - timedelta(days=days_back)))

    if re.search(r"\byesterday\b|\blast night\b", low):
        day(1)
    if re.search(r"\btoday\b|\btonight\b", low):
        day(0)
    if re.search(r"\btomorrow\b", low):
        day(-1)
    for m in _LAST_WEEKDAY.finditer(low):
        day((when.weekday() - _WEEKDAYS[m[1]]) % 7 or 7)
    if re.search(r"\blast week\b", low):
        day(7)
    if re.search(r"\blast weekend\b", low):
        day((when.weekday() - 5) % 7 or 7)
    if re.search(r"\blast month\b", low):
        previous = when.replace(day=1) - timedelta(days=1)
        out.append(f"{previous.strftime('%B')} {previous.year}")
    if re.search(r"\blast year\b", low):
        out.append(str(when.year - 1))
    for m in _AGO.finditer(low):
        count = _SMALL.get(m[1]) or int(m[1])
        then = when - timedelta(days=count * {"day": 1, "week": 7, "month": 30, "year": 365}[m[2]])
        out.append(
            spoken_date(then)
            if m[2] in ("day", "week")
            else f"{then.strftime('%B')} {then.year}"
            if m[2] == "month"
            else str(then.year)
        )
    return out


# (conversation, corpus, question, its text, the first fusion) -> the extra list, or None
Extra = Callable[[Conversation, Corpus, Question, str, list[int]], "tuple[list[int], float] | None"]


def period_list(after: int, search: bool, weight: float) -> Extra:
    def extra(
        conv: Conversation, c: Corpus, q: Question, text: str, first: list[int]
    ) -> tuple[list[int], float] | None:
        named = periods(text)
        if not named:
            return None
        days = [t.when.date() for t in conv.turns]

        def inside(i: int) -> bool:
            return any(s <= days[i] <= e + timedelta(days=after) for s, e in named)

        source = text_ranking(c, q.terms) if search else first
        return [i for i in source if inside(i)][:POOL], weight

    return extra


def deep_time_list(depth: int) -> Extra:
    def extra(
        conv: Conversation, c: Corpus, q: Question, text: str, first: list[int]
    ) -> tuple[list[int], float] | None:
        if not q.asks_when:
            return None
        vector, full_text, _ = SHIPPED.arms(c, q, depth)
        deep = [i for i, _ in fuse([Ranked(vector), Ranked(full_text)], k=10, recency={})]
        return [i for i in deep if c.timed[i]], SHIPPED.time

    return extra


def answer_type_list(asks: re.Pattern[str], states: re.Pattern[str], weight: float) -> Extra:
    def extra(
        conv: Conversation, c: Corpus, q: Question, text: str, first: list[int]
    ) -> tuple[list[int], float] | None:
        if not asks.search(text):
            return None
        bodies = [t.text.split(": ", 1)[-1] for t in conv.turns]  # without "Speaker: "
        return [i for i in first if states.search(bodies[i])], weight

    return extra


def rank(conv: Conversation, c: Corpus, q: Question, text: str, extra: Extra | None) -> list[int]:
    """The shipped fusion (subject and time lists), plus the variant's list when it has one."""
    vector, full_text, _ = SHIPPED.arms(c, q, POOL)
    lists = [Ranked(vector), Ranked(full_text, SHIPPED.weight)]
    first = [i for i, _ in fuse(lists, k=SHIPPED.rrf_k, recency={})]
    if q.named:
        lists.append(Ranked([i for i in first if c.subjects[i] in q.named], SHIPPED.subject))
    if q.asks_when:
        lists.append(Ranked([i for i in first if c.timed[i]], SHIPPED.time))
    added = extra(conv, c, q, text, first) if extra else None
    if added:
        lists.append(Ranked(*added))
    return [i for i, _ in fuse(lists, k=SHIPPED.rrf_k, recency={}, limit=K)]


def main(argv: Sequence[str] | None = None) -> int:
    args, conversations, corpora = corpora_from(argv, __doc__.split("\n\n")[0])
    variants: dict[str, Extra | None] = {"shipped": None}
    for search in (False, True):
        for weight in (0.5, 1.0):
            for after in (0, 7):
                source = "full-text search" if search else "pool"
                name = f"period list, {source}, weight {weight}, +{after} days"
                variants[name] = period_list(after, search, weight)
    variants |= {f"time list from the top {d} of each arm": deep_time_list(d) for d in (40, 100)}
    for weight in (0.5, 1.0):
        variants[f"where list {weight}"] = answer_type_list(_ASKS_WHERE, _PLACE, weight)
        variants[f"how-many list {weight}"] = answer_type_list(_ASKS_COUNT, _NUMBER, weight)

    names = [c.name for c in corpora]
    cats = " | ".join(f"R@10 {c} {name}" for c, name in CATEGORIES.items())
    print(f"LoCoMo {args.data.name} ({args.setup}); baseline: {SHIPPED.label()}\n")
    print(
        f"| variant | R@10 | {cats} | "
        + " | ".join(names)
        + " | wins |\n|"
        + "---|" * (3 + len(CATEGORIES) + len(names))
    )
    results: dict[str, list[list[float]]] = {}

    def report(name: str, extra: Extra | None) -> None:
        scored = [
            [
                (q.category, len({c.ids[i] for i in rank(conv, c, q, qq.text, extra)} & q.evidence)
                 / len(q.evidence))
                for q, qq in zip(c.questions, conv.questions, strict=True)
            ]
            for conv, c in zip(conversations, corpora, strict=True)
        ]  # fmt: skip
        results[name] = [[s for _, s in fold] for fold in scored]
        flat = [pair for fold in scored for pair in fold]
        cells = [f"{statistics.fmean(s for _, s in flat):.3f}"]
        for c in CATEGORIES:
            of_c = [s for cat, s in flat if cat == c]
            cells.append(f"{statistics.fmean(of_c):.3f}" if of_c else "-")
        cells += [f"{statistics.fmean(fold):.3f}" for fold in results[name]]
        won = "" if name == "shipped" else f"{wins(results, name, 'shipped')} of {len(names)}"
        print(f"| {name} | " + " | ".join(cells) + f" | {won} |")

    for name, extra in variants.items():
        report(name, extra)
    resolved = 0
    for conv, c in zip(conversations, corpora, strict=True):
        rows = []
        for i, t in enumerate(conv.turns):
            extra_words = resolved_dates(t.text, t.when)
            resolved += bool(extra_words)
            context = " ".join([spoken_date(t.when), *extra_words])
            rows.append((i, t.text, t.speaker if args.setup != "plain" else "", context))
        c.fts["porter"] = index(rows, "porter unicode61 remove_diacritics 2")
        c.cache.clear()
    report(f"relative dates resolved into the index ({resolved} turns)", None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
