"""What each index of ``memories`` costs a PostgreSQL insert, and what the dedup lookup costs.

    python bench/experiments/postgres_index_cost.py [--base 20000] [--rows 3000]

On the tests' private pgserver (fsync off), bench/scale_data's clustered vectors and texts: a bare
copy of the memories table (``CREATE TABLE ... (LIKE memories INCLUDING ALL)`` minus indexes) is
filled with ``--base`` rows and given one index set at a time; then ``--rows`` more rows are
COPYed and timed (ms per row). Index sets: none, the b-trees, GIN on the stored tsvector, HNSW
``vector_cosine_ops`` (m / ef_construction), HNSW on a ``halfvec`` expression, everything. Then the
per-write neighbour lookup (``ORDER BY embedding <=> q LIMIT 8`` under the viewer's filter), each
statement alone and a batch of them through ``conn.pipeline()``, at two ``hnsw.ef_search``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.scale_data import make_corpus
from hivekeep import Hive, Settings
from hivekeep.core.text import normalise_text
from hivekeep.store.postgres.vectors import vector_literal

COLUMNS = (
    "agent_id, author_name, content, text_key, category, subject, scope, embedding, created_at, "
    "updated_at"
)
BTREES = [
    "CREATE INDEX ON t (agent_id, created_at)",
    "CREATE INDEX ON t (scope, created_at)",
    "CREATE INDEX ON t (text_key)",
]
SETS: dict[str, list[str]] = {
    "no index": [],
    "b-trees (3)": BTREES,
    "GIN (fts)": ["CREATE INDEX ON t USING gin (fts)"],
    "HNSW m16 ef64 (today)": ["CREATE INDEX ON t USING hnsw (embedding vector_cosine_ops)"],
    "HNSW m16 ef32": [
        "CREATE INDEX ON t USING hnsw (embedding vector_cosine_ops) WITH (ef_construction = 32)"
    ],
    "HNSW m8 ef32": [
        "CREATE INDEX ON t USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 8, ef_construction = 32)"
    ],
    "HNSW halfvec m16 ef64": [
        "CREATE INDEX ON t USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops)"
    ],
}


def rows_of(corpus: object, rows: range, agent: int) -> list[tuple[object, ...]]:
    c = corpus
    return [
        (
            agent,
            "agent0",
            c.texts[i],  # type: ignore[attr-defined]
            normalise_text(c.texts[i]),  # type: ignore[attr-defined]
            "fact",
            c.subjects[i],  # type: ignore[attr-defined]
            "private",
            vector_literal(c.vectors[i]),  # type: ignore[attr-defined]
            c.dates[i],  # type: ignore[attr-defined]
            c.dates[i],  # type: ignore[attr-defined]
        )
        for i in rows
    ]


def fresh_table(conn: object) -> None:
    """``t``: the memories table's columns (no index), vectors of 384 dimensions."""
    conn.execute(  # type: ignore[attr-defined]
        "CREATE TABLE t (LIKE memories INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY)"
    )
    conn.execute("ALTER TABLE t ALTER COLUMN embedding TYPE vector(384)")  # type: ignore[attr-defined]


def copy(conn: object, rows: list[tuple[object, ...]]) -> float:
    start = time.perf_counter()
    with conn.cursor().copy(f"COPY t ({COLUMNS}) FROM STDIN") as out:  # type: ignore[attr-defined]
        for row in rows:
            out.write_row(row)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--base", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=3_000)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated names")
    args = parser.parse_args()
    import psycopg

    from tests.postgres import postgres_url

    corpus = make_corpus(args.base + args.rows, 50)
    base = rows_of(corpus, range(args.base), 1)
    extra = rows_of(corpus, range(args.base, args.base + args.rows), 1)
    with postgres_url() as url:
        Hive(url, settings=Settings()).close()  # the schema, migrated
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("SET max_parallel_maintenance_workers = 1")
            for name in args.sets.split(","):
                conn.execute("DROP TABLE IF EXISTS t")
                fresh_table(conn)
                copy(conn, base)
                start = time.perf_counter()
                for statement in SETS[name]:
                    conn.execute(statement)
                built = time.perf_counter() - start
                conn.execute("VACUUM ANALYZE t")
                spent = copy(conn, extra)
                print(
                    f"| {name} | {built:.1f} s | {1000 * spent / args.rows:.2f} ms "
                    f"| {args.rows / spent:,.0f} /s |",
                    flush=True,
                )
            conn.execute("DROP TABLE IF EXISTS t")
            fresh_table(conn)
            copy(conn, base + extra)
            conn.execute(SETS["HNSW m16 ef64 (today)"][0])
            conn.execute("VACUUM ANALYZE t")
            conn.execute("SET hnsw.iterative_scan = strict_order")
            probe = [vector_literal(v) for v in corpus.vectors[: args.rows : 3][:500]]
            query = (
                "SELECT id, embedding <=> %(q)s::vector FROM t WHERE embedding IS NOT NULL "
                "AND (agent_id = %(a)s OR scope = 'shared') ORDER BY embedding <=> %(q)s::vector "
                "LIMIT 8"
            )
            exact = []
            for q in probe[:100]:
                with conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")
                    exact.append({r[0] for r in conn.execute(query, {"q": q, "a": 1})})
            for ef in (40, 100, 200):
                conn.execute(f"SET hnsw.ef_search = {ef}")
                start = time.perf_counter()
                got = [{r[0] for r in conn.execute(query, {"q": q, "a": 1})} for q in probe]
                alone = time.perf_counter() - start
                start = time.perf_counter()
                with conn.pipeline():
                    cursors = [conn.execute(query, {"q": q, "a": 1}) for q in probe]
                piped = [{r[0] for r in c.fetchall()} for c in cursors]
                spent = time.perf_counter() - start
                agree = np.mean([len(a & b) / 8 for a, b in zip(exact, got, strict=False)])
                assert piped == got
                print(
                    f"| neighbours ef_search {ef} | alone {1000 * alone / len(probe):.2f} ms "
                    f"| pipelined {1000 * spent / len(probe):.2f} ms "
                    f"| top-8 vs exact {agree:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
