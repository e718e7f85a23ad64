"""Where a PostgreSQL recall's time goes, and recall on both engines timed turn about.

    python bench/experiments/postgres_recall_profile.py [--size 20000] [--agents 1] [--queries 100]

Builds ``bench/scale.py``'s corpus into a SQLite file and a PostgreSQL schema (as
``bench/scale_postgres.py`` does), then, for usual and frequent-word queries:

1. each statement one PostgreSQL recall sends, in order, with its p50 time as psycopg waits for
   it (a statement sent in a pipeline is marked ``+``: it shares the round trip of the one
   before, and its time shows in the first fetch), the statements' sum and the rest of recall
   (Python: fusion, rows to records, the pool);
2. recall p50 of both engines timed turn about, query by query, so a busy machine slows both
   alike: the ratio is steadier than two runs one after the other (``bench/scale_postgres.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.scale import QUERIES, PreparedEmbedder, build
from bench.scale_data import frequent_queries, make_corpus
from hivekeep import Hive, Settings


@contextmanager
def timed_statements() -> Iterator[list[tuple[str, float]]]:
    """(first words of each statement, seconds until psycopg returned from it), this thread."""
    import psycopg

    seen: list[tuple[str, float]] = []
    execute = psycopg.Cursor.execute
    pipelines: list[int] = [0]  # id of the pipeline the last statement went in (0: none)

    def timed(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(self, query, params, **options)
        finally:
            text = query if isinstance(query, str) else query.as_string(None)
            pipeline = id(self.connection._pipeline) if self.connection._pipeline else 0
            mark = "+ " if pipeline and pipeline == pipelines[0] else ""
            pipelines[0] = pipeline
            seen.append((mark + " ".join(text.split())[:60], time.perf_counter() - start))

    psycopg.Cursor.execute = timed  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def profile(agent: Any, queries: list[str], count: int) -> None:
    per: dict[tuple[int, str], list[float]] = defaultdict(list)
    totals, sums = [], []
    for i in range(count + 5):
        with timed_statements() as seen:
            start = time.perf_counter()
            agent.recall(queries[i % len(queries)])
            total = time.perf_counter() - start
        if i < 5:
            continue  # warm-up
        totals.append(total)
        sums.append(sum(spent for _, spent in seen))
        for order, (text, spent) in enumerate(seen):
            per[(order, text)].append(spent)
    for (_, text), times in sorted(per.items()):
        print(f"    {statistics.median(times) * 1000:6.2f} ms  ({len(times)}x)  {text}")
    recall, sent = statistics.median(totals) * 1000, statistics.median(sums) * 1000
    print(f"    recall p50 {recall:.2f} ms: statements {sent:.2f} ms, the rest {recall - sent:.2f}")


def turn_about(agents: dict[str, Any], queries: list[str], count: int) -> dict[str, float]:
    spent: dict[str, list[float]] = {name: [] for name in agents}
    for i in range(count + 5):
        for name, agent in agents.items():
            start = time.perf_counter()
            agent.recall(queries[i % len(queries)])
            if i >= 5:
                spent[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) * 1000 for name, times in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--queries", type=int, default=100, help="timed recalls per kind")
    args = parser.parse_args()
    from tests.postgres import postgres_url

    corpus = make_corpus(args.size, QUERIES)
    embedder = PreparedEmbedder()
    embedder.add(corpus.texts, corpus.vectors)
    embedder.add(corpus.queries, corpus.query_vectors)
    frequent = frequent_queries(len(corpus.queries))
    embedder.add(frequent, corpus.query_vectors)
    kinds = {"usual": corpus.queries, "frequent": frequent}
    with tempfile.TemporaryDirectory() as folder, postgres_url() as url:
        targets = {"sqlite": str(Path(folder) / "hive.db"), "postgresql": url}
        for target in targets.values():
            build(target, corpus, embedder, args.agents)  # type: ignore[arg-type]
        hives = {
            name: Hive(t, embedder=embedder, settings=Settings()) for name, t in targets.items()
        }
        try:
            agents = {name: hive.get_agent("agent0") for name, hive in hives.items()}
            for kind, queries in kinds.items():
                print(
                    f"\n{args.size:,} memories, {args.agents} agent(s), {kind} queries: "
                    "PostgreSQL recall, statement by statement"
                )
                profile(agents["postgresql"], queries, args.queries)
            for kind, queries in kinds.items():
                p50 = turn_about(agents, queries, args.queries)
                print(
                    f"turn about, {kind}: SQLite {p50['sqlite']:.2f} ms, PostgreSQL "
                    f"{p50['postgresql']:.2f} ms, {p50['postgresql'] / p50['sqlite']:.2f}x"
                )
        finally:
            for hive in hives.values():
                hive.close()


if __name__ == "__main__":
    main()
