"""Work per recall on a built hive, counted (bench/work.py), for this checkout or another one.

    python bench/experiments/recall_work.py [--size 100000] [--agents 1] [--queries 20]
                                            [--hivekeep OTHER_CHECKOUT]

Builds (once, bench/experiments/corpus_cache.py) bench/scale.py's hive, copies it, and counts
for agent0, per query: the rows FTS5 ranked and SQLite's steps for hivekeep's own statements, of
the full-text arm (``RecallService.text_arm``) and of a whole ``recall``, on the usual queries
and on frequent-word ones (bench/scale_data.py). Counts do not move with the machine's load, so
two versions compare on a busy machine too: ``--hivekeep`` imports hivekeep from another
checkout (the same hive file: neither may have a newer schema than the other knows).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--hivekeep", type=Path, help="a checkout to import hivekeep from")
    args = parser.parse_args()
    from bench.experiments.corpus_cache import built_hive, corpus_and_embedder
    from bench.scale_data import frequent_queries

    corpus, embedder = corpus_and_embedder(args.size)
    kept = built_hive(args.size, args.agents, corpus, embedder)
    if args.hivekeep is not None:  # the hive is built; now the version to count
        for name in [m for m in sys.modules if m == "hivekeep" or m.startswith("hivekeep.")]:
            del sys.modules[name]
        sys.path.insert(0, str(args.hivekeep.resolve()))
    import hivekeep
    from bench.work import per_call
    from hivekeep import Hive, Settings
    from hivekeep.store.base import MemoryFilter

    frequent = frequent_queries(len(corpus.queries))
    embedder.add(frequent, corpus.query_vectors)
    print(f"hivekeep from {Path(hivekeep.__file__).parent}; {args.size:,} memories, ", end="")
    print(f"{args.agents} agent(s); per query, mean of {args.queries}\n")
    print("| queries | arm: rows ranked | arm: steps | recall: rows ranked | recall: steps |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hive.db"
        shutil.copyfile(kept, path)
        with Hive(path, embedder=embedder, settings=Settings()) as hive:
            agent = hive.get_agent("agent0")
            conn = hive.store._conn  # type: ignore[attr-defined]
            arm = hive._services.recall.text_arm
            agent.recall(corpus.queries[0])  # the vector cache loaded, statements prepared
            for label, asked in (("usual", corpus.queries), ("frequent words", frequent)):
                text = per_call(
                    conn, lambda i, q=asked: arm(agent.id, q[i], 20, MemoryFilter()), args.queries
                )
                whole = per_call(conn, lambda i, q=asked: agent.recall(q[i]), args.queries)
                print(
                    f"| {label} | {text.ranked:,} | {text.steps:,} | {whole.ranked:,} "
                    f"| {whole.steps:,} |"
                )


if __name__ == "__main__":
    main()
