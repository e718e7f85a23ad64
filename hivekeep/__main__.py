"""``python -m hivekeep``: the same command as the ``hivekeep`` console script."""

from hivekeep.cli import cli

if __name__ == "__main__":
    cli(prog_name="hivekeep")
