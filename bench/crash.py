"""Crash test: kill a busy hive process with SIGKILL at random points, then check nothing broke.

A child process opens a hive (real SQLite file, real bundled embedder, ``ScriptedLLM``) and loops:
bulk memorize, a profile edit, a chat turn, and now and then a forced compaction with its
maintenance call. Each write the child has been told succeeded is appended to an acknowledgement
log (flushed and fsynced) before the next one starts. The parent kills the child after a random
delay, then checks the file:

- ``PRAGMA integrity_check`` is ok;
- the archive, the FTS index and the vector index agree row for row (pending rows excepted);
- every acknowledged memory and profile line is present;
- maintenance left pending by the kill is retried by ``hive.resume()`` and completes.

Runs accumulate on one file, so later runs start from the state earlier kills left.

    python bench/crash.py --runs 100          # the long run (a few minutes)
    python bench/crash.py --runs 3 --json out.json   # what the test suite runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = """
import json, os, random, sys
from hivekeep import Hive, Settings
from hivekeep.testing import ScriptedLLM
from hivekeep.core.maintenance import SYSTEM_PROMPT
from hivekeep.core.transcript import FOLD_SYSTEM, MERGE_SYSTEM
from hivekeep.core.blocks import extract_block

db, acks_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)

def reply(messages, tools):
    system = messages[0].content
    if system == FOLD_SYSTEM or system == MERGE_SYSTEM:
        return f"Summary {rng.random():.6f}."
    if system == SYSTEM_PROMPT:
        item = {"op": "add", "content": f"Extracted fact {seed}-{rng.random():.9f}",
                "category": "fact"}
        # Keep the profile as shown, so every acknowledged line can be checked after a kill.
        current = extract_block(messages[-1].content, "profile")
        return f"<archive>{json.dumps([item])}</archive><profile>{current}</profile>"
    return f"Reply {rng.random():.6f} " + "word " * 30

llm = ScriptedLLM([reply] * 100000, context_window=4096)
hive = Hive(db, embedder="local", settings=Settings(dedup_threshold=1.0), llm=llm)
agents = hive.agents() or [hive.create_agent("crash")]
agent = agents[0]
agent.configure(compaction={"min_batch_tokens": 200})
acks = open(acks_path, "a")

def ack(kind, value):
    acks.write(json.dumps({"kind": kind, "value": value}) + "\\n")
    acks.flush()
    os.fsync(acks.fileno())

print("ready", flush=True)
conversation = None
for step in range(100000):
    batch = [{"content": f"Memory {seed}-{step}-{n} {rng.random():.9f}", "category": "fact"}
             for n in range(rng.randint(1, 20))]
    agent.memorize_many(batch)
    for item in batch:
        ack("memory", item["content"])
    line = f"- line {seed}-{step}"
    agent.edit_profile("Log", "append", line) if step % 3 == 0 else None
    if step % 3 == 0:
        ack("profile", line)
        if agent.profile().tokens > 1000:
            agent.set_profile("## Pinned\\n- keep me\\n")
            ack("profile-reset", step)
    reply_ = agent.chat(f"Message {step} " + "text " * 40, conversation)
    conversation = reply_.conversation_id
    if step % 4 == 3:
        agent.compact(conversation)
"""


def open_checked(db: Path) -> Any:
    conn = apsw.Connection(str(db))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def verify(db: Path, acks_path: Path) -> dict[str, Any]:
    """Every check after a kill; returns what was found (``ok`` False on any failure)."""
    from hivekeep import Hive, Settings
    from hivekeep.core.blocks import extract_block
    from hivekeep.core.maintenance import SYSTEM_PROMPT
    from hivekeep.testing import ScriptedLLM

    problems: list[str] = []
    conn = open_checked(db)
    try:
        if conn.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            problems.append("integrity_check failed")
        memories = {r[0] for r in conn.execute("SELECT id FROM memories")}
        ready = {
            r[0] for r in conn.execute("SELECT id FROM memories WHERE embedding_state='ready'")
        }
        fts = {r[0] for r in conn.execute("SELECT rowid FROM memory_fts")}
        vectors = {r[0] for r in conn.execute("SELECT memory_id FROM memory_vec")}
        contents = {r[0] for r in conn.execute("SELECT content FROM memories")}
        profile = conn.execute("SELECT text FROM profiles").fetchone()
    finally:
        conn.close()
    if fts != memories:
        problems.append(f"FTS rows differ from memories by {len(fts ^ memories)}")
    if vectors != ready:
        problems.append(f"vector rows differ from ready memories by {len(vectors ^ ready)}")
    acked = [json.loads(line) for line in acks_path.read_text().splitlines() if line.strip()]
    lost = [a["value"] for a in acked if a["kind"] == "memory" and a["value"] not in contents]
    if lost:
        problems.append(f"{len(lost)} acknowledged memories lost, e.g. {lost[0]!r}")
    last_reset = max((i for i, a in enumerate(acked) if a["kind"] == "profile-reset"), default=-1)
    lines = [a["value"] for a in acked[last_reset + 1 :] if a["kind"] == "profile"]
    text = profile[0] if profile else ""
    missing = [line for line in lines if line not in text]
    if missing:
        problems.append(f"{len(missing)} acknowledged profile lines lost, e.g. {missing[0]!r}")

    def maintenance(messages: Any, tools: Any) -> str:
        assert messages[0].content == SYSTEM_PROMPT
        current = extract_block(messages[-1].content, "profile")
        return f"<archive>[]</archive><profile>{current}</profile>"

    with Hive(
        db, embedder="local", settings=Settings(), llm=ScriptedLLM([maintenance] * 50)
    ) as hive:
        pending_before = sum(len(hive._services.maintenance.pending(a.id)) for a in hive.agents())
        for _ in range(10):  # resume takes the oldest batches that fit one call each time
            if not any(hive._services.maintenance.pending(a.id) for a in hive.agents()):
                break
            hive.resume()
        pending_after = sum(len(hive._services.maintenance.pending(a.id)) for a in hive.agents())
    if pending_after:
        problems.append(f"{pending_after} maintenance batches still pending after resume")
    return {
        "ok": not problems,
        "problems": problems,
        "memories": len(memories),
        "acknowledged": len(acked),
        "pending_retried": pending_before - pending_after,
    }


def one_run(db: Path, acks: Path, seed: int, rng: random.Random) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(acks), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    ready = child.stdout.readline().strip()
    if ready != "ready":
        child.kill()
        raise RuntimeError(f"child failed to start: {child.communicate()[1]}")
    delay = rng.uniform(0.05, 2.5)
    time.sleep(delay)
    exited = child.poll()
    child.send_signal(signal.SIGKILL)
    _, err = child.communicate()
    if exited is not None:
        raise RuntimeError(f"child exited on its own ({exited}) before the kill:\n{err}")
    result = verify(db, acks)
    result["killed_after_s"] = round(delay, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db, acks = Path(tmp) / "crash.db", Path(tmp) / "acks.jsonl"
        results = [one_run(db, acks, args.seed * 1000 + n, rng) for n in range(args.runs)]
    failed = [r for r in results if not r["ok"]]
    print("# hivekeep crash test\n")
    print(f"`python bench/crash.py --runs {args.runs} --seed {args.seed}`\n")
    print(
        "| runs | kills verified ok | acknowledged writes checked | memories at end | "
        "maintenance batches retried |"
    )
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {len(results)} | {len(results) - len(failed)} | {results[-1]['acknowledged']} | "
        f"{results[-1]['memories']} | {sum(r['pending_retried'] for r in results)} |"
    )
    for r in failed:
        print(f"\nFAILED after {r['killed_after_s']} s: {'; '.join(r['problems'])}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
