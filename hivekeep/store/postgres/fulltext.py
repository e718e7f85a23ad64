"""The PostgreSQL full-text arm: a GIN-indexed ``tsvector`` column (``memories.fts``, generated
from content, subject and context), prefix queries per word, ranked by ``ts_rank`` (with BM25 idf
weights for an any-term query). The SQLite store's arm is FTS5 (``sqlite/store.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from psycopg import sql

from hivekeep.store.sql.dialect import Session, TextQuery
from hivekeep.store.sql.memories import filter_sql

# Punctuation that splits a word (``first.last@example.com``), in the indexed text (the ``fts``
# column that migrations.py generates) and in the query words alike.
SPLIT_PUNCTUATION = "._-@/:+\\~"
_PUNCTUATION = str.maketrans(dict.fromkeys(SPLIT_PUNCTUATION, " "))
# A term matching more rows than this is common (as in sqlite/fulltext.py): in an any-term query
# rows must hold one of the other, rare terms, and it only adds to their score. Ranking costs
# about 14 µs a match here (17 ms for 1,237 matches at 20k), so an OR of four frequent
# words ranked a quarter of the hive; a hive that issued fewer ids is never probed.
COMMON_ROWS = 2000


_ISSUED = (
    "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('memories', 'id')::regclass), 0)"
)


def search_terms(terms: Sequence[str]) -> list[str]:
    """The terms that can match anything: split punctuation turned into spaces, terms without a
    letter or digit dropped (as ``fts_query.fts5_match`` drops them), repeats dropped."""
    if isinstance(terms, str):
        raise TypeError("text_search takes a sequence of words, not one string")
    kept: list[str] = []
    for term in terms:
        cleaned = " ".join(term.translate(_PUNCTUATION).split())
        if any(c.isalnum() for c in cleaned) and cleaned not in kept:
            kept.append(cleaned)
    return kept


def tsvector_search(s: Session, q: TextQuery) -> list[int]:
    """Visible matches passing the filters: best score first, then newer, then larger id.

    The score of a memory is the sum, over the terms, of ``ts_rank(fts, term, 1)`` (term
    frequency, divided by 1 + log of the document length). With ``any_term`` each term's part
    is weighted by its BM25 inverse document frequency, so a memory matching a rare term ranks
    above one matching a common term, as FTS5's bm25 ranks them: the document frequencies are
    counted over every match of the hive (all agents, as FTS5's are) in the same scan that
    ranks the viewer's matches; the hive's size is the number of memory ids issued (the id
    sequence: no count of the table). An AND query needs no weights: every match holds every
    term.

    GIN cannot hand matches over in rank order, so every visible match is ranked (about 30 ms
    for 15,000 matches); see docs/storage.md, "PostgreSQL". The statement is planned with its
    values every time (``prepare=False``): ``hivekeep_prefix_query(term)`` must fold to a
    constant for the GIN index.
    """
    words = search_terms(q.terms)
    if q.k <= 0 or not words:
        return []
    return _ranked(s, q, words, common_terms(s, words) if q.any_term and len(words) > 1 else set())


def tsvector_search_filled(s: Session, q: TextQuery) -> tuple[list[int], list[int]]:
    """``Store.text_search_filled``: the search of every term and the common-terms check of the
    fill sent together (one round trip, ``conn.pipeline()``), then the fill when needed. The
    check is wasted when every term finds ``k`` rows; recall's queries rarely do."""
    words = search_terms(q.terms)
    if q.k <= 0 or not words:
        return [], []
    where, params = filter_sql(s.dialect, q.viewer_id, q.filters)
    statement, params = ranked_search(words, where, params, int(q.k), False)
    with s.dialect.refused_values(), s.conn.pipeline():
        every = s.conn.execute(statement, params, prepare=False)
        common = _common_cursor(s, words) if len(words) > 1 else None
    found = [int(row[0]) for row in every.fetchall()]
    if len(found) >= q.k or len(q.terms) < 2:
        return found, []
    fill = dataclasses.replace(q, any_term=True)
    return found, _ranked(s, fill, words, set() if common is None else _verdict(common))


def _ranked(s: Session, q: TextQuery, words: list[str], common: set[str]) -> list[int]:
    where, params = filter_sql(s.dialect, q.viewer_id, q.filters)
    any_term = bool(q.any_term and len(common) < len(words))  # no rare term: every term required
    statement, params = ranked_search(words, where, params, int(q.k), any_term, common)
    with s.dialect.refused_values():
        rows = s.conn.execute(statement, params, prepare=False).fetchall()
    return [int(row[0]) for row in rows]


# A word's lexemes (stemmed as the ``fts`` column is) and, for each, the share of rows holding it
# in the table's statistics (``pg_stats.most_common_elems`` of ``fts``, kept current by ANALYZE
# after a bulk insert and by autovacuum) times the rows the planner believes the table holds.
# The statistics are read once (MATERIALIZED): inlined, the cast of the ~1,000 elements to
# ``text[]`` ran again for every lexeme (0.14 ms each, 0.56 ms for four words).
_COMMON = """
WITH st AS MATERIALIZED (SELECT s.most_common_elems::text::text[] AS elems,
     s.most_common_elem_freqs AS freqs, greatest(c.reltuples, 0) AS total
   FROM pg_stats s, pg_class c WHERE c.oid = 'memories'::regclass
   AND s.schemaname = current_schema() AND s.tablename = 'memories' AND s.attname = 'fts')
SELECT w.word FROM unnest(%(words)s::text[]) AS w(word),
  LATERAL (SELECT array_agg(lexeme) AS lexemes FROM unnest(
    to_tsvector('hivekeep_fts'::regconfig, hivekeep_fts_text(w.word)))) l, st
WHERE l.lexemes IS NOT NULL AND NOT EXISTS (SELECT 1 FROM unnest(l.lexemes) AS x(lexeme)
  WHERE coalesce(st.freqs[array_position(st.elems, x.lexeme)] * st.total, 0) <= %(bound)s)
"""


def common_terms(s: Session, words: Sequence[str]) -> set[str]:
    """The words whose every lexeme the table's statistics put in more than ``COMMON_ROWS``
    rows (of any agent, as SQLite's count; whole words, as SQLite's probe): one statement
    reading ``pg_stats`` (about 0.2 ms), and the ids issued with it. Counting a frequent word's
    matches instead (``OFFSET 2000`` on the GIN index) read 2,000 heap rows a word: 44 -> 88 ms
    for a frequent-word recall at 20k. None in a hive that issued at most ``COMMON_ROWS`` ids."""
    return _verdict(_common_cursor(s, words))


def _common_cursor(s: Session, words: Sequence[str]) -> Any:
    return s.conn.execute(
        f"SELECT CASE WHEN ({_ISSUED}) > %(bound)s THEN array(SELECT word FROM ({_COMMON}) c) END",
        {"words": list(words), "bound": COMMON_ROWS},
    )


def _verdict(cursor: Any) -> set[str]:
    row = cursor.fetchone()
    return set() if row is None or row[0] is None else {str(word) for word in row[0]}


def ranked_search(
    words: Sequence[str],
    where: str,
    params: dict[str, Any],
    k: int,
    any_term: bool,
    common: Collection[str] = (),
) -> tuple[sql.Composed, dict[str, Any]]:
    """The ranked search over ``m`` (memories) passing ``where`` (from ``filter_sql``), with its
    parameters: best score first, then newer, then larger id. With ``any_term``, rows must hold
    a word not in ``common``; the common ones only score."""
    params |= {f"t{i}": word for i, word in enumerate(words)}
    queries = [
        sql.SQL("hivekeep_prefix_query({})").format(sql.Placeholder(f"t{i}"))
        for i in range(len(words))
    ]
    if any_term and len(words) > 1:
        rare = [bool(word not in common) for word in words]  # truth values only, never text
        query = _weighted_any_term(queries, rare, sql.SQL(where), int(k))
    else:
        score = sql.SQL(" + ").join(
            sql.SQL("ts_rank(m.fts, {}, 1)").format(query) for query in queries
        )
        query = sql.SQL(
            "SELECT m.id FROM memories m WHERE m.fts @@ ({match}) AND {where} "
            "ORDER BY {score} DESC, m.created_at DESC, m.id DESC LIMIT {k}"
        ).format(
            match=sql.SQL(" && ").join(queries),
            where=sql.SQL(where),
            score=score,
            k=sql.Literal(int(k)),
        )
    return query, params


def _weighted_any_term(
    queries: Sequence[sql.Composable], rare: Sequence[bool], where: sql.SQL, k: int
) -> sql.Composed:
    """OR of the rare terms, each term's rank weighted by its BM25 idf, in one scan of the
    matches. A common term's document frequency is counted among those matches, so it is taken
    as at least ``COMMON_ROWS + 1`` (its idf at most that of a rare term).

    The OR reaches the scan as an InitPlan value, which the planner cannot estimate: it takes
    the GIN bitmap scan, never the sequential scan it chose once the matches were a quarter of
    the hive (four frequent words at 20k: 5,297 matches, 24 ms, against 12 ms by the index,
    which reads only the matching rows). Each row is ranked only for the terms it holds (the
    subquery's ``OFFSET 0`` keeps the matches computed once) and only when the viewer may see
    it; every match still counts toward the terms' document frequencies."""
    n = len(queries)
    numbers = [sql.Literal(i) for i in range(n)]
    found = sql.SQL(", ").join(
        sql.SQL("m.fts @@ {} AS h{}").format(query, i)
        for i, query in zip(numbers, queries, strict=True)
    )
    ranks = sql.SQL(", ").join(
        sql.SQL(
            "CASE WHEN x.visible AND x.h{0} THEN ts_rank(x.fts, {1}, 1) ELSE 0 END AS r{0}"
        ).format(i, query)
        for i, query in zip(numbers, queries, strict=True)
    )
    counts = sql.SQL(", ").join(
        sql.SQL("count(*) FILTER (WHERE h{0})::float8 AS n{0}").format(i)
        if kept
        else sql.SQL("greatest(count(*) FILTER (WHERE h{0}), {1})::float8 AS n{0}").format(
            i, sql.Literal(COMMON_ROWS + 1)
        )
        for i, kept in zip(numbers, rare, strict=True)
    )
    idf = sql.SQL(", ").join(
        sql.SQL("ln(1.0::float8 + (n - n{0} + 0.5::float8) / (n{0} + 0.5::float8)) AS i{0}").format(
            i
        )
        for i in numbers
    )
    score = sql.SQL(" + ").join(sql.SQL("w.i{0} * hits.r{0}").format(i) for i in numbers)
    held = sql.SQL(", ").join(sql.SQL("x.h{}").format(i) for i in numbers)
    return sql.SQL(
        "WITH hits AS MATERIALIZED (SELECT x.id, x.created_at, x.visible, {held}, {ranks} "
        "FROM (SELECT m.id, m.created_at, m.fts, {where} AS visible, {found} FROM memories m "
        "WHERE m.fts @@ (SELECT {any}) OFFSET 0) x), "
        "w AS (SELECT {idf} FROM (SELECT greatest(count(*), max(s.issued))::float8 AS n, "
        "{counts} FROM hits, (" + _ISSUED + " AS issued) s) c) "
        "SELECT hits.id FROM hits, w WHERE hits.visible "
        "ORDER BY {score} DESC, hits.created_at DESC, hits.id DESC LIMIT {k}"
    ).format(
        where=where,
        any=sql.SQL(" || ").join(q for q, kept in zip(queries, rare, strict=True) if kept),
        found=found,
        held=held,
        ranks=ranks,
        idf=idf,
        counts=counts,
        score=score,
        k=sql.Literal(k),
    )
