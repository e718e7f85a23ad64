"""``Matrix.nearest`` alone on one large matrix: one thread against one part per core.

    OPENBLAS_NUM_THREADS=1 python bench/experiments/parallel_search.py [--rows 1000000]

Random 384-d float32 rows, no filter, top 20, 30 searches each way; p50 printed. Past
``PARALLEL_ROWS`` the vector cache searches in parts (docs/storage.md, "Large matrices").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import hivekeep.store.vector_matrix as vector_matrix
from hivekeep.store.base import MemoryFilter


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    rng = np.random.default_rng(0)
    matrix = vector_matrix.Matrix.from_arrays(
        rng.standard_normal((rows, 384)).astype(np.float32),
        np.arange(rows),
        np.zeros(rows, np.int8),
        np.zeros(rows, np.int32),
        np.full(rows, "2024", dtype="U27"),
    )
    query = rng.standard_normal(384).astype(np.float32)
    cores = vector_matrix._CORES
    for parts in sorted({1, cores}):
        vector_matrix._CORES = parts
        spent = []
        for _ in range(30):
            start = time.perf_counter()
            matrix.nearest(query, 20, MemoryFilter(), None)
            spent.append(time.perf_counter() - start)
        print(f"{rows:,} rows, {parts} part(s): p50 {np.percentile(spent, 50) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
