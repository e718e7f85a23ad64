"""Which subjects a query names (subject-aware recall's signal): pure, no fixtures."""

from __future__ import annotations

from hivekeep.core.subjects import about_named, named_subjects, subject_keys, words


def test_words_fold_case_accents_and_possessives() -> None:
    assert words("What did Zoë\u2019s and JAMES' friends buy?") == (
        "what",
        "did",
        "zoe",
        "and",
        "james",
        "friends",
        "buy",
    )


def test_a_query_names_a_subject_by_its_normalised_name() -> None:
    subjects = {"Ann", "Bob", "the garden"}
    assert named_subjects("What did ann buy in May?", subjects) == {"Ann"}
    assert named_subjects("Where is Ann's sister?", subjects) == {"Ann"}
    assert named_subjects("How is THE GARDEN doing?", subjects) == {"the garden"}
    assert named_subjects("What did Ann and Bob plan?", subjects) == {"Ann", "Bob"}


def test_multi_word_subjects_are_named_by_their_first_word_or_in_full() -> None:
    assert named_subjects("What does Melanie paint?", ["Melanie Lee"]) == {"Melanie Lee"}
    assert named_subjects("What does Melanie Lee paint?", ["Melanie Lee"]) == {"Melanie Lee"}
    assert named_subjects("What does Lee paint?", ["Melanie Lee"]) == set()  # only the first
    assert subject_keys("Melanie Lee") == (("melanie", "lee"), ("melanie",))


def test_a_stopword_is_never_a_first_name() -> None:
    assert subject_keys("the garden") == (("the", "garden"),)
    assert named_subjects("What is the weather?", ["the garden"]) == set()
    assert named_subjects("Is it on?", ["on"]) == set()  # a stopword-only subject


def test_whole_words_only() -> None:
    assert named_subjects("Did Annabel call?", ["Ann"]) == set()
    assert named_subjects("anything", ["Ann"]) == set()


def test_empty_subjects_and_queries() -> None:
    assert named_subjects("What did Ann buy?", [None, "", "  "]) == set()
    assert named_subjects("", ["Ann"]) == set()


def test_about_named_keeps_the_ranked_order_of_the_named_subjects_memories() -> None:
    subjects = {1: "Bob", 2: "Ann", 3: None, 4: "ann", 5: "Ann Lee"}
    assert about_named("Ann's new job", [5, 1, 2, 3, 4], subjects) == [5, 2, 4]
    assert about_named("a new job", [5, 1, 2, 3, 4], subjects) == []
