"""Temporal questions and the fusion ceiling on LoCoMo, per category and per fold (issue 28).

    python bench/experiments/locomo_temporal.py [--data PATH] [--setup plain|subject|said]

Offline, on the same indexes and cached vectors as bench/experiments/locomo_levers.py. Prints:
the time list (``MEMORY_TIME_WEIGHT``: for a question asking when, the candidates whose text
states a time, as a further fused list) at several weights against no time list (everything else
at the shipped defaults), per category and per fold,
with its wins and the leave-one-conversation-out choice of its weight; then the ceiling of
fusing the two arms: the oracle that takes, per question, the better of the two arms' top 10,
and the one that takes the union of both top 10s (20 candidates), against the shipped fusion.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.experiments.locomo_levers import (
    CANDIDATE,
    Corpus,
    Hybrid,
    Question,
    corpora_from,
)
from bench.locomo_data import CATEGORIES
from bench.locomo_folds import leave_one_out, per_fold, wins
from hivekeep.providers.embeddings.local import LocalEmbedder

K = 10
TIME_WEIGHTS = (0.25, 0.5, 1.0, 1.5, 2.0)
SHIPPED_TIME = LocalEmbedder.recall_defaults.time_weight

# per question: its fold, its category and its R@10
Scored = list[tuple[int, int, float]]
Score = Callable[[Corpus, Question], float]


def found(c: Corpus, q: Question, ranked: Sequence[int]) -> float:
    return len({c.ids[i] for i in ranked} & q.evidence) / len(q.evidence)


def score_all(corpora: list[Corpus], score: Score) -> Scored:
    return [(f, q.category, score(c, q)) for f, c in enumerate(corpora) for q in c.questions]


def by_config(config: Hybrid) -> Score:
    return lambda c, q: found(c, q, config.rank(c, q, K)[:K])


def cell(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.3f}" if values else "-"


def category_row(name: str, scored: Scored) -> str:
    cells = [cell([s for _, _, s in scored])]
    cells += [cell([s for _, cat, s in scored if cat == c]) for c in CATEGORIES]
    return f"| {name} | " + " | ".join(cells) + " |"


def folds_of(scored: Scored, folds: int, category: int | None = None) -> list[list[float]]:
    return [
        [s for f, cat, s in scored if f == fold and category in (None, cat)]
        for fold in range(folds)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args, _, corpora = corpora_from(argv, __doc__.split("\n\n")[0])
    names = [c.name for c in corpora]
    n = len(corpora)
    questions = sum(len(c.questions) for c in corpora)
    asking = sum(q.asks_when for c in corpora for q in c.questions)
    print(f"LoCoMo {args.data.name} ({args.setup}): {questions} questions, {asking} ask when")
    timed = [t for c in corpora for t in c.timed]
    evidence_timed = [
        c.timed[c.ids.index(e)]
        for c in corpora
        for q in c.questions
        if q.asks_when
        for e in q.evidence
    ]
    print(
        f"Turns stating a time: {statistics.fmean(timed):.1%}; evidence of questions asking "
        f"when that states one: {statistics.fmean(evidence_timed):.1%}\n"
    )

    configs = {"no time list": CANDIDATE} | {
        f"time {w}": replace(CANDIDATE, time=w) for w in TIME_WEIGHTS
    }
    scored = {name: score_all(corpora, by_config(h)) for name, h in configs.items()}
    cats = " | ".join(f"R@10 {c} {name}" for c, name in CATEGORIES.items())
    print(f"| configuration | R@10 | {cats} |\n|" + "---|" * (2 + len(CATEGORIES)))
    for name, values in scored.items():
        print(category_row(f"{name} ({configs[name].label()})", values))

    print("\nPer fold, R@10 (all questions; temporal in brackets)\n")
    print("| configuration | " + " | ".join(names) + " | wins (all) | wins (temporal) | spread |")
    print("|---|" + "---|" * (n + 3))
    results = {name: folds_of(v, n) for name, v in scored.items()}
    temporal = {name: folds_of(v, n, 2) for name, v in scored.items()}
    for name in scored:
        cells = [
            f"{statistics.fmean(a):.3f} ({statistics.fmean(t):.3f})"
            for a, t in zip(results[name], temporal[name], strict=True)
        ]
        fold_means = per_fold(results, name)
        print(
            f"| {name} | " + " | ".join(cells) + f" | {wins(results, name, 'no time list')} of {n} "
            f"| {wins(temporal, name, 'no time list')} of {n} "
            f"| {min(fold_means):.3f}-{max(fold_means):.3f} |"
        )
    chosen = leave_one_out(results, list(results))
    print(
        "\nLeave one conversation out over {no time list, time weights}: "
        + ", ".join(f"{names[f.held_out]}: {f.chosen} {f.score:.3f}" for f in chosen)
        + f"; mean {statistics.fmean(f.score for f in chosen):.3f}"
    )

    print("\nCeiling of fusing the two arms (the shipped arms: feedback, floor; top 10 each)\n")

    def vector_arm(c: Corpus, q: Question) -> float:
        return found(c, q, CANDIDATE.arms(c, q, 2 * K)[0][:K])

    def text_arm(c: Corpus, q: Question) -> float:
        return found(c, q, CANDIDATE.arms(c, q, 2 * K)[1][:K])

    def union(c: Corpus, q: Question) -> float:
        vector, text, _ = CANDIDATE.arms(c, q, 2 * K)
        return found(c, q, [*vector[:K], *text[:K]])

    vector, text = score_all(corpora, vector_arm), score_all(corpora, text_arm)
    best = [(f, cat, max(v, t)) for (f, cat, v), (_, _, t) in zip(vector, text, strict=True)]
    rows = {
        "vector arm alone": vector,
        "full-text arm alone": text,
        "fusion without the time list": scored["no time list"],
        f"shipped fusion (time list {SHIPPED_TIME})": scored[f"time {SHIPPED_TIME}"],
        "oracle: the better arm per question": best,
        "oracle: union of both top 10s (20 results)": score_all(corpora, union),
    }
    print(f"| ranking | R@10 | {cats} |\n|" + "---|" * (2 + len(CATEGORIES)))
    for name, values in rows.items():
        print(category_row(name, values))
    shipped = scored[f"time {SHIPPED_TIME}"]
    gap = [(f, cat, o - s) for (f, cat, o), (_, _, s) in zip(best, shipped, strict=True)]
    print(category_row("gap: better arm - shipped fusion", gap))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
