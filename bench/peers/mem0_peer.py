"""mem0 as a benchmark peer: its open-source ``Memory`` with ``infer=False``, fully offline.

Every text is stored verbatim (``add(..., infer=False)``: no LLM, no fact extraction), embedded
by the embedder we hand in (hivekeep's bundled MiniLM, so both systems see the same vectors), in
mem0's default vector store, Qdrant in local mode (``qdrant-client`` with a path) under the given
work directory. Search is mem0's own ``Memory.search``: dense search, plus its BM25 and
lemmatisation legs only where their models are already on this machine (they are downloaded from
a hub otherwise, which this adapter never lets mem0 try). See README.md beside this file for the
install line and each workaround.

    python -m bench.peers.mem0_peer            # self-check: LoCoMo conversation 0 + ingest timings
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.metadata
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

log = logging.getLogger(__name__)

PINNED = "mem0ai==2.2.1"
# Any OpenAI-compatible call mem0 might make by accident goes to the discard port on loopback and
# fails at once (connection refused) instead of leaving the machine.
DEAD_URL = "http://127.0.0.1:9"
DUMMY_KEY = "sk-offline-benchmark-dummy"
DEFAULT_THRESHOLD = 0.1  # mem0's own default for Memory.search


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Sequence[Any]: ...


class LLMCalledError(RuntimeError):
    """mem0 tried to use its LLM although every memory is added with ``infer=False``."""


def _version() -> str | None:
    try:
        return importlib.metadata.version("mem0ai")
    except importlib.metadata.PackageNotFoundError:
        return None


def _import_mem0() -> ModuleType:
    """Import ``mem0.memory.main`` with telemetry off; raise RuntimeError saying why it cannot."""
    version = _version()
    if version is None:
        raise RuntimeError(
            f"mem0ai is not installed (pip install {PINNED}; see bench/peers/README.md)"
        )
    major = version.split(".")[0]
    if not major.isdigit() or int(major) < 2:
        raise RuntimeError(
            f"mem0ai {version} is installed, but this adapter uses the 2.x API "
            f"(search(filters=..., top_k=...)); pip install {PINNED}"
        )
    # Read once, when mem0.memory.telemetry is imported: no PostHog client, no remote notice
    # config, no "first run" notices. MEM0_DIR is where mem0 writes config.json at import time.
    os.environ["MEM0_TELEMETRY"] = "False"
    if not os.environ.get("MEM0_DIR"):
        home = tempfile.mkdtemp(prefix="mem0-home-")
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        os.environ["MEM0_DIR"] = home
    try:
        main = importlib.import_module("mem0.memory.main")
        telemetry = importlib.import_module("mem0.memory.telemetry")
    except Exception as exc:  # an import error of one of mem0's dependencies, say
        raise RuntimeError(f"import mem0 failed: {type(exc).__name__}: {exc}") from exc
    if telemetry.MEM0_TELEMETRY:
        raise RuntimeError(
            "mem0 was imported with telemetry on before bench.peers.mem0_peer could turn it off; "
            "set MEM0_TELEMETRY=False in the environment"
        )
    return main


def available() -> str | None:
    """None when mem0 can run here; otherwise the reason why not, as text."""
    try:
        _import_mem0()
    except RuntimeError as exc:
        return str(exc)
    return None


def _spacy_missing() -> str | None:
    """Why mem0's spaCy model cannot be loaded offline, or None when it can."""
    try:
        spacy_util = importlib.import_module("spacy.util")
    except ImportError:
        return "spaCy is not installed (mem0ai[nlp])"
    if not spacy_util.is_package("en_core_web_sm"):
        return "spaCy model en_core_web_sm is not installed (it is not published on PyPI)"
    return None


_BM25: list[Any] = []  # [encoder or None, reason or None], filled once


def _bm25_encoder() -> tuple[Any, str | None]:
    """fastembed's ``Qdrant/bm25`` if it loads from local files alone, else (None, reason)."""
    if not _BM25:
        try:
            fastembed = importlib.import_module("fastembed")
        except ImportError:
            _BM25.extend([None, "fastembed is not installed (mem0ai[extras])"])
        else:
            try:
                encoder = fastembed.SparseTextEmbedding(
                    model_name="Qdrant/bm25", local_files_only=True
                )
                _BM25.extend([encoder, None])
            except Exception as exc:
                reason = f"fastembed model Qdrant/bm25 is not cached locally ({exc})"
                _BM25.extend([None, reason])
    return _BM25[0], _BM25[1]


def _as_floats(vector: Any) -> list[float]:
    if hasattr(vector, "tolist"):
        return list(vector.tolist())
    return [float(x) for x in vector]


@functools.cache
def _embedding_class() -> type:
    """A subclass of mem0's ``EmbeddingBase`` over any object with ``embed(list[str])``."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class BorrowedEmbedding(EmbeddingBase):  # type: ignore[misc]
        def __init__(self, embedder: Embedder, dimension: int) -> None:
            super().__init__(BaseEmbedderConfig(embedding_dims=dimension))
            self._embedder = embedder
            self.ready: dict[str, list[float]] = {}  # filled by add_many(pre_embed=True)

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            vector = self.ready.get(text)
            return vector if vector is not None else _as_floats(self._embedder.embed([text])[0])

        def embed_batch(
            self, texts: Sequence[str], memory_action: str = "add"
        ) -> list[list[float]]:
            return [_as_floats(v) for v in self._embedder.embed(list(texts))]

    return BorrowedEmbedding


class _NoLLM:
    """Stands in for mem0's LLM client: ``infer=False`` must never reach it."""

    def generate_response(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMCalledError("mem0 called its LLM although every add uses infer=False")


class Mem0Peer:
    """mem0's ``Memory`` (infer=False, local Qdrant under ``workdir``) behind a small interface.

    ``legs`` names the retrieval signals that are live: always ``"dense"``, plus ``"bm25"`` only
    when fastembed's Qdrant/bm25 model is already cached here. ``missing`` says why what is off is
    off: ``"bm25"``, and ``"spacy"`` (without en_core_web_sm, mem0's BM25 sees raw text instead of
    spaCy lemmas; its query entity boost is inert with infer=False either way).
    """

    name = f"mem0 {_version() or '(not installed)'}"

    def __init__(
        self,
        workdir: Path,
        embedder: Embedder,
        *,
        dimension: int | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        pre_embed: bool = False,
    ) -> None:
        """``pre_embed``: embed each ``add_many`` batch in one call before the adds, so that add
        latency is mem0's own storage cost (default: mem0 embeds text by text, as it does)."""
        main = _import_mem0()
        dimension = dimension or int(getattr(embedder, "dimension", 384))
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        self.threshold = threshold
        self.pre_embed = pre_embed
        self.missing: dict[str, str] = {}
        legs = ["dense"]

        spacy_reason = _spacy_missing()
        if spacy_reason:
            # Otherwise mem0 calls spacy.cli.download at the first add or search.
            spacy_models = importlib.import_module("mem0.utils.spacy_models")
            spacy_models._load_failed_full = True
            spacy_models._load_failed_lemma = True
            self.missing["spacy"] = spacy_reason

        dead_openai = {"api_key": DUMMY_KEY, "openai_base_url": DEAD_URL}
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "mem0",
                    "path": str(workdir / "qdrant"),
                    "embedding_model_dims": dimension,
                },
            },
            # mem0 only accepts its own embedder providers here; this OpenAI client is built but
            # replaced below before any use.
            "embedder": {
                "provider": "openai",
                "config": {**dead_openai, "embedding_dims": dimension},
            },
            "llm": {
                "provider": "openai",
                "config": {**dead_openai, "openrouter_base_url": DEAD_URL},
            },
            "history_db_path": str(workdir / "history.db"),
        }
        self._memory = main.Memory.from_config(config)
        self._embedding = _embedding_class()(embedder, dimension)
        self._memory.embedding_model = self._embedding
        self._memory.llm = _NoLLM()

        encoder, bm25_reason = _bm25_encoder()
        store = self._memory.vector_store
        if hasattr(store, "_bm25_encoder"):
            # mem0's Qdrant store loads Qdrant/bm25 itself on first use, from the hub when it is
            # not cached; hand it the local encoder, or its own "tried and failed" sentinel.
            store._bm25_encoder = encoder if encoder is not None else False
        if encoder is None:
            self.missing["bm25"] = bm25_reason or "unavailable"
        else:
            legs.append("bm25")
        self.legs = tuple(legs)
        self.name = f"mem0 {_version()} ({'+'.join(self.legs)})"
        log.info("%s ready in %s; legs off: %s", self.name, workdir, self.missing or "none")

    def add_many(
        self, texts: Sequence[str], user_id: str, metadatas: Sequence[dict[str, Any]]
    ) -> None:
        """Store each text verbatim as one memory of ``user_id`` with its metadata."""
        if len(texts) != len(metadatas):
            raise ValueError(f"{len(texts)} texts but {len(metadatas)} metadatas")
        if self.pre_embed:
            self._embedding.ready = dict(
                zip(texts, self._embedding.embed_batch(texts), strict=True)
            )
        try:
            for text, metadata in zip(texts, metadatas, strict=True):
                self._memory.add(text, user_id=user_id, metadata=dict(metadata), infer=False)
        finally:
            self._embedding.ready = {}

    def search(self, query: str, user_id: str, limit: int) -> list[dict[str, Any]]:
        """The metadatas of the best ``limit`` memories of ``user_id``, best first."""
        found = self._memory.search(
            query, filters={"user_id": user_id}, top_k=limit, threshold=self.threshold
        )
        return [dict(hit.get("metadata") or {}) for hit in found["results"]]

    def close(self) -> None:
        self._memory.close()
        client = getattr(self._memory.vector_store, "client", None)
        if client is not None:
            client.close()


def _self_check() -> None:  # pragma: no cover - a command, run by hand
    import argparse
    import random
    import statistics
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.locomo_data import load
    from hivekeep.providers.embeddings.local import LocalEmbedder

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    parser = argparse.ArgumentParser(description="mem0 peer self-check")
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--synthetic", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--pre-embed", action="store_true", help="batch-embed before the adds")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    reason = available()
    if reason:
        say(f"mem0 unavailable: {reason}")
        raise SystemExit(1)
    embedder = LocalEmbedder(threads=args.threads)
    embedder.embed(["warm up"])
    ms = 1000.0

    with tempfile.TemporaryDirectory(prefix="mem0-peer-") as tmp:
        conversation = load()[args.conversation]
        peer = Mem0Peer(Path(tmp) / "locomo", embedder, pre_embed=args.pre_embed)
        say(f"{peer.name}; legs off: {peer.missing or 'none'}")
        adds = []
        for turn in conversation.turns:
            start = time.perf_counter()
            peer.add_many([turn.text], conversation.sample_id, [{"dia_id": turn.dia_id}])
            adds.append(time.perf_counter() - start)
        searches, recalls = [], []
        for question in conversation.questions:
            start = time.perf_counter()
            hits = peer.search(question.text, conversation.sample_id, 10)
            searches.append(time.perf_counter() - start)
            top = {hit.get("dia_id") for hit in hits}
            recalls.append(len(top & question.evidence) / len(question.evidence))
        peer.close()
        say(
            f"LoCoMo {conversation.sample_id}: {len(conversation.turns)} turns, "
            f"{len(recalls)} questions, R@10 {statistics.fmean(recalls):.3f}; "
            f"median add {statistics.median(adds) * ms:.1f} ms, "
            f"median search {statistics.median(searches) * ms:.1f} ms"
        )

        rng = random.Random(0)
        names = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun"]
        verbs = ["likes", "visited", "bought", "painted", "lost", "fixed", "sold", "found"]
        things = [
            "a red bike",
            "the old piano",
            "a tiny cactus",
            "three books",
            "a blue kite",
            "the garden shed",
            "a used camera",
            "two tickets",
            "a wool scarf",
            "the map",
        ]
        places = [
            "in Lisbon",
            "at the market",
            "last week",
            "near the lake",
            "on Sunday",
            "with a friend",
            "after work",
            "in the spring",
        ]
        for count in args.synthetic:
            texts = [
                f"{rng.choice(names)} {rng.choice(verbs)} {rng.choice(things)} "
                f"{rng.choice(places)} (note {i})."
                for i in range(count)
            ]
            peer = Mem0Peer(Path(tmp) / f"synthetic-{count}", embedder, pre_embed=args.pre_embed)
            start = time.perf_counter()
            chunk_seconds = []
            for chunk in range(0, count, 500):
                batch = texts[chunk : chunk + 500]
                began = time.perf_counter()
                peer.add_many(batch, "u", [{"n": chunk + j} for j in range(len(batch))])
                chunk_seconds.append((time.perf_counter() - began) / len(batch))
            elapsed = time.perf_counter() - start
            searches = []
            for query in texts[:: max(1, count // 50)][:50]:
                start = time.perf_counter()
                peer.search(query, "u", 10)
                searches.append(time.perf_counter() - start)
            peer.close()
            say(
                f"synthetic {count}: add {elapsed:.1f} s ({elapsed / count * ms:.2f} ms each; "
                f"first chunk {chunk_seconds[0] * ms:.2f} ms, "
                f"last chunk {chunk_seconds[-1] * ms:.2f} ms each), "
                f"median search at {count} {statistics.median(searches) * ms:.1f} ms"
            )


if __name__ == "__main__":
    _self_check()
