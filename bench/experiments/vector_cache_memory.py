"""Where the SQLite backend's peak RSS goes at scale (issue 17, item 5).

    python bench/experiments/vector_cache_memory.py [--size 100000] [--agents 10]

Builds (once, bench/experiments/corpus_cache.py) bench/scale.py's hive, then, each in a fresh
process so one peak does not hide another: the corpus alone (what the benchmark itself holds);
opening the store; the vector cache's first load, with the loader as shipped and with the loader
before this change (every row held as a Python tuple with its blob, the blobs joined, each
audience's rows gathered: ``--old``); tracemalloc's peak of Python allocations during the load.
Since issue 35 the cache loads an audience on its first search (agent 1's rows and the shared
ones, here), so "now" loads a tenth of what "before" does in a hive of ten agents.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.corpus_cache import built_hive, corpus_and_embedder
from bench.scale import peak_rss_mb
from hivekeep.store import vector_cache
from hivekeep.store.base import MemoryFilter
from hivekeep.store.sqlite import SQLiteStore
from hivekeep.types import Scope


def rss_mb() -> float:
    return peak_rss_mb()


def old_load_all(self: Any, conn: Any, dimension: int) -> None:
    """The loader before this change (for comparison only)."""
    rows = list(conn.execute(vector_cache._ROWS.format(where="")))
    if not rows:
        return
    ids, blobs, agents, scopes, categories, subjects, created = zip(*rows, strict=True)
    vectors = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(-1, dimension)
    shared = np.asarray(scopes, dtype=object) == Scope.SHARED.value
    audience = np.where(shared, 0, np.asarray(agents, dtype=np.int64))
    memory_ids = np.asarray(ids, dtype=np.int64)
    codes = np.asarray([vector_cache.CATEGORY_CODES[c] for c in categories], dtype=np.int8)
    subject_codes = np.asarray(
        [self._subject_code(vector_cache.subject_key(s)) for s in subjects], dtype=np.int32
    )
    created_at = np.asarray(created, dtype=str)
    for value in np.unique(audience):
        rows_of = np.flatnonzero(audience == value)
        self._matrices[int(value)] = vector_cache.Matrix.from_arrays(
            vectors[rows_of],
            memory_ids[rows_of],
            codes[rows_of],
            subject_codes[rows_of],
            created_at[rows_of],
        )
        self._where.update(dict.fromkeys(memory_ids[rows_of].tolist(), int(value)))


def child(path: str, old: bool) -> None:
    if old:
        reset = vector_cache.VectorCache._load

        def eager(self: Any, conn: Any, head: int) -> None:  # every audience, as before
            reset(self, conn, head)
            if self.dimension is not None:
                old_load_all(self, conn, self.dimension)

        vector_cache.VectorCache._load = eager  # type: ignore[method-assign]
    store = SQLiteStore(path)
    opened = rss_mb()
    tracemalloc.start()
    start = time.perf_counter()
    store.vector_search(1, np.ones(384, dtype=np.float32), 20, MemoryFilter())
    seconds = time.perf_counter() - start
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"| {'before' if old else 'now'} | {opened:,.0f} | {rss_mb():,.0f} | {seconds:.2f} "
        f"| {traced / 1e6:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--old", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.old)
        return
    before = rss_mb()
    corpus, embedder = corpus_and_embedder(args.size)
    print(f"corpus in the benchmark's process: {rss_mb() - before:,.0f} MB of peak RSS")
    path = built_hive(args.size, args.agents, corpus, embedder)
    raw = corpus.vectors.nbytes / 1e6
    print(f"{args.size:,} vectors, {args.agents} agent(s): {raw:,.0f} MB raw\n")
    print("| loader | RSS after open MB | peak RSS after load MB | load s | traced peak MB |")
    print("|---|---:|---:|---:|---:|")
    for old in (True, False, True, False):
        command = [sys.executable, __file__, "--child", str(path), *(["--old"] if old else [])]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
