"""Retrieval levers measured on LoCoMo outside the product path, by leave-one-conversation-out.

    python bench/experiments/locomo_levers.py [--data PATH] [--setup plain|subject|said]

Builds, per conversation, in-memory FTS5 indexes (content, subject, context, as the product's)
and MiniLM vectors of every turn (the same texts as bench/locomo_retrieval.py; vectors cached
outside the repo by bench/locomo_folds.py, so a re-run embeds nothing), then evaluates variants
of the full-text query and of the fusion offline. Set-ups: ``plain`` (no subject, the date as
``created_at`` only: issue 3's set-up), ``subject`` (subject = speaker on every turn), ``said``
(subject = speaker and ``source_context`` "said on 8 May 2023"). Every figure is per fold (one
conversation) and the mean of folds; each lever is compared with its baseline on every fold, and
a joint grid is chosen on four conversations and scored on the fifth.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import product
from pathlib import Path

import apsw
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.locomo_data import DEFAULT_PATH, Conversation, load
from bench.locomo_folds import cached_vectors, fold_table, leave_one_out, per_fold, wins
from hivekeep.core import fts_query
from hivekeep.core.fusion import Ranked, fuse
from hivekeep.core.subjects import named_subjects
from hivekeep.core.time_words import asks_when, mentions_time
from hivekeep.providers.embeddings.local import LocalEmbedder

KS = (5, 10, 20)
DEPTH = 100
FEEDBACK_DOCS = 3


def spoken_date(when: datetime) -> str:
    return f"{when.day} {when.strftime('%B')} {when.year}"


@dataclass
class Question:
    evidence: frozenset[str]
    terms: tuple[str, ...]
    vector: np.ndarray
    named: set[str]
    category: int
    asks_when: bool


@dataclass
class Corpus:
    name: str
    ids: list[str]
    subjects: list[str | None]
    matrix: np.ndarray
    fts: dict[str, apsw.Connection]
    questions: list[Question]
    timed: list[bool]  # per turn: whether its text states a time
    cache: dict[tuple[object, ...], list[int]] = field(default_factory=dict)


def index(rows: Sequence[tuple[int, str, str, str]], tokenizer: str) -> apsw.Connection:
    fts = apsw.Connection(":memory:")
    fts.execute(
        f"CREATE VIRTUAL TABLE f USING fts5(content, subject, context, tokenize='{tokenizer}')"
    )
    fts.executemany("INSERT INTO f(rowid, content, subject, context) VALUES (?, ?, ?, ?)", rows)
    return fts


def build(conv: Conversation, embedder: LocalEmbedder, setup: str) -> Corpus:
    porter = "porter unicode61 remove_diacritics 2"
    with_subject = setup != "plain"
    rows = []
    for i, t in enumerate(conv.turns):
        context = spoken_date(t.when)
        if setup == "said":
            context = f"said on {context} {context}"
        rows.append((i, t.text, t.speaker if with_subject else "", context))
    fts = {"porter": index(rows, porter), "unicode61": index(rows, "unicode61 remove_diacritics 2")}
    matrix = cached_vectors(embedder.model_id, [t.text for t in conv.turns], embedder.embed)
    vectors = cached_vectors(embedder.model_id, [q.text for q in conv.questions], embedder.embed)
    subjects: list[str | None] = [t.speaker if with_subject else None for t in conv.turns]
    visible = {s for s in subjects if s}
    questions = [
        Question(
            q.evidence,
            fts_query.terms(q.text),
            v,
            named_subjects(q.text, visible),
            q.category,
            asks_when(q.text),
        )
        for q, v in zip(conv.questions, vectors, strict=True)
    ]
    timed = [mentions_time(t.text) for t in conv.turns]
    return Corpus(
        conv.sample_id, [t.dia_id for t in conv.turns], subjects, matrix, fts, questions, timed
    )


def text_ranking(
    corpus: Corpus,
    terms: Sequence[str],
    *,
    date: bool = True,
    and_first: bool = True,
    prefix: bool = True,
    tokenizer: str = "porter",
) -> list[int]:
    key = (tuple(terms), date, and_first, prefix, tokenizer)
    if key in corpus.cache:
        return corpus.cache[key]
    quoted = [f'"{t}"{"*" if prefix else ""}' for t in terms]
    fts = corpus.fts[tokenizer]
    scope = "" if date else "{content subject} : "
    found: list[int] = []
    if quoted and and_first and len(quoted) > 1:
        sql = "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?"
        found = [r[0] for r in fts.execute(sql, (scope + "(" + " AND ".join(quoted) + ")", DEPTH))]
    if quoted:
        seen = set(found)
        for (rowid,) in fts.execute(
            "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?",
            (scope + "(" + " OR ".join(quoted) + ")", DEPTH),
        ):
            if rowid not in seen:
                found.append(rowid)
    corpus.cache[key] = found
    return found


@dataclass(frozen=True)
class Hybrid:
    """One fusion configuration (the product's knobs, plus the subject lever's variants)."""

    floor: float = 0.2
    rrf_k: int = 10
    weight: float = 1.0
    feedback: float = 0.5
    subject: float = 0.0  # weight of the subject list (0: off)
    subject_mode: str = "bonus"  # "bonus": the candidates about a named subject, in fused order;
    # "knn": a third vector search over the memories of the named subjects only
    date: bool = True
    time: float = 0.0  # weight of the time list for questions asking when (0: off)

    def label(self) -> str:
        out = f"floor {self.floor} K {self.rrf_k} w {self.weight} fb {self.feedback}"
        if self.subject:
            out += f" subj {self.subject}" + ("" if self.subject_mode == "bonus" else " knn")
        if self.time:
            out += f" time {self.time}"
        return out + ("" if self.date else " no dates")

    def arms(self, c: Corpus, q: Question, pool: int) -> tuple[list[int], list[int], np.ndarray]:
        """The vector arm (feedback and floor applied), the full-text arm, the vector scores."""
        text = text_ranking(c, q.terms, date=self.date)[:pool]
        query = q.vector
        if self.feedback and text:
            query = query + self.feedback * c.matrix[text[:FEEDBACK_DOCS]].mean(axis=0)
            query = query / np.linalg.norm(query)
        scores = c.matrix @ query
        order = np.argsort(-scores)[:pool]
        vector = [int(i) for i in order if float(c.matrix[i] @ q.vector) >= self.floor]
        return vector, text, scores

    def rank(self, c: Corpus, q: Question, k: int) -> list[int]:
        pool = 2 * k
        vector, text, scores = self.arms(c, q, pool)
        lists = [Ranked(vector), Ranked(text, self.weight)]
        first = [i for i, _ in fuse(lists, k=self.rrf_k, recency={})]
        if self.subject and q.named:
            if self.subject_mode == "knn":
                mine = [i for i in np.argsort(-scores) if c.subjects[i] in q.named][:pool]
                mine = [i for i in mine if float(c.matrix[i] @ q.vector) >= self.floor]
                lists.append(Ranked([int(i) for i in mine], self.subject))
            else:
                lists.append(Ranked([i for i in first if c.subjects[i] in q.named], self.subject))
        if self.time and q.asks_when:
            lists.append(Ranked([i for i in first if c.timed[i]], self.time))
        return [i for i, _ in fuse(lists, k=self.rrf_k, recency={}, limit=k)]


Method = Callable[[Corpus, Question, int], list[int]]


def recall(corpora: list[Corpus], method: Method, k: int) -> list[list[float]]:
    return [
        [
            len({c.ids[i] for i in method(c, q, k)[:k]} & q.evidence) / len(q.evidence)
            for q in c.questions
        ]
        for c in corpora
    ]


def row(corpora: list[Corpus], name: str, method: Method) -> tuple[str, list[list[float]]]:
    """A markdown row: R@5, R@10, R@20 over all questions, then R@10 per fold."""
    by_k = {k: recall(corpora, method, k) for k in KS}
    overall = [statistics.fmean(v for fold in by_k[k] for v in fold) for k in KS]
    folds = [statistics.fmean(f) for f in by_k[10]]
    cells = [f"{v:.3f}" for v in overall] + [f"{v:.3f}" for v in folds]
    return f"| {name} | " + " | ".join(cells) + " |", by_k[10]


def fts_variants() -> list[tuple[str, Method]]:
    def variant(**kw: object) -> Method:
        return lambda c, q, k: text_ranking(c, q.terms, **kw)[:k]  # type: ignore[arg-type]

    return [
        ("full text, content and subject only (AND then OR, prefix, porter)", variant(date=False)),
        ("+ context indexed (dates as words) - shipped", variant()),
        ("+ context, OR only (no AND first)", variant(and_first=False)),
        ("+ context, exact terms (no prefix)", variant(prefix=False)),
        ("+ context, unicode61 without porter", variant(tokenizer="unicode61")),
    ]


SHIPPED = Hybrid()  # issue 3's defaults
CANDIDATE = Hybrid(subject=0.5)  # this shipped defaults: subject-aware
LEVERS: list[tuple[str, Hybrid, Hybrid]] = [
    # (lever, with it, baseline without it); everything else at the values of the first column
    ("issue 3: floor 0.2 (vs none)", SHIPPED, Hybrid(floor=-1.0)),
    ("issue 3: floor 0.2 (vs seed 0.5)", SHIPPED, Hybrid(floor=0.5)),
    ("issue 3: K 10 (vs seed 60)", SHIPPED, Hybrid(rrf_k=60)),
    ("issue 3: FTS weight 1.0 (vs seed 0.5)", SHIPPED, Hybrid(weight=0.5)),
    ("issue 3: lexical feedback 0.5 (vs off)", SHIPPED, Hybrid(feedback=0.0)),
    ("issue 3: dates in the index (vs none)", SHIPPED, Hybrid(date=False)),
    (
        "subject third list, KNN over named subjects, 0.5 (vs off)",
        Hybrid(subject=0.5, subject_mode="knn"),
        SHIPPED,
    ),
    ("subject third list, named candidates, 0.5 (vs off)", Hybrid(subject=0.5), SHIPPED),
    ("subject third list, named candidates, 1.0 (vs off)", Hybrid(subject=1.0), SHIPPED),
    ("new: floor 0.2 (vs none)", CANDIDATE, Hybrid(floor=-1.0, subject=0.5)),
    ("new: floor 0.2 (vs 0.1)", CANDIDATE, Hybrid(floor=0.1, subject=0.5)),
    ("new: K 10 (vs seed 60)", CANDIDATE, Hybrid(rrf_k=60, subject=0.5)),
    ("new: K 10 (vs 30)", CANDIDATE, Hybrid(rrf_k=30, subject=0.5)),
    (
        "new: K 10 (vs 60) at FTS weight 0.9",
        Hybrid(weight=0.9, subject=0.5),
        Hybrid(rrf_k=60, weight=0.9, subject=0.5),
    ),
    (
        "new: K 10 (vs 60) at FTS weight 1.1",
        Hybrid(weight=1.1, subject=0.5),
        Hybrid(rrf_k=60, weight=1.1, subject=0.5),
    ),
    ("new: FTS weight 1.0 (vs 1.5)", CANDIDATE, Hybrid(weight=1.5, subject=0.5)),
    ("new: FTS weight 1.0 (vs seed 0.5)", CANDIDATE, Hybrid(weight=0.5, subject=0.5)),
    ("new: lexical feedback 0.5 (vs off)", CANDIDATE, Hybrid(feedback=0.0, subject=0.5)),
    ("new: dates in the index (vs none)", CANDIDATE, Hybrid(date=False, subject=0.5)),
    ("new: subject list 0.5 (vs off)", CANDIDATE, SHIPPED),
    ("new: subject list 0.5 (vs 1.0)", CANDIDATE, Hybrid(subject=1.0)),
]


def grid() -> list[Hybrid]:
    return [
        Hybrid(floor, rrf_k, weight, feedback, subject)
        for floor, rrf_k, weight, feedback, subject in product(
            (-1.0, 0.1, 0.2), (10, 30, 60), (0.7, 1.0, 1.5), (0.0, 0.5), (0.0, 0.5, 1.0)
        )
    ]


def corpora_from(
    argv: Sequence[str] | None, description: str
) -> tuple[argparse.Namespace, list[Conversation], list[Corpus]]:
    """The command line every LoCoMo experiment takes (``--data``, ``--setup``): the arguments,
    the conversations, and each one's corpus built with the bundled model."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--setup", choices=["plain", "subject", "said"], default="subject")
    args = parser.parse_args(argv)
    embedder = LocalEmbedder()
    conversations = load(args.data)
    return args, conversations, [build(conv, embedder, args.setup) for conv in conversations]


def main(argv: Sequence[str] | None = None) -> int:
    args, _, corpora = corpora_from(argv, __doc__.split("\n\n")[0])
    names = [c.name for c in corpora]
    fold_cols = " | ".join(f"R@10 {n}" for n in names)
    header = f"| variant | R@5 | R@10 | R@20 | {fold_cols} |\n|" + "---|" * (4 + len(names))
    questions = sum(len(c.questions) for c in corpora)
    print(f"LoCoMo {args.data.name}, set-up {args.setup!r}: {questions} questions\n")

    print("Full-text arm alone\n\n" + header)
    for name, method in fts_variants():
        print(row(corpora, name, method)[0])

    print("\nLevers, each against its baseline (pool 2k per arm)\n\n" + header)
    results: dict[str, list[list[float]]] = {}
    lines: dict[str, str] = {}
    for config in {h for _, a, b in LEVERS for h in (a, b)}:
        lines[config.label()], results[config.label()] = row(corpora, config.label(), config.rank)
    for label in sorted(lines):
        print(lines[label])
    print("\n| lever | folds where it helps | mean gain of R@10 |\n|---|---|---|")
    for lever, on, off in LEVERS:
        gain = statistics.fmean(
            a - b
            for a, b in zip(
                per_fold(results, on.label()), per_fold(results, off.label()), strict=True
            )
        )
        print(
            f"| {lever} | {wins(results, on.label(), off.label())} of {len(names)} | {gain:+.3f} |"
        )

    print("\nJoint grid, chosen on four conversations, scored on the fifth (R@10)\n")
    configs = grid()
    for config in configs:
        if config.label() not in results:
            results[config.label()] = recall(corpora, config.rank, 10)
    folds = leave_one_out(results, [c.label() for c in configs])
    vector_only = Hybrid(floor=-1.0, feedback=0.0, weight=0.0)
    results["vector only"] = recall(corpora, vector_only.rank, 10)
    results["full text only"] = recall(corpora, lambda c, q, k: text_ranking(c, q.terms)[:k], 10)
    fixed = ["vector only", "full text only", SHIPPED.label(), CANDIDATE.label()]
    print("\n".join(fold_table(results, fixed, names, folds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
