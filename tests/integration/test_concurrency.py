"""Many processes and threads on one hive file: no "database is locked" reaches a caller, no
write is lost or doubled, and every index agrees at the end — the short run of ``bench/soak.py``
(8 processes x 2 threads), whose checks are the assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_processes_and_threads_share_one_hive_without_errors_or_lost_writes(
    tmp_path: Path,
) -> None:
    report = tmp_path / "soak.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "soak.py"),
            *("--processes", "8", "--threads", "2", "--seconds", "3", "--json", str(report)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    result = json.loads(report.read_text()) if report.exists() else {}
    assert done.returncode == 0, done.stdout + done.stderr
    assert result["ok"] and result["errors"] == 0, result["problems"]
    assert result["iterations"] >= 16  # every thread got through at least one round
