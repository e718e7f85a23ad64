"""Soak test: many processes and threads doing mixed operations on one hive file, for minutes.

Each worker thread loops: memorize a unique memory, append a unique line to the shared agent's
profile (a compare-and-swap edit), update the importance of the newest memory, recall. At the end
the report checks what must hold under any interleaving:

- no error reached a caller (in particular no "database is locked");
- no write was lost or doubled: one memory per acknowledged memorize, every acknowledged profile
  line present, the profile revision equal to the number of edits;
- the file's integrity check passes and the archive, FTS and vector rows agree.

    python bench/soak.py --processes 8 --threads 2 --seconds 120
    python bench/soak.py --processes 8 --threads 2 --seconds 3 --json out.json   # the test's run
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import json, sys, threading, time
from hivekeep import Hive, Settings

db, worker, threads, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
# Dedup only exact copies: the workers' sentences are near-duplicates on purpose.
hive = Hive(db, embedder="local", settings=Settings(dedup_threshold=1.0, profile_max_tokens=10**6))
agent = hive.get_agent("soak")
errors, done, latencies = [], [], {"memorize": [], "edit_profile": [], "update": [], "recall": []}
hive._services.embeddings.embed(["warm up"])  # load the model before the clock starts
print("ready", flush=True)
sys.stdin.readline()  # every worker starts together
until = time.monotonic() + seconds

def timed(name, call):
    start = time.perf_counter()
    result = call()
    latencies[name].append(time.perf_counter() - start)
    return result

def work(thread):
    n = 0
    while time.monotonic() < until:
        tag = f"w{worker}t{thread}n{n}"
        n += 1
        try:
            timed("memorize", lambda: agent.memorize(f"Worker {tag} noted a fact", category="fact"))
            timed("edit_profile", lambda: agent.edit_profile("Log", "append", f"- {tag}"))
            newest = agent.list_memories(limit=1).memories[0]
            timed("update", lambda: agent.update_memory(newest.id, importance=1 + n % 10))
            timed("recall", lambda: agent.recall(f"fact {n}"))
            done.append(tag)
        except Exception as exc:
            errors.append(f"{tag}: {type(exc).__name__}: {exc}")

pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for t in pool: t.start()
for t in pool: t.join()
print(json.dumps({"done": done, "errors": errors, "latencies": latencies}))
"""


def run(db: Path, processes: int, threads: int, seconds: float) -> dict[str, Any]:
    from hivekeep import Hive, Settings

    with Hive(db, embedder="local", settings=Settings(profile_max_tokens=10**6)) as hive:
        hive.create_agent("soak")
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(n), str(threads), str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(processes)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    for worker in workers:  # all at once: the load must overlap
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=seconds + 300)
        if worker.returncode != 0:
            raise RuntimeError(f"a worker crashed:\n{err}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return check(db, reports)


def check(db: Path, reports: list[dict[str, Any]]) -> dict[str, Any]:
    from hivekeep import Hive, Settings

    tags = [tag for report in reports for tag in report["done"]]
    errors = [error for report in reports for error in report["errors"]]
    problems = [f"{len(errors)} errors reached callers, e.g. {errors[0]}"] if errors else []
    with Hive(db, embedder="local", settings=Settings(profile_max_tokens=10**6)) as hive:
        agent = hive.get_agent("soak")
        memories = agent.list_memories().total
        profile = agent.profile()
    if memories != len(tags):
        problems.append(f"{memories} memories for {len(tags)} acknowledged memorize calls")
    lost = [tag for tag in tags if f"- {tag}\n" not in profile.text]
    if lost:
        problems.append(f"{len(lost)} profile edits lost, e.g. {lost[0]}")
    if profile.revision != len(tags):
        problems.append(f"profile revision {profile.revision} after {len(tags)} edits")
    conn = apsw.Connection(str(db))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    try:
        if conn.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            problems.append("integrity_check failed")
        rows = {r[0] for r in conn.execute("SELECT id FROM memories")}
        if rows != {r[0] for r in conn.execute("SELECT rowid FROM memory_fts")}:
            problems.append("FTS rows differ from memories")
        if rows != {r[0] for r in conn.execute("SELECT memory_id FROM memory_vec")}:
            problems.append("vector rows differ from memories")
    finally:
        conn.close()
    latencies: dict[str, list[float]] = {}
    for report in reports:
        for name, values in report["latencies"].items():
            latencies.setdefault(name, []).extend(values)
    return {
        "ok": not problems,
        "problems": problems,
        "iterations": len(tags),
        "errors": len(errors),
        "latency_ms": {
            name: {
                "p50": statistics.median(values) * 1000,
                "p95": sorted(values)[int(0.95 * (len(values) - 1))] * 1000,
                "max": max(values) * 1000,
            }
            for name, values in latencies.items()
            if values
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Path(tmp) / "soak.db", args.processes, args.threads, args.seconds)
    print("# hivekeep soak test\n")
    print(
        f"`python bench/soak.py --processes {args.processes} --threads {args.threads} "
        f"--seconds {args.seconds:g}`\n"
    )
    print(
        f"Iterations (4 operations each): {result['iterations']}; errors: {result['errors']}; "
        f"checks: {'all passed' if result['ok'] else '; '.join(result['problems'])}\n"
    )
    print("| operation | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, figures in result["latency_ms"].items():
        print(f"| {name} | {figures['p50']:.1f} | {figures['p95']:.1f} | {figures['max']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
