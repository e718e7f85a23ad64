"""Dedup on labelled pairs: changed facts lost and restatements merged, shipped path vs cosine only.

    python bench/dedup.py [--pairs PATH ...] [--threshold 0.80] [--show]

Without ``--pairs``, every pair set there is: the repository's own
(``tests/data/dedup_pairs.jsonl``,
and ``tests/data/dedup_adversarial.jsonl``, written from the rule's blind spots) and the
development pairs beside the checkout (``../shared/data/dedup/pairs_dev.jsonl``, read from there,
never copied into the repository). Each line is ``{"first": ..., "second": ..., "same": bool,
"kind": ...}``: ``same`` true for a restatement (merging it is right), false for a changed fact
(a merge that hid it would lose the fact). Every pair goes through hivekeep's real write path
with the bundled embedder: a fresh agent memorizes ``first``, then ``second``, and is judged by
the invariant of SPEC 4.1 (a write is never hidden): a changed fact is lost when ``second`` is
not the live text of one of the agent's memories afterwards; a restatement is merged when the
agent holds one memory. A changed fact the rule called the same fact rewords the memory (the old
text kept as its version): counted as "replaced", not lost. The cosine-only rule is computed in
the same run from the same model's vectors, as the merge that hides the new text it was before:
duplicate when the normalised texts are equal or the cosine reaches the threshold.
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
from hivekeep.core.dedup import DEDUP_THRESHOLD
from hivekeep.core.text import normalise_text, wording

ROOT = Path(__file__).resolve().parent.parent
PAIR_SETS = (
    ROOT / "tests" / "data" / "dedup_pairs.jsonl",
    ROOT / "tests" / "data" / "dedup_adversarial.jsonl",
    ROOT.parent / "shared" / "data" / "dedup" / "pairs_dev.jsonl",
)


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    same: bool
    kind: str


@dataclass
class Tally:
    changed: int = 0
    lost: int = 0  # changed facts whose new text is not live: the fact is gone
    replaced: int = 0  # changed facts merged, the new text live, the old kept as a version
    pointed: int = 0  # changed facts stored with the old one listed in ``similar``
    restated: int = 0
    merged: int = 0  # restatements merged into one memory: right

    def add(
        self, pair: Pair, merged: bool, *, lost: bool | None = None, pointed: bool | None = None
    ) -> None:
        """``merged``: one memory left; ``lost``: the new text is not live (None: a merge hides
        it, as the cosine-only rule would)."""
        lost = merged if lost is None else lost
        if pair.same:
            self.restated += 1
            self.merged += merged
        else:
            self.changed += 1
            self.lost += lost
            self.replaced += merged and not lost
            self.pointed += bool(pointed)

    def row(self, name: str, *, pointed: bool) -> str:
        merged = self.merged / self.restated if self.restated else 0.0
        kept = self.changed - self.lost - self.replaced
        shown = f"{self.pointed} / {kept}" if pointed else "-"
        replaced = self.replaced if pointed else "-"
        return (
            f"| {name} | {self.lost} / {self.changed} | {self.merged} / {self.restated} "
            f"({merged:.0%}) | {replaced} | {shown} |"
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
    parser.add_argument("--pairs", type=Path, action="append", help="a pair set (repeatable)")
    parser.add_argument("--threshold", type=float, default=DEDUP_THRESHOLD)
    parser.add_argument("--show", action="store_true", help="print every pair's verdicts")
    args = parser.parse_args()
    sets = args.pairs or [path for path in PAIR_SETS if path.exists()]
    print(f"cosine threshold {args.threshold}, bundled embedder, no LLM call\n")
    print(
        "| pair set | rule | changed facts lost | restatements merged "
        "| changed facts replacing the old one (kept as a version) "
        "| kept facts pointing at the old one |"
    )
    print("|---|---|---|---|---|---|")
    started = time.perf_counter()
    for path in sets:
        _measure(path, args.threshold, show=args.show)
    print(f"\n{time.perf_counter() - started:.1f} s in all.")


def _measure(path: Path, threshold: float, *, show: bool) -> None:
    pairs = load(path)
    shipped, cosine_only = Tally(), Tally()
    wrong: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(dedup_threshold=threshold)
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
                    normalise_text(pair.first) == normalise_text(pair.second) or cosine >= threshold
                )
                live = agent.list_memories(limit=3).memories
                hidden = wording(pair.second) not in {wording(m.content) for m in live}
                pointed = any(m.id == live[-1].id for m in second.similar)
                shipped.add(pair, len(live) == 1, lost=hidden, pointed=pointed)
                cosine_only.add(pair, naive)
                if hidden or (len(live) == 1) != pair.same:
                    what = "lost" if hidden else "replaced" if len(live) == 1 else "kept"
                    wrong[f"{what} {pair.kind}"] += 1
                if show:
                    print(
                        f"{cosine:.3f} same={pair.same!s:5} merged={len(live) == 1!s:5} "
                        f"cosine-only={naive!s:5} {pair.kind:12} {pair.second}"
                    )
    name = f"{path.name} ({len(pairs)})"
    print(shipped.row(f"{name} | shipped (write path)", pointed=True))
    print(cosine_only.row(f"{name} | cosine only", pointed=False))
    if wrong:
        print(
            f"| {name} | shipped rule's misses | "
            + ", ".join(f"{k} {n}" for k, n in sorted(wrong.items()))
            + " | | | |"
        )


if __name__ == "__main__":
    main()
