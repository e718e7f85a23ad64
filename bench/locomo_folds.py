"""Leave-one-conversation-out selection for the LoCoMo benchmarks, and a vector cache.

Each of the development conversations is one fold: a configuration is chosen on the other
conversations (question-weighted R@10) and scored on the one left out, so a figure never comes
from the data it was chosen on. ``wins`` counts the folds where a lever beats its baseline on the
conversation left out; a lever is kept only with at least ``len(folds) - 1`` wins.

The vector cache keeps each conversation's turn and question vectors outside the repository
(``$XDG_CACHE_HOME/hivekeep-bench``, else ``~/.cache/hivekeep-bench``), keyed by the model and a
hash of the texts, so re-running an offline experiment does not re-embed anything.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hivekeep.providers.embeddings.local import LocalEmbedder

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hivekeep-bench"

# per configuration, per conversation: the R@10 of each of its questions
PerQuestion = Mapping[str, Sequence[Sequence[float]]]


def cached_vectors(
    model_id: str, texts: Sequence[str], embed: Callable[[Sequence[str]], Sequence[np.ndarray]]
) -> np.ndarray:
    digest = hashlib.sha256("\n".join([model_id, *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{digest}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    matrix = np.stack(list(embed(texts))).astype(np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


class CachedEmbedder:
    """The bundled model behind the vector cache: texts given to ``prepare`` are embedded once per
    machine (same model id, same vectors), any other text by the model itself. Lets a run through
    the public API skip re-embedding the benchmark's turns and questions."""

    def __init__(self, model: LocalEmbedder) -> None:
        self.model = model
        self.model_id = model.model_id
        self.dimension = model.dimension
        self.recall_defaults = model.recall_defaults
        self.known: dict[str, np.ndarray] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        vectors = cached_vectors(self.model_id, texts, self.model.embed)
        self.known.update(zip(texts, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self.known]
        fresh = dict(zip(missing, self.model.embed(missing), strict=True)) if missing else {}
        return [self.known[t] if t in self.known else fresh[t] for t in texts]


def mean(values: Sequence[Sequence[float]]) -> float:
    flat = [v for fold in values for v in fold]
    return statistics.fmean(flat) if flat else 0.0


@dataclass(frozen=True)
class Fold:
    held_out: int
    chosen: str
    train: float  # the chosen configuration on the other folds
    score: float  # the chosen configuration on the fold left out


def leave_one_out(results: PerQuestion, candidates: Sequence[str]) -> list[Fold]:
    """Per fold: the candidate with the best R@10 on the other folds, scored on the held-out one."""
    folds = len(next(iter(results.values())))
    out = []
    for held in range(folds):

        def train(name: str, held: int = held) -> float:
            return mean([r for i, r in enumerate(results[name]) if i != held])

        best = max(candidates, key=train)
        out.append(Fold(held, best, train(best), statistics.fmean(results[best][held])))
    return out


def per_fold(results: PerQuestion, name: str) -> list[float]:
    return [statistics.fmean(r) for r in results[name]]


def wins(results: PerQuestion, lever: str, baseline: str) -> int:
    return sum(
        a > b for a, b in zip(per_fold(results, lever), per_fold(results, baseline), strict=True)
    )


def fold_table(
    results: PerQuestion, names: Sequence[str], fold_names: Sequence[str], folds: list[Fold]
) -> list[str]:
    """Markdown: one row per fold, the fixed configurations and the leave-one-out choice."""
    header = ["fold (held out)", "questions", *names, "chosen on the other 4", "its R@10"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for fold in folds:
        cells = [
            fold_names[fold.held_out],
            str(len(results[names[0]][fold.held_out])),
            *(f"{statistics.fmean(results[n][fold.held_out]):.3f}" for n in names),
            fold.chosen,
            f"{fold.score:.3f}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    means = [f"{statistics.fmean(per_fold(results, n)):.3f}" for n in names]
    loo = statistics.fmean(f.score for f in folds)
    rows.append(f"| **mean of folds** | | {' | '.join(means)} | | **{loo:.3f}** |")
    return rows
