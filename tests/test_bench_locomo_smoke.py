"""The LoCoMo benchmark runs end to end on a tiny file in the same format (so it cannot rot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

TINY = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Miso!"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Congrats! I started pottery.",
                    "blip_caption": "a photo of a clay bowl",
                },
            ],
            "session_2_date_time": "10:00 am on 2 June, 2023",
            "session_2": [
                {"speaker": "Ana", "dia_id": "D2:1", "text": "Miso chewed my shoes again."},
                {"speaker": "Ben", "dia_id": "D2:2", "text": "My bowl cracked in the kiln."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's puppy?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "When did Ben start pottery?",
                "answer": "May 2023",
                "evidence": ["D:1:2"],
                "category": 2,
            },
            {
                "question": "What happened to Ben's bowl?",
                "answer": "it cracked",
                "evidence": ["D2:2; D1:2"],
                "category": 1,
            },
            {
                "question": "Is this adversarial?",
                "adversarial_answer": "x",
                "evidence": ["D1:1"],
                "category": 5,
            },
        ],
    }
]


@pytest.mark.parametrize("setup", ["subject", "said", "plain"])
def test_locomo_benchmark_runs_on_a_tiny_file(tmp_path: Path, setup: str) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))
    out = tmp_path / "out.json"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "locomo_retrieval.py"),
            "--data",
            str(data),
            "--json",
            str(out),
            "--sweep",
            "--setup",
            setup,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "| configuration | R@5 | R@10 | R@20 | MRR |" in result.stdout
    assert "3 questions" in result.stdout  # category 5 skipped, malformed ids normalised
    figures = json.loads(out.read_text())
    assert figures["questions"] == 3
    assert figures["hybrid"]["R@20"] == 1.0
    assert figures["setup"] == setup
    assert "| tiny-1 | 3 |" in result.stdout  # the per-fold table
    assert "Leave one conversation out" in result.stdout


def test_the_cached_run_and_the_temporal_experiments_run_on_a_tiny_file(tmp_path: Path) -> None:
    """``--cached`` (vectors from the vector cache, here in a temporary folder) and the two
    experiment scripts of issue 28."""
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    outputs = []
    for script in (
        "locomo_retrieval.py",
        "experiments/locomo_temporal.py",
        "experiments/locomo_answer_types.py",
    ):
        extra = ["--cached"] if script == "locomo_retrieval.py" else []
        result = subprocess.run(
            [sys.executable, str(ROOT / "bench" / script), "--data", str(data), *extra],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env=env,
        )
        assert result.returncode == 0, (script, result.stderr)
        outputs.append(result.stdout)
    assert "time weight 1.0" in outputs[0]
    assert list((tmp_path / "cache" / "hivekeep-bench").glob("*.npy"))  # the cache was used
    assert "1 ask when" in outputs[1] and "oracle: the better arm per question" in outputs[1]
    assert "| where list 1.0 |" in outputs[2]
