"""Write-path A/B: ``memorize`` and ``update_memory`` p50 of two hivekeep trees, interleaved.

    git worktree add /tmp/wt-before 7fa6716^          # the code before history (issue 16)
    python bench/write_path.py --before /tmp/wt-before --after . --rounds 5

Each round runs one child process per tree, the order alternating from round to round, so a
machine that gets busier or quieter meanwhile weighs on both alike. A child imports hivekeep from
its tree only, builds a 10,000-memory SQLite hive for one agent (``memorize_many``, prepared
vectors: ``bench/scale_data.py``'s corpus, the same in every child), then times ``--calls`` calls
of each: ``memorize`` (a new memory, dedup included), ``update`` (a content change of a memory
never changed before: with history, version 1 and version 2 are both written) and ``update again``
(a second change of the same memories: one version written, the oldest pruned past the limit).
Reported: each child's p50, and the median over rounds of each tree's p50s. ``bench/scale.py``
times the same calls 50 at a time among its other figures; this script exists because on a
shared machine 50 calls per run vary more between runs than the 10 % the issue allows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SIZE = 10_000
CHUNK = 1000
WARMUP = 10
TIMINGS = ("memorize", "update", "update_again")


def _timed(call: Callable[[int], object], count: int) -> list[float]:
    spent = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        spent.append(time.perf_counter() - start)
    return spent


def child(tree: Path, calls: int) -> dict[str, float]:
    """One measurement, hivekeep imported from ``tree`` (run in a fresh process)."""
    sys.path[:0] = [str(tree), str(HERE.parent)]
    from bench.scale_data import DIMENSION, make_corpus
    from hivekeep import Hive, Settings
    from hivekeep.providers.embeddings.local import LocalEmbedder

    vectors: dict[str, np.ndarray] = {}

    class Prepared:
        model_id = f"bench:clustered-{DIMENSION}"
        dimension = DIMENSION
        recall_defaults = LocalEmbedder.recall_defaults

        def embed(self, texts: list[str]) -> list[np.ndarray]:
            return [vectors[t] for t in texts]

    total = WARMUP + calls
    corpus = make_corpus(SIZE, 1)
    vectors.update(zip(corpus.texts, corpus.vectors, strict=True))
    fresh = [f"New note {i} about the harbour ferries and their timetable" for i in range(total)]
    vectors.update(zip(fresh, make_corpus(total, 1, seed=SIZE).vectors, strict=True))
    changed = [[f"{text}, changed ({n}) for the winter season" for text in fresh] for n in (1, 2)]
    for seed, texts in enumerate(changed, start=1):
        vectors.update(zip(texts, make_corpus(total, 1, seed=SIZE + seed).vectors, strict=True))
    spent: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hivekeep-writes-") as folder,
        Hive(Path(folder) / "hive.db", embedder=Prepared(), settings=Settings()) as hive,
    ):
        agent = hive.create_agent("agent0")
        for first in range(0, SIZE, CHUNK):
            agent.memorize_many(corpus.items(range(first, min(first + CHUNK, SIZE))))
        ids: list[int] = []

        def remember(i: int) -> None:
            ids.append(agent.memorize(fresh[i], category="fact").memory.id)

        for i in range(WARMUP):
            remember(i)
        spent["memorize"] = _timed(lambda i: remember(WARMUP + i), calls)
        for name, texts in zip(("update", "update_again"), changed, strict=True):
            for i in range(WARMUP):
                agent.update_memory(ids[i], content=texts[i])
            spent[name] = _timed(
                lambda i, texts=texts: agent.update_memory(
                    ids[WARMUP + i], content=texts[WARMUP + i]
                ),
                calls,
            )
    return {name: float(np.percentile(np.asarray(spent[name]) * 1000, 50)) for name in TIMINGS}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the tree compared against (required)")
    parser.add_argument("--after", type=Path, help="the tree measured against it (required)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300, help="timed calls of each kind")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child.resolve(), args.calls)))
        return
    if args.before is None or args.after is None:
        parser.error("pass both --before TREE and --after TREE (e.g. a git worktree and .)")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_number in range(args.rounds):
        order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
        for name in order:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(trees[name]), "--calls", str(args.calls)],
                check=True,
                capture_output=True,
                text=True,
                cwd=trees[name],
            ).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
            figures = "  ".join(f"{k} {v:.3f}" for k, v in runs[name][-1].items())
            print(f"round {round_number + 1} {name:6s} {figures}", flush=True)
    medians = {
        name: {k: statistics.median(run[k] for run in runs[name]) for k in TIMINGS}
        for name in trees
    }
    print("\np50 ms, median over rounds | " + " | ".join(TIMINGS))
    for name in trees:
        print(f"{name:6s} | " + " | ".join(f"{medians[name][k]:.3f}" for k in TIMINGS))
    change = {k: medians["after"][k] / medians["before"][k] - 1 for k in TIMINGS}
    print("change | " + " | ".join(f"{change[k]:+.1%}" for k in TIMINGS))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "medians": medians, "change": change}))


if __name__ == "__main__":
    main()
