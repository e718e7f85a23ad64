"""Built hives kept between experiment runs: a 20k (or any size) scale corpus, one or ten agents.

Building 20k memories costs 10-20 s; the experiments here time reads, so they share one build per
(size, agents) in a folder (``HIVEKEEP_EXPERIMENT_DIR``, default /tmp/hivekeep-experiments).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.scale import PreparedEmbedder, build
from bench.scale_data import Corpus, make_corpus

FOLDER = Path(os.environ.get("HIVEKEEP_EXPERIMENT_DIR", "/tmp/hivekeep-experiments"))


def corpus_and_embedder(size: int, queries: int = 200) -> tuple[Corpus, PreparedEmbedder]:
    corpus = make_corpus(size, queries)
    embedder = PreparedEmbedder()
    embedder.add(corpus.texts, corpus.vectors)
    embedder.add(corpus.queries, corpus.query_vectors)
    return corpus, embedder


def built_hive(size: int, agents: int, corpus: Corpus, embedder: PreparedEmbedder) -> Path:
    """The path of a SQLite hive holding the corpus, built on first use."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / f"scale-{size}-{agents}.db"
    done = path.with_suffix(".done")
    if not done.exists():
        for leftover in FOLDER.glob(path.name + "*"):
            leftover.unlink()
        build(path, corpus, embedder, agents)
        done.touch()
    return path
