"""Every setting in one place: name, type, default, help. Read from the environment, validated.

A search setting left unset falls back to the embedder's calibrated default (``recall_defaults``),
then to the seed's default; an explicit environment variable or argument always wins.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from hivekeep.core.compaction import CompactionSettings
from hivekeep.errors import ValidationError
from hivekeep.providers.base import RecallDefaults


@dataclass(frozen=True)
class Setting:
    env: str
    field: str
    parse: Callable[[str], Any]
    default: Any
    help: str


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("must be a positive integer")
    return number


def _unit_float(value: str) -> float:
    number = float(value)
    if not -1.0 <= number <= 1.0:
        raise ValueError("must be between -1 and 1")
    return number


def _percent(value: str) -> float:
    number = float(value)
    if not 0 < number < 100:
        raise ValueError("must be a percentage strictly between 0 and 100")
    return number


def _spec(value: str) -> str:
    if ":" not in value:
        raise ValueError("must be provider:model, e.g. 'openai:gpt-4o-mini' or 'ollama:llama3.1'")
    return value


def _non_negative_float(value: str) -> float:
    number = float(value)
    if number < 0:
        raise ValueError("must be >= 0")
    return number


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "HIVEKEEP_DB",
        "db",
        str,
        "./hivekeep.db",
        "Path of the hive's SQLite file, or a postgresql:// URL.",
    ),
    Setting(
        "HIVEKEEP_EMBEDDINGS",
        "embeddings",
        str,
        "local",
        "Embedding model: 'local' (bundled, offline) or provider:model, e.g. "
        "'openai:text-embedding-3-small', 'voyage:voyage-3', 'jina:jina-embeddings-v3', "
        "'ollama:nomic-embed-text'.",
    ),
    Setting(
        "MEMORY_SIMILARITY_THRESHOLD",
        "similarity_floor",
        _unit_float,
        None,
        "Cosine similarity below which vector hits are dropped (a spam filter). Default: the "
        "embedder's calibrated floor, else 0.5.",
    ),
    Setting(
        "MEMORY_RRF_K",
        "rrf_k",
        _positive_int,
        None,
        "RRF smoothing constant K. Default: the embedder's calibrated K, else 60.",
    ),
    Setting(
        "MEMORY_FTS_BOOST",
        "fts_weight",
        _non_negative_float,
        None,
        "Weight of the full-text arm in fusion; the vector arm weighs 1. Default: the "
        "embedder's calibrated weight, else 0.5.",
    ),
    Setting(
        "MEMORY_FEEDBACK_WEIGHT",
        "feedback_weight",
        _non_negative_float,
        None,
        "How far the vector query moves toward the top full-text hits before the vector search "
        "(0 turns it off). Default: the embedder's calibrated weight, else 0.",
    ),
    Setting(
        "MEMORY_DEDUP_THRESHOLD",
        "dedup_threshold",
        _unit_float,
        0.90,
        "Cosine similarity at or above which a new memory counts as a duplicate.",
    ),
    Setting(
        "MEMORY_MAX_RELEVANT",
        "recall_limit",
        _positive_int,
        10,
        "Default number of results of recall (a call may ask for 1-50).",
    ),
    Setting(
        "MEMORY_PROFILE_MAX_TOKENS",
        "profile_max_tokens",
        _positive_int,
        1500,
        "Token budget of each agent's profile.",
    ),
    Setting(
        "HIVEKEEP_LLM",
        "llm",
        _spec,
        None,
        "The agents' chat model as provider:model, e.g. 'openai:gpt-4o-mini' (with "
        "OPENAI_API_KEY), 'anthropic:claude-haiku-4-5' (with ANTHROPIC_API_KEY), "
        "'ollama:llama3.1'. Needed by chat, compaction, regenerate and review_memories.",
    ),
    Setting(
        "MEMORY_EXTRACTION_MODEL",
        "extraction_model",
        _spec,
        None,
        "Model of the maintenance call (archive extraction + profile rewrite) and of bootstrap "
        "and regenerate. Default: the agent's own model.",
    ),
    Setting(
        "COMPACTING_MODEL",
        "compacting_model",
        _spec,
        None,
        "Model that writes and merges summaries. Default: the agent's own model.",
    ),
    Setting(
        "COMPACTING_THRESHOLD_PERCENT",
        "compacting_threshold_percent",
        _percent,
        75.0,
        "Compact when the context fills more than this share of the model's window.",
    ),
    Setting(
        "COMPACTING_KEEP_PERCENT",
        "compacting_keep_percent",
        _percent,
        40.0,
        "The newest messages fitting in this share of the window stay raw after compaction.",
    ),
    Setting(
        "COMPACTING_MAX_SUMMARIES",
        "compacting_max_summaries",
        _positive_int,
        10,
        "Above this many summaries in context, the oldest half merges into one [compressed].",
    ),
    Setting(
        "COMPACTING_SUMMARY_BUDGET_PERCENT",
        "compacting_summary_budget_percent",
        _percent,
        20.0,
        "Summaries filling more than this share of the window also trigger the merge.",
    ),
)

SEED_RECALL = RecallDefaults(similarity_floor=0.5, rrf_k=60, fts_weight=0.5, feedback_weight=0.0)


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one hive. Build with ``Settings.from_env()`` or directly."""

    db: str = "./hivekeep.db"
    embeddings: str = "local"
    similarity_floor: float | None = None
    rrf_k: int | None = None
    fts_weight: float | None = None
    feedback_weight: float | None = None
    dedup_threshold: float = 0.90
    recall_limit: int = 10
    profile_max_tokens: int = 1500
    llm: str | None = None
    extraction_model: str | None = None
    compacting_model: str | None = None
    compacting_threshold_percent: float = 75.0
    compacting_keep_percent: float = 40.0
    compacting_max_summaries: int = 10
    compacting_summary_budget_percent: float = 20.0

    def __post_init__(self) -> None:
        self.compaction()  # the compaction numbers must agree with each other

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read every setting from ``env`` (default: ``os.environ``); bad values are errors."""
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = source.get(setting.env)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[setting.field] = setting.parse(raw.strip())
            except ValueError as exc:
                raise ValidationError(
                    f"Setting {setting.env} has value {raw!r}, which is not valid ({exc}). "
                    f"{setting.help}"
                ) from None
        return cls(**values)

    def with_overrides(self, **changes: Any) -> Settings:
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValidationError(f"Unknown settings {sorted(unknown)}; known: {sorted(known)}.")
        return replace(self, **changes)

    def compaction(self) -> CompactionSettings:
        """The hive-wide compaction numbers (each agent may override any of them)."""
        return CompactionSettings(
            threshold_percent=self.compacting_threshold_percent,
            keep_percent=self.compacting_keep_percent,
            max_summaries=self.compacting_max_summaries,
            summary_budget_percent=self.compacting_summary_budget_percent,
        )

    def recall_defaults(self, embedder_defaults: RecallDefaults | None) -> RecallDefaults:
        """Explicit setting, else the embedder's calibrated value, else the seed's default."""
        calibrated = embedder_defaults or RecallDefaults()

        def pick(name: str) -> Any:
            for candidate in (getattr(self, name), getattr(calibrated, name)):
                if candidate is not None:
                    return candidate
            return getattr(SEED_RECALL, name)

        return RecallDefaults(
            pick("similarity_floor"), pick("rrf_k"), pick("fts_weight"), pick("feedback_weight")
        )
