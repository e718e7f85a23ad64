"""What recording a version costs ``update_memory``, measured in one process (SQLite).

    python bench/experiments/update_history_cost.py [TREE]

Separate processes differ by more than the effect on a shared machine (docs/benchmarks.md, "Write
path with history"), so this times the same hive, in the same process, with the store's version
recording swapped in and out between rounds: ``full`` (as shipped), ``with prune`` (the old
unconditional prune ``DELETE`` after every version) and ``none`` (nothing recorded: the write path
before history). A 10,000-memory hive for one agent (prepared vectors, ``bench/scale_data.py``),
200 memories each changed once before timing (the steady state: every update writes one version),
then 12 rounds of 200 content changes per variant, the order alternating; each round's p50, and
the median over rounds. An experiment that patches internals (``HistoryRows``), not a benchmark of
the public API; TREE (default: this repository) is the hivekeep tree to import.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TREE = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TREE)]

from bench.scale_data import DIMENSION, make_corpus  # noqa: E402
from hivekeep import Hive, Settings  # noqa: E402
from hivekeep.core.text import now_timestamp  # noqa: E402
from hivekeep.providers.embeddings.local import LocalEmbedder  # noqa: E402
from hivekeep.store.sqlite import history  # noqa: E402

SIZE, MEMORIES, ROUNDS = 10_000, 200, 12
vectors: dict[str, np.ndarray] = {}


class Prepared:
    model_id = f"bench:clustered-{DIMENSION}"
    dimension = DIMENSION
    recall_defaults = LocalEmbedder.recall_defaults

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        return [vectors[t] for t in texts]


def with_prune(self: Any, conn: Any, memory_id: int, previous: int, written: Any, **_: Any) -> None:
    """Version recording as first shipped: the prune runs after every version."""
    version = previous + 1
    conn.execute(
        f"INSERT INTO memory_versions({history.VERSION_COLUMNS}) SELECT id, ?, "
        f"{history._SNAPSHOT}, ?, ?, ? FROM memories WHERE id = ?",
        (version, now_timestamp(), written.by.value, written.operation.value, memory_id),
    )
    conn.execute(
        "DELETE FROM memory_versions WHERE memory_id = ? AND version <= ?",
        (memory_id, version - self.history_limit),
    )


VARIANTS = {
    "full": (history.HistoryRows._latest_version, history.HistoryRows._record_version),
    "with prune": (history.HistoryRows._latest_version, with_prune),
    "none": (lambda self, conn, memory_id: 0, lambda self, *args, **kwargs: None),
}


def main() -> None:
    corpus = make_corpus(SIZE, 1)
    vectors.update(zip(corpus.texts, corpus.vectors, strict=True))
    texts = [[f"Note {i} about the ferries, take {n}" for i in range(MEMORIES)] for n in range(40)]
    for n, batch in enumerate(texts):
        vectors.update(zip(batch, make_corpus(MEMORIES, 1, seed=SIZE + n).vectors, strict=True))
    take = iter(texts)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with (
        tempfile.TemporaryDirectory() as folder,
        Hive(Path(folder) / "hive.db", embedder=Prepared(), settings=Settings()) as hive,
    ):
        agent = hive.create_agent("agent0")
        for first in range(0, SIZE, 1000):
            agent.memorize_many(corpus.items(range(first, first + 1000)))
        ids = [agent.memorize(t, category="fact").memory.id for t in next(take)]
        for memory_id, text in zip(ids, next(take), strict=True):
            agent.update_memory(memory_id, content=text)
        for round_number in range(ROUNDS):
            order = list(VARIANTS) if round_number % 2 == 0 else list(reversed(VARIANTS))
            for name in order:
                latest, record = VARIANTS[name]
                history.HistoryRows._latest_version = latest  # type: ignore[method-assign]
                history.HistoryRows._record_version = record  # type: ignore[method-assign]
                spent = []
                for memory_id, text in zip(ids, next(take), strict=True):
                    start = time.perf_counter()
                    agent.update_memory(memory_id, content=text)
                    spent.append(time.perf_counter() - start)
                times[name].append(statistics.median(spent) * 1000)
    base = statistics.median(times["none"])
    for name, rounds in times.items():
        median = statistics.median(rounds)
        print(f"{name:10s} p50 {median:.3f} ms ({median / base - 1:+.1%} against none)")


if __name__ == "__main__":
    main()
