"""Every setting in one place: name, type, default, help. Read from the environment, validated.

Each ``Settings`` field declares its environment variable, parser (which holds the bounds),
default and doc; ``SETTINGS``, the validation of values built in Python and the README's
configuration table (``settings_table``, checked by tests/test_docs.py) all derive from them.
Variables read elsewhere (``hivekeep serve``, provider keys) are listed in ``VARIABLES``.

A search setting left unset falls back to the embedder's calibrated default (``recall_defaults``),
then to the seed's default; an explicit environment variable or argument always wins.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from hivekeep.core.compaction import CompactionSettings
from hivekeep.core.dedup import DEDUP_THRESHOLD
from hivekeep.errors import ValidationError
from hivekeep.providers.base import RecallDefaults
from hivekeep.providers.llm.context_windows import check_context_window
from hivekeep.store.vector_budget import DEFAULT_BUDGET_MB


@dataclass(frozen=True)
class Setting:
    """One setting as ``Settings`` declares it (see ``_setting``); ``SETTINGS`` lists them all."""

    env: str
    field: str
    parse: Callable[[Any], Any]  # the text of an environment variable (or a tuple: lists)
    default: Any
    help: str
    unset: str = "—"  # what a default of None means


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("must be a positive integer")
    return number


def _context_window(value: str) -> int:
    try:
        return check_context_window(int(value))
    except ValidationError as exc:
        raise ValueError(str(exc)) from None


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


def _switch(value: str) -> str:
    switch = value.strip().lower()
    if switch not in ("on", "off"):
        raise ValueError("must be on or off")
    return switch


def _log_format(value: str) -> str:
    kind = value.strip().lower()
    if kind not in ("text", "json"):
        raise ValueError("must be text or json")
    return kind


def _secrets(value: str) -> str:
    policy = value.strip().lower()
    if policy not in ("redact", "refuse", "allow"):
        raise ValueError("must be redact, refuse or allow")
    return policy


def _synchronous(value: str) -> str:
    mode = value.strip().upper()
    if mode not in ("NORMAL", "FULL"):
        raise ValueError("must be NORMAL or FULL")
    return mode


SEED_RECALL = RecallDefaults(
    similarity_floor=0.5,
    rrf_k=60,
    fts_weight=0.5,
    feedback_weight=0.0,
    subject_weight=0.0,
    time_weight=0.0,
)
_COMPACTION = CompactionSettings()  # the hive-wide compaction defaults are the core's
_CALIBRATED = "the embedder's calibrated value"  # the default of a search setting left unset
_AGENTS_MODEL = "the agent's model"


def _setting(
    env: str, parse: Callable[[Any], Any], default: Any, help: str, unset: str = "—"
) -> Any:
    """A ``Settings`` field: the one place a setting's variable, parser, default and doc live.

    ``parse`` reads the variable's text (a tuple for lists) and holds the bounds; ``help`` is the
    docs' sentence, also said after a bad value; ``unset`` documents a default of ``None``.
    """
    return field(
        default=default,
        metadata={"setting": {"env": env, "parse": parse, "help": help, "unset": unset}},
    )


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one hive. Build with ``Settings.from_env()`` or directly.

    Each field declares its environment variable, bounds, default and doc (``SETTINGS`` lists
    them; the README's configuration table is generated from them by ``settings_table``).
    """

    db: str = _setting(
        "HIVEKEEP_DB",
        str,
        "./hivekeep.db",
        "Path of the hive's SQLite file, or a `postgresql://` URL (see "
        "[docs/storage.md](docs/storage.md#postgresql)).",
    )
    embeddings: str = _setting(
        "HIVEKEEP_EMBEDDINGS",
        str,
        "local",
        "Embedding model: `local` (bundled, offline) or `provider:model`: "
        "`openai:text-embedding-3-small`, `voyage:voyage-3`, `jina:jina-embeddings-v3`, "
        "`ollama:nomic-embed-text`.",
    )
    similarity_floor: float | None = _setting(
        "MEMORY_SIMILARITY_THRESHOLD",
        _unit_float,
        None,
        "Cosine similarity below which vector hits are dropped — a spam filter, not a relevance "
        "gate.",
        _CALIBRATED,
    )
    rrf_k: int | None = _setting(
        "MEMORY_RRF_K", _positive_int, None, "RRF smoothing constant K.", _CALIBRATED
    )
    fts_weight: float | None = _setting(
        "MEMORY_FTS_BOOST",
        _non_negative_float,
        None,
        "Weight of the full-text arm in fusion (the vector arm weighs 1).",
        _CALIBRATED,
    )
    feedback_weight: float | None = _setting(
        "MEMORY_FEEDBACK_WEIGHT",
        _non_negative_float,
        None,
        "Lexical feedback: how far the vector query moves toward the top 3 full-text hits before "
        "the vector search (0 turns it off).",
        _CALIBRATED,
    )
    subject_weight: float | None = _setting(
        "MEMORY_SUBJECT_WEIGHT",
        _non_negative_float,
        None,
        'Subject-aware recall: when the query names the subject of candidate memories ("What did '
        'Ann buy?" names `Ann` and `Ann Lee`), those memories are fused as a third list with '
        "this weight, a bonus of at most weight / (K + 1) (0 turns it off).",
        _CALIBRATED,
    )
    time_weight: float | None = _setting(
        "MEMORY_TIME_WEIGHT",
        _non_negative_float,
        None,
        'Time-aware recall: when the query asks for a time ("When did ...", "How long ..."), the '
        'candidate memories whose text states one ("last week", "in May 2024", "3 years ago") '
        "are fused as a further list with this weight, a bonus of at most weight / (K + 1) (0 "
        "turns it off).",
        _CALIBRATED,
    )
    dedup_threshold: float = _setting(
        "MEMORY_DEDUP_THRESHOLD",
        _unit_float,
        DEDUP_THRESHOLD,
        "Cosine similarity a new memory needs with one of the writer's own, besides saying the "
        "same fact (same subject, neither text adding anything), to merge into it: the memory "
        "takes the new wording, the old one kept as a version.",
    )
    recall_limit: int = _setting(
        "MEMORY_MAX_RELEVANT",
        _positive_int,
        10,
        "Default number of `recall` results (a call may ask for 1-50).",
    )
    profile_max_tokens: int = _setting(
        "MEMORY_PROFILE_MAX_TOKENS", _positive_int, 1500, "Token budget of each agent's profile."
    )
    history_limit: int = _setting(
        "MEMORY_HISTORY_LIMIT",
        _positive_int,
        50,
        "Versions kept per memory and per profile; the oldest go first.",
    )
    trash_days: int = _setting(
        "MEMORY_TRASH_DAYS",
        _positive_int,
        30,
        "Days a forgotten memory stays in the trash, restorable, before it is purged.",
    )
    llm: str | None = _setting(
        "HIVEKEEP_LLM",
        _spec,
        None,
        "The agents' chat model, `provider:model`: `openai:gpt-4o-mini` (+ `OPENAI_API_KEY`), "
        "`anthropic:claude-haiku-4-5` (+ `ANTHROPIC_API_KEY`), `ollama:llama3.1`, "
        "`openrouter:…`, `groq:…`, `vllm:…`, `lmstudio:…`. Needed by chat, compaction, "
        "regenerate and `review_memories`; the other tools work without it. The SDKs are extras: "
        "`pip install '.[openai]'` (`openai:` and the OpenAI-compatible ones, Ollama's too) or "
        "`'.[anthropic]'`.",
    )
    extraction_model: str | None = _setting(
        "MEMORY_EXTRACTION_MODEL",
        _spec,
        None,
        "Model of the maintenance call (archive extraction + profile rewrite), bootstrap and "
        "regenerate.",
        _AGENTS_MODEL,
    )
    compacting_model: str | None = _setting(
        "COMPACTING_MODEL",
        _spec,
        None,
        "Model that writes and merges summaries.",
        _AGENTS_MODEL,
    )
    context_window: int | None = _setting(
        "HIVEKEEP_CONTEXT_WINDOW",
        _context_window,
        None,
        "Context window, in tokens, of the models named by a spec (`HIVEKEEP_LLM`, "
        "`COMPACTING_MODEL`, `MEMORY_EXTRACTION_MODEL`, agents' models), for a model hivekeep "
        "does not know (a local `openai:MODEL`, say): it sets when compaction starts. Per agent, "
        "for its chat model: `hivekeep agents configure NAME --context-window N`.",
        "the model's known window, else `8192`",
    )
    bootstrap: str = _setting(
        "HIVEKEEP_BOOTSTRAP",
        _switch,
        "on",
        "`on`: when `hivekeep serve` or `hivekeep chat` opens the hive, an agent with a model, "
        "an archive and an empty profile gets a first profile written from its archive (once; "
        "a failure is retried next start). `off` turns that off.",
    )
    compacting_threshold_percent: float = _setting(
        "COMPACTING_THRESHOLD_PERCENT",
        _percent,
        _COMPACTION.threshold_percent,
        "Compact when the context fills more than this share of the model's window.",
    )
    compacting_keep_percent: float = _setting(
        "COMPACTING_KEEP_PERCENT",
        _percent,
        _COMPACTION.keep_percent,
        "The newest messages fitting in this share of the window stay raw.",
    )
    compacting_max_summaries: int = _setting(
        "COMPACTING_MAX_SUMMARIES",
        _positive_int,
        _COMPACTION.max_summaries,
        "Above this many summaries in context, the oldest half merges into one `[compressed]` "
        "summary.",
    )
    compacting_summary_budget_percent: float = _setting(
        "COMPACTING_SUMMARY_BUDGET_PERCENT",
        _percent,
        _COMPACTION.summary_budget_percent,
        "Summaries filling more than this share of the window merge too.",
    )
    sqlite_synchronous: str = _setting(
        "HIVEKEEP_SQLITE_SYNCHRONOUS",
        _synchronous,
        "NORMAL",
        "SQLite durability: `NORMAL` (an acknowledged write survives a process crash; the last "
        "ones may be lost on a power loss) or `FULL` (survives a power loss too, slower writes). "
        "See [docs/guarantees.md](docs/guarantees.md"
        "#durability-an-acknowledged-write-survives-a-crash).",
    )
    vector_cache_mb: int = _setting(
        "HIVEKEEP_VECTOR_CACHE_MB",
        _positive_int,
        DEFAULT_BUDGET_MB,
        "SQLite: MiB of vectors kept in memory for search, one matrix per agent's private "
        "memories and one for the shared ones, each loaded on its first search; past this, those "
        "searched least recently are dropped (a search keeps its own even past it). See "
        "[docs/storage.md](docs/storage.md#the-vector-cache).",
    )
    allowed_hosts: tuple[str, ...] = _setting(
        "HIVEKEEP_ALLOWED_HOSTS",
        _host_list,
        (),
        "Comma-separated public names (`host` or `host:port`) that `hivekeep serve` answers to "
        "besides 127.0.0.1, localhost, [::1] and `--host`; needs `HIVEKEEP_API_TOKEN`.",
    )
    secrets: str = _setting(
        "HIVEKEEP_SECRETS",
        _secrets,
        "redact",
        "What a write to the archive or a profile does with a credential it carries (API keys "
        "and tokens in their documented shapes, private keys, card numbers): `redact` (replaced "
        "by a marker naming its kind, the rest kept, the answer says so), `refuse` (a clear "
        "error, nothing written) or `allow`. Per agent: `hivekeep agents configure NAME "
        "--secrets refuse`. See [docs/guarantees.md](docs/guarantees.md#credentials).",
    )
    log_format: str = _setting(
        "HIVEKEEP_LOG_FORMAT",
        _log_format,
        "text",
        "Log lines of `hivekeep serve` and `hivekeep mcp --http`: `text`, or `json` (one object "
        "a line: time, level, logger, message, agent, request_id). See "
        "[docs/server.md](docs/server.md#logs).",
    )

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
            pick("time_weight"),
        )


SETTINGS: tuple[Setting, ...] = tuple(
    Setting(field=f.name, default=f.default, **f.metadata["setting"]) for f in fields(Settings)
)


@dataclass(frozen=True)
class Variable:
    """An environment variable read outside ``Settings``: by ``hivekeep serve`` or a provider."""

    env: str
    default: str | int | None  # None: unset
    help: str


API_TOKEN = Variable(
    "HIVEKEEP_API_TOKEN",
    None,
    "The admin bearer token of `hivekeep serve` (every agent, every route): required to listen "
    "beyond 127.0.0.1; when set, every `/api` route but `/api/health`, and `/metrics`, need "
    "`Authorization: Bearer <token>` (this token or a scoped one from `hivekeep tokens create`).",
)
SERVE_HOST = Variable(
    "HIVEKEEP_HOST", "127.0.0.1", "Where `hivekeep serve` listens (same as `--host`)."
)
SERVE_PORT = Variable("HIVEKEEP_PORT", 8765, "The port of `hivekeep serve` (same as `--port`).")
CLI_AGENT = Variable(
    "HIVEKEEP_AGENT",
    None,
    "The agent (name or id) the CLI's commands act as when `--agent` is not given.",
)
VARIABLES: tuple[Variable, ...] = (
    CLI_AGENT,
    API_TOKEN,
    SERVE_HOST,
    SERVE_PORT,
    Variable("OPENAI_API_KEY", None, "Key of `openai:` embeddings (and chat models)."),
    Variable(
        "OPENAI_BASE_URL",
        None,
        "Base URL of `openai:` embeddings and chat models, for OpenAI-compatible servers.",
    ),
    Variable("VOYAGE_API_KEY", None, "Key of `voyage:` embeddings."),
    Variable("JINA_API_KEY", None, "Key of `jina:` embeddings."),
    Variable("OLLAMA_HOST", "http://localhost:11434", "Server of `ollama:` embeddings."),
)


def settings_table() -> str:
    """The README's table of environment variables, generated from ``SETTINGS`` and ``VARIABLES``.

    tests/test_docs.py checks that the README holds exactly this; print it to update the README.
    """
    from hivekeep.providers.embeddings.local import LocalEmbedder  # its calibrated defaults

    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for setting in SETTINGS:
        default = setting.unset if setting.default is None else _shown(setting.default)
        if setting.unset == _CALIBRATED:
            bundled = getattr(LocalEmbedder.recall_defaults, setting.field)
            seed = getattr(SEED_RECALL, setting.field)
            default += f" (bundled model: {_shown(bundled)}), else {_shown(seed)}"
        rows.append(f"| `{setting.env}` | {default} | {setting.help} |")
    rows.extend(f"| `{v.env}` | {_shown(v.default)} | {v.help} |" for v in VARIABLES)
    return "\n".join(rows) + "\n"


def _shown(value: object) -> str:
    if value is None or value == ():
        return "—"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"
