"""The SQLite full-text arm: FTS5 (``memory_fts``, kept in step with ``memories`` by triggers),
ranked by bm25. The PostgreSQL arm is ``postgres/fulltext.py``."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import apsw

from hivekeep.core import fts_query
from hivekeep.errors import StoreError
from hivekeep.store.sql.dialect import Session, TextQuery
from hivekeep.store.sql.memories import filter_sql
from hivekeep.types import Scope

TEXT_COLUMNS = "{content subject context}"  # a query's words never match the audience column

# A term matching more rows than this is common: it only counts together with the query's other
# terms (Lucene's CommonTermsQuery). Ranking costs FTS5 about 1.5 µs a match, so this bounds what
# one common term adds to the OR; a hive with fewer memories never has a common term.
COMMON_ROWS = 2000


def _best_first(hits: list[tuple[int, float, str]]) -> list[tuple[int, float, str]]:
    """``(id, rank, created_at)`` hits ordered by bm25 rank (lower is better), newer, larger id."""
    hits = sorted(hits, key=lambda hit: hit[0], reverse=True)
    hits.sort(key=lambda hit: hit[2], reverse=True)
    hits.sort(key=lambda hit: hit[1])
    return hits


def audience(q: TextQuery) -> str:
    """The FTS5 condition on the audience column (``m007_fts_audience``) that every memory the
    viewer may see passes: its own private ones, and every shared one."""
    if q.filters.scope is Scope.SHARED:
        return 'audience : "shared"'
    if q.filters.scope is Scope.PRIVATE:
        return f'audience : "a{q.viewer_id}"'
    return f'audience : ("a{q.viewer_id}" OR "shared")'


# Per connection: the file's state (and the bound) when the words below were probed, and each
# word's verdict (common or not). Recall asks twice in a row (the AND, then the OR fill) about
# the same words.
_PROBED: weakref.WeakKeyDictionary[apsw.Connection, tuple[tuple[int, ...], dict[str, bool]]]
_PROBED = weakref.WeakKeyDictionary()
PROBED_WORDS = 1000  # verdicts kept per connection; past this they start over


def common_terms(s: Session, words: Sequence[str]) -> set[str]:
    """The words found, as whole words, in more than ``COMMON_ROWS`` rows (in any column, by any
    agent: an upper bound).

    Reading a word's matches in rowid order ranks nothing: about 0.2 ms for 2,000 rows at 100k
    (0.6 ms as a prefix, 0.8 ms limited to the text columns); a hive whose ids stay under the
    bound is not probed at all. A verdict is kept until the file changes (another connection's
    commit moves ``data_version``, this one's writes ``total_changes``), so the OR fill reuses
    the AND's probes: they were half of a frequent-word arm's work.
    """
    conn = s.conn
    newest = conn.execute("SELECT max(rowid) FROM memory_fts").fetchone()[0]
    if newest is None or newest <= COMMON_ROWS:
        return set()
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    state = (version, int(conn.total_changes()), COMMON_ROWS)
    seen, verdicts = _PROBED.get(conn, (None, {}))
    if seen != state or len(verdicts) > PROBED_WORDS:
        verdicts = {}
        _PROBED[conn] = (state, verdicts)
    for word in words:
        if word not in verdicts:
            term = fts_query.fts5_match([word], prefix=False)
            verdicts[word] = bool(
                term
                and conn.execute(
                    "SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT 1 OFFSET ?",
                    (term, COMMON_ROWS),
                ).fetchone()
            )
    return {word for word in words if verdicts[word]}


def expression(s: Session, q: TextQuery) -> str:
    """The user's part of the MATCH: every term, or for ``any_term`` at least one, where common
    terms only score. The fill's OR would rank every row holding any common term (a quarter of
    a hive for four frequent words, 60-140 ms at 100k): with a rare term among them, rows must
    hold a rare one; with none, every term is required (``fts_query.common_terms_match``).
    Common terms match as whole words in both (``fts_query.all_terms_match``)."""
    if isinstance(q.terms, str) or len(q.terms) < 2:
        return fts_query.fts5_match(q.terms)  # one string: a TypeError, not its letters
    split = fts_query.split_common(q.terms, common_terms(s, q.terms))
    if q.any_term:
        return fts_query.common_terms_match(split)
    return fts_query.all_terms_match(split)


SAMPLE = 64  # memories sampled, evenly over the ids, for the viewer's share of the hive


def viewer_share(s: Session, viewer_id: int) -> float:
    """About what share of the hive the viewer may see: ``SAMPLE`` ids spread evenly from the
    first to the newest, looked up by primary key (about 0.1 ms at any size)."""
    newest = s.conn.execute("SELECT max(rowid) FROM memory_fts").fetchone()[0]
    if newest is None:
        return 1.0
    ids = sorted({1 + (int(newest) - 1) * i // (SAMPLE - 1) for i in range(SAMPLE)})
    among, params = s.dialect.any_of("id", ids)
    rows = s.rows(
        f"SELECT agent_id = ? OR scope = 'shared' FROM memories WHERE {among}", [viewer_id, *params]
    )
    return sum(int(visible) for (visible,) in rows) / len(rows) if rows else 1.0


NARROW_BELOW = 0.5  # the audience condition pays when the viewer may see less than this share


def fts5_search(s: Session, q: TextQuery) -> list[int]:
    """Visible matches passing the filters: bm25 rank first, then newer first, then larger id.

    When the viewer may see under half the hive, the MATCH carries visibility (the audience
    column), so FTS5 ranks only rows the viewer may see: other agents' rows cost nothing and
    never crowd the viewer's out. With no other filter the arm is then FTS5 alone. Otherwise
    (one agent's hive: the condition would cost a pass over every row's audience, 1.2 to 5.7 ms
    for an AND at 100k) each match is joined to ``memories`` for visibility and the filters as
    FTS5 hands it over in rank order. Either way reading stops once ``k`` have passed and the
    rank has moved past the k-th one's (every row tied with the k-th is read, so the order is
    exactly that of sorting all matches; creation times break ties). Figures:
    docs/benchmarks.md, "Issue 17, SQLite".

    With a subject filter, which few matches pass, SQL joins every match and FTS5 ranks only
    those that pass, cheaper than ranking all of them.
    """
    k = q.k
    words = expression(s, q) if k > 0 else ""
    if not words:
        return []
    narrow = viewer_share(s, q.viewer_id) < NARROW_BELOW
    match = f"{TEXT_COLUMNS} : ({words})" + (f" AND {audience(q)}" if narrow else "")
    filters = q.filters
    joined = not narrow or filters.category is not None or filters.since is not None or filters.own
    if filters.subject is not None:
        where, params = filter_sql(s.dialect, q.viewer_id, filters)
        sql = (
            "SELECT m.id, memory_fts.rank, m.created_at FROM memory_fts "
            "JOIN memories m ON m.id = memory_fts.rowid WHERE memory_fts MATCH :match "
            f"AND {where} ORDER BY memory_fts.rank, m.created_at DESC, m.id DESC LIMIT :k"
        )
    elif joined:
        where, params = filter_sql(s.dialect, q.viewer_id, filters)
        sql = (
            "SELECT m.id, memory_fts.rank, m.created_at FROM memory_fts "
            "JOIN memories m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH :match AND {where} ORDER BY memory_fts.rank"
        )
    else:
        params = {}
        sql = "SELECT rowid, rank, '' FROM memory_fts WHERE memory_fts MATCH :match ORDER BY rank"
    found: list[tuple[int, float, str]] = []
    cursor = s.conn.cursor()
    try:
        for memory_id, rank, created_at in cursor.execute(sql, {**params, "match": match, "k": k}):
            if len(found) >= k and rank > found[k - 1][1]:
                break
            found.append((int(memory_id), float(rank), str(created_at)))
    except apsw.SQLError as exc:
        raise StoreError(f"Full-text query {match!r} was rejected: {exc}.") from exc
    finally:
        cursor.close()
    if not joined and filters.subject is None:
        found = _with_created_at(s, found)
    return [memory_id for memory_id, _, _ in _best_first(found)[:k]]


def _with_created_at(
    s: Session, found: list[tuple[int, float, str]]
) -> list[tuple[int, float, str]]:
    """The hits with their creation times, which break ties in rank."""
    if not found:
        return found
    among, params = s.dialect.any_of("id", [memory_id for memory_id, _, _ in found])
    created = dict(s.rows(f"SELECT id, created_at FROM memories WHERE {among}", params))
    return [(memory_id, rank, str(created[memory_id])) for memory_id, rank, _ in found]
