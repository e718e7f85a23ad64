"""``hivekeep reembed``: finish switching embedding models, with a progress bar."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING

import click

from hivekeep.cli import db_option, open_hive

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar


class _Bar:
    """A progress callback ``(done, total)`` drawing a bar on stderr, sized on its first call."""

    def __init__(self, stack: ExitStack[bool | None]) -> None:
        self.stack = stack
        self.bar: ProgressBar[int] | None = None
        self.shown = 0

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = self.stack.enter_context(
                click.progressbar(length=total, label="Re-embedding", file=sys.stderr)
            )
        self.bar.update(done - self.shown)
        self.shown = done


@click.command()
@click.option(
    "--embeddings",
    "spec",
    metavar="SPEC",
    help="The model to switch to, e.g. 'local' or 'openai:text-embedding-3-small' "
    "(default: HIVEKEEP_EMBEDDINGS, else the bundled local model).",
)
@click.option(
    "--all", "everything", is_flag=True, help="Re-embed every memory, not only pending ones."
)
@db_option
def reembed(spec: str | None, everything: bool, db: str) -> None:
    """Embed the hive's memories with the configured (or given) embedding model.

    Warning: switching models (--embeddings, or a changed HIVEKEEP_EMBEDDINGS) drops the hive's
    old vectors at once. Until re-embedded, memories are found by full-text search only; if the
    run stops early (a provider outage), run it again to embed the rest. Example:

    \b
        hivekeep reembed --embeddings openai:text-embedding-3-small
        hivekeep reembed --all
    """
    with open_hive(db, embedder=spec, switch_embedder=True) as hive, ExitStack() as stack:
        result = hive.reembed(progress=_Bar(stack), everything=everything)
        model = hive.embeddings.space.model
    done = f"Re-embedded {_memories(result.embedded)} with {model}."
    if result.error:
        raise click.ClickException(
            f"{done} {_memories(result.remaining)} still pending (found by full text only) "
            f"because: {result.error} Run `hivekeep reembed` again to finish."
        )
    click.echo(done)


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"
