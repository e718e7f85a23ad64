"""The full-text arm alone, as recall runs it (AND, then the OR fill), on a built hive.

    python bench/experiments/fts_arm.py HIVE.db [--queries 60]

Times ``store.text_search`` for agent 1 (agent0 of bench/scale.py's hives) on the usual queries
(a name, a verb, a rare topic word) and on frequent-word ones (bench/scale_data.py). Run it from
another checkout to time another version of the arm on the same file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.scale_data import frequent_queries, make_corpus
from hivekeep.core import fts_query
from hivekeep.store.base import MemoryFilter
from hivekeep.store.sqlite import SQLiteStore

TOP = 20


def arm(store: SQLiteStore, query: str) -> list[int]:
    """recall's text arm (services/recall.py ``text_arm``) for agent 1."""
    words = fts_query.terms(query)
    found = store.text_search(1, words, TOP, MemoryFilter())
    if len(found) < TOP and len(words) > 1:
        extra = store.text_search(1, words, TOP, MemoryFilter(), any_term=True)
        found += [i for i in extra if i not in found]
    return found[:TOP]


def percentiles(store: SQLiteStore, queries: Sequence[str]) -> tuple[float, float]:
    spent = []
    for query in queries:
        start = time.perf_counter()
        arm(store, query)
        spent.append((time.perf_counter() - start) * 1000)
    spent.sort()
    return spent[len(spent) // 2], spent[int(len(spent) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("hive", type=Path)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    store = SQLiteStore(args.hive, vector_cache=False)
    usual = make_corpus(1000, args.queries).queries
    for name, queries in (("usual", usual), ("frequent", frequent_queries(args.queries))):
        p50, p95 = percentiles(store, queries)
        print(f"{args.hive.name} {name}: text arm p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    store.close()


if __name__ == "__main__":
    main()
