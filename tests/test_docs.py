"""The README documents every setting and every CLI command (a new one fails here until it is)."""

from __future__ import annotations

from pathlib import Path

import click

from hivekeep.cli import cli
from hivekeep.config import SETTINGS

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_every_setting_is_in_the_configuration_table() -> None:
    for setting in SETTINGS:
        assert f"| `{setting.env}` |" in README, setting.env


def test_every_cli_command_is_in_the_readme() -> None:
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert f"hivekeep {name}" in README, name
        if isinstance(command, click.Group):
            for sub in command.list_commands(context):
                assert f"hivekeep {name} {sub}" in README or sub == "list", (name, sub)
