"""The REST load benchmark still runs end to end (tiny levels), with no errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_load_benchmark_runs_without_errors(tmp_path: Path) -> None:
    figures = tmp_path / "load.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "load.py"),
            *("--levels", "1,3", "--seconds", "2", "--memories", "20", "--json", str(figures)),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(figures.read_text())
    assert [row["clients"] for row in rows] == [1, 3]
    assert all(row["error_rate"] == 0 and row["requests"] > 0 for row in rows)
    assert all(row["compaction_status"] == "done" for row in rows)
    assert "| clients | requests | req/s |" in done.stdout
