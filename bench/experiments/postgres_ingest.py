"""PostgreSQL bulk ingest: where memorize_many's time goes, and a batched path (issue 17, item 1).

    python bench/experiments/postgres_ingest.py [--size 20000] [--batch 1000]

On the tests' private pgserver (tests/postgres.py, fsync off), bench/scale.py's corpus for one
agent. ``memorize_many`` (as shipped) writes the first ``--baseline`` memories; then the rest go
through a prototype of a batched insert, timed part by part per batch of ``--batch``:

- ``same text``: one query for the batch's normalised texts among the author's visible memories
  (``text_key = ANY(...)``), where today each write asks for its own;
- ``neighbours``: the ``NEIGHBOURS`` closest visible vectors of every write in one statement
  (``unnest`` of the batch's vectors, ``CROSS JOIN LATERAL`` an HNSW scan each, with the store's
  iterative-scan settings), plus the batch compared with itself in numpy (a duplicate inside one
  call);
- ``COPY``: the rows that pass, written by ``COPY memories (...) FROM STDIN`` (the stored tsvector
  and GIN, HNSW and b-tree indexes maintained as usual).

Dedup verdicts are not applied (the corpus has no duplicates: the queries must find nothing, and
the count of candidates over the floor is printed to show it). Rebuilding the indexes after a bulk
import is timed too (``--rebuild``: DROP, COPY, CREATE INDEX).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.corpus_cache import corpus_and_embedder
from bench.scale_data import Corpus
from hivekeep import Hive, Settings
from hivekeep.core.dedup import NEIGHBOURS
from hivekeep.core.text import normalise_text, now_timestamp

FLOOR = 0.9  # the default dedup floor's order of magnitude; the corpus stays far below it
COLUMNS = (
    "agent_id, author_name, content, text_key, category, subject, subject_key, scope, "
    "embedding_state, embedding_model, embedding, created_at, updated_at"
)
NEIGHBOURS_SQL = (
    "SELECT q.i, n.id, n.distance FROM unnest(%(i)s::int[], %(v)s::vector[]) AS q(i, v) "
    "CROSS JOIN LATERAL (SELECT m.id, m.embedding <=> q.v AS distance FROM memories m "
    "WHERE m.embedding IS NOT NULL AND (m.agent_id = %(viewer)s OR m.scope = 'shared') "
    "ORDER BY m.embedding <=> q.v LIMIT %(k)s) AS n"
)


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def batched(conn: object, corpus: Corpus, rows: range, agent: int, model: str) -> dict[str, float]:
    """One batch through the prototype; seconds per part."""
    spent: dict[str, float] = {}
    keys = [normalise_text(corpus.texts[i]) for i in rows]
    start = time.perf_counter()
    with conn.transaction():  # type: ignore[attr-defined]
        same = conn.execute(  # type: ignore[attr-defined]
            "SELECT text_key, id FROM memories WHERE text_key = ANY(%s) "
            "AND (agent_id = %s OR scope = 'shared')",
            (keys, agent),
        ).fetchall()
        spent["same text"] = time.perf_counter() - start
        start = time.perf_counter()
        vectors = corpus.vectors[rows.start : rows.stop : rows.step]
        texts = [literal(v) for v in vectors]
        spent["vector literals"] = time.perf_counter() - start
        start = time.perf_counter()
        close = conn.execute(  # type: ignore[attr-defined]
            NEIGHBOURS_SQL,
            {"i": list(range(len(texts))), "v": texts, "viewer": agent, "k": NEIGHBOURS},
        ).fetchall()
        within = vectors @ vectors.T
        np.fill_diagonal(within, -1.0)
        spent["neighbours"] = time.perf_counter() - start
        over = sum(1 for _, _, d in close if 1.0 - d >= FLOOR) + int((within >= FLOOR).sum())
        start = time.perf_counter()
        now = now_timestamp()
        with conn.cursor().copy(f"COPY memories ({COLUMNS}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for j, i in enumerate(rows):
                copy.write_row(
                    (
                        agent,
                        "agent0",
                        corpus.texts[i],
                        keys[j],
                        corpus.categories[i],
                        corpus.subjects[i],
                        corpus.subjects[i].strip().casefold(),
                        "private",
                        "ready",
                        model,
                        texts[j],
                        corpus.dates[i],
                        now,
                    )
                )
        spent["COPY"] = time.perf_counter() - start
    spent["found"] = float(len(same) + over)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--baseline", type=int, default=3_000)
    parser.add_argument("--batch", type=int, default=1_000)
    args = parser.parse_args()
    import psycopg

    from tests.postgres import postgres_url

    corpus, embedder = corpus_and_embedder(args.size)
    with postgres_url() as url:
        with Hive(url, embedder=embedder, settings=Settings()) as hive:
            agent = hive.create_agent("agent0")
            start = time.perf_counter()
            for first in range(0, args.baseline, 1000):
                agent.memorize_many(corpus.items(range(first, min(args.baseline, first + 1000))))
            baseline = args.baseline / (time.perf_counter() - start)
            agent_id = agent.id
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET hnsw.iterative_scan = strict_order")
            conn.execute("SET hnsw.ef_search = 200")
            model = conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
            indexes = [
                r[0]
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes "
                    "WHERE tablename = 'memories' AND schemaname = current_schema()"
                )
            ]
            totals: dict[str, float] = {}
            start = time.perf_counter()
            for first in range(args.baseline, args.size, args.batch):
                part = batched(
                    conn,
                    corpus,
                    range(first, min(args.size, first + args.batch)),
                    agent_id,
                    model[0],
                )
                print(
                    f"  batch at {first:,}: " + ", ".join(f"{n} {v:.2f}" for n, v in part.items()),
                    flush=True,
                )
                for name, seconds in part.items():
                    totals[name] = totals.get(name, 0.0) + seconds
            done = args.size - args.baseline
            rate = done / (time.perf_counter() - start)
            print(f"indexes kept up: {', '.join(indexes)}")
            print(f"memorize_many as shipped, first {args.baseline:,}: {baseline:,.0f} memories/s")
            print(
                f"batched prototype, next {done:,} (batches of {args.batch:,}): "
                f"{rate:,.0f} memories/s"
            )
            print(f"dedup candidates over {FLOOR} found: {totals.pop('found'):.0f}")
            for name, seconds in totals.items():
                print(f"  {name}: {1000 * seconds / done:.3f} ms per memory")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
