"""Start-up weight: what ``import hivekeep`` and ``hivekeep --help`` cost above bare Python.

Each case runs in a fresh interpreter under ``python -X importtime``; the cost of a run is the sum
of the cumulative times of its top-level imports, less the same sum for bare Python (``pass``),
so the interpreter's own start-up is left out. Shared machines are noisy: the figure reported is
the best of ``--runs`` runs (the one least disturbed by other load), with the median beside it.

    python bench/import_time.py [--runs 15] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

CASES = {
    "bare python": "pass",
    "import hivekeep": "import hivekeep",
    "hivekeep --help": (
        "from hivekeep.cli import cli\ntry:\n    cli(['--help'])\nexcept SystemExit:\n    pass"
    ),
}
LINE = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)$")
GOAL_S = 0.3  # issue 19: each at most 0.3 s above bare Python


def top_level_us(code: str) -> int:
    """Microseconds spent in the top-level imports of one fresh interpreter running ``code``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    for line in done.stderr.splitlines():
        match = LINE.match(line)
        if match and not match.group(2):  # no indent: imported by the program itself
            total += int(match.group(1))
    return total


def measure(runs: int) -> dict[str, dict[str, float]]:
    samples: dict[str, list[int]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, code in CASES.items():  # interleaved, so load spikes hit every case alike
            samples[name].append(top_level_us(code))
    bare_best, bare_median = min(samples["bare python"]), statistics.median(samples["bare python"])
    return {
        name: {
            "best_s": (min(values) - bare_best) / 1e6,
            "median_s": (statistics.median(values) - bare_median) / 1e6,
        }
        for name, values in samples.items()
        if name != "bare python"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    args = parser.parse_args()
    figures = measure(args.runs)
    print(f"# import time above bare Python (python -X importtime, {args.runs} runs)\n")
    print("| case | best | median | goal |")
    print("|---|---|---|---|")
    for name, figure in figures.items():
        verdict = "met" if figure["best_s"] <= GOAL_S else "MISSED"
        print(
            f"| `{name}` | {figure['best_s']:.3f} s | {figure['median_s']:.3f} s "
            f"| ≤ {GOAL_S} s: {verdict} |"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
