"""The dedup rule (hivekeep/core/dedup.py): restatements merge, changed facts never do."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hivekeep.core.dedup import (
    Candidate,
    DedupRule,
    Merge,
    Verdict,
    Writing,
    differences,
    same_fact,
)
from hivekeep.core.text import normalise_text
from hivekeep.core.wording import COPULAS, PREPOSITIONS, TEMPORAL

# (existing, new): the new text changes a fact, so it must be stored
CHANGED = [
    ("Team standup is at 10am on Tuesdays", "Team standup moved to 11am on Tuesdays"),
    ("Team standup is at 10am on Tuesdays", "Team standup is at 10:30am on Tuesdays"),
    ("The door code is 1234.", "The door code is 9876."),
    ("Anna's phone number is +44 20 7946 0958.", "Anna's phone number is +44 20 7946 0959."),
    ("The user is allergic to peanuts.", "The user is not allergic to peanuts."),
    ("The user is not allergic to peanuts.", "The user is allergic to peanuts."),
    ("The user isn't vegetarian.", "The user is vegetarian."),
    ("The user can swim.", "The user can't swim."),
    ("The user is happy with the new job.", "The user is unhappy with the new job."),
    (
        "The dentist appointment is on the 4th of March.",
        "The dentist appointment is on the 14th of March.",
    ),
    ("The dentist appointment is in March.", "The dentist appointment is in April."),
    ("The dentist appointment is on Monday.", "The dentist appointment is on monday afternoon."),
    ("The invoice total is $1,200.", "The invoice total is $1,250."),
    ("The invoice total is 1200 USD.", "The invoice total is 1200 EUR."),
    ("The user has one brother.", "The user has two brothers."),
    ("The user's second child is called Ana.", "The user's third child is called Ana."),
    ("Anna owes Tom 50 EUR.", "Tom owes Anna 50 EUR."),
    ("The user moved from Porto to Lisbon.", "The user moved from Lisbon to Porto."),
    ("The user prefers tea over coffee.", "The user prefers coffee over tea."),
    ("The review is before lunch.", "The review is after lunch."),
    ("The meeting is in room B.", "The meeting is in room C."),
    ("The user lives in lisbon.", "The user lives in berlin."),
    ("The user works at Acme.", "The user worked at Acme."),
    ("The user will visit Rome.", "The user visited Rome."),
    ("The user lives near the station.", "The user lives in the station."),
    ("The user's sister lives in Oslo.", "The user's brother lives in Oslo."),
    ("The build passed on main.", "The build failed on main."),
    (
        "Background filler note number 7 about weather.",
        "Background filler note number 8 about weather.",
    ),
    (
        "Zebra3 unique marker token qx3z lives in pen 3.",
        "Zebra4 unique marker token qx4z lives in pen 4.",
    ),
    ("The release is version 2.3.", "The release is version 2.4."),
    ("The user sleeps 7 hours a night.", "The user sleeps seven and a half hours a night."),
    ("The API limit is 100 requests per minute.", "The API limit is 100 requests per second."),
    ("The landlord owes the user money.", "The user owes the landlord money."),
    ("Tom is 30, Anna is 28.", "Tom is 28, Anna is 30."),
    ("Anna and Tom are 30 and 28.", "Anna and Tom are 28 and 30."),
    ("The user's cat chased the neighbour's dog.", "The user's dog chased the neighbour's cat."),
]

# (existing, new): the same fact, so they may merge
RESTATED = [
    ("The user moved to Lisbon in May 2024.", "the user moved to lisbon in may 2024"),
    ("The user prefers short answers.", "The user prefers short answers!"),
    ("The user is vegetarian.", "The user is a vegetarian."),
    ("The user's favourite colour is teal.", "The user's favorite color is teal."),
    ("The user organised the centre's catalogue.", "The user organized the center's catalog."),
    ("The user dislikes loud restaurants.", "The user does not like loud restaurants."),
    ("The user's son is called Leo.", "The user's son is named Leo."),
    ("The flight is on the 4th of June.", "The flight is on the fourth of June."),
    ("The standup is at 10 am.", "The standup is at 10:00am."),
    ("The user has two cats.", "The user has 2 cats."),
    ("The user's e-mail is on Gmail.", "The user's email is on Gmail."),
    (
        "The user works as a nurse at Santa Maria hospital.",
        "The user works at Santa Maria hospital as a nurse.",
    ),
    ("The user doesn't eat meat.", "The user does not eat meat."),
    ("The user likes hiking in the Alps.", "The user likes hiking in the Alps"),
    ("On Monday the user meets Anna.", "The user meets Anna on Monday."),
    ("The user's manager is Priya.", "Priya is the user's manager."),
    ("The flight is on 3 June 2025.", "The flight is on June 3, 2025."),
]

# (existing, new): the new text drops something the old one said, so both are kept
NARROWED = [
    ("The user travelled to Japan and Korea.", "The user traveled to Japan."),
    ("Tom is the interim CFO.", "Tom is the CFO."),
    ("The user goes every day but Sunday.", "The user goes every day."),
]


@pytest.mark.parametrize(("existing", "new"), CHANGED + NARROWED)
def test_a_changed_fact_differs_both_ways(existing: str, new: str) -> None:
    assert differences(new, existing), f"{new!r} was judged the same fact as {existing!r}"
    assert differences(existing, new), f"{existing!r} was judged the same fact as {new!r}"


@pytest.mark.parametrize(("existing", "new"), RESTATED)
def test_a_restatement_is_the_same_fact_both_ways(existing: str, new: str) -> None:
    assert differences(new, existing) == []
    assert differences(existing, new) == []


def _pairs(name: str) -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parent.parent / "data" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# written by reading the rule for what it ignores: a dropped word, a symbol, a stop word, a word
# form, an order (the classes of issue 24), each with several cases
ADVERSARIAL = _pairs("dedup_adversarial.jsonl")


@pytest.mark.parametrize(
    "pair", [p for p in ADVERSARIAL if not p["same"]], ids=lambda p: f"{p['kind']}: {p['second']}"
)
def test_no_adversarial_change_is_merged(pair: dict[str, str]) -> None:
    assert not same_fact(pair["first"], pair["second"])
    assert not same_fact(pair["second"], pair["first"])


def test_adversarial_restatements_still_merge() -> None:
    restated = [p for p in ADVERSARIAL if p["same"]]
    kept = [p["second"] for p in restated if not same_fact(p["first"], p["second"])]
    assert kept == []


def test_differences_name_what_differs() -> None:
    assert differences("Standup is at 11am.", "Standup is at 10am.") == [
        "only in the first: 11am",
        "only in the second: 10am",
    ]
    assert differences("The user is not vegan.", "The user is vegan.") == ["only in the first: not"]
    assert differences(
        "The user prefers coffee over tea.", "The user prefers tea over coffee."
    ) == ["order"]
    assert differences("Tom is the manager.", "Tom is a manager.") == ["article: the/a"]


# properties ------------------------------------------------------------------------------------
# every kind of token that can carry meaning: words, stop words, quantifiers, hedges, symbols,
# numbers, names, word forms of one stem
def _words(text: str) -> list[str]:
    return text.split()


VOCABULARY = _words(
    "user sister report budget green tea coffee office leave leaving left bored boring son sons "
    "a the each some every both either then and or but not never only almost nearly interim "
    "possibly acting deputy except half other is was has had will "
    "+ - # < > = % ° / € $ ? @ * ≥ ≤ "
    "0 1 2 3 10 42 2024 10am 3pm 1st 007 Anna Tom Lisbon Monday June"
)
# no time words, prepositions or currencies: a swap of these never moves an adverbial, and
# "€40" is "40 €"
PLAIN = [
    w
    for w in VOCABULARY
    if w.casefold() not in PREPOSITIONS | TEMPORAL | COPULAS
    and w not in ("and", "or", "then", "€", "$")
    and not w.endswith(("am", "pm"))
    and w not in ("Monday", "June")
]
SENTENCE = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=10)


@given(SENTENCE, st.sampled_from(VOCABULARY), st.integers(0, 10))
def test_a_token_added_anywhere_is_never_the_same_fact(
    words: list[str], extra: str, position: int
) -> None:
    longer = [*words]
    longer.insert(min(position, len(words)), extra)
    assume(not (extra in ("a", "the") and longer.index(extra) + 1 < len(longer)))
    first, second = " ".join(words), " ".join(longer)
    assert differences(first, second), (first, second)
    assert differences(second, first), (first, second)


@given(SENTENCE, st.integers(0, 9), st.sampled_from(VOCABULARY))
def test_a_token_replaced_is_never_the_same_fact(
    words: list[str], position: int, other: str
) -> None:
    at = min(position, len(words) - 1)
    assume(other.casefold() != words[at].casefold())
    assume({other, words[at]} != {"a", "the"} or at + 1 == len(words))  # an article clash is
    changed = [*words[:at], other, *words[at + 1 :]]  # a difference too, but of another kind
    assert not same_fact(" ".join(words), " ".join(changed))


@given(st.lists(st.sampled_from(PLAIN), min_size=2, max_size=10), st.integers(0, 8))
def test_two_neighbours_swapped_are_never_the_same_fact(words: list[str], position: int) -> None:
    at = min(position, len(words) - 2)
    swapped = [*words[:at], words[at + 1], words[at], *words[at + 2 :]]
    assume(swapped != words)
    assume("a" not in words and "the" not in words)  # an article rides on the next word
    assert not same_fact(" ".join(words), " ".join(swapped))


@given(
    # not "a": a capital A is a letter ("grade A"), a small one an article
    st.lists(st.sampled_from([w for w in PLAIN if w.isalnum() and w != "a"]), max_size=12),
    st.lists(st.sampled_from([",", ".", "!", ";", ":", ""]), min_size=12),
)
def test_a_case_or_punctuation_change_is_always_the_same_fact(
    words: list[str], marks: list[str]
) -> None:
    existing = " ".join(words)
    changed = " ".join(
        (w.upper() if i % 2 else w.capitalize()) + marks[i] for i, w in enumerate(words)
    )
    assert same_fact(changed, existing)
    assert same_fact(existing, changed)


# the rule over a store's candidates ------------------------------------------------------------
def test_judge_looks_past_closer_candidates_that_differ() -> None:
    rule = DedupRule(threshold=0.9)
    verdict = rule.judge(
        "The flight is on 3 June.",
        [
            Candidate(1, "The flight is on 4 June.", 0.98),
            Candidate(2, "The flight is on 3 June", 0.93),
        ],
    )
    assert verdict.duplicate_of == 2


def test_judge_says_what_a_merge_does() -> None:
    """Issue 33: only an exact repeat (NFC and whitespace) leaves a memory as it is; the same fact
    rewords the writer's own memory of the write's scope; an older dated write is kept as a
    version; another agent's shared memory is merged into only by its exact text."""
    rule = DedupRule(threshold=0.9)
    mine = Candidate(1, "Standup is at 10am.", 0.95, stated_at="2024-05-01")
    theirs = Candidate(2, "Standup is at 10am.", 0.97, own=False, shared=True)
    assert rule.judge(" Standup  is at\t10am. ", [mine]) == Verdict(1, (), Merge.SAME)
    assert rule.judge("standup is at 10AM", [mine]) == Verdict(1, (), Merge.REWORD)
    dated = Writing("standup is at 10AM", stated_at="2023-01-01")
    assert rule.judge(dated, [mine]).merge is Merge.OLDER
    assert rule.judge(replace(dated, stated_at="2025-01-01"), [mine]).merge is Merge.REWORD
    assert rule.judge("standup is at 10AM", [theirs]) == Verdict(None, (2,))
    assert rule.judge("Standup is at 10am.", [theirs]) == Verdict(2, (), Merge.SAME)
    shared_write = Writing("standup is at 10AM", shared=True)
    assert rule.judge(shared_write, [mine]) == Verdict(None, (1,))  # not across scopes
    assert rule.judge(Writing("Standup is at 10am.", shared=True), [mine]).duplicate_of is None
    assert rule.judge("Standup is at 10am.", [theirs, mine]).duplicate_of == 2  # exact first


def test_judge_lists_close_neighbours_of_a_stored_memory() -> None:
    rule = DedupRule(threshold=0.9, similar_threshold=0.8)
    candidates = [
        Candidate(i, f"Rent is due on day {i}.", score)
        for i, score in ((1, 0.95), (2, 0.85), (3, 0.97), (4, 0.79), (5, 0.91))
    ]
    verdict = rule.judge("Rent is due on day 9.", candidates)
    assert verdict.duplicate_of is None
    assert verdict.similar == (3, 1, 5)  # closest first, at most 3, none under 0.8


def test_judge_never_merges_below_the_threshold() -> None:
    verdict = DedupRule(threshold=0.9).judge(
        "The user is vegan", [Candidate(1, "The user is vegan.", 0.89)]
    )
    assert verdict.duplicate_of is None and verdict.similar == (1,)


@given(
    SENTENCE,
    st.sampled_from(["", ".", "!", "...", '"', "(", " "]),
    st.sampled_from(["", ".", "!", "…", '"', ")", " ", "?", "%", "+", "#", "-"]),
    st.booleans(),
)
def test_the_same_normalised_text_is_the_same_fact(
    words: list[str], lead: str, trail: str, upper: bool
) -> None:
    """The store's exact-text key never merges what the rule keeps apart (but for a capital A,
    a letter where a small "a" before a word is an article: those are kept apart)."""
    assume(not (upper and "a" in words))
    text = " ".join(words)
    other = lead + (text.upper() if upper else text) + trail
    if normalise_text(text) == normalise_text(other):
        assert same_fact(text, other), (text, other)
