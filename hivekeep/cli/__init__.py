"""The ``hivekeep`` command: thin adapters that open a Hive, call one method, render the result.

The shared pieces are defined here once: the ``--db``/``--agent``/``--json`` options,
``open_hive``/``open_agent``, and the one translation of ``HivekeepError`` into
``click.ClickException`` (``HivekeepGroup.invoke``). Each group of commands lives in its own module,
which imports those pieces from here; so the group loads each module by name when a command is
asked for (``COMMANDS``) instead of importing it at the top, which would be circular.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from hivekeep.config import CLI_AGENT, Settings
from hivekeep.core.bounds import MAX_COUNT, MAX_ID, parse_bounded
from hivekeep.core.text import BIDI_CONTROLS, safe_for_terminal
from hivekeep.errors import AgentNotFound, BudgetError, HivekeepError, ValidationError
from hivekeep.store.target import is_postgres_url, redact_url

if TYPE_CHECKING:  # the library loads when a command runs, so `hivekeep --help` starts fast
    from hivekeep import Agent, Hive

F = TypeVar("F", bound=Callable[..., Any])

# command name -> ("module:attribute" under hivekeep.cli, its short help). The short help lives
# here, the one place it is written, so `hivekeep --help` lists the commands without importing them
# and the library behind them (``get_command`` gives each loaded command the same line).
COMMANDS = {
    "agents": ("agents:agents", "The hive's agents; with no subcommand, list them."),
    "memorize": ("memories:memorize", "Save CONTENT to the agent's archive (the `memorize` tool)."),
    "recall": ("memories:recall", "Search the agent's own and shared memories for QUERY."),
    "memories": ("archive:memories", "List the agent's memories, newest first, a page at a time."),
    "update": ("archive:update", "Change a memory the agent wrote (the `update_memory` tool)."),
    "forget": ("archive:forget", "Move a memory the agent wrote to the trash (restorable)."),
    "profile": ("profile:profile", "An agent's profile: the document always in its system prompt."),
    "reembed": ("embeddings:reembed", "Embed the hive's memories with the configured model."),
    "serve": ("serve:serve", "Serve the REST API, live events and the web UI."),
    "mcp": ("mcp:mcp", "Serve the agent's memory tools and profile over MCP."),
    "chat": ("chat:chat", "Chat with an agent in the terminal, using the configured LLM."),
    "conversations": (
        "conversations:conversations",
        "An agent's conversations: list, rename, delete (to the trash), restore.",
    ),
    "compact": ("upkeep:compact", "Compact a conversation now."),
    "export": ("transfer:export", "Write the hive as JSONL."),
    "import": ("transfer:import_", "Merge an export file (from `hivekeep export`) into the hive."),
    "backup": ("backup:backup", "Copy the hive to TARGET with SQLite's online backup."),
    "history": ("history:history", "Show the versions of a memory, or of the agent's profile."),
    "restore": ("history:restore", "Undo a forget, or restore a version of a memory."),
    "trash": ("history:trash", "List the agent's forgotten memories still in the trash."),
    "purge": ("history:purge", "Erase a memory for good: no restore, no history."),
    "bench": ("bench:bench", "Measure recall, writes and embedding on this hive."),
    "tokens": ("tokens:tokens", "Scoped API tokens: create, list, revoke."),
    "remember": ("remember:remember", "Extract memories from a text or messages now."),
    "import-chats": ("remember:import_chats", "Import a ChatGPT or Claude chat export."),
    "hooks": ("hooks:hooks", "Install or remove hivekeep's hooks in Claude Code's settings."),
    "hook": ("hooks:hook", "Run one Claude Code hook (reads its JSON on standard input)."),
    "review": ("review:review", "Writes of agents that wait for a person: approve, reject."),
    "secrets": ("secrets:secrets", "Credentials the hive already holds: scan, redact, purge."),
}

_DB_KEY = "hivekeep.db"


class HivekeepGroup(click.Group):
    """Loads subcommands by name and turns any ``HivekeepError`` into a clean CLI error."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = COMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(
            importlib.import_module(f"hivekeep.cli.{module}"), attribute
        )
        command.short_help = COMMANDS[cmd_name][1]
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``COMMANDS``'s help lines, importing no command module."""
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx) if name in COMMANDS]
        rows += [
            (name, command.get_short_help_str())
            for name, command in sorted(self.commands.items())
            if name not in COMMANDS and not command.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AgentNotFound as exc:
            raise click.ClickException(f"{exc} List agents with `hivekeep agents`.") from exc
        except BudgetError as exc:  # a person's edit: the people's wording
            raise click.ClickException(exc.for_people) from exc
        except HivekeepError as exc:  # a message may quote stored text: shown safely
            raise click.ClickException(safe_for_terminal(str(exc))) from exc


def _db_anywhere(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--db`` given on the command line wins wherever it appears (``hivekeep --db X recall``)."""
    if ctx.get_parameter_source(param.name or "db") is ParameterSource.COMMANDLINE:
        ctx.meta[_DB_KEY] = value
        return value
    return str(ctx.meta.get(_DB_KEY, value))


def db_option(command: F) -> F:
    """``--db PATH``: the hive's SQLite file (env ``HIVEKEEP_DB``, default ``./hivekeep.db``)."""
    return click.option(
        "--db",
        "db",
        envvar="HIVEKEEP_DB",
        default=Settings().db,
        show_default=True,
        show_envvar=True,
        metavar="PATH",
        callback=_db_anywhere,
        help="The hive's SQLite file, or a postgresql:// URL.",
    )(command)


def agent_option(command: F) -> F:
    """``--agent NAME``: the agent to act as, by name or id (env ``HIVEKEEP_AGENT``)."""
    return click.option(
        "--agent",
        "agent_key",
        envvar=CLI_AGENT.env,
        required=True,
        show_envvar=True,
        metavar="NAME",
        help="The agent to act as, by name or id.",
    )(command)


def json_option(command: F) -> F:
    """``--json``: print the result as JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(
        command
    )


class Bounded(click.ParamType[int, Any]):
    """An integer option or argument checked against its column's range (``core/bounds``):
    digits only, so "1e3", "4.0", "0x10" and a 30-digit id are a usage error naming the range,
    never a traceback from the store."""

    name = "integer"

    def __init__(self, low: int, high: int) -> None:
        self.low = low
        self.high = high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        name = (param.name if param is not None else None) or "value"
        try:
            return parse_bounded(str(value), name, self.low, self.high)
        except ValidationError as exc:
            self.fail(str(exc), param, ctx)


ID = Bounded(1, MAX_ID)  # a memory or conversation id
VERSION = Bounded(0, MAX_COUNT)  # a version or revision to restore


# json.dumps escapes C0 controls, not these: C1 controls, and the bidi controls, which would
# reorder the text a terminal shows
_C1 = re.compile(f"[\x7f-\x9f{BIDI_CONTROLS}]")


def echo_json(value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    click.echo(_C1.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text))


def echo(text: str = "", **options: Any) -> None:
    """``click.echo`` for text that hivekeep did not write (memories, profiles, replies, roles):
    control characters are printed as visible escapes, never sent to the terminal."""
    click.echo(safe_for_terminal(text), **options)


def missing_hive_file(db: str) -> Path | None:
    """The SQLite file ``db`` names when it does not exist yet (None: it exists, or a URL)."""
    if is_postgres_url(db) or db == ":memory:":
        return None
    path = Path(db).expanduser()
    return None if path.exists() else path


def hive_location(db: str) -> str:
    """Where a hive is, as messages name it: a file by its absolute path, a URL without its
    password."""
    if is_postgres_url(db):
        return redact_url(db)
    if db == ":memory:":
        return db
    return str(Path(db).expanduser().resolve())


def hive_file(db: str) -> str | None:
    """The hive file's absolute path, for a command line written elsewhere (None: a URL, which
    would carry its password; the command then reads HIVEKEEP_DB)."""
    return None if is_postgres_url(db) else hive_location(db)


def _holds_anything(hive: Hive) -> bool:
    try:
        return bool(hive.agents())
    except HivekeepError:
        return True  # cannot tell: keep the file


def _remove_new_hive(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


@contextmanager
def open_hive(db: str, *, create: bool = False, **options: Any) -> Iterator[Hive]:
    """The hive at ``db`` (``options`` go to ``Hive``), closed when the block ends.

    Only commands that make something (``create=True``: agents create, import, serve, mcp
    --create) may start a new hive file, and one that fails leaves none behind; the others refuse
    a missing file, so a mistyped ``--db`` never leaves an empty hive lying around.
    """
    missing = missing_hive_file(db)
    if missing is not None and not create:
        raise click.ClickException(
            f"no hive at {missing}: check --db (or HIVEKEEP_DB), or start one with "
            "`hivekeep agents create NAME`."
        )
    from hivekeep.hive import Hive

    try:
        with Hive(db, **options) as hive:
            try:
                yield hive
            except BaseException:
                if missing is not None and _holds_anything(hive):
                    missing = None  # something was made before the failure: keep it
                raise
    except BaseException:
        if missing is not None:
            _remove_new_hive(missing)
        raise


def room_warnings(hive: Hive) -> list[tuple[str, str]]:
    """(agent name, warning) for each agent whose model window leaves too little room for a
    conversation (``Agent.room_warning``); agents without a usable model are skipped."""
    found = []
    for agent in hive.agents():
        try:
            warning = agent.room_warning()
        except HivekeepError:
            continue  # no model: the serve line already says so
        if warning:
            found.append((agent.name, warning))
    return found


@contextmanager
def open_agent(db: str, agent_key: str) -> Iterator[Agent]:
    """One agent of the hive at ``db``, by name or id."""
    with open_hive(db) as hive:
        yield hive.get_agent(agent_key)


@click.group(cls=HivekeepGroup)
@click.version_option(package_name="hivekeep", prog_name="hivekeep")
@db_option
def cli(db: str) -> None:
    """Persistent memory for LLM agents: a profile and a searchable archive per agent.

    Every command works on one hive file (--db, or HIVEKEEP_DB). Example:

    \b
        hivekeep agents create assistant --role "General helper"
        hivekeep memorize --agent assistant "User likes tea" --category preference
        hivekeep recall --agent assistant "what does the user drink?"
    """


class ProgressBar:
    """A ``(done, total)`` progress callback drawing a bar on stderr, sized on its first call.

    Services report progress as plain callbacks; this adapts one to click's bar, which the
    command's ``ExitStack`` closes (so an error mid-way still ends the line cleanly).
    """

    def __init__(self, stack: ExitStack[bool | None], label: str) -> None:
        self.stack = stack
        self.label = label
        self.bar: Any = None
        self.shown = 0

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = self.stack.enter_context(
                click.progressbar(length=total, label=self.label, file=sys.stderr)
            )
        self.bar.update(done - self.shown)
        self.shown = done
