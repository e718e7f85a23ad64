"""Every setting in one place: name, type, default, help. Read from the environment, validated.

A search setting left unset falls back to the embedder's calibrated default (``recall_defaults``),
then to the seed's default; an explicit environment variable or argument always wins.
"""

from __future__ import annotations

import os
import re
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
    parse: Callable[[Any], Any]  # the text of an environment variable (or a tuple: lists)
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


_HOST_NAME = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$")


def _host_list(value: str | tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated host names, each ``name`` or ``name:port`` (no scheme, no path)."""
    items = value.split(",") if isinstance(value, str) else value
    hosts = tuple(item.strip().lower() for item in items if item.strip())
    for host in hosts:
        if not _HOST_NAME.match(host):
            raise ValueError(
                f"{host!r} is not a host name such as 'memory.example.com' or "
                "'memory.example.com:8765' (no scheme, no path)"
            )
    return hosts


def _synchronous(value: str) -> str:
    mode = value.strip().upper()
    if mode not in ("NORMAL", "FULL"):
        raise ValueError("must be NORMAL or FULL")
    return mode


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
        "MEMORY_SUBJECT_WEIGHT",
        "subject_weight",
        _non_negative_float,
        None,
        "Subject-aware recall: weight of a third fused list, the candidates whose subject the "
        "query names (0 turns it off). Default: the embedder's calibrated weight, else 0.",
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
        "MEMORY_HISTORY_LIMIT",
        "history_limit",
        _positive_int,
        50,
        "Versions kept per memory and per profile; the oldest go first.",
    ),
    Setting(
        "MEMORY_TRASH_DAYS",
        "trash_days",
        _positive_int,
        30,
        "Days a forgotten memory stays in the trash, restorable, before it is purged.",
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
    Setting(
        "HIVEKEEP_SQLITE_SYNCHRONOUS",
        "sqlite_synchronous",
        _synchronous,
        "NORMAL",
        "SQLite's durability: NORMAL (an acknowledged write survives a process crash, the last "
        "ones may be lost on a power loss) or FULL (survives a power loss; each commit syncs).",
    ),
    Setting(
        "HIVEKEEP_ALLOWED_HOSTS",
        "allowed_hosts",
        _host_list,
        (),
        "Comma-separated public names (host or host:port) that `hivekeep serve` answers to, "
        "besides 127.0.0.1, localhost, [::1] and --host; needs HIVEKEEP_API_TOKEN.",
    ),
)

SEED_RECALL = RecallDefaults(
    similarity_floor=0.5, rrf_k=60, fts_weight=0.5, feedback_weight=0.0, subject_weight=0.0
)


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one hive. Build with ``Settings.from_env()`` or directly."""

    db: str = "./hivekeep.db"
    embeddings: str = "local"
    similarity_floor: float | None = None
    rrf_k: int | None = None
    fts_weight: float | None = None
    feedback_weight: float | None = None
    subject_weight: float | None = None
    dedup_threshold: float = 0.90
    recall_limit: int = 10
    profile_max_tokens: int = 1500
    history_limit: int = 50
    trash_days: int = 30
    llm: str | None = None
    extraction_model: str | None = None
    compacting_model: str | None = None
    compacting_threshold_percent: float = 75.0
    compacting_keep_percent: float = 40.0
    compacting_max_summaries: int = 10
    compacting_summary_budget_percent: float = 20.0
    sqlite_synchronous: str = "NORMAL"
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for setting in SETTINGS:  # built in Python or from the environment: the same rules
            self._check(setting)
        self.compaction()  # the compaction numbers must agree with each other

    def _check(self, setting: Setting) -> None:
        """``setting``'s value passes its parser and has the parser's type (no "10" for 10)."""
        value = getattr(self, setting.field)
        if value is None and setting.default is None:
            return
        try:
            if value is None or isinstance(value, bool):
                raise ValueError("not a value of this setting's type")
            listed = isinstance(value, tuple | list)
            parsed = setting.parse(tuple(value) if listed else str(value))
            if isinstance(parsed, str) != isinstance(value, str) or (
                isinstance(parsed, tuple) != listed
            ):
                raise ValueError(f"expected {type(parsed).__name__}")
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                f"Setting {setting.field} ({setting.env}) has value {value!r}, which is not "
                f"valid ({exc}). {setting.help}"
            ) from None
        if listed:
            object.__setattr__(self, setting.field, parsed)  # a list becomes the tuple

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
            pick("similarity_floor"),
            pick("rrf_k"),
            pick("fts_weight"),
            pick("feedback_weight"),
            pick("subject_weight"),
        )
