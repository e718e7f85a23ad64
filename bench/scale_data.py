"""Synthetic memories for ``bench/scale.py``: sentences with a long-tailed vocabulary, and
clustered unit vectors whose cosine statistics resemble MiniLM's.

Text: each memory is a templated sentence of 10-30 words (a person, a verb, an object, a place, a
time, then a tail of words). Words come from a small lexicon of real words plus ~20,000 made-up
words drawn with Zipf-like frequencies, and each of the ``TOPICS`` topics has its own words, so
full text sees realistic posting lists: a few very common terms, a long tail of rare ones.

Vectors: ``v = a*g + b*c_topic + n`` (normalised): ``g`` one direction shared by all,
``c_topic`` the memory's topic centroid, ``n`` isotropic noise. The weights give a cosine of
about 0.08 between unrelated memories and 0.5 within a topic (MiniLM: about 0.05-0.15 and
0.4-0.6), so no two memories come near the 0.9 dedup threshold by accident. A query is its target
memory's vector plus noise (cosine about 0.65 to the target, like a question to its evidence).
Computing 100k real MiniLM embeddings would take 15+ minutes on 2 cores; the real model is
measured separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DIMENSION = 384
TOPICS = 256
SHARED, CENTROID, NOISE = 0.08, 0.42, 0.50  # squared weights of g, c_topic and noise
# Vectors are made this many rows at a time: drawn whole in float64, 1M rows held 9 GB at once
# (at 100k, 0.9 GB: most of the benchmark's peak RSS, which was read as the hive's).
ROWS_AT_ONCE = 16_384
QUERY_NOISE = 1.17  # |noise| / |target| for queries: cosine to the target ~ 1/sqrt(1 + 1.17^2)

NAMES = [
    "Alice",
    "Bob",
    "Chen",
    "Dana",
    "Emeka",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Marco",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Xavi",
    "Yara",
    "Zoe",
    "Ana",
    "Ben",
    "Carla",
    "Dev",
    "Elif",
    "Femi",
    "Gus",
    "Iris",
    "Jon",
    "Kai",
    "Lior",
    "Mia",
    "Nils",
    "Olga",
]
VERBS = [
    "bought",
    "sold",
    "visited",
    "painted",
    "fixed",
    "found",
    "lost",
    "borrowed",
    "planned",
    "cancelled",
    "booked",
    "cooked",
    "recommended",
    "reviewed",
    "repaired",
    "photographed",
    "ordered",
    "returned",
    "shared",
    "discussed",
    "finished",
    "started",
    "organised",
    "moved",
    "cleaned",
    "designed",
    "tested",
    "measured",
    "described",
    "translated",
]
PLACES = [
    "in Lisbon",
    "at the market",
    "near the lake",
    "at the office",
    "in the garden",
    "at the station",
    "in Berlin",
    "at the gym",
    "in the library",
    "at home",
    "in Kyoto",
    "at the clinic",
    "on the boat",
    "in the studio",
    "at school",
    "in Nairobi",
    "at the cafe",
    "in the park",
    "at the airport",
    "in Toronto",
]
TIMES = [
    "last week",
    "on Sunday",
    "after work",
    "in the spring",
    "yesterday",
    "in March",
    "before the trip",
    "during the holidays",
    "this morning",
    "in 2023",
    "on Friday night",
    "two days ago",
    "in the autumn",
]
COMMON = [
    "the",
    "a",
    "with",
    "and",
    "for",
    "because",
    "then",
    "later",
    "about",
    "again",
    "really",
    "new",
    "old",
    "small",
    "big",
    "red",
    "blue",
    "green",
    "friend",
    "family",
    "team",
    "project",
    "plan",
    "idea",
    "note",
    "price",
    "book",
    "car",
    "bike",
    "house",
    "dog",
    "cat",
    "garden",
    "kitchen",
    "phone",
    "laptop",
    "camera",
    "ticket",
    "meeting",
    "dinner",
    "lunch",
    "coffee",
    "tea",
    "music",
    "film",
]
CATEGORIES = ("fact", "preference", "decision", "knowledge")


def _made_up_words(rng: np.random.Generator, count: int) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["th", "sh", "qu"]
    words: set[str] = set()
    while len(words) < count:
        parts = rng.choice(len(syllables), size=int(rng.integers(2, 5)))
        words.add("".join(syllables[p] for p in parts))
    return sorted(words)


@dataclass
class Corpus:
    texts: list[str]
    vectors: npt.NDArray[np.float32]  # (n, DIMENSION), unit rows
    subjects: list[str]
    categories: list[str]
    dates: list[str]  # ISO dates spread over two years
    queries: list[str]
    query_vectors: npt.NDArray[np.float32]

    def items(self, rows: Sequence[int]) -> list[dict[str, str]]:
        """``memorize_many`` items for these rows."""
        return [
            {
                "content": self.texts[i],
                "category": self.categories[i],
                "subject": self.subjects[i],
                "created_at": self.dates[i],
            }
            for i in rows
        ]


def _unit(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def make_corpus(size: int, queries: int, seed: int = 0) -> Corpus:
    """``size`` memories and ``queries`` queries, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    vocabulary = COMMON + _made_up_words(rng, 20_000)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.07
    weights /= weights.sum()
    topic_words = np.asarray(vocabulary[len(COMMON) :]).reshape(-1, 25)[:TOPICS]
    topics = rng.integers(0, TOPICS, size)
    lengths = rng.integers(10, 31, size)
    tail = rng.choice(len(vocabulary), size=(size, 30), p=weights)
    texts, subjects = [], []
    for i in range(size):
        name = NAMES[int(rng.integers(len(NAMES)))]
        own = topic_words[topics[i]][rng.integers(0, 25, 3)]
        head = [
            name,
            VERBS[int(rng.integers(len(VERBS)))],
            own[0],
            PLACES[int(rng.integers(len(PLACES)))],
            TIMES[int(rng.integers(len(TIMES)))],
            "with",
            own[1],
            own[2],
        ]
        words = " ".join(head).split()
        words += [vocabulary[w] for w in tail[i][: max(0, int(lengths[i]) - len(words))]]
        texts.append(" ".join(words).capitalize() + f" (#{i}).")
        subjects.append(name)
    shared = rng.standard_normal(DIMENSION)
    centroids = _unit(rng.standard_normal((TOPICS, DIMENSION)))
    vectors = np.empty((size, DIMENSION), dtype=np.float32)
    for start in range(0, size, ROWS_AT_ONCE):  # the same draws as one (size, 384) array
        rows = slice(start, min(size, start + ROWS_AT_ONCE))
        noise = _unit(rng.standard_normal((rows.stop - start, DIMENSION)))
        vectors[rows] = _unit(
            np.sqrt(SHARED) * _unit(shared)
            + np.sqrt(CENTROID) * centroids[topics[rows]]
            + np.sqrt(NOISE) * noise
        )
    targets = rng.integers(0, size, queries)
    query_texts = ["What did {} {} with the {}?".format(*texts[t].split()[:3]) for t in targets]
    query_noise = _unit(rng.standard_normal((queries, DIMENSION)))
    query_vectors = _unit(vectors[targets] + QUERY_NOISE * query_noise)
    days = rng.integers(0, 730, size)
    dates = [str(np.datetime64("2023-01-01") + np.timedelta64(int(d), "D")) for d in days]
    categories = [CATEGORIES[c] for c in rng.integers(0, len(CATEGORIES), size)]
    return Corpus(texts, vectors, subjects, categories, dates, query_texts, query_vectors)


# Words of the frequent-word queries: non-stopwords in 5-12 % of memories (the head of the Zipf
# vocabulary, the time and place words), so an OR of four of them matches about a third of a hive.
FREQUENT = ["later", "really", "new", "old", "small", "big", "red", "blue", "green", "friend"]
FREQUENT += ["days", "spring", "autumn", "work", "trip", "week", "sunday", "morning", "garden"]


def frequent_queries(count: int, seed: int = 3) -> list[str]:
    """Questions made only of frequent words (``FREQUENT``), for the full-text arm's worst case."""
    rng = np.random.default_rng(seed)
    return [
        "What about the {} {} {} {}?".format(*rng.choice(FREQUENT, 4, replace=False))
        for _ in range(count)
    ]


def cosine_statistics(vectors: npt.NDArray[np.float32], sample: int = 2000) -> dict[str, float]:
    """Mean cosine of random pairs and the mean nearest-neighbour cosine, on a sample."""
    rng = np.random.default_rng(1)
    rows = vectors[rng.choice(len(vectors), min(sample, len(vectors)), replace=False)]
    cosines = rows @ rows.T
    np.fill_diagonal(cosines, -1.0)
    upper = cosines[np.triu_indices(len(rows), 1)]
    return {
        "random_pair_mean": float(upper.mean()),
        "nearest_neighbour_mean": float(cosines.max(axis=1).mean()),
        "max": float(upper.max()),
    }


def plain_sentences(count: int, seed: int = 7) -> list[str]:
    """Sentences of 10-30 real words (for the real model: made-up words tokenise into pieces)."""
    rng = np.random.default_rng(seed)
    sentences = []
    for i in range(count):
        words = [
            NAMES[int(rng.integers(len(NAMES)))],
            VERBS[int(rng.integers(len(VERBS)))],
            "the",
            COMMON[int(rng.integers(11, len(COMMON)))],
            PLACES[int(rng.integers(len(PLACES)))],
            TIMES[int(rng.integers(len(TIMES)))],
        ]
        words = " ".join(words).split()
        length = int(rng.integers(10, 31))
        words += [COMMON[int(w)] for w in rng.integers(0, len(COMMON), max(0, length - len(words)))]
        sentences.append(" ".join(words) + f", note {i}.")
    return sentences
