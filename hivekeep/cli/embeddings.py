"""``hivekeep reembed``: finish switching embedding models, with a progress bar."""

from __future__ import annotations

from contextlib import ExitStack

import click

from hivekeep.cli import ProgressBar, db_option, open_hive


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
        result = hive.reembed(progress=ProgressBar(stack, "Re-embedding"), everything=everything)
        model = hive.embedding_space.model
    done = f"Re-embedded {_memories(result.embedded)} with {model}."
    if result.error:
        raise click.ClickException(
            f"{done} {_memories(result.remaining)} still pending (found by full text only) "
            f"because: {result.error} Run `hivekeep reembed` again to finish."
        )
    click.echo(done)


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"
