"""The crash harness, short: a few SIGKILLs of a busy hive process, each followed by every check
(integrity, index agreement, acknowledged writes present, pending maintenance retried).
``python bench/crash.py --runs 100`` is the long run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    results = tmp_path / "crash.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "crash.py"), "--runs", "3", "--json", str(results)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = json.loads(results.read_text())
    assert len(runs) == 3 and all(run["ok"] for run in runs)
    assert runs[-1]["acknowledged"] > 0
    assert "| runs | kills verified ok |" in done.stdout
