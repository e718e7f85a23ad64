"""LoCoMo evidence retrieval through hivekeep's public API: recall@k and MRR per category.

    python bench/locomo_retrieval.py [--data PATH] [--setup plain|subject|said] [--json OUT]
                                     [--sweep] [--peer mem0] [--cached]

Each conversation goes into its own fresh hive (one agent; every turn one memory, dated with its
session's time, written with ``agent.memorize_many``; with ``--setup subject``, the default, the
subject is the speaker, as an agent calling memorize sets it; ``said`` also gives the date as
``source_context`` "said on 8 May 2023"; ``plain`` is issue 3's set-up, no subject). Every
scorable question (categories 1-4 with evidence) is asked through ``agent.recall`` with the
shipped defaults, and through each arm alone. Each conversation is one fold: the per-fold table
shows R@10 per conversation and whether hybrid ever falls below its best single arm.
``--sweep`` also fuses the arms offline over a grid of floor / K / full-text weight / subject
weight, chosen leave-one-conversation-out (on four conversations, scored on the fifth), to
show where the defaults come from. ``--peer mem0`` runs mem0 (bench/peers/) on the same turns,
questions and embedder in the same run. ``--cached`` takes the turns' and questions' vectors from
the vector cache of bench/locomo_folds.py (the same model, the same vectors; the ingest rate is then
not the model's). The data is read from PATH, never copied into the repo.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo_data import CATEGORIES, DEFAULT_PATH, Conversation, Turn, load
from bench.locomo_folds import CachedEmbedder, fold_table, leave_one_out
from hivekeep import Embedder, Hive, Settings
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.core.subjects import about_named
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.services.recall import ArmResults
from hivekeep.store.base import MemoryFilter

KS = (5, 10, 20)
NO_FILTER = MemoryFilter()


@dataclass
class Scores:
    """Recall@k (plain and capped) and reciprocal ranks, per category."""

    recall: dict[int, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    rr: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: int, k: int, ranked: Sequence[str], evidence: frozenset[str]) -> None:
        self.recall[category][k].append(len(set(ranked[:k]) & evidence) / len(evidence))

    def add_rr(self, category: int, ranked: Sequence[str], evidence: frozenset[str]) -> None:
        rank = next((i for i, d in enumerate(ranked) if d in evidence), None)
        self.rr[category].append(0.0 if rank is None else 1 / (rank + 1))

    def overall(self, k: int) -> float:
        values = [v for per_k in self.recall.values() for v in per_k[k]]
        return statistics.fmean(values) if values else 0.0

    def mrr(self) -> float:
        values = [v for per in self.rr.values() for v in per]
        return statistics.fmean(values) if values else 0.0

    def table_row(self, name: str) -> str:
        cells = [f"{self.overall(k):.3f}" for k in KS]
        per_category = [
            f"{statistics.fmean(self.recall[c][10]):.3f}" if self.recall[c][10] else "-"
            for c in CATEGORIES
        ]
        return f"| {name} | " + " | ".join([*cells, f"{self.mrr():.3f}", *per_category]) + " |"

    def at_10(self) -> list[float]:
        return [v for per_k in self.recall.values() for v in per_k[10]]

    def as_dict(self) -> dict[str, object]:
        return {
            **{f"R@{k}": round(self.overall(k), 4) for k in KS},
            "MRR": round(self.mrr(), 4),
            "R@10 by category": {
                CATEGORIES[c]: round(statistics.fmean(self.recall[c][10]), 4)
                for c in CATEGORIES
                if self.recall[c][10]
            },
        }


HEADER = (
    "| configuration | R@5 | R@10 | R@20 | MRR | "
    + " | ".join(f"R@10 {c} {name}" for c, name in CATEGORIES.items())
    + " |\n|"
    + "---|" * (5 + len(CATEGORIES))
)


@dataclass(frozen=True)
class Swept:
    """One question's arms, kept to fuse offline with other parameters."""

    fold: int
    question: str
    category: int
    evidence: frozenset[str]
    per_k: dict[int, ArmResults]
    flat: dict[int, str]  # memory id -> its dialogue id
    created: dict[int, str]
    subjects: dict[int, str | None]


def spoken_date(when: datetime) -> str:
    return f"{when.day} {when.strftime('%B')} {when.year}"


def memory_fields(turn: Turn, setup: str) -> dict[str, object]:
    fields: dict[str, object] = {"content": turn.text, "category": "fact", "created_at": turn.when}
    if setup in ("subject", "said"):
        fields["subject"] = turn.speaker
    if setup == "said":
        fields["source_context"] = f"said on {spoken_date(turn.when)}"
    return fields


@dataclass
class Run:
    default: Scores = field(default_factory=Scores)
    vector: Scores = field(default_factory=Scores)
    text: Scores = field(default_factory=Scores)
    arms: list[Swept] = field(default_factory=list)
    folds: list[tuple[str, Scores, Scores, Scores]] = field(default_factory=list)
    evidence_similarity: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    ingested: int = 0
    duplicates: int = 0
    recall_ms: list[float] = field(default_factory=list)


def run_conversation(
    conv: Conversation,
    embedder: Embedder,
    settings: Settings,
    run: Run,
    sweep: bool,
    setup: str = "subject",
) -> None:
    fold = (conv.sample_id, Scores(), Scores(), Scores())
    run.folds.append(fold)
    default, vector, text = run.default, run.vector, run.text
    run.default, run.vector, run.text = fold[1], fold[2], fold[3]
    try:
        _run_conversation(conv, embedder, settings, run, sweep, setup)
    finally:
        for mine, total in zip(fold[1:], (default, vector, text), strict=True):
            for c, per_k in mine.recall.items():
                for k, values in per_k.items():
                    total.recall[c][k] += values
            for c, values in mine.rr.items():
                total.rr[c] += values
        run.default, run.vector, run.text = default, vector, text


def _run_conversation(
    conv: Conversation,
    embedder: Embedder,
    settings: Settings,
    run: Run,
    sweep: bool,
    setup: str,
) -> None:
    with (
        tempfile.TemporaryDirectory() as folder,
        Hive(Path(folder) / "locomo.db", embedder=embedder, settings=settings) as hive,
    ):
        agent = hive.create_agent("reader")
        started = time.perf_counter()
        written = agent.memorize_many(memory_fields(t, setup) for t in conv.turns)
        run.ingest_seconds += time.perf_counter() - started
        run.ingested += len(conv.turns)
        dia: dict[int, set[str]] = defaultdict(set)
        for turn, result in zip(conv.turns, written, strict=True):
            dia[result.memory.id].add(turn.dia_id)
            run.duplicates += result.duplicate

        created = {r.memory.id: r.memory.created_at for r in written}
        subjects = {r.memory.id: r.memory.subject for r in written}

        def ids_to_dia(ids: Sequence[int]) -> list[str]:
            return [d for i in ids for d in sorted(dia[i])]

        service = hive._services.recall
        for question in conv.questions:
            c, evidence = question.category, question.evidence
            for k in KS:
                started = time.perf_counter()
                hits = agent.recall(question.text, limit=k).hits
                if k == 10:
                    run.recall_ms.append((time.perf_counter() - started) * 1000)
                run.default.add(c, k, ids_to_dia([h.memory.id for h in hits]), evidence)
            ranked = ids_to_dia([h.memory.id for h in agent.recall(question.text, limit=20).hits])
            run.default.add_rr(c, ranked, evidence)

            query = hive._services.embeddings.embed_one(question.text)
            everything = hive.store.vector_search(agent.id, query, len(conv.turns), NO_FILTER)
            vector_ranked = ids_to_dia([i for i, _ in everything])
            similarity = {d: s for i, s in everything for d in dia[i]}
            run.evidence_similarity += [similarity.get(d, -1.0) for d in evidence]
            for k in KS:
                run.vector.add(c, k, vector_ranked, evidence)
                run.text.add(
                    c,
                    k,
                    ids_to_dia(service.text_arm(agent.id, question.text, k, NO_FILTER)),
                    evidence,
                )
            run.vector.add_rr(c, vector_ranked, evidence)
            run.text.add_rr(
                c, ids_to_dia(service.text_arm(agent.id, question.text, 20, NO_FILTER)), evidence
            )
            if sweep:
                calibrated = service.defaults
                service.defaults = replace(calibrated, similarity_floor=-1.0)  # floor applied later
                per_k = {k: service.arms(agent.id, question.text, 2 * k, NO_FILTER)[0] for k in KS}
                service.defaults = calibrated
                flat = {i: d for i, ds in dia.items() for d in sorted(ds)[:1]}
                run.arms.append(
                    Swept(
                        len(run.folds) - 1,
                        question.text,
                        c,
                        evidence,
                        per_k,
                        flat,
                        created,
                        subjects,
                    )
                )


@dataclass
class PeerRun:
    name: str = ""
    scores: Scores = field(default_factory=Scores)
    add_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)


def run_peer(conv: Conversation, embedder: LocalEmbedder, peer_run: PeerRun) -> None:
    """mem0 over the same turns and questions (one user per conversation, infer=False)."""
    from bench.peers.mem0_peer import Mem0Peer

    with tempfile.TemporaryDirectory() as folder:
        peer = Mem0Peer(Path(folder), embedder)
        peer_run.name = peer.name
        try:
            for turn in conv.turns:
                started = time.perf_counter()
                peer.add_many([turn.text], conv.sample_id, [{"dia_id": turn.dia_id}])
                peer_run.add_ms.append((time.perf_counter() - started) * 1000)
            for question in conv.questions:
                started = time.perf_counter()
                found = peer.search(question.text, conv.sample_id, 20)
                peer_run.search_ms.append((time.perf_counter() - started) * 1000)
                ranked = [str(m["dia_id"]) for m in found]
                for k in KS:
                    peer_run.scores.add(question.category, k, ranked, question.evidence)
                peer_run.scores.add_rr(question.category, ranked, question.evidence)
        finally:
            peer.close()


Grid = tuple[float, int, float, float]  # floor, K, full-text weight, subject weight


def fused_scores(
    run: Run, floor: float, rrf_k: int, weight: float, subject: float = 0.0
) -> list[Scores]:
    """The swept questions fused offline with these parameters, one Scores per fold."""
    scores = [Scores() for _ in run.folds]
    for q in run.arms:
        for k in KS:
            arms = q.per_k[k]
            lists = [Ranked([i for i, s in arms.vector if s >= floor]), Ranked(arms.text, weight)]
            fused = fuse(lists, k=rrf_k, recency=q.created)
            if subject:
                about = about_named(q.question, [i for i, _ in fused], q.subjects)
                if about:
                    fused = fuse([*lists, Ranked(about, subject)], k=rrf_k, recency=q.created)
            scores[q.fold].add(q.category, k, [q.flat[i] for i, _ in fused[:k]], q.evidence)
    return scores


def overall(folds: list[Scores], k: int) -> float:
    values = [v for s in folds for per_k in s.recall.values() for v in per_k[k]]
    return statistics.fmean(values) if values else 0.0


def sweep_table(
    run: Run, grid: Callable[[], list[Grid]]
) -> tuple[list[str], dict[str, list[list[float]]]]:
    header = "| floor | K | FTS weight | subject weight | R@5 | R@10 | R@20 |"
    rows = [header, "|---|---|---|---|---|---|---|"]
    per_fold: dict[str, list[list[float]]] = {}
    for floor, rrf_k, weight, subject in grid():
        folds = fused_scores(run, floor, rrf_k, weight, subject)
        per_fold[f"floor {floor} K {rrf_k} w {weight} subj {subject}"] = [s.at_10() for s in folds]
        rows.append(
            f"| {floor} | {rrf_k} | {weight} | {subject} | "
            + " | ".join(f"{overall(folds, k):.3f}" for k in KS)
            + " |"
        )
    return rows, per_fold


def default_grid() -> list[Grid]:
    return [
        (floor, rrf_k, weight, subject)
        for floor in (0.0, 0.2, 0.5)
        for rrf_k in (10, 60)
        for weight in (0.5, 0.8, 1.0, 1.2, 1.5)
        for subject in (0.0, 0.5, 1.0)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--sweep", action="store_true", help="print the fusion parameter grid")
    parser.add_argument("--limit", type=int, help="only the first N conversations (smoke runs)")
    parser.add_argument("--peer", choices=["mem0"], help="also run a peer system side by side")
    parser.add_argument("--cached", action="store_true", help="vectors from the vector cache")
    parser.add_argument(
        "--setup",
        choices=["plain", "subject", "said"],
        default="subject",
        help="subject = speaker (default); said: and source_context 'said on DATE'; plain: none",
    )
    args = parser.parse_args(argv)

    conversations = load(args.data)[: args.limit]
    model = LocalEmbedder()
    embedder: LocalEmbedder | CachedEmbedder = model
    if args.cached:
        embedder = CachedEmbedder(model)
        for conv in conversations:
            embedder.prepare([t.text for t in conv.turns])
            embedder.prepare([q.text for q in conv.questions])
    settings = Settings.from_env()
    run = Run()
    peer_run = PeerRun()
    if args.peer:
        from bench.peers.mem0_peer import available

        reason = available()
        if reason:
            print(f"mem0 cannot run here: {reason}\n")
            args.peer = None
    for conv in conversations:
        run_conversation(conv, embedder, settings, run, args.sweep, args.setup)
        if args.peer:
            run_peer(conv, model, peer_run)

    resolved = settings.recall_defaults(embedder.recall_defaults)
    questions = sum(len(c.questions) for c in conversations)
    print(
        f"LoCoMo {args.data.name}: {len(conversations)} conversations, {run.ingested} turns, "
        f"{questions} questions (categories 1-4 with evidence), set-up {args.setup!r}\n"
    )
    print(HEADER)
    print(
        run.default.table_row(
            f"hybrid (floor {resolved.similarity_floor}, K {resolved.rrf_k}, "
            f"FTS weight {resolved.fts_weight}, subject weight {resolved.subject_weight}, "
            f"time weight {resolved.time_weight})"
        )
    )
    print(run.vector.table_row("vector only (no floor)"))
    print(run.text.table_row("full text only"))
    if args.peer:
        print(peer_run.scores.table_row(f"{peer_run.name}, same embedder, infer=False"))
    dropped = {
        floor: sum(s < floor for s in run.evidence_similarity) / len(run.evidence_similarity)
        for floor in (0.1, 0.2, 0.3, 0.4, 0.5)
    }
    print(
        "\nTrue evidence dropped by a similarity floor: "
        + ", ".join(f"{f}: {d:.1%}" for f, d in dropped.items())
    )
    print(f"Median question-evidence cosine: {statistics.median(run.evidence_similarity):.3f}")
    throughput = run.ingested / run.ingest_seconds
    ms = sorted(run.recall_ms)
    print(
        f"Ingest: {throughput:.0f} memories/s ({run.duplicates} turns deduplicated); "
        f"recall (limit 10, incl. query embedding): p50 {statistics.median(ms):.1f} ms, "
        f"p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms"
    )
    if args.peer:
        print(
            f"{peer_run.name}: add p50 {statistics.median(peer_run.add_ms):.1f} ms per memory, "
            f"search (limit 20) p50 {statistics.median(peer_run.search_ms):.1f} ms"
        )
    print("\nPer fold (one conversation each), R@10:\n")
    print(
        "| fold | questions | vector only | full text only | hybrid | hybrid - best arm "
        "| hybrid, temporal |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, hybrid, vector, text in run.folds:
        h, v, t = (statistics.fmean(s.at_10()) for s in (hybrid, vector, text))
        temporal = hybrid.recall[2][10]
        print(
            f"| {name} | {len(hybrid.at_10())} | {v:.3f} | {t:.3f} | {h:.3f} "
            f"| {h - max(v, t):+.3f} | {statistics.fmean(temporal) if temporal else 0:.3f} |"
        )
    fold_means = [statistics.fmean(s.at_10()) for _, s, _, _ in run.folds]
    print(f"| **mean of folds** | | | | **{statistics.fmean(fold_means):.3f}** | |")
    if args.sweep:
        print("\nOffline fusion sweep (same arms, fused with other parameters):\n")
        rows, per_fold = sweep_table(run, default_grid)
        print("\n".join(rows))
        print("\nLeave one conversation out: the grid point best on four, scored on the fifth\n")
        folds = leave_one_out(per_fold, list(per_fold))
        shipped = (
            f"floor {resolved.similarity_floor} K {resolved.rrf_k} w {resolved.fts_weight} "
            f"subj {resolved.subject_weight}"
        )
        fixed = [shipped] if shipped in per_fold else []
        print(
            "\n".join(
                fold_table(
                    per_fold, fixed or [next(iter(per_fold))], [f[0] for f in run.folds], folds
                )
            )
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "data": str(args.data),
                    "questions": questions,
                    "defaults": vars(resolved) if hasattr(resolved, "__dict__") else str(resolved),
                    "setup": args.setup,
                    "hybrid": run.default.as_dict(),
                    "hybrid_r10_by_fold": {
                        name: round(statistics.fmean(s.at_10()), 4) for name, s, _, _ in run.folds
                    },
                    "vector_only": run.vector.as_dict(),
                    "text_only": run.text.as_dict(),
                    "floor_drops_evidence": dropped,
                    "ingest_per_second": round(throughput, 1),
                    "recall_ms_p50": round(statistics.median(ms), 2),
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
