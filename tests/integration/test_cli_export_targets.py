"""``hivekeep export -o PATH`` never changes what PATH is (issue 26, item 1).

A regular file is replaced atomically; a symlink stays a symlink and its target gets the export;
a FIFO, /dev/null and /dev/stdout are written through; ``-o -`` is standard output. Each runs the
real command on a real hive file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hivekeep import Hive
from hivekeep.cli import cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev are POSIX")


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "hive.db"
    with Hive(path) as hive:
        hive.agent("assistant").memorize("The user moved to Lisbon in May 2024.", category="fact")
    return str(path)


def export(db: str, *args: str) -> Result:
    result = CliRunner().invoke(cli, ["export", *args, "--db", db], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def records(text: str) -> list[str]:
    return [json.loads(line)["type"] for line in text.splitlines()]


EXPORTED = ["header", "agent", "profile", "memory"]


def test_a_regular_file_is_replaced_whole_keeping_its_permissions(db: str, tmp_path: Path) -> None:
    out = tmp_path / "backup.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    result = export(db, "-o", str(out))
    assert records(out.read_text()) == EXPORTED
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert (
        result.stdout.startswith("Exported 1 agent, 1 memory")
        and f"to {out} (it replaced" in result.stdout
    )
    assert not list(tmp_path.glob("*.partial"))  # no staged file left (hidden ones too)


def test_a_symlink_stays_a_symlink_and_its_target_gets_the_export(db: str, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "backup.jsonl"
    target.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    export(db, "-o", str(link))
    assert link.is_symlink() and link.readlink() == target
    assert records(target.read_text()) == EXPORTED
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["backup.jsonl"]
    dangling = tmp_path / "next.jsonl"
    dangling.symlink_to(tmp_path / "real" / "new.jsonl")
    export(db, "-o", str(dangling))
    assert dangling.is_symlink() and records(dangling.read_text()) == EXPORTED


def test_a_fifo_is_written_through(db: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    export(db, "-o", str(fifo))
    reader.join(timeout=30)
    assert records(received[0]) == EXPORTED
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not (tmp_path / "pipe.partial").exists()


def test_dev_null_stays_a_character_device(db: str) -> None:
    result = export(db, "-o", os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert "Exported 1 agent" in result.output
    assert not Path(os.devnull + ".partial").exists()


def test_dash_is_standard_output(db: str) -> None:
    result = export(db, "-o", "-")
    assert records(result.stdout) == EXPORTED
    assert result.stderr.startswith("Exported 1 agent, 1 memory")
    assert not Path("-").exists()


def test_dev_stdout_writes_to_the_callers_redirection(db: str, tmp_path: Path) -> None:
    """A real process whose standard output is a file: the file gets the lines (after what the
    shell's redirection already holds), and the summary goes to standard error."""
    out = tmp_path / "redirected.jsonl"
    out.write_text("")
    with out.open("a") as stdout:
        stdout.write('{"type": "before"}\n')
        stdout.flush()
        done = subprocess.run(
            [sys.executable, "-m", "hivekeep", "export", "-o", "/dev/stdout", "--db", db],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert records(out.read_text()) == ["before", *EXPORTED]
    assert "Exported 1 agent" in done.stderr
    assert not out.with_name("redirected.jsonl.partial").exists()


def test_a_directory_or_a_missing_folder_is_a_clear_error(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["export", "-o", str(tmp_path / "no" / "x.jsonl"), "--db", db])
    assert missing.exit_code == 1 and "Cannot write" in missing.stderr
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "to-folder"
    link.symlink_to(folder)
    refused = runner.invoke(cli, ["export", "-o", str(link), "--db", db])
    assert refused.exit_code == 2 and "is a directory" in refused.stderr
    assert link.is_symlink() and list(folder.iterdir()) == []


def test_an_existing_file_is_said_to_be_replaced(db: str, tmp_path: Path) -> None:
    """Issue 34: ``export -o`` overwrote a file without a word."""
    out = tmp_path / "backup.jsonl"
    assert "replaced" not in export(db, "-o", str(out)).stdout  # a new file
    assert "(it replaced the file that was there)" in export(db, "-o", str(out)).stdout


def test_import_reads_standard_input(db: str, tmp_path: Path) -> None:
    """Issue 34: ``export -o -`` existed, ``import -`` did not."""
    exported = export(db).stdout
    target = str(tmp_path / "copy.db")
    result = CliRunner().invoke(cli, ["import", "-", "--db", target], input=exported)
    assert result.exit_code == 0, result.output
    assert "Memories: 1 imported" in result.stdout
