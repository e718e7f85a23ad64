"""Many small tenants in one hive: recall and memorize latency for a random agent, and resident
memory against the number of agents touched (issue 27, target 4).

    python bench/tenants.py [--agents 10000] [--per-agent 100] [--backends sqlite,postgresql]
                            [--cache-mb 1024] [--folder DIR]

The data is bench/scale_data's (synthetic texts, clustered unit vectors handed over by
``PreparedEmbedder``); agent ``a`` memorizes rows ``a * per_agent ...`` in one ``memorize_many``
call (dedup on). Then, in the same process: ``recall`` p50 / p95 as a random agent for each
query (the query's vector prepared); ``memorize`` p50 / p95 of one new memory for a random
agent; and the process's resident memory (VmRSS) after recalls by the first 1, 10, 100, ...
agents, which shows whether what a process keeps per agent (the vector cache) is bounded, with
the SQLite vector cache's own count of its bytes beside it (``--cache-mb`` sets its budget,
``HIVEKEEP_VECTOR_CACHE_MB``; docs/storage.md, "The vector cache").
PostgreSQL: the tests' private server (``tests/postgres.py``), as bench/scale_postgres.py.

With ``--folder``, the hives are kept there (a file, or a schema on a private server in the
folder, as bench/million.py keeps them): a killed build resumes at the first agent short of its
memories, and a run over a finished build only measures, in a fresh process, so the figures of
a build made on a busy machine can be taken again on a quiet one. Without it, a temporary
folder is built from scratch and removed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.million import target
from bench.scale import PreparedEmbedder, pct, say
from bench.scale_data import make_corpus
from bench.scale_postgres import _target
from hivekeep import Hive, Settings
from hivekeep.errors import NotFound
from hivekeep.store.base import MemoryFilter

SAMPLES = 200  # recalls and memorizes timed


def rss_mb() -> float:
    """The process's resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(
    target: str, corpus: Any, embedder: PreparedEmbedder, args: Any, kept: bool
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    per = args.per_agent
    start, built = time.perf_counter(), 0
    with Hive(target, embedder=embedder, settings=Settings()) as hive:
        for a in range(args.agents):
            try:
                agent = hive.get_agent(f"agent{a}")
                have = hive.store.list_memories(agent.id, MemoryFilter(own=True), 1, 0)[1]
            except NotFound:
                agent, have = hive.create_agent(f"agent{a}"), 0
            if have < per:
                agent.memorize_many(corpus.items(range(a * per + have, (a + 1) * per)))
                built += per - have
            if built and a % 500 == 499:
                rate = built / (time.perf_counter() - start)
                sys.stderr.write(f"\rbuilt {a + 1:,}/{args.agents:,} agents, {rate:,.0f}/s ")
        spent = time.perf_counter() - start
        found["build_per_second"] = built / spent if built else float("nan")
        found["built"] = built
    settings = Settings(vector_cache_mb=args.cache_mb)
    with Hive(target, embedder=embedder, settings=settings) as hive:
        cache = getattr(hive.store, "vector_cache", None)  # SQLite's; PostgreSQL has none

        def held() -> tuple[float, float]:
            return rss_mb(), float("nan") if cache is None else cache.nbytes / 2**20

        found["rss"] = [(0, *held())]
        touched = 0
        for step in (1, 10, 100, 1_000, 10_000):
            for a in range(touched, min(step, args.agents)):
                hive.get_agent(f"agent{a}").recall(corpus.queries[a % len(corpus.queries)])
            touched = min(step, args.agents)
            found["rss"].append((touched, *held()))
            if touched == args.agents:
                break
        picker = random.Random(1)
        recall, memorize = [], []
        held_out = range(args.agents * per, args.agents * per + SAMPLES)
        for i in range(SAMPLES):
            agent = hive.get_agent(f"agent{picker.randrange(args.agents)}")
            query = corpus.queries[i % len(corpus.queries)]
            began = time.perf_counter()
            agent.recall(query)
            recall.append(time.perf_counter() - began)
            row = held_out[i]
            began = time.perf_counter()
            written = agent.memorize(corpus.texts[row], category=corpus.categories[row])
            memorize.append(time.perf_counter() - began)
            if kept and not written.duplicate:  # the next run's samples are new memories too
                agent.forget(written.memory.id)  # (a purge would VACUUM the whole file each time)
        found["recall"] = (pct(recall, 50), pct(recall, 95))
        found["memorize"] = (pct(memorize, 50), pct(memorize, 95))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--per-agent", type=int, default=100)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--cache-mb", type=int, default=Settings().vector_cache_mb)
    parser.add_argument("--folder", type=Path, help="keep the hives here: resume, or re-measure")
    args = parser.parse_args()
    corpus = make_corpus(args.agents * args.per_agent + SAMPLES, 50)
    embedder = PreparedEmbedder()
    embedder.add(corpus.texts, corpus.vectors)
    embedder.add(corpus.queries, corpus.query_vectors)
    say(
        f"{args.agents:,} agents x {args.per_agent} memories "
        "| backend | build /s | recall p50 / p95 | memorize p50 / p95 "
        "| RSS MB (vector cache MiB) by agents touched |"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for backend in args.backends.split(","):
            name = f"tenants-{args.agents}x{args.per_agent}"
            kept = args.folder is not None
            if kept:
                args.folder.mkdir(parents=True, exist_ok=True)
            where = target(backend, args.folder, name) if kept else _target(backend, Path(scratch))
            with where as hive_at:
                r = measure(hive_at, corpus, embedder, args, kept)
            rss = ", ".join(f"{n:,}: {mb:.0f} ({cached:.0f})" for n, mb, cached in r["rss"])
            say(
                f"| {backend} | {r['build_per_second']:,.0f} ({r['built']:,} built) "
                f"| {r['recall'][0]:.1f} / {r['recall'][1]:.1f} ms "
                f"| {r['memorize'][0]:.1f} / {r['memorize'][1]:.1f} ms | {rss} |"
            )


if __name__ == "__main__":
    main()
