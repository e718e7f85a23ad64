from __future__ import annotations

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hivekeep.core.fts_query import (
    MAX_TERMS,
    TermSplit,
    build,
    common_terms_match,
    split_common,
    terms,
)


def test_terms_drop_stopwords_and_keep_short_words() -> None:
    assert terms("What did we decide about AI and Go?") == ("decide", "ai", "go")


def test_only_stopwords_are_kept_rather_than_searching_nothing() -> None:
    assert terms("what is it") == ("what", "is", "it")


def test_terms_are_distinct_and_lowercased() -> None:
    assert terms("Tea tea TEA coffee") == ("tea", "coffee")


def test_single_letters_are_dropped_but_digits_kept() -> None:
    assert terms("x 7 trip") == ("7", "trip")


def test_expressions_quote_every_term_with_prefix() -> None:
    query = build("Lisbon apartment")
    assert query.all_terms == '"lisbon"* AND "apartment"*'
    assert query.any_term == '"lisbon"* OR "apartment"*'


def test_ordinals_search_as_their_number() -> None:
    """ "8th December" finds a memory dated 8 December (the date is indexed as "8 December")."""
    assert terms("What did Tim read on 8th December, 2023?") == (
        "tim",
        "read",
        "8",
        "december",
        "2023",
    )
    assert terms("the 1st and the 22nd") == ("1", "22")
    assert terms("Aug 15th") == ("aug", "15")
    assert terms("5th8") == ("5th8",)  # not an ordinal: kept as typed


def test_hostile_operators_become_plain_words() -> None:
    query = build('"AND OR NEAR( * ^')
    assert query.all_terms == '"and"* AND "or"* AND "near"*'
    assert "(" not in query.all_terms and "^" not in query.all_terms


def test_no_words_means_no_query() -> None:
    assert not build("*** ^^ ((")
    assert build("*** ^^ ((").all_terms == ""


def test_terms_are_capped() -> None:
    assert len(terms(" ".join(f"word{i}" for i in range(100)))) == MAX_TERMS


def test_unicode_words_survive() -> None:
    assert terms("café São Paulo 東京") == ("café", "são", "paulo", "東京")


@pytest.fixture(scope="module")
def fts() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t(content) VALUES ('a harmless row about tea and AND OR NEAR')")
    return conn


@given(st.text(max_size=200))
def test_any_text_builds_valid_fts5_syntax(fts: apsw.Connection, text: str) -> None:
    query = build(text)
    for expression in (query.all_terms, query.any_term):
        if expression:
            list(fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)))


def test_common_terms_become_optional_and_keep_their_order() -> None:
    split = split_common(["ferry", "the", "lisbon", "later"], {"the", "later"})
    assert split == TermSplit(("ferry", "lisbon"), ("the", "later"))


def test_common_terms_match_whole_words_and_all_of_them_without_a_rare_term() -> None:
    assert common_terms_match(TermSplit(("tea",), ())) == '"tea"*'
    assert common_terms_match(TermSplit(("tea",), ("cup",))) == '("tea"*) AND ("tea"* OR "cup")'
    assert common_terms_match(TermSplit((), ("the", "cup"))) == '"the" AND "cup"'


def test_common_term_expressions_match_what_they_promise() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE d USING fts5(content, tokenize='porter unicode61')")
    for row in ("red car", "red old bike", "old car", "blue tram", "red"):
        conn.execute("INSERT INTO d(content) VALUES (?)", (row,))

    def rows(match: str) -> set[int]:
        return {r[0] for r in conn.execute("SELECT rowid FROM d WHERE d MATCH ?", (match,))}

    assert rows(common_terms_match(TermSplit(("bike", "tram"), ("red",)))) == {2, 4}
    assert rows(common_terms_match(TermSplit((), ("red", "car")))) == {1}
