"""Load on the REST API: 10, 50 and 100 concurrent clients against a real ``hivekeep serve``.

Each client loops for ``--seconds``: recall (GET memories?query=, 60 %), memorize (POST, 20 %),
profile read (GET, 20 %). Meanwhile one more client chats (streamed replies) and forces a
compaction in the middle of each level; requests that overlapped the compaction are reported
separately, to show whether the server stays responsive while the summariser and maintenance
calls run. The model is ``ScriptedLLM`` (via the test suite's scripted server); everything else is
real: the server process, the SQLite file, the bundled embedder. A 1-client level is the baseline.

    python bench/load.py                       # levels 1,10,50,100 x 15 s (a few minutes)
    python bench/load.py --levels 1,4 --seconds 2 --memories 50 --json out.json   # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.scripted_server import start_scripted_server  # noqa: E402

QUERIES = ["tea", "where does Ann live", "project deadline", "weekend plans", "favourite book"]


@dataclass
class Level:
    clients: int
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    during_compaction: list[float] = field(default_factory=list)
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    elapsed: float = 0.0
    compaction_s: float | None = None
    compaction_status: str = "-"
    chat_turns: int = 0


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


async def client(
    http: httpx.AsyncClient, agent: str, level: Level, until: float, window: list[float], seed: int
) -> None:
    rng = random.Random(seed)
    n = 0
    while time.monotonic() < until:
        roll = rng.random()
        start = time.monotonic()
        try:
            if roll < 0.6:
                response = await http.get(
                    f"/api/agents/{agent}/memories",
                    params={"query": rng.choice(QUERIES), "limit": 10},
                )
            elif roll < 0.8:
                n += 1
                response = await http.post(
                    f"/api/agents/{agent}/memories",
                    json={
                        "content": f"Load note {seed}-{n} {rng.random():.9f}",
                        "category": "fact",
                    },
                )
            else:
                response = await http.get(f"/api/agents/{agent}/profile")
            ok = response.status_code < 400
            kind = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            ok, kind = False, type(exc).__name__
        end = time.monotonic()
        level.requests += 1
        if not ok:
            level.errors += 1
            level.error_kinds[kind] = level.error_kinds.get(kind, 0) + 1
            continue
        level.latencies.append(end - start)
        if window and start < window[-1] and end > window[0]:
            level.during_compaction.append(end - start)


async def chatter(
    http: httpx.AsyncClient, agent: str, level: Level, until: float, window: list[float]
) -> None:
    """One conversation: a few streamed turns, a forced compaction midway, more turns."""
    created = await http.post(f"/api/agents/{agent}/conversations", json={"title": "load"})
    conversation = created.json()["id"]
    halfway = time.monotonic() + (until - time.monotonic()) / 2
    compacted = False
    while time.monotonic() < until:
        async with http.stream(
            "POST",
            f"/api/conversations/{conversation}/chat",
            json={"message": "Tell me about tea " + "and more " * 50},
        ) as response:
            async for _ in response.aiter_bytes():
                pass
        level.chat_turns += 1
        if not compacted and time.monotonic() >= halfway:
            compacted = True
            window[:] = [time.monotonic(), float("inf")]
            response = await http.post(f"/api/conversations/{conversation}/compact", timeout=120)
            window[1] = time.monotonic()
            level.compaction_s = window[1] - window[0]
            level.compaction_status = response.json().get("status", str(response.status_code))


async def run_level(url: str, agent: str, clients: int, seconds: float) -> Level:
    level = Level(clients)
    limits = httpx.Limits(max_connections=clients + 5)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits, trust_env=False) as http:
        window: list[float] = []
        start = time.monotonic()
        until = start + seconds
        tasks = [client(http, agent, level, until, window, seed) for seed in range(clients)]
        await asyncio.gather(chatter(http, agent, level, until, window), *tasks)
        level.elapsed = time.monotonic() - start
    return level


def seed_memories(url: str, agent: str, count: int) -> None:
    with httpx.Client(base_url=url, timeout=60, trust_env=False) as http:
        http.post("/api/agents", json={"name": agent}).raise_for_status()
        for n in range(count):
            http.post(
                f"/api/agents/{agent}/memories",
                json={
                    "content": f"Seed memory {n}: {random.choice(QUERIES)} note {n}",
                    "category": "fact",
                },
            ).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,10,50,100")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        server = start_scripted_server(Path(tmp), {"context_window": 32_000})
        try:
            seed_memories(server.url, "load", args.memories)
            results = [asyncio.run(run_level(server.url, "load", n, args.seconds)) for n in levels]
        finally:
            server.stop()
    base = statistics.median(results[0].latencies) if results[0].latencies else float("nan")
    print("# hivekeep REST load benchmark\n")
    print(
        f"`python bench/load.py --levels {args.levels} --seconds {args.seconds:g} "
        f"--memories {args.memories}`\n"
    )
    print(
        "| clients | requests | req/s | p50 ms | p95 ms | p99 ms | p50 / 1-client | errors | "
        "p95 during compaction ms | compaction s | chat turns |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for r in results:
        row = {
            "clients": r.clients,
            "requests": r.requests,
            "throughput": r.requests / r.elapsed,
            "p50_ms": pct(r.latencies, 50),
            "p95_ms": pct(r.latencies, 95),
            "p99_ms": pct(r.latencies, 99),
            "error_rate": r.errors / max(1, r.requests),
            "p95_during_compaction_ms": pct(r.during_compaction, 95),
            "compaction_s": r.compaction_s,
            "compaction_status": r.compaction_status,
            "chat_turns": r.chat_turns,
            "error_kinds": r.error_kinds,
        }
        rows.append(row)
        compaction = f"{r.compaction_s:.2f} ({r.compaction_status})" if r.compaction_s else "-"
        print(
            f"| {r.clients} | {r.requests} | {row['throughput']:.0f} | {row['p50_ms']:.1f} | "
            f"{row['p95_ms']:.1f} | {row['p99_ms']:.1f} | "
            f"{row['p50_ms'] / (base * 1000):.1f}x | {row['error_rate']:.1%} | "
            f"{row['p95_during_compaction_ms']:.1f} | {compaction} | {r.chat_turns} |"
        )
    for row in rows:
        if row["error_kinds"]:
            print(f"\nErrors at {row['clients']} clients: {row['error_kinds']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
