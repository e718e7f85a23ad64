"""The CLI shows bidirectional controls visibly wherever it prints stored text: "price
\\u202e0001$" must not read "price $1000" on a terminal. The real CLI (in-process through
click) on a real hive file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hivekeep import Hive, Settings
from hivekeep.cli import cli

PRICE = "The price is \u202e0001$ per seat"


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "hive.db"
    with Hive(path, settings=Settings()) as hive:
        sam = hive.create_agent("sam")
        memory = sam.memorize(PRICE, category="fact", subject="\u2066seats\u2069").memory
        sam.update_memory(memory.id, content=PRICE + " \u202aagreed\u202c")
        sam.forget(sam.memorize("Old \u200fnote", category="fact").memory.id)
    return str(path)


def cli_output(db: str, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--db", db], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "--agent", "sam", "price per seat"],
        ["history", "--agent", "sam", "1"],
        ["trash", "--agent", "sam"],
        ["recall", "--agent", "sam", "price per seat", "--json"],
        ["history", "--agent", "sam", "1", "--json"],
    ],
)
def test_stored_bidi_controls_are_printed_visibly(db: str, args: list[str]) -> None:
    output = cli_output(db, *args)
    for control in "\u202e\u202a\u202c\u2066\u2069\u200f":
        assert control not in output, (control, output)
    if "--json" in args:
        assert "\\u202e0001$" in output  # JSON: a standard escape, still valid JSON
    elif args[0] == "trash":
        assert "Old <U+200F>note" in output
    else:
        assert "<U+202E>0001$" in output
