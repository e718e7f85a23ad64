"""What recall's retrieval-count write costs PostgreSQL, by fillfactor, and in a narrow table.

    python bench/experiments/postgres_retrieval_update.py [--base 20000] [--rounds 200]

On the tests' private pgserver (fsync off), bench/scale_data's vectors and texts: a copy of the
memories table with all its indexes (HNSW included) is filled with ``--base`` rows, rewritten at
each fillfactor (``VACUUM FULL``), and given ``--rounds`` writes of 20 random ids in the form
``PostgresStore.mark_retrieved`` sends (one UPDATE ... FROM unnest, one transaction each): ms per
write (p50 / p95), the share of HOT updates (no index entry made: pg_stat_user_tables), the table
size. Last, the same writes as an upsert into a narrow table of (id, count, last time) only.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.postgres_index_cost import copy, rows_of
from bench.scale_data import make_corpus
from hivekeep import Hive, Settings

UPDATE = (
    "UPDATE {table} m SET retrieval_count = m.retrieval_count + n.times, last_retrieved_at = %s "
    "FROM (SELECT id, count(*) AS times FROM unnest(%s::bigint[]) AS u(id) GROUP BY id) n "
    "WHERE m.id = n.id"
)
UPSERT = (
    "INSERT INTO r (id, retrieval_count, last_retrieved_at) SELECT id, count(*), %s "
    "FROM unnest(%s::bigint[]) AS u(id) GROUP BY id ON CONFLICT (id) DO UPDATE SET "
    "retrieval_count = r.retrieval_count + excluded.retrieval_count, "
    "last_retrieved_at = excluded.last_retrieved_at"
)


def timed_writes(conn: object, statement: str, rounds: int, base: int) -> list[float]:
    picker = random.Random(7)
    spent = []
    for i in range(rounds):
        ids = picker.sample(range(1, base + 1), 20)
        start = time.perf_counter()
        with conn.transaction():  # type: ignore[attr-defined]
            conn.execute(statement, (f"2026-01-01T00:00:{i:06d}", ids))  # type: ignore[attr-defined]
        spent.append(1000 * (time.perf_counter() - start))
    return sorted(spent)


def hot_share(conn: object, table: str) -> tuple[int, int]:
    time.sleep(1.5)  # the statistics collector flushes about once a second
    conn.execute("SELECT pg_stat_clear_snapshot()")  # type: ignore[attr-defined]
    row = conn.execute(  # type: ignore[attr-defined]
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = %s", (table,)
    ).fetchone()
    return int(row[0]), int(row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--base", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--fillfactors", default="100,80,60,50")
    args = parser.parse_args()
    import psycopg

    from tests.postgres import postgres_url

    corpus = make_corpus(args.base, 50)
    rows = rows_of(corpus, range(args.base), 1)
    print("| table | fillfactor | ms p50 | ms p95 | HOT updates | table size |")
    print("|---|---:|---:|---:|---:|---:|")
    with postgres_url() as url:
        Hive(url, settings=Settings()).close()  # the schema, migrated
        with psycopg.connect(url, autocommit=True) as conn:
            agent = conn.execute(
                "INSERT INTO agents (name, created_at, updated_at) "
                "VALUES ('agent0', '2026', '2026') RETURNING id"
            ).fetchone()
            assert agent is not None
            rows = [(agent[0], *row[1:]) for row in rows]
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("DROP TABLE IF EXISTS t")
            conn.execute("CREATE TABLE t (LIKE memories INCLUDING ALL)")
            conn.execute("ALTER TABLE t ALTER COLUMN embedding TYPE vector(384)")
            conn.execute("CREATE INDEX ON t USING hnsw (embedding vector_cosine_ops)")
            copy(conn, rows)
            for fill in (int(f) for f in args.fillfactors.split(",")):
                conn.execute(f"ALTER TABLE t SET (fillfactor = {fill})")
                conn.execute("VACUUM FULL t")
                conn.execute("ANALYZE t")
                before = hot_share(conn, "t")
                spent = timed_writes(conn, UPDATE.format(table="t"), args.rounds, args.base)
                after = hot_share(conn, "t")
                size = conn.execute("SELECT pg_size_pretty(pg_table_size('t'))").fetchone()
                updated, hot = after[0] - before[0], after[1] - before[1]
                print(
                    f"| memories copy | {fill} | {spent[len(spent) // 2]:.2f} "
                    f"| {spent[int(len(spent) * 0.95)]:.2f} | {hot} of {updated} "
                    f"| {size[0] if size else '?'} |",
                    flush=True,
                )
            conn.execute(
                "CREATE TABLE r (id bigint PRIMARY KEY, retrieval_count integer NOT NULL, "
                'last_retrieved_at text COLLATE "C")'
            )
            spent = timed_writes(conn, UPSERT, args.rounds, args.base)
            print(
                f"| narrow (id, count, time) | 100 | {spent[len(spent) // 2]:.2f} "
                f"| {spent[int(len(spent) * 0.95)]:.2f} | - | - |",
                flush=True,
            )


if __name__ == "__main__":
    main()
