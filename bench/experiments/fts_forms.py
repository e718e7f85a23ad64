"""The OR fill of the full-text arm, form by form, on frequent-word queries (issue 17, item 3).

    python bench/experiments/fts_forms.py [--size 20000] [--queries 60] [--rounds 3]

The OR of a frequent-word query matches a large share of the hive and FTS5 ranks every match;
this times the fill's forms alone, interleaved query by query (the machine is shared, so each
form sees the same load), for agent 0 of a one-agent and a ten-agent hive (bench/scale.py's
corpus, built once by bench/experiments/corpus_cache.py; the audience table is
fts_common_terms.py's). ``matches``: mean OR matches per query.
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
from bench.experiments.fts_common_terms import (
    BOUND,
    VIS,
    add_audience_table,
    floor_rowid,
    ranked,
)
from bench.scale_data import frequent_queries
from hivekeep.core import fts_query

K = 20


MAX_PAIRED = 8  # terms past this are left out of ``at_least_two`` (8 terms: 28 pairs)


def at_least_two(words: Sequence[str]) -> str:
    """An FTS5 expression matching rows with at least two of the words (a minimum-should-match).

    The fill for a query of common terms only: a row holding one common term cannot outrank, by
    much, a row holding two of them, so ranking the rows with two (a small share of the rows
    with any) finds nearly the same top k at a fraction of the cost (MaxScore's argument, taken
    one step). Fewer than two words: the plain OR. Measured and rejected for the store (pairs of
    prefixes cost more to evaluate than the ranking they save: docs/benchmarks.md).
    """
    kept = list(words)[:MAX_PAIRED]
    if len(kept) < 2:
        return fts_query.fts5_match(kept, any_term=True)
    pairs = [
        f"({fts_query.fts5_match([first, second])})"
        for i, first in enumerate(kept)
        for second in kept[i + 1 :]
    ]
    return " OR ".join(pairs)


def forms(conn: apsw.Connection, viewer: int) -> dict[str, Callable[[str], list[int]]]:
    scope = f' AND audience : ("a{viewer}" OR "shared")'

    def top_n(match: str) -> list[int]:
        sql = (
            "SELECT m.id FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH :match AND {VIS} ORDER BY bm25(memory_fts) LIMIT :k"
        )
        return [r[0] for r in conn.execute(sql, {"match": match, "viewer": viewer, "k": K})]

    def bounded(match: str) -> list[int]:
        floor = floor_rowid(conn, "memory_fts", match, BOUND)
        return [
            i
            for i, _ in ranked(
                conn, "memory_fts", match, viewer, K, f" AND memory_fts.rowid >= {floor}"
            )
        ]

    def audience_top_n(match: str) -> list[int]:
        sql = "SELECT rowid FROM fts_aud WHERE fts_aud MATCH ? ORDER BY rank LIMIT ?"
        return [r[0] for r in conn.execute(sql, (f"({match}){scope}", K))]

    def audience_bounded(match: str) -> list[int]:
        expression = f"({match}){scope}"
        floor = floor_rowid(conn, "fts_aud", expression, BOUND)
        sql = "SELECT rowid FROM fts_aud WHERE fts_aud MATCH ? AND rowid >= ? ORDER BY rank LIMIT ?"
        return [r[0] for r in conn.execute(sql, (expression, floor, K))]

    def pairs(match: str) -> list[int]:
        words = [w.strip('"*') for w in match.split(" OR ")]
        expression = at_least_two(words)
        return [i for i, _ in ranked(conn, "memory_fts", expression, viewer, K)]

    def audience_pairs(match: str) -> list[int]:
        words = [w.strip('"*') for w in match.split(" OR ")]
        expression = f"({at_least_two(words)}){scope}"
        sql = "SELECT rowid FROM fts_aud WHERE fts_aud MATCH ? ORDER BY rank LIMIT ?"
        return [r[0] for r in conn.execute(sql, (expression, K))]

    return {
        "at least two terms, rank order, join, stop at k": pairs,
        "audience column, at least two terms, LIMIT k": audience_pairs,
        "today (rank order, join, stop at k)": lambda m: [
            i for i, _ in ranked(conn, "memory_fts", m, viewer, K)
        ],
        "ORDER BY bm25() LIMIT k, joined": top_n,
        f"newest {BOUND} matches only": bounded,
        "audience column, ORDER BY rank LIMIT k, no join": audience_top_n,
        f"audience column, newest {BOUND} only": audience_bounded,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    corpus, embedder = corpus_and_embedder(args.size)
    matches = [
        fts_query.fts5_match(fts_query.terms(q), any_term=True)
        for q in frequent_queries(args.queries)
    ]
    print("| agents | form | p50 ms | p95 ms | same@20 | matches |")
    print("|---:|---|---:|---:|---:|---:|")
    for agents in (1, 10):
        conn = apsw.Connection(str(built_hive(args.size, agents, corpus, embedder)))
        add_audience_table(conn)
        viewer = int(conn.execute("SELECT id FROM agents WHERE name = 'agent0'").fetchone()[0])
        found = forms(conn, viewer)
        spent: dict[str, list[float]] = {name: [] for name in found}
        same: dict[str, list[float]] = {name: [] for name in found}
        count = np.mean(
            [
                conn.execute("SELECT count(*) FROM memory_fts(?)", (m,)).fetchone()[0]
                for m in matches
            ]
        )
        for _ in range(args.rounds):
            for match in matches:
                base = set(next(iter(found.values()))(match))
                for name, call in found.items():
                    start = time.perf_counter()
                    got = call(match)
                    spent[name].append(time.perf_counter() - start)
                    same[name].append(len(set(got) & base) / max(1, len(base)))
        for name in found:
            ms = np.asarray(spent[name]) * 1000
            print(
                f"| {agents} | {name} | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 95):.2f} "
                f"| {np.mean(same[name]):.2f} | {count:,.0f} |",
                flush=True,
            )
        conn.close()


if __name__ == "__main__":
    main()
