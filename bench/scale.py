"""hivekeep at scale: recall and write latency, ingest throughput, size and memory at 1k-100k.

    python bench/scale.py [--sizes 1000,10000,100000] [--million] [--json OUT] [--peer mem0]

For each size, two hives are built through ``agent.memorize_many`` (the public batch API, dedup
included, in calls of 1,000 as an importer would): one agent holding every memory, and ten agents
holding a tenth each. Text is synthetic and vectors are clustered unit vectors with MiniLM-like
cosine statistics (see bench/scale_data.py), handed to hivekeep by ``PreparedEmbedder``, an
``Embedder`` that returns the prepared vector of each text. The real bundled model
(``LocalEmbedder``) is measured separately: bulk ingest of plain sentences, and tool calls that
embed their query for real.

What each figure includes:
- recall, server-side: ``agent.recall(query)`` with the query's vector prepared, i.e. all of recall
  but running a model: validation, both arms (full text AND then OR fill; lexical feedback and
  vector KNN), fetching the rows, fusion, and the retrieval-count write.
- numpy exact: ``matrix @ query`` plus a top-20 ``argpartition`` over the same vectors (those the
  viewer may see), in this process: the practical floor for exact search on this machine. One
  BLAS thread (the script re-runs itself with ``OPENBLAS_NUM_THREADS=1``), as the cache's search
  is single-threaded: with two threads on a shared 2-core machine the floor was both lower and
  noisier than what any one recall can use.
- KNN: ``hive.store.vector_search`` alone (top 20), with the cache and with sqlite-vec (cache off).
- recall tool: ``agent.call_tool("recall", ...)``, the query embedded by the real model.
- memorize: one ``agent.memorize`` call (prepared vector; dedup against the archive included).
- update: one ``agent.update_memory`` call changing the content (prepared vector; the old
  version recorded in the same transaction).
- open: ``Hive(path)`` on the built file; cache load: the first vector search after it (agent0's
  matrix and the shared one: the cache loads an audience on its first search).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale_data import (
    DIMENSION,
    Corpus,
    cosine_statistics,
    frequent_queries,
    make_corpus,
    plain_sentences,
)
from bench.work import per_call
from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import MemoryFilter
from hivekeep.store.sqlite import SQLiteStore

CHUNK = 1000  # memories per memorize_many call (one transaction each)
QUERIES = 200
WORK_QUERIES = 50  # queries whose work (rows ranked, SQLite steps) is counted
TOP = 20  # the vector arm's pool for recall's default limit of 10
PEER_LIMIT = 10_000  # mem0 adds about 300 memories/s: larger sizes would not fit the budget
NO_FILTER = MemoryFilter()


class PreparedEmbedder:
    """An ``Embedder`` returning the vector prepared for each text (benchmark data, not a model).

    With ``real`` set, it also runs the real model on each text and discards the output, so a
    timing includes the genuine cost of embedding while results stay in the prepared space.
    """

    model_id = f"bench:clustered-{DIMENSION}"
    dimension = DIMENSION
    recall_defaults = LocalEmbedder.recall_defaults  # search as with the bundled model

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        self.real: LocalEmbedder | None = None

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.vectors.update(zip(texts, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if self.real is not None:
            self.real.embed(list(texts))
        return [self.vectors[t] for t in texts]


def say(line: str = "") -> None:
    print(line, flush=True)


def pct(seconds: Sequence[float], q: float) -> float:
    """The q-th percentile, in milliseconds."""
    return float(np.percentile(np.asarray(seconds) * 1000.0, q))


def timed(call: Callable[[int], object], count: int, warmup: int = 5) -> list[float]:
    for i in range(warmup):
        call(i)
    spent = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        spent.append(time.perf_counter() - start)
    return spent


def machine() -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    info = Path("/proc/cpuinfo")
    if info.exists():
        names = [ln for ln in info.read_text().splitlines() if ln.startswith("model name")]
        cpu = names[0].split(":", 1)[1].strip() if names else cpu
    found = {"cpu": cpu, "cores": str(os.cpu_count()), "python": platform.python_version()}
    for package in ("numpy", "sqlite_vec", "onnxruntime"):
        found[package] = str(importlib.import_module(package).__version__)
    found["apsw"] = apsw.apsw_version()
    found["SQLite"] = apsw.sqlite_lib_version()
    return found


def build(path: Path, corpus: Corpus, embedder: PreparedEmbedder, agents: int) -> dict[str, float]:
    """A hive where agent ``i % agents`` holds memory ``i``: throughput and duplicates found."""
    duplicates = 0
    with Hive(path, embedder=embedder, settings=Settings()) as hive:
        members = [hive.create_agent(f"agent{a}") for a in range(agents)]
        start = time.perf_counter()
        for a, agent in enumerate(members):
            rows = range(a, len(corpus.texts), agents)
            for first in range(0, len(rows), CHUNK):
                results = agent.memorize_many(corpus.items(rows[first : first + CHUNK]))
                duplicates += sum(r.duplicate for r in results)
        seconds = time.perf_counter() - start
    return {"per_second": len(corpus.texts) / seconds, "seconds": seconds, "duplicates": duplicates}


def _each(call: Callable[[str], object], queries: Sequence[str]) -> Callable[[int], object]:
    return lambda i: call(queries[i % len(queries)])


def measure_hive(
    path: Path, corpus: Corpus, embedder: PreparedEmbedder, agents: int, real: LocalEmbedder
) -> dict[str, Any]:
    """Open the built hive and time everything as agent 0."""
    files = path.parent.glob(path.name + "*")
    result: dict[str, Any] = {"file_mb": sum(p.stat().st_size for p in files) / 1e6}
    start = time.perf_counter()
    hive = Hive(path, embedder=embedder, settings=Settings())
    result["open_ms"] = (time.perf_counter() - start) * 1000
    agent = hive.get_agent("agent0")
    queries, vectors = corpus.queries, corpus.query_vectors
    start = time.perf_counter()
    hive.store.vector_search(agent.id, vectors[0], TOP, NO_FILTER)
    result["cache_load_ms"] = (time.perf_counter() - start) * 1000

    frequent = frequent_queries(len(queries))
    embedder.add(frequent, vectors)  # the vector arm as for the rare queries; the words differ
    arm = hive._services.recall.text_arm
    recall = timed(lambda i: agent.recall(queries[i % len(queries)]), QUERIES)
    text = timed(lambda i: arm(agent.id, queries[i % len(queries)], TOP, NO_FILTER), QUERIES)
    recall_frequent = timed(lambda i: agent.recall(frequent[i % len(frequent)]), QUERIES)
    text_frequent = timed(
        lambda i: arm(agent.id, frequent[i % len(frequent)], TOP, NO_FILTER), QUERIES
    )
    knn = timed(
        lambda i: hive.store.vector_search(agent.id, vectors[i % len(vectors)], TOP, NO_FILTER),
        QUERIES,
    )
    own = np.ascontiguousarray(corpus.vectors[0::agents])  # the rows agent 0 may see

    def exact(i: int) -> object:
        return np.argpartition(own @ vectors[i % len(vectors)], -TOP)[-TOP:]

    numpy_knn = timed(exact, QUERIES)
    conn = hive.store._conn  # type: ignore[attr-defined]
    for name, asked, call in (  # per query, the same on a busy machine (bench/work.py)
        ("recall", queries, agent.recall),
        ("recall_frequent", frequent, agent.recall),
        ("text", queries, lambda q: arm(agent.id, q, TOP, NO_FILTER)),
        ("text_frequent", frequent, lambda q: arm(agent.id, q, TOP, NO_FILTER)),
    ):
        work = per_call(conn, _each(call, asked), WORK_QUERIES)
        result[f"{name}_ranked"], result[f"{name}_steps"] = work.ranked, work.steps
    plain = SQLiteStore(path, vector_cache=False)
    sqlite_vec = timed(lambda i: plain.vector_search(agent.id, vectors[i], TOP, NO_FILTER), 20, 1)
    plain.close()
    fresh = [f"Brand new note {i} about the harbour ferries and their timetable" for i in range(60)]
    embedder.add(fresh, make_corpus(60, 1, seed=len(corpus.texts)).vectors)
    stored: list[int] = []
    memorize = timed(
        lambda i: stored.append(agent.memorize(fresh[i], category="fact").memory.id), 50
    )
    changed = [f"{text}, changed for the winter season" for text in fresh]
    embedder.add(changed, make_corpus(60, 1, seed=len(corpus.texts) + 60).vectors)
    update = timed(lambda i: agent.update_memory(stored[i % len(stored)], content=changed[i]), 50)
    embedder.real = real
    tool = timed(lambda i: agent.call_tool("recall", {"query": queries[i % len(queries)]}), 100)
    embedder.real = None
    hive.close()
    for name, spent in (
        ("recall", recall),
        ("recall_frequent", recall_frequent),
        ("knn", knn),
        ("text", text),
        ("text_frequent", text_frequent),
        ("numpy", numpy_knn),
        ("sqlite_vec", sqlite_vec),
        ("memorize", memorize),
        ("update", update),
        ("tool", tool),
    ):
        result[f"{name}_p50"], result[f"{name}_p95"] = pct(spent, 50), pct(spent, 95)
    result["recall_ratio"] = result["recall_p50"] / result["numpy_p50"]
    result["recall_frequent_ratio"] = result["recall_frequent_p50"] / result["numpy_p50"]
    result["knn_ratio"] = result["knn_p50"] / result["numpy_p50"]
    result["peak_rss_mb"] = peak_rss_mb()
    return result


HIVES = ((1, "one"), (10, "ten"))


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB.

    VmHWM where Linux has it: ``ru_maxrss`` survives ``exec``, so a child started by a big parent
    reports the parent's peak.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def kept_build(
    keep: Path, path: Path, corpus: Corpus, embedder: PreparedEmbedder, agents: int
) -> dict[str, Any]:
    """Build the hive once into ``keep`` (named as bench/experiments/corpus_cache.py names it)
    and copy it to ``path`` for measuring, which writes to it; a kept hive has no build figures.
    """
    kept = keep / f"scale-{len(corpus.texts)}-{agents}.db"
    done = kept.with_suffix(".done")
    figures: dict[str, Any] = dict.fromkeys(("per_second", "seconds", "duplicates"), "kept")
    if not done.exists():
        keep.mkdir(parents=True, exist_ok=True)
        for leftover in keep.glob(kept.name + "*"):
            leftover.unlink()
        figures = build(kept, corpus, embedder, agents)
        done.touch()
    shutil.copyfile(kept, path)
    return figures


def measure_size(
    size: int,
    work: Path,
    real: LocalEmbedder,
    hives: Sequence[str] = ("one", "ten"),
    keep: Path | None = None,
) -> dict[str, Any]:
    corpus = make_corpus(size, QUERIES)
    embedder = PreparedEmbedder()
    embedder.add(corpus.texts, corpus.vectors)
    embedder.add(corpus.queries, corpus.query_vectors)
    found: dict[str, Any] = {"size": size, "vectors": cosine_statistics(corpus.vectors)}
    found["raw_vectors_mb"] = corpus.vectors.nbytes / 1e6
    found["corpus_rss_mb"] = peak_rss_mb()  # the benchmark's own copy, before any hive
    found["rss_target_mb"] = 2 * found["raw_vectors_mb"] + 300
    for agents, name in HIVES:
        if name not in hives:
            continue
        path = work / f"{name}-{size}.db"
        found[f"{name}_build"] = (
            build(path, corpus, embedder, agents)
            if keep is None
            else kept_build(keep, path, corpus, embedder, agents)
        )
        found[name] = measure_hive(path, corpus, embedder, agents, real)
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink()
        say(f"  {size:,} memories, {agents} agent(s): done at {time.strftime('%H:%M:%S')}")
    if "one" in found and "ten" in found:  # an agent's recall should cost what its share costs
        found["ten_to_one_recall"] = found["ten"]["recall_p50"] / found["one"]["recall_p50"]
    return found


def real_ingest(work: Path, real: LocalEmbedder, count: int = 2000) -> dict[str, float]:
    """Bulk ingest with the real model embedding every text (what an import does)."""
    texts = plain_sentences(count)
    sample = texts[:256]
    start = time.perf_counter()
    real.embed(sample)
    alone = len(sample) / (time.perf_counter() - start)
    with Hive(work / "real.db", embedder=real, settings=Settings()) as hive:
        agent = hive.create_agent("agent0")
        start = time.perf_counter()
        for first in range(0, count, 500):
            agent.memorize_many(
                {"content": t, "category": "fact"} for t in texts[first : first + 500]
            )
        seconds = time.perf_counter() - start
    return {"memories": count, "per_second": count / seconds, "embedder_alone_per_second": alone}


def peer_mem0(sizes: Sequence[int], work: Path) -> dict[str, Any]:
    """mem0 (bench/peers/mem0_peer.py) on the same corpus and vectors, where it fits the budget."""
    try:
        peer_module = importlib.import_module("bench.peers.mem0_peer")
    except ImportError as exc:
        return {"skipped": f"bench.peers.mem0_peer cannot be imported ({exc})"}
    reason = peer_module.available()
    if reason is not None:
        return {"skipped": reason}
    found: dict[str, Any] = {}
    for size in sizes:
        if size > PEER_LIMIT:
            found[str(size)] = {"skipped": f"over {PEER_LIMIT:,} (about 300 adds/s)"}
            continue
        corpus = make_corpus(size, QUERIES)
        embedder = PreparedEmbedder()
        embedder.add(corpus.texts, corpus.vectors)
        embedder.add(corpus.queries, corpus.query_vectors)
        peer = peer_module.Mem0Peer(
            work / f"mem0-{size}", embedder, dimension=DIMENSION, pre_embed=True
        )
        start = time.perf_counter()
        for first in range(0, size, CHUNK):
            rows = range(first, min(size, first + CHUNK))
            peer.add_many([corpus.texts[i] for i in rows], "agent0", [{"row": i} for i in rows])
        seconds = time.perf_counter() - start
        queries = corpus.queries
        search = timed(lambda i, p=peer, q=queries: p.search(q[i % len(q)], "agent0", 10), 100)
        peer.close()
        found[str(size)] = {
            "name": peer.name,
            "add_per_second": size / seconds,
            "search_p50": pct(search, 50),
            "search_p95": pct(search, 95),
        }
    return found


def _cell(value: object) -> str:
    if isinstance(value, float):
        return (
            f"{value:,.2f}" if value < 10 else f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
        )
    return f"{value:,}" if isinstance(value, int) else str(value)


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    say(f"\n### {title}\n")
    say("| " + " | ".join(header) + " |")
    say("|" + "|".join("---:" for _ in header) + "|")
    for row in rows:
        say("| " + " | ".join(_cell(c) for c in row) + " |")


# Each table: title, then its columns as (header, hive, figure) after the size column.
TABLES = [
    (
        "Recall, server-side (ms; all but the model) vs exact numpy KNN over the same vectors",
        "1 agent p50|one|recall_p50  p95|one|recall_p95  numpy p50|one|numpy_p50  "
        "ratio|one|recall_ratio  10 agents p50|ten|recall_p50  p95|ten|recall_p95  "
        "numpy p50|ten|numpy_p50  ratio|ten|recall_ratio",
    ),
    (
        "Recall's parts (ms p50): vector KNN (top 20) by the cache, numpy, sqlite-vec (cache "
        "off); the full-text arm (AND, then OR fill)",
        "1 agent: KNN|one|knn_p50  numpy|one|numpy_p50  ratio|one|knn_ratio  "
        "sqlite-vec|one|sqlite_vec_p50  text arm|one|text_p50  10 agents: KNN|ten|knn_p50  "
        "numpy|ten|numpy_p50  ratio|ten|knn_ratio  sqlite-vec|ten|sqlite_vec_p50  "
        "text arm|ten|text_p50",
    ),
    (
        "Tool calls (ms): recall embeds its query with the real model; memorize dedups",
        "1 agent: recall tool p50|one|tool_p50  p95|one|tool_p95  memorize p50|one|memorize_p50  "
        "p95|one|memorize_p95  10 agents: recall tool p50|ten|tool_p50  p95|ten|tool_p95  "
        "memorize p50|ten|memorize_p50  p95|ten|memorize_p95",
    ),
    (
        "Writes (ms): update_memory changes the content (its old version recorded)",
        "1 agent: update p50|one|update_p50  p95|one|update_p95  "
        "10 agents: update p50|ten|update_p50  p95|ten|update_p95",
    ),
    (
        "Bulk ingest (memorize_many, 1,000 per call, dedup included, prepared vectors), file, open",
        "1 agent/s|one_build|per_second  10 agents/s|ten_build|per_second  "
        "duplicates|one_build|duplicates  file MB|one|file_mb  open ms|one|open_ms  "
        "cache load ms|one|cache_load_ms  peak RSS MB|ten|peak_rss_mb",
    ),
    (
        "Frequent-word queries (four words, each in 5-12 % of the memories) next to the usual "
        "ones (a name, a verb, a rare topic word): recall and the full-text arm, ms",
        "1 agent: recall p50|one|recall_p50  frequent p50|one|recall_frequent_p50  "
        "p95|one|recall_frequent_p95  ratio to numpy|one|recall_frequent_ratio  "
        "text arm|one|text_p50  frequent|one|text_frequent_p50  "
        "10 agents: recall p50|ten|recall_p50  frequent p50|ten|recall_frequent_p50  "
        "p95|ten|recall_frequent_p95  ratio to numpy|ten|recall_frequent_ratio  "
        "text arm|ten|text_p50  frequent|ten|text_frequent_p50",
    ),
    (
        "Work per query, the same on a busy machine (bench/work.py): rows FTS5 ranked, and "
        "SQLite's steps for hivekeep's own statements (about 8 a row read); ten agents' recall "
        "p50 over one agent's",
        "1 agent: text ranked|one|text_ranked  steps|one|text_steps  "
        "frequent ranked|one|text_frequent_ranked  steps|one|text_frequent_steps  "
        "recall steps|one|recall_steps  frequent|one|recall_frequent_steps  "
        "10 agents: text ranked|ten|text_ranked  steps|ten|text_steps  "
        "frequent ranked|ten|text_frequent_ranked  steps|ten|text_frequent_steps  "
        "recall steps|ten|recall_steps  frequent|ten|recall_frequent_steps  "
        "10 / 1 agent recall p50|size|ten_to_one_recall",
    ),
    (
        "Memory (MB): the raw vectors, the benchmark's corpus alone (peak RSS before any hive), "
        "peak RSS after each hive (the process's high-water mark so far), the target",
        "raw vectors|size|raw_vectors_mb  corpus alone|size|corpus_rss_mb  "
        "after 1 agent|one|peak_rss_mb  after 10 agents|ten|peak_rss_mb  "
        "2x raw + 300|size|rss_target_mb",
    ),
]


def report(results: dict[str, Any]) -> None:
    sizes = results["sizes"]
    for title, spec in TABLES:
        columns = [column.split("|") for column in spec.split("  ")]
        rows = [
            [
                s["size"],
                *(
                    (s if hive == "size" else s.get(hive, {})).get(key, "-")
                    for _, hive, key in columns
                ),
            ]
            for s in sizes
        ]
        table(title, ["memories", *(header for header, _, _ in columns)], rows)
    real = results["real_ingest"]
    table(
        "Bulk ingest with the real model (LocalEmbedder embeds every text)",
        ["memories", "memories/s (embedding included)", "model alone, sentences/s"],
        [[real["memories"], real["per_second"], real["embedder_alone_per_second"]]],
    )
    stats = sizes[-1]["vectors"]
    say(
        f"\nSynthetic vectors (sample of 2,000): random-pair cosine {stats['random_pair_mean']:.3f}"
        f", nearest neighbour {stats['nearest_neighbour_mean']:.3f}, max {stats['max']:.3f}."
    )
    say("Duplicates: those found while building (the corpus has none). Peak RSS: so far.")
    peer = results.get("peer")
    if peer is None:
        return
    if "skipped" in peer:
        say(f"\nmem0 peer skipped: {peer['skipped']}")
        return
    table(
        "mem0 on the same corpus and vectors (one user, infer=False, local Qdrant)",
        ["memories", "peer", "adds/s", "search p50 ms", "p95"],
        [
            [int(size)]
            + [p.get(key, p.get("skipped", "-")) for key in ("name", "add_per_second")]
            + [p.get(key, "-") for key in ("search_p50", "search_p95")]
            for size, p in peer.items()
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 memories")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--peer", choices=["mem0"], help="also time a peer system")
    parser.add_argument("--real", type=int, default=2000, help="texts for the real-model ingest")
    parser.add_argument(
        "--hives",
        default="one,ten",
        help="which hives to build: one (one agent holds all), ten (ten agents, a tenth each)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="build each hive once into this folder and measure a copy of it (reads only: "
        "the build figures are those of the first run)",
    )
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="postgresql: recall on PostgreSQL next to SQLite, same corpus, same run "
        "(bench/scale_postgres.py, with a private server)",
    )
    args = parser.parse_args()
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":  # the numpy floor on one thread, as recall
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if args.backend == "postgresql":
        script = str(Path(__file__).with_name("scale_postgres.py"))
        extra = ["--million"] if args.million else []
        os.execv(sys.executable, [sys.executable, script, "--sizes", args.sizes, *extra])
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    hives = [h for h in args.hives.split(",") if h]
    if not hives or set(hives) - {name for _, name in HIVES}:
        parser.error(f"--hives takes one or ten or both (one,ten), not {args.hives!r}.")
    info = machine()
    say("# hivekeep scale benchmark\n")
    say(f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}")
    libraries = {k: v for k, v in info.items() if k not in ("cpu", "cores", "python")}
    say("Libraries: " + ", ".join(f"{k} {v}" for k, v in libraries.items()))
    say(
        "Vectors: synthetic clustered unit vectors (384-d, 256 topics plus noise, MiniLM-like "
        "cosines) in the bulk hives; the real LocalEmbedder only where a table says so.\n"
    )
    real = LocalEmbedder()
    real.embed(["warm up"])
    results: dict[str, Any] = {"machine": info, "sizes": []}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hivekeep-scale-") as tmp:
        work = Path(tmp)
        for size in sizes:
            results["sizes"].append(measure_size(size, work, real, hives, args.keep))
        results["real_ingest"] = real_ingest(work, real, args.real)
        if args.peer == "mem0":
            results["peer"] = peer_mem0(sizes, work)
    results["seconds"] = time.perf_counter() - started
    report(results)
    say(f"\nTotal time {results['seconds']:.0f} s.")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
