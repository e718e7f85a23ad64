"""Dedup on labelled pairs: changed facts lost and restatements merged, shipped rule vs cosine only.

    python bench/dedup.py [--pairs PATH] [--threshold 0.90] [--show]

Each line of PATH is ``{"first": ..., "second": ..., "same": bool, "kind": ...}``: ``same`` true
for a restatement (merging it is right), false for a changed fact (merging it loses the fact).
Every pair goes through hivekeep's real write path with the bundled embedder: a fresh agent
memorizes ``first``, then ``second``, and the second result's ``duplicate`` flag is the shipped
rule's verdict (cosine >= threshold and "adds nothing", SPEC 4.1). The cosine-only rule, the one
hivekeep shipped before, is computed in the same run from the same model's vectors: duplicate when
the normalised texts are equal or the cosine reaches the threshold. The pairs are read from PATH,
never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hivekeep import Hive, Settings
from hivekeep.core.text import normalise_text

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "dedup" / "pairs_dev.jsonl"


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    same: bool
    kind: str


@dataclass
class Tally:
    changed: int = 0
    lost: int = 0  # changed facts merged into the old one: the fact is gone
    pointed: int = 0  # changed facts stored with the old one listed in ``similar``
    restated: int = 0
    merged: int = 0  # restatements merged: right

    def add(self, pair: Pair, duplicate: bool, pointed: bool | None = None) -> None:
        if pair.same:
            self.restated += 1
            self.merged += duplicate
        else:
            self.changed += 1
            self.lost += duplicate
            self.pointed += bool(pointed)

    def row(self, name: str, *, pointed: bool) -> str:
        merged = self.merged / self.restated if self.restated else 0.0
        shown = f"{self.pointed} / {self.changed - self.lost}" if pointed else "-"
        return (
            f"| {name} | {self.lost} / {self.changed} | {self.merged} / {self.restated} "
            f"({merged:.0%}) | {shown} |"
        )


def load(path: Path) -> list[Pair]:
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            item = json.loads(line)
            try:
                pairs.append(Pair(item["first"], item["second"], bool(item["same"]), item["kind"]))
            except KeyError as exc:
                raise SystemExit(f"{path}:{number}: missing field {exc}") from None
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--threshold", type=float, default=0.90)
    parser.add_argument("--show", action="store_true", help="print every pair's verdicts")
    args = parser.parse_args()
    pairs = load(args.pairs)
    shipped, cosine_only = Tally(), Tally()
    wrong: Counter[str] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(dedup_threshold=args.threshold)
        with Hive(Path(folder) / "dedup.db", embedder="local", settings=settings) as hive:
            for number, pair in enumerate(pairs):
                agent = hive.create_agent(f"pair-{number}")
                agent.memorize(pair.first, category="fact")
                second = agent.memorize(pair.second, category="fact")
                first_vector, second_vector = hive._services.embeddings.embed(
                    [pair.first, pair.second]
                )
                cosine = float(first_vector @ second_vector)
                naive = (
                    normalise_text(pair.first) == normalise_text(pair.second)
                    or cosine >= args.threshold
                )
                first_id = agent.list_memories(limit=2).memories[-1].id
                shipped.add(pair, second.duplicate, any(m.id == first_id for m in second.similar))
                cosine_only.add(pair, naive)
                if second.duplicate != pair.same:
                    wrong[pair.kind] += 1
                if args.show:
                    print(
                        f"{cosine:.3f} same={pair.same!s:5} shipped={second.duplicate!s:5} "
                        f"cosine-only={naive!s:5} {pair.kind:12} {pair.second}"
                    )
    elapsed = time.perf_counter() - started
    print(f"\n{len(pairs)} pairs from {args.pairs.name}, cosine threshold {args.threshold}, ")
    print(f"bundled embedder, no LLM call; {elapsed:.1f} s in all.\n")
    print(
        "| rule | changed facts lost | restatements merged | kept facts pointing at the old one |"
    )
    print("|---|---|---|---|")
    print(shipped.row("shipped (cosine + adds nothing)", pointed=True))
    print(cosine_only.row("cosine only", pointed=False))
    if wrong:
        print("\nShipped rule's misses by kind: " + ", ".join(f"{k} {n}" for k, n in wrong.items()))


if __name__ == "__main__":
    main()
