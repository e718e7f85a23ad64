"""Time-aware recall's two tests: a query asking when, a text stating a time."""

from __future__ import annotations

import pytest

from hivekeep.core.time_words import asks_when, mentions_time


@pytest.mark.parametrize(
    "query",
    [
        "When did Ann move to Lisbon?",
        "when is the dentist appointment",
        "Remind me: when was the last backup?",
        "When Ann got her first job?",
        "Since when does Bob work there?",
        "How long has Ann lived in Lisbon?",
        "What year did they marry?",
        "Which week did Tim visit the UK?",
        "How many years was he with the team?",
        "Ann asked when did the shop open",
    ],
)
def test_questions_asking_for_a_time(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize(
    "query",
    [
        "Where does Ann live?",
        "What did Ann buy in May 2023?",  # names a time, asks for a thing
        "What did Bob say when we met?",  # "when" inside the sentence, no auxiliary
        "How many cats does Ann have?",
        "whenever",
        "",
    ],
)
def test_questions_not_asking_for_a_time(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(
    "text",
    [
        "I went to a support group yesterday",
        "Ann moved last week",
        "We met up last Friday",
        "I've known them for 4 years",
        "Two months ago the roof leaked",
        "The user moved to Lisbon in May 2024",
        "Planning a trip next summer",
        "She started in 2019",
        "The party is on the 3rd",
        "Deadline 12/05/2024",
        "We go hiking on Saturdays",
        "It happened a few weeks back, recently",
        "Last Fri I took the kids to a workshop",
        "I joined a new group last Tues",
        "I have painted since I was 17",
        "Basketball has been my life ever since",
        "We had fun over the weekend",
    ],
)
def test_texts_stating_a_time(text: str) -> None:
    assert mentions_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "I may go hiking",  # a verb, not the month
        "The user prefers short answers",
        "Ann likes the march of the penguins",  # lower case: not a month
        "Room 101 has 3 chairs",  # numbers that are no year or date
        "Sun and sat-nav on the fridge",  # short weekday names count only after last/next/on
        "Since you asked, it was great",  # causal "since"
        "",
    ],
)
def test_texts_stating_no_time(text: str) -> None:
    assert not mentions_time(text)
