"""The scale benchmark still runs end to end on a tiny hive, so it cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_scale_benchmark_runs_on_a_tiny_hive(tmp_path: Path) -> None:
    figures = tmp_path / "scale.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "scale.py"),
            *("--sizes", "300", "--real", "40", "--json", str(figures)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for title in (
        "# hivekeep scale benchmark",
        "### Recall, server-side",
        "### Recall's parts",
        "### Tool calls",
        "### Bulk ingest (memorize_many",
        "### Bulk ingest with the real model",
    ):
        assert title in done.stdout
    [size] = json.loads(figures.read_text())["sizes"]
    assert size["one_build"]["duplicates"] == 0
    assert size["one"]["recall_p50"] > 0 and size["ten"]["knn_p50"] > 0
    assert size["one"]["recall_frequent_p50"] > 0 and size["ten"]["text_frequent_p50"] > 0
    assert "### Frequent-word queries" in done.stdout and "### Memory (MB)" in done.stdout
    assert "### Work per query" in done.stdout and size["ten_to_one_recall"] > 0
    assert size["one"]["text_frequent_steps"] > 0 and size["ten"]["recall_steps"] > 0


def test_scale_benchmark_runs_on_postgresql_next_to_sqlite() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "scale.py"),
            "--backend",
            "postgresql",
            "--sizes",
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 300 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["sqlite", "postgresql"]
    assert "PostgreSQL / SQLite, same run: ingest" in done.stdout


def test_postgresql_plans_of_both_arms_are_printed() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "scale_postgres.py"), "--sizes", "300", "--explain"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for heading in ("#### Full-text arm, frequent query", "#### Vector arm (top 20)"):
        assert heading in done.stdout
    assert done.stdout.count("Execution Time") >= 3


def test_dedup_benchmark_loses_no_changed_fact_of_the_projects_own_pairs() -> None:
    """bench/dedup.py on the repository's pair sets (tests/data/dedup_pairs.jsonl: 40 changed
    facts, 15 restatements; tests/data/dedup_adversarial.jsonl: 167 changed facts written from
    the rule's blind spots, 40 restatements) through the real write path and model: nothing lost,
    most restatements merged."""
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "dedup.py"),
            *("--pairs", str(REPO / "tests" / "data" / "dedup_pairs.jsonl")),
            *("--pairs", str(REPO / "tests" / "data" / "dedup_adversarial.jsonl")),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shipped = [line for line in done.stdout.splitlines() if "| shipped (" in line]
    assert len(shipped) == 2, done.stdout
    for row, changed, restated in zip(shipped, (40, 167), (15, 40), strict=True):
        cells = [cell.strip() for cell in row.split("|")]
        assert cells[3] == f"0 / {changed}", row
        merged = int(cells[4].split("/")[0])
        assert merged >= 0.7 * restated, row
