"""Where ``memories``' row layout puts the vector and the tsvector, and what each arm pays for it.

    python bench/experiments/postgres_row_layout.py

20k rows of bench/scale_data's corpus COPYed into a copy of the memories table (GIN on ``fts``),
three ways: the default (pgvector's storage: a 1.5 kB vector moves to the TOAST table, the row
keeps its ``tsvector`` uncompressed), ``toast_tuple_target = 8160`` (nothing leaves the row), and
``embedding`` stored MAIN (the vector stays, so the text columns and the tsvector are compressed
instead). Timed: the full-text arm's any-term statement for four frequent words, and one exact
vector scan (no HNSW index).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.postgres_index_cost import copy, fresh_table, rows_of
from bench.scale_data import make_corpus
from hivekeep import Hive, Settings
from hivekeep.store.postgres.fulltext import ranked_search
from hivekeep.store.postgres.vectors import vector_literal
from tests.postgres import postgres_url

LAYOUTS = (
    ("default", ""),
    ("toast_tuple_target 8160", "ALTER TABLE t SET (toast_tuple_target = 8160)"),
    ("vector MAIN", "ALTER TABLE t ALTER COLUMN embedding SET STORAGE MAIN"),
)


def main() -> None:
    corpus = make_corpus(20000, 10)
    rows = rows_of(corpus, range(20000), 1)
    words = ["small", "really", "old", "autumn"]
    stmt, params = ranked_search(
        words, "(m.agent_id = %(viewer)s OR m.scope = 'shared')", {"viewer": 1}, 20, any_term=True
    )
    with postgres_url() as url:
        Hive(url, settings=Settings()).close()
        with psycopg.connect(url, autocommit=True) as conn:
            for label, opts in LAYOUTS:
                conn.execute("DROP TABLE IF EXISTS t")
                fresh_table(conn)
                if opts:
                    conn.execute(opts)
                copy(conn, rows)
                conn.execute("CREATE INDEX ON t USING gin (fts)")
                conn.execute("VACUUM ANALYZE t")
                text = stmt.as_string(conn).replace("FROM memories m", "FROM t m")
                times = []
                for _ in range(5):
                    s = time.perf_counter()
                    conn.execute(text, params, prepare=False).fetchall()
                    times.append(time.perf_counter() - s)
                q = vector_literal(corpus.vectors[3])
                s = time.perf_counter()
                conn.execute(
                    "SELECT id FROM t ORDER BY embedding <=> %s::vector LIMIT 8", (q,)
                ).fetchall()
                exact = time.perf_counter() - s
                size = conn.execute(
                    "SELECT pg_size_pretty(pg_relation_size('t')), "
                    "pg_size_pretty(pg_total_relation_size('t'))"
                ).fetchone()
                print(
                    f"| {label} | OR arm {sorted(times)[2] * 1000:.1f} ms "
                    f"| exact vector scan {exact * 1000:.1f} ms "
                    f"| heap {size[0]}, total {size[1]} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
