"""The dedup rule (hivekeep/core/dedup.py): restatements merge, changed facts never do."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hivekeep.core.dedup import Candidate, DedupRule, additions, adds_nothing

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

# (existing, new): the new text adds nothing, so it may merge
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
    ("The user travelled to Japan and Korea.", "The user traveled to Japan."),
    (
        "The user works as a nurse at Santa Maria hospital.",
        "The user works at Santa Maria hospital as a nurse.",
    ),
    ("The user doesn't eat meat.", "The user does not eat meat."),
    ("The user likes hiking in the Alps.", "The user likes hiking in the Alps"),
    ("On Monday the user meets Anna.", "The user meets Anna on Monday."),
    ("The project deadline is Friday.", "The deadline of the project is Friday."),
    ("The user's manager is Priya.", "Priya is the user's manager."),
    ("The user's dog is called Rex.", "The user has a dog called Rex."),
    ("The flight is on 3 June 2025.", "The flight is on June 3, 2025."),
]


@pytest.mark.parametrize(("existing", "new"), CHANGED)
def test_a_changed_fact_always_adds_something(existing: str, new: str) -> None:
    assert additions(new, existing), f"{new!r} was judged to add nothing to {existing!r}"


@pytest.mark.parametrize(("existing", "new"), RESTATED)
def test_a_restatement_adds_nothing(existing: str, new: str) -> None:
    assert additions(new, existing) == []


def test_additions_name_what_is_new() -> None:
    assert additions("Standup is at 11am.", "Standup is at 10am.") == ["11am"]
    assert additions("The user is not vegan.", "The user is vegan.") == ["negation"]
    assert additions("The user prefers coffee over tea.", "The user prefers tea over coffee.") == [
        "order"
    ]


def test_a_synonym_is_forgiven_only_through_the_word_similarity() -> None:
    def words(a: str, b: str) -> float:
        return 0.95 if {a, b} == {"bike", "bicycle"} else 0.2

    existing, new = "The user rides a bike to work.", "The user rides a bicycle to work."
    assert not adds_nothing(new, existing)
    assert adds_nothing(new, existing, words)


def test_numbers_names_and_negations_are_never_forgiven_as_synonyms() -> None:
    def words(a: str, b: str) -> float:
        return 0.99  # an embedder that calls everything a synonym

    for existing, new in (
        ("The user has 2 cats.", "The user has 3 cats."),
        ("The user's manager is Priya.", "The user's manager is Tom."),
        ("The user eats fish.", "The user never eats fish."),
        ("The flight is on Monday.", "The flight is on Tuesday."),
        ("Traffic is inbound.", "Traffic is outbound."),  # a shared stem with swapped affixes
    ):
        assert additions(new, existing, words), new


# properties ------------------------------------------------------------------------------------
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)
SENTENCE = st.lists(st.one_of(WORD, st.integers(0, 3000).map(str)), min_size=1, max_size=12)


@given(SENTENCE, st.integers(0, 10**9), st.integers(0, 12))
def test_adding_a_new_number_never_makes_a_duplicate(
    words: list[str], number: int, position: int
) -> None:
    existing = " ".join(words)
    assume(str(number) not in re.findall(r"\d+", existing))
    new_words = [*words]
    new_words.insert(min(position, len(words)), str(number))
    assert not adds_nothing(" ".join(new_words), existing)


@given(SENTENCE, st.lists(st.sampled_from([",", ".", "!", "?", ";", ":", ""]), min_size=12))
def test_a_case_or_punctuation_change_is_always_a_duplicate(
    words: list[str], marks: list[str]
) -> None:
    existing = " ".join(words)
    changed = " ".join(
        (w.upper() if i % 2 else w.capitalize()) + marks[i] for i, w in enumerate(words)
    )
    assert adds_nothing(changed, existing)
    assert adds_nothing(existing, changed)


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
