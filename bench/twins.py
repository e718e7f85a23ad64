"""What finding the near-twin groups costs one maintenance call (docs/conversations.md).

One agent with ``--size`` own memories (random unit vectors of the bundled model's dimension,
given to the write path so nothing is embedded); every memory counts as written since the batch
began, so the search runs at its bound: the newest 200 against the pool of the newest 1,000.
Reports the median of ``--rounds`` runs of the pool read, ``Store.vectors`` over the pool, and
the whole group search (vector read, matrix product, grouping). PostgreSQL is the tests' private
server (``tests/postgres.py``).

    python bench/twins.py [--backend sqlite|postgres] [--size 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hivekeep import Hive
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import NewMemory
from hivekeep.types import Category
from tests.postgres import hive_target

EPOCH = "2000-01-01T00:00:00.000000Z"  # a batch start before every memory


def median_ms(run: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    embedder = LocalEmbedder()
    with hive_target(args.backend) as target, Hive(target, embedder=embedder) as hive:
        sam = hive.create_agent("sam")
        for start in range(0, args.size, 2000):
            count = min(2000, args.size - start)
            vectors = rng.standard_normal((count, embedder.dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            memories = [
                NewMemory(sam.id, f"note {i} on item {i * 7}", Category.FACT, f"s{i % 50}")
                for i in range(start, start + count)
            ]
            hive._services.archive.memorize_many(memories, vectors=list(vectors))
        service = hive._services.maintenance
        pool = service._own_memories(sam.id)
        ids = [r.id for r in pool]
        pool_ms = median_ms(lambda: service._own_memories(sam.id), args.rounds)
        read_ms = median_ms(lambda: hive._services.store.vectors(sam.id, ids), args.rounds)
        groups_ms = median_ms(lambda: service._twin_groups(sam.id, pool, since=EPOCH), args.rounds)
    print(
        f"{args.backend}, {args.size} own memories: pool read {pool_ms:.1f} ms; "
        f"Store.vectors({len(ids)}) {read_ms:.1f} ms; twin groups {groups_ms:.1f} ms"
    )


if __name__ == "__main__":
    main()
