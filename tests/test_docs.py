"""The README documents every setting and every CLI command (a new one fails here until it is)."""

from __future__ import annotations

from pathlib import Path

import click

from hivekeep.cli import cli
from hivekeep.config import SETTINGS, settings_table

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_the_configuration_table_is_the_one_config_generates() -> None:
    start = README.index("| variable | default | meaning |")
    table = README[start : README.index("\n\n", start) + 1]
    expected = settings_table()
    assert table == expected, f"Paste this into the README's configuration table:\n{expected}"
    assert all(f"| `{setting.env}` |" in table for setting in SETTINGS)


def test_every_cli_command_is_in_the_readme() -> None:
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert f"hivekeep {name}" in README, name
        if isinstance(command, click.Group):
            for sub in command.list_commands(context):
                assert f"hivekeep {name} {sub}" in README or sub == "list", (name, sub)


def test_extras_are_installed_from_the_clone_as_the_package_is() -> None:
    """The set-up installs from a clone (``pip install .``), so an extra is ``'.[NAME]'``: a
    ``'hivekeep[NAME]'`` would ask PyPI for a package that is not there."""
    assert "pip install ." in README
    assert "pip install 'hivekeep[" not in README
    assert "pip install '.[langgraph]'" in README


def test_the_readme_mcp_section_says_what_a_newcomer_needs() -> None:
    """Issue 34: the Claude Desktop snippet had no ``env`` (review_memories then failed), the
    HTTP example used serve's port, and the text said there was no authentication."""
    section = README[README.index("## MCP") : README.index("## Integrations")]
    assert '"env": {"HIVEKEEP_LLM"' in section
    assert "--http 8765" not in section and "--http 8766" in section
    assert "no authentication" not in section and "HIVEKEEP_API_TOKEN" in section
