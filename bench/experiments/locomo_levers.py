"""Retrieval levers measured on LoCoMo outside the product path, each alone, with one command.

    python bench/experiments/locomo_levers.py [--data PATH]

Builds, per conversation, an in-memory FTS5 index and MiniLM vectors of every turn (the same
texts as bench/locomo_retrieval.py), then evaluates variants of the full-text query and of the
fusion offline. Figures are recall@5/10/20 of the evidence turns over the 760 scorable questions.
What was kept went into hivekeep (see docs/benchmarks.md); the rest is here so it can be checked.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.locomo_data import DEFAULT_PATH, Conversation, load
from hivekeep.core import fts_query
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.providers.embeddings.local import LocalEmbedder

KS = (5, 10, 20)
DEPTH = 100


@dataclass
class Question:
    evidence: frozenset[str]
    terms: tuple[str, ...]
    vector: np.ndarray


@dataclass
class Corpus:
    """One conversation: an FTS index (content + optional date column) and turn vectors."""

    ids: list[str]
    matrix: np.ndarray
    fts: apsw.Connection
    doc_terms: list[set[str]]
    questions: list[Question]


def spoken_date(turn_when: object) -> str:
    return f"{turn_when.day} {turn_when.strftime('%B')} {turn_when.year}"  # type: ignore[attr-defined]


def build(conv: Conversation, embedder: LocalEmbedder, tokenizer: str) -> Corpus:
    fts = apsw.Connection(":memory:")
    fts.execute(f"CREATE VIRTUAL TABLE f USING fts5(content, context, tokenize='{tokenizer}')")
    fts.executemany(
        "INSERT INTO f(rowid, content, context) VALUES (?, ?, ?)",
        [(i, t.text, spoken_date(t.when)) for i, t in enumerate(conv.turns)],
    )
    matrix = np.stack(embedder.embed([t.text for t in conv.turns]))
    vectors = embedder.embed([q.text for q in conv.questions])
    questions = [
        Question(q.evidence, fts_query.terms(q.text), v)
        for q, v in zip(conv.questions, vectors, strict=True)
    ]
    doc_terms = [set(fts_query.terms(t.text.split(":", 1)[1])) for t in conv.turns]
    return Corpus([t.dia_id for t in conv.turns], matrix, fts, doc_terms, questions)


def text_ranking(
    corpus: Corpus, terms: Sequence[str], *, date: bool, and_first: bool, prefix: bool
) -> list[int]:
    quoted = [f'"{t}"{"*" if prefix else ""}' for t in terms]
    if not quoted:
        return []
    scope = "" if date else "{content} : "
    found: list[int] = []
    if and_first and len(quoted) > 1:
        found = [
            r[0]
            for r in corpus.fts.execute(
                "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?",
                (scope + "(" + " AND ".join(quoted) + ")", DEPTH),
            )
        ]
    for (rowid,) in corpus.fts.execute(
        "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?",
        (scope + "(" + " OR ".join(quoted) + ")", DEPTH),
    ):
        if rowid not in found:
            found.append(rowid)
    return found


def recall_at(ranked_by_k: Callable[[int], list[int]], corpus: Corpus, q: Question) -> list[float]:
    return [
        len({corpus.ids[i] for i in ranked_by_k(k)[:k]} & q.evidence) / len(q.evidence) for k in KS
    ]


def evaluate(corpora: list[Corpus], method: Callable[[Corpus, Question, int], list[int]]) -> str:
    rows = [
        recall_at(lambda k, c=c, q=q: method(c, q, k), c, q) for c in corpora for q in c.questions
    ]
    return " | ".join(f"{statistics.fmean(r[i] for r in rows):.3f}" for i in range(len(KS)))


def fts_variants(corpora: list[Corpus], stopwords: frozenset[str]) -> list[tuple[str, Callable]]:
    def variant(
        date: bool,
        and_first: bool = True,
        prefix: bool = True,
        extra_stop: frozenset[str] = frozenset(),
    ) -> Callable:
        def method(c: Corpus, q: Question, k: int) -> list[int]:
            terms = [t for t in q.terms if t not in extra_stop] or list(q.terms)
            return text_ranking(c, terms, date=date, and_first=and_first, prefix=prefix)

        return method

    return [
        ("full text, content only (AND then OR, prefix)", variant(False)),
        ("+ date words indexed", variant(True)),
        ("+ date, OR only (no AND first)", variant(True, and_first=False)),
        ("+ date, exact terms (no prefix)", variant(True, prefix=False)),
        (
            "+ date, question words kind/type/many/much/likely/might as stopwords",
            variant(True, extra_stop=stopwords),
        ),
    ]


def fusion_variants() -> list[tuple[str, Callable]]:
    def hybrid(
        rrf_k: int, weight: float, feedback: float = 0.0, fts_prf_terms: int = 0, floor: float = 0.0
    ) -> Callable:
        def method(c: Corpus, q: Question, k: int) -> list[int]:
            pool = 2 * k
            text = text_ranking(c, q.terms, date=True, and_first=True, prefix=True)
            query = q.vector
            if feedback and text:
                query = query + feedback * c.matrix[text[:3]].mean(axis=0)
                query = query / np.linalg.norm(query)
            order = np.argsort(-(c.matrix @ query))[:pool]
            vector = [int(i) for i in order if float(c.matrix[i] @ q.vector) >= floor]
            lists = [Ranked(vector), Ranked(text[:pool], weight)]
            if fts_prf_terms and text:
                lists.append(Ranked(expanded_text(c, q, text, fts_prf_terms)[:pool], 0.5))
            return [i for i, _ in fuse(lists, k=rrf_k, recency={}, limit=k)]

        return method

    return [
        ("RRF K 60, FTS weight 0.5, floor 0.5 (seed defaults)", hybrid(60, 0.5, floor=0.5)),
        ("RRF K 60, FTS weight 0.5, floor 0.2", hybrid(60, 0.5, floor=0.2)),
        ("RRF K 60, FTS weight 1.0, floor 0.2", hybrid(60, 1.0, floor=0.2)),
        ("RRF K 10, FTS weight 1.0, floor 0.2", hybrid(10, 1.0, floor=0.2)),
        ("RRF K 10, FTS weight 2.0, floor 0.2", hybrid(10, 2.0, floor=0.2)),
        (
            "K 10, w 1.0, floor 0.2 + lexical feedback 0.5 (shipped)",
            hybrid(10, 1.0, 0.5, floor=0.2),
        ),
        ("K 10, w 1.0, floor 0.2 + lexical feedback 1.0", hybrid(10, 1.0, 1.0, floor=0.2)),
        (
            "K 10, w 1.0, + feedback 0.5 + FTS pseudo-relevance terms (RM3-like)",
            hybrid(10, 1.0, 0.5, fts_prf_terms=10, floor=0.2),
        ),
    ]


def expanded_text(c: Corpus, q: Question, text: list[int], n: int) -> list[int]:
    """Query expansion: the n rarest-weighted new terms of the top 3 full-text hits."""
    frequency = Counter(t for terms in c.doc_terms for t in terms)
    scores: Counter[str] = Counter()
    for i in text[:3]:
        for term in c.doc_terms[i] - set(q.terms):
            if len(term) > 2:
                scores[term] += math.log(len(c.doc_terms) / frequency[term])
    expansion = [t for t, _ in scores.most_common(n)]
    return text_ranking(c, [*q.terms, *expansion], date=True, and_first=False, prefix=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    embedder = LocalEmbedder()
    conversations = load(args.data)
    porter = "porter unicode61 remove_diacritics 2"
    corpora = [build(conv, embedder, porter) for conv in conversations]
    header = "| variant | R@5 | R@10 | R@20 |\n|---|---|---|---|"
    print("Full-text arm alone\n\n" + header)
    stop = frozenset({"kind", "type", "many", "much", "likely", "might"})
    for name, method in fts_variants(corpora, stop):
        print(f"| {name} | {evaluate(corpora, method)} |")
    plain = [build(conv, embedder, "unicode61 remove_diacritics 2") for conv in conversations]
    date_only = fts_variants(plain, stop)[1][1]
    print(f"| + date, unicode61 without porter stemming | {evaluate(plain, date_only)} |")
    print("\nFusion (full text with dates, pool 2k per arm)\n\n" + header)
    for name, method in fusion_variants():
        print(f"| {name} | {evaluate(corpora, method)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
