"""bench/million.py at a tiny size: it measures, and a killed build resumes where it stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

REPO = Path(__file__).resolve().parents[1]
SIZE = 3000


def command(folder: Path) -> list[str]:
    return [
        sys.executable,
        str(REPO / "bench" / "million.py"),
        *("--size", str(SIZE), "--agents", "1", "--chunk", "100", "--folder", str(folder)),
    ]


@pytest.mark.slow
def test_a_killed_build_resumes_where_it_stopped(tmp_path: Path) -> None:
    state = tmp_path / "million-sqlite-1.json"
    running = subprocess.Popen(command(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if state.exists() and json.loads(state.read_text()).get("memories", 0) >= 500:
            break
        assert running.poll() is None, running.communicate()
        time.sleep(0.05)
    running.kill()
    running.communicate()
    stopped_at = json.loads(state.read_text())["memories"]
    assert 500 <= stopped_at < SIZE

    done = subprocess.run(command(tmp_path), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    resumed = int(done.stdout.split("resuming at ")[1].split(" ")[0].replace(",", ""))
    assert resumed >= stopped_at  # every committed call kept, none redone
    figures = json.loads(state.read_text())
    assert figures["memories"] == SIZE and figures["duplicates"] == 0
    assert figures["figures"]["top10_agreement"] == 1.0
    assert figures["figures"]["recall_p50"] > 0
    conn = apsw.Connection(str(tmp_path / "million-1.db"))
    assert conn.execute("SELECT count(*) FROM memories").get == SIZE
    row = next(line for line in done.stdout.splitlines() if line.startswith("| sqlite"))
    assert row.split("|")[2].strip() == f"{SIZE:,}"


def test_another_size_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "million-sqlite-1.json").write_text(
        json.dumps({"size": 10, "agents": 1, "build_seconds": 0.0})
    )
    done = subprocess.run(command(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "records a build of 10 memories" in done.stderr
