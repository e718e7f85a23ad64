"""``hivekeep bench``: measure this machine, this hive and the configured embedder.

Three figures, through the public API only: recall latency on the user's own hive (queries taken
from its own memories), write throughput with the configured embedder (into a scratch hive in a
temporary folder, so the user's hive is never written), and query-embedding time. They help
choose an embedder or a backend; the repository's ``bench/`` suites are the reference figures.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from hivekeep import Agent, Hive, Settings
from hivekeep.cli import agent_option, db_option, echo_json, json_option, open_hive

SEED = 19  # the same hive gives the same sample of queries
WORDS = ("tea", "lisbon", "meeting", "flight", "project", "deadline", "friday", "report", "piano")


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _timed(label: str, items: Sequence[Any], run: Callable[[Any], Any]) -> list[float]:
    """Milliseconds of ``run(item)`` for each item, with a progress bar on stderr."""
    times = []
    with click.progressbar(items, label=label, file=sys.stderr) as bar:
        for item in bar:
            start = time.perf_counter()
            run(item)
            times.append((time.perf_counter() - start) * 1000)
    return times


def _latency(times: list[float]) -> dict[str, float]:
    return {
        "n": len(times),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(_percentile(times, 0.95), 2),
    }


def _queries(agent: Agent, count: int) -> list[str]:
    """Up to ``count`` queries: the first words of memories sampled from the agent's archive."""
    memories = agent.list_memories(limit=200).memories
    if not memories:
        raise click.ClickException(
            f"Agent {agent.name!r} has no memories to sample queries from; memorize some first."
        )
    rng = random.Random(SEED)
    picked = [rng.choice(memories) for _ in range(count)]
    return [" ".join(m.content.split()[:8]) for m in picked]


def _writes(hive: Hive, count: int) -> dict[str, float]:
    """Memories written per second into a scratch hive with this hive's embedder."""
    rng = random.Random(SEED)
    words = WORDS
    texts = [
        f"Bench note {i}: " + " ".join(rng.choice(words) for _ in range(12)) for i in range(count)
    ]
    with tempfile.TemporaryDirectory(prefix="hivekeep-bench-") as folder:
        scratch = Path(folder) / "bench.db"
        with Hive(scratch, embedder=hive.embedder, settings=Settings()) as other:
            writer = other.agent("bench")
            times = _timed("writes ", texts, lambda text: writer.memorize(text, category="fact"))
    total_s = sum(times) / 1000
    return {**_latency(times), "per_second": round(count / total_s, 1) if total_s else 0.0}


@click.command()
@agent_option
@click.option("--queries", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--writes", default=50, show_default=True, type=click.IntRange(1, 10_000))
@db_option
@json_option
def bench(agent_key: str, queries: int, writes: int, db: str, as_json: bool) -> None:
    """Measure recall latency on this hive, write throughput and query-embedding time.

    Queries are sampled from the agent's own memories; writes go to a scratch hive in a
    temporary folder with the configured embedder (this hive is only read). Example:

    \b
        hivekeep bench --agent assistant
        HIVEKEEP_EMBEDDINGS=openai:text-embedding-3-small hivekeep bench --agent assistant --json
    """
    with open_hive(db) as hive:
        agent = hive.get_agent(agent_key)
        sample = _queries(agent, queries)
        embedder = hive.embedder
        embed = _timed("embed  ", sample, lambda q: embedder.embed([q]))
        # count_retrieval=False: a measurement must not raise the recall counts it reads
        recall = _timed("recall ", sample, lambda q: agent.recall(q, count_retrieval=False))
        written = _writes(hive, writes)
        figures = {
            "hive": hive.path,
            "agent": agent.name,
            "embedder": embedder.model_id,
            "recall": _latency(recall),
            "query_embedding": _latency(embed),
            "writes": written,
        }
    if as_json:
        echo_json(figures)
        return
    click.echo(f"hive {figures['hive']} · agent {agent.name} · embedder {embedder.model_id}\n")
    click.echo(f"{'measure':<28}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}")
    for label, key in (
        ("recall (incl. embedding)", "recall"),
        ("query embedding", "query_embedding"),
        ("write (memorize)", "writes"),
    ):
        row = figures[key]
        assert isinstance(row, dict)
        click.echo(f"{label:<28}{row['n']:>6}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}")
    click.echo(f"\nwrite throughput: {written['per_second']} memories/s")
