"""The SQLite full-text arm on frequent-word queries and with ten agents: where the time goes, and
the forms that cut it (issue 17, items 3-4).

    python bench/experiments/fts_common_terms.py [--size 20000] [--queries 100]

Hives are bench/scale.py's corpus (built once, bench/experiments/corpus_cache.py), one agent and
ten. Query sets: ``rare`` (bench/scale_data.py's queries: a name, a verb, a topic word) and
``frequent`` (four words each in 5-12 % of memories, ``frequent_queries``). Each variant returns
the arm's top 20 for agent 0; ``same@20`` is the share of today's top 20 it returns.

Variants (SQL on the store's own connection; an experiment, not the store's code):
- ``today``: ``recall_service.text_arm`` (AND, then OR fill; FTS5 ranks every match in rank
  order, each joined to ``memories`` for visibility until k pass).
- ``common``: terms whose document frequency (fts5vocab) is over ``CUTOFF`` of the rows become
  optional (``fts_query.split_common``): candidates must contain a rare term, the common ones only
  add to the score; with no rare term, only the newest ``BOUND`` matches are ranked.
- ``audience``: a copy of memory_fts with an ``audience`` column (``a<agent id>`` or
  ``shared``), ANDed into the MATCH with bm25 weight 0, so other agents' rows are never ranked.
- ``both``: ``common`` over the audience table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.corpus_cache import built_hive, corpus_and_embedder
from bench.scale import NO_FILTER, TOP
from bench.scale_data import frequent_queries
from hivekeep import Hive, Settings
from hivekeep.core import fts_query

CUTOFF = 0.03  # share of rows over which a term is common
BOUND = 1000  # newest matches ranked when every term is common
WEIGHTS = "bm25(memory_fts)"
VIS = "(m.agent_id = :viewer OR m.scope = 'shared')"


def add_audience_table(conn: apsw.Connection) -> None:
    """memory_fts plus an audience column, its bm25 weight 0 (built once per hive file)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts_aud'").fetchone():
        return
    conn.execute(
        "CREATE VIRTUAL TABLE fts_aud USING fts5(content, subject, context, audience, "
        "tokenize = 'porter unicode61 remove_diacritics 2');"
        "INSERT INTO fts_aud(fts_aud, rank) VALUES ('rank', 'bm25(1.0, 1.0, 1.0, 0.0)');"
        "INSERT INTO fts_aud(rowid, content, subject, context, audience) "
        "SELECT f.rowid, f.content, f.subject, f.context, "
        "CASE WHEN m.scope = 'shared' THEN 'shared' ELSE 'a' || m.agent_id END "
        "FROM memory_fts f JOIN memories m ON m.id = f.rowid"
    )


class Frequencies:
    """Document frequency of a prefix term from fts5vocab (sum over the indexed terms it prefixes;
    an upper bound, which errs towards 'common'), cached per process."""

    def __init__(self, conn: apsw.Connection) -> None:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_rows "
            "USING fts5vocab(main, memory_fts, row)"
        )
        self.conn = conn
        self.rows = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        self.known: dict[str, int] = {}

    def __call__(self, words: Sequence[str]) -> dict[str, int]:
        for w in words:
            if w not in self.known:
                self.known[w] = int(
                    self.conn.execute(
                        "SELECT coalesce(sum(doc), 0) FROM temp.fts_rows "
                        "WHERE term >= ? AND term < ?",
                        (w, w + "\U0010ffff"),
                    ).fetchone()[0]
                )
        return {w: self.known[w] for w in words}


def ranked(
    conn: apsw.Connection, table: str, match: str, viewer: int, k: int, extra: str = ""
) -> list[tuple[int, float]]:
    """FTS5's rank order, each match joined for visibility, until k passed (today's form)."""
    sql = (
        f"SELECT m.id, {table}.rank FROM {table} JOIN memories m ON m.id = {table}.rowid "
        f"WHERE {table} MATCH :match AND {VIS}{extra} ORDER BY {table}.rank"
    )
    found: list[tuple[int, float]] = []
    for memory_id, rank in conn.execute(sql, {"match": match, "viewer": viewer}):
        if len(found) >= k and rank > found[k - 1][1]:
            break
        found.append((int(memory_id), float(rank)))
    return found[:k]


def floor_rowid(conn: apsw.Connection, table: str, match: str, bound: int) -> int:
    """The rowid of the ``bound``-th newest match (0 when fewer): rowid order, no ranking."""
    row = conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (match, bound - 1),
    ).fetchone()
    return int(row[0]) if row else 0


def arm(
    conn: apsw.Connection,
    words: Sequence[str],
    viewer: int,
    k: int,
    frequencies: Frequencies | None,
    audience: bool,
) -> list[int]:
    """AND then OR fill, as today, with the common-term split and/or the audience column."""
    table = "fts_aud" if audience else "memory_fts"
    scope = f' AND audience : ("a{viewer}" OR "shared")' if audience else ""

    def wrap(expression: str) -> str:
        return f"({expression}){scope}" if scope else expression

    split = (
        fts_query.split_common(
            words, {w for w, n in frequencies(words).items() if n > CUTOFF * frequencies.rows}
        )
        if frequencies is not None
        else fts_query.TermSplit(tuple(words), ())
    )
    found = [i for i, _ in ranked(conn, table, wrap(fts_query.fts5_match(words)), viewer, k)]
    if len(found) >= k or len(words) < 2:
        return found
    tiers = []  # fill order: rows with a rare term (scored by all), then the newest BOUND
    if split.required and split.optional:
        tiers.append((fts_query.common_terms_match(split), ""))
    loose = fts_query.fts5_match(words, any_term=True)
    if split.optional:  # a common term: the loose OR would rank a large share of the hive
        tiers.append(
            (loose, f" AND {table}.rowid >= {floor_rowid(conn, table, wrap(loose), BOUND)}")
        )
    else:
        tiers.append((loose, ""))
    for expression, extra in tiers:
        for memory_id, _ in ranked(conn, table, wrap(expression), viewer, 2 * k, extra):
            if memory_id not in found and len(found) < k:
                found.append(memory_id)
        if len(found) >= k:
            break
    return found


def timed(call: Callable[[str], list[int]], queries: Sequence[str]) -> tuple[float, float]:
    spent = []
    for q in queries[:5]:
        call(q)
    for q in queries:
        start = time.perf_counter()
        call(q)
        spent.append(time.perf_counter() - start)
    ms = np.asarray(spent) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    corpus, embedder = corpus_and_embedder(args.size)
    sets = {"rare": corpus.queries[: args.queries], "frequent": frequent_queries(args.queries)}
    print("| agents | queries | variant | p50 ms | p95 ms | same@20 |")
    print("|---:|---|---|---:|---:|---:|")
    for agents in (1, 10):
        path = built_hive(args.size, agents, corpus, embedder)
        with Hive(path, embedder=embedder, settings=Settings()) as hive:
            report(hive, agents, sets)


def report(hive: Hive, agents: int, sets: dict[str, list[str]]) -> None:
    conn = hive.store._conn  # type: ignore[attr-defined]  # an experiment on the store's file
    add_audience_table(conn)
    frequencies = Frequencies(conn)
    viewer = hive.get_agent("agent0").id
    service = hive._services.recall
    variants: dict[str, Callable[[str], list[int]]] = {
        "today": lambda q: service.text_arm(viewer, q, TOP, NO_FILTER),
        "common": lambda q: arm(conn, fts_query.terms(q), viewer, TOP, frequencies, False),
        "audience": lambda q: arm(conn, fts_query.terms(q), viewer, TOP, None, True),
        "both": lambda q: arm(conn, fts_query.terms(q), viewer, TOP, frequencies, True),
    }
    for name, queries in sets.items():
        base = {q: variants["today"](q) for q in queries}
        for variant, call in variants.items():
            p50, p95 = timed(call, queries)
            same = np.mean(
                [len(set(call(q)) & set(base[q])) / max(1, len(base[q])) for q in queries]
            )
            print(
                f"| {agents} | {name} | {variant} | {p50:.2f} | {p95:.2f} | {same:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
